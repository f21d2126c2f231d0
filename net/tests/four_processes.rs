//! Four `duel --headless` processes over loopback UDP, one player each: every process
//! prints the same checksum for every confirmed frame, equal to `duel --truth --players
//! 4`. Bounded: the children are killed at the deadline.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

const PLAYERS: usize = 4;
const FRAMES: u64 = 300;
const DEADLINE: Duration = Duration::from_secs(60);

/// Kills the child when dropped (a failed assertion included), so no test leaves a
/// process behind.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Headless duel player `local` of `players`, reading every player's address from
/// standard input (`--peers -`), its output lines sent to the receiver.
fn spawn(players: usize, local: usize, key: &str) -> (Killed, mpsc::Receiver<String>) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_duel"))
        .args(["--key", key, "--headless"])
        .args(["--players", &players.to_string()])
        .args(["--local", &local.to_string()])
        .args(["--bind", "127.0.0.1:0", "--peers", "-"])
        .args(["--frames", &FRAMES.to_string(), "--timeout", "45"])
        .args(["--workers", "1", "--delay", "0"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("the duel binary starts");
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    (Killed(child), rx)
}

/// The next line (`None` once the process closed its output), or a panic at the
/// deadline.
fn line(rx: &mpsc::Receiver<String>, deadline: Instant) -> Option<String> {
    let left = deadline.saturating_duration_since(Instant::now());
    match rx.recv_timeout(left) {
        Ok(l) => Some(l),
        Err(mpsc::RecvTimeoutError::Disconnected) => None,
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("no output before the deadline"),
    }
}

/// No input delay, so the processes (ticking out of phase) predict and roll back.
#[test]
fn four_duel_processes_over_loopback_udp_agree_on_every_confirmed_frame() {
    let deadline = Instant::now() + DEADLINE;
    let key = "four_processes.rs: a shared passphrase";
    let mut procs: Vec<_> = (0..PLAYERS).map(|k| spawn(PLAYERS, k, key)).collect();
    // Each prints where it is bound; each is then told every player's address.
    let addrs: Vec<String> = procs
        .iter()
        .map(|(_, rx)| {
            let l = line(rx, deadline).expect("a `bound` line");
            l.strip_prefix("bound ")
                .expect("`bound ADDR` first")
                .to_owned()
        })
        .collect();
    let list = addrs.join(",");
    for (child, _) in &mut procs {
        writeln!(child.0.stdin.as_mut().unwrap(), "{list}").unwrap();
    }
    let mut outputs = Vec::new();
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
        outputs.push((confirmed, done.expect("a done line")));
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
    for (k, (confirmed, done)) in outputs.iter().enumerate() {
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
    assert!(rollbacks > 0, "{outputs:?}");
}
