//! Two real processes on loopback, and what goes wrong between them: a shard that panics
//! in one process, a process killed (`kill -9`) or stopped (`SIGSTOP`) mid-run, a wrong
//! address, a process that never comes, junk connections while starting. Every process
//! must end with a clear error (naming the shard and frame, or the process and its
//! address) and a non-zero exit status, within a bound; a good run must still succeed.
//!
//! The processes are this test binary run again as a child (`child_process` below, with
//! `RUNSYNC_CLUSTER_CHILD` set), so each scenario is ordinary Rust here. Every test has a
//! hard deadline, and its children are killed when it ends, however it ends.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use runsync::prelude::*;
use runsync_cluster::{Cluster, cluster_config, model};

/// What a child process runs: `scenario;process;addresses;connect ms;peer ms;key`, from
/// the environment.
const CHILD: &str = "RUNSYNC_CLUSTER_CHILD";

/// Set (to any key) to run every scenario that names no key of its own with a cluster
/// key (`Cluster::key`) on both processes.
const TEST_KEY: &str = "RUNSYNC_CLUSTER_TEST_KEY";

/// The children's configuration fingerprint: digest bytes a stranger must never see.
const FINGERPRINT: u64 = 0x5EC2_E7F1_A9E2_0043;

/// A line a child prints (and flushes) once its frames are under way.
const RUNNING: &str = "child: running";

/// The child's side: runs one process of a two-process cluster, prints the outcome and
/// exits (0: a report or nothing to report; 1: an error, on stderr). A no-op as a test.
#[test]
fn child_process() {
    let Ok(spec) = std::env::var(CHILD) else {
        return;
    };
    let fields: Vec<&str> = spec.split(';').collect();
    let scenario: &'static str = match fields[0] {
        "ok" => "ok",
        "panic" => "panic",
        "long" => "long",
        other => panic!("no scenario {other}"),
    };
    let process = fields[1].parse::<usize>().unwrap();
    let addresses: Vec<String> = fields[2].split(',').map(str::to_owned).collect();
    let connect_timeout = Duration::from_millis(fields[3].parse().unwrap());
    let peer_timeout = Duration::from_millis(fields[4].parse().unwrap());
    let key = fields.get(5).filter(|k| !k.is_empty());
    let frames: u64 = match scenario {
        "ok" => 20,
        _ => 1_000_000,
    };
    let systems = move |rt: &mut Runtime| {
        model::systems(rt);
        rt.add_system_named("child", move |w: &World, _: &mut Output| {
            static SAID: AtomicBool = AtomicBool::new(false);
            let frame = w.resource::<Time>().frame + 1;
            if frame == 3 && !SAID.swap(true, Ordering::SeqCst) {
                println!("{RUNNING}");
                let _ = std::io::stdout().flush();
            }
            match scenario {
                "panic" if process == 1 && frame == 5 => panic!("boom in process 1"),
                // Slow enough that a run is under way for a while.
                "long" => std::thread::sleep(Duration::from_millis(2)),
                _ => {}
            }
        });
    };
    let config = cluster_config(1, addresses.len(), process, &addresses).unwrap();
    let mut cluster = Cluster::new(
        model::bands_of(300, 2.0 * model::RANGE),
        || model::world_of(300),
        systems,
    )
    .frames(frames)
    .connect_timeout(connect_timeout)
    .peer_timeout(peer_timeout)
    .fingerprint(FINGERPRINT);
    if let Some(key) = key {
        cluster = cluster.key(key);
    }
    let result = cluster.run(config);
    match result {
        Ok(Some(report)) => {
            let last = report.frames.last().map_or(0, |f| f.checksum);
            println!(
                "child: report of {} frames, last checksum {last:#018x}",
                report.frames.len()
            );
            std::process::exit(0)
        }
        Ok(None) => std::process::exit(0),
        Err(e) => {
            eprintln!("child error: {e}");
            std::process::exit(1)
        }
    }
}

/// Two fresh loopback addresses (from below the ephemeral ports, so no connection of
/// another test takes one before its process listens).
fn two_addresses() -> Vec<String> {
    runsync_cluster::loopback_addresses(2).unwrap()
}

/// A child process, killed when dropped; its stdout lines come through a channel.
struct Proc {
    child: Child,
    lines: mpsc::Receiver<String>,
    stdout: Vec<String>,
    stderr: std::thread::JoinHandle<String>,
}

