//! `arena`: a game-like workload on runsync, reported the way a profiler would.
//!
//! Teams of agents steer at each other, push apart, bump, shoot, take damage, die and
//! respawn in waves — every system of `runsync-systems` plus a closure, all running at once
//! in the Run phase and merged in Sync. At the end: frames per second, Run/Sync
//! percentiles, per-system time and output counts, entities, merged/dropped outputs and
//! peak memory. `cargo run --release -p runsync-tools --bin arena -- --help` for options.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use clap::Parser;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use runsync_systems::Health;
use runsync_tools::digest::{digest, first_mismatch};
use runsync_tools::report::{FrameRecord, Summary, peak_memory_bytes};
use runsync_tools::scenario::{ArenaConfig, TEAMS, arena_side, build};
use runsync_tools::{chart, picture};
use serde::Serialize;

/// Teams of agents move, separate, collide, shoot, take damage, die and respawn.
#[derive(Parser, Debug)]
#[command(version, about)]
struct Args {
    /// Agents kept alive by the spawner's waves (projectiles come on top); at least one
    /// per team.
    #[arg(long, default_value_t = 100_000, value_parser = at_least_one_per_team)]
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
    /// Print per-frame and summary stats as JSON on stdout (instead of the table).
    #[arg(long)]
    json: bool,
    /// Write an SVG chart of per-frame Run and Sync time (stacked) to this file.
    #[arg(long, value_name = "FILE.svg")]
    chart: Option<PathBuf>,
    /// Draw the field at the end of the run (agents coloured by team, projectiles as dots)
    /// to this SVG file.
    #[arg(long, value_name = "FILE.svg")]
    picture: Option<PathBuf>,
    /// Run the same seed again on 1 worker and compare a digest of the whole world after
    /// every frame; exit with status 1 at the first differing frame.
    #[arg(long)]
    check_determinism: bool,
}

#[derive(Serialize)]
struct JsonReport<'a> {
    config: JsonConfig,
    summary: &'a Summary,
    determinism: Option<&'a str>,
    frames: &'a [FrameRecord],
}

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

/// `--entities`: the waves spawn whole teams, so fewer agents than teams would be none.
fn at_least_one_per_team(s: &str) -> Result<usize, String> {
    let n: usize = s.parse().map_err(|e| format!("{e}"))?;
    if n < usize::from(TEAMS) {
        return Err(format!(
            "the arena has {TEAMS} teams and spawns whole teams, so it needs at least {TEAMS} \
             agents (got {n})"
        ));
    }
    Ok(n)
}

fn main() -> ExitCode {
    let args = Args::parse();
    // Fail before the run, not after it, if an output file cannot be written.
    for (what, path) in [("chart", &args.chart), ("picture", &args.picture)] {
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

    let mut rt = build(config);
    let workers = rt.workers();
    if !args.json {
        println!(
            "arena: {} agents in {} teams on a {:.0}x{:.0} field, {} frames, {} workers, seed {}",
            args.entities,
            TEAMS,
            arena_side(args.entities),
            arena_side(args.entities),
            args.frames,
            workers,
            args.seed
        );
    }

    let bar = progress(args.frames, "arena", hidden);
    let mut records = Vec::with_capacity(args.frames as usize);
    let mut digests = Vec::new();
    for _ in 0..args.frames {
        let start = Instant::now();
        rt.frame();
        let wall = start.elapsed();
        records.push(FrameRecord::new(rt.stats(), wall));
        if args.check_determinism {
            digests.push(digest(rt.world()));
        }
        bar.inc(1);
    }
    bar.finish_and_clear();
    let agents = rt.world().query::<(&Health,)>().count();
    let summary = Summary::new(&records, workers, agents, peak_memory_bytes());
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
    drop(rt);

    let mut determinism: Option<String> = None;
    let mut mismatch = false;
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
                format!(
                    "MISMATCH: the world first differs after frame {i} ({workers} workers vs 1)"
                )
            }
        });
    }

    if let Some(path) = &args.chart {
        let title = format!(
            "arena: {} agents, {} workers — Run and Sync time per frame",
            args.entities, workers
        );
        if let Err(e) = chart::draw(path, &records, &title) {
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
            frames: &records,
        };
        println!(
            "{}",
            serde_json::to_string(&report).expect("the report serialises")
        );
    } else {
        println!();
        print!("{}", summary.table());
        if let Some(path) = &args.chart {
            println!("chart            {}", path.display());
        }
        if let Some(path) = &args.picture {
            println!("picture          {}", path.display());
        }
        if let Some(d) = &determinism {
            println!("determinism      {d}");
        }
    }
    if mismatch {
        if args.json {
            eprintln!("arena: {}", determinism.as_deref().unwrap_or_default());
        }
        return ExitCode::from(1);
    }
    ExitCode::SUCCESS
}
