//! `duel` processes for the multi-process tests: spawned headless on a free loopback port,
//! their output lines read with a deadline, killed when dropped.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Kills the child when dropped (a failed assertion included), so no test leaves a
/// process behind.
pub(crate) struct Killed(pub(crate) Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `duel --headless --bind 127.0.0.1:0 --timeout 45 --workers 1 ARGS` (a later option
/// overrides an earlier one), standard input piped (for `--peer -` and the like), its
/// output lines sent to the receiver.
pub(crate) fn spawn(args: &[&str]) -> (Killed, mpsc::Receiver<String>) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_duel"))
        .args(["--headless", "--bind", "127.0.0.1:0", "--timeout", "45"])
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

/// The next line (`None` once the process closed its output), or a panic at the
/// deadline.
pub(crate) fn line(rx: &mpsc::Receiver<String>, deadline: Instant) -> Option<String> {
    let left = deadline.saturating_duration_since(Instant::now());
    match rx.recv_timeout(left) {
        Ok(l) => Some(l),
        Err(mpsc::RecvTimeoutError::Disconnected) => None,
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("no output before the deadline"),
    }
}

/// The address a process printed in its first line, `bound ADDR`.
pub(crate) fn bound(rx: &mpsc::Receiver<String>, deadline: Instant) -> String {
    let l = line(rx, deadline).expect("a `bound` line");
    l.strip_prefix("bound ")
        .expect("`bound ADDR` first")
        .to_owned()
}

/// The inspector's `HOST:PORT`, from the line a process with `--inspect` printed,
/// `inspector http://HOST:PORT/...`.
pub(crate) fn inspector_host(line: &str) -> String {
    line.strip_prefix("inspector http://")
        .and_then(|rest| rest.split('/').next())
        .unwrap_or_else(|| panic!("not an `inspector URL` line: {line}"))
        .to_owned()
}

/// `METHOD PATH` to the inspector at `host` (`HOST:PORT`): the status code and the body.
pub(crate) fn http(host: &str, method: &str, path: &str) -> (u16, String) {
    let mut s = TcpStream::connect(host).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let raw = format!(
        "{method} {path} HTTP/1.1\r\nHost: {host}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    );
    s.write_all(raw.as_bytes()).unwrap();
    let mut reply = String::new();
    s.read_to_string(&mut reply).unwrap();
    let code = reply[9..12].parse().unwrap();
    let body = reply
        .split_once("\r\n\r\n")
        .map_or("", |(_, b)| b)
        .to_owned();
    (code, body)
}

/// The frame the inspector's `/api/status` body `status` reports.
pub(crate) fn status_frame(status: &str) -> u64 {
    status
        .split("\"frame\":")
        .nth(1)
        .and_then(|r| r.split([',', '}']).next())
        .and_then(|f| f.trim().parse().ok())
        .unwrap_or_else(|| panic!("no frame in the status: {status}"))
}
