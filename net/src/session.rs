//! A peer-to-peer session: ggrs's [`P2PSession`] and a [`Rollback`] runtime, ticked once
//! per display frame.
//!
//! See [`NetSession`] for what a tick does.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use ggrs::{
    DesyncDetection, Frame, GgrsError, GgrsEvent, NetworkStats, NonBlockingSocket, P2PSession,
    PlayerHandle, PlayerType, SessionBuilder, SessionState,
};
use runsync::{Replay, Runtime};

use crate::config::{Address, NetConfig};
use crate::error::NetError;
use crate::guard::{self, Guard, Rules, Shared};
use crate::input::NetInput;
use crate::input::PlayerInputs;
use crate::rollback::CheckedFrame;
use crate::rollback::Rollback;
use crate::rollback::RollbackStats;

/// Something that happened on the network, from [`NetSession::events`]. Frames are
/// runsync's numbers (the state after that many frames).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum NetEvent<A> {
    /// The handshake with `peer` made progress: `count` of `total` round trips done.
    Synchronizing {
        /// The peer.
        peer: A,
        /// Round trips done.
        count: u32,
        /// Round trips needed.
        total: u32,
    },
    /// The handshake with `peer` is done.
    Synchronized {
        /// The peer.
        peer: A,
    },
    /// No packet from `peer` for a while (the builder's `disconnect_notify_delay`): it
    /// is dropped in `disconnect_in` unless it is heard from again. Meanwhile the game
    /// runs on predictions until the rollback window is full, then waits
    /// ([`Tick::Waiting`]).
    Interrupted {
        /// The peer.
        peer: A,
        /// Time left before the peer is disconnected.
        disconnect_in: Duration,
    },
    /// `peer` is heard from again after [`NetEvent::Interrupted`].
    Resumed {
        /// The peer.
        peer: A,
    },
    /// `peer` left (it said so, or was silent for the disconnect timeout): its players'
    /// inputs are `Default` and not [connected](crate::PlayerInputs::is_connected) from
    /// the frame after their last input on, and the game goes on without them.
    Disconnected {
        /// The peer.
        peer: A,
    },
    /// This peer is `frames` frames ahead of the others: skip that many ticks (or run
    /// ticks slower, see [`NetSession::recommended_interval`]) to let them catch up.
    WaitRecommended {
        /// Frames to skip.
        frames: u32,
    },
    /// `peer`'s state after frame `frame` has another checksum than ours: the games
    /// differ (a non-deterministic system, a state outside the snapshot, other code, or
    /// a peer that sends what it likes). The session goes on; what to do (end the match,
    /// report it) is the game's choice.
    ///
    /// `types` names the component types (and resources, message types) whose values
    /// differ there, told by the peer's checksum alone; the state this peer had at that
    /// frame is [`NetSession::desync_snapshot`], and [`NetSession::desync_provenance`]
    /// names the systems that wrote an entity's values in the frames before it (see the
    /// crate docs' "Desync reports" for how to find the entities).
    Desync {
        /// The frame whose state differs.
        frame: u64,
        /// Our checksum as ggrs compares it: [`World::checksum`](runsync::World::checksum)
        /// in the low 64 bits, the frame's packed
        /// [checksum parts](runsync::World::checksum_parts) in the high 64.
        local: u128,
        /// The peer's, as it sent it.
        remote: u128,
        /// The parts whose digests differ: `"entities"` (entities spawned, despawned or
        /// stored differently), then type names, as
        /// [`World::checksum_parts`](runsync::World::checksum_parts) names them. Empty
        /// when the peer sent no parts (another build) or the digests do not tell.
        types: Vec<&'static str>,
        /// The peer.
        peer: A,
    },
}

/// A frame whose state is final: every player's input for it and before it is confirmed,
/// so every peer has the same state there (unless a [`NetEvent::Desync`] says
/// otherwise).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConfirmedFrame {
    /// The frame (runsync's number: the state after that many frames).
    pub frame: u64,
    /// The world's [checksum](runsync::World::checksum) there.
    pub checksum: u64,
}

/// What a [`NetSession::tick`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tick {
    /// The handshake with the peers is not done: no frame ran.
    Synchronizing,
    /// A new frame ran; `resimulated` frames were run again first (0 without a
    /// rollback).
    Advanced {
        /// Frames re-run after a rollback this tick.
        resimulated: u32,
    },
    /// No new frame ran: the game is as far ahead of the last confirmed frame as the
    /// rollback window allows (a slow or silent peer). A rollback may still have run
    /// (`resimulated`). The local input of this tick was not used.
    Waiting {
        /// Frames re-run after a rollback this tick.
        resimulated: u32,
    },
}

/// Counters of a [`NetSession`].
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct NetStats {
    /// Ticks run.
    pub ticks: u64,
    /// Ticks that ran a new frame.
    pub advanced: u64,
    /// Ticks that could not run a new frame ([`Tick::Waiting`]).
    pub waited: u64,
    /// Ticks before the handshake was done.
    pub synchronizing: u64,
    /// [`NetEvent::Desync`]s seen.
    pub desyncs: u64,
    /// Messages from a peer's address dropped before ggrs saw them, because ggrs would
    /// have crashed or been misled by them: a malformed or oversized input encoding,
    /// frames outside what ggrs's input queue and rollback window can hold (see the
    /// crate's [wire format](crate#wire-format)). An honest peer never sends one; a
    /// count that grows means a broken or hostile peer (or someone forging its address:
    /// give the transports a [`SessionKey`](crate::SessionKey)).
    pub rejected: u64,
    /// Messages from addresses that are no peer of the session (dropped).
    pub strangers: u64,
    /// The last frame known final ([`ConfirmedFrame`]), 0 before the first.
    pub confirmed: u64,
    /// Saves, rollbacks, re-runs and their times.
    pub rollback: RollbackStats,
}