impl Proc {
    /// Starts process `process` of `scenario` over `addresses`, with the connect and
    /// peer timeouts in milliseconds (and the key of [`TEST_KEY`], if set).
    fn start(scenario: &str, process: usize, addresses: &[String], timeouts: (u64, u64)) -> Proc {
        let key = std::env::var(TEST_KEY).ok();
        Proc::keyed(scenario, process, addresses, timeouts, key.as_deref())
    }

    /// [`start`](Self::start) with the cluster key `key` (`None`: none).
    fn keyed(
        scenario: &str,
        process: usize,
        addresses: &[String],
        timeouts: (u64, u64),
        key: Option<&str>,
    ) -> Proc {
        let spec = format!(
            "{scenario};{process};{};{};{};{}",
            addresses.join(","),
            timeouts.0,
            timeouts.1,
            key.unwrap_or("")
        );
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([
                "child_process",
                "--exact",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD, spec)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let (tx, lines) = mpsc::channel();
        let out = child.stdout.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        let mut err = child.stderr.take().unwrap();
        let stderr = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = err.read_to_string(&mut s);
            s
        });
        Proc {
            child,
            lines,
            stdout: Vec::new(),
            stderr,
        }
    }

    /// Waits (until `deadline`) for a line of stdout holding `text` (the test harness
    /// may print its own words before it on the line).
    fn wait_for_line(&mut self, text: &str, deadline: Instant) {
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    let found = line.contains(text);
                    self.stdout.push(line);
                    if found {
                        return;
                    }
                }
                Err(_) => panic!("no line {text:?} before the deadline: {:?}", self.stdout),
            }
        }
    }

    /// Waits (until `deadline`) for the process to exit: its status, stdout and stderr.
    fn finish(mut self, deadline: Instant) -> (ExitStatus, String, String) {
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!("a process did not exit before the deadline");
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        self.stdout.extend(self.lines.try_iter());
        // The reader threads end with the process (a little after it).
        std::thread::sleep(Duration::from_millis(20));
        self.stdout.extend(self.lines.try_iter());
        let stderr = std::mem::replace(&mut self.stderr, std::thread::spawn(String::new));
        let err = stderr.join().unwrap_or_default();
        (status, self.stdout.join("\n"), err)
    }

    /// Sends a signal by `kill`.
    #[cfg(unix)]
    fn signal(&self, signal: &str) {
        let ok = Command::new("kill")
            .args([signal, &self.child.id().to_string()])
            .status()
            .unwrap()
            .success();
        assert!(ok, "kill {signal}");
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The default timeouts in milliseconds: (connect, peer).
const TIMEOUTS: (u64, u64) = (20_000, 10_000);

#[test]
fn a_panicking_shard_in_process_1_ends_both_processes_naming_shard_and_frame() {
    let deadline = Instant::now() + Duration::from_secs(60);
    let addresses = two_addresses();
    let p0 = Proc::start("panic", 0, &addresses, TIMEOUTS);
    let p1 = Proc::start("panic", 1, &addresses, TIMEOUTS);
    for (i, p) in [p0, p1].into_iter().enumerate() {
        let (status, out, err) = p.finish(deadline);
        assert_eq!(status.code(), Some(1), "process {i}: {out}\n{err}");
        assert!(
            err.contains("shard 1 failed in frame 5, so every shard stopped")
                && err.contains("boom in process 1"),
            "process {i}: {err}"
        );
        assert!(
            !out.contains("child: report"),
            "process {i} reported: {out}"
        );
    }
}

#[test]
#[cfg(unix)]
fn a_killed_peer_ends_the_survivor_with_an_error_within_the_bound() {
    let deadline = Instant::now() + Duration::from_secs(60);
    let addresses = two_addresses();
    let mut p0 = Proc::start("long", 0, &addresses, TIMEOUTS);
    let mut p1 = Proc::start("long", 1, &addresses, TIMEOUTS);
    p0.wait_for_line(RUNNING, deadline);
    p1.wait_for_line(RUNNING, deadline);
    p1.signal("-KILL");
    let killed = Instant::now();
    let (status, out, err) = p0.finish(killed + Duration::from_secs(10));
    let took = killed.elapsed();
    assert_eq!(status.code(), Some(1), "{out}\n{err}");
    assert!(
        err.contains(&format!(
            "lost process 1 (shards 1..2, at {})",
            addresses[1]
        )) && err.contains("in frame "),
        "{err}"
    );
    // One error line, no panic messages from timely's threads.
    assert!(!err.contains("panicked"), "{err}");
    assert!(took < Duration::from_secs(10), "{took:?}");
}

#[test]
#[cfg(unix)]
fn a_stopped_peer_is_named_after_the_peer_timeout() {
    let deadline = Instant::now() + Duration::from_secs(60);
    let addresses = two_addresses();
    let mut p0 = Proc::start("long", 0, &addresses, (20_000, 1_000));
    let mut p1 = Proc::start("long", 1, &addresses, (20_000, 1_000));
    p0.wait_for_line(RUNNING, deadline);
    p1.wait_for_line(RUNNING, deadline);
    p1.signal("-STOP");
    let stopped = Instant::now();
    let (status, _, err) = p0.finish(stopped + Duration::from_secs(10));
    assert_eq!(status.code(), Some(1), "{err}");
    assert!(
        err.contains("no word from shard(s) 1")
            && err.contains(&format!("(process 1 at {})", addresses[1])),
        "{err}"
    );
    assert!(
        stopped.elapsed() < Duration::from_secs(5),
        "{:?}",
        stopped.elapsed()
    );
    // p1 is killed (stopped or not) when dropped.
}

#[test]
fn a_wrong_address_times_out_naming_it() {
    let deadline = Instant::now() + Duration::from_secs(30);
    // Process 1 of two, but nobody listens at process 0's address.
    let addresses = two_addresses();
    let start = Instant::now();
    let p1 = Proc::start("ok", 1, &addresses, (1_000, 10_000));
    let (status, _, err) = p1.finish(deadline);
    assert_eq!(status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!(
            "process 0 at {} did not answer within",
            addresses[0]
        )),
        "{err}"
    );
    assert!(start.elapsed() < Duration::from_secs(15));
}

