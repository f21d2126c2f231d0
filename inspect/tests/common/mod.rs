//! A small game on a thread of its own with the inspector attached, and a plain HTTP client
//! (std only) to talk to it as the page does.

#![allow(dead_code, unreachable_pub)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use runsync::prelude::*;
use runsync_inspect::{Inspector, InspectorBuilder};
use serde_json::Value;

/// Position: systems emit moves, summed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Pos(pub f32);
impl Component for Pos {
    type Output = f32;
}
impl Checksum for Pos {
    fn checksum(&self, h: &mut Checksummer) {
        self.0.checksum(h)
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Vel(pub f32);
impl Component for Vel {
    type Output = Vel;
}
impl Checksum for Vel {
    fn checksum(&self, h: &mut Checksummer) {
        self.0.checksum(h)
    }
}

/// Hit points: systems emit deltas; at 0 the entity is despawned and another spawned.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Hp(pub i32);
impl Component for Hp {
    type Output = i32;
}
impl Checksum for Hp {
    fn checksum(&self, h: &mut Checksummer) {
        self.0.checksum(h)
    }
}

/// The world: 60 movers (`Pos`, `Vel`, `Hp`) and 20 markers (`Pos` only).
pub fn world() -> World {
    let mut w = World::new();
    w.register::<Pos>(|p: &mut Pos, d: &[f32]| p.0 += d.iter().sum::<f32>());
    w.register::<Vel>(merge::last);
    w.register::<Hp>(|h: &mut Hp, d: &[i32]| h.0 += d.iter().sum::<i32>());
    w.snapshotting::<Pos>()
        .snapshotting::<Vel>()
        .snapshotting::<Hp>();
    w.checksumming::<Pos>()
        .checksumming::<Vel>()
        .checksumming::<Hp>();
    w.debugging::<Pos>().debugging::<Vel>().debugging::<Hp>();
    for i in 0..60 {
        w.spawn((Pos(i as f32), Vel(0.25 + i as f32 * 0.01), Hp(5 + i % 13)));
    }
    for i in 0..20 {
        w.spawn((Pos(-(i as f32)),));
    }
    w
}

/// The systems: `move` (Pos += Vel), `wind` (Pos += 0.5 for movers), `decay` (Hp -1;
/// despawn at 0 and spawn a fresh mover).
pub fn runtime(workers: usize) -> Runtime {
    let mut rt = Runtime::builder().workers(workers).build(world());
    rt.add_system_named("move", |w: &World, out: &mut Output| {
        for (e, (v,)) in w.query::<(&Vel,)>() {
            out.write::<Pos>(e, v.0);
        }
    });
    rt.add_system_named("wind", |w: &World, out: &mut Output| {
        for (e, (_, ())) in w.query::<(&Pos, With<Hp>)>() {
            out.write::<Pos>(e, 0.5);
        }
    });
    rt.add_system_named("decay", |w: &World, out: &mut Output| {
        for (e, (h, p)) in w.query::<(&Hp, &Pos)>() {
            if h.0 <= 1 {
                out.despawn(e);
                out.spawn((Pos(p.0 * 0.5), Vel(0.1), Hp(9)));
            } else {
                out.write::<Hp>(e, -1);
            }
        }
    });
    rt
}

/// The game on its own thread: a frame, then 1 ms of "rendering", until dropped.
pub struct Game {
    /// Where to connect: the address bound (loopback for an unspecified bind).
    pub addr: SocketAddr,
    /// [`Inspector::url`].
    pub url: String,
    /// [`Inspector::token`].
    pub token: Option<String>,
    /// Frames the game loop has run (counted outside the inspector).
    pub frames: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Game {
    pub fn start(workers: usize, builder: InspectorBuilder) -> Game {
        Game::start_with(workers, builder, |_| {})
    }

    /// [`start`](Self::start), with `setup` run on the runtime first (to add systems).
    pub fn start_with(
        workers: usize,
        builder: InspectorBuilder,
        setup: impl FnOnce(&mut Runtime) + Send + 'static,
    ) -> Game {
        Game::start_at("127.0.0.1:0", workers, builder, setup)
    }

    /// [`start_with`](Self::start_with), the inspector bound to `bind`.
    pub fn start_at(
        bind: &'static str,
        workers: usize,
        builder: InspectorBuilder,
        setup: impl FnOnce(&mut Runtime) + Send + 'static,
    ) -> Game {
        Game::start_looping(bind, workers, builder, setup, |inspector, rt, _| {
            inspector.frame(rt)
        })
    }

    /// [`start_at`](Self::start_at), with `frame(inspector, runtime, iteration)` run by each
    /// iteration of the game loop instead of `inspector.frame(runtime)` (`iteration`
    /// counts the loop's iterations from 0: the game's own clock).
    pub fn start_looping(
        bind: &'static str,
        workers: usize,
        builder: InspectorBuilder,
        setup: impl FnOnce(&mut Runtime) + Send + 'static,
        mut frame: impl FnMut(&mut Inspector, &mut Runtime, u64) -> Result<(), FrameError>
        + Send
        + 'static,
    ) -> Game {
        let frames = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (tx, rx) = std::sync::mpsc::channel();
        let thread = {
            let (frames, stop) = (frames.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut rt = runtime(workers);
                setup(&mut rt);
                let mut inspector: Inspector = builder.bind(bind).expect("binds");
                tx.send((
                    inspector.addr(),
                    inspector.url(),
                    inspector.token().map(str::to_owned),
                ))
                .unwrap();
                let mut iteration = 0;
                while !stop.load(Ordering::SeqCst) {
                    frame(&mut inspector, &mut rt, iteration)
                        .expect("the test game's frames succeed");
                    iteration += 1;
                    frames.fetch_add(1, Ordering::SeqCst);
                    std::thread::sleep(Duration::from_millis(1));
                }
            })
        };
        let (mut addr, url, token) = rx.recv().expect("the game thread started");
        if addr.ip().is_unspecified() {
            addr.set_ip(std::net::Ipv4Addr::LOCALHOST.into());
        }
        Game {
            addr,
            url,
            token,
            frames,
            stop,
            thread: Some(thread),
        }
    }

    pub fn frames(&self) -> u64 {
        self.frames.load(Ordering::SeqCst)
    }

    /// `Authorization: Bearer TOKEN\r\n` if the inspector has a token, else nothing.
    pub fn auth(&self) -> String {
        self.token
            .as_ref()
            .map_or(String::new(), |t| format!("Authorization: Bearer {t}\r\n"))
    }

    /// A GET, with the token if there is one.
    pub fn get(&self, path: &str) -> (u16, Value) {
        request(self.addr, "GET", path, None, &self.auth())
    }

    /// A POST, with the token if there is one.
    pub fn post(&self, path: &str, body: Option<&str>) -> (u16, Value) {
        request(self.addr, "POST", path, body, &self.auth())
    }

    /// `GET /api/status`, which must succeed.
    pub fn status(&self) -> Value {
        let (code, v) = self.get("/api/status");
        assert_eq!(code, 200, "{v}");
        v
    }

    /// A POST that must succeed.
    pub fn ok(&self, path: &str, body: Option<&str>) -> Value {
        let (code, v) = self.post(path, body);
        assert_eq!(code, 200, "POST {path}: {v}");
        v
    }
}

impl Drop for Game {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // A paused game blocks in `frame`: let it run to see the flag. A running game may
        // see the flag first and close the server under this request: ignore its errors.
        if let Ok(mut s) = TcpStream::connect(self.addr) {
            let _ = s.set_read_timeout(Some(Duration::from_secs(20)));
            let raw = format!(
                "POST /api/resume HTTP/1.1\r\nHost: {}\r\n{}Content-Length: 0\r\n\r\n",
                self.addr,
                self.auth()
            );
            if s.write_all(raw.as_bytes()).is_ok() {
                let _ = s.read_to_end(&mut Vec::new());
            }
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// One request, with the `extra` header lines (each ending in `\r\n`); the status and the
/// body as JSON (or as a JSON string if it is not JSON).
pub fn request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    body: Option<&str>,
    extra: &str,
) -> (u16, Value) {
    let body = body.unwrap_or("");
    let raw = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\n{extra}Content-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let (code, body) = raw_request(addr, raw.as_bytes());
    let value = serde_json::from_str(&body).unwrap_or(Value::String(body));
    (code, value)
}

/// Sends bytes as they are; returns the status and the body.
pub fn raw_request(addr: SocketAddr, raw: &[u8]) -> (u16, String) {
    let mut s = TcpStream::connect(addr).expect("connects");
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    s.write_all(raw).expect("sends");
    read_response(&mut s)
}

pub fn read_response(s: &mut TcpStream) -> (u16, String) {
    let mut out = Vec::new();
    let read = s.read_to_end(&mut out);
    let text = String::from_utf8_lossy(&out).into_owned();
    let code = text
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("no HTTP status in {text:?} (read: {read:?})"));
    let body = text
        .split_once("\r\n\r\n")
        .map_or(String::new(), |(_, b)| b.to_owned());
    (code, body)
}
