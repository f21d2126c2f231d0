//! A bad network around any transport: [`NetSim`] delays, jitters, drops, duplicates and
//! reorders the messages a wrapped [`NonBlockingSocket`] receives, from a seeded
//! generator, so two real processes (or a process and a test) can play over a link as bad
//! as [`MemoryNetwork`](crate::MemoryNetwork)'s.
//!
//! See [`NetSim`] for where the delay happens and why, and [`NetSimConfig`] for the
//! settings and their spec string.

use std::collections::VecDeque;
use std::fmt;
use std::hash::Hash;
use std::str::FromStr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use ggrs::{Message, NonBlockingSocket};

/// How long past its due time a message held back for reordering waits for a later one
/// to overtake it before it is delivered anyway (after a session's last message, or in a
/// silence). ggrs sends something at least every 200 ms while connected, and at every
/// frame while playing.
const REORDER_HOLD: Duration = Duration::from_millis(100);

/// What a [`NetSim`] does to the messages it receives: each one is lost with probability
/// `loss`; else it arrives after `latency` plus a uniform share of `jitter`, possibly
/// held back behind the next one (`reorder`), possibly twice (`duplicate`).
///
/// Written as a spec string too ([`FromStr`]): `latency=MS,jitter=MS,loss=PCT,dup=PCT,
/// reorder=PCT,seed=N`, any subset in any order, each field at most once; what is left
/// out is as in [`Default`] (a perfect link, seed 0). Milliseconds are whole numbers up to
/// 10 000, percentages numbers from 0 to 100 (`2.5` is fine).
///
/// ```
/// use std::time::Duration;
/// use runsync_net::NetSimConfig;
/// let c: NetSimConfig = "latency=30,jitter=10,loss=5,seed=7".parse().unwrap();
/// assert_eq!(c.latency, Duration::from_millis(30));
/// assert_eq!(c.loss, 0.05);
/// assert_eq!(c.duplicate, 0.0);
/// let e = "latency=30,loss=150".parse::<NetSimConfig>().unwrap_err();
/// assert_eq!(e.to_string(), "loss=150: a percentage must be from 0 to 100");
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NetSimConfig {
    /// The delay every message takes (at most [`MAX_DELAY`](Self::MAX_DELAY)).
    pub latency: Duration,
    /// The most extra delay a message takes: uniform in `[0, jitter)` (at most
    /// [`MAX_DELAY`](Self::MAX_DELAY)). Jitter alone does not reorder (see [`NetSim`]).
    pub jitter: Duration,
    /// The probability a message is lost, in `[0, 1]`.
    pub loss: f64,
    /// The probability a message arrives twice, in `[0, 1]`.
    pub duplicate: f64,
    /// The probability a message is held back until the next one has overtaken it, in
    /// `[0, 1]`.
    pub reorder: f64,
    /// The seed of the generator every draw comes from.
    pub seed: u64,
    /// The most messages held at once; one more is dropped and counted
    /// ([`NetSimStats::overflowed`]). Default [`NetSimConfig::DEFAULT_CAPACITY`].
    pub capacity: usize,
}

impl NetSimConfig {
    /// The longest latency, and the longest jitter, applied (longer settings are taken
    /// as this): 10 s, far past any session's disconnect timeout.
    pub const MAX_DELAY: Duration = Duration::from_secs(10);

    /// The default [`capacity`](Self::capacity): 4096 messages (a few hundred KiB),
    /// more than the longest delay holds of a two-player session's traffic (about 140
    /// messages a second).
    pub const DEFAULT_CAPACITY: usize = 4096;
}

impl Default for NetSimConfig {
    /// A perfect link: no delay, no loss, no copies, no reordering; seed 0.
    fn default() -> Self {
        NetSimConfig {
            latency: Duration::ZERO,
            jitter: Duration::ZERO,
            loss: 0.0,
            duplicate: 0.0,
            reorder: 0.0,
            seed: 0,
            capacity: Self::DEFAULT_CAPACITY,
        }
    }
}

