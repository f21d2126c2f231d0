//! The players of a session, checked twice: when it starts (each handle placed once, in
//! range, none missing) and while it runs, against what the peers' messages show of their
//! own set-up ([`SetupMismatch`]).
//!
//! ggrs's messages do not say which players a peer thinks it plays, nor how many players
//! its game has, but they show both. An `Input` message carries one connection status per
//! player of the sender's game (so its length is the sender's player count), the inputs of
//! every player the sender plays, each frame as one string of bytes (so its length is the
//! sender's local players times the input's size), and for each player the last frame the
//! sender has an input of. ggrs 0.13 sets a local player's last frame when it sends that
//! input, in the same call: in every `Input` message from a peer, the players it plays
//! locally have exactly the frame of the message's last input, while the others have
//! whatever the peer last received of theirs. A peer that plays other players than this
//! session has it playing shows that as soon as the two differ (a frame or more of
//! latency).

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use ggrs::PlayerHandle;

use crate::config::Address;

/// How a peer's set-up differs from this session's, as its messages show
/// ([`NetError::PeerSetup`](crate::NetError::PeerSetup)). Every peer of a match must be
/// given the same number of players, and each player at exactly one peer: a peer set up
/// otherwise would play another game (its inputs go to other players' ships), so its
/// messages are refused, and after a few the session stops with this.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SetupMismatch {
    /// The peer's game has `theirs` players; this session's has `ours`.
    PlayerCount {
        /// Players in the peer's game (its messages' connection statuses).
        theirs: usize,
        /// Players in this session's game.
        ours: usize,
    },
    /// The peer sends the inputs of `theirs` players each frame; this session has it
    /// playing `ours`.
    PeerPlayers {
        /// How many players the peer plays, by the size of its inputs.
        theirs: usize,
        /// The players this session has it playing.
        ours: Vec<PlayerHandle>,
    },
    /// The peer's inputs of a frame are `theirs` bytes, no multiple of this game's input
    /// size `ours`: another input type, another version of the game.
    InputSize {
        /// Bytes of the peer's inputs of one frame.
        theirs: usize,
        /// Bytes of one player's input here.
        ours: usize,
    },
    /// The peer plays other players than this session has it playing: its messages show
    /// it playing `theirs`, this session has it playing `ours`. `taken` are those of
    /// `theirs` that this session plays itself: two peers claim them.
    Players {
        /// The players this session has the peer playing.
        ours: Vec<PlayerHandle>,
        /// The players the peer's messages show it playing.
        theirs: Vec<PlayerHandle>,
        /// Players the peer claims that are local here.
        taken: Vec<PlayerHandle>,
    },
}

impl fmt::Display for SetupMismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SetupMismatch::PlayerCount { theirs, ours } => write!(
                f,
                "it sends inputs for a game of {theirs} players, this session has {ours}"
            ),
            SetupMismatch::PeerPlayers { theirs, ours } => write!(
                f,
                "it sends the inputs of {theirs} player(s) each frame, this session has it \
                 playing {} ({})",
                ours.len(),
                handles(ours)
            ),
            SetupMismatch::InputSize { theirs, ours } => write!(
                f,
                "its inputs of a frame are {theirs} bytes, no multiple of this game's \
                 {ours}-byte input: another input type or version of the game"
            ),
            SetupMismatch::Players {
                ours,
                theirs,
                taken,
            } => {
                write!(
                    f,
                    "its messages show it playing {}, this session has it playing {}",
                    handles(theirs),
                    handles(ours)
                )?;
                if !taken.is_empty() {
                    write!(
                        f,
                        "; {} also played here: two peers claim the same player",
                        handles(taken)
                    )?;
                }
                Ok(())
            }
        }
    }
}

/// "player 1", "players 0, 2", "no player".
fn handles(h: &[PlayerHandle]) -> String {
    let list = h.iter().map(|h| h.to_string()).collect::<Vec<_>>();
    match list.len() {
        0 => "no player".to_owned(),
        1 => format!("player {}", list[0]),
        _ => format!("players {}", list.join(", ")),
    }
}

