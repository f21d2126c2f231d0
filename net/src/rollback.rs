//! A [`Runtime`] driven by ggrs's requests: save a frame into a ring of reused
//! snapshots, load one back, advance with the frame's inputs.
//!
//! See [`Rollback`] for the frame numbers and the steps.

use std::marker::PhantomData;
use std::time::{Duration, Instant};

use ggrs::{Frame, GgrsRequest, InputStatus};
use runsync::{Input, Runtime, RuntimeSnapshot};

use crate::config::{Address, NetConfig};
use crate::error::NetError;
use crate::input::NetInput;
use crate::input::PlayerInputs;

/// One entry of the ring: a snapshot and what it is.
struct Saved {
    snapshot: RuntimeSnapshot,
    /// ggrs's frame number of the state, `None` until saved.
    frame: Option<Frame>,
    checksum: u64,
}

/// What one [`Rollback::handle`] call did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Handled {
    /// Frames saved.
    pub saves: u32,
    /// Rollbacks (loads of an earlier frame): 0 or 1 per ggrs tick.
    pub rollbacks: u32,
    /// Frames run again after a rollback.
    pub resimulated: u32,
    /// Frames run in all (re-runs included).
    pub frames: u32,
}

/// Counters and times of a [`Rollback`] since it was made.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RollbackStats {
    /// Frames saved.
    pub saves: u64,
    /// Rollbacks: loads of an earlier frame.
    pub rollbacks: u64,
    /// Frames run again after a rollback.
    pub resimulated: u64,
    /// Frames run in all, re-runs included.
    pub frames: u64,
    /// The most frames re-run after one rollback.
    pub deepest: u32,
    /// Time spent saving (snapshot and checksum).
    pub save_time: Duration,
    /// Time spent restoring.
    pub load_time: Duration,
    /// Time spent running frames, re-runs included.
    pub frame_time: Duration,
}

/// A [`Runtime`] driven by ggrs's requests, with a ring of reused snapshots. A
/// [`NetSession`](crate::NetSession) and [`sync_test`](crate::sync_test()) are built on it;
/// use it directly to drive a ggrs session of your own (see [`handle`](Self::handle)).
///
/// # Frame numbers
///
/// ggrs counts frames from 0 for the session's start; runsync counts frames completed
/// ([`Runtime::frame_count`]). A [`Rollback`] made from a runtime at frame count `s` maps
/// ggrs's frame `g` to runsync's `s + g`: ggrs's "save frame `g`" is the state after
/// `s + g` frames, and "advance" with the inputs of ggrs frame `g` runs runsync frame
/// `s + g + 1`. The public numbers of this crate ([`ConfirmedFrame`](crate::ConfirmedFrame),
/// [`NetEvent::Desync`](crate::NetEvent::Desync), [`NetSession::input_frame`](crate::NetSession::input_frame))
/// are runsync's.
///
/// # Steps of a request list
///
/// ggrs hands over a list to fulfil in order; [`Rollback::handle`] does, one function per
/// kind:
/// 1. [`save`](Rollback::save): `snapshot_into` the ring's entry `g % len` (no allocation
///    once the world's shape is steady), then the world's checksum, handed to ggrs for
///    desync detection;
/// 2. [`load`](Rollback::load): `try_restore` that entry, after checking it holds frame
///    `g` (a rollback);
/// 3. [`advance`](Rollback::advance): the frame's inputs written in place into the
///    [`PlayerInputs`] input resource, then one frame.
///
/// # Example
/// ```
/// use runsync::prelude::*;
/// use runsync_net::{PlayerInputs, Rollback};
///
/// #[derive(Component, Checksum, Clone, Copy, Debug, PartialEq)]
/// #[component(output = i32, merge = merge::sum, snapshot, checksum)]
/// struct X(i32);
/// impl std::ops::AddAssign<i32> for X { fn add_assign(&mut self, d: i32) { self.0 += d } }
///
/// let mut world = World::new();
/// world.register_default::<X>();
/// world.spawn((X(0),));
/// let mut rt = Runtime::builder().workers(2).build(world);
/// rt.add_system(|w: &World, out: &mut Output| {
///     let step = i32::from(w.input::<PlayerInputs<u8>>().get(0));
///     for (e, _) in w.query::<(&X,)>() { out.write::<X>(e, step); }
/// });
/// let mut rb = Rollback::<u8>::new(rt, 1, 8).unwrap();
/// let confirmed = rb.save(0).unwrap();           // ggrs: save frame 0
/// rb.advance(&[(5, ggrs::InputStatus::Predicted)]).unwrap();
/// rb.load(0).unwrap();                            // ggrs: the prediction was wrong
/// assert_eq!(rb.runtime().world().checksum(), confirmed);
/// rb.advance(&[(1, ggrs::InputStatus::Confirmed)]).unwrap();
/// assert_eq!(rb.stats().rollbacks, 1);
/// ```
pub struct Rollback<I: NetInput> {
    rt: Runtime,
    ring: Vec<Saved>,
    /// The runtime's frame count at ggrs's frame 0.
    start: u64,
    players: usize,
    stats: RollbackStats,
    /// While an online replay is recorded: the inputs each of the last frames ran with,
    /// by ggrs frame (the last run of a frame, so once it is confirmed, its confirmed
    /// inputs). Reused entries: no allocation once sized.
    inputs: Option<Vec<(Option<Frame>, PlayerInputs<I>)>>,
    /// Desync forensics: every `every`-th frame's checksum parts go into the high bits
    /// of the checksum handed to ggrs, and what it takes to run that frame again (the
    /// state before it, its inputs) into a small ring of its own.
    forensics: Option<Forensics<I>>,
    _input: PhantomData<fn(I)>,
}

