//! The game-thread side of the inspector: the state the API acts on (paused, a step in
//! progress, the snapshot ring, the timeline, the watched entities) and the answers to
//! [`Command`]s, given between frames with the runtime in hand. No socket here: the server
//! (`http`) and the router (`api`) hand it commands already validated, and
//! [`Inspector`](crate::Inspector) moves them across threads.

use std::sync::mpsc::SyncSender;
use std::time::{Duration, Instant};

use runsync::{CommandKind, Edit, Entity, FrameError, Provenance, Runtime, RuntimeSnapshot, World};
use serde::Serialize;

use crate::MAX_WATCHED;
use crate::api::{Command, EditCommand, RewindTo, short_name};
use crate::edit::{self, Editable};
use crate::http::Response;
use crate::inputs::{GameInput, Given, Inputs, Track};
use crate::picture::Picture;
use crate::ring::Ring;
use crate::timeline::{self, InputSource, Timeline};
use crate::view::{self, Hooks};

/// One request for the game thread, with where to send the answer.
pub(crate) struct Call {
    pub(crate) command: Command,
    pub(crate) reply: SyncSender<Response>,
}

/// A step in progress: frames left, the input the API gave for them (if any), and who
/// waits for the answer.
struct PendingStep {
    left: u32,
    input: Option<Given>,
    reply: SyncSender<Response>,
}

/// The game's fresh input for the next frame (the callback of
/// [`Inspector::frame_with`](crate::Inspector::frame_with)): sets it in the world.
pub(crate) type Fresh<'a> = Option<&'a mut dyn FnMut(&mut World)>;

/// Re-simulated frames since the last rewind that were compared with the first run.
#[derive(Clone, Copy, Debug, Default, Serialize)]
struct ResimStatus {
    checked: u64,
    differed_at: Option<u64>,
}

/// The game-thread side; see the module docs.
pub(crate) struct GameSide {
    pub(crate) paused: bool,
    /// Watching a game this inspector must not steer (a networked one): pause, step,
    /// resume and rewind are refused.
    pub(crate) read_only: bool,
    step: Option<PendingStep>,
    ring: Ring,
    timeline: Timeline,
    /// Entities the inspector watches (the game may watch others itself).
    watched: Vec<Entity>,
    resim: ResimStatus,
    /// The present during `explain`.
    scratch: RuntimeSnapshot,
    /// How long the last frame run by [`frame`](Self::frame) took.
    frame_time: Duration,
    /// The frames' inputs (see `inputs.rs`), once the game named its input type.
    inputs: Option<Box<dyn Inputs>>,
    /// What the game shows of itself (see `view.rs`).
    hooks: Hooks,
    /// The last picture drawn (its lists reused by the next).
    picture: Picture,
    /// The types the API may edit (see `edit.rs`).
    pub(crate) editable: Editable,
    /// The edits made before each frame of the ring (see `edit.rs`).
    edits: edit::Track,
    /// The frame start the present's edits were made at, while no frame has run since
    /// (the ring then holds the state before them).
    edited: Option<u64>,
    /// How many edits were made since the last frame (the track holds none without a
    /// ring).
    edits_next: usize,
}

impl GameSide {
    /// `ring` snapshots, `timeline` records; paused or not.
    pub(crate) fn new(ring: usize, timeline: usize, paused: bool) -> GameSide {
        GameSide {
            paused,
            read_only: false,
            step: None,
            ring: Ring::new(ring),
            timeline: Timeline::new(timeline),
            watched: Vec::new(),
            resim: ResimStatus::default(),
            scratch: RuntimeSnapshot::new(),
            frame_time: Duration::ZERO,
            inputs: None,
            hooks: Hooks::default(),
            picture: Picture::default(),
            editable: Editable::default(),
            edits: edit::Track::new(ring),
            edited: None,
            edits_next: 0,
        }
    }

    /// The game's hooks (from the builder).
    pub(crate) fn set_hooks(&mut self, hooks: Hooks) {
        self.hooks = hooks;
    }

    /// Records inputs of type `I` from now on (nothing if it already does).
    ///
    /// # Panics
    /// If it records another input type: a game has one.
    #[track_caller]
    pub(crate) fn input_type<I: GameInput>(&mut self) {
        match &self.inputs {
            None => self.inputs = Some(Box::new(Track::<I>::new(self.ring.capacity()))),
            Some(t) if t.as_any().is::<Track<I>>() => {}
            Some(t) => panic!(
                "runsync-inspect: the inspector records inputs of type `{}`, and this frame \
                 gives a `{}`: a game has one input type (`InspectorBuilder::input`, \
                 `Inspector::frame_with`)",
                t.type_name(),
                std::any::type_name::<I>()
            ),
        }
    }

