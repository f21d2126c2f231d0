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

/// What a child process runs: `(scenario, process, addresses, extra)`, from the
/// environment.
const CHILD: &str = "RUNSYNC_CLUSTER_CHILD";

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
    let result = Cluster::new(
        model::bands_of(300, 2.0 * model::RANGE),
        || model::world_of(300),
        systems,
    )
    .frames(frames)
    .connect_timeout(connect_timeout)
    .peer_timeout(peer_timeout)
    .run(config);
    match result {
        Ok(Some(report)) => {
            println!("child: report of {} frames", report.frames.len());
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
    /// peer timeouts in milliseconds.
    fn start(scenario: &str, process: usize, addresses: &[String], timeouts: (u64, u64)) -> Proc {
        let spec = format!(
            "{scenario};{process};{};{};{}",
            addresses.join(","),
            timeouts.0,
            timeouts.1
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