/// Sets up a [`NetSession`]: the players (local and remote, by ggrs handle), the input
/// delay, the rollback window, the frame rate, desync detection and timeouts. Made by
/// [`NetSession::builder`].
#[derive(Clone, Debug)]
pub struct NetSessionBuilder<A> {
    players: usize,
    local: Vec<PlayerHandle>,
    remote: Vec<(PlayerHandle, A)>,
    spectators: Vec<A>,
    input_delay: usize,
    max_prediction: usize,
    fps: usize,
    desync_interval: u32,
    disconnect_timeout: Duration,
    disconnect_notify_delay: Duration,
    allow_unchecksummed: bool,
    check_packets: bool,
    record: bool,
    keep_inputs: bool,
    desync_snapshots: usize,
}

impl<A: Address> NetSessionBuilder<A> {
    /// A builder for a game of `players` players (ggrs handles `0..players`): input delay
    /// 2, rollback window 8, 60 fps, a checksum exchange every 10 frames, a disconnect
    /// after 2 s of silence (reported after 500 ms).
    pub fn new(players: usize) -> Self {
        NetSessionBuilder {
            players,
            local: Vec::new(),
            remote: Vec::new(),
            spectators: Vec::new(),
            input_delay: 2,
            max_prediction: 8,
            fps: 60,
            desync_interval: 10,
            disconnect_timeout: Duration::from_millis(2000),
            disconnect_notify_delay: Duration::from_millis(500),
            allow_unchecksummed: false,
            check_packets: true,
            record: false,
            keep_inputs: false,
            desync_snapshots: 2,
        }
    }

    /// Player `handle` plays on this machine.
    pub fn local_player(mut self, handle: PlayerHandle) -> Self {
        self.local.push(handle);
        self
    }

    /// Player `handle` plays on the peer at `addr`. Players at one address are one peer
    /// playing them all. Every peer of a match must be given the same player count and
    /// each player at one place; a peer set up otherwise is named when its inputs arrive
    /// ([`NetError::PeerSetup`]).
    pub fn remote_player(mut self, handle: PlayerHandle, addr: A) -> Self {
        self.remote.push((handle, addr));
        self
    }

    /// A spectator at `addr` ([`NetSpectator`](crate::NetSpectator)): this peer, its
    /// host, sends it every player's confirmed inputs, and it runs the game without
    /// playing. Spectators get ggrs handles from `players` on, in the order added (for
    /// [`NetSession::network_stats`] and [`NetSession::disconnect_player`]).
    ///
    /// The game starts once every player *and* spectator has done the handshake (ggrs
    /// waits for them all). After that a spectator never holds the players back: one
    /// that falls silent for the [disconnect timeout](Self::disconnect_timeout), or
    /// leaves more than 128 frames of inputs unacknowledged (about 2 s at 60 fps), is
    /// dropped ([`NetEvent::Disconnected`] with its address) and the game goes on. What a
    /// spectator may send is checked as a peer's is: no inputs, no checksum reports, no
    /// acknowledgement of a frame not yet sent.
    pub fn spectator(mut self, addr: A) -> Self {
        self.spectators.push(addr);
        self
    }

    /// Frames between a local input and the frame it applies to (default 2): each frame
    /// of delay hides one frame of latency from rollbacks, at the cost of feel.
    pub fn input_delay(mut self, frames: usize) -> Self {
        self.input_delay = frames;
        self
    }

    /// The most frames the game runs ahead of the last confirmed frame, and so the
    /// deepest rollback (default 8; 0 is lockstep: no prediction, no rollback). The ring
    /// holds one snapshot more than this.
    pub fn max_prediction(mut self, frames: usize) -> Self {
        self.max_prediction = frames;
        self
    }

    /// The frame rate the game ticks at (default 60), for ggrs's time sync.
    pub fn fps(mut self, fps: usize) -> Self {
        self.fps = fps;
        self
    }

    /// Peers exchange the checksum of every `frames`-th confirmed frame (default 10) and
    /// report a difference as [`NetEvent::Desync`].
    pub fn desync_interval(mut self, frames: u32) -> Self {
        self.desync_interval = frames;
        self
    }

    /// A peer silent this long is disconnected (default 2 s).
    ///
    /// A peer that *this* one disconnects is not told so at once: ggrs keeps the
    /// connection open 5 s more before it goes quiet. With two players, the other peer
    /// waits (ticks return [`Tick::Waiting`]) for those 5 s plus its own timeout, then
    /// disconnects this one and goes on.
    pub fn disconnect_timeout(mut self, timeout: Duration) -> Self {
        self.disconnect_timeout = timeout;
        self
    }

    /// A peer silent this long is reported [`NetEvent::Interrupted`] (default 500 ms).
    pub fn disconnect_notify_delay(mut self, delay: Duration) -> Self {
        self.disconnect_notify_delay = delay;
        self
    }