    /// Whether the game may run a frame now: not paused, or a step is running.
    pub(crate) fn may_run(&self) -> bool {
        !self.paused || self.step.is_some()
    }

    /// Runs the game's next frame (timed: [`frame_time`](Self::frame_time)), with `fresh`
    /// giving its input if it needs a fresh one (see `inputs.rs`).
    pub(crate) fn frame(&mut self, rt: &mut Runtime, fresh: Fresh<'_>) -> Result<(), FrameError> {
        let start = Instant::now();
        let result = self.run(rt, false, fresh).0;
        self.frame_time = start.elapsed();
        result
    }

    /// How long the last [`frame`](Self::frame) took.
    pub(crate) fn frame_time(&self) -> Duration {
        self.frame_time
    }

    /// Runs one frame: input, ring, frame, re-simulation check, timeline, step count.
    /// Returns the frame's result and, for a frame run again after a rewind, whether it
    /// reproduced the recorded state.
    fn run(
        &mut self,
        rt: &mut Runtime,
        explain: bool,
        fresh: Fresh<'_>,
    ) -> (Result<(), FrameError>, Option<bool>) {
        let input = if explain {
            // The frame ran before: its recorded input, else the one its ring state holds.
            self.replay_input(rt)
        } else {
            self.set_input(rt, fresh)
        };
        let before = rt.frame_count();
        if self.edited != Some(before) {
            self.ring.record(rt);
            // A frame that ran before gets the edits its first run got (see `edit.rs`).
            self.edits.replay(rt, before);
        }
        // Else edits were made before this frame: the ring took the state before them.
        self.edited = None;
        self.edits_next = 0;
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
        self.timeline.push(rt, &result, resim, explain, input);
        if !self.hooks.plots.is_empty() {
            if let Some(r) = self.timeline.last_mut() {
                self.hooks.sample(rt, &mut r.values);
            }
        }
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

    /// Before a frame: sets its input — the recorded one if it ran before, else the API's
    /// (a step with an `input`), else the game's (`fresh`), else the world's as it is —
    /// and records it (see `inputs.rs`). Says where it came from.
    fn set_input(&mut self, rt: &mut Runtime, fresh: Fresh<'_>) -> InputSource {
        let start = rt.frame_count();
        let Some(inputs) = &mut self.inputs else {
            if let Some(f) = fresh {
                f(rt.world_mut());
                return InputSource::Game;
            }
            return InputSource::World;
        };
        if inputs.replay(rt.world_mut(), start) {
            return InputSource::Recorded;
        }
        let given = self.step.as_ref().and_then(|s| s.input.as_ref());
        let source = match (given, fresh) {
            (Some(given), _) => {
                inputs.set(rt.world_mut(), given);
                InputSource::Api
            }
            (None, Some(f)) => {
                f(rt.world_mut());
                InputSource::Game
            }
            (None, None) => InputSource::World,
        };
        inputs.record(rt.world(), start);
        source
    }

    /// Before `explain`'s re-run: the recorded input of the frame, if held; else the input
    /// the restored state holds (the ring's state is taken after the input is set).
    fn replay_input(&mut self, rt: &mut Runtime) -> InputSource {
        let start = rt.frame_count();
        match &self.inputs {
            Some(inputs) if inputs.replay(rt.world_mut(), start) => InputSource::Recorded,
            _ => InputSource::World,
        }
    }

    /// Answers `call` (a step answers when its frames have run).
    pub(crate) fn handle(&mut self, rt: &mut Runtime, call: Call) {
        if self.read_only
            && matches!(
                call.command,
                Command::Pause
                    | Command::Resume
                    | Command::Step { .. }
                    | Command::Rewind(_)
                    | Command::Edit(_)
            )
        {
            let _ = call.reply.send(Response::error(
                403,
                "this inspector watches a game it must not steer (a networked game runs on \
                 every peer): it shows the frames, entities, pictures and provenance, but \
                 cannot pause, step, resume or rewind, nor edit it",
            ));
            return;
        }
        let response = match call.command {
            Command::Status => self.status(rt),
            Command::Timeline { since } => {
                #[derive(Serialize)]
                struct Reply<'a> {
                    systems: Vec<&'a str>,
                    plots: Vec<&'a str>,
                    records: Vec<&'a timeline::Record>,
                }
                match self.timeline.since(since) {
                    Ok(records) => Response::json(
                        200,
                        &Reply {
                            systems: rt.stats().systems.iter().map(|s| &*s.name).collect(),
                            plots: self.hooks.plot_names(),
                            records,
                        },
                    ),
                    Err(e) => Response::error(400, e),
                }
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
            Command::Step { frames, input } => {
                if self.step.is_some() {
                    Response::error(409, "a step is already running; wait for its answer")
                } else {
                    let input = match (input, &self.inputs) {
                        (None, _) => None,
                        (Some(_), None) => {
                            let _ = call.reply.send(Response::error(
                                409,
                                "this game gave the inspector no input type, so a step \
                                 cannot take an `input`: build it with \
                                 `Inspector::builder().input::<YourInput>()`, or run frames \
                                 with `Inspector::frame_with`",
                            ));
                            return;
                        }
                        (Some(json), Some(inputs)) => match inputs.parse(&json) {
                            Ok(given) => Some(given),
                            Err(e) => {
                                let _ = call.reply.send(Response::error(400, e));
                                return;
                            }
                        },
                    };
                    self.paused = true;
                    self.step = Some(PendingStep {
                        left: frames,
                        input,
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
            Command::Picture { frame } => self.draw(rt, frame),
            Command::Tree { limit } => Response::json(200, &view::tree(rt.world(), limit)),
            Command::Resources => Response::json(200, &view::resources(&self.hooks, rt.world())),
            Command::Edit(edit) => self.edit(rt, edit),
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
            // present can be rewound to) — the state before its edits, if it has some:
            // they are recorded, and a re-simulation makes them again.
            let edited = self.edited == Some(now);
            self.edited = None;
            self.edits_next = 0;
            if let Err(e) = self.ring.rewind(rt, frame, edited) {
                return Response::error(500, format!("the restore failed: {e}"));
            }
        }
        self.paused = true;
        self.resim = ResimStatus::default();
        self.status(rt)
    }

    /// Answers an edit: checks it whole (paused, the entity alive,
    /// each type editable and each value one of it) and, if it holds, applies it as an
    /// input of the next frame (see `edit.rs`). On any error the world is unchanged.
    fn edit(&mut self, rt: &mut Runtime, command: EditCommand) -> Response {
        if !self.paused || self.step.is_some() {
            return Response::error(
                409,
                "edits are made while the game is paused, between two frames: POST \
                 /api/pause first (and wait for a step to finish)",
            );
        }
        let world = rt.world();
        let alive = |e: Entity| world.is_alive(e).then_some(e).ok_or_else(|| not_alive(e));
        let bad = |message: String| Response::error(400, message);
        let edit = match command {
            EditCommand::Insert { entity, components } => alive(entity).and_then(|entity| {
                let components = self.editable.values(world, &components).map_err(bad)?;
                Ok(Edit::Insert { entity, components })
            }),
            EditCommand::Remove { entity, components } => alive(entity).and_then(|entity| {
                let components = self.editable.ids(world, &components).map_err(bad)?;
                Ok(Edit::Remove { entity, components })
            }),
            EditCommand::Spawn { components } => self
                .editable
                .values(world, &components)
                .map(|components| Edit::Spawn { components })
                .map_err(bad),
            EditCommand::Despawn(entity) => alive(entity).map(|entity| Edit::Despawn { entity }),
        };
        let edit = match edit {
            Ok(edit) => edit,
            Err(response) => return response,
        };
        let start = rt.frame_count();
        let first = self.edited != Some(start);
        if first {
            // The state before this frame start's edits, as the state the last frame left.
            self.ring.record(rt);
        }
        let made = match rt.edit(&edit) {
            Ok(made) => made,
            Err(e) => return Response::error(400, format!("the edit does not apply: {e}")),
        };
        if first {
            // In the past (after a rewind), this starts another history.
            self.ring.drop_after(start);
            self.edits.forget_from(start);
            self.edited = Some(start);
            self.edits_next = 0;
        }
        self.edits_next += 1;
        let target = match &edit {
            Edit::Insert { entity, .. } | Edit::Remove { entity, .. } => Some(*entity),
            _ => made,
        };
        self.edits.push(start, edit);
        match target {
            Some(e) => self.entity(rt, e),
            None => self.status(rt),
        }
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
            /// The value as JSON, for an editable type (`null` otherwise).
            json: Option<serde_json::Value>,
            editable: bool,
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
            .map(|&id| {
                let editable = self.editable.get(names[id.index()]);
                Value {
                    id: id.index(),
                    name: names[id.index()],
                    short: short_name(names[id.index()]),
                    value: world.debug_value(e, id),
                    json: editable.and_then(|t| t.json(world, e)),
                    editable: editable.is_some(),
                }
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

    /// The game's picture of the state with `frame` frames completed: the present's, or,
    /// for a state the ring holds, drawn from it (restored, drawn, and the present
    /// restored again: the world is left as it was).
    fn draw(&mut self, rt: &mut Runtime, frame: Option<u64>) -> Response {
        let Some(hook) = self.hooks.picture.clone() else {
            return Response::error(
                409,
                "this game gives the inspector no picture: build it with \
                 `Inspector::builder().picture(|world, picture| ...)`",
            );
        };
        let now = rt.frame_count();
        let frame = frame.unwrap_or(now);
        let mut picture = std::mem::take(&mut self.picture);
        picture.clear();
        if frame == now {
            hook(rt.world(), &mut picture);
        } else {
            if self.ring.capacity() == 0 {
                return Response::error(
                    409,
                    "a past frame's picture is drawn from the snapshot ring, which is off: \
                     build the inspector with `Inspector::builder().ring(N)`",
                );
            }
            if let Some(e) = self.ring.error() {
                return Response::error(409, e.to_owned());
            }
            if !self.ring.holds(frame) {
                let held = match self.ring.range() {
                    Some((lo, hi)) => format!("it holds frames {lo} to {hi}, and {now}"),
                    None => format!("it holds none yet; the present is frame {now}"),
                };
                return Response::error(
                    404,
                    format!("frame {frame} is not in the snapshot ring ({held})"),
                );
            }
            if let Err(err) = rt.snapshot_into(&mut self.scratch) {
                return Response::error(409, format!("cannot snapshot the present: {err}"));
            }
            if let Err(err) = self.ring.restore(rt, frame) {
                rt.restore(&self.scratch);
                return Response::error(500, format!("the restore failed: {err}"));
            }
            hook(rt.world(), &mut picture);
            rt.restore(&self.scratch);
        }
        let response = Response::json(200, &picture.reply(frame));
        self.picture = picture;
        response
    }

    /// Re-runs the last frame with `e` watched, from the ring, and returns its provenance;
    /// `404` if `e` is alive neither now nor at the start of the last frame.
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
        if self.edited == Some(now) {
            return Response::error(
                409,
                "`explain` re-runs the last frame and compares it with the present, which \
                 has edits made since: step a frame first (the edits are part of it)",
            );
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
        let want = rt.checksum();
        let alive_now = rt.world().is_alive(e);
        if let Err(err) = self.ring.restore(rt, last) {
            return Response::error(500, format!("the restore failed: {err}"));
        }
        // Dead now and at the start of the last frame: nothing to explain (as `watch`). One
        // that died in the last frame is explained: the answer shows its despawn.
        if !alive_now && !rt.world().is_alive(e) {
            rt.restore(&self.scratch);
            return not_alive(e);
        }
        let added = rt.provenance(e).is_none();
        if added {
            rt.watch(e);
        }
        let (result, _) = self.run(rt, true, None);
        let same = rt.frame_count() == now && rt.checksum() == want;
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
            read_only: bool,
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
            input: Option<InputStatus>,
            edits: EditStatus,
        }
        #[derive(Serialize)]
        struct EditStatus {
            /// The editable types' full names.
            types: Vec<&'static str>,
            /// Edits made since the last frame (part of the next).
            next: usize,
        }
        #[derive(Serialize)]
        struct InputStatus {
            #[serde(rename = "type")]
            type_name: &'static str,
            oldest: Option<u64>,
            newest: Option<u64>,
            /// Whether the next frame ran before, and so reads its recorded input.
            replay_next: bool,
            /// That recorded input (`null` if the next frame takes a fresh one).
            next: Option<serde_json::Value>,
        }
        let world = rt.world();
        let range = self.ring.range();
        let input = self.inputs.as_ref().map(|i| {
            let held = i.range();
            InputStatus {
                type_name: i.type_name(),
                oldest: held.map(|r| r.0),
                newest: held.map(|r| r.1),
                replay_next: i.holds(rt.frame_count()),
                next: i.json(rt.frame_count()),
            }
        });
        Response::json(
            200,
            &Status {
                frame: rt.frame_count(),
                paused: self.paused,
                read_only: self.read_only,
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
                input,
                edits: EditStatus {
                    types: self.editable.names(),
                    next: self.edits_next,
                },
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
                        CommandKind::Spawn => ("spawn", None),
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