/// The frames a desync report can look at (see [`Rollback::keep_checked_frames`]).
struct Forensics<I> {
    every: u32,
    /// How many frames before a checked frame its window holds (1 to [`WINDOW`]).
    window: u32,
    kept: Vec<Kept<I>>,
}

/// The most frames before a checked frame that a desync report runs again: its window
/// is `min(desync_interval, WINDOW)` frames, from the state right after the checked frame
/// before it (which both peers agreed on, or a desync would have been reported there).
const WINDOW: u32 = 64;

/// A checked frame, kept after the rollback ring has moved on: the state at the start of
/// its window and the inputs of the window's frames, so that the window can be run again
/// — to rebuild the frame's state, and to record who wrote what on the way
/// ([`Rollback::rerun`]). Keeping the state before rather than the frame's own costs the
/// same one snapshot per checked frame.
struct Kept<I> {
    /// The checked frame, once saved.
    frame: Option<Frame>,
    /// The frame whose state `snapshot` holds: `frame - window` once taken; `None` when
    /// `snapshot` is `frame`'s own (no window before it, as for frame 0).
    from: Option<Frame>,
    snapshot: RuntimeSnapshot,
    /// The inputs of frames `from + 1 ..= frame`, in order.
    inputs: Vec<PlayerInputs<I>>,
    /// Which of `inputs` were logged since `from`'s state was taken (bit `k`: frame
    /// `from + 1 + k`).
    logged: u64,
    /// The world's checksum at `frame`, which a run again must reach.
    checksum: u64,
    parts: Vec<(&'static str, u64)>,
}

/// A checked frame taken out of the kept ring for good (a desync's): what it takes to
/// run its window again. See [`Rollback::take_checked_frame`].
pub(crate) struct CheckedFrame<I> {
    /// The state at the start of the window, and the inputs of its frames in order;
    /// `None` when the frame had no window before it (the session's first).
    pub(crate) window: Option<(RuntimeSnapshot, Vec<PlayerInputs<I>>)>,
    /// The frame's own state.
    pub(crate) at: RuntimeSnapshot,
}

impl<I: NetInput> std::fmt::Debug for Rollback<I> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rollback")
            .field("frame_count", &self.rt.frame_count())
            .field("start", &self.start)
            .field("ring", &self.ring.len())
            .field("players", &self.players)
            .finish_non_exhaustive()
    }
}