    /// Starts even if some registered types' values are not in the checksum
    /// ([`World::unchecksummed`](runsync::World::unchecksummed)); a desync in them then
    /// goes unseen. Without it, [`start`](Self::start) refuses such a game.
    pub fn allow_unchecksummed(mut self) -> Self {
        self.allow_unchecksummed = true;
        self
    }

    /// How many of the last checked frames (every
    /// [`desync_interval`](Self::desync_interval)-th) are kept for a desync report
    /// ([`NetSession::desync_snapshot`], [`NetSession::desync_provenance`]): the state at
    /// the start of the frames since the checked frame before (at most 64 frames) and
    /// their inputs. Default 2, 0 keeps none. Costs one snapshot every `desync_interval`
    /// frames, and the memory of `frames + 1` snapshots (one more for the frames being
    /// logged).
    pub fn desync_snapshots(mut self, frames: usize) -> Self {
        self.desync_snapshots = frames;
        self
    }

    /// Records the match as a runsync [`Replay`]: a save of the runtime at the start,
    /// then each frame as it becomes final ([`ConfirmedFrame`]) with every player's
    /// confirmed input and its checksum, in frame order, whatever was predicted and
    /// re-run on the way. [`NetSession::finish_replay`] writes it; any runtime of the
    /// same game plays it offline, at any worker count, with
    /// `Runtime::play_replay::<PlayerInputs<I>>`, to the same checksum at every frame
    /// (the [`confirmed_frames`](NetSession::confirmed_frames)' checksums).
    ///
    /// The game must be able to save (every component, resource and message type opted
    /// into saves, as for [`Runtime::save`]): [`start`](Self::start) reports the first
    /// that is not. The recording grows by a frame's inputs and checksum each frame; it
    /// has no keyframes (a replay that diverges reports the frame, not the values).
    pub fn record_replay(mut self) -> Self {
        self.record = true;
        self
    }

    /// Keeps the inputs of the last frames run, so that each frame's confirmed inputs can
    /// be read as it becomes final ([`NetSession::confirmed_inputs`]): what a runtime
    /// that follows the match needs (an inspector's, a recorder of one's own).
    /// [`record_replay`](Self::record_replay) keeps them too.
    pub fn keep_confirmed_inputs(mut self) -> Self {
        self.keep_inputs = true;
        self
    }

    /// Hands ggrs every message that decodes, unchecked: a test switch, for tests of what
    /// happens when something gets past the checks (a panic inside ggrs ends the session
    /// with [`NetError::PeerPanic`]). Never for a game: one hostile datagram then crashes
    /// ggrs.
    #[doc(hidden)]
    pub fn without_packet_checks(mut self) -> Self {
        self.check_packets = false;
        self
    }

    /// Starts the session on `rt` (at any frame: its frame count is the session's frame
    /// 0), exchanging packets through `socket`. Takes the first snapshot, so a type that
    /// cannot roll back is reported here, not at the first rollback. The handshake with
    /// the peers runs in the first ticks ([`Tick::Synchronizing`]).
    ///
    /// # Errors
    /// - [`NetError::NotRollbackReady`]: types, resources or message types not opted into
    ///   snapshots (all named, with the types the checksum does not see);
    /// - [`NetError::Unchecksummed`]: registered types a checksum cannot see (named),
    ///   unless [`allow_unchecksummed`](Self::allow_unchecksummed);
    /// - [`NetError::Save`]: with [`record_replay`](Self::record_replay), the game
    ///   cannot be saved (the type is named);
    /// - [`NetError::Ggrs`]: a bad player set-up (a handle twice or out of range, a
    ///   player missing: the message names the player and where it was given), a 0 frame
    ///   rate, a desync interval of 0 or over 2^20 frames, or
    ///   a rollback window and input delay too long for ggrs's input queue
    ///   (`2 × (max_prediction + input_delay)` over 119 frames).
    pub fn start<I: NetInput>(
        self,
        rt: Runtime,
        socket: impl NonBlockingSocket<A> + 'static,
    ) -> Result<NetSession<I, A>, NetError> {
        check_ready(&rt, self.allow_unchecksummed)?;
        let mut rollback = Rollback::new(rt, self.players, self.max_prediction)?;
        rollback.keep_checked_frames(self.desync_interval, self.desync_snapshots);
        if self.keep_inputs {
            rollback.keep_inputs();
        }
        let replay = if self.record {
            let mut start = Vec::new();
            rollback
                .runtime()
                .save(&mut start)
                .map_err(|e| NetError::Save(Arc::new(e)))?;
            rollback.keep_inputs();
            Some(Replay::new::<PlayerInputs<I>>(start))
        } else {
            None
        };
        let invalid = |info: String| Err(NetError::Ggrs(GgrsError::InvalidRequest { info }));
        if let Err(info) = crate::setup::check_players(self.players, &self.local, &self.remote) {
            return invalid(info);
        }
        if !(1..=1 << 20).contains(&self.desync_interval) {
            return invalid(format!(
                "the desync interval must be 1 to 2^20 frames, got {}",
                self.desync_interval
            ));
        }
        // The furthest ahead of this peer an honest peer's inputs run must stay inside
        // what the packet checks admit (ggrs's input queue, less the rollback window).
        let honest = 2 * (self.input_delay as i64) + self.max_prediction as i64 + 1;
        if honest > guard::frames_ahead(self.max_prediction) {
            return invalid(format!(
                "a rollback window of {} frames with an input delay of {} lets peers run \
                 further apart than ggrs's input queue holds; keep \
                 2 x (max_prediction + input_delay) at most 119 frames",
                self.max_prediction, self.input_delay
            ));
        }
        let mut b = SessionBuilder::<NetConfig<I, A>>::new()
            .with_num_players(self.players)?
            .with_input_delay(self.input_delay)
            .with_max_prediction_window(self.max_prediction)
            .with_fps(self.fps)?
            .with_desync_detection_mode(DesyncDetection::On {
                interval: self.desync_interval,
            })
            .with_disconnect_timeout(self.disconnect_timeout)
            .with_disconnect_notify_delay(self.disconnect_notify_delay);
        for &h in &self.local {
            b = b.add_player(PlayerType::Local, h)?;
        }
        let mut remotes = HashMap::new();
        let mut claims = HashMap::<A, Vec<PlayerHandle>>::new();
        for (h, addr) in self.remote {
            *remotes.entry(addr.clone()).or_insert(0) += 1;
            claims.entry(addr.clone()).or_default().push(h);
            b = b.add_player(PlayerType::Remote(addr), h)?;
        }
        for (i, addr) in self.spectators.iter().enumerate() {
            // ggrs makes one connection per address and kind: a second at the same
            // address would share its messages.
            if remotes.contains_key(addr) || self.spectators[..i].contains(addr) {
                return invalid(format!(
                    "the spectator at {addr:?} is already a player or a spectator"
                ));
            }
            b = b.add_player(PlayerType::Spectator(addr.clone()), self.players + i)?;
        }
        let rules = Rules {
            players: self.players,
            // Every value of a `NetInput` serializes to this many bytes.
            input_size: bincode::serialized_size(&I::default()).map_or(0, |n| n as usize),
            max_prediction: self.max_prediction,
            remotes,
            locals: self.local.clone(),
            spectators: self.spectators,
            spectating: false,
        };
        let shared = Shared::new();
        let socket =
            Guard::new(socket, rules, shared.clone(), self.check_packets).with_claims(claims);
        let session = b.start_p2p_session(socket)?;
        Ok(NetSession {
            session,
            shared,
            replay,
            desync_snapshots: Vec::new(),
            rollback,
            local: self.local,
            input_delay: self.input_delay,
            fps: self.fps,
            events: Vec::new(),
            confirmed: Vec::new(),
            reported: 0,
            stats: NetStats::default(),
            stopped: None,
        })
    }
}

