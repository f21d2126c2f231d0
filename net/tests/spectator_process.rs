//! The `duel` binary as three real processes over loopback UDP: two players, one of them
//! hosting a spectator (`--spectators`), and the spectator (`--spectate`). All three
//! print the same checksum for every frame, equal to a single-process run of the same
//! scripted inputs. Bounded: the children are killed at the deadline.

#[allow(dead_code)]
#[path = "../src/bin/duel/game.rs"]
mod game;

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

const FRAMES: u64 = 300;
const DEADLINE: Duration = Duration::from_secs(60);
const KEY: &str = "spectator_process.rs: a shared passphrase";

/// Kills the child when dropped (a failed assertion included), so no test leaves a
/// process behind.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A headless duel process with `args`, reading its peer's (or host's) address from
/// standard input after it prints `bound ADDR`; its output lines come through the
/// receiver.
fn spawn(args: &[&str]) -> (Killed, mpsc::Receiver<String>) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_duel"))
        .args(["--headless", "--key", KEY, "--bind", "127.0.0.1:0"])
        .args(["--frames", &FRAMES.to_string(), "--timeout", "45"])
        .args(["--workers", "1"])
        .args(args)
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

/// The next line, or a panic at the deadline.
fn line(rx: &mpsc::Receiver<String>, deadline: Instant) -> Option<String> {
    let left = deadline.saturating_duration_since(Instant::now());
    match rx.recv_timeout(left) {
        Ok(l) => Some(l),
        Err(mpsc::RecvTimeoutError::Disconnected) => None,
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("no output before the deadline"),
    }
}

/// The address a process printed in its first line, `bound ADDR`.
fn bound(rx: &mpsc::Receiver<String>, deadline: Instant) -> String {
    let l = line(rx, deadline).expect("a `bound` line");
    l.strip_prefix("bound ")
        .expect("`bound ADDR` first")
        .to_owned()
}

/// Every `confirmed FRAME CHECKSUM` line, and the `done` line.
fn collect(rx: &mpsc::Receiver<String>, deadline: Instant) -> (Vec<(u64, u64)>, String) {
    let mut confirmed = Vec::new();
    let mut done = String::new();
    while let Some(l) = line(rx, deadline) {
        if let Some(rest) = l.strip_prefix("confirmed ") {
            let (f, sum) = rest.split_once(' ').unwrap();
            confirmed.push((
                f.parse::<u64>().unwrap(),
                u64::from_str_radix(sum, 16).unwrap(),
            ));
        } else if l.starts_with("done ") {
            done = l;
        }
    }
    (confirmed, done)
}

#[test]
fn a_spectator_process_prints_the_players_confirmed_frames() {
    let deadline = Instant::now() + DEADLINE;
    // The spectator first: the host needs its address on its command line.
    let (mut watcher, rx_w) = spawn(&["--spectate", "-"]);
    let addr_w = bound(&rx_w, deadline);
    let (mut host, rx_h) = spawn(&["--local", "0", "--peer", "-", "--spectators", &addr_w]);
    let (mut guest, rx_g) = spawn(&["--local", "1", "--peer", "-"]);
    let (addr_h, addr_g) = (bound(&rx_h, deadline), bound(&rx_g, deadline));
    writeln!(host.0.stdin.as_mut().unwrap(), "{addr_g}").unwrap();
    writeln!(guest.0.stdin.as_mut().unwrap(), "{addr_h}").unwrap();
    writeln!(watcher.0.stdin.as_mut().unwrap(), "{addr_h}").unwrap();
    let (confirmed_w, done_w) = collect(&rx_w, deadline);
    let (confirmed_h, done_h) = collect(&rx_h, deadline);
    let (confirmed_g, done_g) = collect(&rx_g, deadline);
    let status = [&mut watcher, &mut host, &mut guest].map(|c| c.0.wait().unwrap());
    assert!(status.iter().all(|s| s.success()), "{status:?}");
    println!("spectator: {done_w}\nhost: {done_h}\nguest: {done_g}");
    let truth = game::truth(FRAMES, 2);
    for (who, confirmed) in [
        ("spectator", &confirmed_w),
        ("host", &confirmed_h),
        ("guest", &confirmed_g),
    ] {
        assert_eq!(confirmed.len(), FRAMES as usize, "{who}");
        for (i, &(f, sum)) in confirmed.iter().enumerate() {
            assert_eq!(f, i as u64 + 1, "{who}: in order, no gap");
            assert_eq!(sum, truth[i], "{who}: frame {f}");
        }
    }
    for done in [&done_w, &done_h, &done_g] {
        assert!(done.contains(" rejected=0 "), "{done}");
    }
}
