//! The arena on both engines, one run at a time, and the side-by-side table of
//! `arena-vs-bevy`.
//!
//! [`run`] plays one engine's arena for some frames and reports its frame rate, mean
//! per-system times and end counts ([`RunReport`]); the binary runs each in a fresh
//! process (bevy's task pool is a process-wide global, and neither run should inherit the
//! other's heap) and [`table`] sets the medians side by side.

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use runsync::{ChildOf, Runtime, With};
use std::sync::Arc;

use runsync_systems::{GlobalTransform, Health, Lifetime, Position, Projectile, Velocity};
use runsync_tools::scenario::{ArenaConfig, build};
use serde::{Deserialize, Serialize};

use crate::bevy_arena::{BevyArena, Counts, FrameTimes, SYSTEM_NAMES};
use crate::floor::{self, Floor, Stream};

/// Which engine plays the arena.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, Serialize, Deserialize)]
pub enum Engine {
    /// runsync's own arena (`runsync_tools::scenario::build`).
    Runsync,
    /// The bevy_ecs 0.20 port ([`BevyArena`]).
    Bevy,
}

impl Engine {
    /// Its name in the table.
    pub fn label(self) -> &'static str {
        match self {
            Engine::Runsync => "runsync",
            Engine::Bevy => "bevy_ecs 0.20",
        }
    }
}

/// runsync's arena with the same face as [`BevyArena`]: frames timed the same way, the
/// same counts.
pub struct RunsyncArena {
    rt: Runtime,
    deaths: u64,
    /// Each system's writes (outputs of every path) over the frames run, by name.
    writes: Vec<(Arc<str>, u64)>,
    frames: u64,
}

impl std::fmt::Debug for RunsyncArena {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunsyncArena")
            .field("deaths", &self.deaths)
            .finish_non_exhaustive()
    }
}

impl RunsyncArena {
    /// `runsync_tools::scenario::build(config)`, as the `arena` binary runs it.
    pub fn new(config: ArenaConfig) -> RunsyncArena {
        RunsyncArena {
            rt: build(config),
            deaths: 0,
            writes: Vec::new(),
            frames: 0,
        }
    }

    /// Runs one frame. `run` and `commands` are runsync's Run and Sync; each system's wall
    /// time and work are its own (`FrameStats::systems`), by name in [`SYSTEM_NAMES`]
    /// order.
    pub fn frame(&mut self) -> FrameTimes {
        let start = Instant::now();
        self.rt.frame();
        let wall = start.elapsed();
        let stats = self.rt.stats();
        let mut systems = [(Duration::ZERO, Duration::ZERO); SYSTEM_NAMES.len()];
        for s in &stats.systems {
            if let Some(i) = SYSTEM_NAMES.iter().position(|n| **n == *s.name) {
                systems[i] = (s.time, s.work);
            }
            if &*s.name == "Death" {
                self.deaths += s.commands as u64;
            }
            match self.writes.iter_mut().find(|(n, _)| *n == s.name) {
                Some((_, w)) => *w += s.writes as u64,
                None => self.writes.push((s.name.clone(), s.writes as u64)),
            }
        }
        self.frames += 1;
        FrameTimes {
            wall,
            run: stats.run,
            commands: stats.sync,
            systems,
        }
    }

    /// What the arena holds now.
    pub fn counts(&self) -> Counts {
        let w = self.rt.world();
        Counts {
            agents: w.query::<(&Health,)>().count(),
            projectiles: w.query::<(&Projectile,)>().count(),
            turrets: w.query::<(With<ChildOf>,)>().count(),
            deaths: self.deaths,
            entities: w.len(),
        }
    }

    /// The world, between frames.
    pub fn world(&self) -> &runsync::World {
        self.rt.world()
    }

    /// Its worker threads, the calling thread included.
    pub fn workers(&self) -> usize {
        self.rt.workers()
    }