/// A [`NetSimConfig`] spec string that does not parse: names the field and its value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NetSimSpecError {
    /// The item of the spec at fault (`loss=150`), or the whole spec.
    item: String,
    why: String,
}

impl fmt::Display for NetSimSpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.item, self.why)
    }
}

impl std::error::Error for NetSimSpecError {}

impl FromStr for NetSimConfig {
    type Err = NetSimSpecError;

    fn from_str(spec: &str) -> Result<Self, Self::Err> {
        const FIELDS: [&str; 6] = ["latency", "jitter", "loss", "dup", "reorder", "seed"];
        let mut c = NetSimConfig::default();
        let mut seen = [false; FIELDS.len()];
        if spec.trim().is_empty() {
            return Ok(c);
        }
        for item in spec.split(',').map(str::trim) {
            let fail = |why: String| NetSimSpecError {
                item: if item.is_empty() {
                    format!("{spec:?}")
                } else {
                    item.to_owned()
                },
                why,
            };
            if item.is_empty() {
                return Err(fail(
                    "an empty field (fields are separated by one comma)".into(),
                ));
            }
            let Some((name, value)) = item.split_once('=') else {
                return Err(fail(format!("no value: write {item}=VALUE")));
            };
            let (name, value) = (name.trim(), value.trim());
            let Some(i) = FIELDS.iter().position(|&f| f == name) else {
                return Err(fail(format!(
                    "unknown field `{name}` (the fields are {})",
                    FIELDS.join(", ")
                )));
            };
            if std::mem::replace(&mut seen[i], true) {
                return Err(fail(format!("`{name}` is given twice")));
            }
            let ms = || -> Result<Duration, NetSimSpecError> {
                let n: u64 = value
                    .parse()
                    .map_err(|_| fail("not a whole number of milliseconds".into()))?;
                if n > NetSimConfig::MAX_DELAY.as_millis() as u64 {
                    return Err(fail(format!(
                        "at most {} ms",
                        NetSimConfig::MAX_DELAY.as_millis()
                    )));
                }
                Ok(Duration::from_millis(n))
            };
            let pct = || -> Result<f64, NetSimSpecError> {
                let p: f64 = value
                    .parse()
                    .map_err(|_| fail("not a number (a percentage from 0 to 100)".into()))?;
                if !(0.0..=100.0).contains(&p) {
                    return Err(fail("a percentage must be from 0 to 100".into()));
                }
                Ok(p / 100.0)
            };
            match name {
                "latency" => c.latency = ms()?,
                "jitter" => c.jitter = ms()?,
                "loss" => c.loss = pct()?,
                "dup" => c.duplicate = pct()?,
                "reorder" => c.reorder = pct()?,
                _ => {
                    c.seed = value
                        .parse()
                        .map_err(|_| fail("not a whole number from 0 to 2^64 - 1".into()))?;
                }
            }
        }
        Ok(c)
    }
}

/// What a [`NetSim`] did, readable while a session owns it (take it with
/// [`NetSim::probe`] before handing the socket over). Counters only grow.
#[derive(Clone, Debug, Default)]
pub struct NetSimProbe(Arc<SimCounters>);

#[derive(Debug, Default)]
struct SimCounters {
    delivered: AtomicU64,
    delayed: AtomicU64,
    dropped: AtomicU64,
    duplicated: AtomicU64,
    reordered: AtomicU64,
    overflowed: AtomicU64,
}

/// A reading of a [`NetSimProbe`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct NetSimStats {
    /// Messages handed on to the session (copies included).
    pub delivered: u64,
    /// Messages (copies included) delivered by a later receive than the one that read
    /// them.
    pub delayed: u64,
    /// Messages lost (the `loss` draw).
    pub dropped: u64,
    /// Messages delivered twice: the extra copies made.
    pub duplicated: u64,
    /// Messages queued behind one that arrived after them (the `reorder` draw, when a
    /// later message overtook the one held back).
    pub reordered: u64,
    /// Messages dropped because [`capacity`](NetSimConfig::capacity) were held already.
    pub overflowed: u64,
}

