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

/// A free port on 127.0.0.1 (bound, then released).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[test]
fn two_arena_processes_on_loopback_give_one_process_bits() {
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};
    let addresses = format!("127.0.0.1:{},127.0.0.1:{}", free_port(), free_port());
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
    let outputs: Vec<_> = children.map(|c| c.wait_with_output().unwrap()).to_vec();
    for (i, out) in outputs.iter().enumerate() {
        assert!(
            out.status.success(),
            "process {i}: {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let text = String::from_utf8_lossy(&outputs[0].stdout);
    assert!(text.contains("2 shards (2 x 1 tiles"), "{text}");
    assert!(
        text.contains("check: every frame's checksum equals one process's (90 frames)"),
        "{text}"
    );
    // Process 1 leaves the report to process 0 (timely may print its connection retries).
    let other = String::from_utf8_lossy(&outputs[1].stdout);
    assert!(
        !other.contains("check:") && !other.contains("median:"),
        "{other}"
    );
}
