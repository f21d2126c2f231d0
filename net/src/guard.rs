//! The checks in front of ggrs: every message a transport hands the session is read in
//! ggrs 0.13's wire layout and dropped (and counted) when ggrs would choke on it.
//!
//! ggrs trusts the content of what it receives. Its input decoding indexes past a
//! cut-short varint, allocates whatever length a run-length header claims, and its input
//! queue asserts that no more than 128 frames are held; a frame near `i32::MAX`
//! overflows, a disconnect reported for a frame before the rollback window asserts. Each
//! of those is a panic (or an abort, for the allocation) of the whole process on one
//! datagram. ggrs is neither patched nor copied: [`Guard`] wraps the session's socket,
//! reads each received message through its own mirror of the wire layout
//! ([`WireMessage`]) and passes on only what stays inside the bounds below, so ggrs sees
//! nothing it was not built for.
//!
//! The bounds (`frame` is the session's current ggrs frame):
//! - a message from an address that is not a remote peer: dropped (a stranger);
//! - `Input`: one connection status per player (fewer only on a disconnect request),
//!   each for a frame in `-1..=frame + ahead`; a player reported disconnected at a frame
//!   ggrs could not roll back to is refused; a start frame `>= 0`; the input bytes a
//!   complete run-length encoding (no cut varint, no varint over 64 bits, no literal past
//!   the end) decoding to at most [`MAX_INPUTS`] inputs of exactly the peer's input size,
//!   the last of them at most `frame + ahead`;
//! - `InputAck`: a frame `>= -1`; `ChecksumReport`: a frame in `0..=frame + ahead`;
//! - an `Input` that shows the peer set up for another game (another player count, input
//!   size, or other players than it plays here: see [`crate::setup`]) is refused, and
//!   noted for the session to stop on.
//!
//! A host's spectators only acknowledge, answer and keep alive: an `Input` or a
//! `ChecksumReport` from a spectator's address is refused (ggrs asserts that inputs come
//! from players only), an `InputAck` must be for a frame in `-1..=frame` (the host sent
//! nothing later). On a spectator, the host's `Input` carries every player's input per
//! frame and must start at most one frame after the last one received; ggrs's
//! spectator keeps inputs in a ring of [`SPECTATOR_BUFFER`] frames indexed by frame, so
//! inputs past `frame + SPECTATOR_BUFFER` would overwrite frames not yet run: they are
//! cut off (the host sends them again until they are acknowledged), never refused.
//!
//! `ahead` keeps ggrs's input queue (128 frames, counted from the confirmed frame, which
//! trails `frame` by at most the rollback window) from ever filling:
//! `ahead = 120 - max_prediction`. An honest peer is never further ahead than
//! `2 × input_delay + max_prediction + 1` frames, which the builder keeps below it.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use std::panic::{AssertUnwindSafe, catch_unwind};

use ggrs::{Message, NonBlockingSocket, PlayerHandle};
use serde::{Deserialize, Serialize};

use crate::config::Address;
use crate::error::NetError;
use crate::setup::{self, Claims, SetupMismatch, Watch};

/// ggrs's input queue holds at most this many frames per player (it asserts so).
const INPUT_QUEUE: i64 = 128;

/// Frames kept free at the end of ggrs's input queue, against off-by-ones between the
/// frame read before a poll and the queue's own count.
const QUEUE_MARGIN: i64 = 8;

/// The most inputs one packet carries: ggrs sends every input not yet acknowledged, and
/// disconnects a peer that leaves more than 128 unacknowledged (so 129 is the most an
/// honest peer sends, the packet before it gives up).
pub(crate) const MAX_INPUTS: usize = 129;

/// The frames of inputs ggrs 0.13's spectator session holds (its `SPECTATOR_BUFFER_SIZE`):
/// a ring indexed by `frame % 60`.
pub(crate) const SPECTATOR_BUFFER: i64 = 60;

