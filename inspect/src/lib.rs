//! A live inspector for [runsync] games: a web page served from inside the running game
//! that shows the frame timeline (Run, Sync and every system's time), pauses, steps and
//! resumes the game, **rewinds** it to any of the last N frames and re-simulates forward
//! (checking every re-simulated frame is bit-identical to the first run), browses the
//! entities (components as `Debug` text, filtered by type) and, for a selected entity,
//! shows who wrote what in its last frame ([write provenance](runsync::Runtime::watch)).
//!
//! The page talks to a small HTTP/JSON API, [documented below](#the-http-api), in the
//! spirit of [flecs's REST API](https://www.flecs.dev/flecs/md_docs_2FlecsRemoteApi.html)
//! (entities, components, per-system statistics) and [bevy's remote
//! protocol](https://docs.rs/bevy/latest/bevy/remote/index.html) (`bevy/list`,
//! `bevy/query`, `bevy/get`). Unlike either, it can stop the present and go back: runsync
//! frames are deterministic, so a snapshot ring and a re-run reproduce the past exactly.
//!
//! # In the game loop
//!
//! ```no_run
//! use runsync::prelude::*;
//! use runsync_inspect::Inspector;
//!
//! # fn build() -> Runtime { Runtime::builder().build(World::new()) }
//! let mut rt: Runtime = build();
//! let mut inspector = Inspector::builder()
//!     .ring(120)                     // rewind up to 120 frames (opt-in: see its cost)
//!     .bind("127.0.0.1:0")?;         // loopback only; port 0: any free port
//! println!("inspector: {}", inspector.url());
//! loop {
//!     inspector.frame(&mut rt)?;     // serves requests, then runs one frame
//!     // render(rt.world()) ...
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The server runs on background threads; requests that need the game (everything under
//! `/api`) are handed to the game thread through a bounded channel and answered between
//! frames, by [`Inspector::frame`] or [`Inspector::poll`] — at most
//! [`requests_per_frame`](InspectorBuilder::requests_per_frame) per frame while the game
//! runs. While the inspector is paused, `frame` blocks, answering requests (step, resume,
//! rewind, entity views) until it may run a frame; a loop that must keep rendering while
//! paused calls [`poll`](Inspector::poll) instead, which never blocks. Frames must run
//! through the inspector to appear on its timeline and in its ring.
//!
//! Opt the game's types in so the inspector can show and rewind them:
//! [`World::debugging`](runsync::World::debugging) for `Debug` text in the entity view and
//! provenance, [`World::snapshotting`](runsync::World::snapshotting) (and
//! `snapshotting_resource`) for the ring, and
//! [`World::checksumming`](runsync::World::checksumming) so the re-simulation check covers
//! the values (without it, it covers entities and types only). Systems' own fields are not
//! in a snapshot: a system that keeps game state in `self` re-simulates differently, and the
//! inspector says so at the first frame that differs.
//!
//! # What it costs
//!
//! With no client connected, [`frame`](Inspector::frame) adds an empty-channel check and
//! one timeline record (a few stores, no allocation) to [`Runtime::try_frame`]: about 500
//! instructions, 0.3 % of a 10k-entity movement frame (callgrind, `examples/idle_cost.rs`;
//! the criterion group `inspector_idle` in `runsync-benches` times it against a bare
//! frame; the README's "The inspector" has the numbers). The snapshot ring is opt-in
//! because it is not free: a [`Runtime::snapshot_into`] per frame (about a `memcpy` of the
//! snapshotted columns) and N snapshots of memory; the recorded states' checksums are
//! computed only at a rewind (restoring each, so a rewind over N frames costs N restores
//! and checksums). A client costs what it asks for, on the game thread between frames: an
//! entity page scans the entity list; `explain` re-runs a frame.
//!
//! # Robustness
//!
//! The server binds where it is told; bind a loopback address (`127.0.0.1`), as the
//! examples do: the API can pause and rewind the game. Bound to loopback it refuses
//! requests whose `Host` is not a loopback name (DNS rebinding) and, always, cross-origin
//! requests (an `Origin` header naming another site). A malformed or hostile request gets
//! a 4xx and never reaches the game thread: heads are at most 8 KiB, bodies at most 64 KiB
//! ([`max_body`](InspectorBuilder::max_body)), a request must arrive whole within 5 s
//! ([`io_timeout`](InspectorBuilder::io_timeout)), at most 8 connections are served at
//! once ([`max_connections`](InspectorBuilder::max_connections); more get `503`), at most
//! 32 requests wait for the game (more get `503`), and requests are validated (JSON, entity
//! ids, ranges) before they are queued. The frame never waits for a client: it only takes
//! what is already queued.
//!
//! # The HTTP API
//!
//! JSON in and out (`Content-Type: application/json`), one request per connection. Errors
//! are `{"error": "what is wrong and how to fix it", "status": 400}`: `400` a malformed
//! request (JSON, entity id, query parameter, range), `403` a foreign `Host` or `Origin`,
//! `404` an unknown path, a dead entity or a frame the ring does not hold, `405` the wrong
//! method, `408` a request not sent in time, `409` what the state forbids (the ring is off,
//! a step is running, 16 entities watched), `411` a chunked body, `413` a body too large,
//! `431` a head too large; `503` when the inspector or the game is busy (retry), `504` when
//! the game does not call the inspector. Entity ids are
//! written `{index}v{generation}`, as `Entity`'s `Debug` (`"12v1"`). Checksums are hex
//! strings (`"0x…"`: JSON numbers lose bits past 2^53). Frames are numbered from 1, as
//! [`FrameStats::frame`](runsync::FrameStats::frame) numbers them: frame `k` starts from
//! the state with `k - 1` frames completed and leaves the state with `k`. "Frame `k`" in a
//! rewind means the state with `k` frames completed (the state frame `k` left).
//!
//! | method and path | body | answer |
//! |---|---|---|
//! | `GET /` | | the page (HTML, self-contained: no external scripts) |
//! | `GET /api/status` | | [status](#status) |
//! | `GET /api/timeline?since=SEQ` | | [timeline records](#timeline) after `SEQ` (all held without it) |
//! | `POST /api/pause` | none | status, paused: `frame` now blocks between frames |
//! | `POST /api/resume` | none | status, running |
//! | `POST /api/step` | `{"frames": n}` (1 to 600; none = 1) | status after the `n` frames ran (paused); answered when they have |
//! | `POST /api/rewind` | `{"frame": k}` or `{"back": n}` | status at the restored frame (paused); `404` if the ring does not hold it, `409` if the ring is off |
//! | `GET /api/entities?with=A,B&offset=0&limit=100` | | [a page of entities](#entities) having all the listed types (full or short names), in storage order |
//! | `GET /api/entities/{id}` | | [one entity](#one-entity): each component's type and `Debug` text; its provenance if watched |
//! | `POST /api/entities/{id}/watch` | none | records its provenance from the next frame (at most 16 watched) |
//! | `POST /api/entities/{id}/unwatch` | none | stops that |
//! | `POST /api/entities/{id}/explain` | none | [its provenance in the last frame](#explain), by re-running that frame from the ring with the entity watched |
//!
//! ## Status
//!
//! ```json
//! {"frame": 812, "paused": true, "stepping": 0, "workers": 2, "entities": 2210,
//!  "checksum": "0x5d0c…", "systems": ["BuildGrid", "Spawner", …],
//!  "components": [{"id": 0, "name": "runsync_systems::Position", "short": "Position"}, …],
//!  "ring": {"capacity": 120, "oldest": 693, "newest": 812, "error": null},
//!  "resim": {"checked": 10, "differed_at": null},
//!  "watched": ["17v1"], "timeline_seq": 830}
//! ```
//!
//! `frame` is the number of frames completed (the number of the last frame run). `checksum` (of the
//! world, [`World::checksum`](runsync::World::checksum)) is given while paused, else
//! `null`. `ring.error` says why the ring stopped, if it did (a type not opted into
//! snapshots). `resim` counts the re-simulated frames since the last rewind that were
//! compared with the first run, and the number of the first that differed.
//!
//! ## Timeline
//!
//! ```json
//! {"systems": ["BuildGrid", …], "records": [{"seq": 830, "frame": 812, "run_ns": 812345,
//!  "sync_ns": 70211, "systems_ns": [120331, …], "merged": 5120, "dropped": 0,
//!  "entities": 2210, "error": null, "resim": true, "explain": false}, …]}
//! ```
//!
//! One record per frame the inspector ran (the last 600 by default): `frame` is its number,
//! `seq` increases also across rewinds (where `frame` goes back). `resim` is `true`/`false` for a frame run
//! again after a rewind (whether it reproduced the recorded state), else `null`;
//! `explain` marks a frame re-run for `explain`.
//!
//! ## Entities
//!
//! ```json
//! {"total": 2010, "offset": 0, "limit": 100,
//!  "entities": [{"id": "0v1", "components": [0, 1, 3, 4, 5]}, …]}
//! ```
//!
//! `components` are ids into the status's `components`. `total` counts every match.
//!
//! ## One entity
//!
//! ```json
//! {"id": "17v1", "watched": true,
//!  "components": [{"id": 0, "name": "runsync_systems::Position", "short": "Position",
//!                  "value": "Position(Vec2(31.5, 8.25))"}, …],
//!  "provenance": null}
//! ```
//!
//! `value` is `null` for a type not opted in with `debugging`. `provenance` is
//! [as below](#explain) if the entity is watched and a frame has run since.
//!
//! ## Explain
//!
//! ```json
//! {"frame": 812, "resim": true, "error": null,
//!  "provenance": {"entity": "17v1", "frame": 812,
//!    "components": [{"id": 3, "name": "runsync_systems::Health", "short": "Health",
//!      "before": "Health { hp: 60, max: 60 }", "after": "Health { hp: 40, max: 60 }",
//!      "writes": [{"system": 7, "system_name": "Contact", "index": 0, "value": "-20"}]}],
//!    "commands": [{"system": 9, "system_name": "Death", "kind": "despawn", "component": null}],
//!    "text": "entity 17v1, frame 812:\n  …"}}
//! ```
//!
//! Needs the ring to hold the state before the last frame (`409` otherwise, saying why).
//! `resim` says whether the re-run reproduced the frame (it must, for the provenance to be
//! that frame's).

mod api;
mod http;
mod ring;
mod timeline;

use std::borrow::Cow;
use std::fmt;
use std::io;
use std::net::{SocketAddr, TcpListener, ToSocketAddrs};
use std::sync::Arc;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::time::Duration;

use runsync::{CommandKind, Entity, FrameError, Provenance, Runtime, RuntimeSnapshot};
use serde::Serialize;

use crate::api::{Command, RewindTo, Route, short_name};
use crate::http::{Limits, Request, Response, Server};
use crate::ring::Ring;
use crate::timeline::Timeline;

/// The page, one self-contained file.
const PAGE: &str = include_str!("page.html");

/// Most entities the inspector watches at once.
pub const MAX_WATCHED: usize = 16;

/// One request for the game thread, with where to send the answer.
struct Call {
    command: Command,
    reply: SyncSender<Response>,
}

/// What [`Inspector::poll`] did.
#[derive(Debug)]
#[must_use]
pub enum Poll {
    /// It ran a frame (with [`Runtime::try_frame`]'s result).
    Ran(Result<(), FrameError>),
    /// The inspector is paused: no frame ran. Call again (next display frame).
    Paused,
}

/// Settings of an [`Inspector`]; from [`Inspector::builder`].
#[derive(Clone, Debug)]
pub struct InspectorBuilder {
    ring: usize,
    timeline: usize,
    limits: Limits,
    reply_timeout: Duration,
    queue: usize,
    per_frame: usize,
    paused: bool,
}

impl InspectorBuilder {
    /// Keeps a snapshot of the state before each of the last `frames` frames, to rewind
    /// to (`0`, the default: no ring, no rewind or `explain`). Costs a
    /// [`Runtime::snapshot_into`] per frame and `frames` snapshots of memory (a rewind
    /// then restores and checksums each later state once, to check the re-simulation
    /// against); every component type (and every resource systems write) must be opted in
    /// with
    /// [`World::snapshotting`](runsync::World::snapshotting), or the ring stops at the first
    /// frame and the status says why.
    pub fn ring(mut self, frames: usize) -> Self {
        self.ring = frames;
        self
    }

    /// How many frames the timeline keeps (default 600; at least 1).
    pub fn timeline(mut self, frames: usize) -> Self {
        self.timeline = frames.max(1);
        self
    }

    /// Largest request body accepted, in bytes (default 64 KiB); larger ones get `413`.
    pub fn max_body(mut self, bytes: usize) -> Self {
        self.limits.max_body = bytes;
        self
    }

    /// How long a client has to send a whole request (default 5 s); slower ones get
    /// `408`. Also the limit on writing an answer.
    pub fn io_timeout(mut self, timeout: Duration) -> Self {
        self.limits.io_timeout = timeout;
        self
    }

    /// Most connections served at once (default 8); more are answered `503` and closed.
    pub fn max_connections(mut self, n: usize) -> Self {
        self.limits.max_connections = n.max(1);
        self
    }

    /// How long a request waits for the game thread to answer (default 30 s); then `504`.
    pub fn reply_timeout(mut self, timeout: Duration) -> Self {
        self.reply_timeout = timeout;
        self
    }

    /// Most requests answered per frame while the game runs (default 8); the rest wait
    /// for the next frame (at most 32 wait; more get `503`). While paused, every request
    /// is answered as it comes.
    pub fn requests_per_frame(mut self, n: usize) -> Self {
        self.per_frame = n.max(1);
        self
    }

    /// Starts paused: the first [`Inspector::frame`] waits for a step or resume.
    pub fn paused(mut self, paused: bool) -> Self {
        self.paused = paused;
        self
    }

    /// Binds `addr` and starts serving. Bind a loopback address (`"127.0.0.1:0"`: any
    /// free port; [`Inspector::url`] says which).
    ///
    /// # Errors
    /// If the address cannot be bound (in use, not local), or the server thread cannot
    /// start.
    pub fn bind(self, addr: impl ToSocketAddrs) -> io::Result<Inspector> {
        let listener = TcpListener::bind(addr)?;
        let (tx, rx) = mpsc::sync_channel::<Call>(self.queue);
        let reply_timeout = self.reply_timeout;
        let handler = move |req: Request| -> Response {
            match api::route(&req) {
                Ok(Route::Page) => Response {
                    status: 200,
                    content_type: "text/html; charset=utf-8",
                    body: Cow::Borrowed(PAGE.as_bytes()),
                },
                Ok(Route::Game(command)) => forward(&tx, command, reply_timeout),
                Err(response) => response,
            }
        };
        let server = Server::start(listener, self.limits, Arc::new(handler))?;
        Ok(Inspector {
            server,
            calls: rx,
            paused: self.paused,
            step: None,
            ring: Ring::new(self.ring),
            timeline: Timeline::new(self.timeline),
            watched: Vec::new(),
            per_frame: self.per_frame,
            resim: ResimStatus::default(),
            scratch: RuntimeSnapshot::new(),
        })
    }
}

/// Hands a command to the game thread and waits for its answer (on a connection's thread).
fn forward(tx: &SyncSender<Call>, command: Command, timeout: Duration) -> Response {
    let (reply, answer) = mpsc::sync_channel(1);
    match tx.try_send(Call { command, reply }) {
        Ok(()) => {}
        Err(TrySendError::Full(_)) => {
            return Response::error(
                503,
                "the game has too many requests waiting (it answers a few per frame); retry",
            );
        }
        Err(TrySendError::Disconnected(_)) => {
            return Response::error(503, "the game has stopped serving the inspector");
        }
    }
    match answer.recv_timeout(timeout) {
        Ok(r) => r,
        Err(RecvTimeoutError::Timeout) => Response::error(
            504,
            format!(
                "the game did not answer within {timeout:?}: is its loop calling \
                 `Inspector::frame` or `Inspector::poll`?"
            ),
        ),
        Err(RecvTimeoutError::Disconnected) => {
            Response::error(503, "the game stopped serving the inspector")
        }
    }
}

/// A step in progress: frames left, and who waits for the answer.
struct PendingStep {
    left: u32,
    reply: SyncSender<Response>,
}

/// Re-simulated frames since the last rewind that were compared with the first run.
#[derive(Clone, Copy, Debug, Default, Serialize)]
struct ResimStatus {
    checked: u64,
    differed_at: Option<u64>,
}

/// The live inspector: an HTTP server on background threads, and the game-thread side
/// that answers it between frames. See the [crate docs](crate).
pub struct Inspector {
    server: Server,
    calls: Receiver<Call>,
    paused: bool,
    step: Option<PendingStep>,
    ring: Ring,
    timeline: Timeline,
    /// Entities the inspector watches (the game may watch others itself).
    watched: Vec<Entity>,
    per_frame: usize,
    resim: ResimStatus,
    /// The present during `explain`.
    scratch: RuntimeSnapshot,
}

impl fmt::Debug for Inspector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Inspector")
            .field("addr", &self.server.addr())
            .field("paused", &self.paused)
            .field("ring", &self.ring.capacity())
            .finish()
    }
}

