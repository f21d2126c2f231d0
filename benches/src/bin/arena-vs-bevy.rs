//! `arena-vs-bevy`: the arena on runsync and on its bevy_ecs 0.20 port, alternately, each
//! run in a fresh process, at the same thread count; prints the median frame rates, their
//! ratio, each system's time on both engines and the counts at the end.
//!
//! ```text
//! cargo run --release -p runsync-benches --bin arena-vs-bevy -- \
//!     --entities 100000 --frames 600 --workers 2 --runs 3
//! ```

use std::process::{Command, ExitCode};

use clap::Parser;
use runsync_benches::compare::{Engine, RunReport, run, table};
use runsync_tools::scenario::{ArenaConfig, TEAMS, arena_side, check_agents};

/// The arena on runsync and on bevy_ecs 0.20, side by side.
#[derive(Parser, Debug)]
#[command(version, about)]
struct Args {
    /// Agents kept alive by the spawner's waves (at least one per team).
    #[arg(long, default_value_t = 100_000, value_parser = agent_count)]
    entities: usize,
    /// Frames per run.
    #[arg(long, default_value_t = 600, value_parser = clap::value_parser!(u64).range(1..))]
    frames: u64,
    /// Threads for both engines: runsync's workers (the calling thread included), bevy's
    /// `ComputeTaskPool` threads; 0 = one per core.
    #[arg(long, default_value_t = 0)]
    workers: usize,
    /// Runs of each engine (alternating runsync, bevy, runsync, ...); medians are reported.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u64).range(1..=99))]
    runs: u64,
    /// Seed of the spawner (both engines draw the same waves from it).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Run one engine once in this process and print its report as one JSON line (what
    /// each child process does).
    #[arg(long, value_enum, hide = true)]
    engine: Option<Engine>,
}

fn agent_count(s: &str) -> Result<usize, String> {
    check_agents(s.parse().map_err(|e| format!("{e}"))?)
}

/// Runs `engine` in a child process of this binary and reads its report.
fn child(args: &Args, engine: Engine) -> Result<RunReport, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this binary: {e}"))?;
    let name = match engine {
        Engine::Runsync => "runsync",
        Engine::Bevy => "bevy",
    };
    let out = Command::new(exe)
        .args(["--engine", name])
        .args(["--entities", &args.entities.to_string()])
        .args(["--frames", &args.frames.to_string()])
        .args(["--workers", &args.workers.to_string()])
        .args(["--seed", &args.seed.to_string()])
        .output()
        .map_err(|e| format!("cannot start the {name} run: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "the {name} run failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().last().unwrap_or_default();
    serde_json::from_str(line)
        .map_err(|e| format!("the {name} run printed no report ({e}): {text}"))
}

fn main() -> ExitCode {
    let args = Args::parse();
    let config = ArenaConfig {
        agents: args.entities,
        seed: args.seed,
        workers: args.workers,
    };
    if let Some(engine) = args.engine {
        let report = run(engine, config, args.frames);
        println!(
            "{}",
            serde_json::to_string(&report).expect("a report serialises")
        );
        return ExitCode::SUCCESS;
    }
    let side = arena_side(args.entities);
    println!(
        "arena-vs-bevy: {} agents in {TEAMS} teams on a {side:.0}x{side:.0} field, {} frames, \
         seed {}, {} runs of each engine (alternating, a fresh process each)",
        args.entities, args.frames, args.seed, args.runs
    );
    let (mut rs, mut bv) = (Vec::new(), Vec::new());
    for i in 0..args.runs {
        for engine in [Engine::Runsync, Engine::Bevy] {
            match child(&args, engine) {
                Ok(r) => {
                    eprintln!(
                        "run {}/{}: {:<14} {:>8.1} fps on {} threads",
                        i + 1,
                        args.runs,
                        engine.label(),
                        r.fps,
                        r.threads
                    );
                    match engine {
                        Engine::Runsync => rs.push(r),
                        Engine::Bevy => bv.push(r),
                    }
                }
                Err(e) => {
                    eprintln!("arena-vs-bevy: {e}");
                    return ExitCode::FAILURE;
                }
            }
        }
    }
    println!(
        "threads: runsync {} (workers, the calling thread included), bevy_ecs {} \
         (ComputeTaskPool threads)\n",
        rs[0].threads, bv[0].threads
    );
    print!("{}", table(&rs, &bv));
    ExitCode::SUCCESS
}