#[test]
fn a_process_that_never_comes_is_named() {
    let deadline = Instant::now() + Duration::from_secs(30);
    let addresses = two_addresses();
    let p0 = Proc::start("ok", 0, &addresses, (1_000, 10_000));
    let (status, _, err) = p0.finish(deadline);
    assert_eq!(status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!(
            "process 1 (at {}) did not connect to this process ({})",
            addresses[1], addresses[0]
        )),
        "{err}"
    );
}

#[test]
fn junk_connections_while_starting_are_refused_and_the_run_succeeds() {
    let deadline = Instant::now() + Duration::from_secs(60);
    let addresses = two_addresses();
    let mut p0 = Proc::start("ok", 0, &addresses, TIMEOUTS);
    // Process 0 listens: a stray 8 bytes (what crashed timely's start), a connection
    // that says nothing, and one that sends a page of garbage.
    let connect = || loop {
        match TcpStream::connect(&addresses[0]) {
            Ok(s) => break s,
            Err(_) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => panic!("process 0 never listened: {e}"),
        }
    };
    let mut stray = connect();
    stray.write_all(&u64::MAX.to_be_bytes()).unwrap();
    drop(stray);
    let _silent = connect();
    let mut garbage = connect();
    garbage.write_all(&[0xAB; 4096]).unwrap();
    let p1 = Proc::start("ok", 1, &addresses, TIMEOUTS);
    let (s1, _, e1) = p1.finish(deadline);
    assert!(s1.success(), "process 1: {e1}");
    p0.wait_for_line("child: report of 20 frames", deadline);
    let (s0, out, e0) = p0.finish(deadline);
    assert!(s0.success(), "process 0: {out}\n{e0}");
}

/// Connects to `address`, retrying until `deadline` (the process may not listen yet).
fn connect_by(address: &str, deadline: Instant) -> TcpStream {
    loop {
        match TcpStream::connect(address) {
            Ok(s) => break s,
            Err(_) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => panic!("{address} never listened: {e}"),
        }
    }
}

/// A stranger's hello: the magic, another protocol version (99), a 4-byte body — 20 bytes
/// (what ended a waiting process with a mismatch, and got its configuration digests in
/// answer). Returns all it got back before the process closed the connection (or 5 s).
fn hello_of_another_version(address: &str, deadline: Instant) -> Vec<u8> {
    let mut s = connect_by(address, deadline);
    let mut hello = b"RSYNCLU\0".to_vec();
    hello.extend_from_slice(&99u32.to_le_bytes());
    hello.extend_from_slice(&4u32.to_le_bytes());
    hello.extend_from_slice(&[7; 4]);
    assert_eq!(hello.len(), 20);
    s.write_all(&hello).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut got = Vec::new();
    let _ = s.read_to_end(&mut got);
    got
}