/// Messages showing another set-up a peer may send before the session stops: an honest
/// peer of the same set-up sends none, and at 60 frames a second ggrs sends an `Input`
/// message each frame until its rollback window is full, then one every 200 ms, so this
/// many come within about a second.
pub(crate) const MISMATCHES_TO_STOP: u32 = 8;

/// How long a session runs before it stops on a peer's mismatch: meanwhile its own
/// `Input` messages (a burst as its rollback window fills, then ggrs's resend every
/// 200 ms: some 20) show the peer the same mismatch, so the peer stops with it too rather
/// than seeing this one fall silent.
const TELL_PEER: Duration = Duration::from_secs(2);

/// How long after the mismatch a session that never ran (held up by another peer's
/// handshake) stops on it anyway.
const GIVE_UP: Duration = Duration::from_secs(5);

/// What a session's packet checks know and count of its peers' set-ups.
#[derive(Debug)]
pub(crate) struct Claims<A> {
    /// The players each remote peer plays, as this session has it.
    players: HashMap<A, Vec<PlayerHandle>>,
    /// Messages from each peer that showed another set-up, and what they showed (the
    /// players a peer plays: those all its messages show it playing).
    seen: HashMap<A, (u32, SetupMismatch)>,
}

impl<A: Address> Default for Claims<A> {
    fn default() -> Self {
        Claims {
            players: HashMap::new(),
            seen: HashMap::new(),
        }
    }
}

impl<A: Address> Claims<A> {
    /// Peers playing the players `players` has at their addresses.
    pub(crate) fn new(players: HashMap<A, Vec<PlayerHandle>>) -> Self {
        Claims {
            players,
            ..Claims::default()
        }
    }

    /// The players the peer at `addr` plays here, if the session said.
    pub(crate) fn of(&self, addr: &A) -> Option<&[PlayerHandle]> {
        self.players.get(addr).map(Vec::as_slice)
    }

    /// Counts a message from `from` that showed `mismatch`; at the
    /// [`MISMATCHES_TO_STOP`]th, `watch` tells the session.
    ///
    /// A peer's own players show in every message it sends; another player's last frame
    /// shows as the peer's own only while the peer has that player's inputs as far as its
    /// own (when the game stalls, say): so what a peer plays is what all its messages show
    /// it playing.
    pub(crate) fn note(&mut self, from: &A, mismatch: SetupMismatch, watch: &Watch<A>) {
        let (n, seen) = self
            .seen
            .entry(from.clone())
            .or_insert_with(|| (0, mismatch.clone()));
        *n += 1;
        if let (
            SetupMismatch::Players { theirs, taken, .. },
            SetupMismatch::Players { theirs: now, .. },
        ) = (&mut *seen, &mismatch)
        {
            theirs.retain(|h| now.contains(h));
            taken.retain(|h| now.contains(h));
        }
        if *n >= MISMATCHES_TO_STOP {
            let mut first = watch.first.lock().unwrap_or_else(|e| e.into_inner());
            first.get_or_insert_with(|| (from.clone(), seen.clone(), Instant::now()));
            watch.flag.store(true, Ordering::Relaxed);
        }
    }
}

/// What the packet checks tell the session: the first peer whose messages showed another
/// set-up [`MISMATCHES_TO_STOP`] times, and when.
#[derive(Debug)]
pub(crate) struct Watch<A> {
    /// Set with `first` (read each tick without taking the lock).
    flag: AtomicBool,
    first: Mutex<Option<(A, SetupMismatch, Instant)>>,
    /// When the session first ran (its handshakes done).
    running: OnceLock<Instant>,
}

impl<A: Address> Watch<A> {
    pub(crate) fn new() -> Self {
        Watch {
            flag: AtomicBool::new(false),
            first: Mutex::new(None),
            running: OnceLock::new(),
        }
    }