/// The most frames ahead of this peer's current frame that an input or checksum report
/// may be, for a session with rollback window `max_prediction`.
pub(crate) fn frames_ahead(max_prediction: usize) -> i64 {
    INPUT_QUEUE - QUEUE_MARGIN - max_prediction as i64
}

/// ggrs 0.13's `Message` as it crosses the network (`bincode` with fixed-width integers:
/// a `u16` magic, a `u32` variant index, then the variant's fields in order). Mirrors the
/// layout only: the test `the_mirror_reads_and_writes_ggrs_messages_byte_for_byte` holds
/// it to ggrs's own serialization of every variant.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct WireMessage {
    magic: u16,
    body: WireBody,
}

/// ggrs's `MessageBody`, variant for variant, in its order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
enum WireBody {
    /// The random number to echo.
    SyncRequest(u32),
    /// The echoed number.
    SyncReply(u32),
    Input(WireInput),
    /// The last frame received.
    InputAck(i32),
    /// Frame advantage, ping.
    QualityReport(i16, u128),
    /// Pong.
    QualityReply(u128),
    /// Checksum, frame.
    ChecksumReport(u128, i32),
    KeepAlive,
}

/// ggrs's `Input` message.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct WireInput {
    /// Per player: disconnected, last frame.
    statuses: Vec<(bool, i32)>,
    disconnect_requested: bool,
    start_frame: i32,
    ack_frame: i32,
    /// The inputs from `start_frame` on: each a `u16` length and its bytes XOR the
    /// previous input's, all run-length encoded (bitfield-rle).
    bytes: Vec<u8>,
}

/// What the session and its [`Guard`] share: the frame the checks measure against, and
/// what they counted.
#[derive(Debug)]
pub(crate) struct Shared<A> {
    /// ggrs's current frame, set by the session before each call into ggrs.
    frame: AtomicI32,
    /// On a spectator: the last frame whose inputs arrived, set with `frame`.
    received: AtomicI32,
    rejected: AtomicU64,
    strangers: AtomicU64,
    /// On a spectator: the host's inputs held back for want of room in ggrs's buffer.
    deferred: AtomicU64,
    /// The peers whose messages the last receive handed to ggrs: whom a panic inside
    /// ggrs's handling names.
    delivered: Mutex<Vec<A>>,
    /// A peer set up for another game (see [`crate::setup`]).
    pub(crate) setup: Watch<A>,
}

impl<A: Address> Shared<A> {
    pub(crate) fn new() -> Arc<Self> {
        Arc::new(Shared {
            frame: AtomicI32::new(0),
            received: AtomicI32::new(-1),
            rejected: AtomicU64::new(0),
            strangers: AtomicU64::new(0),
            deferred: AtomicU64::new(0),
            delivered: Mutex::new(Vec::new()),
            setup: Watch::new(),
        })
    }

    pub(crate) fn set_frame(&self, frame: i32) {
        self.frame.store(frame, Ordering::Relaxed);
    }

    /// On a spectator: the last frame whose inputs ggrs received.
    pub(crate) fn set_received(&self, frame: i32) {
        self.received.store(frame, Ordering::Relaxed);
    }

    /// On a spectator: the host's `Input` messages cut short or held back because ggrs's
    /// buffer had no room for all of their frames yet.
    pub(crate) fn deferred(&self) -> u64 {
        self.deferred.load(Ordering::Relaxed)
    }

    /// Messages dropped by the checks.
    pub(crate) fn rejected(&self) -> u64 {
        self.rejected.load(Ordering::Relaxed)
    }

    /// Messages dropped for coming from an address that is no peer.
    pub(crate) fn strangers(&self) -> u64 {
        self.strangers.load(Ordering::Relaxed)
    }

