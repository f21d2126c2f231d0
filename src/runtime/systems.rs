//! Systems and stages: [`Runtime::add_system`] and its variants, [`Runtime::add_stage`],
//! enabling systems, and finding systems and stages by name or id.

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;

use super::builder::duplicate_stage;
use super::{Runtime, Stage};
use crate::output::SystemOutputs;
use crate::pool::Cost;
use crate::stats::{StageStats, SystemStats};
use crate::system::{StageId, System, SystemEntry, SystemId, SystemInfo};

impl Runtime {
    /// Adds a system to the first stage, named by [`System::name`] — a closure by its
    /// call site (`game.rs:42`). Systems run in parallel; their registration order decides
    /// the order of their outputs in every merge.
    #[track_caller]
    pub fn add_system<S: System>(&mut self, system: S) -> SystemId {
        self.add_system_to(StageId::FIRST, system)
    }

    /// Adds a system to the first stage under `name` (shown in stats and errors) — handy
    /// for closures.
    #[track_caller]
    pub fn add_system_named<S: System>(
        &mut self,
        name: impl Into<Cow<'static, str>>,
        system: S,
    ) -> SystemId {
        self.add_system_named_to(StageId::FIRST, name, system)
    }

    /// [`add_system`](Self::add_system) to stage `stage` (see
    /// [`add_stage`](Self::add_stage)): the system runs in that stage's Run, in parallel
    /// with the stage's other systems, and sees the world the previous stage's Sync left.
    ///
    /// # Panics
    /// If `stage` is not a stage of this runtime.
    #[track_caller]
    pub fn add_system_to<S: System>(&mut self, stage: StageId, system: S) -> SystemId {
        let name = system.name_at(std::panic::Location::caller());
        self.add_system_named_to(stage, name, system)
    }

    /// [`add_system_named`](Self::add_system_named) to stage `stage`.
    ///
    /// # Panics
    /// If `stage` is not a stage of this runtime.
    #[track_caller]
    pub fn add_system_named_to<S: System>(
        &mut self,
        stage: StageId,
        name: impl Into<Cow<'static, str>>,
        system: S,
    ) -> SystemId {
        let k = self.stage_index(stage);
        let id = SystemId(self.places.len() as u32);
        let name: Arc<str> = Arc::from(name.into().as_ref());
        self.stats.systems.push(SystemStats {
            id,
            name: name.clone(),
            stage,
            ran: false,
            time: Duration::ZERO,
            work: Duration::ZERO,
            span: Duration::ZERO,
            writes: 0,
            commands: 0,
        });
        // The system goes after the others of its stage: later stages' systems move up a
        // place.
        let place = self.stages[k].end;
        self.systems.insert(
            place,
            SystemEntry {
                id,
                stage,
                system: Box::new(system),
                name,
                enabled: true,
                ran: false,
                time: Duration::ZERO,
                writes: 0,
                cost: Cost::default(),
                out: SystemOutputs::default(),
                // Tracy's "go to source" opens where the user added the system.
                zone: crate::profile::ZoneSite::at(std::panic::Location::caller()),
                traced: Default::default(),
            },
        );
        for s in &mut self.stages[k..] {
            s.end += 1;
        }
        for p in &mut self.places {
            if *p as usize >= place {
                *p += 1;
            }
        }
        self.places.push(place as u32);
        id
    }