    /// The mean frame's outputs as the fold's [`Stream`]s: each system's writes a frame
    /// (rounded), into the component types [`ARENA_WRITES`] says it writes (split evenly
    /// among them), with those types' and their outputs' sizes.
    ///
    /// # Errors
    /// Names a system that wrote but is not in [`ARENA_WRITES`] (the table is out of date).
    pub fn fold_streams(&self) -> Result<Vec<Stream>, String> {
        let frames = self.frames.max(1);
        let mut streams = Vec::new();
        for (name, writes) in &self.writes {
            let Some((_, types)) = ARENA_WRITES.iter().find(|(n, _)| **n == **name) else {
                if *writes > 0 {
                    return Err(format!(
                        "system {name} wrote {writes} outputs but ARENA_WRITES does not say into what"
                    ));
                }
                continue;
            };
            for &(column, column_bytes, value_bytes) in *types {
                streams.push(Stream {
                    column,
                    column_bytes,
                    values: (*writes / frames / types.len() as u64) as usize,
                    value_bytes,
                });
            }
        }
        // Streams of one type in registration order do not change the floor; by type
        // keeps the kernel's columns in a fixed order.
        streams.sort_by_key(|s| s.column);
        Ok(streams)
    }
}

/// A component type the arena's systems write into, for the fold's floor: its index in
/// the floor's list, the bytes of a component and of one of its outputs.
type Written = (usize, usize, usize);

const fn written<C: runsync::Component>(index: usize) -> Written {
    (
        index,
        std::mem::size_of::<C>(),
        std::mem::size_of::<C::Output>(),
    )
}

const VELOCITY: Written = written::<Velocity>(0);
const POSITION: Written = written::<Position>(1);
const GLOBAL: Written = written::<GlobalTransform>(2);
const LIFETIME: Written = written::<Lifetime>(3);
const HEALTH: Written = written::<Health>(4);

/// The component types each of the arena's systems writes (`runsync_tools::scenario`),
/// by system name. `BuildGrid` writes a resource, which the fold of components does not
/// take; the other systems write nothing.
pub const ARENA_WRITES: &[(&str, &[Written])] = &[
    ("BuildGrid", &[]),
    ("Steer", &[VELOCITY]),
    ("Drag", &[VELOCITY]),
    ("Separation", &[VELOCITY]),
    ("Integrate", &[POSITION]),
    ("PropagateTransforms", &[GLOBAL]),
    ("Bounds", &[POSITION, VELOCITY]),
    ("Contact", &[HEALTH]),
    ("Expire", &[LIFETIME]),
];

/// One engine's run of the arena, as the child process prints it (one JSON line).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunReport {
    /// The engine.
    pub engine: Engine,
    /// Threads it ran on (runsync: workers, the calling thread included; bevy: the
    /// `ComputeTaskPool`'s threads, which run every system while the calling thread waits).
    pub threads: usize,
    /// Frames run.
    pub frames: u64,
    /// Frames per second: frames / the frames' summed wall time.
    pub fps: f64,
    /// Median frame, in milliseconds.
    pub frame_p50_ms: f64,
    /// Mean time of the systems' phase (runsync: Run; bevy: the schedule), in ms.
    pub run_ms: f64,
    /// Mean time of the structural phase (runsync: Sync, merges included; bevy: applying
    /// the commands), in ms.
    pub commands_ms: f64,
    /// Mean work per frame of each system (its serial part plus every parallel chunk,
    /// wherever it ran: the time one thread would need), in [`SYSTEM_NAMES`] order, in ms.
    pub work_ms: Vec<f64>,
    /// Mean wall time per frame of each system, in [`SYSTEM_NAMES`] order, in ms (in bevy
    /// it includes other systems' tasks its thread ran while it waited for its batches).
    pub wall_ms: Vec<f64>,
    /// What the arena held at the end.
    pub end: Counts,
    /// runsync only: the floor of its mean frame's fold ([`floor`]), measured in the run's
    /// process after its frames.
    #[serde(default)]
    pub fold_floor: Option<Floor>,
}

