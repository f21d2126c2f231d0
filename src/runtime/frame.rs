//! The frame loop: [`Runtime::frame`] and its variants run the frame's stages in order,
//! each a Run of its systems then a Sync of their outputs (`run_frame`, `stage`), and
//! keep the frame's figures ([`FrameStats`]); while a replay is recorded, each frame's
//! input and checksum are recorded around it (`replay`); while a trace is recorded, the
//! frame writes its timeline into it (`trace`: the frame's code is generic over a
//! [`Timeline`], chosen once per frame).

use std::ops::Range;
use std::time::{Duration, Instant};

use super::Runtime;
use super::builder::Time;
use crate::pool::Cost;
use crate::stats::{FrameError, FrameStats, MemoryStats, SystemRun};
use crate::sync::StageSync;
use crate::system::{StageId, SystemEntry};
use crate::trace::{Timeline, Untraced};

impl Runtime {
    /// Runs one frame: Run, then Sync (for each stage, in order).
    ///
    /// # Panics
    /// If the frame fails (a system, a merge, a hook or a `Drop` panicked), with the
    /// message of the [`FrameError`] — the world stays usable. Use
    /// [`try_frame`](Self::try_frame) to handle failures without unwinding.
    #[track_caller]
    pub fn frame(&mut self) {
        if let Err(e) = self.try_frame() {
            panic!("runsync: {e}");
        }
    }

