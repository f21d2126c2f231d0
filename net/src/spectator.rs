//! A spectator: ggrs's [`SpectatorSession`] and a runtime that runs every frame a host
//! player forwards, without playing.
//!
//! See [`NetSpectator`] for what a tick does.

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use ggrs::{
    GgrsError, GgrsEvent, GgrsRequest, NetworkStats, NonBlockingSocket, SessionBuilder,
    SessionState, SpectatorSession,
};
use runsync::Runtime;

use crate::config::{Address, NetConfig};
use crate::error::NetError;
use crate::guard::{self, Guard, Rules, Shared};
use crate::input::NetInput;
use crate::input::PlayerInputs;
use crate::rollback::Rollback;
use crate::session::ConfirmedFrame;
use crate::session::NetEvent;
use crate::session::check_ready;

/// What a [`NetSpectator::tick`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpectatorTick {
    /// The handshake with the host is not done: no frame ran.
    Synchronizing,
    /// `frames` frames ran: 1, or up to the builder's
    /// [catch-up speed](NetSpectatorBuilder::catchup_speed) while the spectator is
    /// behind the inputs it received.
    Advanced {
        /// Frames run this tick.
        frames: u32,
    },
    /// No frame ran: the host's inputs for the next frame have not arrived.
    Waiting,
    /// No frame ran and none will: the host left, or dropped this spectator
    /// ([`NetEvent::Disconnected`] with the host's address was reported).
    Disconnected,
}

/// Counters of a [`NetSpectator`].
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct SpectatorStats {
    /// Ticks run.
    pub ticks: u64,
    /// Ticks before the handshake was done.
    pub synchronizing: u64,
    /// Ticks that ran no frame (the host's inputs not there yet, or the host gone).
    pub waited: u64,
    /// Frames run.
    pub frames: u64,
    /// Ticks that ran more than one frame, catching up.
    pub catchups: u64,
    /// Frames whose inputs arrived but that have not run yet, now.
    pub behind: u64,
    /// The most of [`behind`](Self::behind) seen after a tick.
    pub most_behind: u64,
    /// The host's input messages cut short or held back because ggrs's spectator
    /// buffer (60 frames past the last frame run) had no room for all of them yet: a
    /// spectator far behind the host. The host sends them again until they are
    /// acknowledged; nothing is lost.
    pub deferred: u64,
    /// Messages from the host's address dropped by the packet checks (see the crate's
    /// [wire format](crate#wire-format)): an honest host never sends one.
    pub rejected: u64,
    /// Messages from addresses other than the host's (dropped).
    pub strangers: u64,
    /// The last frame run ([`ConfirmedFrame`]), 0 before the first.
    pub confirmed: u64,
    /// Time spent running frames.
    pub frame_time: Duration,
}

/// Sets up a [`NetSpectator`]: the players, the host's address, the catch-up, the frame
/// rate and timeouts. Made by [`NetSpectator::builder`].
#[derive(Clone, Debug)]
pub struct NetSpectatorBuilder<A> {
    players: usize,
    host: A,
    catchup_speed: usize,
    max_frames_behind: usize,
    fps: usize,
    disconnect_timeout: Duration,
    disconnect_notify_delay: Duration,
    allow_unchecksummed: bool,
    keep_inputs: bool,
}

impl<A: Address> NetSpectatorBuilder<A> {
    /// A builder for watching a game of `players` players through the player at `host`
    /// (who added this spectator with [`NetSessionBuilder::spectator`](crate::NetSessionBuilder::spectator)):
    /// catch-up at 2 frames a tick beyond 10 frames behind, 60 fps, a disconnect after
    /// 2 s of silence (reported after 500 ms).
    pub fn new(players: usize, host: A) -> Self {
        NetSpectatorBuilder {
            players,
            host,
            catchup_speed: 2,
            max_frames_behind: 10,
            fps: 60,
            disconnect_timeout: Duration::from_millis(2000),
            disconnect_notify_delay: Duration::from_millis(500),
            allow_unchecksummed: false,
            keep_inputs: false,
        }
    }

