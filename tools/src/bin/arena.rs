//! `arena`: a game-like workload on runsync, reported the way a profiler would.
//!
//! Teams of agents steer at each other, push apart, bump, shoot, take damage, die and
//! respawn in waves — every system of `runsync-systems` plus a closure, all running at once
//! in the Run phase and merged in Sync. At the end: frames per second, Run/Sync
//! percentiles, per-system time and output counts, entities, merged/dropped outputs and
//! peak memory — all over the whole run, from statistics of a fixed size (histograms and
//! sums: `runsync_tools::report::RunStats`), so a run of hours takes no more memory for
//! them than a run of a minute; `--json` lists the records of the last frames only. With `--rollback N`, every frame also rolls back N frames and re-simulates
//! them, as rollback netcode does on every late input, and reports what that costs.
//! `--record FILE` records the run as a runsync replay; `--replay FILE` plays one back at
//! any worker count and reports the first divergence, if any. `--trace FILE` writes a
//! trace of the run (`Runtime::start_trace`) to open in <https://ui.perfetto.dev>, and
//! `--trace-picture FILE.svg` draws its last frames.
//! `cargo run --release -p runsync-tools --bin arena -- --help` for options.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::Parser;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use runsync::{LoadError, Replay, ReplayError, RuntimeSnapshot, SaveError};
use runsync_systems::Health;
use runsync_tools::digest::{desync_report, digest, first_mismatch};
use runsync_tools::report::{FrameRecord, RunStats, Summary, peak_memory_bytes, workers_phrase};
use runsync_tools::scenario::{
    ArenaConfig, TEAMS, arena_side, build, check_agents, recorded_config,
};
use runsync_tools::{chart, picture, trace_picture};
use serde::Serialize;

/// How many frames `--trace-picture` draws: the last ones of the trace.
const TRACE_PICTURE_FRAMES: usize = 3;

