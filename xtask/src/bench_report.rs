//! Reading criterion's saved estimates and turning them into a comparison table, the
//! performance target checks ("row writes at in-place speed"), and an SVG chart. Used by
//! `cargo xtask bench-report`.
//!
//! A bench function's name says which runsync API path (and, where the group chooses one,
//! which merge) it measures; [`PATHS_NOTE`] explains every name and [`PATH_ORDER`] orders
//! them: `runsync_query` is the README's lead loop, row writes in the query
//! (`for (_, (p, v, mut pos)) in out.query::<(&Pos, &Vel, Write<Pos>)>() { pos.set(..) }`;
//! `runsync_query_1w`: on one worker); `runsync` is the plain path (`out.write` in a `for`
//! over `world.query`); `runsync_writer`, `runsync_write_each`,
//! `runsync_par_for_each_query` (row writes in `par_for_each`) and `runsync_par_for_each`
//! (`out.write` in `par_for_each`; `_1w`: one worker) the others. A `_fn_merge` suffix
//! (`contrib_100k_*`) means the same path with the summed component merged by a
//! hand-written `fn` instead of `merge::sum`; `scatter_100k`'s `runsync_closure_merge_*`
//! merge by a closure. `hecs_1w` (`movement_5M_2w`) is hecs on one thread and fills the
//! hecs column, as `hecs` (also on one thread) does in the other movement groups.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io;
use std::path::Path;

use plotters::prelude::*;
use serde_json::Value;

/// The libraries that get a column, in column order. The `runsync` column holds the time
/// of the row's own bench function: every function that is not another library's (e.g.
/// `runsync_query`, `runsync`, `runsync_writer`) becomes its own row.
pub const LIBRARIES: [&str; 4] = ["runsync", "hecs", "bevy_ecs", "raw"];

/// Bench functions that fill another library's column under another name: `hecs_1w`
/// (`movement_5M_2w`: hecs in place on one thread, the same as `hecs` elsewhere).
const COLUMN_ALIASES: [(&str, &str); 1] = [("hecs_1w", "hecs")];

/// The column (index into [`LIBRARIES`], never 0) a bench function fills, if it is not a
/// runsync row, and for which runsync row: every row of the group (`hecs`, and the
/// [`COLUMN_ALIASES`]), or only `runsync_{variant}` (`hecs_{variant}`: e.g. `hecs_spawn`,
/// hecs's own spawn loop, beside `runsync_spawn`).
fn library_column(function: &str) -> Option<(usize, Option<&str>)> {
    let (library, variant) = match COLUMN_ALIASES.iter().find(|(alias, _)| *alias == function) {
        Some((_, library)) => (*library, None),
        None => LIBRARIES[1..]
            .iter()
            .find_map(|l| {
                let rest = function.strip_prefix(l)?;
                match rest.strip_prefix('_') {
                    Some(variant) => Some((*l, Some(variant))),
                    None => rest.is_empty().then_some((*l, None)),
                }
            })
            .unwrap_or((function, None)),
    };
    let column = LIBRARIES[1..].iter().position(|l| *l == library)? + 1;
    Some((column, variant))
}

/// The order of a group's rows, by bench function: the README's lead loop (row writes)
/// first, then the plain `out.write` path, then the other write paths from the closest to
/// it to the furthest; a `_fn_merge` variant right after its `merge::sum` base. Functions
/// not listed follow, by name.
pub const PATH_ORDER: [&str; 11] = [
    "runsync_query",
    "runsync_query_1w",
    "runsync_query_fn_merge",
    "runsync",
    "runsync_fn_merge",
    "runsync_writer",
    "runsync_write_each",
    "runsync_par_for_each_query",
    "runsync_par_for_each_query_1w",
    "runsync_par_for_each",
    "runsync_par_for_each_1w",
];

