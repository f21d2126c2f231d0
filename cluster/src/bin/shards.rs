//! The model scenario (`runsync_cluster::model`) sharded over timely workers: threads of
//! this process (`--shards N`), or several processes on this machine or others
//! (`--processes 2 --process 0|1`, addresses `127.0.0.1:7700`, `127.0.0.1:7701`, ... or
//! `--addresses`). Prints per-frame figures (shards, ghosts, migrations, bytes, times)
//! and, with `--check`, compares every frame's checksum with the same world run in one
//! process.
//!
//! ```text
//! cargo run --release -p runsync-cluster --bin shards -- --shards 4 --check
//! # two processes on loopback, two shards each (in two terminals):
//! cargo run --release -p runsync-cluster --bin shards -- --processes 2 --process 0 --shards 2
//! cargo run --release -p runsync-cluster --bin shards -- --processes 2 --process 1 --shards 2
//! ```

use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use runsync_cluster::{Cluster, model};

/// The model scenario, sharded over timely workers.
#[derive(Parser)]
#[command(version, about)]
struct Args {
    /// Shards (timely worker threads) in this process.
    #[arg(long, default_value_t = 2)]
    shards: usize,
    /// Processes in all (each with `--shards` shards).
    #[arg(long, default_value_t = 1)]
    processes: usize,
    /// This process's index, from 0.
    #[arg(long, default_value_t = 0)]
    process: usize,
    /// The processes' addresses, comma-separated (default: 127.0.0.1:7700, :7701, ...).
    #[arg(long, value_delimiter = ',')]
    addresses: Vec<String>,
    /// Agents.
    #[arg(long, default_value_t = 20_000)]
    entities: usize,
    /// Frames.
    #[arg(long, default_value_t = 100)]
    frames: u64,
    /// Mirror range (default: twice the model's interaction range, what it needs).
    #[arg(long)]
    range: Option<f32>,
    /// Tiles instead of bands: `COLSxROWS` (e.g. `4x2`), tile `k` on shard `k % shards`.
    #[arg(long)]
    tiles: Option<String>,
    /// Also run the world in one process and compare every frame's checksum.
    #[arg(long)]
    check: bool,
    /// Print one line per frame: `frame N checksum 0x...` (for scripts and tests).
    #[arg(long)]
    checksums: bool,
    /// Skip the per-frame checksum (about 15 ns per entity): time only the sharding.
    #[arg(long, conflicts_with_all = ["check", "checksums"])]
    no_checksums: bool,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let config = match runsync_cluster::cluster_config(
        args.shards,
        args.processes,
        args.process,
        &args.addresses,
    ) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("shards: {e}");
            return ExitCode::FAILURE;
        }
    };
    let entities = args.entities;
    let range = args.range.unwrap_or(2.0 * model::RANGE);
    let result = match &args.tiles {
        None => Cluster::new(
            model::bands_of(entities, range),
            move || model::world_of(entities),
            model::systems_of(entities),
        )
        .frames(args.frames)
        .checksums(!args.no_checksums)
        .run(config),
        Some(tiles) => {
            let Some((cols, rows)) = tiles
                .split_once('x')
                .and_then(|(c, r)| Some((c.parse().ok()?, r.parse().ok()?)))
                .filter(|&(c, r): &(usize, usize)| c > 0 && r > 0)
            else {
                eprintln!("shards: --tiles wants COLSxROWS, e.g. 4x2 (got {tiles:?})");
                return ExitCode::FAILURE;
            };
            Cluster::new(
                model::tiles_of(entities, cols, rows, range),
                move || model::world_of(entities),
                model::systems_of(entities),
            )
            .frames(args.frames)
            .checksums(!args.no_checksums)
            .run(config)
        }
    };
    let report = match result {
        Ok(Some(report)) => report,
        Ok(None) => return ExitCode::SUCCESS, // another process reports
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    if args.checksums {
        for f in &report.frames {
            println!("frame {} checksum {:#018x}", f.frame, f.checksum);
        }
    }
    print_report(&report, entities, range);
    if args.check {
        let one = model::reference_of(entities, args.frames);
        let first = (report.frames.iter().zip(&one)).position(|(f, &c)| f.checksum != c);
        match first {
            None => println!(
                "check: every frame's checksum equals one process's ({} frames)",
                one.len()
            ),
            Some(i) => {
                println!(
                    "check: frame {} differs from one process ({:#018x} vs {:#018x})",
                    i + 1,
                    report.frames[i].checksum,
                    one[i]
                );
                return ExitCode::FAILURE;
            }
        }
    }
    ExitCode::SUCCESS
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn print_report(report: &runsync_cluster::Report, entities: usize, range: f32) {
    println!(
        "{} shards, {entities} agents, mirror range {range}, {} frames",
        report.shards,
        report.frames.len()
    );
    println!(
        "{:>6} {:>8} {:>6} {:>8} {:>10} {:>10} {:>9} {:>9} {:>9}",
        "frame",
        "agents",
        "born",
        "ghosts",
        "migrated",
        "KiB sent",
        "frame ms",
        "run ms",
        "xchg ms"
    );
    let every = (report.frames.len() / 10).max(1);
    for f in report
        .frames
        .iter()
        .filter(|f| f.frame as usize % every == 0)
    {
        println!(
            "{:>6} {:>8} {:>6} {:>8} {:>10} {:>10.1} {:>9.2} {:>9.2} {:>9.2}",
            f.frame,
            f.entities,
            f.spawned,
            f.ghosts,
            f.migrations,
            f.bytes as f64 / 1024.0,
            ms(f.time),
            ms(f.run_sync),
            ms(f.exchange)
        );
    }
    // Medians over the frames after the first tenth (warm-up).
    let skip = report.frames.len() / 10;
    let median = |key: &dyn Fn(&runsync_cluster::FrameReport) -> f64| {
        let mut v: Vec<f64> = report.frames[skip..].iter().map(key).collect();
        v.sort_by(f64::total_cmp);
        v.get(v.len() / 2).copied().unwrap_or(0.0)
    };
    println!(
        "median: frame {:.2} ms (import {:.2}, run+sync {:.2}, export {:.2}, exchange {:.2} \
         ms), {:.0} born, {:.0} ghosts, {:.0} migrations, {:.1} KiB sent per frame",
        median(&|f| ms(f.time)),
        median(&|f| ms(f.import)),
        median(&|f| ms(f.run_sync)),
        median(&|f| ms(f.export)),
        median(&|f| ms(f.exchange)),
        median(&|f| f.spawned as f64),
        median(&|f| f.ghosts as f64),
        median(&|f| f.migrations as f64),
        median(&|f| f.bytes as f64 / 1024.0),
    );
}