impl<I: NetInput> Rollback<I> {
    /// Wraps `rt` for a game of `players` players that rolls back at most `window` frames
    /// (ggrs's max prediction window), with a ring of `window + 1` snapshots, as ggrs keeps.
    ///
    /// Sets the [`PlayerInputs`] input (every player's `I::default()`), which opts it into
    /// snapshots, then takes the first snapshot, so a type that cannot be snapshot is
    /// reported now.
    ///
    /// # Errors
    /// [`NetError::Snapshot`] naming the first type that is not opted into snapshots.
    pub fn new(mut rt: Runtime, players: usize, window: usize) -> Result<Self, NetError> {
        rt.world_mut().set_input(PlayerInputs::<I>::empty(players));
        let mut ring: Vec<Saved> = (0..window + 1)
            .map(|_| Saved {
                snapshot: RuntimeSnapshot::new(),
                frame: None,
                checksum: 0,
            })
            .collect();
        rt.snapshot_into(&mut ring[0].snapshot)?;
        Ok(Rollback {
            start: rt.frame_count(),
            rt,
            ring,
            players,
            stats: RollbackStats::default(),
            inputs: None,
            forensics: None,
            _input: PhantomData,
        })
    }

    /// Fulfils ggrs's requests, in order: [`save`](Self::save) into the cell's frame (and
    /// hand ggrs the checksum), [`load`](Self::load), [`advance`](Self::advance).
    ///
    /// ```
    /// # use runsync::prelude::*;
    /// # use runsync_net::{NetConfig, PlayerInputs, Rollback};
    /// let rt = Runtime::builder().workers(1).build(World::new());
    /// let mut rb = Rollback::<u8>::new(rt, 1, 8).unwrap();
    /// let mut session = ggrs::SessionBuilder::<NetConfig<u8, std::net::SocketAddr>>::new()
    ///     .with_num_players(1).unwrap()
    ///     .with_check_distance(2)
    ///     .start_synctest_session().unwrap();
    /// for f in 0..10u8 {
    ///     session.add_local_input(0, f).unwrap();
    ///     rb.handle(session.advance_frame().unwrap()).unwrap();
    /// }
    /// assert_eq!(rb.runtime().frame_count(), 10);
    /// assert!(rb.stats().rollbacks > 0);
    /// ```
    ///
    /// # Errors
    /// The first request's error, after which the rest are not fulfilled (see
    /// [`save`](Self::save), [`load`](Self::load), [`advance`](Self::advance)).
    pub fn handle<A: Address>(
        &mut self,
        requests: Vec<GgrsRequest<NetConfig<I, A>>>,
    ) -> Result<Handled, NetError> {
        let mut done = Handled::default();
        // Frames run after a load up to the frame count the call started at are re-runs;
        // one past it is the tick's new frame.
        let before = self.rt.frame_count();
        let mut rolled_back = false;
        for request in requests {
            match request {
                GgrsRequest::SaveGameState { cell, frame } => {
                    let checksum = self.save_tagged(frame)?;
                    cell.save(frame, Some(frame), Some(checksum));
                    done.saves += 1;
                }
                GgrsRequest::LoadGameState { cell, frame } => {
                    let tag = cell.data().map(|d| *d);
                    if tag != Some(frame) {
                        return Err(NetError::FrameMismatch {
                            request: "load",
                            expected: self.runsync_frame(frame),
                            actual: tag.map_or(0, |t| self.runsync_frame(t)),
                        });
                    }
                    self.load(frame)?;
                    done.rollbacks += 1;
                    rolled_back = true;
                }
                GgrsRequest::AdvanceFrame { inputs } => {
                    self.advance(&inputs)?;
                    done.frames += 1;
                    if rolled_back && self.rt.frame_count() <= before {
                        done.resimulated += 1;
                    }
                }
            }
        }
        self.stats.resimulated += u64::from(done.resimulated);
        self.stats.deepest = self.stats.deepest.max(done.resimulated);
        Ok(done)
    }

