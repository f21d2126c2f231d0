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
//! # Inputs
//!
//! A frame re-simulated after a rewind must read the input its first run read, not the
//! one the game holds now. Give the inspector the game's input type and it records each
//! frame's [`Input<I>`](runsync::Input) beside the snapshot ring (a clone per frame):
//!
//! ```no_run
//! # use runsync::prelude::*;
//! # use runsync_inspect::Inspector;
//! #[derive(Clone, Copy, Default, serde::Serialize, serde::Deserialize)]
//! struct Pad { x: i8, fire: bool }
//! # fn read_gamepad() -> Pad { Pad::default() }
//! # let mut rt = Runtime::builder().build(World::new());
//! let mut inspector = Inspector::builder().ring(120).bind("127.0.0.1:0")?;
//! loop {
//!     // The callback runs right before the frame, and only if the frame needs a fresh
//!     // input (not while paused, nor for a frame re-simulated after a rewind).
//!     inspector.frame_with(&mut rt, || read_gamepad())?;
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! A frame's input is, in order: its **recorded** input if it ran before (a re-simulation
//! after a rewind, `explain`'s re-run); else the input a [`POST /api/step`](#the-http-api)
//! gave; else the game's ([`Inspector::frame_with`]'s callback); else whatever the world
//! holds (a game that calls [`World::set_input`](runsync::World::set_input) itself and
//! then [`Inspector::frame`] names its type with [`InspectorBuilder::input`] instead).
//! Inputs given by the API or the game are recorded too, so a second rewind over them
//! replays them. The timeline says where each frame's input came from. Without an input
//! type the inspector cannot replay inputs, and a rewound game that reads one diverges:
//! the status says at which frame.
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
//! # Editing
//!
//! With the game paused, the page and the API edit its world, in the spirit of bevy's
//! remote protocol (`bevy/insert`, `bevy/remove`, `bevy/spawn`, `bevy/destroy`): set a
//! component's value, insert or remove components, spawn an entity, despawn one. Make the
//! types editable with [`editable`](InspectorBuilder::editable) (values are JSON through
//! serde, and the type must be opted into saves with
//! [`World::saving`](runsync::World::saving)):
//!
//! ```no_run
//! # use runsync::prelude::*;
//! # use runsync_inspect::Inspector;
//! #[derive(Component, Checksum, Clone, Copy, Debug, serde::Serialize, serde::Deserialize)]
//! #[component(merge = merge::last, save, snapshot, checksum, debug)]
//! struct Health { hp: i32 }
//!
//! let inspector = Inspector::builder().ring(120).editable::<Health>().bind("127.0.0.1:0")?;
//! // curl -X POST localhost:PORT/api/entities/17v1/insert \
//! //      -d '{"components": {"Health": {"hp": 100}}}'
//! # Ok::<(), std::io::Error>(())
//! ```
//!
//! An edit is **an input of the next frame**, as the game's input is. It is checked whole
//! before anything changes (paused, the entity alive, every type editable, every value
//! one of its type: else `409`, `404` or a `400` naming the type, and the world is as it
//! was), then applied at once through [`Runtime::edit`] — the page shows it, and a replay
//! being recorded ([`Runtime::record_replay`]) holds it before the next frame, so playing
//! the replay makes it again. The ring keeps the state before the edits as the state the
//! last frame left, and the edits beside it: a rewind and re-simulation over the frame
//! makes them again, bit for bit. An edit made after a rewind starts another history
//! there: what the ring held after that frame, and the edits recorded from it on, are
//! forgotten. An edit fires no hooks and adds no required components (a despawn fires
//! its hooks); an entity with a parent or children cannot be edited but can be
//! despawned. Who may edit is who may pause: loopback, or the token (a read-only
//! inspector refuses edits, `403`).
//!
//! # Showing the game
//!
//! Besides its tables, the page shows what the game gives it (all opt-in, on the
//! builder; nothing runs for them while no page asks):
//!
//! - a **picture** of the world ([`picture`](InspectorBuilder::picture): the game adds
//!   dots, circles, lines, rectangles and labels to a [`Picture`]), of the present, and of
//!   any frame the ring holds when its timeline bar is hovered;
//! - **plots** over the timeline of the entity count and of values the game chooses
//!   ([`plot`](InspectorBuilder::plot), [`plot_mean`](InspectorBuilder::plot_mean) of a
//!   component, [`plot_memory`](InspectorBuilder::plot_memory)), the frames the ring
//!   holds shaded;
//! - the **parent/child tree** of a world with a hierarchy;
//! - **resources**: the runtime's `Time` and those named with
//!   [`resource`](InspectorBuilder::resource).
//!
//! # What it costs
//!
//! With no client connected, [`frame`](Inspector::frame) adds an empty-channel check and
//! one timeline record (a few stores, no allocation) to [`Runtime::try_frame`], a small
//! fraction of a frame (`examples/idle_cost.rs` counts it under callgrind; the criterion
//! group `inspector_idle` in `runsync-benches` times it against a bare frame;
//! `docs/determinism.md`, "The inspector", has the numbers). The snapshot ring is opt-in
//! because it is not free: a [`Runtime::snapshot_into`] per frame (about a `memcpy` of the
//! snapshotted columns) and N snapshots of memory; the recorded states' checksums are
//! computed only at a rewind (restoring each, so a rewind over N frames costs N restores
//! and checksums). A client costs what it asks for, on the game thread between frames: an
//! entity page scans the entity list; `explain` re-runs a frame.
//!
//! # Robustness
//!
//! The API can pause and rewind the game, so who may use it depends on where it is bound
//! (the rules in full: `src/access.rs`):
//!
//! - **Loopback** (`127.0.0.1`, as the examples bind): no token; requests whose `Host` is
//!   not a loopback name are refused (`403`: a page whose DNS name rebinds to 127.0.0.1).
//! - **Any other address** (a LAN address, `0.0.0.0:7304` to be reached from another
//!   machine): every request under `/api` needs the inspector's **token**, 32 bytes from the
//!   operating system's random source generated at [`bind`](InspectorBuilder::bind), sent as
//!   `Authorization: Bearer TOKEN` and compared in constant time (`401` without it). The
//!   page reads it from its own URL: [`Inspector::url`] prints
//!   `http://ADDRESS:PORT/?token=TOKEN`, with a real address of this machine for `0.0.0.0`
//!   (the one on its default route; else its host name). `Host` must still name this
//!   machine — a loopback name, one of its IP addresses, its host name, or a name given to
//!   [`allow_host`](InspectorBuilder::allow_host) — else `403`.
//!
//! Always, cross-origin requests (an `Origin` header other than `http://` + the request's
//! `Host`) are refused. A malformed or hostile request gets a 4xx and never stops or
//! changes the game: heads are at most 8 KiB, bodies at most 64 KiB
//! ([`max_body`](InspectorBuilder::max_body)), a request must arrive whole within 5 s
//! ([`io_timeout`](InspectorBuilder::io_timeout)), at most 8 connections are served at
//! once ([`max_connections`](InspectorBuilder::max_connections); more get `503`), at most
//! 32 requests wait for the game (more get `503`), and requests are validated (JSON, entity
//! ids, every number against its bounds, in decimal digits with overflow checked) before
//! they are queued. What only the game can check (a `since` past the last timeline record,
//! a frame the ring does not hold) is checked there with checked arithmetic, and answered
//! `400` or `404`. The frame never waits for a client: it only takes what is already
//! queued. A fuzz target (`fuzz/fuzz_targets/request.rs`) drives raw requests through the
//! same parsing, routing and game-thread answers.
//!
//! # The HTTP API
//!
//! JSON in and out (`Content-Type: application/json`), one request per connection. Errors
//! are `{"error": "what is wrong and how to fix it", "status": 400}`: `400` a malformed
//! request (JSON, entity id, query parameter, a number out of its range), `401` no token or
//! a wrong one (non-loopback binds), `403` a foreign `Host` or `Origin`,
//! `404` an unknown path, a dead entity or a frame the ring does not hold, `405` the wrong
//! method, `408` a request not sent in time, `409` what the state forbids (the ring is off,
//! a step is running, 16 entities watched, an edit while running), `411` a chunked body, `413` a body too large,
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
//! | `GET /api/timeline?since=SEQ` | | [timeline records](#timeline) after `SEQ` (all held without it; `400` if `SEQ` is after the last record written) |
//! | `POST /api/pause` | none | status, paused: `frame` now blocks between frames |
//! | `POST /api/resume` | none | status, running |
//! | `POST /api/step` | `{"frames": n, "input": I}` (1 to 600; none = 1; `input` optional) | status after the `n` frames ran (paused); answered when they have. `input` (the game's input type as JSON) is the input of the frames past the recorded end ([Inputs](#inputs)); `400` if it is not one, `409` if the game named no input type |
//! | `POST /api/rewind` | `{"frame": k}` or `{"back": n}` | status at the restored frame (paused); `404` if the ring does not hold it, `409` if the ring is off |
//! | `GET /api/entities?with=A,B&offset=0&limit=100` | | [a page of entities](#entities) having all the listed types (full or short names), in storage order (`offset` 0 to 2^32 - 1, `limit` 0 to 1000) |
//! | `GET /api/entities/{id}` | | [one entity](#one-entity): each component's type and `Debug` text; its provenance if watched |
//! | `POST /api/entities/{id}/watch` | none | records its provenance from the next frame (at most 16 watched) |
//! | `POST /api/entities/{id}/unwatch` | none | stops that |
//! | `POST /api/entities/{id}/explain` | none | [its provenance in the last frame](#explain), by re-running that frame from the ring with the entity watched; `404` if it is alive neither now nor at the start of that frame |
//! | `GET /api/picture?frame=K` | | [the game's picture](#picture) of the present, or (with `frame`) of the state with `K` frames completed, drawn from the ring; `404` if the ring does not hold it, `409` if the game gives no picture |
//! | `GET /api/tree?limit=N` | | [the parent/child forest](#tree), at most `N` nodes (0 to 5000; default 500) |
//! | `POST /api/entities/{id}/insert` | `{"components": {"Health": {"hp": 100}, …}}` | [the entity](#one-entity), with each component set to its value (inserted if it lacked it; types by full or short name). Paused only (`409`); `400` naming the type for a value that is not one, or a type not [editable](InspectorBuilder::editable); `404` for a dead entity. See [Editing](#editing) |
//! | `POST /api/entities/{id}/remove` | `{"components": ["Health", …]}` | the entity, without them (`400` if it lacks one) |
//! | `POST /api/spawn` | `{"components": {"Health": {"hp": 100}, …}}` | the entity spawned (its `id`) |
//! | `POST /api/entities/{id}/despawn` | none | status, the entity despawned (hooks fire; descendants go too) |
//! | `GET /api/resources` | | `{"resources": [{"name": "runsync::runtime::Time", "short": "Time", "value": "Time { dt: 0.016666668, frame: 812 }"}, …]}`: the runtime's `Time`, then each resource named with [`resource`](InspectorBuilder::resource) (`value` `null` while the world lacks it) |
//!
//! ## Status
//!
//! ```json
//! {"frame": 812, "paused": true, "stepping": 0, "workers": 2, "entities": 2210,
//!  "checksum": "0x5d0c…", "systems": ["BuildGrid", "Spawner", …],
//!  "components": [{"id": 0, "name": "runsync_systems::Position", "short": "Position"}, …],
//!  "ring": {"capacity": 120, "oldest": 693, "newest": 812, "error": null},
//!  "resim": {"checked": 10, "differed_at": null},
//!  "watched": ["17v1"], "timeline_seq": 830,
//!  "edits": {"types": ["my_game::Health"], "next": 0},
//!  "input": {"type": "my_game::Pad", "oldest": 693, "newest": 811,
//!            "replay_next": false, "next": null}}
//! ```
//!
//! `frame` is the number of frames completed (the number of the last frame run). `checksum` (of the
//! world, [`World::checksum`](runsync::World::checksum)) is given while paused, else
//! `null`. `ring.error` says why the ring stopped, if it did (a type not opted into
//! snapshots). `resim` counts the re-simulated frames since the last rewind that were
//! compared with the first run, and the number of the first that differed. `input` is
//! `null` without an input type ([Inputs](#inputs)); else the frames whose inputs are held
//! (by the frame's start, as the ring), and whether the next frame ran before and so reads
//! its recorded input (`next`, as JSON). `edits` lists the [editable](#editing) types and
//! counts the edits made since the last frame (part of the next one).
//!
//! ## Timeline
//!
//! ```json
//! {"systems": ["BuildGrid", …], "plots": ["mean hp"],
//!  "records": [{"seq": 830, "frame": 812, "run_ns": 812345,
//!  "sync_ns": 70211, "systems_ns": [120331, …], "merged": 5120, "dropped": 0,
//!  "entities": 2210, "error": null, "resim": true, "explain": false,
//!  "input": "recorded", "values": [41.5]}, …]}
//! ```
//!
//! One record per frame the inspector ran (the last 600 by default): `frame` is its number,
//! `seq` increases also across rewinds (where `frame` goes back). `resim` is `true`/`false` for a frame run
//! again after a rewind (whether it reproduced the recorded state), else `null`;
//! `explain` marks a frame re-run for `explain`. `input` says where the frame's input came
//! from: `recorded`, `api`, `game` or `world` ([Inputs](#inputs)). `values` are the
//! game's plotted values after the frame ([`plot`](InspectorBuilder::plot)), in the order
//! of `plots` (`null` for a mean over no component).
//!
//! ## Entities
//!
//! ```json
//! {"total": 2010, "offset": 0, "limit": 100,
//!  "entities": [{"id": "0v1", "components": [0, 1, 3, 4, 5]}, …]}
//! ```
//!
//! `components` are ids into the status's `components`. `total` counts every match. An
//! `offset` at or past `total` is an empty page, not an error: the population changes
//! between two requests, so a page that was there may not be.
//!
//! ## One entity
//!
//! ```json
//! {"id": "17v1", "watched": true,
//!  "components": [{"id": 0, "name": "runsync_systems::Position", "short": "Position",
//!                  "value": "Position(Vec2(31.5, 8.25))", "json": [31.5, 8.25],
//!                  "editable": true}, …],
//!  "provenance": null}
//! ```
//!
//! `value` is `null` for a type not opted in with `debugging`; `json` is the value as
//! JSON for an [editable](#editing) type (what `insert` takes), else `null`. `provenance` is
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
//!
//! ## Picture
//!
//! ```json
//! {"frame": 812, "title": "arena", "bounds": [0, 0, 400, 400], "y_down": false,
//!  "colors": ["#3478c8ff", "#e67e22ff"], "rects": [], "lines": [],
//!  "circles": [], "dots": [31.5, 8.25, 2, 0, …], "labels": [],
//!  "shapes": 2210, "truncated": false}
//! ```
//!
//! The shapes of [`Picture`], as flat lists: `dots` and `circles` four numbers each
//! (x, y, radius — pixels for a dot, world units for a circle — and a colour index into
//! `colors`), `lines` and `rects` five (two points, a colour). At most
//! [`MAX_SHAPES`] are sent (`truncated` if the game gave more; `shapes` counts them all).
//!
//! ## Tree
//!
//! ```json
//! {"hierarchy": true, "roots": 40, "truncated": false,
//!  "nodes": [{"id": "3v1", "depth": 0, "children": 2, "components": [0, 4, 9]},
//!            {"id": "1207v1", "depth": 1, "children": 0, "components": [5, 9]}, …]}
//! ```
//!
//! Every root (an entity with children and no parent), in storage order, each followed by
//! its descendants in pre-order (`depth` from 0). `hierarchy` is `false` for a world without
//! [`register_hierarchy`](runsync::World::register_hierarchy).

