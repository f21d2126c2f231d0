//! A way in for the fuzz target `request` (`fuzz/fuzz_targets/request.rs`) and for the
//! tests that replay its finds: one raw request, parsed, checked and routed exactly as the
//! server does it, and what reaches the game answered on the caller's runtime exactly as
//! the game thread does — with no socket, no thread and no clock. Not a public API: its
//! shape follows the fuzz target's needs.

use std::sync::mpsc::{self, TryRecvError};

use runsync::{FrameError, Runtime};

use crate::access::Access;
use crate::api::{self, MAX_STEP, Route};
use crate::game::{Call, GameSide};
use crate::http::{self, Limits, Response};

/// The token of the non-loopback policy ([`Harness::request`] with `remote`).
pub const TOKEN: &str = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
/// A name the non-loopback policy allows in `Host` (besides this machine's own).
pub const ALLOWED_HOST: &str = "inspector.example";

/// The server's checks and the game thread's side, for requests given as bytes.
pub struct Harness {
    game: GameSide,
    loopback: Access,
    remote: Access,
    limits: Limits,
}

impl Harness {
    /// With a snapshot ring of `ring` frames and a timeline of `timeline` records, running
    /// (not paused), with the server's default limits.
    pub fn new(ring: usize, timeline: usize) -> Harness {
        Harness {
            game: GameSide::new(ring, timeline.max(1), false),
            loopback: Access::loopback(),
            remote: Access::remote(TOKEN.to_owned(), [ALLOWED_HOST.to_owned()]),
            limits: Limits::default(),
        }
    }

    /// Runs one frame through the inspector (ring, timeline), paused or not.
    ///
    /// # Errors
    /// The frame's [`FrameError`].
    pub fn frame(&mut self, rt: &mut Runtime) -> Result<(), FrameError> {
        self.game.frame(rt, None)
    }

    /// Answers `raw` as a server bound to loopback (`remote` false) or to a non-loopback
    /// address (`remote`: token [`TOKEN`], `Host` [`ALLOWED_HOST`] or this machine) would,
    /// running on `rt` the frames a `step` asks for. Returns the status and the body. A
    /// head or body not whole is answered `408`, as the server answers it at its deadline.
    ///
    /// # Panics
    /// If a command that reached the game is left unanswered with no step to run (a
    /// client would wait for it until its timeout): a bug.
    pub fn request(&mut self, rt: &mut Runtime, raw: &[u8], remote: bool) -> (u16, Vec<u8>) {
        let response = self.answer(rt, raw, remote);
        (response.status, response.body.into_owned())
    }

    fn answer(&mut self, rt: &mut Runtime, raw: &[u8], remote: bool) -> Response {
        let access = if remote { &self.remote } else { &self.loopback };
        let late = || Response::error(408, "the request did not arrive in time");
        let head_len = match http::head_len(raw, self.limits) {
            Ok(Some(n)) => n,
            Ok(None) => return late(),
            Err(r) => return r,
        };
        let head = match http::parse_head(&raw[..head_len], access) {
            Ok(h) => h,
            Err(r) => return r,
        };
        let want = match http::body_len(&head, self.limits) {
            Ok(n) => n,
            Err(r) => return r,
        };
        let Some(body) = raw[head_len..].get(..want) else {
            return late();
        };
        let request = head.with_body(body.to_vec());
        let command = match api::route(&request, access) {
            Ok(Route::Page) => return crate::page(),
            Ok(Route::Game(command)) => command,
            Err(r) => return r,
        };
        let (reply, answer) = mpsc::sync_channel(1);
        self.game.handle(rt, Call { command, reply });
        // A step answers once its frames have run: run them as `Inspector::frame` would.
        for _ in 0..=MAX_STEP {
            match answer.try_recv() {
                Ok(r) => return r,
                Err(TryRecvError::Disconnected) => break,
                Err(TryRecvError::Empty) if self.game.may_run() => {
                    let _ = self.game.frame(rt, None);
                }
                Err(TryRecvError::Empty) => break,
            }
        }
        panic!("a request reached the game and was never answered")
    }
}

/// Where a template of [`decode`] puts the fuzzer's bytes: (method, path before them,
/// after them, whether they are the body instead).
pub const TEMPLATES: &[(&str, &str, &str, bool)] = &[
    ("GET", "/api/timeline?since=", "", false),
    ("GET", "/api/timeline?", "", false),
    ("GET", "/api/entities?offset=", "&limit=3", false),
    ("GET", "/api/entities?limit=", "", false),
    ("GET", "/api/entities?with=", "", false),
    ("GET", "/api/entities?", "", false),
    ("GET", "/api/entities/", "", false),
    ("POST", "/api/entities/", "/watch", false),
    ("POST", "/api/entities/", "/unwatch", false),
    ("POST", "/api/entities/", "/explain", false),
    ("GET", "/api/status", "", false),
    ("POST", "/api/step", "", true),
    ("POST", "/api/rewind", "", true),
    ("POST", "/api/pause", "", true),
    ("POST", "/api/resume", "", true),
    ("GET", "/", "", false),
];

/// Reads a fuzz input: the request's bytes, and whether to answer it as a non-loopback
/// inspector (`None` for an empty input). By the first byte: bit 0, the policy (1:
/// non-loopback, token [`TOKEN`]); bit 1, the rest is the request as is (0), or (1) the
/// next byte picks a template of a well-formed request ([`TEMPLATES`]: an endpoint, and
/// where the rest goes — a query value, an entity id, a JSON body), bit 2 sending the token
/// with it.
pub fn decode(data: &[u8]) -> Option<(Vec<u8>, bool)> {
    let (&flags, rest) = data.split_first()?;
    let remote = flags & 1 == 1;
    if flags & 2 == 0 {
        return Some((rest.to_vec(), remote));
    }
    let Some((&pick, payload)) = rest.split_first() else {
        return Some((Vec::new(), remote));
    };
    let (method, before, after, body) = TEMPLATES[usize::from(pick) % TEMPLATES.len()];
    let mut raw = Vec::new();
    raw.extend_from_slice(method.as_bytes());
    raw.push(b' ');
    raw.extend_from_slice(before.as_bytes());
    if !body {
        raw.extend_from_slice(payload);
    }
    raw.extend_from_slice(after.as_bytes());
    raw.extend_from_slice(b" HTTP/1.1\r\nHost: ");
    raw.extend_from_slice(if remote {
        ALLOWED_HOST.as_bytes()
    } else {
        b"127.0.0.1:7304"
    });
    raw.extend_from_slice(b"\r\n");
    if flags & 4 != 0 {
        raw.extend_from_slice(format!("Authorization: Bearer {TOKEN}\r\n").as_bytes());
    }
    let body = if body { payload } else { &[][..] };
    raw.extend_from_slice(format!("Content-Length: {}\r\n\r\n", body.len()).as_bytes());
    raw.extend_from_slice(body);
    Some((raw, remote))
}
