//! The `duel` binary as two real processes over loopback UDP: both
//! print the same checksum for every confirmed frame, equal to a single-process run of
//! the same scripted inputs. Bounded: the children are killed at the deadline.

#[allow(dead_code)]
#[path = "../src/bin/duel/game.rs"]
mod game;

mod process;

use std::io::Write;
use std::process::Command;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use process::{Killed, bound, http, inspector_host, line, status_frame};

const FRAMES: u64 = 300;
const DEADLINE: Duration = Duration::from_secs(60);

/// A headless duel peer; with `key`, its datagrams are sealed under it.
fn spawn(local: usize, delay: u64, key: Option<&str>) -> (Killed, mpsc::Receiver<String>) {
    spawn_with(local, delay, key, &[])
}

/// [`spawn`], with `extra` options on its command line.
fn spawn_with(
    local: usize,
    delay: u64,
    key: Option<&str>,
    extra: &[&str],
) -> (Killed, mpsc::Receiver<String>) {
    let (local, frames, delay) = (local.to_string(), FRAMES.to_string(), delay.to_string());
    let mut args = vec![
        "--local", &local, "--peer", "-", "--frames", &frames, "--delay", &delay,
    ];
    if let Some(k) = key {
        args.extend(["--key", k]);
    }
    args.extend(extra);
    process::spawn(&args)
}

/// Reads each peer's `bound ADDR` line and gives it the other's address (its `--peer -`);
/// returns the two addresses.
fn introduce(peers: [(&mut Killed, &mpsc::Receiver<String>); 2], deadline: Instant) -> [String; 2] {
    let [(a, rx_a), (b, rx_b)] = peers;
    let (addr_a, addr_b) = (bound(rx_a, deadline), bound(rx_b, deadline));
    writeln!(a.0.stdin.as_mut().unwrap(), "{addr_b}").unwrap();
    writeln!(b.0.stdin.as_mut().unwrap(), "{addr_a}").unwrap();
    [addr_a, addr_b]
}

