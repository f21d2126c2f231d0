//! `arena --record FILE` / `arena --replay FILE`: a replay recorded at 2 workers replays
//! at 1 and 8 with every checksum as recorded; a replay whose recorded checksum was
//! altered is refused as damaged, and, altered on purpose (its checks made again),
//! reported at that frame with exit status 1; a file that is no replay is an error.
//! Files that lie: a recorded agent count the command line refuses (2^40, 0,
//! 3) is refused at once with the command line's message; a damaged keyframe is
//! reported; a recording that contradicts itself is called corrupt. Runs the built
//! `arena` binary, each run killed past a deadline.

#[path = "../../tests/sections/mod.rs"]
mod sections;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use runsync_tools::scenario::{ArenaSetup, check_agents};
use sections::{join, reseal, sections, split};

/// Runs the arena; killed, and the test failed, if it runs past 120 s (a replay that
/// never ends, growing).
fn arena(args: &[&str]) -> Output {
    let deadline = Duration::from_secs(120);
    let mut child = Command::new(env!("CARGO_BIN_EXE_arena"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the arena binary runs");
    let start = Instant::now();
    while child.try_wait().expect("waits").is_none() {
        if start.elapsed() > deadline {
            child.kill().expect("kills");
            let out = child.wait_with_output().expect("collects");
            panic!("arena {args:?} ran past {deadline:?}:\n{}", text(&out));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().expect("collects")
}

fn text(out: &Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn path(name: &str) -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("{name}-{}", std::process::id()))
}

fn replay(file: &Path, workers: &str) -> Output {
    arena(&["--replay", file.to_str().unwrap(), "--workers", workers])
}

fn u64_at(bytes: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap())
}

/// The offset of frame `k`'s recorded checksum in a replay of the arena (whose frames
/// carry no input), from the layout in runsync's `src/runtime/replay/file.rs`: the frames section
/// (after the header's: magic, version, the input type's name, the start save), its
/// frame count, then per frame a presence byte, a `u64` length (0), the checksum.
fn checksum_offset(bytes: &[u8], k: usize) -> usize {
    sections(bytes).unwrap()[1].start + 8 + k * 17 + 9
}

#[test]
fn a_replay_recorded_at_2_workers_replays_at_1_and_8_and_an_altered_one_diverges() {
    let file = path("arena.replay");
    let f = file.to_str().unwrap();
    let out = arena(&[
        "--entities",
        "2000",
        "--frames",
        "60",
        "--workers",
        "2",
        "--record",
        f,
    ]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("(60 frames; play it with --replay)"));

    for workers in ["1", "8"] {
        let out = replay(&file, workers);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{}", text(&out));
        // (With `runsync/single-threaded`, every run is on 1 worker, whatever is asked.)
        let on = [
            "seed 1, on 1 worker".to_owned(),
            format!("seed 1, on {workers} worker"),
        ];
        assert!(
            stdout.contains("of 2000 agents in 4 teams, ")
                && on.iter().any(|on| stdout.contains(on))
                && stdout.contains("replay           ok: 60 frames, every checksum as recorded"),
            "{}",
            text(&out)
        );
    }

    let mut bytes = std::fs::read(&file).unwrap();
    let at = checksum_offset(&bytes, 25); // frame index 25: frame number 26
    bytes[at] ^= 1;
    let altered = path("arena-altered.replay");
    // As damage: refused when read, naming the section.
    std::fs::write(&altered, &bytes).unwrap();
    let out = replay(&altered, "1");
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("the file is corrupt: the frames fails its integrity check"),
        "{}",
        text(&out)
    );
    // On purpose (the checks made again): played, the divergence found.
    reseal(&mut bytes);
    std::fs::write(&altered, &bytes).unwrap();
    let out = replay(&altered, "1");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        stdout.contains("MISMATCH after 26 frames")
            && stdout.contains("replay diverged at frame 26: checksum"),
        "{}",
        text(&out)
    );
    // Only the recorded checksum was altered: the keyframe after it holds the same values.
    assert!(
        stdout.contains("the keyframe after 60 frames shows no difference"),
        "{}",
        text(&out)
    );
    for f in [file, altered] {
        std::fs::remove_file(f).unwrap();
    }
}

#[test]
fn a_file_that_is_no_replay_is_an_error() {
    let file = path("not.replay");
    std::fs::write(&file, b"RSYNSAVE\x01\x00\x00\x00").unwrap();
    let out = replay(&file, "1");
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("cannot replay")
            && String::from_utf8_lossy(&out.stderr).contains("not a runsync save"),
        "{}",
        text(&out)
    );
    std::fs::remove_file(file).unwrap();
    let out = arena(&["--replay", "x", "--seed", "3"]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "the seed comes from the file: {}",
        text(&out)
    );
}

/// A small recording shared by the tests below: 400 agents, 10 frames, a keyframe every
/// 5 (after frames 5 and 10).
fn recording() -> &'static [u8] {
    static FILE: OnceLock<Vec<u8>> = OnceLock::new();
    FILE.get_or_init(|| {
        let file = path("small.replay");
        let f = file.to_str().unwrap();
        let out = arena(&[
            "--entities",
            "400",
            "--frames",
            "10",
            "--workers",
            "1",
            "--record",
            f,
            "--keyframes",
            "5",
        ]);
        assert!(out.status.success(), "{}", text(&out));
        let bytes = std::fs::read(&file).unwrap();
        std::fs::remove_file(file).unwrap();
        bytes
    })
}