/// Passes of the floor's kernel each way (warm, cold): a 100k-agent frame's fold is some
/// 0.1–0.3 ms and an eviction some 3 ms, so about 0.1 s in all.
const FLOOR_PASSES: usize = 21;

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Plays `engine`'s arena of `config` for `frames` frames and reports it.
///
/// # Panics
/// If `frames` is 0.
pub fn run(engine: Engine, config: ArenaConfig, frames: u64) -> RunReport {
    assert!(frames > 0, "a run needs at least one frame");
    enum Either {
        Runsync(Box<RunsyncArena>),
        Bevy(Box<BevyArena>),
    }
    let (mut arena, threads) = match engine {
        Engine::Runsync => {
            let a = RunsyncArena::new(config);
            let w = a.workers();
            (Either::Runsync(Box::new(a)), w)
        }
        Engine::Bevy => {
            let a = BevyArena::new(config);
            (
                Either::Bevy(Box::new(a)),
                bevy_tasks::ComputeTaskPool::get().thread_num(),
            )
        }
    };
    let mut walls = Vec::with_capacity(frames as usize);
    let (mut run, mut commands) = (Duration::ZERO, Duration::ZERO);
    let mut systems = [(Duration::ZERO, Duration::ZERO); SYSTEM_NAMES.len()];
    for _ in 0..frames {
        let t = match &mut arena {
            Either::Runsync(a) => a.frame(),
            Either::Bevy(a) => a.frame(),
        };
        walls.push(t.wall);
        run += t.run;
        commands += t.commands;
        for (sum, (wall, work)) in systems.iter_mut().zip(t.systems) {
            sum.0 += wall;
            sum.1 += work;
        }
    }
    let (end, fold_floor) = match &mut arena {
        Either::Runsync(a) => {
            let streams = a.fold_streams().unwrap_or_else(|e| panic!("{e}"));
            (a.counts(), Some(floor::measure(&streams, FLOOR_PASSES)))
        }
        Either::Bevy(a) => (a.counts(), None),
    };
    let n = frames as f64;
    let total: Duration = walls.iter().sum();
    walls.sort();
    RunReport {
        engine,
        threads,
        frames,
        fps: n / total.as_secs_f64(),
        frame_p50_ms: ms(walls[(walls.len() - 1) / 2]),
        run_ms: ms(run) / n,
        commands_ms: ms(commands) / n,
        work_ms: systems.iter().map(|s| ms(s.1) / n).collect(),
        wall_ms: systems.iter().map(|s| ms(s.0) / n).collect(),
        end,
        fold_floor,
    }
}

/// The median of `values` (the mean of the middle two for an even count; 0 when empty).
pub fn median(values: impl IntoIterator<Item = f64>) -> f64 {
    let mut v: Vec<f64> = values.into_iter().collect();
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    if v.len() % 2 == 1 {
        v[m]
    } else {
        (v[m - 1] + v[m]) / 2.0
    }
}

