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
//!
//! Processes that others can reach want a `--cluster-key` (the same on each): see
//! `Cluster::key`.

use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use runsync_cluster::{Cluster, Partition, model};

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
    /// Skip the per-frame checksum (a hash of every entity's values): time only the sharding.
    #[arg(long, conflicts_with_all = ["check", "checksums"])]
    no_checksums: bool,
    /// With `--processes`: how long a process waits for the others to start, connect and
    /// agree, in seconds (then an error names the address that never answered).
    #[arg(long, value_name = "SECS", default_value_t = 30.0)]
    connect_timeout: f64,
    /// How long a shard waits for the others in one exchange round, in seconds (then an
    /// error names the shards not heard from; a process that dies is noticed at once).
    #[arg(long, value_name = "SECS", default_value_t = 10.0)]
    peer_timeout: f64,
    /// With `--processes`: a secret every process is given; processes prove it to each
    /// other before saying anything about their configuration, and a connection that does
    /// not is refused (logged) and waited past. Without it, anyone who reaches a waiting
    /// process can read its configuration digests or take a process's place. The command
    /// line is visible to other users of this machine (`ps`).
    #[arg(long, value_name = "KEY", value_parser = clap::builder::NonEmptyStringValueParser::new())]
    cluster_key: Option<String>,
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
    let seconds = |x: f64, what: &str| {
        (x.is_finite() && x > 0.0 && x < 1e9)
            .then(|| Duration::from_secs_f64(x))
            .ok_or_else(|| format!("shards: {what} wants a positive number of seconds, got {x}"))
    };
    let (connect_timeout, peer_timeout) = match (
        seconds(args.connect_timeout, "--connect-timeout"),
        seconds(args.peer_timeout, "--peer-timeout"),
    ) {
        (Ok(c), Ok(p)) => (c, p),
        (Err(e), _) | (_, Err(e)) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    let entities = args.entities;
    let range = args.range.unwrap_or(2.0 * model::RANGE);
    let key = args.cluster_key.as_deref();
    let result = match &args.tiles {
        None => keyed(
            Cluster::new(
                model::bands_of(entities, range),
                move || model::world_of(entities),
                model::systems_of(entities),
            ),
            key,
        )
        .frames(args.frames)
        .checksums(!args.no_checksums)
        .connect_timeout(connect_timeout)
        .peer_timeout(peer_timeout)
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
            keyed(
                Cluster::new(
                    model::tiles_of(entities, cols, rows, range),
                    move || model::world_of(entities),
                    model::systems_of(entities),
                ),
                key,
            )
            .frames(args.frames)
            .checksums(!args.no_checksums)
            .connect_timeout(connect_timeout)
            .peer_timeout(peer_timeout)
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

/// `cluster` with the cluster key `key`, if any.
fn keyed<P: Partition>(cluster: Cluster<P>, key: Option<&str>) -> Cluster<P> {
    match key {
        Some(key) => cluster.key(key),
        None => cluster,
    }
}

fn print_report(report: &runsync_cluster::Report, entities: usize, range: f32) {
    println!(
        "{} shards, {entities} agents, mirror range {range}, {} frames",
        report.shards,
        report.frames.len()
    );
    println!("{}", report.table());
}