/// Teams of agents move, separate, collide, shoot, take damage, die and respawn.
#[derive(Parser, Debug)]
#[command(version, about)]
struct Args {
    /// Agents kept alive by the spawner's waves (projectiles come on top); at least one
    /// per team, at most 2^24 (16777216).
    #[arg(long, default_value_t = 100_000, value_parser = agent_count)]
    entities: usize,
    /// Frames to run (at least 1).
    #[arg(long, default_value_t = 600, value_parser = clap::value_parser!(u64).range(1..))]
    frames: u64,
    /// Worker threads, counting the main thread; 0 = one per core.
    #[arg(long, default_value_t = 0)]
    workers: usize,
    /// Seed of the spawner's random generator.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Canonical order (`World::set_canonical_order`): queries visit tables by their types
    /// and rows by entity id, re-sorted every frame; a frame then depends on the world's
    /// contents only. Changes the game's bits once deaths and waves take rows out of
    /// creation order (another iteration order), not its rules.
    /// Not with `--record`/`--replay` (replays start in creation order).
    #[arg(long, conflicts_with_all = ["record", "replay"])]
    canonical: bool,
    /// Print the summary and per-frame stats as JSON on stdout (instead of the table): the
    /// summary (percentiles, means, totals) is over the whole run; `frames` lists the last
    /// `--recent-frames` frames only (`frames_omitted` counts the earlier ones).
    #[arg(long)]
    json: bool,
    /// With `--json`: how many of the last frames' records `frames` lists (the report keeps
    /// them in a ring of that size, some 1.2 KB a frame).
    #[arg(long, value_name = "N", default_value_t = RunStats::DEFAULT_RECENT, requires = "json")]
    recent_frames: usize,
    /// Write an SVG chart of per-frame Run and Sync time (stacked) over the whole run to
    /// this file: one point a frame up to 2048 frames; past that, each point is the mean of
    /// consecutive frames (the legend says how many).
    #[arg(long, value_name = "FILE.svg")]
    chart: Option<PathBuf>,
    /// Draw the field at the end of the run (agents coloured by team, projectiles as dots)
    /// to this SVG file.
    #[arg(long, value_name = "FILE.svg")]
    picture: Option<PathBuf>,
    /// Run the same seed again on 1 worker and compare a digest of the whole world after
    /// every frame; at the first differing frame, print where the worlds differ (entity,
    /// component, both values) and exit with status 1.
    #[arg(long)]
    check_determinism: bool,
    /// Every frame, after it ran: save it (a snapshot and its checksum), restore the one
    /// from N frames back and re-simulate those N frames (saving each again), as rollback
    /// netcode does; check the world comes out bit-identical and report the cost per
    /// frame, with the snapshots' and the checksums' shares. 0 = off.
    #[arg(long, default_value_t = 0, value_name = "N")]
    rollback: u64,
    /// Make one system (`FailAt`, added for this) panic in frame N (the first frame is 1,
    /// as in runsync's messages and `stats().frame`): the frame fails, its outputs are
    /// discarded, the run goes on, and the failure is reported (and shown in Tracy with
    /// `--features tracy`). The exit status is then 1. Changes the game, so not with the
    /// checks that compare runs.
    #[arg(
        long,
        value_name = "N",
        value_parser = clap::value_parser!(u64).range(1..),
        conflicts_with_all = ["check_determinism", "rollback"]
    )]
    fail_at: Option<u64>,
    /// Serve the live inspector (runsync-inspect) at ADDR while the arena runs, paced at
    /// 60 frames a second: pause, step, rewind, browse entities, see who wrote what. Prints
    /// the page's URL. ADDR defaults to 127.0.0.1:0 (a free port on loopback). Bound to
    /// another address (0.0.0.0:7304, to be reached from another machine), the API needs
    /// the token the printed URL carries. The report then says the wall time, the frames'
    /// own time (the frames per second are over that) and the time paced or paused.
    #[arg(long, value_name = "ADDR", num_args = 0..=1, default_missing_value = "127.0.0.1:0",
          conflicts_with_all = ["check_determinism", "rollback"])]
    inspect: Option<String>,
    /// With `--inspect`: how many frames back the inspector can rewind (a snapshot of the
    /// world each; 0 = no rewind).
    #[arg(long, value_name = "N", default_value_t = 60, requires = "inspect")]
    inspect_ring: usize,
    /// With `--inspect` on a non-loopback ADDR: also accept NAME as the `Host` of requests
    /// (a DNS name this machine is reached by, besides its addresses and host name).
    /// Repeatable.
    #[arg(long, value_name = "NAME", requires = "inspect")]
    inspect_host: Vec<String>,
    /// Record the run as a replay in FILE: the arena's start (its configuration included),
    /// then every frame's checksum, and a save of the whole arena every `--keyframes`
    /// frames. Play it with `--replay FILE`. Not with the options that rewind or change
    /// the game.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["rollback", "fail_at", "inspect"])]
    record: Option<PathBuf>,
    /// With `--record`: a keyframe (a save of the whole arena) every N frames, from which
    /// a divergence report shows the values that differ; 0 = none. Each costs a save.
    #[arg(long, value_name = "N", default_value_t = 60, requires = "record")]
    keyframes: u64,
    /// Write a trace of the run to FILE (`Runtime::start_trace`): Chrome / Perfetto
    /// trace-event JSON, to open in ui.perfetto.dev (Perfetto) or chrome://tracing. Every
    /// frame the runtime runs (those `--rollback` re-simulates too), with its figures; Run,
    /// Sync and Sync's steps on the main thread; each system on the worker that ran it.
    /// Kept in memory until the run ends: some 3.4 KB a frame.
    #[arg(long, value_name = "FILE.json", conflicts_with_all = ["replay", "shards"])]
    trace: Option<PathBuf>,
    /// With `--trace`: also draw the trace's last 3 frames as a timeline, to this SVG
    /// file: one lane per thread, a bar per frame, Run, Sync, Sync's step and system,
    /// labelled where the name fits, on a time axis in milliseconds. Drawn from the
    /// written trace file, as it would draw any other.
    #[arg(long, value_name = "FILE.svg", requires = "trace")]
    trace_picture: Option<PathBuf>,
    /// Replay a recording made with `--record` (the same arena: agents and seed come from
    /// the file) on `--workers` workers, checking every frame's checksum. Prints how many
    /// frames matched, or, at the first frame that differs, the divergence: the frame,
    /// the entity and component that differ with both values, and the systems and outputs
    /// that wrote the replayed value; the exit status is then 1.
    #[arg(long, value_name = "FILE", conflicts_with_all = [
        "entities", "frames", "seed", "json", "chart", "picture", "check_determinism",
        "rollback", "fail_at", "inspect", "record",
    ])]
    replay: Option<PathBuf>,
    /// Split the arena into N shards (timely worker threads of this process, each with
    /// `--workers` runsync workers, default 1) with runsync-cluster, over square-ish tiles
    /// of the field, playing by local rules (the shared grid on a fixed lattice, exact
    /// team centres added up over the shards, each agent firing by its own hash: another
    /// game than the arena's own, whose systems see the whole world). Prints per-frame
    /// figures: agents, spawns, ghosts, migrations, times.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=64),
          conflicts_with_all = ["canonical", "json", "chart", "picture", "check_determinism",
          "rollback", "fail_at", "inspect", "record", "replay"])]
    shards: Option<u64>,
    /// With `--shards`: also run the same arena (local rules) in one process and compare
    /// the world's checksum after every frame; exit with status 1 at the first difference.
    /// With `--processes`, give it to every process (each computes its shards' part of
    /// the checksum); process 0 compares.
    #[arg(long, requires = "shards")]
    check: bool,
    /// With `--shards`: processes in all, each with `--shards` shards, over TCP (start
    /// one `arena` per process, the same options but `--process`).
    #[arg(long, value_name = "N", default_value_t = 1, requires = "shards")]
    processes: usize,
    /// With `--processes`: this process's index, from 0 (process 0 prints the report).
    #[arg(long, value_name = "I", default_value_t = 0, requires = "shards")]
    process: usize,
    /// With `--processes`: the processes' addresses, comma-separated, in process order
    /// (default: 127.0.0.1:7700, 127.0.0.1:7701, ...).
    #[arg(long, value_delimiter = ',', requires = "shards")]
    addresses: Vec<String>,
    /// With `--processes`: how long a process waits for the others to start, connect and
    /// agree (the same process and shard counts, frames, seed, `--check`), in seconds;
    /// past it, it stops with an error naming the address that never answered.
    #[arg(long, value_name = "SECS", default_value_t = 30.0, requires = "shards",
          value_parser = seconds)]
    connect_timeout: f64,
    /// With `--shards`: how long a shard waits for the others in one exchange round, in
    /// seconds; past it, the run stops with an error naming the shards (and processes) not
    /// heard from. A process that dies is noticed at once.
    #[arg(long, value_name = "SECS", default_value_t = 10.0, requires = "shards",
          value_parser = seconds)]
    peer_timeout: f64,
    /// With `--processes`: a secret every process is given (`Cluster::key`): processes
    /// prove it to each other before saying anything about their configuration, and a
    /// connection that does not is refused (logged) and waited past. Without it, anyone
    /// who reaches a waiting process can read its configuration digests or take a
    /// process's place. Other users of this machine can see a command line (`ps`).
    #[arg(long, value_name = "KEY", requires = "shards",
          value_parser = clap::builder::NonEmptyStringValueParser::new())]
    cluster_key: Option<String>,
}