/// What the bench function names mean, for a line under the table.
pub const PATHS_NOTE: &str = "Each row names the runsync bench function it times. \
`runsync_query` is the README's lead loop, row writes in the query (`for (_, (p, v, mut \
pos)) in out.query::<(&Pos, &Vel, Write<Pos>)>() { pos.set(..) }`; `runsync_query_1w`: on \
one worker); `runsync` is the plain path, `out.write` in a `for` over `world.query`; \
`runsync_writer` hoists `out.writer()` out of that loop; `runsync_write_each` is \
`Output::write_each`; `runsync_par_for_each_query` sets a write handle in \
`Output::par_for_each`, `runsync_par_for_each` calls `out.write` there (`_1w`: on one \
worker). Merges: `contrib_100k_*` sums `Vel` with `merge::sum` in its `runsync_query` and \
`runsync` rows and with a hand-written `fn` in `runsync_query_fn_merge` and \
`runsync_fn_merge` (same paths otherwise); `scatter_100k` writes (`out.write`) to \
scattered entities whose deltas a closure merge adds up, `runsync_closure_merge_frame` \
timing the frame and `runsync_closure_merge_sync` Sync alone (parameter: workers); \
`sync_sum_1M` / `sync_fn_1M` time Sync alone merging by `merge::sum` / a hand-written \
`fn` (parameter: overlapping systems); elsewhere components merge by `merge::last`. \
Exceptions: `simple_insert`'s `runsync` uses `World::spawn_batch` against the others' \
`spawn_batch` (`runsync_spawn`: `World::spawn` in a loop, against `hecs_spawn` and \
`bevy_ecs_spawn`, their own spawn loops; `runsync_commands`: `Output::spawn` in a frame, \
against hecs's `CommandBuffer` and bevy_ecs's `Commands`), `add_remove`'s emits \
`Output::insert`/`remove`, `empty_systems` writes nothing. A `hecs_x` or `bevy_ecs_x` \
function fills its library's column for the row `runsync_x` only. hecs and bevy_ecs \
update in place; hecs runs on one \
thread (`movement_5M_2w`'s `hecs_1w`, in the hecs column) except in `heavy_compute` \
(2 threads). The chart shows one row per \
group: the lead loop's (`query`) where the group has one, else the plain path's \
(`plain`), else the first in this order.";

/// Sort key of a bench function within its group; see [`PATH_ORDER`].
fn path_rank(function: &str) -> (usize, &str) {
    let rank = PATH_ORDER
        .iter()
        .position(|p| *p == function)
        .unwrap_or(PATH_ORDER.len());
    (rank, function)
}

/// One benchmark's saved result.
#[derive(Clone, Debug, PartialEq)]
pub struct Estimate {
    /// Criterion group (e.g. `simple_iter`).
    pub group: String,
    /// Function within the group (a library name, e.g. `hecs`).
    pub function: String,
    /// Parameter, if the bench has one (e.g. the system count).
    pub parameter: Option<String>,
    /// Time per iteration in nanoseconds: criterion's headline estimate (the slope of
    /// its linear fit, or the mean when it did not sample linearly).
    pub mean_ns: f64,
    /// Elements per iteration, if the bench declared a throughput in elements.
    pub elements: Option<u64>,
}

/// Every `new/estimates.json` under `dir` (criterion's output directory), with the names
/// from the `benchmark.json` beside it. Cost: one directory walk and two small files per
/// benchmark.
pub fn load(dir: &Path) -> io::Result<Vec<Estimate>> {
    let mut out = Vec::new();
    walk(dir, &mut out)?;
    out.sort_by(|a, b| {
        (&a.group, &a.parameter, &a.function).cmp(&(&b.group, &b.parameter, &b.function))
    });
    Ok(out)
}

fn walk(dir: &Path, out: &mut Vec<Estimate>) -> io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if !path.is_dir() {
            continue;
        }
        if path.file_name().is_some_and(|n| n == "new") {
            if let Some(e) = read_estimate(&path) {
                out.push(e);
            }
        } else {
            walk(&path, out)?;
        }
    }
    Ok(())
}

fn read_json(path: &Path) -> Option<Value> {
    serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()
}

fn read_estimate(new: &Path) -> Option<Estimate> {
    let bench = read_json(&new.join("benchmark.json"))?;
    let est = read_json(&new.join("estimates.json"))?;
    let group = bench["group_id"].as_str()?.to_owned();
    let function = bench["function_id"].as_str()?.to_owned();
    let parameter = bench["value_str"].as_str().map(str::to_owned);
    // Criterion's headline figure: the slope of the linear fit when it sampled linearly,
    // else the mean.
    let mean_ns = est["slope"]["point_estimate"]
        .as_f64()
        .or_else(|| est["mean"]["point_estimate"].as_f64())?;
    let elements = bench["throughput"]["Elements"].as_u64();
    Some(Estimate {
        group,
        function,
        parameter,
        mean_ns,
        elements,
    })
}

