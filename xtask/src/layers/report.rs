//! The text `cargo xtask layers` prints: files and skipped files, every cycle with the
//! edges inside it, the layer check, the paths through the root's re-exports, and a
//! summary line.

use std::fmt::Write as _;

use super::graph::{Edge, analyze};
use super::list::{LayerProblem as P, check_layers, parse_layers};
use super::reexports::root_reexports;
use super::{DEFAULT_MAX_CYCLE, SourceFile};

/// Everything the `layers` binary prints, and whether the check passed.
#[derive(Clone, Debug)]
pub struct Report {
    /// The text to print.
    pub text: String,
    /// The largest import cycle, in files.
    pub largest_cycle: usize,
    /// Layer problems found (0 without a layer list).
    pub violations: usize,
    /// Whether a layer list was found.
    pub has_layers: bool,
    /// Paths in modules other than `lib.rs` that take a name through a re-export of the
    /// crate root ([`root_reexports`](super::root_reexports)).
    pub reexport_uses: usize,
    /// Whether everything is within limits: no cycle over the limit, no layer problem, no
    /// path through the root's re-exports.
    pub ok: bool,
}

/// Options of [`report`].
#[derive(Clone, Debug)]
pub struct Options {
    /// How file paths are shown: this prefix, `/`, the path (e.g. `src`).
    pub display_dir: String,
    /// The largest import cycle allowed, in files.
    pub max_cycle: usize,
    /// Also list every edge of the graph.
    pub all_edges: bool,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            display_dir: "src".to_owned(),
            max_cycle: DEFAULT_MAX_CYCLE,
            all_edges: false,
        }
    }
}

/// Analyses `sources` (a crate's source directory) and writes the report: cycles with
/// the edges inside them, the layer check, the paths through the root's re-exports, and
/// a summary line.
pub fn report(
    sources: &[SourceFile],
    opts: &Options,
) -> Result<Report, Box<dyn std::error::Error>> {
    let a = analyze(sources)?;
    let through_root = root_reexports(sources)?;
    let layers = match sources.iter().find(|s| s.path == "lib.rs") {
        Some(lib) => parse_layers(&lib.text)?,
        None => None,
    };
    let dir = &opts.display_dir;
    let show = |k: usize| format!("{dir}/{}", a.files[k].path);
    let edge = |e: &Edge| format!("{} -> {}: {}", show(e.from), show(e.to), e.names.join(", "));
    let mut t = format!(
        "{} files, {} edges under {dir}/\n",
        a.files.len(),
        a.edges.len()
    );
    for s in &a.skipped {
        writeln!(t, "skipped {dir}/{}: {}", s.path, s.why)?;
    }
    if opts.all_edges {
        t += "\nedges:\n";
        for e in &a.edges {
            writeln!(t, "  {}", edge(e))?;
        }
    }
    t += if a.cycles.is_empty() {
        "\nno import cycles\n"
    } else {
        "\nimport cycles (strongly connected components), largest first:\n"
    };
    for (c, files) in a.cycles.iter().enumerate() {
        writeln!(t, "\ncycle {}: {} files", c + 1, files.len())?;
        for &f in files {
            writeln!(t, "  {}", show(f))?;
        }
        t += "  edges inside:\n";
        for e in a.edges_within(files) {
            writeln!(t, "    {}", edge(e))?;
        }
    }
    let Some(layers) = &layers else {
        writeln!(
            t,
            "\nno layer list found in {dir}/lib.rs (see `layers --help` for the format)"
        )?;
        reexport_lines(&mut t, &through_root, dir)?;
        return summary(t, a.largest_cycle(), None, through_root.len(), opts);
    };
    let mut problems = check_layers(&a, layers);
    problems.sort_by_key(|p| match p {
        P::Upward { .. } => 0,
        P::SameLayerCycle { .. } => 1,
        P::Unplaced { .. } => 2,
        P::UnknownModule { .. } | P::Duplicate { .. } => 3,
    });
    let label = |rank: u32| match layers.layers.iter().find(|l| l.rank == rank) {
        None => format!("{rank} (crate root)"),
        Some(l) if l.label.is_empty() => rank.to_string(),
        Some(l) => format!("{rank} {}", l.label),
    };
    writeln!(t, "\nlayer list: {} layers", layers.layers.len())?;
    if problems.is_empty() {
        t += "  every file placed, no upward edge, no cycle across entries\n";
    }
    for p in &problems {
        let line = match p {
            P::Upward {
                edge: e,
                from_rank,
                to_rank,
            } => {
                format!(
                    "upward ({} -> {}): {}",
                    label(*from_rank),
                    label(*to_rank),
                    edge(e)
                )
            }
            P::SameLayerCycle { edge: e, rank } => {
                format!(
                    "cycle within layer {} outside a face group: {}",
                    label(*rank),
                    edge(e)
                )
            }
            P::Unplaced { file } => {
                format!(
                    "not in any layer: {} ({})",
                    show(*file),
                    a.files[*file].module
                )
            }
            P::UnknownModule { module } => {
                format!("listed but no such file module: {module}")
            }
            P::Duplicate { module } => format!("listed twice: {module}"),
        };
        writeln!(t, "  {line}")?;
    }
    reexport_lines(&mut t, &through_root, dir)?;
    summary(
        t,
        a.largest_cycle(),
        Some(problems.len()),
        through_root.len(),
        opts,
    )
}

/// Appends the paths that take a name through the root's re-exports, one a line.
fn reexport_lines(t: &mut String, found: &[super::RootReexport], dir: &str) -> std::fmt::Result {
    if found.is_empty() {
        return writeln!(
            t,
            "
no imports through lib.rs's re-exports"
        );
    }
    writeln!(
        t,
        "
imports through lib.rs's re-exports (name the defining module instead):"
    )?;
    for r in found {
        writeln!(t, "  {dir}/{r}")?;
    }
    Ok(())
}

/// Ends `text` with the summary line: the largest cycle against its limit, the number
/// of layer problems (`None` without a layer list) and of paths through the root's
/// re-exports.
fn summary(
    mut text: String,
    largest_cycle: usize,
    violations: Option<usize>,
    reexport_uses: usize,
    opts: &Options,
) -> Result<Report, Box<dyn std::error::Error>> {
    let n = violations.unwrap_or(0);
    let none = if violations.is_none() {
        " (no layer list)"
    } else {
        ""
    };
    writeln!(
        text,
        "\nlargest import cycle: {largest_cycle} files (limit {}); layer violations: {n}{none}; \
         imports through lib.rs's re-exports: {reexport_uses}",
        opts.max_cycle
    )?;
    Ok(Report {
        text,
        largest_cycle,
        violations: n,
        has_layers: violations.is_some(),
        reexport_uses,
        ok: largest_cycle <= opts.max_cycle && n == 0 && reexport_uses == 0,
    })
}