impl Inspector {
    /// Settings, starting from the defaults: no ring, a 600-frame timeline, the limits
    /// of the [crate docs](crate#robustness).
    pub fn builder() -> InspectorBuilder {
        InspectorBuilder {
            ring: 0,
            timeline: 600,
            limits: Limits {
                max_head: 8 * 1024,
                max_body: 64 * 1024,
                io_timeout: Duration::from_secs(5),
                max_connections: 8,
            },
            reply_timeout: Duration::from_secs(30),
            queue: 32,
            per_frame: 8,
            paused: false,
        }
    }

    /// [`builder`](Self::builder)`().bind(addr)`: the defaults (no snapshot ring).
    ///
    /// # Errors
    /// As [`InspectorBuilder::bind`].
    pub fn bind(addr: impl ToSocketAddrs) -> io::Result<Inspector> {
        Inspector::builder().bind(addr)
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.server.addr()
    }

    /// The page's address, `http://127.0.0.1:PORT/`.
    pub fn url(&self) -> String {
        format!("http://{}/", self.addr())
    }

    /// Whether it is paused (by a client, [`pause`](Self::pause) or the builder).
    pub fn is_paused(&self) -> bool {
        self.paused
    }

    /// Pauses: [`frame`](Self::frame) then blocks until a client steps or resumes.
    pub fn pause(&mut self) {
        self.paused = true;
    }