/// The side-by-side table of two engines' runs (each a non-empty list of one engine's
/// runs of the same arena): medians over the runs of the frame rate, the phases and each
/// system's mean time, the ratio runsync/bevy, and the end counts of the median run.
pub fn table(runsync: &[RunReport], bevy: &[RunReport]) -> String {
    let mut s = String::new();
    let med = |runs: &[RunReport], f: &dyn Fn(&RunReport) -> f64| median(runs.iter().map(f));
    let (fr, fb) = (med(runsync, &|r| r.fps), med(bevy, &|r| r.fps));
    let list = |runs: &[RunReport]| {
        runs.iter()
            .map(|r| format!("{:.1}", r.fps))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let _ = writeln!(
        s,
        "{:<22} {:>12} {:>14} {:>14}",
        "",
        Engine::Runsync.label(),
        Engine::Bevy.label(),
        "runsync/bevy"
    );
    let _ = writeln!(
        s,
        "{:<22} {:>12.1} {:>14.1} {:>14.2}",
        "fps (median)",
        fr,
        fb,
        fr / fb
    );
    let _ = writeln!(s, "fps of each run        runsync: {}", list(runsync));
    let _ = writeln!(s, "                       bevy:    {}", list(bevy));
    let ratio = |a: f64, b: f64| if b > 0.0 { a / b } else { f64::NAN };
    let row = |s: &mut String, name: &str, a: f64, b: f64| {
        let _ = writeln!(s, "{name:<22} {a:>12.3} {b:>14.3} {:>14.2}", ratio(a, b));
    };
    let _ = writeln!(s, "\nms per frame, mean (median of runs)");
    row(
        &mut s,
        "frame p50",
        med(runsync, &|r| r.frame_p50_ms),
        med(bevy, &|r| r.frame_p50_ms),
    );
    row(
        &mut s,
        "Run / schedule",
        med(runsync, &|r| r.run_ms),
        med(bevy, &|r| r.run_ms),
    );
    let (sync, commands) = (
        med(runsync, &|r| r.commands_ms),
        med(bevy, &|r| r.commands_ms),
    );
    row(&mut s, "Sync / commands", sync, commands);
    let floors: Vec<Floor> = runsync.iter().filter_map(|r| r.fold_floor).collect();
    if !floors.is_empty() {
        let f = |get: &dyn Fn(&Floor) -> f64| median(floors.iter().map(get));
        let (warm, cold) = (f(&|x| x.warm_ms), f(&|x| x.cold_ms));
        let mib = |b: f64| b / (1 << 20) as f64;
        let _ = writeln!(
            s,
            "fold floor, warm/cold  {warm:>12.3} {cold:>14.3}    ({:.2} MiB of outputs, \
             {:.2} MiB of columns a frame)",
            mib(f(&|x| x.value_bytes as f64)),
            mib(f(&|x| x.column_bytes as f64)),
        );
        row(&mut s, "Sync / commands+warm", sync, commands + warm);
        row(&mut s, "Sync / commands+cold", sync, commands + cold);
    }
    let _ = writeln!(
        s,
        "\nper system, ms per frame  {:>12} {:>14} {:>14} {:>12} {:>14}",
        "work runsync", "work bevy", "runsync/bevy", "wall runsync", "wall bevy"
    );
    for (i, name) in SYSTEM_NAMES.iter().enumerate() {
        let (a, b) = (
            med(runsync, &|r| r.work_ms[i]),
            med(bevy, &|r| r.work_ms[i]),
        );
        let (c, d) = (
            med(runsync, &|r| r.wall_ms[i]),
            med(bevy, &|r| r.wall_ms[i]),
        );
        let _ = writeln!(
            s,
            "  {name:<23} {a:>12.3} {b:>14.3} {:>14.2} {c:>12.3} {d:>14.3}",
            ratio(a, b)
        );
    }
    let sum = |runs: &[RunReport]| med(runs, &|r| r.work_ms.iter().sum());
    let (a, b) = (sum(runsync), sum(bevy));
    let _ = writeln!(
        s,
        "  {:<23} {a:>12.3} {b:>14.3} {:>14.2}",
        "all systems",
        ratio(a, b)
    );
    let end = |runs: &[RunReport], fps: f64| {
        runs.iter()
            .min_by(|a, b| (a.fps - fps).abs().total_cmp(&(b.fps - fps).abs()))
            .map(|r| r.end)
            .unwrap_or_default()
    };
    let (er, eb) = (end(runsync, fr), end(bevy, fb));
    let _ = writeln!(s, "\nat the end (the median run)");
    let counts = |s: &mut String, name: &str, a: u64, b: u64| {
        let diff = 100.0 * (b as f64 - a as f64) / (a as f64).max(1.0);
        let _ = writeln!(s, "{name:<22} {a:>12} {b:>14} {diff:>+13.1}%");
    };
    counts(&mut s, "agents", er.agents as u64, eb.agents as u64);
    counts(
        &mut s,
        "projectiles",
        er.projectiles as u64,
        eb.projectiles as u64,
    );
    counts(&mut s, "deaths", er.deaths, eb.deaths);
    counts(&mut s, "turrets", er.turrets as u64, eb.turrets as u64);
    counts(&mut s, "entities", er.entities as u64, eb.entities as u64);
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every system of the arena that writes is in `ARENA_WRITES`, so the floor counts
    /// every output; and the streams are the frames' writes.
    #[test]
    fn the_floor_takes_every_write_of_the_arena() {
        let mut a = RunsyncArena::new(ArenaConfig {
            agents: 400,
            seed: 1,
            workers: 1,
        });
        for _ in 0..3 {
            a.frame();
        }
        let streams = a.fold_streams().expect("every writer is in the table");
        let values: usize = streams.iter().map(|s| s.values).sum();
        let writes: u64 = a
            .writes
            .iter()
            .filter(|(n, _)| &**n != "BuildGrid")
            .map(|(_, w)| w)
            .sum();
        assert!(values > 0);
        // Each system's mean, rounded down, split among its types: within a value a
        // stream of the total.
        assert!(
            (writes / 3).abs_diff(values as u64) <= streams.len() as u64,
            "{values} values in the streams, {writes} writes in 3 frames"
        );
        a.writes.push(("Unknown".into(), 1));
        assert!(a.fold_streams().unwrap_err().contains("Unknown"));
    }

    #[test]
    fn median_of_odd_even_and_empty() {
        assert_eq!(median([3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median([4.0, 1.0, 2.0, 3.0]), 2.5);
        assert_eq!(median([]), 0.0);
    }
}