    /// Frames a tick runs while the spectator is more than
    /// [`max_frames_behind`](Self::max_frames_behind) frames behind the inputs it
    /// received (default 2; 1 never catches up). At most 59 (ggrs's buffer).
    pub fn catchup_speed(mut self, frames: usize) -> Self {
        self.catchup_speed = frames;
        self
    }

    /// How far behind the inputs it received the spectator may run before it catches up
    /// (default 10 frames; 1 to 59).
    pub fn max_frames_behind(mut self, frames: usize) -> Self {
        self.max_frames_behind = frames;
        self
    }

    /// The frame rate the game ticks at (default 60), for ggrs's frame estimates.
    pub fn fps(mut self, fps: usize) -> Self {
        self.fps = fps;
        self
    }

    /// A host silent this long is disconnected (default 2 s). A host that dropped this
    /// spectator keeps answering it for 5 s, so that is seen 5 s plus this timeout
    /// later.
    pub fn disconnect_timeout(mut self, timeout: Duration) -> Self {
        self.disconnect_timeout = timeout;
        self
    }

    /// A host silent this long is reported [`NetEvent::Interrupted`] (default 500 ms).
    pub fn disconnect_notify_delay(mut self, delay: Duration) -> Self {
        self.disconnect_notify_delay = delay;
        self
    }

    /// Starts even if some registered types' values are not in the checksum, as
    /// [`NetSessionBuilder::allow_unchecksummed`](crate::NetSessionBuilder::allow_unchecksummed).
    pub fn allow_unchecksummed(mut self) -> Self {
        self.allow_unchecksummed = true;
        self
    }

    /// Keeps the inputs of the frames run, so that each frame's (every player's,
    /// confirmed) can be read as it comes out of
    /// [`confirmed_frames`](NetSpectator::confirmed_frames)
    /// ([`NetSpectator::confirmed_inputs`]): what a runtime that follows the match
    /// beside the spectator's needs (an inspector's, a recorder of one's own), as
    /// [`NetSessionBuilder::keep_confirmed_inputs`](crate::NetSessionBuilder::keep_confirmed_inputs)
    /// for a player. Costs a copy of a frame's inputs per frame, in reused memory; a
    /// frame's are dropped once a later call of `confirmed_frames` hands out later
    /// frames (so a spectator that never calls it keeps them all, as it keeps its
    /// [`ConfirmedFrame`]s).
    pub fn keep_confirmed_inputs(mut self) -> Self {
        self.keep_inputs = true;
        self
    }

    /// Starts watching: `rt` is the game at its start, as the players' runtimes were
    /// (same frame count), and `socket` reaches the host. The handshake runs in the
    /// first ticks ([`SpectatorTick::Synchronizing`]).
    ///
    /// # Errors
    /// - [`NetError::NotRollbackReady`]: types not opted into snapshots (as the
    ///   players' sessions refuse them, they cannot have started);
    /// - [`NetError::Unchecksummed`]: as [`NetSessionBuilder::start`](crate::NetSessionBuilder::start);
    /// - [`NetError::Ggrs`]: 0 players, a 0 frame rate, a catch-up speed of 0 or over
    ///   59, a `max_frames_behind` of 0 or over 59.
    pub fn start<I: NetInput>(
        self,
        rt: Runtime,
        socket: impl NonBlockingSocket<A> + 'static,
    ) -> Result<NetSpectator<I, A>, NetError> {
        check_ready(&rt, self.allow_unchecksummed)?;
        let invalid = |info: String| Err(NetError::Ggrs(GgrsError::InvalidRequest { info }));
        let buffer = guard::SPECTATOR_BUFFER as usize;
        if !(1..buffer).contains(&self.catchup_speed) {
            return invalid(format!(
                "the catch-up speed must be 1 to {} frames, got {}",
                buffer - 1,
                self.catchup_speed
            ));
        }
        // A spectator keeps no rollback window: a ring of one snapshot.
        let rollback = Rollback::new(rt, self.players, 0)?;
        let builder = SessionBuilder::<NetConfig<I, A>>::new()
            .with_num_players(self.players)?
            .with_fps(self.fps)?
            .with_max_frames_behind(self.max_frames_behind)?
            .with_catchup_speed(self.catchup_speed)?
            .with_disconnect_timeout(self.disconnect_timeout)
            .with_disconnect_notify_delay(self.disconnect_notify_delay);
        let rules = Rules {
            players: self.players,
            // Every value of a `NetInput` serializes to this many bytes.
            input_size: bincode::serialized_size(&I::default()).map_or(0, |n| n as usize),
            max_prediction: 0,
            // The host sends every player's input for each frame.
            remotes: HashMap::from([(self.host.clone(), self.players)]),
            locals: Vec::new(),
            spectators: Vec::new(),
            spectating: true,
        };
        let shared = Shared::new();
        let socket = Guard::new(socket, rules, shared.clone(), true);
        let session = builder.start_spectator_session(self.host.clone(), socket);
        Ok(NetSpectator {
            session,
            shared,
            rollback,
            host: self.host,
            fps: self.fps,
            events: Vec::new(),
            confirmed: Vec::new(),
            inputs: self.keep_inputs.then(InputLog::default),
            stats: SpectatorStats::default(),
            host_left: false,
            stopped: None,
        })
    }
}