/// One line of the comparison: a workload and each library's mean time (ns).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Row {
    /// Group, with the parameter and the row's bench function appended
    /// (``movement_10k `runsync_query` ``); the group alone when it has no runsync row.
    pub name: String,
    /// The bench function timed in the `runsync` column (e.g. `runsync_query`, the lead
    /// loop, or `runsync`, the plain path); empty when the group has none.
    pub function: String,
    /// Criterion group.
    pub group: String,
    /// Parameter, if any.
    pub parameter: Option<String>,
    /// Time per iteration (ns), indexed like [`LIBRARIES`].
    pub times: [Option<f64>; 4],
    /// Elements per iteration (for ns/element), if declared.
    pub elements: Option<u64>,
}

impl Row {
    /// The time of `library` in ns, if measured.
    pub fn time(&self, library: &str) -> Option<f64> {
        let i = LIBRARIES.iter().position(|l| *l == library)?;
        self.times[i]
    }

    /// runsync's time divided by `library`'s: below 1 means runsync is faster.
    pub fn ratio(&self, library: &str) -> Option<f64> {
        Some(self.time("runsync")? / self.time(library)?)
    }
}

/// Lines up estimates into rows: one per runsync bench function of each (group,
/// parameter), named ``group `function` ``, all sharing the group's other columns, in
/// [`PATH_ORDER`] (the lead loop first). A group with no runsync function gets one row
/// named after the group.
pub fn rows(estimates: &[Estimate]) -> Vec<Row> {
    /// The group's shared row, its runsync functions, and the other libraries' variant
    /// functions (`hecs_spawn`: variant, column, time).
    type Group = (Row, Vec<(String, f64)>, Vec<(String, usize, f64)>);
    let mut groups: BTreeMap<(String, Option<String>), Group> = BTreeMap::new();
    for e in estimates {
        let key = (e.group.clone(), e.parameter.clone());
        let (row, functions, variants) = groups.entry(key).or_insert_with(|| {
            let row = Row {
                name: match &e.parameter {
                    Some(p) => format!("{} ({p})", e.group),
                    None => e.group.clone(),
                },
                group: e.group.clone(),
                parameter: e.parameter.clone(),
                ..Row::default()
            };
            (row, Vec::new(), Vec::new())
        });
        if e.elements.is_some() {
            row.elements = e.elements;
        }
        match library_column(&e.function) {
            Some((i, None)) => row.times[i] = Some(e.mean_ns),
            Some((i, Some(v))) => variants.push((v.to_owned(), i, e.mean_ns)),
            None => functions.push((e.function.clone(), e.mean_ns)),
        }
    }
    let mut out = Vec::new();
    for (row, mut functions, variants) in groups.into_values() {
        if functions.is_empty() {
            out.push(row);
            continue;
        }
        functions.sort_by(|a, b| path_rank(&a.0).cmp(&path_rank(&b.0)));
        out.extend(functions.into_iter().map(|(f, t)| {
            let mut r = row.clone();
            r.name = format!("{} `{f}`", row.name);
            r.times[0] = Some(t);
            // A runsync variant that the other libraries time too is compared with theirs
            // only (`runsync_spawn` with `hecs_spawn`, not with hecs's `spawn_batch`).
            let own = f.strip_prefix("runsync_").map_or(Vec::new(), |v| {
                variants.iter().filter(|(w, ..)| w == v).collect::<Vec<_>>()
            });
            if !own.is_empty() {
                r.times[1..].fill(None);
                for &(_, i, t) in own {
                    r.times[i] = Some(t);
                }
            }
            r.function = f;
            r
        }));
    }
    out
}

/// Formats nanoseconds with a unit that keeps three significant digits.
pub fn fmt_time(ns: f64) -> String {
    if ns >= 1e9 {
        format!("{:.2} s", ns / 1e9)
    } else if ns >= 1e6 {
        format!("{:.2} ms", ns / 1e6)
    } else if ns >= 1e3 {
        format!("{:.2} µs", ns / 1e3)
    } else {
        format!("{ns:.1} ns")
    }
}

/// The comparison as a markdown table: times, ns per element, and runsync's time divided
/// by each other column (below 1: runsync is faster).
pub fn markdown_table(rows: &[Row]) -> String {
    let mut s = String::new();
    s.push_str(
        "| workload | runsync | hecs | bevy_ecs | raw | runsync ns/elem | \
         runsync ÷ hecs | runsync ÷ bevy_ecs | runsync ÷ raw |\n",
    );
    s.push_str("|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for r in rows {
        let cell = |t: Option<f64>| t.map_or("–".to_owned(), fmt_time);
        let ratio = |l: &str| r.ratio(l).map_or("–".to_owned(), |x| format!("{x:.2}×"));
        let per_elem = match (r.time("runsync"), r.elements) {
            (Some(t), Some(n)) if n > 0 => format!("{:.2}", t / n as f64),
            _ => "–".to_owned(),
        };
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            r.name,
            cell(r.times[0]),
            cell(r.times[1]),
            cell(r.times[2]),
            cell(r.times[3]),
            per_elem,
            ratio("hecs"),
            ratio("bevy_ecs"),
            ratio("raw"),
        );
    }
    s
}

