//! The fixed-step driver: [`Runtime::advance`] and its variants run as many frames as
//! elapsed real time pays for (counted by the builder's fixed step, `fixed_step`), and
//! [`Runtime::advance_stats`] adds up their figures.

use std::time::Duration;

use super::Runtime;
use crate::fixed_step::Advance;
use crate::stats::{AdvanceStats, FrameError};
use crate::world::World;

impl Runtime {
    /// Figures of every frame the last [`advance`](Self::advance) call ran (or
    /// [`try_advance`](Self::try_advance), [`advance_with`](Self::advance_with),
    /// [`try_advance_with`](Self::try_advance_with)): totals over the call and the
    /// slowest frame, and per system its totals and maxima — where [`stats`](Self::stats)
    /// describes only the call's last frame. Left as it was by a call that runs no frame
    /// and by [`frame`](Self::frame).
    ///
    /// ```
    /// use std::time::Duration;
    /// use runsync::prelude::*;
    ///
    /// let mut rt = Runtime::builder().fixed_hz(60).workers(1).build(World::new());
    /// rt.add_system_named("spawner", |_: &World, out: &mut Output| {
    ///     out.spawn(());
    /// });
    /// let step = rt.advance(Duration::from_millis(50)); // three 60 Hz frames
    /// let call = rt.advance_stats();
    /// assert_eq!((step.frames, call.frames, call.first), (3, 3, 1));
    /// assert_eq!(call.spawned, 3);                // rt.stats().spawned is the last frame's: 1
    /// assert_eq!(call.systems[0].runs, 3);
    /// assert_eq!(call.systems[0].commands, 3);
    /// assert!(call.max_frame <= call.run + call.sync);
    /// ```
    pub fn advance_stats(&self) -> &AdvanceStats {
        &self.advance_stats
    }

    /// Runs as many fixed-step frames as `elapsed` real time (plus what was left over from
    /// earlier calls) pays for, at most [`max_catch_up`](crate::RuntimeBuilder::max_catch_up), and
    /// says how far real time is past the last frame: the game loop's hard part.
    ///
    /// A game calls it once per rendered frame with the time since the previous call, then
    /// draws its entities interpolated by [`Advance::alpha`] between their previous and
    /// current positions. The simulation stays fixed-step (and so deterministic: the same
    /// elapsed times give the same frames) whatever the display rate. Afterwards
    /// [`stats`](Self::stats) describes the call's last frame, and
    /// [`advance_stats`](Self::advance_stats) all of them (totals, and maxima per system).
    ///
    /// ```
    /// use std::time::Duration;
    /// use runsync::prelude::*;
    ///
    /// let mut rt = Runtime::builder().fixed_hz(60).build(World::new());
    /// // A game loop, with a fake clock: three display frames of 25 ms.
    /// let mut simulated = 0;
    /// for _ in 0..3 {
    ///     let elapsed = Duration::from_millis(25); // really: now - last, from `Instant`
    ///     let step = rt.advance(elapsed);
    ///     simulated += step.frames;
    ///     // render(world, step.alpha): positions lerped by `alpha` between frames
    ///     assert!((0.0..1.0).contains(&step.alpha));
    /// }
    /// assert_eq!(simulated, 4); // 75 ms of 16.7 ms steps: 4 frames, 8.3 ms left over
    /// assert_eq!(rt.frame_count(), 4);
    /// ```
    ///
    /// # Panics
    /// If a frame fails, with the [`FrameError`]'s message (see [`frame`](Self::frame)),
    /// after leaving the world and the accumulated time as
    /// [`try_advance`](Self::try_advance) describes (use it to handle failures without
    /// unwinding); or if the fixed step is zero (`dt(0.0)`).
    #[track_caller]
    pub fn advance(&mut self, elapsed: Duration) -> Advance {
        match self.try_advance(elapsed) {
            Ok(a) => a,
            Err(e) => panic!("runsync: {e}"),
        }
    }