/// The parts whose digests differ between two checksums of ggrs frame `frame` (see
/// `forensics.rs`): named by the kept frame's parts, or the world's now (the same names
/// while the game registers no new type).
fn differing_types<I: NetInput>(
    rollback: &Rollback<I>,
    frame: Frame,
    local: u128,
    remote: u128,
) -> Vec<&'static str> {
    let (ours, theirs) = ((local >> 64) as u64, (remote >> 64) as u64);
    if theirs == 0 {
        return Vec::new();
    }
    match rollback.checked_parts(frame) {
        Some(parts) => crate::forensics::differing(parts, ours, theirs),
        None => {
            let parts = rollback.runtime().world().checksum_parts();
            crate::forensics::differing(&parts, ours, theirs)
        }
    }
}

/// How many desync frames' states a session keeps for good
/// ([`NetSession::desync_snapshot`]).
pub const PINNED_DESYNCS: usize = 4;

/// Whether `rt`'s game can roll back: [`NetError::NotRollbackReady`] naming every type
/// a snapshot would refuse (and every type the checksum does not see, unless
/// `allow_unchecksummed`); else [`NetError::Unchecksummed`] naming every type the
/// checksum does not see, unless allowed.
pub(crate) fn check_ready(rt: &Runtime, allow_unchecksummed: bool) -> Result<(), NetError> {
    let unsnapshotted = rt.world().unsnapshotted();
    let unchecksummed = if allow_unchecksummed {
        Vec::new()
    } else {
        rt.world().unchecksummed()
    };
    match (unsnapshotted.is_empty(), unchecksummed.is_empty()) {
        (true, true) => Ok(()),
        (true, false) => Err(NetError::Unchecksummed {
            types: unchecksummed,
        }),
        (false, _) => Err(NetError::NotRollbackReady {
            unsnapshotted,
            unchecksummed,
        }),
    }
}