fn find<'a>(rows: &'a [Row], name: &str) -> Option<&'a Row> {
    rows.iter().find(|r| r.name == name)
}

/// The runsync time (ns) of the row named `name`.
fn time_of(rows: &[Row], name: &str) -> Option<f64> {
    find(rows, name)?.time("runsync")
}

/// Outputs per `scatter_100k` frame: one per entity.
const SCATTER_OUTPUTS: f64 = 100_000.0;

/// How a target's measured value must compare with its limit.
#[derive(Clone, Copy)]
enum Limit {
    /// `measured ≤ limit`.
    AtMost(f64),
    /// `measured < limit`.
    Below(f64),
}

/// One performance target: what it says, the measured value and its limit.
struct Target {
    what: String,
    measured: Option<f64>,
    limit: Limit,
    unit: &'static str,
}

impl Target {
    fn met(&self, v: f64) -> bool {
        match self.limit {
            Limit::AtMost(l) => v <= l,
            Limit::Below(l) => v < l,
        }
    }
}

/// A "≤ limit × library" target on the ratio of row `row`'s runsync time to `library`'s.
fn vs_library(rows: &[Row], what: String, row: &str, library: &str, limit: f64) -> Target {
    Target {
        what,
        measured: find(rows, row).and_then(|r| r.ratio(library)),
        limit: Limit::AtMost(limit),
        unit: "×",
    }
}

/// A target on the ratio of row `a`'s runsync time to row `b`'s.
fn vs_row(rows: &[Row], what: String, a: &str, b: &str, limit: Limit) -> Target {
    Target {
        what,
        measured: time_of(rows, a).zip(time_of(rows, b)).map(|(a, b)| a / b),
        limit,
        unit: "×",
    }
}

