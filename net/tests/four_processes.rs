//! Four `duel --headless` processes over loopback UDP, one player each: every process
//! prints the same checksum for every confirmed frame, equal to `duel --truth --players
//! 4`. Bounded: the children are killed at the deadline.

mod process;

use std::io::Write;
use std::process::Command;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use process::{Killed, bound, line};

const PLAYERS: usize = 4;
const FRAMES: u64 = 300;
const DEADLINE: Duration = Duration::from_secs(60);

/// Headless duel player `local` of `players`, reading every player's address from
/// standard input (`--peers -`).
fn spawn(players: usize, local: usize, key: &str) -> (Killed, mpsc::Receiver<String>) {
    let (players, local, frames) = (players.to_string(), local.to_string(), FRAMES.to_string());
    process::spawn(&[
        "--key",
        key,
        "--players",
        &players,
        "--local",
        &local,
        "--peers",
        "-",
        "--frames",
        &frames,
        "--delay",
        "0",
    ])
}

/// No input delay, so the processes (ticking out of phase) predict and roll back.
#[test]
fn four_duel_processes_over_loopback_udp_agree_on_every_confirmed_frame() {
    let deadline = Instant::now() + DEADLINE;
    let key = "four_processes.rs: a shared passphrase";
    let mut procs: Vec<_> = (0..PLAYERS).map(|k| spawn(PLAYERS, k, key)).collect();
    // Each prints where it is bound; each is then told every player's address.
    let addrs: Vec<String> = procs.iter().map(|(_, rx)| bound(rx, deadline)).collect();
    let list = addrs.join(",");
    for (child, _) in &mut procs {
        writeln!(child.0.stdin.as_mut().unwrap(), "{list}").unwrap();
    }
    let mut printed = Vec::new();
    for (_, rx) in &procs {
        let mut confirmed = Vec::new();
        let mut done = None;
        while let Some(l) = line(rx, deadline) {
            if l.starts_with("confirmed ") {
                confirmed.push(l);
            } else if l.starts_with("done ") {
                done = Some(l);
            }
        }
        printed.push((confirmed, done.expect("a done line")));
    }
    for (k, (child, _)) in procs.iter_mut().enumerate() {
        let status = child.0.wait().unwrap();
        assert!(status.success(), "player {k}: {status}");
    }
    let truth = Command::new(env!("CARGO_BIN_EXE_duel"))
        .args(["--truth", "--players", &PLAYERS.to_string()])
        .args(["--frames", &FRAMES.to_string(), "--delay", "0"])
        .output()
        .expect("duel --truth runs");
    assert!(truth.status.success());
    let truth: Vec<String> = String::from_utf8(truth.stdout)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    assert_eq!(truth.len(), FRAMES as usize);
    let field = |done: &str, key: &str| -> u64 {
        done.split(' ')
            .find_map(|kv| kv.strip_prefix(key)?.strip_prefix('='))
            .unwrap_or_else(|| panic!("no {key}= in {done}"))
            .parse()
            .unwrap()
    };
    let mut rollbacks = 0;
    for (k, (confirmed, done)) in printed.iter().enumerate() {
        println!("player {k}: {done}");
        assert_eq!(confirmed, &truth, "player {k} against duel --truth");
        for counter in [
            "desyncs",
            "garbage",
            "unauthenticated",
            "replayed",
            "rejected",
            "strangers",
        ] {
            assert_eq!(field(done, counter), 0, "player {k}: {counter}: {done}");
        }
        rollbacks += field(done, "rollbacks");
    }
    assert!(rollbacks > 0, "{printed:?}");
}
