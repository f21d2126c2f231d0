//! `cargo xtask bench-report`: reads criterion's saved estimates and prints a markdown table comparing
//! runsync with hecs, bevy_ecs and the raw loops (one row per runsync bench function, the
//! README's lead loop `runsync_query` first within each group, then the plain `out.write`
//! path `runsync`, `writer`, `write_each`, `par_for_each_query`, `par_for_each`), a note on
//! what each row name means (API path and merge), then the performance targets, and writes an
//! SVG bar chart (each group's lead-loop row, else its plain row).
//!
//! ```sh
//! cargo bench -p runsync-benches
//! cargo xtask bench-report [CRITERION_DIR] [SVG_PATH]
//! ```
//!
//! Defaults: `target/criterion` and `target/criterion/report.svg`.

use std::path::Path;
use std::process::ExitCode;

use xtask::bench_report::{self as report, Estimate};

/// Runs the task with `args` (the words after `bench-report`).
pub(crate) fn main(mut args: impl Iterator<Item = String>) -> ExitCode {
    let dir = args.next().unwrap_or_else(|| "target/criterion".to_owned());
    let svg = args
        .next()
        .unwrap_or_else(|| format!("{dir}/report.svg").to_owned());
    let estimates: Vec<Estimate> = match report::load(Path::new(&dir)) {
        Ok(e) if !e.is_empty() => e,
        Ok(_) => {
            eprintln!(
                "bench-report: no estimates under `{dir}`; run `cargo bench -p runsync-benches` first"
            );
            return ExitCode::FAILURE;
        }
        Err(e) => {
            eprintln!("bench-report: cannot read `{dir}`: {e}");
            return ExitCode::FAILURE;
        }
    };
    let rows = report::rows(&estimates);
    print!("{}", report::markdown_table(&rows));
    println!();
    println!("{}", report::PATHS_NOTE);
    println!();
    print!("{}", report::targets_table(&rows));
    match report::write_svg(&rows, Path::new(&svg)) {
        Ok(()) => {
            eprintln!("bench-report: chart written to {svg}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("bench-report: cannot write `{svg}`: {e}");
            ExitCode::FAILURE
        }
    }
}