/// The performance targets ("row writes at in-place speed"), each with its measured value
/// and whether it is met; a target whose estimates are missing reads "not measured".
/// runsync times whole frames (Run + Sync) unless the target says Sync; hecs runs in place
/// on one thread.
pub fn targets_table(rows: &[Row]) -> String {
    let mut checks = Vec::new();
    for g in ["movement_10k", "movement_1M"] {
        checks.push(vs_library(
            rows,
            format!("{g}: lead loop `runsync_query` ≤ 1.0 × hecs"),
            &format!("{g} `runsync_query`"),
            "hecs",
            1.0,
        ));
    }
    checks.push(vs_library(
        rows,
        "movement_5M_2w: `runsync_par_for_each_query` (2 workers) ≤ 0.6 × `hecs_1w`".to_owned(),
        "movement_5M_2w `runsync_par_for_each_query`",
        "hecs",
        0.6,
    ));
    for g in ["movement_10k", "movement_1M"] {
        checks.extend([
            vs_library(
                rows,
                format!("{g}: plain `runsync` (`out.write`) ≤ 2.0 × hecs"),
                &format!("{g} `runsync`"),
                "hecs",
                2.0,
            ),
            vs_library(
                rows,
                format!("{g}: `runsync_writer` ≤ 1.5 × hecs"),
                &format!("{g} `runsync_writer`"),
                "hecs",
                1.5,
            ),
        ]);
    }
    // The row-write path with a hand-written `fn` merge, then the same checks on the
    // plain path (extra lines).
    for (fn_merge, sum, path, extra) in [
        ("runsync_query_fn_merge", "runsync_query", "row-write", ""),
        ("runsync_fn_merge", "runsync", "plain", " (extra)"),
    ] {
        let row = |w: &str, f: &str| format!("contrib_100k_{w} `{f}`");
        checks.extend([
            vs_library(
                rows,
                format!("contrib_100k_1w: `{fn_merge}` ≤ 1.2 × hecs{extra}"),
                &row("1w", fn_merge),
                "hecs",
                1.2,
            ),
            vs_library(
                rows,
                format!("contrib_100k_2w: `{fn_merge}` ≤ 0.8 × hecs{extra}"),
                &row("2w", fn_merge),
                "hecs",
                0.8,
            ),
            vs_library(
                rows,
                format!("contrib_100k_2w: `{fn_merge}` ≤ 0.9 × bevy_ecs{extra}"),
                &row("2w", fn_merge),
                "bevy_ecs",
                0.9,
            ),
        ]);
        for w in ["1w", "2w"] {
            checks.push(vs_row(
                rows,
                format!(
                    "contrib_100k_{w}: {path} path, `fn` merge ≤ 1.2 × `merge::sum` \
                     (`{fn_merge}` ÷ `{sum}`){extra}"
                ),
                &row(w, fn_merge),
                &row(w, sum),
                Limit::AtMost(1.2),
            ));
        }
    }
    checks.extend([
        Target {
            what: "scatter_100k: Sync ≤ 8 ns/output (`runsync_closure_merge_sync` (1), \
                   100k scattered outputs)"
                .to_owned(),
            measured: time_of(rows, "scatter_100k (1) `runsync_closure_merge_sync`")
                .map(|ns| ns / SCATTER_OUTPUTS),
            limit: Limit::AtMost(8.0),
            unit: " ns",
        },
        vs_row(
            rows,
            "scatter_100k: Sync on 2 workers faster than on 1 \
             (`runsync_closure_merge_sync` (2) ÷ (1) < 1)"
                .to_owned(),
            "scatter_100k (2) `runsync_closure_merge_sync`",
            "scatter_100k (1) `runsync_closure_merge_sync`",
            Limit::Below(1.0),
        ),
        vs_library(
            rows,
            "movement_1M_par: `runsync_par_for_each_query` (2 workers) ≤ 0.8 × hecs".to_owned(),
            "movement_1M_par `runsync_par_for_each_query`",
            "hecs",
            0.8,
        ),
        vs_row(
            rows,
            "movement_1M_par: `runsync_par_for_each_query_1w` ≤ 1.0 × movement_1M \
             `runsync_query`"
                .to_owned(),
            "movement_1M_par `runsync_par_for_each_query_1w`",
            "movement_1M `runsync_query`",
            Limit::AtMost(1.0),
        ),
    ]);
    for g in ["movement_10k", "movement_1M"] {
        checks.push(vs_library(
            rows,
            format!("{g}: `runsync_write_each` ≤ 0.6 × hecs"),
            &format!("{g} `runsync_write_each`"),
            "hecs",
            0.6,
        ));
    }
    checks.push(Target {
        what: "many_systems_2w: 6,000 systems ≤ 1 ms per frame".to_owned(),
        measured: time_of(rows, "many_systems_2w `runsync`").map(|ns| ns / 1e6),
        limit: Limit::AtMost(1.0),
        unit: " ms",
    });
    let mut s = String::from("| target | measured | met |\n|---|---:|:---:|\n");
    for t in checks {
        let (measured, met) = match t.measured {
            Some(v) => (
                format!("{v:.3}{}", t.unit),
                if t.met(v) { "yes" } else { "**no**" },
            ),
            None => ("not measured".to_owned(), "–"),
        };
        let _ = writeln!(s, "| {} | {measured} | {met} |", t.what);
    }
    s
}

/// Writes a grouped bar chart to `path`: for every (group, parameter) measured against
/// another library, its first row as [`rows`] orders them — the lead loop
/// (`runsync_query`, or `runsync_query_1w`) where the group has one, else the plain path
/// (`runsync`), else the function first in [`PATH_ORDER`]; each label names the path —
/// each library's time divided by runsync's (runsync = 1; higher bars are slower).
/// Uses only plotters' SVG backend and its built-in text layout: no font libraries.
pub fn write_svg(rows: &[Row], path: &Path) -> io::Result<()> {
    let mut compared: Vec<&Row> = Vec::new();
    for r in rows {
        let seen = compared
            .iter()
            .any(|c| c.group == r.group && c.parameter == r.parameter);
        if !seen && r.time("runsync").is_some() && r.times[1..].iter().any(Option::is_some) {
            compared.push(r);
        }
    }
    draw(&compared, path).map_err(|e| io::Error::other(e.to_string()))
}

const COLORS: [RGBColor; 4] = [
    RGBColor(0x1f, 0x77, 0xb4),
    RGBColor(0xff, 0x7f, 0x0e),
    RGBColor(0x2c, 0xa0, 0x2c),
    RGBColor(0x7f, 0x7f, 0x7f),
];

