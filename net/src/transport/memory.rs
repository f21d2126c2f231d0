//! The in-process network: peers in one process (one thread or several) exchange ggrs's
//! packets through shared inboxes, over links with latency, jitter, loss and corruption
//! drawn from a seeded generator.
//!
//! See [`MemoryNetwork`] for its timing and draws.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use ggrs::{Message, NonBlockingSocket};

use super::{Codec, SessionKey, TransportProbe};

/// The address of a peer on a [`MemoryNetwork`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PeerId(pub u32);

/// One direction of a link between two peers of a [`MemoryNetwork`].
///
/// ```
/// use std::time::Duration;
/// use runsync_net::LinkConfig;
/// // 100 ms round trip: 50 ms each way, up to 10 ms of jitter, 5 % of packets lost.
/// let link = LinkConfig::round_trip(Duration::from_millis(100))
///     .jitter(Duration::from_millis(10))
///     .loss(0.05);
/// assert_eq!(link.latency, Duration::from_millis(50));
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LinkConfig {
    /// The delay every packet takes.
    pub latency: Duration,
    /// The most extra delay a packet takes (uniform in `[0, jitter)`).
    pub jitter: Duration,
    /// The probability a packet is lost, in `[0, 1]`.
    pub loss: f64,
    /// The probability a packet arrives with one bit flipped, in `[0, 1]`.
    pub corrupt: f64,
}

impl LinkConfig {
    /// A link that delivers every packet at once, intact.
    pub const PERFECT: LinkConfig = LinkConfig {
        latency: Duration::ZERO,
        jitter: Duration::ZERO,
        loss: 0.0,
        corrupt: 0.0,
    };

    /// A link whose one-way latency is half of `rtt` (a round trip over two such links
    /// takes `rtt`), no jitter, no loss.
    pub fn round_trip(rtt: Duration) -> Self {
        LinkConfig {
            latency: rtt / 2,
            ..Self::PERFECT
        }
    }

    /// With up to `jitter` of extra delay per packet.
    pub fn jitter(mut self, jitter: Duration) -> Self {
        self.jitter = jitter;
        self
    }

    /// With a fraction `p` of packets lost.
    pub fn loss(mut self, p: f64) -> Self {
        self.loss = p;
        self
    }

    /// With a fraction `p` of packets corrupted (one bit flipped).
    pub fn corrupt(mut self, p: f64) -> Self {
        self.corrupt = p;
        self
    }

    /// A link that loses every packet (a cut cable, a stalled peer's silence).
    pub fn cut() -> Self {
        LinkConfig {
            loss: 1.0,
            ..Self::PERFECT
        }
    }
}

/// A packet on its way.
struct Packet {
    due: Instant,
    /// Send order, to break ties in `due`.
    seq: u64,
    from: PeerId,
    bytes: Vec<u8>,
}

/// The network's shared state.
struct Net {
    rng: u64,
    seq: u64,
    default_link: LinkConfig,
    links: HashMap<(PeerId, PeerId), LinkConfig>,
    inboxes: HashMap<PeerId, Vec<Packet>>,
    probes: HashMap<PeerId, TransportProbe>,
    /// Copies of the packets sent, while recording: (from, to, bytes).
    recorded: Option<Vec<(PeerId, PeerId, Vec<u8>)>>,
}

impl Net {
    /// splitmix64.
    fn next(&mut self) -> u64 {
        self.rng = self.rng.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.rng;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, 1)`.
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }

    fn link(&self, from: PeerId, to: PeerId) -> LinkConfig {
        self.links
            .get(&(from, to))
            .copied()
            .unwrap_or(self.default_link)
    }

    fn probe(&mut self, id: PeerId) -> TransportProbe {
        self.probes.entry(id).or_default().clone()
    }

    fn deliver(&mut self, from: PeerId, to: PeerId, due: Instant, bytes: Vec<u8>) {
        self.seq += 1;
        let seq = self.seq;
        self.inboxes.entry(to).or_default().push(Packet {
            due,
            seq,
            from,
            bytes,
        });
    }
}

/// An in-process network of peers ([`MemorySocket`]s, addressed by [`PeerId`]) with
/// configurable links, for tests and simulations of bad networks. Cheap to clone (a
/// handle to the same network); usable from several threads.
///
/// Time is real time ([`Instant`]), as ggrs's own (its resends, timeouts and time sync
/// read the clock): a packet sent at `t` is delivered by the first receive at or after
/// `t + latency + jitter·u` (`u` uniform in `[0, 1)`), so packets overtake each other
/// when the jitter exceeds their spacing. Which packets are lost or corrupted, and each
/// one's jitter, are draws from one splitmix64 generator seeded by the network's seed, in
/// the order packets are sent: the same seed gives the same draws for the same sequence
/// of sends.
///
/// ```
/// use std::time::Duration;
/// use runsync_net::{LinkConfig, MemoryNetwork, PeerId};
/// let net = MemoryNetwork::new(7, LinkConfig::round_trip(Duration::from_millis(100)).loss(0.05));
/// let a = net.socket(PeerId(0));
/// let b = net.socket(PeerId(1));
/// net.set_link(PeerId(1), PeerId(0), LinkConfig::cut()); // b's packets never reach a
/// # drop((a, b));
/// ```
#[derive(Clone)]
pub struct MemoryNetwork {
    net: Arc<Mutex<Net>>,
}

impl std::fmt::Debug for MemoryNetwork {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let net = self.lock();
        f.debug_struct("MemoryNetwork")
            .field("default_link", &net.default_link)
            .field("peers", &net.probes.len())
            .finish_non_exhaustive()
    }
}