/// A spectator of an online game: a [`Runtime`] run by ggrs's spectator session on the
/// inputs a host player forwards, every frame of which is final. It plays no input and
/// never rolls back: each frame runs once, with every player's confirmed input set as a
/// player's [`Rollback`] sets it ([`PlayerInputs`](crate::PlayerInputs)), so its
/// [`ConfirmedFrame`]s carry the same checksums as the players'.
///
/// # A tick
///
/// [`NetSpectator::tick`] receives the host's packets (checked as a player's are, see
/// the crate's [wire format](crate#wire-format)), then runs the next frame if its
/// inputs arrived: one frame a tick, or the builder's
/// [catch-up speed](NetSpectatorBuilder::catchup_speed) while more than
/// [`max_frames_behind`](NetSpectatorBuilder::max_frames_behind) frames behind what it
/// received. A spectator that stops ticking for a while catches up when it resumes; one
/// that stays away so long that the host holds more than 128 frames it has not
/// acknowledged (about 2 s at 60 fps), or is silent for the host's disconnect timeout,
/// is dropped by the host (the players go on) and hears of it as
/// [`NetEvent::Disconnected`] ([`SpectatorTick::Disconnected`] from then on).
///
/// # Following it
///
/// With [`keep_confirmed_inputs`](NetSpectatorBuilder::keep_confirmed_inputs), each
/// frame's inputs can be read as the frame comes out of
/// [`confirmed_frames`](NetSpectator::confirmed_frames)
/// ([`confirmed_inputs`](NetSpectator::confirmed_inputs)), so that a second runtime
/// of the game (an inspector's, say) runs the same frames to the same checksums, while
/// the spectator's own runtime is never paused or steered by it (`duel --spectate HOST
/// --inspect ADDR`).
///
/// # Example
/// ```no_run
/// use std::time::Instant;
/// use runsync::prelude::*;
/// use runsync_net::{NetSpectator, SpectatorTick, UdpTransport};
///
/// # fn my_game() -> Runtime { Runtime::builder().build(World::new()) }
/// let socket = UdpTransport::bind("0.0.0.0:7002").unwrap();
/// let host = "192.0.2.7:7000".parse().unwrap(); // its builder has .spectator(our address)
/// let mut watch = NetSpectator::builder(2, host).start::<u8>(my_game(), socket).unwrap();
/// let mut next = Instant::now();
/// while watch.tick().unwrap() != SpectatorTick::Disconnected {
///     for c in watch.confirmed_frames() {
///         println!("frame {} checksum {:016x}", c.frame, c.checksum);
///     }
///     // draw watch.world() ...
///     next += watch.recommended_interval();
///     std::thread::sleep(next.saturating_duration_since(Instant::now()));
/// }
/// ```
pub struct NetSpectator<I: NetInput, A: Address = SocketAddr> {
    session: SpectatorSession<NetConfig<I, A>>,
    /// What the packet checks in front of ggrs count, and the frames they measure from.
    shared: Arc<Shared<A>>,
    /// The runtime; its ring is only the start's snapshot (a spectator never rolls back).
    rollback: Rollback<I>,
    host: A,
    fps: usize,
    events: Vec<NetEvent<A>>,
    confirmed: Vec<ConfirmedFrame>,
    /// With [`NetSpectatorBuilder::keep_confirmed_inputs`]: the inputs of the frames run
    /// (see [`NetSpectator::confirmed_inputs`]).
    inputs: Option<InputLog<I>>,
    stats: SpectatorStats,
    /// The host was reported disconnected.
    host_left: bool,
    stopped: Option<NetError>,
}