    /// Resumes running frames.
    pub fn resume(&mut self) {
        self.paused = false;
    }

    /// Answers the requests waiting, then runs one frame — first blocking, while paused,
    /// to answer requests until a client steps or resumes. Returns the frame's result, as
    /// [`Runtime::try_frame`].
    ///
    /// # Errors
    /// The frame's [`FrameError`].
    pub fn frame(&mut self, rt: &mut Runtime) -> Result<(), FrameError> {
        self.serve_waiting(rt);
        while self.paused && self.step.is_none() {
            match self.calls.recv() {
                Ok(call) => self.handle(rt, call),
                // The server is gone: nobody can resume us.
                Err(_) => self.paused = false,
            }
        }
        self.run(rt, false).0
    }

    /// Answers the requests waiting, then runs one frame unless paused; never blocks.
    /// For loops that keep rendering while paused.
    pub fn poll(&mut self, rt: &mut Runtime) -> Poll {
        self.serve_waiting(rt);
        if self.paused && self.step.is_none() {
            return Poll::Paused;
        }
        Poll::Ran(self.run(rt, false).0)
    }

    fn serve_waiting(&mut self, rt: &mut Runtime) {
        for _ in 0..self.per_frame {
            match self.calls.try_recv() {
                Ok(call) => self.handle(rt, call),
                Err(_) => return,
            }
        }
    }

