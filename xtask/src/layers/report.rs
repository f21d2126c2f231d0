//! The text `cargo xtask layers` prints: files and skipped files, every cycle with the
//! edges inside it, the layer check, and a summary line.

use std::fmt::Write as _;

use super::graph::{Edge, analyze};
use super::list::{LayerProblem, check_layers, parse_layers};
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
    /// Whether everything is within limits: no cycle over the limit, no layer problem.
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
/// the edges inside them, the layer check, and a summary line.
pub fn report(
    sources: &[SourceFile],
    opts: &Options,
) -> Result<Report, Box<dyn std::error::Error>> {
    let analysis = analyze(sources)?;
    let lib = sources.iter().find(|s| s.path == "lib.rs");
    let layers = match lib {
        Some(lib) => parse_layers(&lib.text)?,
        None => None,
    };
    let show = |k: usize| format!("{}/{}", opts.display_dir, analysis.files[k].path);
    let show_edge =
        |e: &Edge| format!("{} -> {}: {}", show(e.from), show(e.to), e.names.join(", "));
    let mut t = String::new();
    let _ = writeln!(
        t,
        "{} files, {} edges under {}/",
        analysis.files.len(),
        analysis.edges.len(),
        opts.display_dir
    );
    for s in &analysis.skipped {
        let _ = writeln!(t, "skipped {}/{}: {}", opts.display_dir, s.path, s.why);
    }
    if opts.all_edges {
        let _ = writeln!(t, "\nedges:");
        for e in &analysis.edges {
            let _ = writeln!(t, "  {}", show_edge(e));
        }
    }
    if analysis.cycles.is_empty() {
        let _ = writeln!(t, "\nno import cycles");
    } else {
        let _ = writeln!(
            t,
            "\nimport cycles (strongly connected components), largest first:"
        );
    }
    for (c, files) in analysis.cycles.iter().enumerate() {
        let _ = writeln!(t, "\ncycle {}: {} files", c + 1, files.len());
        for &f in files {
            let _ = writeln!(t, "  {}", show(f));
        }
        let _ = writeln!(t, "  edges inside:");
        for e in analysis.edges_within(files) {
            let _ = writeln!(t, "    {}", show_edge(e));
        }
    }
    let mut violations = 0;
    match &layers {
        None => {
            let _ = writeln!(
                t,
                "\nno layer list found in {}/lib.rs (see `layers --help` for the format)",
                opts.display_dir
            );
        }
        Some(layers) => {
            let mut problems = check_layers(&analysis, layers);
            problems.sort_by_key(|p| match p {
                LayerProblem::Upward { .. } => 0,
                LayerProblem::SameLayerCycle { .. } => 1,
                LayerProblem::Unplaced { .. } => 2,
                LayerProblem::UnknownModule { .. } | LayerProblem::Duplicate { .. } => 3,
            });
            violations = problems.len();
            let label = |rank: u32| {
                layers.layers.iter().find(|l| l.rank == rank).map_or_else(
                    || format!("{rank} (crate root)"),
                    |l| {
                        if l.label.is_empty() {
                            rank.to_string()
                        } else {
                            format!("{rank} {}", l.label)
                        }
                    },
                )
            };
            let _ = writeln!(t, "\nlayer list: {} layers", layers.layers.len());
            if problems.is_empty() {
                let _ = writeln!(
                    t,
                    "  every file placed, no upward edge, no cycle across entries"
                );
            }
            for p in &problems {
                let _ = match p {
                    LayerProblem::Upward {
                        edge,
                        from_rank,
                        to_rank,
                    } => writeln!(
                        t,
                        "  upward ({} -> {}): {}",
                        label(*from_rank),
                        label(*to_rank),
                        show_edge(edge)
                    ),
                    LayerProblem::SameLayerCycle { edge, rank } => writeln!(
                        t,
                        "  cycle within layer {} outside a face group: {}",
                        label(*rank),
                        show_edge(edge)
                    ),
                    LayerProblem::Unplaced { file } => {
                        writeln!(
                            t,
                            "  not in any layer: {} ({})",
                            show(*file),
                            analysis.files[*file].module
                        )
                    }
                    LayerProblem::UnknownModule { module } => {
                        writeln!(t, "  listed but no such file module: {module}")
                    }
                    LayerProblem::Duplicate { module } => writeln!(t, "  listed twice: {module}"),
                };
            }
        }
    }
    let largest = analysis.largest_cycle();
    let _ = writeln!(
        t,
        "\nlargest import cycle: {largest} files (limit {}); layer violations: {violations}{}",
        opts.max_cycle,
        if layers.is_none() {
            " (no layer list)"
        } else {
            ""
        }
    );
    Ok(Report {
        text: t,
        largest_cycle: largest,
        violations,
        has_layers: layers.is_some(),
        ok: largest <= opts.max_cycle && violations == 0,
    })
}
