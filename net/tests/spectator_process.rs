//! The `duel` binary as three real processes over loopback UDP: two players, one of them
//! hosting a spectator (`--spectators`), and the spectator (`--spectate`). All three
//! print the same checksum for every frame, equal to a single-process run of the same
//! scripted inputs. Bounded: the children are killed at the deadline.

#[allow(dead_code)]
#[path = "../src/bin/duel/game.rs"]
mod game;

mod process;

use std::io::Write;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use process::{bound, http, inspector_host, line, status_frame};

const FRAMES: u64 = 300;
const DEADLINE: Duration = Duration::from_secs(60);
const KEY: &str = "spectator_process.rs: a shared passphrase";

/// A headless duel process with `args` and the match's key, playing `FRAMES` frames.
fn spawn(args: &[&str]) -> (process::Killed, mpsc::Receiver<String>) {
    let frames = FRAMES.to_string();
    let all: Vec<&str> = ["--key", KEY, "--frames", &frames]
        .iter()
        .chain(args)
        .copied()
        .collect();
    process::spawn(&all)
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

/// `duel --spectate HOST --inspect ADDR`: the inspector watches the match from the
/// spectator, read-only. Its runtime runs the spectator's confirmed frames with their
/// inputs (its checksum never parts from the match's: no `inspector differs` line; the
/// status's frame count grows), it refuses to pause, and the spectator's confirmed lines
/// are still the players'.
#[test]
fn a_spectator_process_serves_a_read_only_inspector_of_the_match() {
    const FRAMES: u64 = 180;
    let deadline = Instant::now() + DEADLINE;
    let frames = FRAMES.to_string();
    let (mut watcher, rx_w) = spawn(&[
        "--spectate",
        "-",
        "--inspect",
        "127.0.0.1:0",
        "--frames",
        &frames,
    ]);
    let addr_w = bound(&rx_w, deadline);
    let (mut host, rx_h) = spawn(&[
        "--local",
        "0",
        "--peer",
        "-",
        "--spectators",
        &addr_w,
        "--frames",
        &frames,
    ]);
    let (mut guest, rx_g) = spawn(&["--local", "1", "--peer", "-", "--frames", &frames]);
    let (addr_h, addr_g) = (bound(&rx_h, deadline), bound(&rx_g, deadline));
    writeln!(host.0.stdin.as_mut().unwrap(), "{addr_g}").unwrap();
    writeln!(guest.0.stdin.as_mut().unwrap(), "{addr_h}").unwrap();
    writeln!(watcher.0.stdin.as_mut().unwrap(), "{addr_h}").unwrap();
    let url = line(&rx_w, deadline).expect("an `inspector URL` line");
    let inspector = inspector_host(&url);
    // The inspector's runtime follows the spectator's confirmed frames; asked while the
    // spectator has frames to go (it ends with the last, the inspector with it).
    let mut seen = 0;
    let mut confirmed_w = Vec::new();
    while seen < 60 {
        let l = line(&rx_w, deadline).expect("the spectator goes on");
        assert!(!l.starts_with("inspector differs"), "{l}");
        if l.starts_with("confirmed ") {
            confirmed_w.push(l);
        }
        let (code, status) = http(&inspector, "GET", "/api/status");
        assert_eq!(code, 200, "{status}");
        assert!(status.contains("\"read_only\":true"), "{status}");
        seen = seen.max(status_frame(&status));
    }
    for path in ["/api/entities", "/api/picture", "/api/timeline"] {
        let (code, body) = http(&inspector, "GET", path);
        assert_eq!(code, 200, "{path}: {body}");
    }
    let (code, body) = http(&inspector, "POST", "/api/pause");
    assert_eq!(code, 403, "{body}");
    // The spectator was not paused: it runs to the last frame, with the players' lines.
    let mut done_w = String::new();
    while let Some(l) = line(&rx_w, deadline) {
        assert!(!l.starts_with("inspector differs"), "{l}");
        if l.starts_with("confirmed ") {
            confirmed_w.push(l);
        } else if l.starts_with("done ") {
            done_w = l;
        }
    }
    let lines = |rx: &mpsc::Receiver<String>| {
        let mut confirmed = Vec::new();
        while let Some(l) = line(rx, deadline) {
            if l.starts_with("confirmed ") {
                confirmed.push(l);
            }
        }
        confirmed
    };
    let (confirmed_h, confirmed_g) = (lines(&rx_h), lines(&rx_g));
    let status = [&mut watcher, &mut host, &mut guest].map(|c| c.0.wait().unwrap());
    assert!(status.iter().all(|s| s.success()), "{status:?}");
    assert!(done_w.contains(" rejected=0 "), "{done_w}");
    assert_eq!(confirmed_w.len(), FRAMES as usize);
    assert_eq!(confirmed_w, confirmed_h);
    assert_eq!(confirmed_w, confirmed_g);
}