    /// Runs one frame with `input` as its input: sets the resource
    /// [`Input<I>`](crate::Input) (see [`World::set_input`](crate::World::set_input)),
    /// which systems read with [`World::input`](crate::World::input), then runs the frame
    /// as [`frame`](Self::frame). The input stays until the next one is set, and is part
    /// of snapshots: after a [`restore`](Self::restore), the world holds the input it held
    /// then.
    ///
    /// Rollback (GGRS-style) in a few lines: keep a snapshot before each frame, and when
    /// a confirmed input contradicts a prediction, restore frame k and run again:
    ///
    /// ```
    /// use runsync::prelude::*;
    /// use runsync::RuntimeSnapshot;
    /// #[derive(Component, Checksum, Clone, Copy, Debug, PartialEq)]
    /// #[component(output = i32, merge = merge::sum, snapshot, checksum)]
    /// struct X(i32);
    /// impl std::ops::AddAssign<i32> for X { fn add_assign(&mut self, d: i32) { self.0 += d } }
    ///
    /// let game = || {
    ///     let mut world = World::new();
    ///     world.register_default::<X>();
    ///     world.spawn((X(0),));
    ///     let mut rt = Runtime::builder().workers(2).build(world);
    ///     rt.add_system(|w: &World, out: &mut Output| {
    ///         let step = *w.input::<i32>();
    ///         for (e, _) in w.query::<(&X,)>() { out.write::<X>(e, step); }
    ///     });
    ///     rt
    /// };
    /// let confirmed = [1, 2, 3, 4, 5, 6];
    /// let mut rt = game();
    /// let mut ring: Vec<RuntimeSnapshot> = (0..6).map(|_| RuntimeSnapshot::new()).collect();
    /// for f in 0..6 {
    ///     rt.snapshot_into(&mut ring[f]).unwrap();   // the state before frame f
    ///     rt.frame_with(0);                           // predicted input
    /// }
    /// let k = 2;                                      // inputs of k.. arrive: roll back
    /// rt.restore(&ring[k]);
    /// for f in k..6 {
    ///     rt.snapshot_into(&mut ring[f]).unwrap();
    ///     rt.frame_with(confirmed[f]);
    /// }
    /// let mut truth = game();
    /// for f in 0..6 { truth.frame_with(if f < k { 0 } else { confirmed[f] }); }
    /// assert_eq!(rt.world().checksum(), truth.world().checksum());
    /// ```
    ///
    /// # Panics
    /// As [`frame`](Self::frame).
    #[track_caller]
    pub fn frame_with<I: Clone + Send + Sync + 'static>(&mut self, input: I) {
        if let Err(e) = self.try_frame_with(input) {
            panic!("runsync: {e}");
        }
    }

    /// [`frame_with`](Self::frame_with), reporting a failure instead of panicking (see
    /// [`try_frame`](Self::try_frame)). The input is set whether or not the frame fails.
    ///
    /// # Errors
    /// As [`try_frame`](Self::try_frame).
    pub fn try_frame_with<I: Clone + Send + Sync + 'static>(
        &mut self,
        input: I,
    ) -> Result<(), FrameError> {
        self.world.set_input(input);
        self.try_frame()
    }

    /// Runs one frame: Run, then Sync, stage by stage; reports a failure instead of
    /// panicking.
    ///
    /// If a system panics, every system's outputs for this frame are discarded and the world
    /// is left exactly as it was ([`FrameError::SystemPanicked`]); the pool and the world
    /// stay usable, so the next frame may run. With several [stages](Self::add_stage), that
    /// holds for a panic in the first stage; a failure in a later stage leaves the earlier
    /// stages' changes applied. The frame stops at the stage that failed. Other failures
    /// are described on [`FrameError`].
    pub fn try_frame(&mut self) -> Result<(), FrameError> {
        if self.recorder.is_none() && self.trace.is_none() {
            return self.run_frame(&mut Untraced);
        }
        self.record_input();
        let counted = self.frame;
        let result = match self.trace.take() {
            Some(mut trace) => {
                let result = self.traced_frame(&mut trace);
                self.trace = Some(trace);
                result
            }
            None => self.run_frame(&mut Untraced),
        };
        if self.frame != counted {
            self.record_frame();
        }
        result
    }

    /// One frame, Run then Sync ([`try_frame`](Self::try_frame) without recording), its
    /// timeline written to `timeline`; with `tracing`, in a span `frame` whose counts are
    /// set once it ends.
    pub(super) fn run_frame<T: Timeline>(&mut self, timeline: &mut T) -> Result<(), FrameError> {
        let span = crate::profile::entered!(
            INFO, "frame", frame = self.frame + 1;
            entities, writes, commands, merged, dropped, spawned, despawned, messages
        );
        let result = self.frame_stages(timeline);
        let stats = &self.stats;
        crate::profile::record!(
            span,
            entities = stats.entities,
            writes = stats.systems.iter().map(|s| s.writes).sum::<usize>(),
            commands = stats.systems.iter().map(|s| s.commands).sum::<usize>(),
            merged = stats.merged,
            dropped = stats.dropped,
            spawned = stats.spawned,
            despawned = stats.despawned,
            messages = stats.messages,
        );
        result
    }

    /// The frame's stages, in order ([`run_frame`](Self::run_frame)).
    fn frame_stages<T: Timeline>(&mut self, timeline: &mut T) -> Result<(), FrameError> {
        let time = Time {
            dt: self.dt,
            frame: self.frame,
        };
        match self.world.get_resource_mut::<Time>() {
            Some(t) => *t = time,
            None => self.world.insert_resource(time),
        }
        // The number of this frame (from 1): what `frame_count()` says once it is done.
        self.stats.begin_frame(self.frame + 1);
        self.watches.frame = self.frame + 1;
        crate::profile::name_frame_thread();

        let stages = self.stages.len();
        let zones = stages > 1;
        let mut start = 0;
        // Whether a stage has synced this frame yet: the first one to forgets the last
        // frame's provenance records.
        let mut first = true;
        for k in 0..stages {
            let stage = &mut self.stages[k];
            let end = stage.end;
            // A stage with no enabled system is skipped (no reservation, no Run, no Sync)
            // but takes its turn: it forgets the marks and messages its last Sync made
            // (none, for a stage that never has a system: adding an empty stage changes
            // nothing a system, a checksum or a save sees).
            if !self.systems[start..end].iter().any(|entry| entry.enabled) {
                for entry in &mut self.systems[start..end] {
                    entry.ran = false;
                    self.stats.record_system(entry.id, SystemRun::default());
                }
                self.stats.stages[k].reset();
                start = end;
                let id = StageId(k as u32);
                if let Some(message) = crate::sync::sync_nothing(&mut self.world, id, stages) {
                    let error = FrameError::DropPanicked { message, stage: id };
                    return Err(self.stage_failed(k, error));
                }
                continue;
            }
            // A zone per stage, only if there are several (one stage: the frame's zones
            // as they always were).
            let _zone = zones.then(|| crate::profile::zone_named!(&mut stage.zone, stage.name));
            if zones {
                timeline.open_named(&stage.name, "stage");
            }
            let result = self.stage(StageId(k as u32), start..end, first, stages, timeline);
            if zones {
                timeline.close(Vec::new);
            }
            first = false;
            if let Err(error) = result {
                return Err(self.stage_failed(k, error));
            }
            start = end;
        }
        // Between frames too (checksums, snapshots, saves see the canonical layout).
        self.world.storage_mut().canonicalize();
        self.stats.entities = self.world.len();
        self.count_frame();
        self.profile_frame_end();
        Ok(())
    }

    /// One stage: the Run of the systems at `places`, then their Sync. Its figures go to
    /// the frame's stats, added to those of the stages before.
    fn stage<T: Timeline>(
        &mut self,
        stage: StageId,
        places: Range<usize>,
        first: bool,
        stages: usize,
        timeline: &mut T,
    ) -> Result<(), FrameError> {
        // Canonical order (when on): tables and rows sorted before the Run reads them.
        self.world.storage_mut().canonicalize();
        // Ids for this stage's spawns made in Run, per system, in place order
        // (deterministic).
        self.world
            .storage_mut()
            .reserve_for_stage(self.systems.len(), places.clone());
        self.run_stage(stage, places.clone(), timeline)?;
        let at = StageSync {
            stage,
            base: places.start,
            first,
            stages,
        };
        self.sync_stage(at, places, timeline)
    }

    /// A stage's Run: the systems at `places`, all at once, and their figures. If one
    /// panicked, every output of the stage is discarded and its spawn ids taken back.
    fn run_stage<T: Timeline>(
        &mut self,
        stage: StageId,
        places: Range<usize>,
        timeline: &mut T,
    ) -> Result<(), FrameError> {
        let base = places.start;
        let systems = &mut self.systems[places];
        let run_start = Instant::now();
        timeline.open("Run", "phase");
        let (run, cost) = Cost::measure(|| {
            let _zone = crate::profile::zone!(
                "Run",
                systems = systems.iter().filter(|s| s.enabled).count()
            );
            crate::run::run::<T>(&self.world, systems, base, &self.pool)
        });
        let time = run_start.elapsed();
        timeline.close(|| {
            let ran = systems.iter().filter(|s| s.ran).count();
            let us = |d: Duration| d.as_micros() as u64;
            vec![
                ("systems", ran.into()),
                ("work_us", us(cost.work_time()).into()),
                ("span_us", us(cost.span_time()).into()),
            ]
        });
        for entry in systems.iter() {
            self.stats.record_system(entry.id, system_run(entry));
            if T::ON && entry.ran {
                timeline.system(&entry.name, entry.traced, || {
                    vec![
                        ("writes", entry.writes.into()),
                        ("commands", entry.out.commands.len().into()),
                        ("own_us", (entry.time.as_micros() as u64).into()),
                    ]
                });
            }
        }
        self.stats
            .add_run(stage, time, cost.work_time(), cost.span_time());
        if let Err(p) = run {
            crate::sync::discard(systems);
            // The reservations are world state (snapshots, checksums): take them back.
            self.world.storage_mut().unreserve_frame();
            let entry = &systems[p.index];
            return Err(FrameError::SystemPanicked {
                system: entry.id,
                name: entry.name.clone(),
                message: p.message(),
                stage,
            });
        }
        Ok(())
    }

    /// A stage's Sync, `at`, of the systems at `places`, and its figures.
    fn sync_stage<T: Timeline>(
        &mut self,
        at: StageSync,
        places: Range<usize>,
        timeline: &mut T,
    ) -> Result<(), FrameError> {
        let systems = &mut self.systems[places];
        let sync_start = Instant::now();
        timeline.open("Sync", "phase");
        let (report, cost) = Cost::measure(|| {
            let zone = crate::profile::zone!(
                "Sync";
                merged, dropped, spawned, despawned, messages
            );
            let report = crate::sync::sync(
                &mut self.world,
                systems,
                at,
                &self.pool,
                &mut self.sync_scratch,
                &mut self.watches,
                timeline,
            );
            crate::profile::record!(
                zone.span,
                merged = report.merged,
                dropped = report.dropped + report.commands.dropped,
                spawned = report.commands.spawned,
                despawned = report.commands.despawned,
                messages = report.messages,
            );
            report
        });
        let time = sync_start.elapsed();
        let (figures, result) = report.into_result(at.stage);
        timeline.close(|| {
            vec![
                ("merged", figures.merged.into()),
                ("dropped", figures.dropped.into()),
                ("spawned", figures.spawned.into()),
                ("despawned", figures.despawned.into()),
                ("messages", figures.messages.into()),
            ]
        });
        self.stats
            .add_sync(at.stage, time, cost.work_time(), cost.span_time(), figures);
        result
    }

    /// Ends the frame at stage `k`, which failed with `error`: the later stages did not
    /// run, and the frame counts if the error says so.
    fn stage_failed(&mut self, k: usize, error: FrameError) -> FrameError {
        self.skip_stages_after(k);
        self.stats.entities = self.world.len();
        if error.counts_as_done() {
            self.count_frame();
        }
        self.frame_failed(error)
    }

    /// After stage `k` failed: the later stages and their systems did not run.
    fn skip_stages_after(&mut self, k: usize) {
        let from = self.stages[k].end;
        for entry in &self.systems[from..] {
            self.stats.record_system(entry.id, SystemRun::default());
        }
        for figures in &mut self.stats.stages[k + 1..] {
            figures.reset();
        }
    }

    /// The frame counts as done: the counter and [`Time::frame`] advance.
    fn count_frame(&mut self) {
        self.frame += 1;
        if let Some(t) = self.world.get_resource_mut::<Time>() {
            t.frame = self.frame;
        }
    }

    /// Ends a failed frame: a Tracy message saying why (with `tracy`) and an error event
    /// in the frame's span (with `tracing`), then the frame's plots and mark, so the
    /// failure sits in its frame on the timeline.
    #[cold]
    fn frame_failed(&self, error: FrameError) -> FrameError {
        crate::profile::message(format_args!(
            "runsync: frame {} failed: {error}",
            self.stats.frame
        ));
        crate::profile::frame_failed(self.stats.frame, &error);
        self.profile_frame_end();
        error
    }

    /// Figures of the last frame.
    pub fn stats(&self) -> &FrameStats {
        &self.stats
    }

    /// Memory held by the world and the output buffers. Walks every column and buffer:
    /// cheap, but not free — call it for diagnostics, not every frame.
    pub fn memory(&self) -> MemoryStats {
        let (tables, entity_slots, component_bytes, fold_bytes) = self.world.memory();
        MemoryStats {
            tables,
            entity_slots,
            component_bytes,
            output_bytes: self
                .systems
                .iter()
                .map(|s| s.out.capacity_bytes())
                .sum::<usize>()
                + fold_bytes,
        }
    }

    /// Frames completed so far: the number of the last frame completed (frames count from
    /// 1; 0 before the first). Equal to [`Time::frame`] and, after a frame that counts, to
    /// [`stats().frame`](FrameStats::frame); see [frame numbers](Time#frame-numbers).
    /// A frame counts once it is completed, or fails in any way but
    /// [`FrameError::SystemPanicked`] in its first stage ([`FrameError::counts_as_done`]).
    pub fn frame_count(&self) -> u64 {
        self.frame
    }

    /// The end of a frame on the Tracy timeline (nothing without `tracy`): the frame's
    /// plots, then its frame mark.
    fn profile_frame_end(&self) {
        use crate::profile::runtime_plot as plot;
        let (stats, p) = (&self.stats, &self.profile);
        plot!(p, Entities, stats.entities as f64);
        plot!(
            p,
            Writes,
            stats.systems.iter().map(|s| s.writes).sum::<usize>() as f64
        );
        plot!(
            p,
            Commands,
            stats.systems.iter().map(|s| s.commands).sum::<usize>() as f64
        );
        plot!(p, Merged, stats.merged as f64);
        plot!(p, WorkMs, stats.work.as_secs_f64() * 1e3);
        plot!(p, SpanMs, stats.span.as_secs_f64() * 1e3);
        plot!(p, SpeedupBound, stats.speedup_bound(usize::MAX));
        plot!(p, Dropped, stats.dropped as f64);
        // `memory()` walks every column and buffer: with `tracy` only, once per frame.
        #[cfg(feature = "tracy")]
        {
            let memory = self.memory();
            plot!(p, ComponentBytes, memory.component_bytes as f64);
            plot!(p, OutputBytes, memory.output_bytes as f64);
        }
        p.frame_mark();
    }
}

/// What `entry`'s system did in the Run that just ended, for its
/// [`SystemStats`](crate::SystemStats): all zero but the command count if it did not
/// run.
fn system_run(entry: &SystemEntry) -> SystemRun {
    let cost = if entry.ran {
        entry.cost
    } else {
        Cost::default()
    };
    SystemRun {
        ran: entry.ran,
        time: if entry.ran {
            entry.time
        } else {
            Duration::ZERO
        },
        work: cost.work_time(),
        span: cost.span_time(),
        writes: if entry.ran { entry.writes } else { 0 },
        commands: entry.out.commands.len(),
    }
}
