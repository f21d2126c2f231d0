//! A sync test: ggrs's [`SyncTestSession`](ggrs::SyncTestSession) on a runsync game, as a
//! one-liner for the game's own tests. Every frame is run, then the last
//! `check_distance` frames are rolled back and run again with the same inputs, and the
//! checksum of every re-run frame must equal its first run's: the proof that the game
//! rolls back cleanly (everything it depends on is in the snapshot, nothing reads the
//! wall clock, no system keeps game state in its own fields).

use std::net::SocketAddr;

use ggrs::{GgrsError, GgrsRequest, SessionBuilder};
use runsync::Runtime;

use crate::config::NetConfig;
use crate::error::NetError;
use crate::input::NetInput;
use crate::rollback::Rollback;
use crate::session::check_ready;

/// What a passing [`sync_test`](fn@sync_test) did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct SyncTestReport {
    /// Frames run forward.
    pub frames: u64,
    /// Rollbacks (one per frame once `check_distance` frames have run).
    pub rollbacks: u64,
    /// Frames run again after rollbacks.
    pub resimulated: u64,
    /// Saved frames whose checksum was compared with an earlier run of the same frame.
    pub compared: u64,
    /// The world's checksum after the last frame.
    pub checksum: u64,
}

/// A sync test, set up: see [`sync_test`](fn@sync_test) for the one-liner.
///
/// ```
/// use runsync::prelude::*;
/// use runsync_net::{PlayerInputs, SyncTest};
///
/// #[derive(Component, Checksum, Clone, Copy, Debug, PartialEq)]
/// #[component(output = i64, merge = merge::sum, snapshot, checksum)]
/// struct Score(i64);
/// impl std::ops::AddAssign<i64> for Score { fn add_assign(&mut self, d: i64) { self.0 += d } }
///
/// let game = || {
///     let mut world = World::new();
///     world.register_default::<Score>();
///     world.spawn((Score(0),));
///     let mut rt = Runtime::builder().workers(2).build(world);
///     rt.add_system(|w: &World, out: &mut Output| {
///         let inputs = w.input::<PlayerInputs<i8>>();
///         for (e, _) in w.query::<(&Score,)>() {
///             out.write::<Score>(e, i64::from(inputs.get(0)) - i64::from(inputs.get(1)));
///         }
///     });
///     rt
/// };
/// let report = SyncTest::new(game, 2)
///     .frames(50)
///     .check_distance(4)
///     .run(|frame, player| (frame % 7) as i8 - player as i8)
///     .unwrap();
/// assert_eq!((report.frames, report.rollbacks), (50, 45)); // from frame 5 on
/// ```
#[derive(Clone, Debug)]
pub struct SyncTest<G> {
    game: G,
    players: usize,
    frames: u64,
    check_distance: usize,
    allow_unchecksummed: bool,
}

impl<G: Fn() -> Runtime> SyncTest<G> {
    /// A sync test of the game `game` builds (called once, and once more to show where
    /// the states differ if the test fails), for `players` players: 300 frames, each
    /// followed by a rollback of 7 frames (the deepest ggrs's default window allows).
    pub fn new(game: G, players: usize) -> Self {
        SyncTest {
            game,
            players,
            frames: 300,
            check_distance: 7,
            allow_unchecksummed: false,
        }
    }

    /// Frames to run forward (default 300).
    pub fn frames(mut self, frames: u64) -> Self {
        self.frames = frames;
        self
    }

    /// Frames rolled back and re-run after each frame (default 7; at least 2 for ggrs to
    /// compare anything).
    pub fn check_distance(mut self, frames: usize) -> Self {
        self.check_distance = frames;
        self
    }

    /// Runs even if some types' values are not in the checksum (a difference in them then
    /// goes unseen); without it the test fails with [`NetError::Unchecksummed`].
    pub fn allow_unchecksummed(mut self) -> Self {
        self.allow_unchecksummed = true;
        self
    }