    /// Saves the state of ggrs frame `frame` (the runtime must be at it) into the ring,
    /// and returns the world's [checksum](runsync::World::checksum). Allocates nothing
    /// once the ring's snapshots have the world's shape.
    ///
    /// # Errors
    /// [`NetError::FrameMismatch`] if the runtime is not at that frame;
    /// [`NetError::Snapshot`] if a type registered since the start cannot be snapshot.
    pub fn save(&mut self, frame: Frame) -> Result<u64, NetError> {
        self.save_tagged(frame).map(|sum| sum as u64)
    }

    /// [`save`](Self::save), returning the checksum ggrs compares: the world's checksum
    /// in the low 64 bits, and on a checked frame (see
    /// [`keep_checked_frames`](Self::keep_checked_frames)) the packed checksum parts in
    /// the high 64, whose snapshot is also kept.
    fn save_tagged(&mut self, frame: Frame) -> Result<u128, NetError> {
        // On a checked frame the parts are digested once, and the checksum is theirs.
        let checked = self.forensics.as_ref().is_some_and(|f| {
            frame >= 0 && frame % Frame::try_from(f.every).unwrap_or(Frame::MAX) == 0
        });
        let parts = checked.then(|| self.rt.checksum_parts());
        let of_parts = parts.as_deref().map(runsync::World::checksum_of_parts);
        let checksum = self.save_ring(frame, of_parts)?;
        let Some(f) = &mut self.forensics else {
            return Ok(u128::from(checksum));
        };
        if frame < 0 {
            return Ok(u128::from(checksum));
        }
        let t = Instant::now();
        let (every, window) = (
            Frame::try_from(f.every).unwrap_or(Frame::MAX),
            f.window as Frame,
        );
        let len = f.kept.len() as Frame;
        let place = |checked: Frame| (checked / every % len) as usize;
        if len > 0 {
            // The input resource holds what this frame ran with (set by `advance`, or
            // restored with the state it made): logged for the checked frame ahead if
            // this frame is in its window.
            let ahead = match frame % every {
                0 => frame,
                rem => (frame - rem).saturating_add(every),
            };
            let kept = &mut f.kept[place(ahead)];
            if ahead - frame < window && kept.from == Some(ahead - window) {
                let k = (frame - (ahead - window) - 1) as usize;
                if let Some(now) = self.rt.world().get_resource::<Input<PlayerInputs<I>>>() {
                    kept.inputs[k].clone_from(&now.0);
                    kept.logged |= 1 << k;
                }
            }
            // The state at the start of a checked frame's window.
            if frame.saturating_add(window) % every == 0 {
                let kept = &mut f.kept[place(frame + window)];
                kept.frame = None;
                kept.from = None;
                self.rt.snapshot_into(&mut kept.snapshot)?;
                kept.from = Some(frame);
                kept.logged = 0;
            }
        }
        if frame % every != 0 {
            self.stats.save_time += t.elapsed();
            return Ok(u128::from(checksum));
        }
        let parts = parts.unwrap_or_else(|| self.rt.checksum_parts());
        let high = crate::forensics::pack(&parts);
        if len > 0 {
            let kept = &mut f.kept[place(frame)];
            kept.frame = None;
            let all = u64::MAX >> (64 - window);
            if kept.from != Some(frame - window) || kept.logged != all {
                // No whole window before it: its own state.
                kept.from = None;
                self.rt.snapshot_into(&mut kept.snapshot)?;
            }
            kept.checksum = checksum;
            kept.parts.clear();
            kept.parts.extend_from_slice(&parts);
            kept.frame = Some(frame);
        }
        self.stats.save_time += t.elapsed();
        Ok(u128::from(high) << 64 | u128::from(checksum))
    }