/// One peer of an online game: a [`Runtime`] run by ggrs's P2P session, with rollback,
/// desync detection and the checksum of every confirmed frame.
///
/// # A tick
///
/// [`NetSession::tick`] runs these steps, one function each:
/// 1. `poll`: receive packets, let ggrs answer them, turn its events into [`NetEvent`]s;
/// 2. `advance`: hand ggrs the local inputs and fulfil its requests (save, load,
///    advance) with the [`Rollback`];
/// 3. `confirm`: note the checksum of every frame that became final (all its inputs
///    confirmed, its state saved) as a [`ConfirmedFrame`].
///
/// Network trouble is never an error: a peer that stalls or leaves, a packet that is
/// garbage, a checksum that differs from a peer's are [`NetEvent`]s, and the local game
/// goes on (with a departed player's input `Default` and
/// [`is_connected`](crate::PlayerInputs::is_connected) false). Errors are for what stops
/// the session: a frame that failed, a runtime moved outside the session.
///
/// # Example
/// ```no_run
/// use std::time::{Duration, Instant};
/// use runsync::prelude::*;
/// use runsync_net::{NetEvent, NetSession, PlayerInputs, Tick, UdpTransport};
///
/// # fn my_game() -> Runtime { Runtime::builder().build(World::new()) }
/// # fn read_pad() -> u8 { 0 }
/// let socket = UdpTransport::bind("0.0.0.0:7000").unwrap();
/// let mut session = NetSession::builder(2)
///     .local_player(0)
///     .remote_player(1, "192.0.2.7:7000".parse().unwrap())
///     .start::<u8>(my_game(), socket)
///     .unwrap();                                   // names a type that cannot roll back
/// let mut next = Instant::now();
/// loop {
///     match session.tick(read_pad()).unwrap() {     // systems read PlayerInputs<u8>
///         Tick::Advanced { .. } | Tick::Waiting { .. } | Tick::Synchronizing => {}
///     }
///     for event in session.events() {
///         if let NetEvent::Desync { frame, .. } = event { eprintln!("desync at {frame}"); }
///     }
///     // draw session.world() ...
///     next += session.recommended_interval();
///     std::thread::sleep(next.saturating_duration_since(Instant::now()));
/// }
/// ```
pub struct NetSession<I: NetInput, A: Address = SocketAddr> {
    session: P2PSession<NetConfig<I, A>>,
    /// What the packet checks in front of ggrs count, and the frame they measure from.
    shared: Arc<Shared<A>>,
    /// The recording, with [`NetSessionBuilder::record_replay`].
    replay: Option<Replay>,
    /// The first desync frames, by runsync's number (see `pin_desync_snapshot`).
    desync_snapshots: Vec<(u64, CheckedFrame<I>)>,
    rollback: Rollback<I>,
    local: Vec<PlayerHandle>,
    input_delay: usize,
    fps: usize,
    events: Vec<NetEvent<A>>,
    confirmed: Vec<ConfirmedFrame>,
    /// The last ggrs frame reported confirmed.
    reported: Frame,
    stats: NetStats,
    stopped: Option<NetError>,
}

impl<I: NetInput, A: Address> std::fmt::Debug for NetSession<I, A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NetSession")
            .field("rollback", &self.rollback)
            .field("local", &self.local)
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

impl<A: Address> NetSession<(), A> {
    /// [`NetSessionBuilder::new`]: a builder for a game of `players` players. (Named on
    /// `NetSession<()>` so that `NetSession::builder(2)` needs no type annotation: the
    /// input type comes with [`start`](NetSessionBuilder::start).)
    pub fn builder(players: usize) -> NetSessionBuilder<A> {
        NetSessionBuilder::new(players)
    }
}

impl<I: NetInput, A: Address> NetSession<I, A> {
    /// One tick with `input` for the one local player: see [a tick](NetSession#a-tick).
    ///
    /// # Errors
    /// As [`tick_players`](Self::tick_players); [`NetError::Ggrs`] if the session does
    /// not have exactly one local player.
    pub fn tick(&mut self, input: I) -> Result<Tick, NetError> {
        match *self.local.as_slice() {
            [h] => self.tick_players(&[(h, input)]),
            _ => Err(NetError::Ggrs(GgrsError::InvalidRequest {
                info: format!(
                    "tick(input) is for a session with one local player; this one has {}: \
                     use tick_players",
                    self.local.len()
                ),
            })),
        }
    }

    /// One tick with an input for each local player: poll the network, run a frame (and
    /// the rollback ggrs asks for, if any), note the frames that became final.
    ///
    /// # Errors
    /// - [`NetError::Frame`]: a frame failed (a system, a merge or a hook panicked);
    /// - [`NetError::FrameMismatch`]: the runtime was moved outside the session;
    /// - [`NetError::PeerPanic`]: ggrs panicked handling a peer's packets (the peer is
    ///   named; the game's state is the one before the tick);
    /// - [`NetError::PeerSetup`]: a peer's messages show it set up for another game
    ///   (another player count, another input size, other players than it plays here:
    ///   two peers claiming one player); the peer and the difference are named, a
    ///   second or so after its first inputs arrive;
    /// - [`NetError::Ggrs`]: an input for a handle that is not local, or one missing;
    /// - [`NetError::Stopped`]: an earlier error of the first four kinds stopped the
    ///   session.
    pub fn tick_players(&mut self, inputs: &[(PlayerHandle, I)]) -> Result<Tick, NetError> {
        if let Some(e) = &self.stopped {
            return Err(NetError::Stopped(Box::new(e.clone())));
        }
        self.stats.ticks += 1;
        let tick = self.tick_steps(inputs).inspect_err(|e| {
            if matches!(
                e,
                NetError::Frame(_)
                    | NetError::FrameMismatch { .. }
                    | NetError::PeerPanic { .. }
                    | NetError::PeerSetup { .. }
            ) {
                self.stopped = Some(e.clone());
            }
        })?;
        match tick {
            Tick::Synchronizing => self.stats.synchronizing += 1,
            Tick::Advanced { .. } => self.stats.advanced += 1,
            Tick::Waiting { .. } => self.stats.waited += 1,
        }
        Ok(tick)
    }

    /// The steps of a [tick](NetSession#a-tick).
    fn tick_steps(&mut self, inputs: &[(PlayerHandle, I)]) -> Result<Tick, NetError> {
        self.poll()?;
        let tick = self.advance(inputs)?;
        self.take_events()?;
        self.confirm()?;
        Ok(tick)
    }