    /// Runs one frame: ring, frame, re-simulation check, timeline, step count. Returns the
    /// frame's result and, for a frame run again after a rewind, whether it reproduced
    /// the recorded state.
    fn run(&mut self, rt: &mut Runtime, explain: bool) -> (Result<(), FrameError>, Option<bool>) {
        self.ring.record(rt);
        let before = rt.frame_count();
        let result = rt.try_frame();
        // A frame that failed in Run did not happen (the world is as before).
        let resim = (rt.frame_count() != before)
            .then(|| self.ring.verify(rt))
            .flatten();
        if let Some(same) = resim {
            self.resim.checked += 1;
            if !same && self.resim.differed_at.is_none() {
                self.resim.differed_at = Some(before + 1); // the frame's number
            }
        }
        self.timeline.push(rt, &result, resim, explain);
        if !explain {
            if let Some(step) = &mut self.step {
                step.left -= 1;
                if step.left == 0 {
                    let step = self.step.take().expect("checked");
                    let _ = step.reply.send(self.status(rt));
                }
            }
        }
        (result, resim)
    }

    fn handle(&mut self, rt: &mut Runtime, call: Call) {
        let response = match call.command {
            Command::Status => self.status(rt),
            Command::Timeline { since } => {
                #[derive(Serialize)]
                struct Reply<'a> {
                    systems: Vec<&'a str>,
                    records: Vec<&'a timeline::Record>,
                }
                Response::json(
                    200,
                    &Reply {
                        systems: rt.stats().systems.iter().map(|s| &*s.name).collect(),
                        records: self.timeline.since(since),
                    },
                )
            }
            Command::Pause => {
                self.paused = true;
                self.status(rt)
            }
            Command::Resume => {
                self.paused = false;
                self.finish_step(rt);
                self.status(rt)
            }
            Command::Step { frames } => {
                if self.step.is_some() {
                    Response::error(409, "a step is already running; wait for its answer")
                } else {
                    self.paused = true;
                    self.step = Some(PendingStep {
                        left: frames,
                        reply: call.reply,
                    });
                    return;
                }
            }
            Command::Rewind(to) => self.rewind(rt, to),
            Command::Entities {
                with,
                offset,
                limit,
            } => entities(rt, &with, offset, limit),
            Command::Entity(e) => self.entity(rt, e),
            Command::Watch(e) => self.watch(rt, e),
            Command::Unwatch(e) => {
                if let Some(i) = self.watched.iter().position(|&w| w == e) {
                    self.watched.remove(i);
                    rt.unwatch(e);
                    self.status(rt)
                } else {
                    Response::error(404, format!("entity {e:?} is not watched by the inspector"))
                }
            }
            Command::Explain(e) => self.explain(rt, e),
        };
        let _ = call.reply.send(response);
    }

    /// Ends a step in progress early (resume, rewind), answering its request.
    fn finish_step(&mut self, rt: &Runtime) {
        if let Some(step) = self.step.take() {
            let _ = step.reply.send(self.status(rt));
        }
    }

    fn rewind(&mut self, rt: &mut Runtime, to: RewindTo) -> Response {
        if self.ring.capacity() == 0 {
            return Response::error(
                409,
                "rewinding needs the snapshot ring, which is off: build the inspector with \
                 `Inspector::builder().ring(N)` (arena: `--inspect-ring N`)",
            );
        }
        if let Some(e) = self.ring.error() {
            return Response::error(409, e.to_owned());
        }
        let now = rt.frame_count();
        let frame = match to {
            RewindTo::Frame(f) => f,
            RewindTo::Back(n) => match now.checked_sub(n) {
                Some(f) => f,
                None => {
                    return Response::error(
                        404,
                        format!("cannot go {n} frames back from frame {now}"),
                    );
                }
            },
        };
        if frame != now && !self.ring.holds(frame) {
            let held = match self.ring.range() {
                Some((lo, hi)) => format!("it holds frames {lo} to {hi}"),
                None => "it holds none yet".to_owned(),
            };
            return Response::error(
                404,
                format!(
                    "frame {frame} is not in the snapshot ring ({} frames; {held})",
                    self.ring.capacity()
                ),
            );
        }
        self.finish_step(rt);
        if frame != now {
            // Keeps the present too, so the re-simulation is checked up to it (and the
            // present can be rewound to).
            if let Err(e) = self.ring.rewind(rt, frame) {
                return Response::error(500, format!("the restore failed: {e}"));
            }
        }
        self.paused = true;
        self.resim = ResimStatus::default();
        self.status(rt)
    }

    fn watch(&mut self, rt: &mut Runtime, e: Entity) -> Response {
        if !rt.world().is_alive(e) {
            return not_alive(e);
        }
        if !self.watched.contains(&e) {
            if self.watched.len() >= MAX_WATCHED {
                return Response::error(
                    409,
                    format!("the inspector watches at most {MAX_WATCHED} entities; unwatch one"),
                );
            }
            self.watched.push(e);
            rt.watch(e);
        }
        self.status(rt)
    }

    fn entity(&self, rt: &Runtime, e: Entity) -> Response {
        let world = rt.world();
        let Some(ids) = world.component_ids(e) else {
            return not_alive(e);
        };
        let names: Vec<&'static str> = world.component_types().map(|(_, n)| n).collect();
        #[derive(Serialize)]
        struct Value {
            id: usize,
            name: &'static str,
            short: String,
            value: Option<String>,
        }
        #[derive(Serialize)]
        struct Reply {
            id: String,
            watched: bool,
            components: Vec<Value>,
            provenance: Option<ProvenanceJson>,
        }
        let components = ids
            .iter()
            .map(|&id| Value {
                id: id.index(),
                name: names[id.index()],
                short: short_name(names[id.index()]),
                value: world.debug_value(e, id),
            })
            .collect();
        let provenance = rt
            .provenance(e)
            .filter(|p| p.frame().is_some())
            .map(ProvenanceJson::new);
        Response::json(
            200,
            &Reply {
                id: format!("{e:?}"),
                watched: rt.provenance(e).is_some(),
                components,
                provenance,
            },
        )
    }

    /// Re-runs the last frame with `e` watched, from the ring, and returns its provenance.
    fn explain(&mut self, rt: &mut Runtime, e: Entity) -> Response {
        let now = rt.frame_count();
        if self.ring.capacity() == 0 {
            return Response::error(
                409,
                "`explain` re-runs the last frame from the snapshot ring, which is off: build \
                 the inspector with `Inspector::builder().ring(N)`; or watch the entity and \
                 run a frame",
            );
        }
        if let Some(err) = self.ring.error() {
            return Response::error(409, err.to_owned());
        }
        let Some(last) = now.checked_sub(1).filter(|&f| self.ring.holds(f)) else {
            return Response::error(
                409,
                format!(
                    "the ring does not hold the state before the last frame (frame {now}): run a frame first"
                ),
            );
        };
        // The present, to compare the re-run with and to come back to if it differs.
        if let Err(err) = rt.snapshot_into(&mut self.scratch) {
            return Response::error(409, format!("cannot snapshot the present: {err}"));
        }
        let want = rt.world().checksum();
        if let Err(err) = self.ring.restore(rt, last) {
            return Response::error(500, format!("the restore failed: {err}"));
        }
        let added = rt.provenance(e).is_none();
        if added {
            rt.watch(e);
        }
        let (result, _) = self.run(rt, true);
        let same = rt.frame_count() == now && rt.world().checksum() == want;
        let provenance = rt.provenance(e).map(ProvenanceJson::new);
        if added {
            rt.unwatch(e);
        }
        if !same {
            rt.restore(&self.scratch);
        }
        let resim = Some(same);
        self.timeline.set_last_resim(resim);
        #[derive(Serialize)]
        struct Reply {
            frame: u64,
            resim: Option<bool>,
            error: Option<String>,
            provenance: Option<ProvenanceJson>,
        }
        Response::json(
            200,
            &Reply {
                frame: last + 1, // the re-run frame's number
                resim,
                error: result.err().map(|e| e.to_string()),
                provenance,
            },
        )
    }

    fn status(&self, rt: &Runtime) -> Response {
        #[derive(Serialize)]
        struct Component {
            id: usize,
            name: &'static str,
            short: String,
        }
        #[derive(Serialize)]
        struct RingStatus<'a> {
            capacity: usize,
            oldest: Option<u64>,
            newest: Option<u64>,
            error: Option<&'a str>,
        }
        #[derive(Serialize)]
        struct Status<'a> {
            frame: u64,
            paused: bool,
            stepping: u32,
            workers: usize,
            entities: usize,
            checksum: Option<String>,
            systems: Vec<&'a str>,
            components: Vec<Component>,
            ring: RingStatus<'a>,
            resim: ResimStatus,
            watched: Vec<String>,
            timeline_seq: Option<u64>,
        }
        let world = rt.world();
        let range = self.ring.range();
        Response::json(
            200,
            &Status {
                frame: rt.frame_count(),
                paused: self.paused,
                stepping: self.step.as_ref().map_or(0, |s| s.left),
                workers: rt.workers(),
                entities: world.len(),
                checksum: (self.paused && self.step.is_none())
                    .then(|| format!("{:#018x}", world.checksum())),
                systems: (0..rt.system_count())
                    .map(|i| &*rt.stats().systems[i].name)
                    .collect(),
                components: world
                    .component_types()
                    .map(|(id, name)| Component {
                        id: id.index(),
                        name,
                        short: short_name(name),
                    })
                    .collect(),
                ring: RingStatus {
                    capacity: self.ring.capacity(),
                    oldest: range.map(|r| r.0),
                    newest: range.map(|r| r.1),
                    error: self.ring.error(),
                },
                resim: self.resim,
                watched: self.watched.iter().map(|e| format!("{e:?}")).collect(),
                timeline_seq: self.timeline.last_seq(),
            },
        )
    }
}