/// Plays `bytes` as a replay file named `name`.
fn play(name: &str, bytes: &[u8]) -> Output {
    let file = path(name);
    std::fs::write(&file, bytes).unwrap();
    let out = replay(&file, "1");
    std::fs::remove_file(file).unwrap();
    out
}

/// A postcard varint (LEB128), as the recorded `ArenaSetup`'s fields are.
fn varint(mut v: u64) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let b = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(b);
            return out;
        }
        out.push(b | 0x80);
    }
}

/// The recording with its start's `ArenaSetup::agents` set to `agents`, every length and
/// integrity check made again (a file written on purpose).
fn with_agents(file: &[u8], agents: u64) -> Vec<u8> {
    let mut parts = split(file);
    // The replay's header: magic, version, the input type's name, the start save.
    let name_end = 12 + 8 + u64_at(&parts[0], 12) as usize;
    let mut save = split(&parts[0][name_end + 8..]);
    let name = std::any::type_name::<ArenaSetup>().as_bytes();
    let resources = save
        .iter_mut()
        .find(|s| s.windows(name.len()).any(|w| w == name))
        .expect("the start saves the arena's setup");
    // After the name: a presence byte, the value's length, the value (agents, seed).
    let at = resources
        .windows(name.len())
        .position(|w| w == name)
        .unwrap()
        + name.len();
    let len = u64_at(resources, at + 1) as usize;
    let value = &resources[at + 9..at + 9 + len];
    let agents_len = value.iter().position(|b| b & 0x80 == 0).unwrap() + 1;
    let mut new = varint(agents);
    new.extend_from_slice(&value[agents_len..]);
    resources[at + 1..at + 9].copy_from_slice(&(new.len() as u64).to_le_bytes());
    resources.splice(at + 9..at + 9 + len, new);
    let start = join(&save);
    parts[0].truncate(name_end);
    parts[0].extend_from_slice(&(start.len() as u64).to_le_bytes());
    parts[0].extend_from_slice(&start);
    join(&parts)
}

/// A recording whose agent count `--entities` would refuse (2^40 grew the arena without
/// end; 0 and 3 were played) is refused before anything is built, with
/// the command line's own message.
#[test]
fn a_recorded_agent_count_the_command_line_refuses_is_refused() {
    let file = recording();
    // The edit itself makes a sound file: with the recorded count, it plays.
    let out = play("agents-400.replay", &with_agents(file, 400));
    assert!(out.status.success(), "{}", text(&out));
    for agents in [1u64 << 40, 0, 3, (1 << 24) + 1] {
        let rule = check_agents(agents).unwrap_err();
        let start = Instant::now();
        let out = play(
            &format!("agents-{agents}.replay"),
            &with_agents(file, agents),
        );
        let took = start.elapsed();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.code() == Some(2)
                && stderr.contains("cannot replay")
                && stderr.contains(&rule)
                && !String::from_utf8_lossy(&out.stdout).contains("replaying"),
            "{agents}: {}",
            text(&out)
        );
        assert!(took < Duration::from_secs(20), "{agents}: {took:?}");
        // The command line says the same.
        let cli = arena(&["--entities", &agents.to_string(), "--frames", "1"]);
        assert_eq!(cli.status.code(), Some(2), "{}", text(&cli));
        assert!(
            String::from_utf8_lossy(&cli.stderr).contains(&rule),
            "{}",
            text(&cli)
        );
    }
}

/// A damaged keyframe is reported when the file is read (it used to say "replay ok").
#[test]
fn a_damaged_keyframe_is_reported() {
    let mut bytes = recording().to_vec();
    let s = sections(&bytes).unwrap();
    assert_eq!(s.len(), 4, "header and start, frames, 2 keyframes");
    // A value deep in the second keyframe's save.
    bytes[s[3].start + s[3].len() / 2] ^= 0x20;
    let out = play("damaged-keyframe.replay", &bytes);
    assert!(
        out.status.code() == Some(2)
            && String::from_utf8_lossy(&out.stderr)
                .contains("keyframe 2 of 2 fails its integrity check"),
        "{}",
        text(&out)
    );
}

/// A recording whose keyframe after frame 5 contradicts the checksum recorded for frame
/// 5 (an edit with its checks made again) is called corrupt, not a divergence "in state
/// a checksum sees through".
#[test]
fn a_recording_that_contradicts_itself_is_called_corrupt() {
    let mut bytes = recording().to_vec();
    let at = checksum_offset(&bytes, 4); // frame index 4: frame number 5
    bytes[at] ^= 1;
    reseal(&mut bytes);
    let out = play("contradiction.replay", &bytes);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.code() == Some(2)
            && stderr.contains("the replay file is corrupt: it contradicts itself")
            && stderr.contains("recorded for frame 5")
            && !String::from_utf8_lossy(&out.stdout).contains("sees through"),
        "{}",
        text(&out)
    );
}