    /// Runs `f` on ggrs's session with a panic inside it contained: the packet checks
    /// keep out everything known to crash ggrs, and whatever else still does ends this
    /// session with [`NetError::PeerPanic`] naming the peers whose packets ggrs was
    /// handling, never the process. The runtime is not touched by `f`, so the game's
    /// state stays as it was.
    fn contained<R>(
        &mut self,
        f: impl FnOnce(&mut P2PSession<NetConfig<I, A>>) -> R,
    ) -> Result<R, NetError> {
        self.shared.set_frame(self.session.current_frame());
        guard::contained(&self.shared, &mut self.session, f)
    }

    /// Step 1: packets in and out, events.
    fn poll(&mut self) -> Result<(), NetError> {
        self.contained(|s| s.poll_remote_clients())?;
        self.take_events()?;
        let running = self.session.current_state() == SessionState::Running;
        match self.shared.setup.verdict(running) {
            Some((peer, mismatch)) => Err(NetError::PeerSetup {
                peer: format!("{peer:?}"),
                mismatch,
            }),
            None => Ok(()),
        }
    }

    /// Step 2: the local inputs to ggrs, its requests fulfilled.
    fn advance(&mut self, inputs: &[(PlayerHandle, I)]) -> Result<Tick, NetError> {
        if self.session.current_state() != SessionState::Running {
            return Ok(Tick::Synchronizing);
        }
        for &(h, input) in inputs {
            self.session.add_local_input(h, input)?;
        }
        let requests = match self.contained(|s| s.advance_frame())? {
            Ok(requests) => requests,
            Err(GgrsError::NotSynchronized) => return Ok(Tick::Synchronizing),
            Err(GgrsError::PredictionThreshold) => return Ok(Tick::Waiting { resimulated: 0 }),
            Err(e) => return Err(e.into()),
        };
        let before = self.rollback.runtime().frame_count();
        let done = self.rollback.handle(requests)?;
        Ok(if self.rollback.runtime().frame_count() > before {
            Tick::Advanced {
                resimulated: done.resimulated,
            }
        } else {
            Tick::Waiting {
                resimulated: done.resimulated,
            }
        })
    }

    /// Step 3: the frames that became final, with their saved checksums.
    fn confirm(&mut self) -> Result<(), NetError> {
        if self.session.current_state() != SessionState::Running {
            return Ok(());
        }
        // ggrs's confirmed frame is the last whose inputs all arrived; the state after
        // it (one frame on) is final once saved.
        let confirmed = self.contained(|s| s.confirmed_frame())?.saturating_add(1);
        let mut g = self.reported + 1;
        while g <= confirmed {
            let Some(checksum) = self.rollback.saved_checksum(g) else {
                break;
            };
            let frame = self.rollback.runsync_frame(g);
            if let Some(replay) = &mut self.replay {
                // The state after g frames was made by the inputs of frame g - 1.
                let inputs = self.rollback.inputs_of(g - 1);
                let pushed = match inputs {
                    Some(inputs) => replay.push_frame(Some(inputs), checksum),
                    None => Err(runsync::SaveError::Encode {
                        type_name: "the input",
                        message: format!("the inputs of frame {frame} were not kept"),
                    }),
                };
                pushed.map_err(|e| NetError::Save(Arc::new(e)))?;
            }
            self.confirmed.push(ConfirmedFrame { frame, checksum });
            self.stats.confirmed = frame;
            self.reported = g;
            g += 1;
        }
        Ok(())
    }

    /// Moves ggrs's events into ours, keeping the states of desync frames.
    ///
    /// # Errors
    /// [`NetError::SyncTestMismatch`] if a desync frame, run again from this peer's state
    /// before it, does not reach its checksum (this peer's game is not deterministic:
    /// the likely cause of the desync); the events are all taken first.
    fn take_events(&mut self) -> Result<(), NetError> {
        let events: Vec<_> = self.session.events().collect();
        let mut failed = Ok(());
        for e in events {
            let rollback = &self.rollback;
            let event = match e {
                GgrsEvent::Synchronizing { addr, total, count } => NetEvent::Synchronizing {
                    peer: addr,
                    count,
                    total,
                },
                GgrsEvent::Synchronized { addr } => NetEvent::Synchronized { peer: addr },
                GgrsEvent::Disconnected { addr } => NetEvent::Disconnected { peer: addr },
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
                GgrsEvent::WaitRecommendation { skip_frames } => NetEvent::WaitRecommended {
                    frames: skip_frames,
                },
                GgrsEvent::DesyncDetected {
                    frame,
                    local_checksum,
                    remote_checksum,
                    addr,
                } => {
                    self.stats.desyncs += 1;
                    let types = differing_types(rollback, frame, local_checksum, remote_checksum);
                    let frame = rollback.runsync_frame(frame);
                    if let (Err(e), Ok(())) = (self.pin_desync_snapshot(frame), &failed) {
                        failed = Err(e);
                    }
                    NetEvent::Desync {
                        frame,
                        local: local_checksum,
                        remote: remote_checksum,
                        types,
                        peer: addr,
                    }
                }
            };
            self.events.push(event);
        }
        failed
    }