fn not_alive(e: Entity) -> Response {
    Response::error(
        404,
        format!(
            "entity {e:?} is not alive (despawned, or never spawned; list them at /api/entities)"
        ),
    )
}

/// A page of entities having every type in `with`.
fn entities(rt: &Runtime, with: &[String], offset: usize, limit: usize) -> Response {
    let world = rt.world();
    let types: Vec<(runsync::ComponentId, &'static str)> = world.component_types().collect();
    let mut wanted = Vec::with_capacity(with.len());
    for name in with {
        let matches: Vec<_> = types
            .iter()
            .filter(|(_, full)| *full == name || short_name(full) == *name)
            .collect();
        match matches.as_slice() {
            [(id, _)] => wanted.push(*id),
            [] => {
                let known: Vec<String> = types.iter().map(|(_, n)| short_name(n)).collect();
                return Response::error(
                    400,
                    format!(
                        "no registered component type is named `{}` (registered: {})",
                        name.chars().take(80).collect::<String>(),
                        known.join(", ")
                    ),
                );
            }
            _ => {
                return Response::error(
                    400,
                    format!("`{name}` names several types: use the full name"),
                );
            }
        }
    }
    #[derive(Serialize)]
    struct Listed {
        id: String,
        components: Vec<usize>,
    }
    #[derive(Serialize)]
    struct Reply {
        total: usize,
        offset: usize,
        limit: usize,
        entities: Vec<Listed>,
    }
    let mut total = 0;
    let mut page = Vec::new();
    for (e, ids) in world.entities() {
        if wanted.iter().all(|w| ids.contains(w)) {
            if total >= offset && page.len() < limit {
                page.push(Listed {
                    id: format!("{e:?}"),
                    components: ids.iter().map(|c| c.index()).collect(),
                });
            }
            total += 1;
        }
    }
    Response::json(
        200,
        &Reply {
            total,
            offset,
            limit,
            entities: page,
        },
    )
}

/// [`Provenance`] as JSON.
#[derive(Serialize)]
struct ProvenanceJson {
    entity: String,
    frame: Option<u64>,
    components: Vec<ComponentWritesJson>,
    commands: Vec<CommandJson>,
    text: String,
}

#[derive(Serialize)]
struct ComponentWritesJson {
    id: usize,
    name: &'static str,
    short: String,
    before: Option<String>,
    after: Option<String>,
    writes: Vec<WriteJson>,
}

#[derive(Serialize)]
struct WriteJson {
    system: usize,
    system_name: String,
    index: u32,
    value: Option<String>,
}

#[derive(Serialize)]
struct CommandJson {
    system: usize,
    system_name: String,
    kind: &'static str,
    component: Option<&'static str>,
}

impl ProvenanceJson {
    fn new(p: &Provenance) -> ProvenanceJson {
        ProvenanceJson {
            entity: format!("{:?}", p.entity()),
            frame: p.frame(),
            components: p
                .components()
                .iter()
                .map(|c| ComponentWritesJson {
                    id: c.id.index(),
                    name: c.name,
                    short: short_name(c.name),
                    before: c.before.clone(),
                    after: c.after.clone(),
                    writes: c
                        .writes
                        .iter()
                        .map(|w| WriteJson {
                            system: w.system.index(),
                            system_name: w.system_name.to_string(),
                            index: w.index,
                            value: w.value.clone(),
                        })
                        .collect(),
                })
                .collect(),
            commands: p
                .commands()
                .iter()
                .map(|c| {
                    let (kind, component) = match c.kind {
                        CommandKind::Insert { name, .. } => ("insert", Some(name)),
                        CommandKind::Remove { name, .. } => ("remove", Some(name)),
                        CommandKind::Despawn => ("despawn", None),
                        _ => ("other", None),
                    };
                    CommandJson {
                        system: c.system.index(),
                        system_name: c.system_name.to_string(),
                        kind,
                        component,
                    }
                })
                .collect(),
            text: p.to_string(),
        }
    }
}
