//! `cargo xtask <task> [ARGS]`: the workspace's own tasks (see the library's docs).
//!
//! ```sh
//! cargo xtask layers [--src DIR] [--max-cycle N] [--edges]
//! cargo xtask bench-report [CRITERION_DIR] [SVG_PATH]
//! ```

use std::process::ExitCode;

mod bench_report_cmd;
mod layers_cmd;

const USAGE: &str = "usage: cargo xtask <task> [ARGS]

tasks:
  layers         the import graph of runsync's src/, its cycles, the layer-list check
                 (cargo xtask layers --help)
  bench-report   a markdown table and an SVG chart of the criterion benchmarks
                 ([CRITERION_DIR] [SVG_PATH]; run `cargo bench -p runsync-benches` first)";

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    match args.next().as_deref() {
        Some("layers") => layers_cmd::main(args),
        Some("bench-report") => bench_report_cmd::main(args),
        Some("help" | "--help" | "-h") => {
            println!("{USAGE}");
            ExitCode::SUCCESS
        }
        Some(other) => {
            eprintln!("xtask: unknown task `{other}`\n\n{USAGE}");
            ExitCode::from(2)
        }
        None => {
            eprintln!("{USAGE}");
            ExitCode::from(2)
        }
    }
}