    /// [`advance`](Self::advance), reporting a failed frame instead of panicking.
    ///
    /// # Errors
    /// The first failed frame's [`FrameError`]; the call stops there. It leaves:
    /// - the frames before it run, and their time charged;
    /// - the failed frame's step charged exactly once if the frame counts as done
    ///   ([`FrameError::counts_as_done`]: every failure but a
    ///   [`FrameError::SystemPanicked`] in the first stage; the frame counter advanced,
    ///   the world holds what the error describes), so no later call simulates that time
    ///   again;
    /// - after a [`FrameError::SystemPanicked`] in the first stage, nothing charged for
    ///   that frame: the world and the frame counter are as before it, and the next call
    ///   runs it again;
    /// - the time of the frames after it accumulated, for the next call to run (up to
    ///   [`max_catch_up`](crate::RuntimeBuilder::max_catch_up) per call, as always);
    /// - time beyond the catch-up cap dropped as in a call that succeeds, unreported
    ///   (there is no [`Advance`] to report it in).
    ///
    /// # Panics
    /// If the fixed step is zero (`dt(0.0)`).
    #[track_caller]
    pub fn try_advance(&mut self, elapsed: Duration) -> Result<Advance, FrameError> {
        self.advance_inner(elapsed, |_, _| {})
    }

    /// [`advance`](Self::advance) with one input per simulated frame: before each frame it
    /// runs, `input(frame)` gives that frame's input (`frame` is its index, as
    /// [`frame_count`](Self::frame_count) before it), set as by
    /// [`frame_with`](Self::frame_with). Called exactly once per frame run, in order; a
    /// frame that is re-run after [`FrameError::SystemPanicked`] asks again.
    ///
    /// ```
    /// use std::time::Duration;
    /// use runsync::prelude::*;
    /// #[derive(Clone, Copy, Debug, PartialEq)]
    /// struct Pad(u64);
    ///
    /// let mut rt = Runtime::builder().fixed_hz(60).workers(1).build(World::new());
    /// let mut asked = Vec::new();
    /// let step = rt.advance_with(Duration::from_secs(1) / 20, |frame| {
    ///     asked.push(frame);
    ///     Pad(frame * 10) // e.g. `input_queue.pop_front()`, or the frame's recorded input
    /// });
    /// assert_eq!((step.frames, asked), (3, vec![0, 1, 2]));
    /// assert_eq!(rt.world().input::<Pad>(), &Pad(20));
    /// ```
    ///
    /// # Panics
    /// As [`advance`](Self::advance).
    #[track_caller]
    pub fn advance_with<I: Clone + Send + Sync + 'static>(
        &mut self,
        elapsed: Duration,
        input: impl FnMut(u64) -> I,
    ) -> Advance {
        match self.try_advance_with(elapsed, input) {
            Ok(a) => a,
            Err(e) => panic!("runsync: {e}"),
        }
    }

    /// [`advance_with`](Self::advance_with), reporting a failed frame instead of
    /// panicking, as [`try_advance`](Self::try_advance) does.
    ///
    /// # Errors
    /// As [`try_advance`](Self::try_advance).
    ///
    /// # Panics
    /// If the fixed step is zero (`dt(0.0)`).
    #[track_caller]
    pub fn try_advance_with<I: Clone + Send + Sync + 'static>(
        &mut self,
        elapsed: Duration,
        mut input: impl FnMut(u64) -> I,
    ) -> Result<Advance, FrameError> {
        self.advance_inner(elapsed, |world, frame| world.set_input(input(frame)))
    }

    /// The loop of [`try_advance`](Self::try_advance): `before(world, frame)` runs before
    /// each frame.
    #[track_caller]
    fn advance_inner(
        &mut self,
        elapsed: Duration,
        mut before: impl FnMut(&mut World, u64),
    ) -> Result<Advance, FrameError> {
        let (due, dropped) = self.clock.add(elapsed);
        if due > 0 {
            self.advance_stats.reset();
        }
        for _ in 0..due {
            let counted = self.frame;
            before(&mut self.world, self.frame);
            let result = self.try_frame();
            self.advance_stats.add(&self.stats, result.is_err());
            // A frame that counts as done (the counter moved: every failure but a
            // system's panic) has simulated its step, failed or not: charge it once.
            if self.frame != counted {
                self.clock.ran();
            }
            result?;
        }
        Ok(Advance {
            frames: due,
            alpha: self.clock.alpha(),
            dropped,
        })
    }
}