impl MemoryNetwork {
    /// A network whose links are all `link` (until [`set_link`](Self::set_link)), with
    /// its random draws seeded by `seed`.
    pub fn new(seed: u64, link: LinkConfig) -> Self {
        MemoryNetwork {
            net: Arc::new(Mutex::new(Net {
                rng: seed,
                seq: 0,
                default_link: link,
                links: HashMap::new(),
                inboxes: HashMap::new(),
                probes: HashMap::new(),
                recorded: None,
            })),
        }
    }

    /// The socket of peer `id`: hand it to a session. Taking a second socket for the same
    /// id shares the inbox (each packet goes to one of them).
    pub fn socket(&self, id: PeerId) -> MemorySocket {
        let probe = self.lock().probe(id);
        MemorySocket {
            id,
            net: self.clone(),
            codec: Codec::new(),
            probe,
        }
    }

    /// Sets the link from `from` to `to` (one direction) from now on; packets already on
    /// their way keep their delivery time.
    pub fn set_link(&self, from: PeerId, to: PeerId, link: LinkConfig) {
        self.lock().links.insert((from, to), link);
    }

    /// Sets both directions between `a` and `b`.
    pub fn set_links_between(&self, a: PeerId, b: PeerId, link: LinkConfig) {
        let mut net = self.lock();
        net.links.insert((a, b), link);
        net.links.insert((b, a), link);
    }

    /// Delivers `bytes` to `to` at once, as if sent by `from` (which need not be a peer):
    /// how a test sends garbage or forged packets.
    pub fn inject(&self, from: PeerId, to: PeerId, bytes: Vec<u8>) {
        self.lock().deliver(from, to, Instant::now(), bytes);
    }

    /// From now on, keeps a copy of every packet sent (before the link loses or corrupts
    /// it), for [`take_recorded`](Self::take_recorded): how a test gets real packets to
    /// replay or forge.
    pub fn record(&self) {
        self.lock().recorded.get_or_insert_with(Vec::new);
    }

    /// The packets recorded since [`record`](Self::record) or the last call, as
    /// `(from, to, bytes)`, in send order.
    pub fn take_recorded(&self) -> Vec<(PeerId, PeerId, Vec<u8>)> {
        self.lock()
            .recorded
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default()
    }

    /// The counters of peer `id`'s end.
    pub fn probe(&self, id: PeerId) -> TransportProbe {
        self.lock().probe(id)
    }

    fn lock(&self) -> MutexGuard<'_, Net> {
        // A panic while holding the lock (in a test's thread) leaves plain data behind:
        // go on with it.
        self.net.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// One peer's end of a [`MemoryNetwork`]: ggrs's
/// [`NonBlockingSocket`](ggrs::NonBlockingSocket) with [`PeerId`] addresses.
pub struct MemorySocket {
    id: PeerId,
    net: MemoryNetwork,
    codec: Codec<PeerId>,
    probe: TransportProbe,
}

impl std::fmt::Debug for MemorySocket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemorySocket")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

impl MemorySocket {
    /// This end's address.
    pub fn id(&self) -> PeerId {
        self.id
    }

    /// This end's counters, readable after the socket is handed to a session.
    pub fn probe(&self) -> TransportProbe {
        self.probe.clone()
    }

    /// Seals what this end sends under `key` and drops what it receives unsealed, as
    /// [`UdpTransport::with_key`](crate::UdpTransport::with_key).
    pub fn with_key(mut self, key: SessionKey) -> Self {
        self.codec = Codec::keyed(key);
        self
    }
}

impl NonBlockingSocket<PeerId> for MemorySocket {
    fn send_to(&mut self, msg: &Message, addr: &PeerId) {
        let mut bytes = self.codec.seal(msg);
        self.probe.sent(bytes.len());
        let mut net = self.net.lock();
        if let Some(log) = &mut net.recorded {
            log.push((self.id, *addr, bytes.clone()));
        }
        let link = net.link(self.id, *addr);
        // Three draws per packet, whatever the link, so one link's settings do not shift
        // another's draws.
        let (lost, corrupt, jitter) = (net.unit(), net.unit(), net.unit());
        let bit = net.next();
        if lost < link.loss {
            self.probe.lost();
            return;
        }
        if corrupt < link.corrupt && !bytes.is_empty() {
            let bit = (bit % (bytes.len() as u64 * 8)) as usize;
            bytes[bit / 8] ^= 1 << (bit % 8);
            self.probe.corrupted();
        }
        let due = Instant::now() + link.latency + link.jitter.mul_f64(jitter);
        net.deliver(self.id, *addr, due, bytes);
    }

    fn receive_all_messages(&mut self) -> Vec<(PeerId, Message)> {
        let now = Instant::now();
        let mut due = {
            let mut net = self.net.lock();
            let Some(inbox) = net.inboxes.get_mut(&self.id) else {
                return Vec::new();
            };
            let (due, later): (Vec<Packet>, Vec<Packet>) = std::mem::take(inbox)
                .into_iter()
                .partition(|p| p.due <= now);
            *inbox = later;
            due
        };
        due.sort_by_key(|p| (p.due, p.seq));
        due.into_iter()
            .filter_map(|p| match self.codec.open(&p.from, &p.bytes) {
                Ok(msg) => {
                    self.probe.received();
                    Some((p.from, msg))
                }
                Err(why) => {
                    self.probe.dropped(why);
                    None
                }
            })
            .collect()
    }
}