/// No input delay: a remote input is late for about half a frame (the processes tick
/// out of phase), so the peers predict and roll back over real UDP too.
#[test]
fn two_duel_processes_over_loopback_udp_agree_on_every_confirmed_frame() {
    let deadline = Instant::now() + DEADLINE;
    // With a session key, as a game should ship.
    let key = "two_processes.rs: a shared passphrase";
    // Each peer records the match (`--record`), replayed offline below.
    let dir = std::env::temp_dir().join(format!("runsync-duel-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let files = [dir.join("a.replay"), dir.join("b.replay")];
    let record = |i: usize| ["--record".to_owned(), files[i].display().to_string()];
    let (ra, rb) = (record(0), record(1));
    let (mut a, rx_a) = spawn_with(0, 0, Some(key), &[&ra[0], &ra[1]]);
    let (mut b, rx_b) = spawn_with(1, 0, Some(key), &[&rb[0], &rb[1]]);
    introduce([(&mut a, &rx_a), (&mut b, &rx_b)], deadline);
    let collect = |rx: &mpsc::Receiver<String>| {
        let mut confirmed = Vec::new();
        let mut done = None;
        while let Some(l) = line(rx, deadline) {
            if let Some(rest) = l.strip_prefix("confirmed ") {
                let (f, sum) = rest.split_once(' ').unwrap();
                confirmed.push((
                    f.parse::<u64>().unwrap(),
                    u64::from_str_radix(sum, 16).unwrap(),
                ));
            } else if l.starts_with("done ") {
                done = Some(l);
            }
        }
        (confirmed, done)
    };
    let (confirmed_a, done_a) = collect(&rx_a);
    let (confirmed_b, done_b) = collect(&rx_b);
    let status_a = a.0.wait().unwrap();
    let status_b = b.0.wait().unwrap();
    assert!(
        status_a.success() && status_b.success(),
        "{status_a} {status_b}"
    );
    let truth = game::truth(FRAMES, 0);
    for (who, confirmed) in [("a", &confirmed_a), ("b", &confirmed_b)] {
        assert_eq!(confirmed.len(), FRAMES as usize, "{who}");
        for (i, &(f, sum)) in confirmed.iter().enumerate() {
            assert_eq!(f, i as u64 + 1, "{who}: in order, no gap");
            assert_eq!(sum, truth[i], "{who}: frame {f}");
        }
    }
    let (done_a, done_b) = (done_a.unwrap(), done_b.unwrap());
    println!("peer a: {done_a}\npeer b: {done_b}");
    let field = |done: &str, key: &str| -> u64 {
        done.split(' ')
            .find_map(|kv| kv.strip_prefix(key)?.strip_prefix('='))
            .unwrap()
            .parse()
            .unwrap()
    };
    for done in [&done_a, &done_b] {
        assert_eq!(field(done, "desyncs"), 0, "{done}");
        assert_eq!(field(done, "garbage"), 0, "{done}");
        for counter in ["unauthenticated", "replayed", "rejected", "strangers"] {
            assert_eq!(field(done, counter), 0, "{counter}: {done}");
        }
    }
    let rollbacks = field(&done_a, "rollbacks") + field(&done_b, "rollbacks");
    assert!(rollbacks > 0, "{done_a}\n{done_b}");
    // `duel --replay` plays each recording offline and prints the lines its peer printed
    // live (and the frames confirmed while it lingered after them).
    for (file, live) in files.iter().zip([&confirmed_a, &confirmed_b]) {
        let out = Command::new(env!("CARGO_BIN_EXE_duel"))
            .args(["--replay", &file.display().to_string(), "--workers", "3"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let replayed: Vec<(u64, u64)> = String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(|l| {
                let (f, sum) = l
                    .strip_prefix("confirmed ")
                    .unwrap()
                    .split_once(' ')
                    .unwrap();
                (f.parse().unwrap(), u64::from_str_radix(sum, 16).unwrap())
            })
            .collect();
        assert!(replayed.len() >= live.len(), "{}", file.display());
        assert_eq!(&replayed[..live.len()], &live[..], "{}", file.display());
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn garbage_sent_to_a_duel_process_is_counted_and_ignored() {
    let deadline = Instant::now() + DEADLINE;
    let (mut a, rx_a) = spawn(0, 2, None);
    let (mut b, rx_b) = spawn(1, 2, None);
    let [addr_a, _] = introduce([(&mut a, &rx_a), (&mut b, &rx_b)], deadline);
    // Junk at peer a from a third socket, on loopback only: empty, short, long, random.
    let junk = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let mut x = 1u32;
    for i in 0..200usize {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        let len = [0, 1, 7, 64, 600, 300][i % 6];
        let bytes: Vec<u8> = (0..len).map(|j| (x as usize + j * 31) as u8).collect();
        let _ = junk.send_to(&bytes, &addr_a);
    }
    let last = |rx: &mpsc::Receiver<String>| {
        let mut n = 0;
        let mut done = None;
        while let Some(l) = line(rx, deadline) {
            if l.starts_with("confirmed ") {
                n += 1;
            } else if l.starts_with("done ") {
                done = Some(l);
            }
        }
        (n, done.expect("a done line"))
    };
    let (n_a, done_a) = last(&rx_a);
    let (n_b, _) = last(&rx_b);
    assert!(a.0.wait().unwrap().success() && b.0.wait().unwrap().success());
    assert_eq!((n_a, n_b), (FRAMES, FRAMES));
    let garbage: u64 = done_a
        .split(' ')
        .find_map(|kv| kv.strip_prefix("garbage="))
        .unwrap()
        .parse()
        .unwrap();
    // Every packet the junk socket sent reached the socket (loopback) and was dropped.
    assert_eq!(garbage, 200, "{done_a}");
    assert!(done_a.contains(" desyncs=0 "), "{done_a}");
}

/// Both processes receive through `--net-sim` (a simulated bad network on real UDP): 30 ms
/// of latency, up to 10 ms of jitter, 5 % of packets lost, 5 % duplicated, 10 % held back
/// behind the next, each peer with its own seed. Every confirmed frame still agrees with
/// the other peer's and with `duel --truth`.
#[test]
fn two_duel_processes_over_a_simulated_bad_network_agree_on_every_confirmed_frame() {
    let deadline = Instant::now() + DEADLINE;
    let key = "two_processes.rs: the bad network's passphrase";
    let sim = |seed: u64| format!("latency=30,jitter=10,loss=5,dup=5,reorder=10,seed={seed}");
    let (sim_a, sim_b) = (sim(11), sim(12));
    let (mut a, rx_a) = spawn_with(0, 0, Some(key), &["--net-sim", &sim_a]);
    let (mut b, rx_b) = spawn_with(1, 0, Some(key), &["--net-sim", &sim_b]);
    introduce([(&mut a, &rx_a), (&mut b, &rx_b)], deadline);
    let collect = |rx: &mpsc::Receiver<String>| {
        let mut confirmed = Vec::new();
        let mut done = None;
        while let Some(l) = line(rx, deadline) {
            if l.starts_with("confirmed ") {
                confirmed.push(l);
            } else if l.starts_with("done ") {
                done = Some(l);
            }
        }
        (confirmed, done)
    };
    let (confirmed_a, done_a) = collect(&rx_a);
    let (confirmed_b, done_b) = collect(&rx_b);
    let status_a = a.0.wait().unwrap();
    let status_b = b.0.wait().unwrap();
    assert!(
        status_a.success() && status_b.success(),
        "{status_a} {status_b}"
    );
    let truth = Command::new(env!("CARGO_BIN_EXE_duel"))
        .args(["--truth", "--frames", &FRAMES.to_string(), "--delay", "0"])
        .output()
        .expect("duel --truth runs");
    assert!(truth.status.success());
    let truth: Vec<String> = String::from_utf8(truth.stdout)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    assert_eq!(truth.len(), FRAMES as usize);
    assert_eq!(confirmed_a, truth, "peer a against duel --truth");
    assert_eq!(confirmed_b, truth, "peer b against duel --truth");
    let (done_a, done_b) = (done_a.unwrap(), done_b.unwrap());
    println!("peer a: {done_a}\npeer b: {done_b}");
    let field = |done: &str, key: &str| -> u64 {
        done.split(' ')
            .find_map(|kv| kv.strip_prefix(key)?.strip_prefix('='))
            .unwrap_or_else(|| panic!("no {key}= in {done}"))
            .parse()
            .unwrap()
    };
    for done in [&done_a, &done_b] {
        // Copies are made above the transport's checks: the key does not drop them.
        for counter in [
            "desyncs",
            "garbage",
            "unauthenticated",
            "replayed",
            "rejected",
            "strangers",
            "sim_overflowed",
        ] {
            assert_eq!(field(done, counter), 0, "{counter}: {done}");
        }
    }
    // Each kind of trouble happened (a few hundred packets each way: none of these
    // counts is 0 but with odds under 1e-8), and the peers rolled back through it.
    let both = |key: &str| field(&done_a, key) + field(&done_b, key);
    for counter in [
        "sim_delayed",
        "sim_dropped",
        "sim_duplicated",
        "sim_reordered",
        "rollbacks",
    ] {
        assert!(both(counter) > 0, "{counter}: {done_a}\n{done_b}");
    }
}

/// `duel --desync-at`: one peer's game nudges its ship in frame 120. Both processes see
/// the desync, exit with status 3, and report it: the type (from the peer's checksum
/// alone) and, with both saves in `--desync-dir`, the entity, both values, and the
/// systems that wrote the value in the frames before.
#[test]
fn a_forced_desync_makes_both_duel_processes_exit_3_naming_the_type_and_the_entity() {
    let deadline = Instant::now() + DEADLINE;
    let dir = std::env::temp_dir().join(format!("runsync-desync-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let d = dir.display().to_string();
    let key = Some("two_processes.rs: desync");
    let (mut a, rx_a) = spawn_with(0, 2, key, &["--desync-dir", &d]);
    let (mut b, rx_b) = spawn_with(1, 2, key, &["--desync-dir", &d, "--desync-at", "120"]);
    introduce([(&mut a, &rx_a), (&mut b, &rx_b)], deadline);
    for rx in [&rx_a, &rx_b] {
        while line(rx, deadline).is_some() {}
    }
    let (status_a, status_b) = (a.0.wait().unwrap(), b.0.wait().unwrap());
    assert_eq!((status_a.code(), status_b.code()), (Some(3), Some(3)));
    for (me, other) in [(0, 1), (1, 0)] {
        let report = std::fs::read_to_string(dir.join(format!("duel-{me}-report.txt"))).unwrap();
        assert!(report.starts_with("duel: desync at frame 1"), "{report}");
        assert!(
            report.contains("types that differ: duel::game::Pos\n"),
            "{report}"
        );
        let entity = report
            .lines()
            .find(|l| l.trim_start().starts_with("entity "))
            .unwrap_or_else(|| panic!("no entity named: {report}"));
        // The nudged ship is player 1's; each side shows its own value first.
        assert!(entity.contains("component `duel::game::Pos`"), "{entity}");
        assert!(
            entity.contains("Pos { x: ") && entity.contains(" vs Pos { x: "),
            "{entity}"
        );
        assert!(report.contains(&format!("duel-{other}-frame-")), "{report}");
        // Provenance: the frames up to the desync run again, the ship watched. Only the
        // nudging peer's steer wrote the ship's position twice in a frame (its move,
        // then the nudge of one unit right).
        let history = report
            .split_once("    Pos of ")
            .unwrap_or_else(|| panic!("no provenance: {report}"))
            .1;
        assert!(history.contains("      frame "), "{report}");
        assert_eq!(
            history.contains(", steer #1: (1, 0)"),
            me == 1,
            "peer {me}: {report}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `duel --inspect ADDR`: the inspector watches the match read-only. Its runtime runs the
/// confirmed frames (status, entities and picture answer, the frame count grows), it
/// refuses to pause the match, and the match's confirmed lines are those of a match
/// without it.
#[test]
fn a_duel_process_serves_a_read_only_inspector_of_the_match() {
    let deadline = Instant::now() + DEADLINE;
    let key = Some("two_processes.rs: inspect");
    let (mut a, rx_a) = spawn_with(0, 2, key, &["--inspect", "127.0.0.1:0"]);
    let (mut b, rx_b) = spawn_with(1, 2, key, &[]);
    introduce([(&mut a, &rx_a), (&mut b, &rx_b)], deadline);
    let url = line(&rx_a, deadline).expect("an `inspector URL` line");
    let host = inspector_host(&url);
    let http = |method: &str, path: &str| http(&host, method, path);
    // The inspector's runtime follows the confirmed frames.
    let mut seen = 0;
    let mut confirmed_a = Vec::new();
    while seen < 100 {
        let l = line(&rx_a, deadline).expect("the match goes on");
        // The inspector's runtime reaches every confirmed frame's checksum.
        assert!(!l.starts_with("inspector differs"), "{l}");
        if l.starts_with("confirmed ") {
            confirmed_a.push(l);
        }
        let (code, status) = http("GET", "/api/status");
        assert_eq!(code, 200, "{status}");
        assert!(status.contains("\"read_only\":true"), "{status}");
        seen = seen.max(status_frame(&status));
    }
    for path in ["/api/entities", "/api/picture", "/api/timeline"] {
        let (code, body) = http("GET", path);
        assert_eq!(code, 200, "{path}: {body}");
    }
    let (code, body) = http("POST", "/api/pause");
    assert_eq!(code, 403, "{body}");
    // The match was not paused: both processes finish it, with the same lines.
    while let Some(l) = line(&rx_a, deadline) {
        assert!(!l.starts_with("inspector differs"), "{l}");
        if l.starts_with("confirmed ") {
            confirmed_a.push(l);
        }
    }
    let mut confirmed_b = Vec::new();
    while let Some(l) = line(&rx_b, deadline) {
        if l.starts_with("confirmed ") {
            confirmed_b.push(l);
        }
    }
    assert!(a.0.wait().unwrap().success() && b.0.wait().unwrap().success());
    assert_eq!(confirmed_a.len(), FRAMES as usize);
    assert_eq!(confirmed_a, confirmed_b);
}