/// `--connect-timeout`, `--peer-timeout`: a positive, finite number of seconds.
fn seconds(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(x) if x.is_finite() && x > 0.0 && x < 1e9 => Ok(x),
        Ok(x) => Err(format!("want a positive number of seconds, got {x}")),
        Err(e) => Err(e.to_string()),
    }
}

/// Snapshots of the last frames and the cost of rolling back over them.
struct Rollback {
    n: u64,
    /// Entry `f % (n + 1)` holds the state after frame `f`.
    ring: Vec<RuntimeSnapshot>,
    total: std::time::Duration,
    /// Of `total`, the time in `snapshot_into` and `restore`.
    copying: std::time::Duration,
    /// Of `total`, the time in the checksum of each save (`Runtime::checksum`).
    checksumming: std::time::Duration,
    worst: std::time::Duration,
    rollbacks: u64,
    /// The first frame whose re-simulation did not reproduce it, with the difference.
    mismatch: Option<String>,
}

impl Rollback {
    fn new(n: u64) -> Rollback {
        Rollback {
            n,
            ring: (0..=n).map(|_| RuntimeSnapshot::new()).collect(),
            total: std::time::Duration::ZERO,
            copying: std::time::Duration::ZERO,
            checksumming: std::time::Duration::ZERO,
            worst: std::time::Duration::ZERO,
            rollbacks: 0,
            mismatch: None,
        }
    }

