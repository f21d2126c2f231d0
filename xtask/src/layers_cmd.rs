//! `cargo xtask layers`: the module import graph of runsync's `src/`: its import cycles
//! (with the names that make each edge), a check against the layer list in
//! `src/lib.rs`'s docs, and the paths through the crate root's re-exports.
//!
//! ```sh
//! cargo xtask layers [--src DIR] [--max-cycle N] [--edges]
//! ```
//!
//! Exit status: 0 if the largest cycle is within `--max-cycle`, the layer list (if any)
//! holds and no module takes a name through the root's re-exports; 1 if not; 2 on a
//! usage error or a file that cannot be read.
//! See [`xtask::layers`] for what counts as an edge and the layer list's format.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use xtask::layers::{self, DEFAULT_MAX_CYCLE, FORMAT, Options};

/// Import cycles between the files of a crate's `src/`, and a check of its layer list.
///
/// Files are nodes (`lib.rs` is the crate root; `#[cfg(test)]` modules are left out); an
/// edge A -> B means file A names an item of file B (in a `use`, or a path such as
/// `crate::sync::SyncReport::default()` or `super::FoldCounts` anywhere in code), resolved
/// to the deepest file module the path names. Prints every import cycle (strongly
/// connected component of two or more files) with the names behind each edge inside it,
/// then the layer check, then every path in a module other than lib.rs that takes a name
/// lib.rs only re-exports (`crate::Entity` for `crate::entity::Entity`), with its line and
/// the defining module, then a summary line. Exits with 1 if a cycle is larger than
/// `--max-cycle`, the layer list is violated or such a path exists.
#[derive(Parser, Debug)]
#[command(name = "cargo xtask layers", version, about, long_about, after_long_help = FORMAT)]
struct Args {
    /// The crate's source directory [default: `src` under the workspace root].
    #[arg(long, value_name = "DIR")]
    src: Option<PathBuf>,
    /// The largest import cycle allowed, in files.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_CYCLE)]
    max_cycle: usize,
    /// Also list every edge of the graph, not only those inside cycles.
    #[arg(long)]
    edges: bool,
}

/// Runs the task with `args` (the words after `layers`).
pub(crate) fn main(args: impl Iterator<Item = String>) -> ExitCode {
    let args = Args::parse_from(std::iter::once("cargo xtask layers".to_owned()).chain(args));
    let (dir, display_dir) = match args.src {
        Some(dir) => {
            let shown = dir.display().to_string();
            (dir, shown.trim_end_matches('/').to_owned())
        }
        None => (layers::workspace_root().join("src"), "src".to_owned()),
    };
    let sources = match layers::load(&dir) {
        Ok(s) if s.is_empty() => {
            eprintln!("layers: no `.rs` files under `{}`", dir.display());
            return ExitCode::from(2);
        }
        Ok(s) => s,
        Err(e) => {
            eprintln!("layers: cannot read `{}`: {e}", dir.display());
            return ExitCode::from(2);
        }
    };
    let opts = Options {
        display_dir,
        max_cycle: args.max_cycle,
        all_edges: args.edges,
    };
    match layers::report(&sources, &opts) {
        Ok(report) => {
            print!("{}", report.text);
            if report.ok {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
        Err(e) => {
            eprintln!("layers: {e}");
            ExitCode::from(2)
        }
    }
}