    /// Into the ring: the snapshot and the checksum (`checksum` if the caller has it).
    fn save_ring(&mut self, frame: Frame, checksum: Option<u64>) -> Result<u64, NetError> {
        let t = Instant::now();
        let expected = self.runsync_frame(frame);
        if frame < 0 || self.rt.frame_count() != expected {
            return Err(NetError::FrameMismatch {
                request: "save",
                expected,
                actual: self.rt.frame_count(),
            });
        }
        let at = self.ring_index(frame);
        let saved = &mut self.ring[at];
        saved.frame = None;
        saved.checksum = match checksum {
            Some(c) => {
                self.rt.snapshot_into(&mut saved.snapshot)?;
                c
            }
            // Copy and digest at once, on the pool.
            None => self.rt.save_into(&mut saved.snapshot)?,
        };
        saved.frame = Some(frame);
        self.stats.saves += 1;
        self.stats.save_time += t.elapsed();
        Ok(saved.checksum)
    }

    /// Restores the state saved for ggrs frame `frame` (a rollback to it).
    ///
    /// # Errors
    /// [`NetError::FrameMismatch`] if the ring does not hold that frame (it was never
    /// saved, or a later one took its entry); [`NetError::Snapshot`] if the snapshot
    /// cannot be restored (a type registered since). The runtime is then unchanged.
    pub fn load(&mut self, frame: Frame) -> Result<(), NetError> {
        let t = Instant::now();
        let saved = &self.ring[self.ring_index(frame)];
        if frame < 0 || saved.frame != Some(frame) {
            return Err(NetError::FrameMismatch {
                request: "load",
                expected: self.runsync_frame(frame),
                actual: saved.frame.map_or(0, |f| self.runsync_frame(f)),
            });
        }
        self.rt.try_restore(&saved.snapshot)?;
        self.stats.rollbacks += 1;
        self.stats.load_time += t.elapsed();
        Ok(())
    }

    /// Runs one frame with `inputs` (one per player, in player order, as ggrs gives
    /// them): written in place into the [`PlayerInputs`] input resource, with a
    /// [disconnected](InputStatus::Disconnected) player's input set to `I::default()`.
    ///
    /// # Errors
    /// [`NetError::Frame`] if the frame failed.
    pub fn advance(&mut self, inputs: &[(I, InputStatus)]) -> Result<(), NetError> {
        let t = Instant::now();
        let world = self.rt.world_mut();
        match world.get_resource_mut::<Input<PlayerInputs<I>>>() {
            Some(input) => input.0.set_from_ggrs(inputs),
            None => {
                let mut fresh = PlayerInputs::empty(inputs.len());
                fresh.set_from_ggrs(inputs);
                world.set_input(fresh);
            }
        }
        if let Some(log) = &mut self.inputs {
            let frame = self.rt.frame_count().wrapping_sub(self.start) as Frame;
            let len = log.len() as Frame;
            let entry = &mut log[frame.rem_euclid(len) as usize];
            if let Some(now) = self.rt.world().get_resource::<Input<PlayerInputs<I>>>() {
                entry.0 = Some(frame);
                entry.1.clone_from(&now.0);
            }
        }
        let result = self.rt.try_frame();
        self.stats.frames += 1;
        self.stats.frame_time += t.elapsed();
        Ok(result?)
    }

