//! Bound to a non-loopback address, the inspector needs its token on every API request
//! (and prints a URL that carries it), still refuses foreign `Host`s and `Origin`s, and
//! serves the page without a token; bound to loopback it works as before, with or without
//! one.

mod common;

use std::net::SocketAddr;

use common::{Game, raw_request};
use runsync_inspect::Inspector;

fn get(addr: SocketAddr, host: &str, path: &str, extra: &str) -> (u16, String) {
    let raw = format!("GET {path} HTTP/1.1\r\nHost: {host}\r\n{extra}\r\n");
    raw_request(addr, raw.as_bytes())
}

fn post(addr: SocketAddr, host: &str, path: &str, extra: &str) -> (u16, String) {
    let raw = format!("POST {path} HTTP/1.1\r\nHost: {host}\r\n{extra}Content-Length: 0\r\n\r\n");
    raw_request(addr, raw.as_bytes())
}

fn bearer(token: &str) -> String {
    format!("Authorization: Bearer {token}\r\n")
}

#[test]
fn a_non_loopback_bind_needs_its_token_on_every_api_request() {
    let game = Game::start_at(
        "0.0.0.0:0",
        1,
        Inspector::builder().ring(4).paused(true),
        |_| {},
    );
    let addr = game.addr;
    let host = addr.to_string();
    let token = game.token.clone().expect("a non-loopback bind has a token");
    assert_eq!(token.len(), 64, "{token}");
    assert!(token.bytes().all(|b| b.is_ascii_hexdigit()), "{token}");

    // The URL is usable: a real host (not 0.0.0.0), the port, the token.
    let rest = game.url.strip_prefix("http://").expect(&game.url);
    let (url_host, query) = rest.split_once('/').expect(&game.url);
    assert_eq!(query, format!("?token={token}"), "{}", game.url);
    assert!(
        url_host.ends_with(&format!(":{}", addr.port())),
        "{}",
        game.url
    );
    assert!(
        !url_host.starts_with("0.0.0.0") && !url_host.starts_with("[::]"),
        "{}",
        game.url
    );

    let mut wrong = token.clone().into_bytes();
    wrong[10] = if wrong[10] == b'0' { b'1' } else { b'0' };
    let wrong = String::from_utf8(wrong).unwrap();
    let refused = [
        ("no token", String::new()),
        ("a wrong token", bearer(&wrong)),
        ("the token cut short", bearer(&token[..63])),
        ("the token and more", bearer(&format!("{token}0"))),
        (
            "another scheme",
            format!("Authorization: Basic {token}\r\n"),
        ),
        ("no scheme", format!("Authorization: {token}\r\n")),
    ];
    for (what, auth) in &refused {
        for path in [
            "/api/status",
            "/api/timeline",
            "/api/entities",
            "/api/entities/0v1",
            "/api/nope",
        ] {
            let (code, body) = get(addr, &host, path, auth);
            assert_eq!(code, 401, "{what}, GET {path}: {body}");
            assert!(body.contains("token"), "{what}: {body}");
        }
        for path in [
            "/api/pause",
            "/api/resume",
            "/api/step",
            "/api/rewind",
            "/api/entities/0v1/watch",
            "/api/entities/0v1/explain",
        ] {
            let (code, body) = post(addr, &host, path, auth);
            assert_eq!(code, 401, "{what}, POST {path}: {body}");
        }
    }
    // Nothing of that reached the game: still paused at frame 0, never stepped.
    let right = bearer(&token);
    let (code, body) = get(addr, &host, "/api/status", &right);
    assert_eq!(code, 200, "{body}");
    let s: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        (s["frame"].as_u64(), s["paused"].as_bool()),
        (Some(0), Some(true))
    );
    let (code, body) = post(addr, &host, "/api/step", &right);
    assert_eq!(code, 200, "{body}");
    assert_eq!(game.status()["frame"], 1, "the right token steps the game");

    // The page needs no token (it holds no secret; it reads the token from its URL).
    let (code, page) = get(addr, &host, "/?token=whatever", "");
    assert_eq!(code, 200);
    assert!(page.contains("Bearer"), "the page sends the token");
}

#[test]
fn a_non_loopback_bind_still_checks_host_and_origin() {
    let game = Game::start_at(
        "0.0.0.0:0",
        1,
        Inspector::builder().allow_host("Game-Box.example"),
        |_| {},
    );
    let addr = game.addr;
    let right = bearer(game.token.as_deref().unwrap());
    let url_host = game.url["http://".len()..]
        .split('/')
        .next()
        .unwrap()
        .to_owned();
    let port = addr.port();
    for host in [
        format!("127.0.0.1:{port}"),
        format!("localhost:{port}"),
        "game-box.example".to_owned(),
        format!("GAME-BOX.example:{port}"),
        url_host.clone(), // the printed URL's host: this machine's address (or name)
    ] {
        let (code, body) = get(addr, &host, "/api/status", &right);
        assert_eq!(code, 200, "Host {host}: {body}");
    }
    for host in [
        "evil.example".to_owned(),
        format!("evil.example:{port}"),
        format!("game-box.example.evil.example:{port}"),
        format!("0.0.0.0:{port}"),
        "192.0.2.1".to_owned(), // documentation range: no interface has it
        "localhost:80:80".to_owned(),
    ] {
        let (code, body) = get(addr, &host, "/api/status", &right);
        assert_eq!(code, 403, "Host {host}: {body}");
        let (code, _) = get(addr, &host, "/", "");
        assert_eq!(code, 403, "Host {host}, the page");
    }
    let (code, body) = post(
        addr,
        &url_host,
        "/api/pause",
        &format!("{right}Origin: http://evil.example\r\n"),
    );
    assert_eq!(code, 403, "cross-origin: {body}");
    let (code, body) = post(
        addr,
        &url_host,
        "/api/pause",
        &format!("{right}Origin: http://{url_host}\r\n"),
    );
    assert_eq!(code, 200, "same origin: {body}");
    let (code, _) = post(addr, &url_host, "/api/resume", &right);
    assert_eq!(code, 200);
}

#[test]
fn a_loopback_bind_needs_no_token_and_accepts_one() {
    let game = Game::start(1, Inspector::builder());
    assert_eq!(game.token, None);
    assert_eq!(game.url, format!("http://{}/", game.addr));
    let host = game.addr.to_string();
    let (code, body) = get(game.addr, &host, "/api/status", "");
    assert_eq!(code, 200, "{body}");
    let (code, body) = get(game.addr, &host, "/api/status", &bearer("anything"));
    assert_eq!(code, 200, "{body}");
    // Still loopback names only.
    let (code, _) = get(game.addr, "game-box.example", "/api/status", "");
    assert_eq!(code, 403);
}