    /// Adds a stage at the end of the frame, named `name`, and returns it.
    ///
    /// A frame runs its stages in order, each a **Run** of its enabled systems — all at
    /// once, in parallel, with no order among them, as a frame always does — then a
    /// **Sync** of their outputs (merges, then structural commands, then hooks). The next
    /// stage's systems see the world that Sync left: what stage 1 writes, stage 2 reads in
    /// the same frame. Use a stage where a chain "input → movement → collision response"
    /// would otherwise cost a frame of latency per hop; systems with no such dependency
    /// belong in the same stage, where they run together.
    ///
    /// ```
    /// use runsync::prelude::*;
    /// #[derive(Clone, Copy, Debug, PartialEq)] struct Pos(f32);
    /// impl Component for Pos { type Output = f32; }
    /// #[derive(Clone, Copy, Debug, PartialEq)] struct Seen(f32);
    /// impl Component for Seen { type Output = Seen; }
    ///
    /// let mut world = World::new();
    /// world.register::<Pos>(|p: &mut Pos, d: &[f32]| p.0 += d.iter().sum::<f32>());
    /// world.register::<Seen>(merge::last);
    /// let e = world.spawn((Pos(0.0), Seen(-1.0)));
    /// let mut rt = Runtime::builder().workers(2).build(world);
    /// let react = rt.add_stage("react");
    /// rt.add_system(move |_: &World, out: &mut Output| out.write::<Pos>(e, 1.0));
    /// rt.add_system_to(react, move |w: &World, out: &mut Output| {
    ///     out.write::<Seen>(e, Seen(w.get::<Pos>(e).unwrap().0)); // stage 0's write, this frame
    /// });
    /// rt.frame();
    /// assert_eq!(rt.world().get::<Seen>(e), Some(&Seen(1.0)));
    /// assert_eq!(rt.stats().stages[react.index()].merged, 1);
    /// ```
    ///
    /// What holds across stages:
    /// - **Merge order** is per stage: a stage's Sync merges its systems' outputs in their
    ///   registration order. Two stages writing one component merge twice a frame.
    /// - **Spawns** made in a stage are alive (and queryable) in the next stage's Run;
    ///   `Output::spawn` ids are reserved per stage, deterministically.
    /// - **Messages and changes: every system sees each exactly once**, the first time it
    ///   runs after the Sync that delivered or made it, whichever stage sent or wrote it
    ///   and whichever reads. A system in stage `k` sees what stages `k..` did in the last
    ///   frame and what stages `..k` did in this one. So
    ///   [`World::messages`](crate::World::messages) holds what the last `S` Syncs
    ///   delivered (oldest first), and [`Changed`](crate::Changed) /
    ///   [`Added`](crate::Added) report what the last `S` Syncs did (between frames: the
    ///   whole last frame): each stage's Sync forgets what its own previous Sync
    ///   delivered and marked. A stage with no enabled system still takes that turn; a
    ///   stage that never has a system changes nothing. A disabled system misses what was
    ///   delivered and forgotten while it was disabled.
    /// - **Failures** stop the frame at the stage that failed: the later stages do not
    ///   run. Only a system panic in the *first* stage leaves the world unchanged and the
    ///   frame uncounted; once a stage has synced, its changes stay (see
    ///   [`FrameError`](crate::FrameError)).
    /// - [`set_enabled`](Self::set_enabled), [`watch`](Self::watch) (provenance records
    ///   each stage's Sync, with its stage), [`snapshot`](Self::snapshot) and
    ///   [`restore`](Self::restore) work as with one stage: they act between frames,
    ///   never between the stages of a frame.
    /// - [`stats`](Self::stats) has per-stage figures in
    ///   [`FrameStats::stages`](crate::FrameStats::stages); with Tracy, each stage is a
    ///   zone named by the stage around its Run and Sync (with one stage, no such zone).
    ///
    /// Cost: a stage is a Run and a Sync, so each one added costs about what a frame with
    /// only its systems costs (the fixed part: waking the workers twice, reserving spawn
    /// ids, Sync's steps). With several stages, change marks are set twice (per stage and
    /// in their union) and messages drain a range rather than swap a vector (see
    /// [`Changed`](crate::Changed)). A runtime with one stage pays nothing for the
    /// feature.
    ///
    /// # Panics
    /// If a stage is already named `name`.
    #[track_caller]
    pub fn add_stage(&mut self, name: impl Into<Cow<'static, str>>) -> StageId {
        let name = name.into();
        if self.stage_id(&name).is_some() {
            duplicate_stage(&name);
        }
        let id = StageId(self.stages.len() as u32);
        let name: Arc<str> = Arc::from(name.as_ref());
        self.stats.stages.push(StageStats::new(id, name.clone()));
        self.stages.push(Stage {
            name,
            end: self.systems.len(),
            zone: Default::default(),
        });
        id
    }