/// The inputs each frame ran with, for [`NetSpectator::confirmed_inputs`]: from the
/// first frame the last [`NetSpectator::confirmed_frames`] handed out to the last frame
/// run, without a gap.
struct InputLog<I> {
    /// `(frame, inputs)`, oldest first: the state of `frame` was made by `inputs`.
    frames: VecDeque<(u64, PlayerInputs<I>)>,
    /// Entries dropped from `frames`, reused: a steady frame allocates nothing.
    spare: Vec<PlayerInputs<I>>,
}

impl<I> Default for InputLog<I> {
    fn default() -> Self {
        InputLog {
            frames: VecDeque::new(),
            spare: Vec::new(),
        }
    }
}

impl<I: NetInput, A: Address> std::fmt::Debug for NetSpectator<I, A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NetSpectator")
            .field("host", &self.host)
            .field("rollback", &self.rollback)
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

impl<A: Address> NetSpectator<(), A> {
    /// [`NetSpectatorBuilder::new`]: a builder for watching a game of `players` players
    /// through the player at `host`. (Named on `NetSpectator<()>` so that
    /// `NetSpectator::builder(2, host)` needs no type annotation: the input type comes
    /// with [`start`](NetSpectatorBuilder::start).)
    pub fn builder(players: usize, host: A) -> NetSpectatorBuilder<A> {
        NetSpectatorBuilder::new(players, host)
    }
}

impl<I: NetInput, A: Address> NetSpectator<I, A> {
    /// One tick: see [a tick](NetSpectator#a-tick).
    ///
    /// # Errors
    /// - [`NetError::Frame`]: a frame failed (a system, a merge or a hook panicked);
    /// - [`NetError::FrameMismatch`]: ggrs and the runtime disagree on the frame;
    /// - [`NetError::PeerPanic`]: ggrs panicked handling the host's packets (the game's
    ///   state is the one before the tick);
    /// - [`NetError::Ggrs`]: ggrs's spectator lost inputs it had not run
    ///   ([`GgrsError::SpectatorTooFarBehind`]: the packet checks keep that from
    ///   happening);
    /// - [`NetError::Stopped`]: an earlier error stopped the spectator.
    pub fn tick(&mut self) -> Result<SpectatorTick, NetError> {
        if let Some(e) = &self.stopped {
            return Err(NetError::Stopped(Box::new(e.clone())));
        }
        self.stats.ticks += 1;
        let tick = self
            .tick_steps()
            .inspect_err(|e| self.stopped = Some(e.clone()))?;
        match tick {
            SpectatorTick::Synchronizing => self.stats.synchronizing += 1,
            SpectatorTick::Advanced { frames } => {
                self.stats.frames += u64::from(frames);
                self.stats.catchups += u64::from(frames > 1);
            }
            SpectatorTick::Waiting | SpectatorTick::Disconnected => self.stats.waited += 1,
        }
        let behind = self.session.frames_behind_host() as u64;
        self.stats.behind = behind;
        self.stats.most_behind = self.stats.most_behind.max(behind);
        Ok(tick)
    }