    fn entry(&mut self, frame: u64) -> &mut RuntimeSnapshot {
        let len = self.ring.len() as u64;
        &mut self.ring[(frame % len) as usize]
    }

    /// A save as rollback netcode makes it: the snapshot, then the checksum it hands the
    /// other peers.
    fn save(&mut self, rt: &runsync::Runtime, frame: u64) {
        let t = Instant::now();
        rt.snapshot_into(self.entry(frame))
            .expect("the arena's types are all opted into snapshots");
        let copied = Instant::now();
        std::hint::black_box(rt.checksum());
        self.copying += copied - t;
        self.checksumming += copied.elapsed();
    }

    /// After a frame: save it; once `n` frames are saved, restore the oldest and re-run.
    fn after_frame(&mut self, rt: &mut runsync::Runtime, config: ArenaConfig) {
        let start = Instant::now();
        let now = rt.frame_count();
        self.save(rt, now);
        if now <= self.n {
            self.total += start.elapsed();
            return;
        }
        let want = digest(rt.world());
        let back = now - self.n;
        let len = self.ring.len();
        let t = Instant::now();
        rt.restore(&self.ring[(back % len as u64) as usize]);
        self.copying += t.elapsed();
        for _ in 0..self.n {
            rt.frame();
            let f = rt.frame_count();
            // The entry of `now` keeps the first run's state, to compare with.
            if f != now {
                self.save(rt, f);
            }
        }
        let spent = start.elapsed();
        self.total += spent;
        self.worst = self.worst.max(spent);
        self.rollbacks += 1;
        if self.mismatch.is_none() && digest(rt.world()) != want {
            let mut first_run = build(config);
            first_run.restore(self.entry(now));
            self.mismatch = Some(format!(
                "MISMATCH: re-simulating frames {}..={now} after a rollback did not reproduce \
                 frame {now}: {}",
                back + 1,
                desync_report(first_run.world(), rt.world())
            ));
        }
    }

    fn report(&self, frames: u64) -> String {
        let per = self.total.as_secs_f64() * 1e3 / frames.max(1) as f64;
        let copy = self.copying.as_secs_f64() * 1e3 / frames.max(1) as f64;
        let sums = self.checksumming.as_secs_f64() * 1e3 / frames.max(1) as f64;
        match &self.mismatch {
            Some(m) => m.clone(),
            None => format!(
                "{per:.3} ms/frame (of which snapshots + restore {copy:.3} ms, checksums \
                 {sums:.3} ms, the rest {n} re-simulated frames; worst {:.3} ms; {} \
                 rollbacks, all bit-identical)",
                self.worst.as_secs_f64() * 1e3,
                self.rollbacks,
                n = self.n
            ),
        }
    }
}

/// `--inspect`: the inspector served (the arena's types are shown as `Debug` text: see
/// `scenario::world`), frames paced at the game's 60 Hz so the page shows a game, not a
/// benchmark.
mod inspect {
    use std::time::{Duration, Instant};

    use runsync_inspect::Inspector;
    use runsync_systems::{Health, Projectile};
    use runsync_tools::scenario::ArenaSetup;

    /// Serves the inspector at `addr`, with the arena's picture of a `side` × `side`
    /// field (as `--picture` draws it), plots of the agents, their mean health and the
    /// projectiles, and the arena's setup among the resources.
    pub(super) fn start(
        addr: &str,
        ring: usize,
        hosts: &[String],
        side: f32,
    ) -> std::io::Result<Inspector> {
        let builder = Inspector::builder()
            .ring(ring)
            .picture(move |world, p| runsync_tools::picture::inspector(world, side, p))
            .plot("agents", |rt| {
                rt.world().query::<(&Health,)>().count() as f64
            })
            .plot_mean::<Health>("mean health", |h| f64::from(h.hp))
            .plot("projectiles", |rt| {
                rt.world().query::<(&Projectile,)>().count() as f64
            })
            .plot_memory()
            .resource::<ArenaSetup>();
        let builder = hosts.iter().fold(builder, |b, h| b.allow_host(h));
        let inspector = builder.bind(addr)?;
        println!("arena: inspector at {}", inspector.url());
        Ok(inspector)
    }

    /// Where the run's wall time went: the frames themselves, sleeping to pace them at
    /// 60 Hz, and the rest (paused, stepping, answering the page) — so the frames per
    /// second are the game's speed, not the pace's.
    #[derive(Default)]
    pub(super) struct Clock {
        frames: Duration,
        paced: Duration,
        waited: Duration,
    }