mod access;
mod api;
mod by_frame;
mod edit;
mod game;
mod http;
mod inputs;
mod picture;
mod ring;
mod timeline;
mod view;

#[doc(hidden)]
pub mod fuzzing;

use std::borrow::Cow;
use std::fmt;
use std::io;
use std::net::{SocketAddr, TcpListener, ToSocketAddrs};
use std::sync::Arc;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::time::Duration;

use runsync::{FrameError, Runtime};

use crate::access::Access;
use crate::api::{Command, Route};
use crate::edit::{EditType, Editable};
use crate::game::{Call, GameSide};
use crate::http::{Limits, Request, Response, Server};
pub use crate::inputs::GameInput;
pub use crate::picture::{Color, MAX_LABELS, MAX_SHAPES, Picture};
use crate::view::Hooks;

/// The page, one self-contained file.
const PAGE: &str = include_str!("page.html");

/// Most entities the inspector watches at once.
pub const MAX_WATCHED: usize = 16;

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
    read_only: bool,
    allowed_hosts: Vec<String>,
    /// Records the game's input type (see [`input`](Self::input)).
    input: Option<fn(&mut GameSide)>,
    /// The types the API may edit (see [`editable`](Self::editable)).
    editable: Editable,
    /// The game's picture, plots and resources.
    hooks: Hooks,
}

