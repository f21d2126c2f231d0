//! Reading criterion's saved estimates and turning them into a comparison table, the issue-8
//! target checks ("plain write path at in-place speed"), and an SVG chart. Used by the
//! `bench-report` binary.
//!
//! A bench function's name says which runsync API path it measures: `runsync` is the plain
//! path (`out.write` in a `for` over `world.query`), `runsync_writer`, `runsync_write_each`,
//! `runsync_par_for_each` (…`_1w`: one worker) the others; see [`PATH_ORDER`].

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io;
use std::path::Path;

use plotters::prelude::*;
use serde_json::Value;

/// The libraries that get a column, in column order. A bench function named otherwise
/// (e.g. `runsync_writer`) becomes its own row, compared like `runsync`.
pub const LIBRARIES: [&str; 4] = ["runsync", "hecs", "bevy_ecs", "raw"];

/// The order of a group's rows, by bench function: the plain path first, then the other
/// write paths from the closest to it to the furthest. Functions not listed follow, by
/// name.
pub const PATH_ORDER: [&str; 5] = [
    "runsync",
    "runsync_writer",
    "runsync_write_each",
    "runsync_par_for_each",
    "runsync_par_for_each_1w",
];

/// What the bench function names mean, for a line under the table.
pub const PATHS_NOTE: &str = "Rows named after their group alone measure runsync's plain \
path (`out.write` in a `for` over `world.query`); a row marked `runsync_writer`, \
`runsync_write_each` or `runsync_par_for_each` runs the same workload through \
`out.writer()`, `Output::write_each` or `Output::par_for_each` (`_1w`: on one worker). \
Exceptions: `simple_insert`'s plain row uses `World::spawn_batch` (`runsync_spawn`: \
`World::spawn` in a loop), `add_remove`'s emits `Output::insert`/`remove`, \
`empty_systems` writes nothing.";

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
    /// Group, with the parameter and a non-library function name appended.
    pub name: String,
    /// The runsync bench function in the `runsync` column: `runsync` (the plain path) or
    /// a variant such as `runsync_writer`.
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