    /// Called each tick, `running` once the session's handshakes are done: the peer set
    /// up for another game and how, once its messages showed it [`MISMATCHES_TO_STOP`]
    /// times and this session has run [`TELL_PEER`] (or [`GIVE_UP`] passed without it
    /// running).
    pub(crate) fn verdict(&self, running: bool) -> Option<(A, SetupMismatch)> {
        if running {
            self.running.get_or_init(Instant::now);
        }
        if !self.flag.load(Ordering::Relaxed) {
            return None;
        }
        let first = self.first.lock().unwrap_or_else(|e| e.into_inner());
        let (peer, mismatch, at) = first.as_ref()?;
        let told = self.running.get().is_some_and(|t| t.elapsed() >= TELL_PEER);
        (told || at.elapsed() >= GIVE_UP).then(|| (peer.clone(), mismatch.clone()))
    }
}

/// What a peer's inputs of a frame, `len` bytes where the players this session has it
/// playing (`claimed`) make other, show: the inputs of another number of players, or of
/// another size.
pub(crate) fn other_input_size(
    len: usize,
    input_size: usize,
    claimed: Option<&[PlayerHandle]>,
) -> SetupMismatch {
    if len > 0 && len.is_multiple_of(input_size) {
        SetupMismatch::PeerPlayers {
            theirs: len / input_size,
            ours: claimed.map(<[_]>::to_vec).unwrap_or_default(),
        }
    } else {
        SetupMismatch::InputSize {
            theirs: len,
            ours: input_size,
        }
    }
}

/// Whether the connection statuses of a peer's `Input` message (`(disconnected, last
/// frame)` per player) show it playing the players in `claimed` and no others, given that
/// the message's last input is for frame `last`; if not, what it shows. `locals` are this
/// session's players.
pub(crate) fn check_claims(
    statuses: &[(bool, i32)],
    last: i64,
    claimed: &[PlayerHandle],
    locals: &[PlayerHandle],
) -> Result<(), SetupMismatch> {
    let at_last = |h: PlayerHandle| statuses.get(h).is_some_and(|s| i64::from(s.1) == last);
    if claimed.iter().all(|&h| at_last(h)) {
        return Ok(());
    }
    let theirs: Vec<PlayerHandle> = (0..statuses.len()).filter(|&h| at_last(h)).collect();
    let taken = theirs
        .iter()
        .copied()
        .filter(|h| locals.contains(h))
        .collect();
    Err(SetupMismatch::Players {
        ours: claimed.to_vec(),
        theirs,
        taken,
    })
}

/// Where a player was placed, for the start-up messages.
fn place<A: Address>(addr: Option<&A>) -> String {
    match addr {
        None => "local".to_owned(),
        Some(a) => format!("remote at {a:?}"),
    }
}