impl NetSimProbe {
    /// The counters now.
    pub fn stats(&self) -> NetSimStats {
        let c = &self.0;
        let r = |a: &AtomicU64| a.load(Ordering::Relaxed);
        NetSimStats {
            delivered: r(&c.delivered),
            delayed: r(&c.delayed),
            dropped: r(&c.dropped),
            duplicated: r(&c.duplicated),
            reordered: r(&c.reordered),
            overflowed: r(&c.overflowed),
        }
    }

    fn add(counter: &AtomicU64, n: u64) {
        if n > 0 {
            counter.fetch_add(n, Ordering::Relaxed);
        }
    }
}

/// splitmix64, as [`MemoryNetwork`](crate::MemoryNetwork)'s draws.
#[derive(Debug)]
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, 1)`.
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// A message on its way to the session.
struct Queued<A> {
    /// When the receive that read it ran.
    read: Instant,
    due: Instant,
    from: A,
    msg: Message,
}

/// A bad network in front of any transport `S` (a [`UdpTransport`](crate::UdpTransport),
/// a [`MemorySocket`](crate::MemorySocket), a game's own): ggrs's
/// [`NonBlockingSocket`] that hands the session what `S` receives late, jittered, with
/// some lost, some twice and some out of order, as a [`NetSimConfig`] says. What the
/// session sends goes to `S` untouched.
///
/// **On the receive side.** Each message `S` receives is drawn for (lost, held back for
/// reordering, duplicated, its jitter and its copy's) and queued until due, and a
/// [`receive_all_messages`](NonBlockingSocket::receive_all_messages) hands over what is
/// due. The receive side models a link best: a stalled or slow receiver finds the
/// packets that arrived meanwhile waiting, as in a real socket's buffer, where a queue on
/// the send side would hold back packets a stalled sender had already "sent"; and what a
/// process's counters report is what its own session saw. So wrapping one peer's
/// transport impairs what that peer hears (a bad downlink); wrapping every peer's
/// impairs every direction. Delays count from the receive that reads the message, and a
/// message is handed over by the first receive at or after it is due; a session
/// receives once a tick, so a message waits up to a tick more than on a real link of that
/// latency (there it waits only to be read).
///
/// **Order.** Jitter varies each message's delay but keeps their order: a real path's
/// queues are first in, first out, so a message is never due before the one that
/// arrived before it. Reordering is its own draw: a message drawn for it is held back
/// until the next one arrives, then queued right behind that one (counted in
/// [`NetSimStats::reordered`]); if none comes within 100 ms of its due time it is
/// delivered anyway (only delayed). One message is held back at a time; a message drawn
/// for reordering while another is held is queued in order (and overtakes the held
/// one). A copy follows its original, with its own jitter. Copies are made
/// above `S`'s checks, so a keyed `S` does not drop them as replays as it would a
/// duplicated datagram: the session sees both, the harder case.
///
/// **Draws.** Five per message received, whatever the settings (so one setting does not
/// shift another's draws), from one splitmix64 generator seeded by
/// [`seed`](NetSimConfig::seed): the same seed and the same messages received in the
/// same order give the same losses, copies, holds and delays. (Which receive call a
/// UDP datagram lands in depends on the operating system's timing, so two runs of real
/// processes differ; the draws of the n-th message received do not.)
///
/// **Memory.** At most [`capacity`](NetSimConfig::capacity) messages are held; one more
/// is dropped and counted ([`NetSimStats::overflowed`]).
///
/// ```
/// use runsync_net::{NetSession, NetSim, NetSimConfig, UdpTransport};
/// let udp = UdpTransport::bind("127.0.0.1:0").unwrap();
/// let peer = udp.local_addr().unwrap(); // (a real game: the other player's address)
/// let config: NetSimConfig = "latency=30,jitter=10,loss=5,dup=5,reorder=10,seed=1"
///     .parse()
///     .unwrap();
/// let socket = NetSim::new(udp, config);
/// let probe = socket.probe(); // readable after the session owns the socket
/// let session = NetSession::builder(2)
///     .local_player(0)
///     .remote_player(1, peer)
///     .start::<u8>(runsync::Runtime::builder().build(runsync::World::new()), socket)
///     .unwrap();
/// # drop(session);
/// assert_eq!(probe.stats().dropped, 0);
/// ```
pub struct NetSim<S, A> {
    inner: S,
    config: NetSimConfig,
    rng: SplitMix64,
    /// In arrival order, and so in due order (see "Order").
    queue: VecDeque<Queued<A>>,
    /// The message held back for reordering.
    held: Option<Queued<A>>,
    /// The due time of the last message queued or held: none is due before it.
    last_due: Option<Instant>,
    probe: NetSimProbe,
}