/// Lines up estimates into rows: one per (group, parameter), plus one per extra runsync
/// variant (named ``group `function` ``), which shares the group's other columns. Within
/// a group the plain path comes first, then the variants in [`PATH_ORDER`]; a group that
/// has variants but no plain-path row gets no row of its own (its variants carry the
/// other libraries' times).
pub fn rows(estimates: &[Estimate]) -> Vec<Row> {
    let mut base: BTreeMap<(String, Option<String>), Row> = BTreeMap::new();
    let mut variants: Vec<(String, Option<String>, String, f64)> = Vec::new();
    for e in estimates {
        let key = (e.group.clone(), e.parameter.clone());
        let row = base.entry(key).or_insert_with(|| Row {
            name: match &e.parameter {
                Some(p) => format!("{} ({p})", e.group),
                None => e.group.clone(),
            },
            function: LIBRARIES[0].to_owned(),
            group: e.group.clone(),
            parameter: e.parameter.clone(),
            ..Row::default()
        });
        if e.elements.is_some() {
            row.elements = e.elements;
        }
        match LIBRARIES.iter().position(|l| *l == e.function) {
            Some(i) => row.times[i] = Some(e.mean_ns),
            None => variants.push((
                e.group.clone(),
                e.parameter.clone(),
                e.function.clone(),
                e.mean_ns,
            )),
        }
    }
    variants.sort_by(|a, b| path_rank(&a.2).cmp(&path_rank(&b.2)));
    let mut out = Vec::new();
    for ((group, param), row) in base {
        let extra: Vec<Row> = variants
            .iter()
            .filter(|(g, p, _, _)| *g == group && *p == param)
            .map(|(_, _, f, t)| {
                let mut v = row.clone();
                v.name = format!("{} `{f}`", row.name);
                v.function = f.clone();
                v.times[0] = Some(*t);
                v
            })
            .collect();
        if row.times[0].is_some() || extra.is_empty() {
            out.push(row);
        }
        out.extend(extra);
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

/// One target of the issue: what it says, the measured value, the limit, and whether
/// lower values are better.
struct Target {
    what: String,
    measured: Option<f64>,
    limit: f64,
    lower_is_better: bool,
    unit: &'static str,
}

/// A "≤ limit × other" target on `row`'s ratio to `library`.
fn at_most(rows: &[Row], what: &str, row: &str, library: &str, limit: f64) -> Target {
    Target {
        what: what.to_owned(),
        measured: find(rows, row).and_then(|r| r.ratio(library)),
        limit,
        lower_is_better: true,
        unit: "×",
    }
}

/// The issue-8 targets ("plain write path at in-place speed"), each with its measured
/// value and whether it is met. runsync times whole frames (Run + Sync) unless the target
/// says Sync.
pub fn targets_table(rows: &[Row]) -> String {
    let runsync = |name: &str| find(rows, name).and_then(|r| r.time("runsync"));
    let sync_ns = |k: usize| {
        find(rows, &format!("sync_sum_1M ({k})"))
            .and_then(|r| Some(r.time("runsync")? / r.elements? as f64))
    };
    let par_speedup = runsync("movement_1M_par `runsync_par_for_each_1w`")
        .zip(runsync("movement_1M_par `runsync_par_for_each`"))
        .map(|(one, two)| one / two);
    let mut checks = Vec::new();
    for n in ["10k", "1M"] {
        let g = format!("movement_{n}");
        checks.extend([
            at_most(
                rows,
                &format!("{g}: plain `write` ≤ 1.5 × hecs"),
                &g,
                "hecs",
                1.5,
            ),
            at_most(
                rows,
                &format!("{g}: `writer` ≤ 1.2 × hecs"),
                &format!("{g} `runsync_writer`"),
                "hecs",
                1.2,
            ),
            at_most(
                rows,
                &format!("{g}: `write_each` ≤ 0.6 × hecs"),
                &format!("{g} `runsync_write_each`"),
                "hecs",
                0.6,
            ),
        ]);
    }
    checks.extend([
        at_most(
            rows,
            "movement_1M_par: `par_for_each` (2 workers) ≤ 1.0 × hecs (1 thread)",
            "movement_1M_par `runsync_par_for_each`",
            "hecs",
            1.0,
        ),
        Target {
            what: "movement_1M_par: `par_for_each` 2 workers ≥ 1.5 × faster than 1".to_owned(),
            measured: par_speedup,
            limit: 1.5,
            lower_is_better: false,
            unit: "×",
        },
        at_most(
            rows,
            "contrib_100k_2w: plain `write` ≤ 1.0 × bevy_ecs",
            "contrib_100k_2w",
            "bevy_ecs",
            1.0,
        ),
        at_most(
            rows,
            "contrib_100k_2w: plain `write` ≤ 0.8 × hecs",
            "contrib_100k_2w",
            "hecs",
            0.8,
        ),
        at_most(
            rows,
            "contrib_100k_1w: plain `write` ≤ 1.5 × hecs",
            "contrib_100k_1w",
            "hecs",
            1.5,
        ),
    ]);
    for k in [2, 4, 8] {
        checks.push(Target {
            what: format!("Sync ≤ 2 ns/output (1M outputs, sum, {k} overlapping sources)"),
            measured: sync_ns(k),
            limit: 2.0,
            lower_is_better: true,
            unit: " ns",
        });
    }
    checks.extend([
        at_most(
            rows,
            "simple_iter: plain `write` ≤ 1.5 × hecs",
            "simple_iter",
            "hecs",
            1.5,
        ),
        at_most(
            rows,
            "fragmented_iter: plain `write` ≤ 1.5 × hecs",
            "fragmented_iter",
            "hecs",
            1.5,
        ),
        Target {
            what: "many_systems_2w: 6,000 systems ≤ 1 ms per frame".to_owned(),
            measured: runsync("many_systems_2w").map(|ns| ns / 1e6),
            limit: 1.0,
            lower_is_better: true,
            unit: " ms",
        },
        at_most(rows, "add_remove ≤ 0.7 × hecs", "add_remove", "hecs", 0.7),
    ]);
    let mut s = String::from("| target | measured | met |\n|---|---:|:---:|\n");
    for t in checks {
        let (measured, met) = match t.measured {
            Some(v) => (
                format!("{v:.2}{}", t.unit),
                if (t.lower_is_better && v <= t.limit) || (!t.lower_is_better && v >= t.limit) {
                    "yes"
                } else {
                    "**no**"
                },
            ),
            None => ("not measured".to_owned(), "–"),
        };
        let _ = writeln!(s, "| {} | {measured} | {met} |", t.what);
    }
    s
}

/// Writes a grouped bar chart to `path`: for every (group, parameter) measured against
/// another library, its first row as [`rows`] orders them — the plain path when the group
/// has one, else the variant first in [`PATH_ORDER`] (named on its label) — each library's
/// time divided by runsync's (runsync = 1; higher bars are slower).
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

/// A row's name on the chart: the workload, and the API path unless it is the plain one
/// (`par_for_each`, not `runsync_par_for_each`, to keep labels apart).
fn chart_label(r: &Row) -> String {
    let workload = match &r.parameter {
        Some(p) => format!("{} ({p})", r.group),
        None => r.group.clone(),
    };
    match r.function.strip_prefix("runsync_") {
        Some(path) => format!("{workload}: {path}"),
        None => workload,
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
            .label(*lib)
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
    fn rows_line_up_libraries_and_variants() {
        let e = [
            est("simple_iter", "runsync", None, 20.0),
            est("simple_iter", "hecs", None, 10.0),
            est("simple_iter", "runsync_writer", None, 40.0),
            est("empty", "runsync", Some("10"), 5.0),
        ];
        let rows = rows(&e);
        assert_eq!(
            names(&rows),
            ["empty (10)", "simple_iter", "simple_iter `runsync_writer`"]
        );
        assert_eq!(rows[1].function, "runsync");
        assert_eq!(rows[1].ratio("hecs"), Some(2.0));
        assert_eq!(rows[2].function, "runsync_writer");
        assert_eq!(rows[2].ratio("hecs"), Some(4.0));
        let table = markdown_table(&rows);
        assert!(table.contains("| simple_iter | 20.0 ns | 10.0 ns | – | – | – | 2.00× |"));
        assert!(table.contains("| simple_iter `runsync_writer` | 40.0 ns | 10.0 ns |"));
    }

    #[test]
    fn plain_path_rows_come_first() {
        // `load` hands estimates over sorted by name: the plain path is not first there.
        let mut e = vec![
            est("movement_10k", "hecs", None, 10.0),
            est("movement_10k", "raw", None, 8.0),
            est("movement_10k", "runsync", None, 15.0),
            est("movement_10k", "runsync_other", None, 50.0),
            est("movement_10k", "runsync_par_for_each", None, 9.0),
            est("movement_10k", "runsync_write_each", None, 5.0),
            est("movement_10k", "runsync_writer", None, 12.0),
        ];
        e.reverse();
        let rows = rows(&e);
        assert_eq!(
            names(&rows),
            [
                "movement_10k",
                "movement_10k `runsync_writer`",
                "movement_10k `runsync_write_each`",
                "movement_10k `runsync_par_for_each`",
                "movement_10k `runsync_other`",
            ]
        );
        assert_eq!(rows[2].ratio("hecs"), Some(0.5));
        assert_eq!(rows[2].ratio("raw"), Some(5.0 / 8.0));
    }

    #[test]
    fn a_group_without_a_plain_path_row_lists_its_variants_only() {
        let e = [
            est("movement_1M_par", "hecs", None, 10.0),
            est("movement_1M_par", "runsync_par_for_each", None, 5.0),
            est("movement_1M_par", "runsync_par_for_each_1w", None, 9.0),
            est("hecs_only", "hecs", None, 1.0),
        ];
        let rows = rows(&e);
        assert_eq!(
            names(&rows),
            [
                "hecs_only",
                "movement_1M_par `runsync_par_for_each`",
                "movement_1M_par `runsync_par_for_each_1w`",
            ]
        );
        assert_eq!(rows[1].ratio("hecs"), Some(0.5));
    }

    #[test]
    fn targets_report_the_issue_8_checks() {
        let mut e = vec![
            est("movement_10k", "runsync", None, 14.0),
            est("movement_10k", "runsync_writer", None, 13.0),
            est("movement_10k", "runsync_write_each", None, 5.0),
            est("movement_10k", "hecs", None, 10.0),
            est("movement_1M_par", "runsync_par_for_each", None, 8.0),
            est("movement_1M_par", "runsync_par_for_each_1w", None, 16.0),
            est("movement_1M_par", "hecs", None, 10.0),
            est("contrib_100k_2w", "runsync", None, 9.0),
            est("contrib_100k_2w", "hecs", None, 10.0),
            est("contrib_100k_2w", "bevy_ecs", None, 12.0),
            est("many_systems_2w", "runsync", None, 1.5e6),
            est("add_remove", "runsync", None, 6.0),
            est("add_remove", "hecs", None, 10.0),
        ];
        let mut sync = est("sync_sum_1M", "runsync", Some("4"), 1.8e6);
        sync.elements = Some(1_000_000);
        e.push(sync);
        let t = targets_table(&rows(&e));
        for line in [
            "| movement_10k: plain `write` ≤ 1.5 × hecs | 1.40× | yes |",
            "| movement_10k: `writer` ≤ 1.2 × hecs | 1.30× | **no** |",
            "| movement_10k: `write_each` ≤ 0.6 × hecs | 0.50× | yes |",
            "| movement_1M: plain `write` ≤ 1.5 × hecs | not measured | – |",
            "| movement_1M_par: `par_for_each` (2 workers) ≤ 1.0 × hecs (1 thread) | 0.80× | yes |",
            "| movement_1M_par: `par_for_each` 2 workers ≥ 1.5 × faster than 1 | 2.00× | yes |",
            "| contrib_100k_2w: plain `write` ≤ 1.0 × bevy_ecs | 0.75× | yes |",
            "| contrib_100k_2w: plain `write` ≤ 0.8 × hecs | 0.90× | **no** |",
            "| Sync ≤ 2 ns/output (1M outputs, sum, 4 overlapping sources) | 1.80 ns | yes |",
            "| Sync ≤ 2 ns/output (1M outputs, sum, 8 overlapping sources) | not measured | – |",
            "| many_systems_2w: 6,000 systems ≤ 1 ms per frame | 1.50 ms | **no** |",
            "| add_remove ≤ 0.7 × hecs | 0.60× | yes |",
        ] {
            assert!(t.contains(line), "missing `{line}` in\n{t}");
        }
        assert!(!t.contains("5M movement"), "the issue-5 targets are gone");
    }

    #[test]
    fn svg_is_written() {
        let e = [
            est("a", "runsync", None, 20.0),
            est("a", "hecs", None, 10.0),
            est("a", "bevy_ecs", None, 30.0),
            est("a", "runsync_writer", None, 25.0),
            est("par", "runsync_par_for_each", None, 5.0),
            est("par", "hecs", None, 10.0),
        ];
        let rows = rows(&e);
        let path = std::env::temp_dir().join(format!("bench-report-{}.svg", std::process::id()));
        write_svg(&rows, &path).unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        assert!(svg.starts_with("<svg") && svg.contains("bevy_ecs"));
        // One cluster per group: the plain path, or the first variant when there is none.
        assert!(svg.contains("\na\n"));
        assert!(svg.contains("\npar: par_for_each\n"));
        assert!(!svg.contains("writer"));
    }
}
