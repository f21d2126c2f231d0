//! `arena --inspect`: the arena runs with the inspector attached, prints the page's URL
//! first, and answers the API while it runs. Runs the built `arena` binary.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};

#[test]
fn the_arena_serves_the_inspector_while_it_runs() {
    let mut arena = Command::new(env!("CARGO_BIN_EXE_arena"))
        .args(["--entities", "40", "--frames", "90", "--workers", "2"])
        .args(["--inspect", "127.0.0.1:0", "--inspect-ring", "8"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the arena binary runs");
    let mut lines = BufReader::new(arena.stdout.take().unwrap()).lines();
    let first = lines.next().expect("a first line").unwrap();
    let url = first
        .strip_prefix("arena: inspector at http://")
        .unwrap_or_else(|| panic!("the URL comes first: {first}"));
    let addr = url.trim_end_matches('/');

    let mut s = TcpStream::connect(addr).expect("the inspector listens");
    write!(s, "GET /api/status HTTP/1.1\r\nHost: {addr}\r\n\r\n").unwrap();
    let mut answer = String::new();
    s.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    let body: serde_json::Value =
        serde_json::from_str(answer.split_once("\r\n\r\n").unwrap().1).unwrap();
    assert_eq!(body["systems"][2], "Steer", "{body}");
    assert_eq!(body["ring"]["capacity"], 8);
    assert_eq!(body["components"][0]["short"], "Position");

    let rest: Vec<String> = lines.map(Result::unwrap).collect();
    let status = arena.wait().unwrap();
    let mut err = String::new();
    arena
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert!(status.success(), "{rest:?}\n{err}");
    assert!(
        rest.iter().any(|l| l.starts_with("frames per second")),
        "the report follows: {rest:?}"
    );
}

#[test]
fn the_ring_needs_the_inspector() {
    let out = Command::new(env!("CARGO_BIN_EXE_arena"))
        .args(["--inspect-ring", "8"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--inspect"));
}
