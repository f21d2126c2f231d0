//! `arena --shards`: the arena by local rules, split into 1 to 4 shards (threads), gives
//! the same world checksum after every frame as the same arena in one process — through
//! the first wave, fights at the fronts, ships armed with turrets (children), shots fired
//! and expiring, deaths, and the second wave.

use runsync_tools::scenario::ArenaConfig;
use runsync_tools::sharded;

#[test]
fn the_sharded_arena_gives_one_process_bits() {
    let config = ArenaConfig {
        agents: 600,
        seed: 7,
        workers: 1,
    };
    // Five waves (every 60 frames), the teams meeting in the middle.
    let frames = 300;
    let one = sharded::cluster(config, 1, frames)
        .run_in_one_process()
        .unwrap();
    let sums =
        |r: &runsync_cluster::Report| r.frames.iter().map(|f| f.checksum).collect::<Vec<_>>();
    for shards in [1, 2, 3, 4] {
        let report = sharded::run(config, shards, frames, true).unwrap();
        let first = sums(&report)
            .iter()
            .zip(sums(&one))
            .position(|(a, b)| *a != b);
        assert_eq!(
            first, None,
            "{shards} shards: first differing frame (index)"
        );
        if shards > 1 {
            assert!(report.frames.iter().map(|f| f.migrations).sum::<usize>() > 0);
            assert!(report.frames.iter().all(|f| f.frame < 3 || f.ghosts > 0));
        }
    }
    // What that covered, in one process.
    let born: usize = one.frames.iter().map(|f| f.spawned).sum();
    assert!(born > 600 + 100, "{born} born: the waves and shots");
}

