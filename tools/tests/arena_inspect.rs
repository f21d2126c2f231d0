//! `arena --inspect`: the arena runs with the inspector attached, prints the page's URL
//! first, answers the API while it runs, and reports the frames' own speed apart from the
//! time paced and paused. Runs the built `arena` binary, killed if it outlives its deadline.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The arena process, killed when dropped (a test that fails mid-way leaves no arena
/// behind, paused forever).
struct Arena(Child);

impl Drop for Arena {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Arena {
    fn start(args: &[&str]) -> Arena {
        Arena(
            Command::new(env!("CARGO_BIN_EXE_arena"))
                .args(args)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("the arena binary runs"),
        )
    }

    /// Waits (at most `limit`) for it to exit; its success, and its stderr.
    fn finish(&mut self, limit: Duration) -> (bool, String) {
        let deadline = Instant::now() + limit;
        let status = loop {
            if let Some(status) = self.0.try_wait().unwrap() {
                break status;
            }
            assert!(Instant::now() < deadline, "the arena outlived {limit:?}");
            std::thread::sleep(Duration::from_millis(20));
        };
        let mut err = String::new();
        self.0
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut err)
            .unwrap();
        (status.success(), err)
    }
}

/// One request to `addr` with `Host: host` and the `extra` header lines; status and body.
fn request(addr: &str, method: &str, path: &str, extra: &str) -> (u16, String) {
    let mut s = TcpStream::connect(addr).expect("the inspector listens");
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\n{extra}Content-Length: 0\r\n\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    s.read_to_string(&mut answer).unwrap();
    let code = answer
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("no status: {answer}"));
    (code, answer.split_once("\r\n\r\n").unwrap().1.to_owned())
}

/// The numbers in `line` (as `f64`), in order.
fn numbers(line: &str) -> Vec<f64> {
    line.split(|c: char| !(c.is_ascii_digit() || c == '.'))
        .filter_map(|w| w.parse().ok())
        .collect()
}

#[test]
fn the_arena_serves_the_inspector_while_it_runs() {
    let mut arena = Arena::start(&[
        "--entities",
        "40",
        "--frames",
        "90",
        "--workers",
        "2",
        "--inspect",
        "127.0.0.1:0",
        "--inspect-ring",
        "8",
    ]);
    let mut lines = BufReader::new(arena.0.stdout.take().unwrap()).lines();
    let first = lines.next().expect("a first line").unwrap();
    let url = first
        .strip_prefix("arena: inspector at http://")
        .unwrap_or_else(|| panic!("the URL comes first: {first}"));
    let addr = url.trim_end_matches('/').to_owned();

    let (code, body) = request(&addr, "GET", "/api/status", "");
    assert_eq!(code, 200, "{body}");
    let body: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(body["systems"][2], "Steer", "{body}");
    assert_eq!(body["ring"]["capacity"], 8);
    assert_eq!(body["components"][0]["short"], "Position");
    // Half a second paused: wall time the report must not count as the frames'.
    assert_eq!(request(&addr, "POST", "/api/pause", "").0, 200);
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(request(&addr, "POST", "/api/resume", "").0, 200);

    let rest: Vec<String> = lines.map(Result::unwrap).collect();
    let (ok, err) = arena.finish(Duration::from_secs(120));
    assert!(ok, "{rest:?}\n{err}");

    // frames per second  X   (90 frames in S s on 2 workers)
    let fps_line = rest
        .iter()
        .find(|l| l.starts_with("frames per second"))
        .unwrap_or_else(|| panic!("the report follows: {rest:?}"));
    let [fps, frames, frame_s, _workers] = numbers(fps_line)[..] else {
        panic!("{fps_line}");
    };
    // wall time  W s   (frames F s, paced to 60 Hz P s, paused or answering the inspector A s)
    let wall_line = rest
        .iter()
        .find(|l| l.starts_with("wall time"))
        .unwrap_or_else(|| panic!("the wall time is reported: {rest:?}"));
    assert!(
        wall_line.contains("paced to 60 Hz") && wall_line.contains("paused"),
        "{wall_line}"
    );
    let [wall, own, _hz, paced, waited] = numbers(wall_line)[..] else {
        panic!("{wall_line}");
    };
    assert_eq!(frames, 90.0, "{fps_line}");
    // The fps are over the frames' own time, the same time the wall line gives.
    assert!((own - frame_s).abs() <= 0.011, "{fps_line}\n{wall_line}");
    // (Both are printed to 10 ms: the bound allows for the rounding.)
    assert!(
        fps >= frames / (frame_s + 0.006),
        "fps over the frames' own time: {fps_line}"
    );
    // 90 frames paced at 60 Hz take about 1.5 s, plus the half second paused: the wall
    // time says so, the pause counts as paused, and the parts add up.
    assert!(wall >= 1.8, "{wall_line}");
    assert!(waited >= 0.45, "the pause: {wall_line}");
    assert!(paced >= 0.5, "the pacing: {wall_line}");
    assert!(own < wall, "{wall_line}");
    let parts = own + paced + waited;
    assert!(
        parts <= wall + 0.02 && parts >= wall * 0.8,
        "the parts add up to the wall time: {wall_line}"
    );
    // And the frames per second are the game's, not the pace's (~50 here).
    assert!(fps > 90.0 / wall * 1.5, "{fps_line}\n{wall_line}");
}

#[test]
fn the_arena_on_a_non_loopback_address_prints_a_url_with_its_token() {
    let mut arena = Arena::start(&[
        "--entities",
        "40",
        "--frames",
        "30",
        "--workers",
        "1",
        "--inspect",
        "0.0.0.0:0",
        "--inspect-ring",
        "0",
        "--inspect-host",
        "arena.example",
    ]);
    let mut lines = BufReader::new(arena.0.stdout.take().unwrap()).lines();
    let first = lines.next().expect("a first line").unwrap();
    let url = first
        .strip_prefix("arena: inspector at http://")
        .unwrap_or_else(|| panic!("the URL comes first: {first}"));
    let (host, token) = url
        .split_once("/?token=")
        .unwrap_or_else(|| panic!("the URL carries the token: {first}"));
    assert!(!host.starts_with("0.0.0.0"), "a usable address: {first}");
    assert_eq!(token.len(), 64, "{first}");
    let port = host.rsplit_once(':').unwrap().1;
    let local = format!("127.0.0.1:{port}");

    let (code, body) = request(&local, "GET", "/api/status", "");
    assert_eq!(code, 401, "no token: {body}");
    let auth = format!("Authorization: Bearer {token}\r\n");
    let (code, body) = request(&local, "GET", "/api/status", &auth);
    assert_eq!(code, 200, "the token: {body}");
    // The allowed name is accepted as Host, another is not.
    let mut s = TcpStream::connect(&local).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    write!(
        s,
        "GET /api/status HTTP/1.1\r\nHost: arena.example:{port}\r\n{auth}\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    s.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    let mut s = TcpStream::connect(&local).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    write!(
        s,
        "GET /api/status HTTP/1.1\r\nHost: evil.example\r\n{auth}\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    s.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 403"), "{answer}");

    let rest: Vec<String> = lines.map(Result::unwrap).collect();
    let (ok, err) = arena.finish(Duration::from_secs(120));
    assert!(ok, "{rest:?}\n{err}");
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
