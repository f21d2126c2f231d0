//! `arena --record FILE` / `arena --replay FILE`: a replay recorded at 2 workers replays
//! at 1 and 8 with every checksum as recorded; a replay whose recorded checksum was
//! altered is reported at that frame with exit status 1; a file that is no replay is an
//! error. Runs the built `arena` binary.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn arena(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_arena"))
        .args(args)
        .output()
        .expect("the arena binary runs")
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

/// The offset of frame `k`'s recorded checksum in a replay of the arena (whose frames
/// carry no input), from the layout in runsync's `src/replay.rs`: magic, version, the
/// input type's name and the start save (each a `u64` length and bytes), the frame count,
/// then per frame a presence byte, a `u64` length (0), the checksum.
fn checksum_offset(bytes: &[u8], k: usize) -> usize {
    let len = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap()) as usize;
    let name = 12;
    let start = name + 8 + len(name);
    let frames = start + 8 + len(start);
    frames + 8 + k * 17 + 9
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
        let on = ["1", workers].map(|w| format!("seed 1, on {w} workers"));
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