#[test]
fn the_arena_binary_shards_and_checks() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_arena"))
        .args([
            "--shards",
            "2",
            "--entities",
            "400",
            "--frames",
            "90",
            "--check",
        ])
        .output()
        .expect("the arena runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("2 shards (2 x 1 tiles"), "{text}");
    assert!(
        text.contains("check: every frame's checksum equals one process's (90 frames)"),
        "{text}"
    );
    // Options that compare or rewind single runs do not go with it.
    let refused = std::process::Command::new(env!("CARGO_BIN_EXE_arena"))
        .args(["--shards", "2", "--rollback", "3"])
        .output()
        .unwrap();
    assert!(!refused.status.success());
}

/// `n` loopback addresses, comma-separated, from below the system's ephemeral ports: an
/// outgoing connection of another test (each of these runs connects processes) cannot
/// take one before its arena process listens there.
fn addresses(n: usize) -> String {
    runsync_cluster::loopback_addresses(n).unwrap().join(",")
}

#[test]
fn two_arena_processes_on_loopback_give_one_process_bits() {
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};
    let addresses = addresses(2);
    let start = |process: usize| {
        Command::new(env!("CARGO_BIN_EXE_arena"))
            .args(["--shards", "1", "--processes", "2", "--entities", "400"])
            .args(["--frames", "90", "--check", "--addresses", &addresses])
            .args(["--process", &process.to_string()])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let mut children = [start(0), start(1)];
    // Bounded in time: both must finish within a minute.
    let deadline = Instant::now() + Duration::from_secs(60);
    for i in 0..2 {
        while children[i].try_wait().unwrap().is_none() {
            if Instant::now() > deadline {
                for c in &mut children {
                    let _ = c.kill();
                }
                panic!("the arena processes did not finish within a minute");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    let finished: Vec<_> = children.map(|c| c.wait_with_output().unwrap()).to_vec();
    for (i, out) in finished.iter().enumerate() {
        assert!(
            out.status.success(),
            "process {i}: {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let text = String::from_utf8_lossy(&finished[0].stdout);
    assert!(text.contains("2 shards (2 x 1 tiles"), "{text}");
    assert!(
        text.contains("check: every frame's checksum equals one process's (90 frames)"),
        "{text}"
    );
    // Process 1 leaves the report to process 0.
    let other = String::from_utf8_lossy(&finished[1].stdout);
    assert!(
        !other.contains("check:") && !other.contains("median:"),
        "{other}"
    );
}

/// An `arena` process, killed when dropped.
struct Arena(std::process::Child);

impl Drop for Arena {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Runs two sharded arena processes on loopback, with the options both get, then each
/// one's own, and returns each one's exit code and stderr; both must exit within 30 s
/// (else they are killed and the test fails).
fn two_arenas(both: &[&str], own: [&[&str]; 2]) -> [(Option<i32>, String); 2] {
    use std::process::{Command, Stdio};
    let addresses = addresses(2);
    let start = |process: usize| {
        Arena(
            Command::new(env!("CARGO_BIN_EXE_arena"))
                .args([
                    "--entities",
                    "200",
                    "--frames",
                    "20",
                    "--connect-timeout",
                    "10",
                ])
                .args(both)
                .args(["--process", &process.to_string()])
                .args(own[process])
                .args(["--addresses", &addresses])
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap(),
        )
    };
    wait_all([start(0), start(1)], 30)
}

/// Both processes refuse each other, each naming what differs.
fn both_refuse(both: &[&str], own: [&[&str]; 2], what: &str) {
    for (i, (code, err)) in two_arenas(both, own).iter().enumerate() {
        assert_eq!(*code, Some(1), "process {i}: {err}");
        assert!(
            err.contains("does not run the same cluster") && err.contains(what),
            "process {i}: {err}"
        );
    }
}

#[test]
fn processes_with_other_shard_counts_refuse_each_other() {
    // Was: "index out of bounds: the len is 1 but the index is 18446744073709551615".
    both_refuse(
        &["--processes", "2"],
        [&["--shards", "1"], &["--shards", "2"]],
        "the shards per process is",
    );
}

#[test]
fn processes_with_other_seeds_refuse_each_other() {
    // Was: two worlds blended silently.
    both_refuse(
        &["--shards", "1", "--processes", "2"],
        [&["--seed", "1"], &["--seed", "2"]],
        "the configuration fingerprint",
    );
}

#[test]
fn check_on_one_process_only_is_refused() {
    // Was: a false difference (process 1's part of every checksum was 0).
    both_refuse(
        &["--shards", "1", "--processes", "2"],
        [&["--check"], &[]],
        "computing checksums is",
    );
}

#[test]
fn processes_with_other_process_counts_refuse_each_other() {
    // Was: both waiting forever. Process 1 thinks there are three processes (a third
    // address of its own).
    use std::process::{Command, Stdio};
    let [(code0, err0), (code1, err1)] = {
        // The list both share, plus a third address for process 1 only.
        let three = addresses(3);
        let addresses = three[..three.rfind(',').unwrap()].to_owned();
        let start = |process: usize, n: &str, list: &str| {
            Arena(
                Command::new(env!("CARGO_BIN_EXE_arena"))
                    .args(["--entities", "200", "--frames", "20", "--shards", "1"])
                    .args(["--connect-timeout", "10", "--processes", n])
                    .args(["--process", &process.to_string(), "--addresses", list])
                    .stdout(Stdio::null())
                    .stderr(Stdio::piped())
                    .spawn()
                    .unwrap(),
            )
        };
        wait_all([start(0, "2", &addresses), start(1, "3", &three)], 30)
    };
    for (i, (code, err)) in [(code0, err0), (code1, err1)].iter().enumerate() {
        assert_eq!(*code, Some(1), "process {i}: {err}");
        assert!(err.contains("the process count is"), "process {i}: {err}");
    }
}

/// Waits (`secs` at most, else kills them and fails) for both arenas: each one's exit
/// code and stderr.
fn wait_all(mut children: [Arena; 2], secs: u64) -> [(Option<i32>, String); 2] {
    use std::io::Read;
    use std::time::{Duration, Instant};
    let deadline = Instant::now() + Duration::from_secs(secs);
    let mut codes = [None, None];
    for (i, c) in children.iter_mut().enumerate() {
        let status = loop {
            if let Some(status) = c.0.try_wait().unwrap() {
                break status;
            }
            assert!(
                Instant::now() < deadline,
                "the arena processes did not finish within {secs} s"
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        codes[i] = status.code();
    }
    [0, 1].map(|i| {
        let mut err = String::new();
        let _ = children[i]
            .0
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut err);
        (codes[i], err)
    })
}

#[test]
fn a_killed_arena_process_ends_the_other_with_an_error_in_bounded_time() {
    // Was: the survivor panicked (exit 101, four panic messages, no frame or process).
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};
    let addresses = addresses(2);
    let start = |process: usize| {
        Arena(
            Command::new(env!("CARGO_BIN_EXE_arena"))
                .args(["--entities", "200", "--frames", "1000000", "--shards", "1"])
                .args(["--processes", "2", "--addresses", &addresses])
                .args(["--process", &process.to_string()])
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap(),
        )
    };
    let mut children = [start(0), start(1)];
    // Started, connected and running frames by then (or, if not, still starting: the
    // survivor must then give up just as clearly).
    std::thread::sleep(Duration::from_millis(1500));
    children[1].0.kill().unwrap();
    let killed = Instant::now();
    let [(code, err), _] = wait_all(children, 10);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("process 1"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(killed.elapsed() < Duration::from_secs(10));
}