    /// The steps of a [tick](NetSpectator#a-tick).
    fn tick_steps(&mut self) -> Result<SpectatorTick, NetError> {
        self.contained(|s| s.poll_remote_clients())?;
        self.take_events();
        if self.session.current_state() != SessionState::Running {
            return Ok(SpectatorTick::Synchronizing);
        }
        let advanced = self.contained(|s| s.advance_frame())?;
        self.take_events();
        let requests = match advanced {
            Ok(requests) => requests,
            Err(GgrsError::NotSynchronized) => return Ok(SpectatorTick::Synchronizing),
            Err(GgrsError::PredictionThreshold) if self.host_left => {
                return Ok(SpectatorTick::Disconnected);
            }
            Err(GgrsError::PredictionThreshold) => return Ok(SpectatorTick::Waiting),
            Err(e) => return Err(e.into()),
        };
        let mut frames = 0;
        for request in requests {
            match request {
                GgrsRequest::AdvanceFrame { inputs } => {
                    self.rollback.advance(&inputs)?;
                    frames += 1;
                    let rt = self.rollback.runtime();
                    let frame = rt.frame_count();
                    self.stats.confirmed = frame;
                    self.confirmed.push(ConfirmedFrame {
                        frame,
                        checksum: rt.checksum(),
                    });
                    if let Some(log) = &mut self.inputs {
                        // As `Rollback::advance` set them for the frame.
                        let mut kept = log.spare.pop().unwrap_or_default();
                        kept.set_from_ggrs(&inputs);
                        log.frames.push_back((frame, kept));
                    }
                }
                // A spectator session asks for nothing else; fulfilled all the same.
                other => {
                    self.rollback.handle(vec![other])?;
                }
            }
        }
        // ggrs's current frame is the last whose inputs ran: the state after it is one
        // frame on.
        let expected = self
            .rollback
            .runsync_frame(self.session.current_frame().saturating_add(1));
        let actual = self.rollback.runtime().frame_count();
        if actual != expected {
            return Err(NetError::FrameMismatch {
                request: "advance",
                expected,
                actual,
            });
        }
        Ok(if frames == 0 {
            SpectatorTick::Waiting
        } else {
            SpectatorTick::Advanced { frames }
        })
    }

    /// Runs `f` on ggrs's session with a panic inside it contained (as a
    /// [`NetSession`](crate::NetSession)'s), after telling the packet checks the
    /// spectator's frame and the last frame it received.
    fn contained<R>(
        &mut self,
        f: impl FnOnce(&mut SpectatorSession<NetConfig<I, A>>) -> R,
    ) -> Result<R, NetError> {
        let shared = Arc::clone(&self.shared);
        guard::contained(&self.shared, &mut self.session, move |s| {
            let frame = s.current_frame();
            let behind = i32::try_from(s.frames_behind_host()).unwrap_or(i32::MAX);
            shared.set_frame(frame);
            shared.set_received(frame.saturating_add(behind));
            f(s)
        })
    }

    /// Moves ggrs's events into ours. A spectator session reports only the host's
    /// handshake and connection.
    fn take_events(&mut self) {
        for e in self.session.events() {
            let event = match e {
                GgrsEvent::Synchronizing { addr, total, count } => NetEvent::Synchronizing {
                    peer: addr,
                    count,
                    total,
                },
                GgrsEvent::Synchronized { addr } => NetEvent::Synchronized { peer: addr },
                GgrsEvent::Disconnected { addr } => {
                    self.host_left = true;
                    NetEvent::Disconnected { peer: addr }
                }
                GgrsEvent::NetworkInterrupted {
                    addr,
                    disconnect_timeout,
                } => NetEvent::Interrupted {
                    peer: addr,
                    disconnect_in: Duration::from_millis(
                        u64::try_from(disconnect_timeout).unwrap_or(u64::MAX),
                    ),
                },
                GgrsEvent::NetworkResumed { addr } => NetEvent::Resumed { peer: addr },
                GgrsEvent::WaitRecommendation { .. } | GgrsEvent::DesyncDetected { .. } => {
                    continue;
                }
            };
            self.events.push(event);
        }
    }

    /// The events since the last call, oldest first (the host's handshake,
    /// interruptions, departure). The iterator owns them.
    pub fn events(&mut self) -> std::vec::IntoIter<NetEvent<A>> {
        std::mem::take(&mut self.events).into_iter()
    }