impl InspectorBuilder {
    /// Records each frame's input of type `I` (the [`Input<I>`](runsync::Input) resource
    /// as the frame starts), so that frames re-simulated after a rewind, and `explain`'s
    /// re-run, read the input their first run read, and a `POST /api/step` may give the
    /// input for frames past the recorded end. See [Inputs](crate#inputs).
    /// [`Inspector::frame_with`] does this by itself; call it for a game that sets its
    /// input with [`World::set_input`](runsync::World::set_input) and runs frames with
    /// [`Inspector::frame`]. Costs a clone of the input per frame, into the entry of the
    /// ring's length kept for it.
    pub fn input<I: GameInput>(mut self) -> Self {
        self.input = Some(GameSide::input_type::<I>);
        self
    }

    /// Lets the API and the page edit components of type `C` while paused: set, insert
    /// and remove them, spawn entities with them ([Editing](crate#editing)). Its values
    /// are read and written as JSON through serde; `C` must be opted into saves with
    /// [`World::saving`](runsync::World::saving) (an edit is recorded in the save
    /// encoding, so that a replay or a rewind makes it again). Costs nothing per frame; a
    /// `GET /api/entities/{id}` serializes the entity's editable values.
    pub fn editable<C>(mut self) -> Self
    where
        C: runsync::Component + serde::Serialize + serde::de::DeserializeOwned,
    {
        self.editable.add(EditType::of::<C>());
        self
    }

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