    /// Runs the test, with player `p`'s input for frame `f` (runsync's number: the frame
    /// whose systems read it, from 1) given by `input(f, p)`.
    ///
    /// # Errors
    /// - [`NetError::SyncTestMismatch`]: a re-run frame ended with another checksum than
    ///   its first run, with the first difference between the two states;
    /// - [`NetError::Snapshot`], [`NetError::Unchecksummed`]: the game cannot be tested
    ///   (a type that cannot be snapshot, or whose values the checksum does not see);
    /// - [`NetError::Frame`]: a frame failed;
    /// - [`NetError::Ggrs`]: a check distance of 0 or one ggrs refuses.
    pub fn run<I: NetInput>(
        self,
        mut input: impl FnMut(u64, usize) -> I,
    ) -> Result<SyncTestReport, NetError> {
        let rt = (self.game)();
        check_ready(&rt, self.allow_unchecksummed)?;
        let window = self.check_distance + 1;
        let mut rb = Rollback::<I>::new(rt, self.players, window)?;
        let mut session = SessionBuilder::<NetConfig<I, SocketAddr>>::new()
            .with_num_players(self.players)?
            .with_max_prediction_window(window)
            .with_check_distance(self.check_distance)
            .start_synctest_session()?;
        // The checksum of each saved frame's first run, by ggrs frame.
        let mut first: Vec<Option<u64>> = Vec::new();
        let mut compared = 0;
        for _ in 0..self.frames {
            let next = rb.runtime().frame_count() + 1;
            for p in 0..self.players {
                session.add_local_input(p, input(next, p))?;
            }
            let requests = match session.advance_frame() {
                Ok(requests) => requests,
                Err(GgrsError::MismatchedChecksum {
                    mismatched_frames, ..
                }) => {
                    // Ours compares every save first; this is ggrs's second opinion.
                    let g = mismatched_frames.first().copied().unwrap_or(0);
                    return Err(NetError::SyncTestMismatch {
                        frame: rb.runsync_frame(g),
                        first: first.get(g as usize).copied().flatten().unwrap_or_default(),
                        again: rb.saved_checksum(g).unwrap_or_default(),
                        difference: None,
                    });
                }
                Err(e) => return Err(e.into()),
            };
            for request in requests {
                match request {
                    GgrsRequest::SaveGameState { cell, frame } => {
                        let g = usize::try_from(frame).unwrap_or(0);
                        let now = rb.runtime().checksum();
                        match first.get(g).copied().flatten() {
                            Some(sum) if sum != now => {
                                return Err(self.mismatch(&rb, frame, sum, now));
                            }
                            Some(_) => compared += 1,
                            None => {
                                if first.len() <= g {
                                    first.resize(g + 1, None);
                                }
                                first[g] = Some(now);
                            }
                        }
                        let checksum = rb.save(frame)?;
                        cell.save(frame, Some(frame), Some(u128::from(checksum)));
                    }
                    GgrsRequest::LoadGameState { frame, .. } => rb.load(frame)?,
                    GgrsRequest::AdvanceFrame { inputs } => rb.advance(&inputs)?,
                }
            }
        }
        let stats = rb.stats();
        Ok(SyncTestReport {
            frames: self.frames,
            rollbacks: stats.rollbacks,
            resimulated: stats.frames - self.frames,
            compared,
            checksum: rb.runtime().checksum(),
        })
    }

    /// The error for ggrs frame `frame`, whose earlier run had checksum `first` and whose
    /// re-run (the runtime's state now) has `again`: the ring still holds the earlier
    /// run's snapshot, restored into a second runtime of the game to find the first
    /// difference.
    fn mismatch<I: NetInput>(
        &self,
        rb: &Rollback<I>,
        frame: ggrs::Frame,
        first: u64,
        again: u64,
    ) -> NetError {
        let difference = rb.saved_snapshot(frame).and_then(|earlier| {
            let mut other = (self.game)();
            other
                .world_mut()
                .set_input(crate::input::PlayerInputs::<I>::empty(self.players));
            other.try_restore(earlier).ok()?;
            other.world().first_difference(rb.runtime().world())
        });
        NetError::SyncTestMismatch {
            frame: rb.runsync_frame(frame),
            first,
            again,
            difference,
        }
    }
}

/// The one-liner: `players` players, `frames` frames, each followed by a rollback of 7
/// frames and a re-run whose checksums must equal the first run's (see [`SyncTest`] for
/// the settings). `input(f, p)` is player `p`'s input for frame `f` (from 1).
///
/// ```
/// # use runsync::prelude::*;
/// # let game = || Runtime::builder().workers(1).build(World::new());
/// let report = runsync_net::sync_test(game, 2, 100, |frame, player| (frame as u8, player as u8)).unwrap();
/// assert_eq!(report.frames, 100);
/// ```
///
/// # Errors
/// As [`SyncTest::run`].
pub fn sync_test<I: NetInput>(
    game: impl Fn() -> Runtime,
    players: usize,
    frames: u64,
    input: impl FnMut(u64, usize) -> I,
) -> Result<SyncTestReport, NetError> {
    SyncTest::new(game, players).frames(frames).run(input)
}