    /// The frames run since the last call, in order, each once, from the first on
    /// without a gap: every one is final, with the same checksum as the players'
    /// [`NetSession::confirmed_frames`](crate::NetSession::confirmed_frames) report for
    /// it. The iterator owns them.
    pub fn confirmed_frames(&mut self) -> std::vec::IntoIter<ConfirmedFrame> {
        // The inputs of the frames an earlier call handed out are no longer needed.
        if let (Some(log), Some(first)) = (&mut self.inputs, self.confirmed.first()) {
            while log.frames.front().is_some_and(|&(f, _)| f < first.frame) {
                if let Some((_, old)) = log.frames.pop_front() {
                    log.spare.push(old);
                }
            }
        }
        std::mem::take(&mut self.confirmed).into_iter()
    }

    /// The inputs (every player's, confirmed) that made the state of frame `frame`
    /// (runsync's number, as in [`ConfirmedFrame`]): run them on a runtime of the same
    /// game at frame `frame - 1` and it reaches that state, checksum and all, as with
    /// [`NetSession::confirmed_inputs`](crate::NetSession::confirmed_inputs). Kept with
    /// [`keep_confirmed_inputs`](NetSpectatorBuilder::keep_confirmed_inputs), from the
    /// frame's run until a later call of [`confirmed_frames`](Self::confirmed_frames)
    /// hands out later frames: read each as it comes out of `confirmed_frames`. `None`
    /// for a frame not run yet, no longer kept, or without `keep_confirmed_inputs`.
    ///
    /// A runtime of its own that follows the spectator this way (an inspector's) leaves
    /// the spectator's untouched: it cannot pause or steer it.
    ///
    /// ```no_run
    /// # use runsync::prelude::*;
    /// # use runsync_net::NetSpectator;
    /// # fn game() -> Runtime { Runtime::builder().build(World::new()) }
    /// # fn f(watch: &mut NetSpectator<u8>) {
    /// let mut follower = game(); // the same game, at the match's start
    /// watch.tick().unwrap();
    /// for c in watch.confirmed_frames() {
    ///     let inputs = watch.confirmed_inputs(c.frame).expect("kept").clone();
    ///     follower.frame_with(inputs);
    ///     assert_eq!(follower.world().checksum(), c.checksum);
    /// }
    /// # }
    /// ```
    pub fn confirmed_inputs(&self, frame: u64) -> Option<&PlayerInputs<I>> {
        let log = self.inputs.as_ref()?;
        let &(first, _) = log.frames.front()?;
        let at = usize::try_from(frame.checked_sub(first)?).ok()?;
        let (f, inputs) = log.frames.get(at)?;
        (*f == frame).then_some(inputs)
    }

    /// How long to wait until the next tick: one frame at the builder's rate.
    pub fn recommended_interval(&self) -> Duration {
        Duration::from_secs(1) / self.fps.max(1) as u32
    }

    /// Frames whose inputs arrived but that have not run yet.
    pub fn frames_behind(&self) -> u64 {
        self.session.frames_behind_host() as u64
    }

    /// Whether the handshake with the host is done.
    pub fn is_running(&self) -> bool {
        self.session.current_state() == SessionState::Running
    }

    /// The host's address.
    pub fn host(&self) -> &A {
        &self.host
    }

    /// ggrs's figures for the connection to the host: ping, frames behind.
    ///
    /// # Errors
    /// [`NetError::Ggrs`] before the handshake, or before a second of data.
    pub fn network_stats(&self) -> Result<NetworkStats, NetError> {
        Ok(self.session.network_stats()?)
    }

    /// The world after the last frame run (final: a spectator never predicts).
    pub fn world(&self) -> &runsync::World {
        self.rollback.runtime().world()
    }

    /// The runtime.
    pub fn runtime(&self) -> &Runtime {
        self.rollback.runtime()
    }

    /// The spectator's counters.
    pub fn stats(&self) -> SpectatorStats {
        SpectatorStats {
            rejected: self.shared.rejected(),
            strangers: self.shared.strangers(),
            deferred: self.shared.deferred(),
            frame_time: self.rollback.stats().frame_time,
            ..self.stats
        }
    }

    /// ggrs's session, for what this type does not wrap (read-only).
    pub fn ggrs(&self) -> &SpectatorSession<NetConfig<I, A>> {
        &self.session
    }

    /// The runtime back, at the last frame run; the spectator ends.
    pub fn into_runtime(self) -> Runtime {
        self.rollback.into_runtime()
    }
}