    /// The stage named `name`, if any.
    pub fn stage_id(&self, name: &str) -> Option<StageId> {
        self.stages
            .iter()
            .position(|s| &*s.name == name)
            .map(|k| StageId(k as u32))
    }

    /// The name of a stage.
    ///
    /// # Panics
    /// If `stage` is not a stage of this runtime.
    #[track_caller]
    pub fn stage_name(&self, stage: StageId) -> &str {
        &self.stages[self.stage_index(stage)].name
    }

    /// Number of stages (at least one).
    pub fn stage_count(&self) -> usize {
        self.stages.len()
    }

    #[track_caller]
    fn stage_index(&self, stage: StageId) -> usize {
        let n = self.stages.len();
        if stage.index() >= n {
            panic!(
                "runsync: {stage:?} is not a stage of this runtime ({n} stages); add stages \
                 with `Runtime::add_stage` or `RuntimeBuilder::stages`"
            );
        }
        stage.index()
    }

    /// Enables or disables a system from the next frame on. A disabled system does not run
    /// and emits nothing; the others are unaffected.
    ///
    /// # Panics
    /// If `id` is not from this runtime.
    pub fn set_enabled(&mut self, id: SystemId, enabled: bool) {
        self.entry(id).enabled = enabled;
    }

    /// Whether a system is enabled.
    ///
    /// # Panics
    /// If `id` is not from this runtime.
    #[track_caller]
    pub fn is_enabled(&self, id: SystemId) -> bool {
        self.entry_ref(id).enabled
    }

    /// The name of a system.
    ///
    /// # Panics
    /// If `id` is not from this runtime.
    #[track_caller]
    pub fn system_name(&self, id: SystemId) -> &str {
        &self.entry_ref(id).name
    }

    /// The first system (in registration order) named `name`, if any: how to find a
    /// system added elsewhere (by a plugin, by a closure named by its call site) to
    /// [disable](Self::set_enabled) it or read its [`stats`](Self::stats). Names need not
    /// be unique; [`systems`](Self::systems) lists them all. Cost: a walk over the systems.
    ///
    /// ```
    /// use runsync::prelude::*;
    /// let mut rt = Runtime::builder().workers(1).build(World::new());
    /// let ai = rt.add_system_named("ai", |_: &World, _: &mut Output| {});
    /// assert_eq!(rt.system_id("ai"), Some(ai));
    /// assert_eq!(rt.system_id("physics"), None);
    /// rt.set_enabled(rt.system_id("ai").unwrap(), false);
    /// let listed: Vec<_> = rt.systems().map(|s| (s.id, s.name, s.enabled)).collect();
    /// assert_eq!(listed, [(ai, "ai", false)]);
    /// ```
    pub fn system_id(&self, name: &str) -> Option<SystemId> {
        self.systems().find(|s| s.name == name).map(|s| s.id)
    }

    /// Every system, in registration order (the order of their ids), with its name and
    /// whether it is enabled. See [`system_id`](Self::system_id) for an example.
    pub fn systems(&self) -> impl ExactSizeIterator<Item = SystemInfo<'_>> + '_ {
        self.places.iter().map(|&p| {
            let s = &self.systems[p as usize];
            SystemInfo {
                id: s.id,
                name: &s.name,
                enabled: s.enabled,
                stage: s.stage,
            }
        })
    }

    /// Number of systems added, over all stages.
    pub fn system_count(&self) -> usize {
        self.systems.len()
    }

    /// The place of system `id` in `systems`.
    #[track_caller]
    fn place(&self, id: SystemId) -> usize {
        match self.places.get(id.index()) {
            Some(&p) => p as usize,
            None => panic!(
                "runsync: {id:?} is not a system of this runtime ({} systems)",
                self.places.len()
            ),
        }
    }

    #[track_caller]
    fn entry_ref(&self, id: SystemId) -> &SystemEntry {
        &self.systems[self.place(id)]
    }

    #[track_caller]
    fn entry(&mut self, id: SystemId) -> &mut SystemEntry {
        let p = self.place(id);
        &mut self.systems[p]
    }
}