    /// The state this peer had at frame `frame` (runsync's number) of a
    /// [`NetEvent::Desync`], kept for good for the first [`PINNED_DESYNCS`] desyncs.
    /// Restore it into a runtime of the same game to save it, or to compare it with the
    /// peer's ([`World::differences`](runsync::World::differences)); then
    /// [`desync_provenance`](Self::desync_provenance) tells which systems wrote the
    /// values that differ.
    pub fn desync_snapshot(&self, frame: u64) -> Option<&runsync::RuntimeSnapshot> {
        self.desync_snapshots
            .iter()
            .find(|(f, _)| *f == frame)
            .map(|(_, kept)| &kept.at)
    }

    /// Who wrote what to `entities` in desync frame `frame` (runsync's number, as
    /// [`NetEvent::Desync`] gives it): the frame is run again, aside, from this peer's
    /// state before it with the inputs it ran with, every one of `entities` watched
    /// ([`Runtime::watch`](runsync::Runtime::watch)); then the runtime is put back as it
    /// was. One [`Provenance`](runsync::Provenance) per entity, in order: for each of
    /// its component types the frame wrote, the systems that wrote it in merge order,
    /// with the values (for types opted in with
    /// [`World::debugging`](runsync::World::debugging)). Pass the entities whose values
    /// differ ([`World::differences`](runsync::World::differences) of the two peers'
    /// [`desync_snapshot`](Self::desync_snapshot)s): the systems that wrote a differing
    /// value last are where the two games parted. A component that differs but has no
    /// write here took its value from an earlier frame.
    ///
    /// `None` if this session did not keep the frame (not among the first
    /// [`PINNED_DESYNCS`] desyncs, or the session's first frame, which has no frame
    /// before it).
    ///
    /// # Errors
    /// [`NetError::Frame`] if the frame fails when run again; [`NetError::Snapshot`] if
    /// a state cannot be restored.
    pub fn desync_provenance(
        &mut self,
        frame: u64,
        entities: &[runsync::Entity],
    ) -> Option<Result<Vec<runsync::Provenance>, NetError>> {
        let (_, kept) = self.desync_snapshots.iter().find(|(f, _)| *f == frame)?;
        let (start, inputs) = kept.window.as_ref()?;
        Some(
            self.rollback
                .rerun(start, inputs, entities, None)
                .map(|(_, provenance)| provenance),
        )
    }

    /// Keeps desync frame `frame` (runsync's number) for good, if the checked frames
    /// still hold it: the first [`PINNED_DESYNCS`] desyncs stay readable however long
    /// the session goes on after them. Rebuilds its state by running it again.
    fn pin_desync_snapshot(&mut self, frame: u64) -> Result<(), NetError> {
        if self.desync_snapshots.len() >= PINNED_DESYNCS
            || self.desync_snapshots.iter().any(|(f, _)| *f == frame)
        {
            return Ok(());
        }
        let Some(g) = frame
            .checked_sub(self.rollback.start_frame())
            .and_then(|g| Frame::try_from(g).ok())
        else {
            return Ok(());
        };
        if let Some(kept) = self.rollback.take_checked_frame(g)? {
            self.desync_snapshots.push((frame, kept));
        }
        Ok(())
    }

    /// The events since the last call, oldest first. The iterator owns them: the
    /// session (its world, its stats) can be read, and even ticked, while it runs.
    pub fn events(&mut self) -> std::vec::IntoIter<NetEvent<A>> {
        std::mem::take(&mut self.events).into_iter()
    }

    /// The snapshot of confirmed frame `frame` (runsync's number, as in
    /// [`ConfirmedFrame`]) while the rollback ring still holds it (the last
    /// `max_prediction + 1` frames saved): the state every peer has there. To keep it,
    /// restore it into a runtime of the same game and save that:
    ///
    /// ```no_run
    /// # use runsync::prelude::*;
    /// # use runsync_net::NetSession;
    /// # fn game() -> Runtime { Runtime::builder().build(World::new()) }
    /// # fn f(session: &mut NetSession<u8>) -> Result<(), Box<dyn std::error::Error>> {
    /// let mut scratch = game();
    /// for c in session.confirmed_frames() {
    ///     if c.frame % 600 == 0 {
    ///         if let Some(snapshot) = session.confirmed_snapshot(c.frame) {
    ///             scratch.try_restore(snapshot)?;
    ///             let mut file = std::fs::File::create(format!("frame-{}.save", c.frame))?;
    ///             scratch.save(&mut file)?;
    ///         }
    ///     }
    /// }
    /// # Ok(()) }
    /// ```
    pub fn confirmed_snapshot(&self, frame: u64) -> Option<&runsync::RuntimeSnapshot> {
        let g = frame.checked_sub(self.rollback.start_frame())?;
        let g = Frame::try_from(g).ok()?;
        if g > self.reported {
            return None;
        }
        self.rollback.saved_snapshot(g)
    }