    /// How the game draws its world on the page: `draw(world, picture)` adds the shapes
    /// of one state ([`Picture`]: dots, circles, lines, rectangles, labels, in world
    /// coordinates). Called on the game thread, between frames, for each
    /// `GET /api/picture` — the page asks for the present a few times a second, and for a
    /// past frame of the ring when its timeline is hovered (restored, drawn, and the
    /// present restored). Nothing while no page is open.
    ///
    /// ```no_run
    /// use runsync::prelude::*;
    /// use runsync_inspect::{Color, Inspector};
    /// #[derive(Clone, Copy, Debug)] struct Pos(f32, f32);
    /// impl Component for Pos { type Output = Pos; }
    ///
    /// let inspector = Inspector::builder()
    ///     .picture(|world: &World, picture| {
    ///         picture.bounds([0.0, 0.0], [100.0, 100.0]);
    ///         for (_, (p,)) in world.query::<(&Pos,)>() {
    ///             picture.dot([p.0, p.1], 2.0, Color::rgb(52, 120, 200));
    ///         }
    ///     })
    ///     .bind("127.0.0.1:0")?;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn picture(
        mut self,
        draw: impl Fn(&runsync::World, &mut Picture) + Send + Sync + 'static,
    ) -> Self {
        self.hooks.picture = Some(Arc::new(draw));
        self
    }

    /// Plots `value(runtime)` after every frame, under `name`, beside the entity count,
    /// over the timeline (the page shades the frames the ring holds). Costs a call per
    /// frame the inspector runs, while it runs: keep it to a query or two.
    pub fn plot(
        mut self,
        name: impl Into<String>,
        value: impl Fn(&Runtime) -> f64 + Send + Sync + 'static,
    ) -> Self {
        self.hooks.plots.push((name.into(), Arc::new(value)));
        self
    }

    /// Plots the mean of `value` over every component `C` (a gap for a frame with none):
    /// `.plot_mean::<Health>("mean hp", |h| h.hp as f64)`. Costs a query over `C` per frame.
    pub fn plot_mean<C: runsync::Component>(
        mut self,
        name: impl Into<String>,
        value: impl Fn(&C) -> f64 + Send + Sync + 'static,
    ) -> Self {
        self.hooks.plots.push((name.into(), view::mean(value)));
        self
    }

    /// Plots the memory the runtime holds, in bytes ([`Runtime::memory`]: component
    /// columns plus output buffers), as `"memory bytes"`. Costs a walk over the columns and
    /// buffers per frame.
    pub fn plot_memory(self) -> Self {
        self.plot("memory bytes", |rt: &Runtime| {
            let m = rt.memory();
            (m.component_bytes + m.output_bytes) as f64
        })
    }

    /// Shows resource `R` as `Debug` text in the page's resources (the runtime's `Time` is
    /// always shown). Costs a `format!` per `GET /api/resources`.
    pub fn resource<R: fmt::Debug + Send + Sync + 'static>(mut self) -> Self {
        self.hooks.resources.push((
            std::any::type_name::<R>(),
            Arc::new(|w: &runsync::World| w.get_resource::<R>().map(|r| format!("{r:?}"))),
        ));
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

    /// Watches a game this inspector must not steer, such as a networked one (whose
    /// frames run on every peer): the timeline, entities, pictures, plots and
    /// provenance (`explain`) are served, but pause, step, resume and rewind are refused
    /// (`403`), and `status` says `"read_only": true`. Feed it the game's confirmed
    /// frames: `runsync-net`'s duel runs a runtime of its own on them
    /// (`duel --inspect ADDR`).
    pub fn read_only(mut self) -> Self {
        self.read_only = true;
        self.paused = false;
        self
    }

    /// Starts paused: the first [`Inspector::frame`] waits for a step or resume.
    pub fn paused(mut self, paused: bool) -> Self {
        self.paused = paused;
        self
    }

    /// Also accepts `name` in the `Host` header when bound to a non-loopback address (see
    /// [Robustness](crate#robustness)): a DNS name or alias this machine is reached by
    /// that is not its host name (`"game-box.lan"`). Compared ignoring ASCII case, without
    /// the port. No effect on a loopback bind, which answers loopback names only.
    pub fn allow_host(mut self, name: impl Into<String>) -> Self {
        self.allowed_hosts.push(name.into());
        self
    }

    /// Binds `addr` and starts serving (`"127.0.0.1:0"`: any free port on loopback;
    /// [`Inspector::url`] says which). Bound to a non-loopback address (a LAN address,
    /// `"0.0.0.0:7304"`), the API needs a token, generated here from the operating
    /// system's random source and part of [`Inspector::url`]; see
    /// [Robustness](crate#robustness).
    ///
    /// # Errors
    /// If the address cannot be bound (in use, not local), the random source fails (for a
    /// non-loopback bind), or the server thread cannot start.
    pub fn bind(self, addr: impl ToSocketAddrs) -> io::Result<Inspector> {
        let listener = TcpListener::bind(addr)?;
        let local = listener.local_addr()?;
        let access = Arc::new(Access::for_bind(local, &self.allowed_hosts)?);
        let url = match access.token() {
            None => format!("http://{local}/"),
            Some(token) => format!(
                "http://{}:{}/?token={token}",
                access::advertised_host(local),
                local.port()
            ),
        };
        let token = access.token().map(str::to_owned);
        let (tx, rx) = mpsc::sync_channel::<Call>(self.queue);
        let reply_timeout = self.reply_timeout;
        let router = access.clone();
        let handler = move |req: Request| -> Response {
            match api::route(&req, &router) {
                Ok(Route::Page) => page(),
                Ok(Route::Game(command)) => forward(&tx, command, reply_timeout),
                Err(response) => response,
            }
        };
        let server = Server::start(listener, self.limits, access, Arc::new(handler))?;
        let mut game = GameSide::new(self.ring, self.timeline, self.paused && !self.read_only);
        game.read_only = self.read_only;
        game.set_hooks(self.hooks);
        game.editable = self.editable;
        if let Some(input_type) = self.input {
            input_type(&mut game);
        }
        Ok(Inspector {
            server,
            calls: rx,
            game,
            per_frame: self.per_frame,
            url,
            token,
        })
    }
}