impl<S: fmt::Debug, A> fmt::Debug for NetSim<S, A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NetSim")
            .field("inner", &self.inner)
            .field("config", &self.config)
            .field(
                "queued",
                &(self.queue.len() + usize::from(self.held.is_some())),
            )
            .finish_non_exhaustive()
    }
}

impl<S, A> NetSim<S, A>
where
    S: NonBlockingSocket<A>,
    A: Clone + PartialEq + Eq + Hash,
{
    /// `inner` behind the bad network `config` describes.
    pub fn new(inner: S, config: NetSimConfig) -> Self {
        NetSim {
            inner,
            rng: SplitMix64(config.seed),
            config,
            queue: VecDeque::new(),
            held: None,
            last_due: None,
            probe: NetSimProbe::default(),
        }
    }

    /// The counters, readable after the socket is handed to a session.
    pub fn probe(&self) -> NetSimProbe {
        self.probe.clone()
    }

    /// The settings.
    pub fn config(&self) -> &NetSimConfig {
        &self.config
    }

    /// The wrapped transport (its own counters, its address).
    pub fn inner(&self) -> &S {
        &self.inner
    }

    /// The wrapped transport, mutably.
    pub fn inner_mut(&mut self) -> &mut S {
        &mut self.inner
    }

    /// Messages held now (queued or held back for reordering).
    pub fn queued(&self) -> usize {
        self.queue.len() + usize::from(self.held.is_some())
    }

    /// When a message read at `now` with jitter draw `u` is due: never before the last
    /// one (first in, first out).
    fn due(&mut self, now: Instant, u: f64) -> Instant {
        let latency = self.config.latency.min(NetSimConfig::MAX_DELAY);
        let jitter = self.config.jitter.min(NetSimConfig::MAX_DELAY);
        let mut due = now + latency + jitter.mul_f64(u);
        if let Some(last) = self.last_due {
            due = due.max(last);
        }
        self.last_due = Some(due);
        due
    }

    /// Queues (or, with `hold`, holds back) a message read at `now` with jitter draw
    /// `u`; a message queued while another is held back overtakes it. False if there is
    /// no room (counted).
    fn queue(&mut self, now: Instant, u: f64, from: A, msg: Message, hold: bool) -> bool {
        if self.queued() >= self.config.capacity {
            NetSimProbe::add(&self.probe.0.overflowed, 1);
            return false;
        }
        let due = self.due(now, u);
        let q = Queued {
            read: now,
            due,
            from,
            msg,
        };
        if hold {
            self.held = Some(q);
        } else {
            self.queue.push_back(q);
            if let Some(mut h) = self.held.take() {
                // Right behind the one that overtook it (due no earlier: first in, first
                // out).
                h.due = due;
                self.queue.push_back(h);
                NetSimProbe::add(&self.probe.0.reordered, 1);
            }
        }
        true
    }

    /// Draws for a message `inner` received at `now`, and queues it (or not).
    fn arrive(&mut self, now: Instant, from: A, msg: Message) {
        let r = &mut self.rng;
        let (lost, reorder, dup, jitter, copy_jitter) =
            (r.unit(), r.unit(), r.unit(), r.unit(), r.unit());
        if lost < self.config.loss {
            NetSimProbe::add(&self.probe.0.dropped, 1);
            return;
        }
        let hold = reorder < self.config.reorder && self.held.is_none();
        let copy = (dup < self.config.duplicate).then(|| (from.clone(), msg.clone()));
        self.queue(now, jitter, from, msg, hold);
        if let Some((from, msg)) = copy
            && self.queue(now, copy_jitter, from, msg, false)
        {
            NetSimProbe::add(&self.probe.0.duplicated, 1);
        }
    }

    /// [`receive_all_messages`](NonBlockingSocket::receive_all_messages) at `now`.
    fn receive_at(&mut self, now: Instant) -> Vec<(A, Message)> {
        for (from, msg) in self.inner.receive_all_messages() {
            self.arrive(now, from, msg);
        }
        let mut out = Vec::new();
        let mut delayed = 0;
        let mut deliver = |q: Queued<A>| {
            delayed += u64::from(q.read < now);
            out.push((q.from, q.msg));
        };
        while self.queue.front().is_some_and(|q| q.due <= now) {
            deliver(self.queue.pop_front().expect("a front"));
        }
        // Nothing overtook it in time: deliver it in order (everything in the queue
        // arrived before it, and was due no later).
        if self
            .held
            .as_ref()
            .is_some_and(|h| h.due + REORDER_HOLD <= now)
        {
            deliver(self.held.take().expect("held"));
        }
        NetSimProbe::add(&self.probe.0.delayed, delayed);
        NetSimProbe::add(&self.probe.0.delivered, out.len() as u64);
        out
    }
}