    /// The inputs (every player's, confirmed) that made the state of confirmed frame
    /// `frame` (runsync's number, as in [`ConfirmedFrame`]): run them on a runtime of the
    /// same game at frame `frame - 1` and it reaches that state, checksum and all. Kept
    /// with [`keep_confirmed_inputs`](NetSessionBuilder::keep_confirmed_inputs) (or
    /// [`record_replay`](NetSessionBuilder::record_replay)) for the last frames run: read
    /// each as it comes out of [`confirmed_frames`](Self::confirmed_frames).
    ///
    /// ```no_run
    /// # use runsync::prelude::*;
    /// # use runsync_net::NetSession;
    /// # fn game() -> Runtime { Runtime::builder().build(World::new()) }
    /// # fn f(session: &mut NetSession<u8>) {
    /// let mut follower = game(); // the same game, at the session's start
    /// for c in session.confirmed_frames() {
    ///     let inputs = session.confirmed_inputs(c.frame).expect("kept").clone();
    ///     follower.frame_with(inputs);
    ///     assert_eq!(follower.world().checksum(), c.checksum);
    /// }
    /// # }
    /// ```
    pub fn confirmed_inputs(&self, frame: u64) -> Option<&PlayerInputs<I>> {
        let g = Frame::try_from(frame.checked_sub(self.rollback.start_frame())?).ok()?;
        if g < 1 || g > self.reported {
            return None;
        }
        self.rollback.inputs_of(g - 1)
    }

    /// The replay recorded so far ([`NetSessionBuilder::record_replay`]): every final
    /// frame up to the last [`ConfirmedFrame`].
    pub fn replay(&self) -> Option<&Replay> {
        self.replay.as_ref()
    }

    /// Stops recording and writes the replay to `w`: every frame that became final
    /// (read it back with [`Replay::read`], play it with
    /// `Runtime::play_replay::<PlayerInputs<I>>`).
    ///
    /// # Errors
    /// [`NetError::Save`]: the session was not recording
    /// ([`SaveError::NotRecording`](runsync::SaveError::NotRecording)), or writing failed.
    pub fn finish_replay(&mut self, w: &mut impl std::io::Write) -> Result<(), NetError> {
        let replay = self
            .replay
            .take()
            .ok_or(NetError::Save(Arc::new(runsync::SaveError::NotRecording)))?;
        replay.write(w).map_err(|e| NetError::Save(Arc::new(e)))
    }

    /// The frames that became final since the last call, in order, each once: every
    /// frame from the first on, without a gap (a peer that compares them with another's
    /// list sees every frame).
    ///
    /// The iterator owns them, so the session can be read inside the loop (the world
    /// there is the current, possibly predicted, frame's; a confirmed frame's state is in
    /// [`Rollback::saved_snapshot`] while the ring holds it, and in the
    /// [replay](NetSessionBuilder::record_replay)).
    pub fn confirmed_frames(&mut self) -> std::vec::IntoIter<ConfirmedFrame> {
        std::mem::take(&mut self.confirmed).into_iter()
    }

    /// The frame an input passed to the next [`tick`](Self::tick) applies to (runsync's
    /// number: it is read by the systems of that frame), the input delay included. A
    /// tick that returns [`Tick::Waiting`] does not use its input, and the next tick's
    /// input applies to the same frame.
    pub fn input_frame(&self) -> u64 {
        let current = self.session.current_frame();
        self.rollback
            .runsync_frame(current)
            .saturating_add(self.input_delay as u64 + 1)
    }

    /// How long to wait until the next tick: one frame at the builder's rate, 10 % more
    /// while ggrs says this peer runs ahead of the others (how ggrs's own examples keep
    /// peers level).
    pub fn recommended_interval(&self) -> Duration {
        let frame = Duration::from_secs(1) / self.fps.max(1) as u32;
        if self.session.frames_ahead() > 0 {
            frame.mul_f64(1.1)
        } else {
            frame
        }
    }

    /// Frames this peer is estimated to be ahead of the others.
    pub fn frames_ahead(&self) -> i32 {
        self.session.frames_ahead()
    }

    /// Whether the handshake with every peer is done.
    pub fn is_running(&self) -> bool {
        self.session.current_state() == SessionState::Running
    }

    /// ggrs's figures for the connection to remote player `handle`: ping, send queue,
    /// bandwidth, frames behind.
    ///
    /// # Errors
    /// [`NetError::Ggrs`] for a handle that is not remote, or before a second of data.
    pub fn network_stats(&self, handle: PlayerHandle) -> Result<NetworkStats, NetError> {
        Ok(self.session.network_stats(handle)?)
    }

    /// Drops remote player `handle` (and the others at the same address) from the game:
    /// from then on their input is `Default` and not connected.
    ///
    /// # Errors
    /// [`NetError::Ggrs`] for a local or unknown handle.
    pub fn disconnect_player(&mut self, handle: PlayerHandle) -> Result<(), NetError> {
        Ok(self.session.disconnect_player(handle)?)
    }

    /// The world of the current frame (predicted, when remote inputs are late): what to
    /// draw.
    pub fn world(&self) -> &runsync::World {
        self.rollback.runtime().world()
    }

    /// The runtime (see [`Rollback::runtime`]).
    pub fn runtime(&self) -> &Runtime {
        self.rollback.runtime()
    }

    /// The rollback driver.
    pub fn rollback(&self) -> &Rollback<I> {
        &self.rollback
    }

    /// The session's counters.
    pub fn stats(&self) -> NetStats {
        NetStats {
            rollback: *self.rollback.stats(),
            rejected: self.shared.rejected(),
            strangers: self.shared.strangers(),
            ..self.stats
        }
    }

    /// ggrs's session, for what this type does not wrap (read-only).
    pub fn ggrs(&self) -> &P2PSession<NetConfig<I, A>> {
        &self.session
    }

    /// The runtime back, at the current (possibly predicted) frame; the session ends.
    pub fn into_runtime(self) -> Runtime {
        self.rollback.into_runtime()
    }
}