    impl Clock {
        /// After `Inspector::frame` in a loop turn that began at `start`: counts the
        /// frame's own time and the rest, sleeps out the 60 Hz step, and returns the
        /// frame's own time.
        pub(super) fn frame(&mut self, start: Instant, inspector: &Inspector) -> Duration {
            let own = inspector.last_frame_time();
            let turn = start.elapsed();
            self.frames += own;
            self.waited += turn.saturating_sub(own);
            let slept = Instant::now();
            std::thread::sleep((Duration::from_secs(1) / 60).saturating_sub(turn));
            self.paced += slept.elapsed();
            own
        }

        /// The report's line, for a run that took `wall`.
        pub(super) fn line(&self, wall: Duration) -> String {
            format!(
                "wall time        {:>12}   (frames {:.2} s, paced to 60 Hz {:.2} s, paused \
                 or answering the inspector {:.2} s)",
                format!("{:.2} s", wall.as_secs_f64()),
                self.frames.as_secs_f64(),
                self.paced.as_secs_f64(),
                self.waited.as_secs_f64()
            )
        }
    }
}

#[derive(Serialize)]
struct JsonReport<'a> {
    config: JsonConfig,
    summary: &'a Summary,
    determinism: Option<&'a str>,
    rollback: Option<&'a str>,
    /// One line per failed frame (`--fail-at`), the first [`FAILURES_LISTED`].
    failures: &'a [String],
    /// Every failed frame, listed or not.
    failed_frames: u64,
    /// The last `--recent-frames` frames, oldest first.
    frames: Vec<&'a FrameRecord>,
    /// Frames before those, not listed (the summary covers them).
    frames_omitted: u64,
}

/// Failed frames described one by one; the rest are counted. (A system that panics every
/// frame would otherwise grow the list for as long as the run.)
const FAILURES_LISTED: usize = 100;

#[derive(Serialize)]
struct JsonConfig {
    entities: usize,
    frames: u64,
    workers: usize,
    seed: u64,
    teams: u8,
    arena_side: f32,
}

fn progress(len: u64, label: &str, hidden: bool) -> ProgressBar {
    let bar = ProgressBar::new(len);
    if hidden {
        bar.set_draw_target(ProgressDrawTarget::hidden());
    } else {
        bar.set_style(
            ProgressStyle::with_template(
                "{prefix:>9} [{bar:40.cyan/blue}] {pos}/{len} frames  {per_sec}  eta {eta}",
            )
            .expect("valid template")
            .progress_chars("=> "),
        );
        bar.set_prefix(label.to_string());
    }
    bar
}

/// `--entities`: the rule a recording's configuration is held to as well.
fn agent_count(s: &str) -> Result<usize, String> {
    check_agents(s.parse().map_err(|e| format!("{e}"))?)
}

/// `--replay FILE`: plays the recording on `workers` workers.
fn replay(path: &Path, workers: usize) -> ExitCode {
    let read = std::fs::File::open(path)
        .map_err(LoadError::Io)
        .and_then(|f| Replay::read(&mut std::io::BufReader::new(f)))
        .map_err(|e| e.to_string())
        .and_then(|replay| Ok((recorded_config(&replay, workers)?, replay)));
    let (config, replay) = match read {
        Ok(r) => r,
        Err(e) => {
            eprintln!("arena: cannot replay {}: {e}", path.display());
            return ExitCode::from(2);
        }
    };
    let mut rt = build(config);
    println!(
        "arena: replaying {} frames of {} agents in {} teams, seed {}, on {}",
        replay.len(),
        config.agents,
        TEAMS,
        config.seed,
        workers_phrase(rt.workers())
    );
    let start = Instant::now();
    match rt.play_replay::<()>(&replay) {
        Ok(report) => match &report.divergence {
            None => {
                println!(
                    "replay           ok: {} frames, every checksum as recorded ({:.2} s)",
                    report.frames,
                    start.elapsed().as_secs_f64()
                );
                ExitCode::SUCCESS
            }
            Some(d) => {
                println!("replay           MISMATCH after {} frames", report.frames);
                print!("{d}");
                ExitCode::from(1)
            }
        },
        Err(e @ ReplayError::Frame { .. }) => {
            println!("replay           FAILED: {e}");
            ExitCode::from(1)
        }
        Err(e) => {
            eprintln!("arena: cannot replay {}: {e}", path.display());
            ExitCode::from(2)
        }
    }
}