/// Checks the players given to a builder: each of `0..players` placed once, as local or
/// at one remote address, and no other. What is wrong is said in terms of the builder's
/// calls.
pub(crate) fn check_players<A: Address>(
    players: usize,
    local: &[PlayerHandle],
    remote: &[(PlayerHandle, A)],
) -> Result<(), String> {
    if players == 0 {
        return Err("a session needs at least one player".to_owned());
    }
    let placed = local
        .iter()
        .map(|&h| (h, None))
        .chain(remote.iter().map(|(h, a)| (*h, Some(a))));
    let mut seen: Vec<Option<Option<&A>>> = vec![None; players];
    for (h, addr) in placed {
        let Some(seat) = seen.get_mut(h) else {
            return Err(format!(
                "player {h} ({}) is out of range: a game of {players} players has players 0 \
                 to {}",
                place(addr),
                players - 1
            ));
        };
        if let Some(before) = seat {
            let again = if *before == addr {
                format!("twice {}", place(addr))
            } else {
                format!("{} and {}", place(*before), place(addr))
            };
            return Err(format!(
                "player {h} is given twice ({again}): each player plays at one place"
            ));
        }
        *seat = Some(addr);
    }
    let missing: Vec<PlayerHandle> = (0..players).filter(|&h| seen[h].is_none()).collect();
    if !missing.is_empty() {
        let verb = if missing.len() == 1 { "is" } else { "are" };
        return Err(format!(
            "{} {verb} not given: each of the game's {players} players must be local \
             (local_player) or at a peer (remote_player)",
            handles(&missing)
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bad_set_up_is_named_in_the_builders_terms() {
        let ok = check_players::<u32>(4, &[2], &[(0, 10), (1, 11), (3, 13)]);
        assert_eq!(ok, Ok(()));
        let err = |players, local: &[usize], remote: &[(usize, u32)]| {
            check_players(players, local, remote).unwrap_err()
        };
        assert_eq!(
            err(3, &[0], &[(1, 11), (3, 13)]),
            "player 3 (remote at 13) is out of range: a game of 3 players has players 0 to 2"
        );
        assert_eq!(
            err(3, &[0, 0], &[(1, 11), (2, 12)]),
            "player 0 is given twice (twice local): each player plays at one place"
        );
        assert_eq!(
            err(3, &[0], &[(1, 11), (1, 12), (2, 12)]),
            "player 1 is given twice (remote at 11 and remote at 12): each player plays at \
             one place"
        );
        assert_eq!(
            err(3, &[1], &[(1, 11), (2, 12)]),
            "player 1 is given twice (local and remote at 11): each player plays at one place"
        );
        assert_eq!(
            err(4, &[0], &[(2, 12)]),
            "players 1, 3 are not given: each of the game's 4 players must be local \
             (local_player) or at a peer (remote_player)"
        );
        assert_eq!(err(0, &[], &[]), "a session needs at least one player");
        // Two players at one peer are a set-up like any other.
        assert_eq!(check_players::<u32>(3, &[0], &[(1, 11), (2, 11)]), Ok(()));
    }

    #[test]
    fn a_peer_plays_what_all_its_messages_show_it_playing() {
        // This session plays player 1 and has peer 9 playing player 2; peer 9 plays 0.
        let watch = Watch::new();
        let mut claims = Claims::new(HashMap::from([(9u32, vec![2])]));
        let shows = |theirs: Vec<PlayerHandle>| SetupMismatch::Players {
            ours: vec![2],
            taken: theirs.iter().copied().filter(|&h| h == 1).collect(),
            theirs,
        };
        // While the game stalls, our player 1's inputs reach the peer's own frame.
        claims.note(&9, shows(vec![0, 1]), &watch);
        claims.note(&9, shows(vec![0]), &watch);
        claims.note(&9, shows(vec![0, 1]), &watch);
        assert_eq!(claims.seen[&9], (3, shows(vec![0])));
        assert_eq!(
            watch.verdict(true),
            None,
            "not yet {MISMATCHES_TO_STOP} messages"
        );
        for _ in 3..MISMATCHES_TO_STOP {
            claims.note(&9, shows(vec![0, 1]), &watch);
        }
        let (peer, mismatch, _) = watch.first.lock().unwrap().clone().unwrap();
        assert_eq!((peer, mismatch), (9, shows(vec![0])));
        // Reported once the session has run long enough to show the peer the same.
        assert_eq!(watch.verdict(true), None);
    }

    #[test]
    fn the_players_a_peer_plays_show_in_its_statuses() {
        // The peer plays player 1 and has our player 0's inputs to frame 7: its message
        // ends at frame 9.
        let honest = [(false, 7), (false, 9)];
        assert_eq!(check_claims(&honest, 9, &[1], &[0]), Ok(()));
        // The same peer, set up to play player 0 (as we do): its own inputs are player
        // 0's, and ours are what it takes for player 1's.
        let rival = [(false, 9), (false, 7)];
        let e = check_claims(&rival, 9, &[1], &[0]).unwrap_err();
        assert_eq!(
            e,
            SetupMismatch::Players {
                ours: vec![1],
                theirs: vec![0],
                taken: vec![0]
            }
        );
        assert_eq!(
            e.to_string(),
            "its messages show it playing player 0, this session has it playing player 1; \
             player 0 also played here: two peers claim the same player"
        );
    }
}