/// Whether `bytes` hold `digest`'s bytes (either order).
fn holds(bytes: &[u8], digest: u64) -> bool {
    [digest.to_le_bytes(), digest.to_be_bytes()]
        .iter()
        .any(|d| bytes.windows(8).any(|w| w == d))
}

/// The last checksum of the children's world after 20 frames in one process, as they
/// print it (their own system only prints).
fn last_checksum_of_one_process() -> String {
    let one = Cluster::new(
        model::bands_of(300, 2.0 * model::RANGE),
        || model::world_of(300),
        model::systems,
    )
    .frames(20)
    .run_in_one_process()
    .unwrap();
    format!(
        "last checksum {:#018x}",
        one.frames.last().unwrap().checksum
    )
}

#[test]
fn a_stranger_s_hello_of_another_version_neither_ends_the_run_nor_learns_its_configuration() {
    let deadline = Instant::now() + Duration::from_secs(60);
    let addresses = two_addresses();
    let mut p0 = Proc::start("ok", 0, &addresses, TIMEOUTS);
    // While process 0 waits for process 1: a local client's 20 bytes.
    let answer = hello_of_another_version(&addresses[0], deadline);
    assert!(
        !holds(&answer, FINGERPRINT),
        "a stranger got the configuration fingerprint: {answer:02x?}"
    );
    // At most the magic and this build's version (so a process of another build can say
    // what differs): no body, no digest.
    assert!(answer.len() <= 16, "a stranger got {answer:02x?}");
    let p1 = Proc::start("ok", 1, &addresses, TIMEOUTS);
    let (s1, _, e1) = p1.finish(deadline);
    assert!(s1.success(), "process 1: {e1}");
    p0.wait_for_line("child: report of 20 frames", deadline);
    let (s0, out, e0) = p0.finish(deadline);
    assert!(s0.success(), "process 0: {out}\n{e0}");
    // The same result as without the stranger.
    assert!(out.contains(&last_checksum_of_one_process()), "{out}");
    // The refusal is logged, naming where the stranger came from and what it spoke.
    assert!(
        e0.contains("refused a connection from 127.0.0.1:") && e0.contains("version 99"),
        "{e0}"
    );
}

#[test]
fn with_a_key_a_process_of_another_key_and_a_stranger_are_refused_and_the_peers_meet() {
    let deadline = Instant::now() + Duration::from_secs(60);
    let addresses = two_addresses();
    let key = Some("the right key");
    let mut p0 = Proc::keyed("ok", 0, &addresses, TIMEOUTS, key);
    // A process of another key in process 1's place: it is told, and process 0 waits on.
    let intruder = Proc::keyed("ok", 1, &addresses, TIMEOUTS, Some("a wrong key"));
    let (status, _, err) = intruder.finish(deadline);
    assert_eq!(status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!(
            "process 0 (at {}) does not share this process's cluster key",
            addresses[0]
        )),
        "{err}"
    );
    // A stranger of another version learns nothing of the run either.
    let answer = hello_of_another_version(&addresses[0], deadline);
    assert!(
        answer.len() <= 16 && !holds(&answer, FINGERPRINT),
        "{answer:02x?}"
    );
    let p1 = Proc::keyed("ok", 1, &addresses, TIMEOUTS, key);
    let (s1, _, e1) = p1.finish(deadline);
    assert!(s1.success(), "process 1: {e1}");
    p0.wait_for_line("child: report of 20 frames", deadline);
    let (s0, out, e0) = p0.finish(deadline);
    assert!(s0.success(), "process 0: {out}\n{e0}");
    assert!(out.contains(&last_checksum_of_one_process()), "{out}");
    assert!(e0.contains("no proof of the cluster key"), "{e0}");
}

#[test]
fn a_process_without_the_key_is_refused_and_told() {
    let deadline = Instant::now() + Duration::from_secs(30);
    let addresses = two_addresses();
    let p0 = Proc::keyed("ok", 0, &addresses, (3_000, 10_000), Some("the key"));
    let p1 = Proc::keyed("ok", 1, &addresses, (3_000, 10_000), None);
    let (s1, _, e1) = p1.finish(deadline);
    assert_eq!(s1.code(), Some(1), "{e1}");
    assert!(
        e1.contains("it runs with a cluster key, this process without one"),
        "{e1}"
    );
    // Process 0 took it for a stranger: logged, and no peer came.
    let (s0, _, e0) = p0.finish(deadline);
    assert_eq!(s0.code(), Some(1), "{e0}");
    assert!(
        e0.contains("it runs without a cluster key, this process with one")
            && e0.contains("did not connect to this process"),
        "{e0}"
    );
}