impl<S, A> NonBlockingSocket<A> for NetSim<S, A>
where
    S: NonBlockingSocket<A>,
    A: Clone + PartialEq + Eq + Hash,
{
    fn send_to(&mut self, msg: &Message, addr: &A) {
        self.inner.send_to(msg, addr);
    }

    fn receive_all_messages(&mut self) -> Vec<(A, Message)> {
        self.receive_at(Instant::now())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A transport that receives what the test puts in its inbox.
    #[derive(Default)]
    struct Feed {
        inbox: Vec<(u8, Message)>,
        sent: usize,
    }

    impl NonBlockingSocket<u8> for Feed {
        fn send_to(&mut self, _: &Message, _: &u8) {
            self.sent += 1;
        }

        fn receive_all_messages(&mut self) -> Vec<(u8, Message)> {
            std::mem::take(&mut self.inbox)
        }
    }

    /// A ggrs sync request carrying `n`: distinct messages to follow through the queue.
    fn msg(n: u32) -> Message {
        let mut bytes = vec![7, 0, 0, 0, 0, 0];
        bytes.extend_from_slice(&n.to_le_bytes());
        bincode::deserialize(&bytes).unwrap()
    }

    fn which(out: &[(u8, Message)]) -> Vec<u32> {
        out.iter()
            .map(|(_, m)| (0..1000).find(|&n| msg(n) == *m).expect("a test message"))
            .collect()
    }

    fn sim(spec: &str) -> NetSim<Feed, u8> {
        NetSim::new(Feed::default(), spec.parse().unwrap())
    }

    /// Feeds messages `ns` at `at`, then receives at `at`.
    fn feed(s: &mut NetSim<Feed, u8>, at: Instant, ns: std::ops::Range<u32>) -> Vec<u32> {
        s.inner_mut().inbox.extend(ns.map(|n| (1, msg(n))));
        which(&s.receive_at(at))
    }

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn a_perfect_link_passes_everything_through_at_once_and_sends_untouched() {
        let mut s = sim("");
        let t = Instant::now();
        assert_eq!(feed(&mut s, t, 0..50), (0..50).collect::<Vec<_>>());
        s.send_to(&msg(1), &2);
        assert_eq!(s.inner().sent, 1);
        let st = s.probe().stats();
        assert_eq!((st.delivered, st.delayed, st.dropped), (50, 0, 0));
    }

    #[test]
    fn the_draws_are_the_same_for_the_same_seed_and_differ_for_another() {
        let spec = "latency=5,jitter=20,loss=20,dup=20,reorder=20";
        let run = |seed: u64| {
            let mut s = sim(&format!("{spec},seed={seed}"));
            let t = Instant::now();
            let mut got = Vec::new();
            for i in 0..100u32 {
                got.extend(feed(&mut s, t + i * 3 * MS, i * 4..i * 4 + 4));
            }
            got.extend(feed(&mut s, t + 2000 * MS, 0..0));
            (got, s.probe().stats())
        };
        let (a, stats) = run(9);
        assert_eq!(run(9), (a.clone(), stats));
        assert_ne!(run(10).0, a);
        // Every kind of trouble happened, and the counts add up: by the last receive,
        // everything not lost came out.
        assert!(stats.dropped > 0 && stats.duplicated > 0 && stats.reordered > 0);
        assert!(stats.delayed > 0);
        assert_eq!(stats.delivered, 400 - stats.dropped + stats.duplicated);
        assert_eq!(a.len() as u64, stats.delivered);
    }

    #[test]
    fn loss_100_drops_everything_and_loss_0_nothing() {
        let mut s = sim("loss=100,dup=100,reorder=100,seed=3");
        let t = Instant::now();
        assert!(feed(&mut s, t, 0..200).is_empty());
        assert!(feed(&mut s, t + 10_000 * MS, 0..0).is_empty());
        let st = s.probe().stats();
        assert_eq!((st.dropped, st.delivered, st.duplicated), (200, 0, 0));
        assert_eq!(s.queued(), 0);
    }

    #[test]
    fn dup_100_delivers_every_message_twice_in_order() {
        let mut s = sim("dup=100,seed=4");
        let t = Instant::now();
        assert_eq!(feed(&mut s, t, 0..3), [0, 0, 1, 1, 2, 2]);
        assert_eq!(s.probe().stats().duplicated, 3);
    }

    #[test]
    fn reorder_delivers_a_held_message_behind_the_next_one() {
        // Every message is drawn for reordering; one is held at a time, so the next
        // goes first: pairs swap.
        let mut s = sim("reorder=100,seed=5");
        let t = Instant::now();
        assert_eq!(feed(&mut s, t, 0..6), [1, 0, 3, 2, 5, 4]);
        assert_eq!(s.probe().stats().reordered, 3);
        // Across receives too: 6 is held until 7 arrives.
        assert_eq!(feed(&mut s, t + MS, 6..7), Vec::<u32>::new());
        assert_eq!(feed(&mut s, t + 2 * MS, 7..8), [7, 6]);
        // Nothing comes after 8: it goes out, in order, once held too long.
        assert!(feed(&mut s, t + 3 * MS, 8..9).is_empty());
        assert!(feed(&mut s, t + 3 * MS + REORDER_HOLD - MS, 0..0).is_empty());
        assert_eq!(feed(&mut s, t + 3 * MS + REORDER_HOLD, 0..0), [8]);
        assert_eq!(s.probe().stats().reordered, 4);
    }

    #[test]
    fn delays_hold_messages_until_due_and_jitter_keeps_order() {
        let mut s = sim("latency=30,jitter=20,seed=6");
        let t = Instant::now();
        assert!(feed(&mut s, t, 0..10).is_empty());
        assert!(feed(&mut s, t + 29 * MS, 10..20).is_empty());
        // At 50 ms every message of the first batch is due (30 + under 20), in order.
        let first = feed(&mut s, t + 50 * MS, 0..0);
        assert_eq!(first, (0..10).collect::<Vec<_>>());
        let rest = feed(&mut s, t + 79 * MS, 0..0);
        assert_eq!(rest, (10..20).collect::<Vec<_>>());
        let st = s.probe().stats();
        assert_eq!((st.delayed, st.delivered, st.reordered), (20, 20, 0));
    }

    #[test]
    fn jitter_spreads_due_times_over_its_range() {
        let mut s = sim("latency=10,jitter=40,seed=8");
        let t = Instant::now();
        // One message per ms: the first due before 20 ms, some not before 45 ms.
        let mut when = Vec::new();
        for ms in 0..200u32 {
            let got = feed(&mut s, t + ms * MS, ms..ms + 1);
            when.extend(got.iter().map(|&n| ms - n));
        }
        assert!(when.iter().all(|&d| (10..=50).contains(&d)), "{when:?}");
        assert!(when.iter().any(|&d| d >= 40), "{when:?}");
    }

    #[test]
    fn the_cap_drops_and_counts_what_does_not_fit() {
        let mut config: NetSimConfig = "latency=100,dup=100".parse().unwrap();
        config.capacity = 10;
        let mut s = NetSim::new(Feed::default(), config);
        let t = Instant::now();
        assert!(feed(&mut s, t, 0..20).is_empty());
        assert_eq!(s.queued(), 10);
        let st = s.probe().stats();
        // 5 messages and their copies fit; the other 15 messages and copies do not.
        assert_eq!((st.duplicated, st.overflowed), (5, 30));
        assert_eq!(
            feed(&mut s, t + 100 * MS, 0..0),
            [0, 0, 1, 1, 2, 2, 3, 3, 4, 4]
        );
        assert_eq!(s.queued(), 0);
    }

    #[test]
    fn spec_errors_name_the_field_and_value() {
        let err = |spec: &str| spec.parse::<NetSimConfig>().unwrap_err().to_string();
        assert_eq!(err("latency=10001"), "latency=10001: at most 10000 ms");
        assert_eq!(
            err("jitter=-1"),
            "jitter=-1: not a whole number of milliseconds"
        );
        assert_eq!(
            err("loss=100.5"),
            "loss=100.5: a percentage must be from 0 to 100"
        );
        assert_eq!(
            err("dup=x"),
            "dup=x: not a number (a percentage from 0 to 100)"
        );
        assert_eq!(
            err("reorder=NaN"),
            "reorder=NaN: a percentage must be from 0 to 100"
        );
        assert_eq!(
            err("seed=-3"),
            "seed=-3: not a whole number from 0 to 2^64 - 1"
        );
        assert_eq!(
            err("lag=3"),
            "lag=3: unknown field `lag` (the fields are latency, jitter, loss, dup, reorder, seed)"
        );
        assert_eq!(err("loss=1,loss=2"), "loss=2: `loss` is given twice");
        assert_eq!(err("loss"), "loss: no value: write loss=VALUE");
        assert!(err("loss=1,").contains("an empty field"));
        let c: NetSimConfig =
            " latency=10000 , loss=2.5,dup=0,reorder=100,seed=18446744073709551615 "
                .parse()
                .unwrap();
        assert_eq!(c.latency, Duration::from_secs(10));
        assert_eq!((c.loss, c.duplicate, c.reorder), (0.025, 0.0, 1.0));
        assert_eq!(c.seed, u64::MAX);
        assert_eq!(c.capacity, NetSimConfig::DEFAULT_CAPACITY);
        assert_eq!("".parse::<NetSimConfig>().unwrap(), NetSimConfig::default());
    }
}