/// The page, as served.
fn page() -> Response {
    Response {
        status: 200,
        content_type: "text/html; charset=utf-8",
        body: Cow::Borrowed(PAGE.as_bytes()),
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

/// The live inspector: an HTTP server on background threads, and the game-thread side
/// that answers it between frames. See the [crate docs](crate).
pub struct Inspector {
    server: Server,
    calls: Receiver<Call>,
    game: GameSide,
    per_frame: usize,
    url: String,
    token: Option<String>,
}

impl fmt::Debug for Inspector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Inspector")
            .field("addr", &self.server.addr())
            .field("paused", &self.game.paused)
            .field("token", &self.token.as_ref().map(|_| "…"))
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
            limits: Limits::default(),
            reply_timeout: Duration::from_secs(30),
            queue: 32,
            per_frame: 8,
            paused: false,
            read_only: false,
            allowed_hosts: Vec::new(),
            input: None,
            editable: Editable::default(),
            hooks: Hooks::default(),
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

    /// The page's address, to open in a browser: `http://127.0.0.1:PORT/` on loopback;
    /// bound elsewhere, `http://HOST:PORT/?token=TOKEN`, where HOST is the address bound
    /// or, for `0.0.0.0`/`[::]`, this machine's address on its default route (else its
    /// host name). The URL holds the token: show it only to who may drive the game.
    pub fn url(&self) -> String {
        self.url.clone()
    }

    /// The token every API request needs (`Authorization: Bearer TOKEN`), if bound to a
    /// non-loopback address; `None` on loopback.
    pub fn token(&self) -> Option<&str> {
        self.token.as_deref()
    }

    /// Whether it is paused (by a client, [`pause`](Self::pause) or the builder).
    pub fn is_paused(&self) -> bool {
        self.game.paused
    }

    /// Pauses: [`frame`](Self::frame) then blocks until a client steps or resumes.
    pub fn pause(&mut self) {
        self.game.paused = true;
    }

    /// Resumes running frames.
    pub fn resume(&mut self) {
        self.game.paused = false;
    }

    /// Answers the requests waiting, then runs one frame — first blocking, while paused,
    /// to answer requests until a client steps or resumes. Returns the frame's result, as
    /// [`Runtime::try_frame`].
    ///
    /// # Errors
    /// The frame's [`FrameError`].
    pub fn frame(&mut self, rt: &mut Runtime) -> Result<(), FrameError> {
        self.wait_to_run(rt);
        self.game.frame(rt, None)
    }

    /// [`frame`](Self::frame), with `input` giving the frame's input (set as by
    /// [`Runtime::frame_with`]) when it needs a fresh one: called once, after any pause,
    /// right before the frame runs — unless the frame ran before (a re-simulation after a
    /// rewind reads its recorded input) or a `step` request gave the input. Records the
    /// inputs of type `I` from the first call on (as [`InspectorBuilder::input`]). See
    /// [Inputs](crate#inputs).
    ///
    /// # Errors
    /// The frame's [`FrameError`].
    ///
    /// # Panics
    /// If the inspector records another input type ([`InspectorBuilder::input`]).
    #[track_caller]
    pub fn frame_with<I: GameInput>(
        &mut self,
        rt: &mut Runtime,
        input: impl FnOnce() -> I,
    ) -> Result<(), FrameError> {
        self.game.input_type::<I>();
        self.wait_to_run(rt);
        let mut input = Some(input);
        let mut fresh = |w: &mut runsync::World| {
            if let Some(f) = input.take() {
                w.set_input(f());
            }
        };
        self.game.frame(rt, Some(&mut fresh))
    }

    /// Answers the requests waiting, then runs one frame unless paused; never blocks.
    /// For loops that keep rendering while paused.
    pub fn poll(&mut self, rt: &mut Runtime) -> Poll {
        self.serve_waiting(rt);
        if !self.game.may_run() {
            return Poll::Paused;
        }
        Poll::Ran(self.game.frame(rt, None))
    }

    /// [`poll`](Self::poll), with `input` giving the frame's input as
    /// [`frame_with`](Self::frame_with) does (not called while paused).
    ///
    /// # Panics
    /// If the inspector records another input type ([`InspectorBuilder::input`]).
    #[track_caller]
    pub fn poll_with<I: GameInput>(&mut self, rt: &mut Runtime, input: impl FnOnce() -> I) -> Poll {
        self.game.input_type::<I>();
        self.serve_waiting(rt);
        if !self.game.may_run() {
            return Poll::Paused;
        }
        let mut input = Some(input);
        let mut fresh = |w: &mut runsync::World| {
            if let Some(f) = input.take() {
                w.set_input(f());
            }
        };
        Poll::Ran(self.game.frame(rt, Some(&mut fresh)))
    }

    /// Answers requests until the game may run a frame: those waiting, then, while
    /// paused, each as it comes.
    fn wait_to_run(&mut self, rt: &mut Runtime) {
        self.serve_waiting(rt);
        while !self.game.may_run() {
            match self.calls.recv() {
                Ok(call) => self.game.handle(rt, call),
                // The server is gone: nobody can resume us.
                Err(_) => self.game.paused = false,
            }
        }
    }

    /// How long the last frame run by [`frame`](Self::frame) or [`poll`](Self::poll) took
    /// itself: the ring's snapshot, [`Runtime::try_frame`] and the re-simulation check —
    /// not the time `frame` spent paused or answering requests. For a report that tells a
    /// game's speed from its pacing (zero before the first frame).
    pub fn last_frame_time(&self) -> Duration {
        self.game.frame_time()
    }

    fn serve_waiting(&mut self, rt: &mut Runtime) {
        for _ in 0..self.per_frame {
            match self.calls.try_recv() {
                Ok(call) => self.game.handle(rt, call),
                Err(_) => return,
            }
        }
    }
}