    /// From now on, every `every`-th frame's saved checksum carries its
    /// [checksum parts](runsync::World::checksum_parts), packed, in the high 64 bits
    /// ggrs sends peers, and the last `keep` such frames can be run again (the state at
    /// the start of their window, the window's inputs): what a desync report reads. One
    /// place more than `keep` holds the window being filled.
    pub(crate) fn keep_checked_frames(&mut self, every: u32, keep: usize) {
        let (players, every) = (self.players, every.max(1));
        let window = every.min(WINDOW);
        let places = if keep == 0 { 0 } else { keep + 1 };
        self.forensics = Some(Forensics {
            every,
            window,
            kept: (0..places)
                .map(|_| Kept {
                    frame: None,
                    from: None,
                    snapshot: RuntimeSnapshot::new(),
                    inputs: (0..window).map(|_| PlayerInputs::empty(players)).collect(),
                    logged: 0,
                    checksum: 0,
                    parts: Vec::new(),
                })
                .collect(),
        });
    }

    /// The checksum parts of checked frame `frame`, if still kept.
    pub(crate) fn checked_parts(&self, frame: Frame) -> Option<&[(&'static str, u64)]> {
        let f = self.forensics.as_ref()?;
        f.kept
            .iter()
            .find(|k| k.frame == Some(frame))
            .map(|k| &k.parts[..])
    }

    /// Takes checked frame `frame` out of the kept ring for good (a fresh place takes
    /// its place), if still kept, with its state rebuilt by running its window again.
    ///
    /// # Errors
    /// As [`rerun`](Self::rerun); also [`NetError::SyncTestMismatch`] if the run again
    /// does not reach the checksum the frame had (a game that is not deterministic on
    /// this peer).
    pub(crate) fn take_checked_frame(
        &mut self,
        frame: Frame,
    ) -> Result<Option<CheckedFrame<I>>, NetError> {
        let Some(f) = self.forensics.as_mut() else {
            return Ok(None);
        };
        let Some(kept) = f.kept.iter_mut().find(|k| k.frame == Some(frame)) else {
            return Ok(None);
        };
        kept.frame = None;
        let snapshot = std::mem::take(&mut kept.snapshot);
        if kept.from.take().is_none() {
            return Ok(Some(CheckedFrame {
                window: None,
                at: snapshot,
            }));
        }
        let (inputs, checksum) = (kept.inputs.clone(), kept.checksum);
        let mut at = RuntimeSnapshot::new();
        let sum = self.rerun(&snapshot, &inputs, &[], Some(&mut at))?.0;
        if sum != checksum {
            return Err(NetError::SyncTestMismatch {
                frame: self.runsync_frame(frame),
                first: checksum,
                again: sum,
                difference: None,
            });
        }
        Ok(Some(CheckedFrame {
            window: Some((snapshot, inputs)),
            at,
        }))
    }

    /// Runs frames again, aside: from state `start`, one frame per entry of `inputs`,
    /// recording the write provenance of `watch` in each
    /// ([`Runtime::provenance`](runsync::Runtime::provenance)), and (with `into`) taking
    /// the last frame's state; then puts the runtime back where it was, bit for bit.
    /// Returns the last frame's checksum and the non-empty records, in frame order, then
    /// in the order of `watch`.
    ///
    /// # Errors
    /// [`NetError::Snapshot`] if a state cannot be taken or restored; [`NetError::Frame`]
    /// if a frame fails. The runtime is put back either way.
    pub(crate) fn rerun(
        &mut self,
        start: &RuntimeSnapshot,
        inputs: &[PlayerInputs<I>],
        watch: &[runsync::Entity],
        into: Option<&mut RuntimeSnapshot>,
    ) -> Result<(u64, Vec<runsync::Provenance>), NetError> {
        let mut now = RuntimeSnapshot::new();
        self.rt.snapshot_into(&mut now)?;
        let fresh: Vec<_> = watch
            .iter()
            .filter(|&&e| self.rt.provenance(e).is_none())
            .copied()
            .collect();
        let result = self.run_aside(start, inputs, watch, into);
        for &e in &fresh {
            self.rt.unwatch(e);
        }
        self.rt.try_restore(&now)?;
        result
    }

    fn run_aside(
        &mut self,
        start: &RuntimeSnapshot,
        inputs: &[PlayerInputs<I>],
        watch: &[runsync::Entity],
        into: Option<&mut RuntimeSnapshot>,
    ) -> Result<(u64, Vec<runsync::Provenance>), NetError> {
        self.rt.try_restore(start)?;
        for &e in watch {
            self.rt.watch(e);
        }
        let mut records = Vec::new();
        for each in inputs {
            self.rt.world_mut().set_input(each.clone());
            self.rt.try_frame()?;
            records.extend(
                watch
                    .iter()
                    .filter_map(|&e| self.rt.provenance(e))
                    .filter(|p| !p.is_empty())
                    .cloned(),
            );
        }
        if let Some(into) = into {
            self.rt.snapshot_into(into)?;
        }
        Ok((self.rt.checksum(), records))
    }

    /// From now on, keeps the inputs of the last frames run (more than the rollback
    /// window), for [`inputs_of`](Self::inputs_of).
    pub(crate) fn keep_inputs(&mut self) {
        let len = self.ring.len() + 2;
        self.inputs = Some(
            (0..len)
                .map(|_| (None, PlayerInputs::empty(self.players)))
                .collect(),
        );
    }

    /// The inputs ggrs frame `frame` last ran with (the frame from its state to the
    /// next), if kept ([`keep_inputs`](Self::keep_inputs)) and not yet overwritten.
    pub(crate) fn inputs_of(&self, frame: Frame) -> Option<&PlayerInputs<I>> {
        let log = self.inputs.as_ref()?;
        let (f, inputs) = &log[frame.rem_euclid(log.len() as Frame) as usize];
        (*f == Some(frame)).then_some(inputs)
    }

    /// The checksum saved for ggrs frame `frame`, if the ring still holds it.
    pub fn saved_checksum(&self, frame: Frame) -> Option<u64> {
        let saved = &self.ring[self.ring_index(frame)];
        (frame >= 0 && saved.frame == Some(frame)).then_some(saved.checksum)
    }

    /// The saved snapshot of ggrs frame `frame`, if the ring still holds it.
    pub fn saved_snapshot(&self, frame: Frame) -> Option<&RuntimeSnapshot> {
        let saved = &self.ring[self.ring_index(frame)];
        (frame >= 0 && saved.frame == Some(frame)).then_some(&saved.snapshot)
    }

    /// runsync's frame count for ggrs's frame `frame` (see [frame numbers](Rollback#frame-numbers)).
    pub fn runsync_frame(&self, frame: Frame) -> u64 {
        self.start.saturating_add_signed(i64::from(frame))
    }

    /// The runtime's frame count at ggrs's frame 0.
    pub fn start_frame(&self) -> u64 {
        self.start
    }

    /// The number of players.
    pub fn players(&self) -> usize {
        self.players
    }

    /// The number of snapshots in the ring (the rollback window plus one).
    pub fn ring_len(&self) -> usize {
        self.ring.len()
    }

    /// Counters and times since the start.
    pub fn stats(&self) -> &RollbackStats {
        &self.stats
    }

    /// The runtime: its world is the current (possibly predicted) frame's.
    pub fn runtime(&self) -> &Runtime {
        &self.rt
    }

    /// The runtime, for changes that are not game state (enabling a debug system, reading
    /// stats). Running frames or restoring by hand puts it out of step with ggrs (the next
    /// request then fails with [`NetError::FrameMismatch`]).
    pub fn runtime_mut(&mut self) -> &mut Runtime {
        &mut self.rt
    }

    /// The runtime back, at the current frame.
    pub fn into_runtime(self) -> Runtime {
        self.rt
    }

    /// Where ggrs frame `frame`'s entry is in the ring.
    fn ring_index(&self, frame: Frame) -> usize {
        frame.rem_euclid(self.ring.len() as Frame) as usize
    }
}