    /// The peers whose messages the last receive passed on.
    pub(crate) fn delivered(&self) -> Vec<A> {
        self.delivered
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

/// What a message must fit: the session's shape.
#[derive(Clone, Debug)]
pub(crate) struct Rules<A> {
    /// Players in the game.
    pub(crate) players: usize,
    /// Bytes of one player's input (`bincode::serialized_size` of its default: every
    /// value of a `NetInput` has this size).
    pub(crate) input_size: usize,
    /// ggrs's rollback window.
    pub(crate) max_prediction: usize,
    /// Each remote peer's address and how many players it plays.
    pub(crate) remotes: HashMap<A, usize>,
    /// The players of this peer.
    pub(crate) locals: Vec<PlayerHandle>,
    /// A host's spectators: they send no inputs.
    pub(crate) spectators: Vec<A>,
    /// This peer is a spectator: its one remote is the host, which sends every player's
    /// inputs, and `frame` is the spectator's.
    pub(crate) spectating: bool,
}

/// What the checks make of a message.
enum Verdict {
    /// Passed to ggrs as it is.
    Pass,
    /// Passed to ggrs as this message instead: a host's input to a spectator, cut to what
    /// ggrs's buffer has room for.
    Cut(Message),
    /// Dropped uncounted: a host's input of which ggrs's buffer has room for nothing yet
    /// (the host sends it again until acknowledged).
    Later,
    /// Dropped and counted.
    Reject,
}

/// Runs `f` on ggrs's `session` with a panic inside it contained: the packet checks keep
/// out everything known to crash ggrs, and whatever else still does becomes
/// [`NetError::PeerPanic`] naming the peers whose packets ggrs was handling (the
/// messages `shared`'s guard last passed on), never a panic of the process. The caller's
/// runtime is not touched by `f`, so the game's state stays as it was.
pub(crate) fn contained<S, R, A: Address>(
    shared: &Shared<A>,
    session: &mut S,
    f: impl FnOnce(&mut S) -> R,
) -> Result<R, NetError> {
    catch_unwind(AssertUnwindSafe(|| f(session))).map_err(|payload| {
        let message = payload
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic without a message".to_owned());
        let peers = shared.delivered();
        NetError::PeerPanic {
            peers: peers.iter().map(|a| format!("{a:?}")).collect(),
            message,
        }
    })
}

/// The session's socket, with the checks in front of its receive.
pub(crate) struct Guard<S, A> {
    inner: S,
    rules: Rules<A>,
    shared: Arc<Shared<A>>,
    /// Off only for tests of what happens when something gets past the checks.
    enabled: bool,
    /// The decoded input bytes of the message being checked (kept for its capacity).
    scratch: Vec<u8>,
    /// The players each peer plays, and the messages that showed another set-up.
    claims: Claims<A>,
}

impl<S, A: Address> Guard<S, A> {
    pub(crate) fn new(inner: S, rules: Rules<A>, shared: Arc<Shared<A>>, enabled: bool) -> Self {
        Guard {
            inner,
            rules,
            shared,
            enabled,
            scratch: Vec::new(),
            claims: Claims::default(),
        }
    }

    /// Whether `msg` from `from` may go to ggrs, and in what form (`frame` and
    /// `received` as [`Shared`] holds them).
    fn admit(&mut self, from: &A, msg: &Message, frame: i32, received: i32) -> Verdict {
        let spectator = self.rules.spectators.contains(from);
        let handles = match self.rules.remotes.get(from) {
            Some(&handles) => handles,
            None if spectator => 0,
            None => {
                self.shared.strangers.fetch_add(1, Ordering::Relaxed);
                return Verdict::Reject;
            }
        };
        if !self.enabled {
            return Verdict::Pass;
        }
        let frame = i64::from(frame);
        let wire = bincode::serialize(msg)
            .ok()
            .and_then(|bytes| bincode::deserialize::<WireMessage>(&bytes).ok());
        let verdict = match wire {
            None => Verdict::Reject,
            Some(wire) if spectator => pass_if(spectator_fits(&wire.body, frame)),
            Some(wire) if self.rules.spectating => self.host_fits(wire, frame, received.into()),
            Some(wire) => {
                let ok = self.fits(&wire.body, handles, frame);
                pass_if(self.setup_fits(from, &wire.body, handles, ok))
            }
        };
        match verdict {
            Verdict::Reject => {
                self.shared.rejected.fetch_add(1, Ordering::Relaxed);
            }
            Verdict::Cut(_) | Verdict::Later => {
                self.shared.deferred.fetch_add(1, Ordering::Relaxed);
            }
            Verdict::Pass => {}
        }
        verdict
    }

    /// On a spectator: whether the host's message fits, cut to what ggrs's buffer holds.
    fn host_fits(&mut self, mut wire: WireMessage, frame: i64, received: i64) -> Verdict {
        let input = match &mut wire.body {
            WireBody::Input(input) => input,
            WireBody::InputAck(ack) => return pass_if(*ack >= -1),
            // The spectator's link to the host runs without desync detection, where ggrs
            // asserts that no report comes; an honest host sends spectators none.
            WireBody::ChecksumReport(..) => return Verdict::Reject,
            WireBody::QualityReply(pong) => return pass_if(round_trip_fits(*pong)),
            WireBody::SyncRequest(_)
            | WireBody::SyncReply(_)
            | WireBody::QualityReport(..)
            | WireBody::KeepAlive => return Verdict::Pass,
        };
        let r = &self.rules;
        let statuses_fit = if input.disconnect_requested {
            input.statuses.len() <= r.players
        } else {
            input.statuses.len() == r.players
        };
        // The host sends from the frame after the last one the spectator acknowledged,
        // which is at most the last one it received: a later start would leave a gap
        // (ggrs decodes a first message against a blank input, whatever its start).
        // Status frames are only compared by a spectator, never counted with.
        if !statuses_fit
            || input.statuses.iter().any(|&(_, last)| last < -1)
            || input.start_frame < 0
            || i64::from(input.start_frame) > received + 1
            || input.ack_frame < -1
        {
            return Verdict::Reject;
        }
        let frame_bytes = r.players * r.input_size;
        let limit = MAX_INPUTS * (2 + frame_bytes);
        if run_length_decode(&input.bytes, limit, &mut self.scratch).is_none() {
            return Verdict::Reject;
        }
        let Some(count) = count_inputs(&self.scratch, frame_bytes) else {
            return Verdict::Reject;
        };
        // ggrs stores input `f` at `f % SPECTATOR_BUFFER`: the frames not yet run,
        // `frame + 1..=frame + SPECTATOR_BUFFER`, fill the ring; one more would overwrite
        // the next frame to run (and end the session, too far behind).
        let room = frame + SPECTATOR_BUFFER - i64::from(input.start_frame) + 1;
        if count as i64 <= room {
            return Verdict::Pass;
        }
        if room <= 0 {
            return Verdict::Later;
        }
        self.scratch.truncate(room as usize * (2 + frame_bytes));
        input.bytes = run_length_literal(&self.scratch);
        bincode::serialize(&wire)
            .ok()
            .and_then(|bytes| bincode::deserialize::<Message>(&bytes).ok())
            .map_or(Verdict::Reject, Verdict::Cut)
    }

    fn fits(&mut self, body: &WireBody, handles: usize, frame: i64) -> bool {
        let ahead = frame + frames_ahead(self.rules.max_prediction);
        match body {
            WireBody::Input(input) => self.input_fits(input, handles, frame, ahead),
            WireBody::InputAck(ack) => *ack >= -1,
            WireBody::ChecksumReport(_, f) => (0..=ahead).contains(&i64::from(*f)),
            WireBody::QualityReply(pong) => round_trip_fits(*pong),
            WireBody::SyncRequest(_)
            | WireBody::SyncReply(_)
            | WireBody::QualityReport(..)
            | WireBody::KeepAlive => true,
        }
    }

    fn input_fits(&mut self, input: &WireInput, handles: usize, frame: i64, ahead: i64) -> bool {
        let r = &self.rules;
        let statuses_fit = if input.disconnect_requested {
            input.statuses.len() <= r.players
        } else {
            input.statuses.len() == r.players
        };
        // ggrs rolls back to the frame after a reported disconnect: one before its
        // window is an assertion.
        let oldest = frame - r.max_prediction as i64 - 1;
        let status_fits = |(h, &(disconnected, last)): (usize, &(bool, i32))| {
            let last = i64::from(last);
            (-1..=ahead).contains(&last)
                && !(disconnected && !r.locals.contains(&h) && last < oldest)
        };
        if !statuses_fit
            || !input.statuses.iter().enumerate().all(status_fits)
            || input.start_frame < 0
            || input.ack_frame < -1
        {
            return false;
        }
        let frame_bytes = handles * r.input_size;
        let limit = MAX_INPUTS * (2 + frame_bytes);
        if run_length_decode(&input.bytes, limit, &mut self.scratch).is_none() {
            return false;
        }
        let Some(count) = count_inputs(&self.scratch, frame_bytes) else {
            return false;
        };
        count == 0 || i64::from(input.start_frame) + count as i64 - 1 <= ahead
    }
}

impl<S: NonBlockingSocket<A>, A: Address> NonBlockingSocket<A> for Guard<S, A> {
    fn send_to(&mut self, msg: &Message, addr: &A) {
        self.inner.send_to(msg, addr);
    }

    fn receive_all_messages(&mut self) -> Vec<(A, Message)> {
        let frame = self.shared.frame.load(Ordering::Relaxed);
        let received = self.shared.received.load(Ordering::Relaxed);
        let messages: Vec<(A, Message)> = self
            .inner
            .receive_all_messages()
            .into_iter()
            .filter_map(
                |(from, msg)| match self.admit(&from, &msg, frame, received) {
                    Verdict::Pass => Some((from, msg)),
                    Verdict::Cut(cut) => Some((from, cut)),
                    Verdict::Later | Verdict::Reject => None,
                },
            )
            .collect();
        let mut delivered = self
            .shared
            .delivered
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        delivered.clear();
        for (from, _) in &messages {
            if !delivered.contains(from) {
                delivered.push(from.clone());
            }
        }
        messages
    }
}

/// [`Verdict::Pass`] if `ok`, else [`Verdict::Reject`].
fn pass_if(ok: bool) -> Verdict {
    if ok { Verdict::Pass } else { Verdict::Reject }
}

/// On a host: whether a spectator's message fits. A spectator acknowledges the inputs
/// the host sent (so none past the host's current frame `frame`), answers and sends
/// handshakes, quality reports and keep-alives; never inputs (ggrs asserts that inputs
/// come from players) nor checksum reports.
fn spectator_fits(body: &WireBody, frame: i64) -> bool {
    match body {
        WireBody::InputAck(ack) => (-1..=frame).contains(&i64::from(*ack)),
        WireBody::Input(_) | WireBody::ChecksumReport(..) => false,
        WireBody::SyncRequest(_)
        | WireBody::SyncReply(_)
        | WireBody::QualityReport(..)
        | WireBody::QualityReply(_)
        | WireBody::KeepAlive => true,
    }
}

/// The longest round trip a quality reply may show, in milliseconds.
const MAX_ROUND_TRIP_MS: u128 = 60_000;

/// Whether a quality reply's `pong` (the clock, in ms since the epoch, when this end sent
/// the report it answers) shows a round trip ggrs can count with: it takes the time since
/// as the round trip, and multiplies half of it (an `i32`, saturated) by the frame rate
/// with each input received, which overflows (a panic in debug builds) for a pong far in
/// the past, such as 0. A pong in the future reads as a round trip of 0 (ggrs allows for
/// a clock stepped back).
fn round_trip_fits(pong: u128) -> bool {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    now.saturating_sub(pong) <= MAX_ROUND_TRIP_MS
}

/// `raw` run-length encoded as bitfield-rle decodes it: one literal run (a varint
/// header `len << 1`, then the bytes).
fn run_length_literal(raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(raw.len() + 10);
    let mut header = (raw.len() as u64) << 1;
    while header > 127 {
        out.push((header as u8) | 0x80);
        header >>= 7;
    }
    out.push(header as u8);
    out.extend_from_slice(raw);
    out
}

impl<S, A: Address> Guard<S, A> {
    /// Checks that each peer's `Input` messages show it playing the players `claims` has
    /// at its address.
    pub(crate) fn with_claims(mut self, claims: HashMap<A, Vec<PlayerHandle>>) -> Self {
        self.claims = Claims::new(claims);
        self
    }

    /// The set-up checks of a peer's message (see [`crate::setup`]): an `Input` that
    /// passed the other checks (`ok`, its inputs decoded in `scratch`) must show the peer
    /// playing the players it plays here; what a refused one shows of another set-up
    /// (another player count, input size or number of players) is noted. Whether the
    /// message may go to ggrs.
    fn setup_fits(&mut self, from: &A, body: &WireBody, handles: usize, ok: bool) -> bool {
        let WireBody::Input(input) = body else {
            return ok;
        };
        let r = &self.rules;
        let seen = if ok {
            let count = self.scratch.len() / (2 + handles * r.input_size);
            let last = i64::from(input.start_frame) + count as i64 - 1;
            match self.claims.of(from) {
                Some(claimed) if count > 0 && !input.disconnect_requested => {
                    setup::check_claims(&input.statuses, last, claimed, &r.locals).err()
                }
                _ => None,
            }
        } else if !input.disconnect_requested && input.statuses.len() != r.players {
            Some(SetupMismatch::PlayerCount {
                theirs: input.statuses.len(),
                ours: r.players,
            })
        } else {
            // Decoded again (a refused message only), with room for every player's input.
            let mut decoded = Vec::new();
            let limit = MAX_INPUTS * (2 + r.players * r.input_size);
            run_length_decode(&input.bytes, limit, &mut decoded)
                .and_then(|()| decoded.first_chunk::<2>().copied())
                .map(|len| usize::from(u16::from_le_bytes(len)))
                .filter(|&len| len != handles * r.input_size)
                .map(|len| setup::other_input_size(len, r.input_size, self.claims.of(from)))
        };
        match seen {
            None => ok,
            Some(mismatch) => {
                self.claims.note(from, mismatch, &self.shared.setup);
                false
            }
        }
    }
}

/// A LEB128 varint at `*pos` (advanced past it), as bitfield-rle reads its run headers,
/// or `None` where bitfield-rle would panic: cut short, or beyond 64 bits (its reader
/// multiplies the tenth byte by 2^63, overflowing for anything above 1).
fn varint(data: &[u8], pos: &mut usize) -> Option<u64> {
    let mut value = 0u64;
    for k in 0..10 {
        let byte = *data.get(*pos)?;
        *pos += 1;
        let bits = u64::from(byte & 0x7f);
        if k == 9 && bits > 1 {
            return None;
        }
        value |= bits << (7 * k);
        if byte & 0x80 == 0 {
            return Some(value);
        }
    }
    None
}

/// bitfield-rle's decoding of `data` into `out`, or `None` where it would panic or decode
/// more than `limit` bytes. Each run is a varint header: odd, a run of `header >> 2`
/// bytes, all 0xff if bit 1 is set, else 0; even, `header >> 1` literal bytes that follow.
fn run_length_decode(data: &[u8], limit: usize, out: &mut Vec<u8>) -> Option<()> {
    out.clear();
    let mut pos = 0;
    while pos < data.len() {
        let header = varint(data, &mut pos)?;
        let room = limit - out.len();
        if header & 1 == 1 {
            let len = usize::try_from(header >> 2).ok().filter(|&l| l <= room)?;
            let byte = if header & 2 != 0 { 0xff } else { 0 };
            out.resize(out.len() + len, byte);
        } else {
            let len = usize::try_from(header >> 1).ok().filter(|&l| l <= room)?;
            let end = pos.checked_add(len).filter(|&e| e <= data.len())?;
            out.extend_from_slice(&data[pos..end]);
            pos = end;
        }
    }
    Some(())
}

/// How many inputs ggrs's delta encoding in `decoded` holds, each a `u16` length that
/// must be `frame_bytes` and that many bytes; `None` for anything else or more than
/// [`MAX_INPUTS`].
fn count_inputs(decoded: &[u8], frame_bytes: usize) -> Option<usize> {
    let mut rest = decoded;
    let mut count = 0;
    while let Some((len, tail)) = rest.split_first_chunk::<2>() {
        if usize::from(u16::from_le_bytes(*len)) != frame_bytes || tail.len() < frame_bytes {
            return None;
        }
        rest = &tail[frame_bytes..];
        count += 1;
    }
    (rest.is_empty() && count <= MAX_INPUTS).then_some(count)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ggrs_bytes(wire: &WireMessage) -> Vec<u8> {
        bincode::serialize(wire).unwrap()
    }

    #[test]
    fn the_mirror_reads_and_writes_ggrs_messages_byte_for_byte() {
        let input = WireInput {
            statuses: vec![(false, 3), (true, -1)],
            disconnect_requested: false,
            start_frame: 4,
            ack_frame: 2,
            bytes: vec![4, 1, 0, 9],
        };
        let bodies = [
            WireBody::SyncRequest(0xdead_beef),
            WireBody::SyncReply(7),
            WireBody::Input(input),
            WireBody::InputAck(-1),
            WireBody::QualityReport(-3, 1 << 100),
            WireBody::QualityReply(12),
            WireBody::ChecksumReport(u128::MAX - 5, 40),
            WireBody::KeepAlive,
        ];
        // What ggrs's Debug form shows of each: the mirror's fields mean what ggrs's do.
        let shows: [&[&str]; 8] = [
            &["SyncRequest", "random_request: 3735928559"],
            &["SyncReply", "random_reply: 7"],
            &[
                "Input",
                "disconnected: false, last_frame: 3",
                "disconnected: true, last_frame: -1",
                "disconnect_requested: false",
                "start_frame: 4",
                "ack_frame: 2",
                "bytes: 0x04010009",
            ],
            &["InputAck", "ack_frame: -1"],
            &[
                "QualityReport",
                "frame_advantage: -3",
                "ping: 1267650600228229401496703205376",
            ],
            &["QualityReply", "pong: 12"],
            &[
                "ChecksumReport",
                "checksum: 340282366920938463463374607431768211450",
                "frame: 40",
            ],
            &["KeepAlive"],
        ];
        for (body, shows) in bodies.into_iter().zip(shows) {
            let wire = WireMessage {
                magic: 0x1234,
                body,
            };
            let bytes = ggrs_bytes(&wire);
            // ggrs reads our bytes as the same message, and writes it back byte for byte.
            let msg: Message = bincode::deserialize(&bytes).unwrap();
            assert_eq!(bincode::serialize(&msg).unwrap(), bytes, "{wire:?}");
            let shown = format!("{msg:?}");
            for part in ["magic: 4660"].iter().chain(shows) {
                assert!(shown.contains(part), "{part} in {shown}");
            }
            let again: WireMessage = bincode::deserialize(&bytes).unwrap();
            assert_eq!(again, wire);
        }
    }

    #[test]
    fn varints_past_the_end_or_beyond_64_bits_are_refused() {
        let read = |d: &[u8]| varint(d, &mut 0);
        assert_eq!(read(&[0x05]), Some(5));
        assert_eq!(read(&[0x80, 0x01]), Some(128));
        assert_eq!(read(&[0x80]), None);
        assert_eq!(read(&[]), None);
        let mut max = vec![0xff; 9];
        max.push(0x01);
        assert_eq!(read(&max), Some(u64::MAX));
        max[9] = 0x02;
        assert_eq!(read(&max), None);
        assert_eq!(read(&[0xff; 11]), None);
    }

    #[test]
    fn run_length_decoding_is_bitfield_rle_within_the_limit() {
        let mut out = Vec::new();
        // Every encoding bitfield-rle makes decodes to what it encoded.
        for raw in [
            vec![],
            vec![0; 40],
            vec![0xff; 3],
            vec![1, 2, 3, 0, 0, 0, 255, 255, 9],
            (0..=255).collect::<Vec<u8>>(),
        ] {
            let encoded = bitfield_rle_encode(&raw);
            run_length_decode(&encoded, 1000, &mut out).unwrap();
            assert_eq!(out, raw);
        }
        // A run or a literal beyond the limit, a literal past the end, a cut header.
        assert!(run_length_decode(&[(10 << 2) | 1], 9, &mut out).is_none());
        assert!(run_length_decode(&[(10 << 2) | 1], 10, &mut out).is_some());
        assert!(run_length_decode(&[4 << 1, 1, 2, 3], 10, &mut out).is_none());
        assert!(run_length_decode(&[0x80], 10, &mut out).is_none());
        let huge = [0x81, 0x80, 0x80, 0x80, 0x80, 0x80, 0x10];
        assert!(run_length_decode(&huge, 1 << 20, &mut out).is_none());
        assert!(
            out.capacity() < 1 << 20,
            "nothing allocated for the refused run"
        );
    }

    /// bitfield-rle's encoder as ggrs uses it, for the round trip above: literal runs
    /// for other bytes, contiguous runs for 0x00 and 0xff (from the crate's format
    /// description).
    fn bitfield_rle_encode(raw: &[u8]) -> Vec<u8> {
        fn put(out: &mut Vec<u8>, mut v: u64) {
            while v > 127 {
                out.push((v as u8) | 0x80);
                v >>= 7;
            }
            out.push(v as u8);
        }
        let mut out = Vec::new();
        let mut i = 0;
        while i < raw.len() {
            let b = raw[i];
            let run = raw[i..].iter().take_while(|&&x| x == b).count();
            if b == 0 || b == 0xff {
                put(
                    &mut out,
                    ((run as u64) << 2) | 1 | if b == 0xff { 2 } else { 0 },
                );
                i += run;
            } else {
                let lit = raw[i..]
                    .iter()
                    .take_while(|&&x| x != 0 && x != 0xff)
                    .count();
                put(&mut out, (lit as u64) << 1);
                out.extend_from_slice(&raw[i..i + lit]);
                i += lit;
            }
        }
        out
    }

    #[test]
    fn a_literal_run_decodes_to_its_bytes() {
        let mut out = Vec::new();
        for len in [0, 1, 63, 64, 200, 20_000] {
            let raw: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
            let encoded = run_length_literal(&raw);
            run_length_decode(&encoded, len, &mut out).unwrap();
            assert_eq!(out, raw);
        }
    }

    #[test]
    fn inputs_are_counted_only_when_every_length_is_the_peers_input_size() {
        assert_eq!(count_inputs(&[], 2), Some(0));
        assert_eq!(count_inputs(&[2, 0, 7, 7, 2, 0, 1, 1], 2), Some(2));
        assert_eq!(count_inputs(&[1, 0, 7], 2), None);
        assert_eq!(count_inputs(&[2, 0, 7], 2), None);
        assert_eq!(count_inputs(&[2], 2), None);
        let many: Vec<u8> = (0..MAX_INPUTS + 1).flat_map(|_| [1, 0, 0]).collect();
        assert_eq!(count_inputs(&many[3..], 1), Some(MAX_INPUTS));
        assert_eq!(count_inputs(&many, 1), None);
    }
}