fn main() -> ExitCode {
    let args = Args::parse();
    if let Some(path) = &args.replay {
        return replay(path, args.workers);
    }
    if let Some(shards) = args.shards {
        return sharded(&args, shards as usize);
    }
    // Fail before the run, not after it, if an output file cannot be written.
    for (what, path) in [
        ("chart", &args.chart),
        ("picture", &args.picture),
        ("replay", &args.record),
        ("trace", &args.trace),
        ("trace picture", &args.trace_picture),
    ] {
        if let Some(path) = path {
            if let Err(e) = std::fs::File::create(path) {
                eprintln!("arena: cannot write the {what} to {}: {e}", path.display());
                return ExitCode::from(2);
            }
        }
    }
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    if args.workers > cores {
        eprintln!(
            "arena: warning: {} workers on {cores} cores: threads take turns on a core, so \
             frames are slower and per-system times include time spent waiting for a core",
            args.workers
        );
    }
    let hidden = args.json || !std::io::stdout().is_terminal();
    let config = ArenaConfig {
        agents: args.entities,
        seed: args.seed,
        workers: args.workers,
    };

    let canonical = args.canonical;
    let build = |config: ArenaConfig| {
        let mut rt = build(config);
        rt.world_mut().set_canonical_order(canonical);
        rt
    };
    let mut rt = build(config);
    if let Some(n) = args.fail_at {
        // Once: a failed frame does not advance the frame count, so the retry is frame N
        // again. During frame N, `Time::frame` counts the N - 1 frames completed.
        let mut failed = false;
        rt.add_system_named(
            "FailAt",
            move |world: &runsync::World, _: &mut runsync::Output| {
                let running = world.get_resource::<runsync::Time>().map(|t| t.frame + 1);
                if !failed && running == Some(n) {
                    failed = true;
                    panic!("arena: --fail-at {n}: this frame fails on purpose");
                }
            },
        );
    }
    if args.record.is_some() {
        // The arena has no player input: the frames' inputs are `()`, never set.
        rt.record_replay_keyframes::<()>(args.keyframes)
            .expect("the arena's types and resources are all opted into saves");
    }
    if args.trace.is_some() {
        rt.start_trace();
    }
    let mut inspector = match &args.inspect {
        Some(addr) => match inspect::start(
            addr,
            args.inspect_ring,
            &args.inspect_host,
            arena_side(args.entities),
        ) {
            Ok(i) => Some(i),
            Err(e) => {
                eprintln!("arena: cannot serve the inspector at {addr}: {e}");
                return ExitCode::from(2);
            }
        },
        None => None,
    };
    let workers = rt.workers();
    if !args.json {
        println!(
            "arena: {} agents in {} teams on a {:.0}x{:.0} field, {} frames, {}, seed {}",
            args.entities,
            TEAMS,
            arena_side(args.entities),
            arena_side(args.entities),
            args.frames,
            workers_phrase(workers),
            args.seed
        );
    }

    let bar = progress(args.frames, "arena", hidden);
    let mut stats = RunStats::new(if args.json { args.recent_frames } else { 0 });
    let mut digests = Vec::new();
    let mut rollback = (args.rollback > 0).then(|| Rollback::new(args.rollback));
    let mut failures = Vec::new();
    let mut failed_frames = 0u64;
    let mut clock = inspect::Clock::default();
    let run_start = Instant::now();
    for _ in 0..args.frames {
        let start = Instant::now();
        let result = match &mut inspector {
            Some(i) => i.frame(&mut rt),
            None => rt.try_frame(),
        };
        let wall = match &inspector {
            // The frame's own time: not paused, paced or answering the page.
            Some(i) => clock.frame(start, i),
            None => start.elapsed(),
        };
        if let Err(e) = result {
            failed_frames += 1;
            if failures.len() < FAILURES_LISTED {
                failures.push(format!("frame {} failed: {e}", rt.stats().frame));
            }
        }
        stats.record(rt.stats(), wall);
        if args.check_determinism {
            digests.push(digest(rt.world()));
        }
        if let Some(r) = &mut rollback {
            r.after_frame(&mut rt, config);
        }
        bar.inc(1);
    }
    let run_wall = run_start.elapsed();
    let rollback_report = rollback.as_ref().map(|r| r.report(args.frames));
    let mut mismatch = rollback.as_ref().is_some_and(|r| r.mismatch.is_some());
    bar.finish_and_clear();
    let agents = rt.world().query::<(&Health,)>().count();
    let turrets = rt
        .world()
        .query::<(runsync::With<runsync::ChildOf>,)>()
        .count();
    let summary: Summary = stats.summary(workers, agents, turrets, peak_memory_bytes());
    if let Some(path) = &args.picture {
        let title = format!(
            "arena after {} frames: {agents} agents in {TEAMS} teams, projectiles as dots",
            args.frames
        );
        let side = arena_side(args.entities);
        if let Err(e) = picture::draw(path, rt.world(), side, &title) {
            eprintln!(
                "arena: could not write the picture to {}: {e}",
                path.display()
            );
            return ExitCode::from(2);
        }
    }
    let recorded = match &args.record {
        Some(path) => {
            let written = std::fs::File::create(path)
                .map_err(SaveError::Io)
                .and_then(|f| {
                    let mut w = std::io::BufWriter::new(f);
                    rt.finish_replay(&mut w)?;
                    w.flush().map_err(SaveError::Io)
                });
            if let Err(e) = written {
                eprintln!(
                    "arena: could not write the replay to {}: {e}",
                    path.display()
                );
                return ExitCode::from(2);
            }
            Some(path)
        }
        None => None,
    };
    let traced = match &args.trace {
        Some(path) => {
            let written = std::fs::File::create(path).and_then(|f| {
                let mut w = std::io::BufWriter::new(f);
                let frames = rt.finish_trace(&mut w)?;
                w.flush()?;
                Ok(frames)
            });
            match written {
                Ok(frames) => Some((path, frames)),
                Err(e) => {
                    eprintln!(
                        "arena: could not write the trace to {}: {e}",
                        path.display()
                    );
                    return ExitCode::from(2);
                }
            }
        }
        None => None,
    };
    drop(rt);
    if let (Some((trace, _)), Some(path)) = (traced, &args.trace_picture) {
        let title = format!("arena: {} agents, {workers} workers — trace", args.entities);
        if let Err(e) = trace_picture::draw(trace, path, TRACE_PICTURE_FRAMES, &title) {
            eprintln!(
                "arena: could not draw the trace picture to {}: {e}",
                path.display()
            );
            return ExitCode::from(2);
        }
    }

    let mut determinism: Option<String> = None;
    if args.check_determinism {
        let mut check = build(ArenaConfig {
            workers: 1,
            ..config
        });
        let bar = progress(args.frames, "1 worker", hidden);
        let first_diff = first_mismatch(&mut check, &digests, || bar.inc(1));
        bar.finish_and_clear();
        determinism = Some(match first_diff {
            None => format!(
                "ok: {} frames bitwise identical on {workers} workers and on 1 worker",
                digests.len()
            ),
            Some(i) => {
                mismatch = true;
                // Re-run the reference to the differing frame and say where it differs.
                let mut reference = build(config);
                for _ in 0..=i {
                    reference.frame();
                }
                format!(
                    "MISMATCH: the world first differs after frame {i} ({workers} workers vs \
                     1): {}",
                    desync_report(reference.world(), check.world())
                )
            }
        });
    }

    if let Some(path) = &args.chart {
        let title = format!(
            "arena: {} agents, {} — Run and Sync time per frame",
            args.entities,
            workers_phrase(workers)
        );
        if let Err(e) = chart::draw(path, &stats, &title) {
            eprintln!(
                "arena: could not write the chart to {}: {e}",
                path.display()
            );
            return ExitCode::from(2);
        }
    }

    if args.json {
        let report = JsonReport {
            config: JsonConfig {
                entities: args.entities,
                frames: args.frames,
                workers,
                seed: args.seed,
                teams: TEAMS,
                arena_side: arena_side(args.entities),
            },
            summary: &summary,
            determinism: determinism.as_deref(),
            rollback: rollback_report.as_deref(),
            failures: &failures,
            failed_frames,
            frames: stats.recent().collect(),
            frames_omitted: stats.frames() - stats.recent_len() as u64,
        };
        println!(
            "{}",
            serde_json::to_string(&report).expect("the report serialises")
        );
    } else {
        println!();
        print!("{}", summary.table());
        if inspector.is_some() {
            println!("{}", clock.line(run_wall));
        }
        if let Some(path) = &args.chart {
            println!("chart            {}", path.display());
        }
        if let Some(path) = &args.picture {
            println!("picture          {}", path.display());
        }
        if let Some(path) = recorded {
            println!(
                "replay           {} ({} frames; play it with --replay)",
                path.display(),
                args.frames
            );
        }
        if let Some((path, frames)) = traced {
            println!(
                "trace            {} ({frames} frames; open it in https://ui.perfetto.dev)",
                path.display()
            );
        }
        if let Some(path) = &args.trace_picture {
            println!(
                "trace picture    {} (the last {TRACE_PICTURE_FRAMES} frames)",
                path.display()
            );
        }
        if let Some(d) = &determinism {
            println!("determinism      {d}");
        }
        if let Some(r) = &rollback_report {
            println!("rollback {:<7} {r}", args.rollback);
        }
        for f in &failures {
            println!("failed           {f}");
        }
        if failed_frames > failures.len() as u64 {
            println!(
                "failed           and {} more frames",
                failed_frames - failures.len() as u64
            );
        }
    }
    if failed_frames > 0 {
        if args.json {
            for f in &failures {
                eprintln!("arena: {f}");
            }
            if failed_frames > failures.len() as u64 {
                eprintln!(
                    "arena: and {} more frames failed",
                    failed_frames - failures.len() as u64
                );
            }
        }
        return ExitCode::from(1);
    }
    if mismatch {
        if args.json {
            for m in [&determinism, &rollback_report].into_iter().flatten() {
                eprintln!("arena: {m}");
            }
        }
        return ExitCode::from(1);
    }
    ExitCode::SUCCESS
}

