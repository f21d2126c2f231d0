//! Duel peers (two to four) in one process over a `MemoryNetwork`, ticked at 60 Hz.

#![allow(dead_code)]

#[path = "../../src/bin/duel/game.rs"]
pub(crate) mod game;

pub(crate) mod forge;

use std::time::{Duration, Instant};

use game::Pad;
use runsync_net::{
    ConfirmedFrame, MemoryNetwork, MemorySocket, NetError, NetEvent, NetSession, NetSessionBuilder,
    PeerId, Tick,
};

/// Input delay of the test peers.
pub(crate) const DELAY: usize = 2;

/// One peer and what it saw.
pub(crate) struct Peer {
    pub(crate) me: usize,
    pub(crate) session: NetSession<Pad, PeerId>,
    pub(crate) confirmed: Vec<ConfirmedFrame>,
    pub(crate) events: Vec<NetEvent<PeerId>>,
    pub(crate) ticks: Vec<Tick>,
    /// The sum, over the ticks after the handshake, of how far the confirmed frame
    /// trailed the current one, and how many such ticks.
    pub(crate) lag: (u64, u64),
}

impl Peer {
    /// Peer `me` of two (player `me`, at `PeerId(me)`), playing `game` with `setup`
    /// applied to the builder.
    pub(crate) fn start(
        net: &MemoryNetwork,
        me: usize,
        game: runsync::Runtime,
        setup: impl FnOnce(NetSessionBuilder<PeerId>) -> NetSessionBuilder<PeerId>,
    ) -> Peer {
        Peer::start_on(net.socket(PeerId(me as u32)), me, game, setup)
    }

    /// As [`start`](Self::start), on `socket` (a keyed one, say).
    pub(crate) fn start_on(
        socket: MemorySocket,
        me: usize,
        game: runsync::Runtime,
        setup: impl FnOnce(NetSessionBuilder<PeerId>) -> NetSessionBuilder<PeerId>,
    ) -> Peer {
        let b = NetSession::builder(2)
            .local_player(me)
            .remote_player(1 - me, PeerId(1 - me as u32))
            .input_delay(DELAY);
        Peer::start_with(socket, me, game, setup(b)).unwrap()
    }

    /// Peer `me` of `players` (player `me`, at `PeerId(me)`; player `h` at `PeerId(h)`),
    /// playing `game` with `setup` applied to the builder.
    pub(crate) fn start_of(
        net: &MemoryNetwork,
        players: usize,
        me: usize,
        game: runsync::Runtime,
        setup: impl FnOnce(NetSessionBuilder<PeerId>) -> NetSessionBuilder<PeerId>,
    ) -> Peer {
        let mut b = NetSession::builder(players)
            .local_player(me)
            .input_delay(DELAY);
        for h in (0..players).filter(|&h| h != me) {
            b = b.remote_player(h, PeerId(h as u32));
        }
        Peer::start_with(net.socket(PeerId(me as u32)), me, game, setup(b)).unwrap()
    }

    /// A peer playing player `me`'s script, started by `builder` (set up as the test
    /// likes) on `socket`.
    pub(crate) fn start_with(
        socket: MemorySocket,
        me: usize,
        game: runsync::Runtime,
        builder: NetSessionBuilder<PeerId>,
    ) -> Result<Peer, NetError> {
        let session = builder.start::<Pad>(game, socket)?;
        Ok(Peer {
            me,
            session,
            confirmed: Vec::new(),
            events: Vec::new(),
            ticks: Vec::new(),
            lag: (0, 0),
        })
    }

    /// One tick with the scripted pad; events and confirmed frames collected.
    pub(crate) fn tick(&mut self) -> Tick {
        self.try_tick().unwrap()
    }

    /// [`tick`](Self::tick), with the session's error returned.
    pub(crate) fn try_tick(&mut self) -> Result<Tick, NetError> {
        let pad = game::scripted(self.me, self.session.input_frame());
        let tick = self.session.tick(pad)?;
        self.events.extend(self.session.events());
        self.confirmed.extend(self.session.confirmed_frames());
        self.ticks.push(tick);
        if tick != Tick::Synchronizing {
            let now = self.session.runtime().frame_count();
            self.lag.0 += now.saturating_sub(self.session.stats().confirmed);
            self.lag.1 += 1;
        }
        Ok(tick)
    }

    /// How far the confirmed frame trailed the current one, on average over the ticks
    /// after the handshake.
    pub(crate) fn mean_lag(&self) -> f64 {
        self.lag.0 as f64 / self.lag.1.max(1) as f64
    }

    /// Frames confirmed so far.
    pub(crate) fn confirmed_to(&self) -> u64 {
        self.confirmed.last().map_or(0, |c| c.frame)
    }
}

/// Ticks `peers` (those for which `active` says so) as a game loop does, until `done`
/// holds, or panics after `limit`: each peer on its own schedule of
/// [`recommended_interval`](NetSession::recommended_interval) (a 60 Hz frame, 10 % longer
/// while ahead), skipping the ticks a [`NetEvent::WaitRecommended`] asks to skip.
pub(crate) fn run_until(
    peers: &mut [Peer],
    limit: Duration,
    mut active: impl FnMut(&Peer, Duration) -> bool,
    mut done: impl FnMut(&[Peer]) -> bool,
) -> Duration {
    let start = Instant::now();
    let mut next = vec![start; peers.len()];
    let mut skip = vec![0u32; peers.len()];
    let mut seen = vec![0usize; peers.len()];
    while !done(peers) {
        let elapsed = start.elapsed();
        assert!(elapsed < limit, "not done after {limit:?}");
        let now = Instant::now();
        for (i, p) in peers.iter_mut().enumerate() {
            if next[i] > now {
                continue;
            }
            if skip[i] > 0 {
                skip[i] -= 1;
            } else if active(p, elapsed) {
                p.tick();
                for e in &p.events[seen[i]..] {
                    if let NetEvent::WaitRecommended { frames } = e {
                        skip[i] += frames;
                    }
                }
                seen[i] = p.events.len();
            }
            next[i] += p.session.recommended_interval();
            if now > next[i] + Duration::from_millis(100) {
                next[i] = now; // far behind (a stall): no burst of ticks to catch up
            }
        }
        let wake = next.iter().min().copied().unwrap_or(now);
        let now = Instant::now();
        if wake > now {
            std::thread::sleep(wake - now);
        }
    }
    start.elapsed()
}

/// Asserts that `confirmed` holds frames 1..=n in order with the checksums of `truth`.
pub(crate) fn assert_matches_truth(
    who: &str,
    confirmed: &[ConfirmedFrame],
    truth: &[u64],
    n: usize,
) {
    assert!(
        confirmed.len() >= n,
        "{who}: {} frames confirmed",
        confirmed.len()
    );
    for (i, c) in confirmed[..n].iter().enumerate() {
        assert_eq!(
            c.frame,
            i as u64 + 1,
            "{who}: frames in order, without a gap"
        );
        assert_eq!(
            c.checksum, truth[i],
            "{who}: frame {} differs from the single-process run",
            c.frame
        );
    }
}