/// A row's name on the chart: the workload and the API path, without the `runsync_`
/// prefix (`query`, `par_for_each_query`); `plain` for `runsync`, the plain path.
fn chart_label(r: &Row) -> String {
    let workload = match &r.parameter {
        Some(p) => format!("{} ({p})", r.group),
        None => r.group.clone(),
    };
    match r.function.strip_prefix("runsync_") {
        Some(path) => format!("{workload}: {path}"),
        None if r.function == "runsync" => format!("{workload}: plain"),
        None => workload,
    }
}

/// The legend's name for a column: runsync's says which row of its group the chart
/// shows.
fn legend_label(library: &str) -> &str {
    if library == LIBRARIES[0] {
        "runsync (lead loop `query`, else `plain`)"
    } else {
        library
    }
}

fn draw(rows: &[&Row], path: &Path) -> Result<(), Box<dyn std::error::Error>> {
    let width = 170 * rows.len().max(1) as u32 + 120;
    let root = SVGBackend::new(path, (width, 480)).into_drawing_area();
    root.fill(&WHITE)?;
    let rel = |r: &Row, i: usize| Some(r.times[i]? / r.time("runsync")?);
    let top = rows
        .iter()
        .flat_map(|r| (0..4).filter_map(|i| rel(r, i)))
        .fold(1.0f64, f64::max)
        * 1.1;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            "time relative to runsync (runsync = 1, lower is faster)",
            ("sans-serif", 18),
        )
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(50)
        .build_cartesian_2d(0f64..rows.len() as f64, 0f64..top)?;
    let names: Vec<String> = rows.iter().map(|r| chart_label(r)).collect();
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(rows.len() * 2 + 1)
        .x_label_formatter(&|x| {
            let i = x.floor() as usize;
            if (x - x.floor() - 0.5).abs() < 1e-6 && i < names.len() {
                names[i].clone()
            } else {
                String::new()
            }
        })
        .y_desc("× runsync's time")
        .draw()?;
    for (lib, color) in LIBRARIES.iter().zip(COLORS) {
        let i = LIBRARIES.iter().position(|l| l == lib).unwrap_or(0);
        let bars = rows.iter().enumerate().filter_map(move |(k, r)| {
            let v = rel(r, i)?;
            let x0 = k as f64 + 0.1 + 0.2 * i as f64;
            Some(Rectangle::new([(x0, 0.0), (x0 + 0.18, v)], color.filled()))
        });
        chart
            .draw_series(bars)?
            .label(legend_label(lib))
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 10, y + 5)], color.filled()));
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()?;
    root.present()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn est(group: &str, function: &str, param: Option<&str>, ns: f64) -> Estimate {
        Estimate {
            group: group.into(),
            function: function.into(),
            parameter: param.map(Into::into),
            mean_ns: ns,
            elements: None,
        }
    }

    fn names(rows: &[Row]) -> Vec<&str> {
        rows.iter().map(|r| r.name.as_str()).collect()
    }

    #[test]
    fn rows_line_up_libraries_and_functions() {
        let e = [
            est("simple_iter", "runsync", None, 20.0),
            est("simple_iter", "hecs", None, 10.0),
            est("simple_iter", "runsync_writer", None, 40.0),
            est("empty", "runsync", Some("10"), 5.0),
            est("hecs_only", "hecs", None, 1.0),
        ];
        let rows = rows(&e);
        assert_eq!(
            names(&rows),
            [
                "empty (10) `runsync`",
                "hecs_only",
                "simple_iter `runsync`",
                "simple_iter `runsync_writer`",
            ]
        );
        assert_eq!(rows[1].function, "");
        assert_eq!(rows[2].function, "runsync");
        assert_eq!(rows[2].ratio("hecs"), Some(2.0));
        assert_eq!(rows[3].function, "runsync_writer");
        assert_eq!(rows[3].ratio("hecs"), Some(4.0));
        let table = markdown_table(&rows);
        assert!(
            table.contains("| simple_iter `runsync` | 20.0 ns | 10.0 ns | – | – | – | 2.00× |")
        );
        assert!(table.contains("| simple_iter `runsync_writer` | 40.0 ns | 10.0 ns |"));
    }

    #[test]
    fn the_lead_loop_comes_first_and_fn_merges_follow_their_base() {
        // `load` hands estimates over sorted by name: the lead loop is not first there.
        let mut e = vec![
            est("g", "hecs", None, 10.0),
            est("g", "raw", None, 8.0),
            est("g", "runsync", None, 15.0),
            est("g", "runsync_fn_merge", None, 16.0),
            est("g", "runsync_other", None, 50.0),
            est("g", "runsync_par_for_each", None, 9.0),
            est("g", "runsync_par_for_each_1w", None, 9.5),
            est("g", "runsync_par_for_each_query", None, 4.0),
            est("g", "runsync_par_for_each_query_1w", None, 6.0),
            est("g", "runsync_query", None, 11.0),
            est("g", "runsync_query_fn_merge", None, 12.0),
            est("g", "runsync_write_each", None, 5.0),
            est("g", "runsync_writer", None, 12.0),
        ];
        e.reverse();
        let rows = rows(&e);
        let functions: Vec<&str> = rows.iter().map(|r| r.function.as_str()).collect();
        assert_eq!(
            functions,
            [
                "runsync_query",
                "runsync_query_fn_merge",
                "runsync",
                "runsync_fn_merge",
                "runsync_writer",
                "runsync_write_each",
                "runsync_par_for_each_query",
                "runsync_par_for_each_query_1w",
                "runsync_par_for_each",
                "runsync_par_for_each_1w",
                "runsync_other",
            ]
        );
        assert_eq!(rows[0].name, "g `runsync_query`");
        assert_eq!(rows[0].ratio("hecs"), Some(1.1));
        assert_eq!(rows[5].ratio("raw"), Some(5.0 / 8.0));
    }

    /// `hecs_spawn` and `bevy_ecs_spawn` fill the columns of `runsync_spawn` only; the
    /// group's `hecs` and `bevy_ecs` those of its other rows; a variant no other library
    /// times keeps the group's columns.
    #[test]
    fn library_variants_fill_their_runsync_row() {
        let e = [
            est("simple_insert", "runsync", None, 5.0),
            est("simple_insert", "runsync_spawn", None, 50.0),
            est("simple_insert", "runsync_commands", None, 80.0),
            est("simple_insert", "runsync_other", None, 9.0),
            est("simple_insert", "hecs", None, 30.0),
            est("simple_insert", "bevy_ecs", None, 20.0),
            est("simple_insert", "hecs_spawn", None, 40.0),
            est("simple_insert", "bevy_ecs_spawn", None, 45.0),
            est("simple_insert", "hecs_commands", None, 90.0),
        ];
        let rows = rows(&e);
        let get = |f: &str| rows.iter().find(|r| r.function == f).expect(f);
        assert_eq!(rows.len(), 4, "no row for another library's variant");
        assert_eq!(
            get("runsync").times,
            [Some(5.0), Some(30.0), Some(20.0), None]
        );
        assert_eq!(
            get("runsync_spawn").times,
            [Some(50.0), Some(40.0), Some(45.0), None]
        );
        assert_eq!(
            get("runsync_commands").times,
            [Some(80.0), Some(90.0), None, None]
        );
        assert_eq!(
            get("runsync_other").times,
            [Some(9.0), Some(30.0), Some(20.0), None]
        );
    }

    #[test]
    fn hecs_1w_fills_the_hecs_column() {
        let e = [
            est("movement_5M_2w", "hecs_1w", None, 10.0),
            est("movement_5M_2w", "raw", None, 4.0),
            est("movement_5M_2w", "runsync_par_for_each_query", None, 5.0),
            est("movement_5M_2w", "runsync_query_1w", None, 12.0),
        ];
        let rows = rows(&e);
        assert_eq!(
            names(&rows),
            [
                "movement_5M_2w `runsync_query_1w`",
                "movement_5M_2w `runsync_par_for_each_query`",
            ]
        );
        assert_eq!(rows[0].ratio("hecs"), Some(1.2));
        assert_eq!(rows[1].ratio("hecs"), Some(0.5));
        let t = targets_table(&rows);
        let line = "| movement_5M_2w: `runsync_par_for_each_query` (2 workers) ≤ 0.6 × `hecs_1w` \
                    | 0.500× | yes |";
        assert!(t.contains(line), "missing `{line}` in\n{t}");
    }

    #[test]
    fn targets_report_the_output_slot_checks() {
        let e = [
            est("movement_10k", "runsync_query", None, 9.0),
            est("movement_10k", "runsync", None, 21.0),
            est("movement_10k", "runsync_writer", None, 13.0),
            est("movement_10k", "runsync_write_each", None, 5.0),
            est("movement_10k", "hecs", None, 10.0),
            est("movement_1M", "runsync_query", None, 1000.0),
            est("movement_1M_par", "runsync_par_for_each_query", None, 700.0),
            est(
                "movement_1M_par",
                "runsync_par_for_each_query_1w",
                None,
                1100.0,
            ),
            est("movement_1M_par", "hecs", None, 1000.0),
            est("contrib_100k_2w", "runsync_query_fn_merge", None, 8.5),
            est("contrib_100k_2w", "runsync_query", None, 6.0),
            est("contrib_100k_2w", "runsync_fn_merge", None, 7.0),
            est("contrib_100k_2w", "runsync", None, 7.0),
            est("contrib_100k_2w", "hecs", None, 10.0),
            est("contrib_100k_2w", "bevy_ecs", None, 10.0),
            est(
                "scatter_100k",
                "runsync_closure_merge_sync",
                Some("1"),
                700_000.0,
            ),
            est(
                "scatter_100k",
                "runsync_closure_merge_sync",
                Some("2"),
                770_000.0,
            ),
            est("many_systems_2w", "runsync", None, 1_000_800.0),
        ];
        let t = targets_table(&rows(&e));
        for line in [
            "| movement_10k: lead loop `runsync_query` ≤ 1.0 × hecs | 0.900× | yes |",
            "| movement_1M: lead loop `runsync_query` ≤ 1.0 × hecs | not measured | – |",
            "| movement_10k: plain `runsync` (`out.write`) ≤ 2.0 × hecs | 2.100× | **no** |",
            "| movement_10k: `runsync_writer` ≤ 1.5 × hecs | 1.300× | yes |",
            "| contrib_100k_1w: `runsync_query_fn_merge` ≤ 1.2 × hecs | not measured | – |",
            "| contrib_100k_2w: `runsync_query_fn_merge` ≤ 0.8 × hecs | 0.850× | **no** |",
            "| contrib_100k_2w: `runsync_query_fn_merge` ≤ 0.9 × bevy_ecs | 0.850× | yes |",
            "| contrib_100k_2w: row-write path, `fn` merge ≤ 1.2 × `merge::sum` \
             (`runsync_query_fn_merge` ÷ `runsync_query`) | 1.417× | **no** |",
            "| contrib_100k_2w: `runsync_fn_merge` ≤ 0.8 × hecs (extra) | 0.700× | yes |",
            "| contrib_100k_2w: plain path, `fn` merge ≤ 1.2 × `merge::sum` \
             (`runsync_fn_merge` ÷ `runsync`) (extra) | 1.000× | yes |",
            "| scatter_100k: Sync ≤ 8 ns/output (`runsync_closure_merge_sync` (1), \
             100k scattered outputs) | 7.000 ns | yes |",
            "| scatter_100k: Sync on 2 workers faster than on 1 \
             (`runsync_closure_merge_sync` (2) ÷ (1) < 1) | 1.100× | **no** |",
            "| movement_1M_par: `runsync_par_for_each_query` (2 workers) ≤ 0.8 × hecs \
             | 0.700× | yes |",
            "| movement_1M_par: `runsync_par_for_each_query_1w` ≤ 1.0 × movement_1M \
             `runsync_query` | 1.100× | **no** |",
            "| movement_10k: `runsync_write_each` ≤ 0.6 × hecs | 0.500× | yes |",
            "| many_systems_2w: 6,000 systems ≤ 1 ms per frame | 1.001 ms | **no** |",
        ] {
            assert!(t.contains(line), "missing `{line}` in\n{t}");
        }
        assert!(!t.contains("add_remove"), "write-path targets are gone");
        assert!(!t.contains("sync_sum_1M"), "write-path targets are gone");
    }

    #[test]
    fn svg_is_written() {
        let e = [
            est("a", "runsync", None, 20.0),
            est("a", "hecs", None, 10.0),
            est("a", "bevy_ecs", None, 30.0),
            est("a", "runsync_query", None, 15.0),
            est("a", "runsync_writer", None, 25.0),
            est("b", "runsync", None, 20.0),
            est("b", "hecs", None, 10.0),
            est("par", "runsync_par_for_each", None, 5.0),
            est("par", "hecs", None, 10.0),
        ];
        let rows = rows(&e);
        let path = std::env::temp_dir().join(format!("bench-report-{}.svg", std::process::id()));
        write_svg(&rows, &path).unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        assert!(svg.starts_with("<svg") && svg.contains("bevy_ecs"));
        // One cluster per group: the lead loop, else the plain path, else the first
        // function in `PATH_ORDER`.
        assert!(svg.contains("\na: query\n"));
        assert!(svg.contains("\nb: plain\n"));
        assert!(svg.contains("\npar: par_for_each\n"));
        assert!(!svg.contains("writer") && !svg.contains("a: plain"));
        assert!(svg.contains("runsync (lead loop `query`, else `plain`)"));
    }
}