/// `--shards N`: the arena split into shards by local rules; with `--check`, compared with
/// one process frame by frame.
fn sharded(args: &Args, shards: usize) -> ExitCode {
    let config = ArenaConfig {
        agents: args.entities,
        seed: args.seed,
        workers: args.workers.max(1),
    };
    let timely = match runsync_cluster::cluster_config(
        shards,
        args.processes,
        args.process,
        &args.addresses,
    ) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("arena: {e}");
            return ExitCode::from(2);
        }
    };
    let total = shards * args.processes;
    let (cols, rows) = runsync_tools::sharded::tiles_for(total);
    if args.process == 0 {
        println!(
            "arena: {} agents by local rules, {total} shards ({cols} x {rows} tiles, mirror \
             range {}; {} process(es)), {} runsync worker(s) each, {} frames",
            config.agents,
            runsync_tools::sharded::MIRROR_RANGE,
            args.processes,
            config.workers,
            args.frames
        );
    }
    // Checksums (a hash of every entity's values) only to compare.
    let mut cluster = runsync_tools::sharded::cluster(config, total, args.frames)
        .checksums(args.check)
        .connect_timeout(Duration::from_secs_f64(args.connect_timeout))
        .peer_timeout(Duration::from_secs_f64(args.peer_timeout));
    if let Some(key) = &args.cluster_key {
        cluster = cluster.key(key);
    }
    let run = cluster.run(timely);
    let report = match run {
        Ok(Some(r)) => r,
        Ok(None) => return ExitCode::SUCCESS, // process 0 reports
        Err(e) => {
            eprintln!("arena: {e}");
            return ExitCode::FAILURE;
        }
    };
    println!("{}", report.table());
    if args.check {
        let one = match runsync_tools::sharded::cluster(config, 1, args.frames).run_in_one_process()
        {
            Ok(r) => r,
            Err(e) => {
                eprintln!("arena: the one-process run failed: {e}");
                return ExitCode::FAILURE;
            }
        };
        match (report.frames.iter().zip(&one.frames)).find(|(a, b)| a.checksum != b.checksum) {
            Some((a, b)) => {
                println!(
                    "check: frame {} differs from one process ({:#018x} vs {:#018x})",
                    a.frame, a.checksum, b.checksum
                );
                return ExitCode::FAILURE;
            }
            None => println!(
                "check: every frame's checksum equals one process's ({} frames)",
                one.frames.len()
            ),
        }
    }
    ExitCode::SUCCESS
}
