//! Reading criterion's saved estimates and turning them into a comparison table, the issue-5
//! target checks, and an SVG chart. Used by the `bench-report` binary.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io;
use std::path::Path;

use plotters::prelude::*;
use serde_json::Value;

/// The libraries that get a column, in column order. A bench function named otherwise
/// (e.g. `runsync_writer`) becomes its own row, compared like `runsync`.
pub const LIBRARIES: [&str; 4] = ["runsync", "hecs", "bevy_ecs", "raw"];

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
/// variant (named ``group `function` ``), which shares the group's other columns.
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
    let mut out = Vec::new();
    for ((group, param), row) in base {
        let extra: Vec<Row> = variants
            .iter()
            .filter(|(g, p, _, _)| *g == group && *p == param)
            .map(|(_, _, f, t)| {
                let mut v = row.clone();
                v.name = format!("{} `{f}`", row.name);
                v.times[0] = Some(*t);
                v
            })
            .collect();
        out.push(row);
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

/// The issue-5 targets, each with its measured value and whether it is met.
pub fn targets_table(rows: &[Row]) -> String {
    let runsync = |name: &str| find(rows, name).and_then(|r| r.time("runsync"));
    let ratio = |name: &str, lib: &str| find(rows, name).and_then(|r| r.ratio(lib));
    let sync_ns =
        find(rows, "sync_sum_1M (1)").and_then(|r| Some(r.time("runsync")? / r.elements? as f64));
    let speedup = runsync("scaling_heavy_compute (1)")
        .zip(runsync("scaling_heavy_compute (2)"))
        .map(|(one, two)| one / two);
    let per_system = |g: &str| runsync(&format!("{g} (100)")).map(|t| t / 100.0 / 1e3);
    // (target, measured, limit, lower is better, unit)
    let checks: [(&str, Option<f64>, f64, bool, &str); 10] = [
        (
            "simple_iter ≤ 1.5 × hecs",
            ratio("simple_iter", "hecs"),
            1.5,
            true,
            "×",
        ),
        (
            "1M movement ≤ 1.5 × raw (1 worker)",
            ratio("movement_1M", "raw"),
            1.5,
            true,
            "×",
        ),
        (
            "schedule ≤ 1.0 × bevy_ecs",
            ratio("schedule", "bevy_ecs"),
            1.0,
            true,
            "×",
        ),
        (
            "add_remove ≤ 1.0 × hecs",
            ratio("add_remove", "hecs"),
            1.0,
            true,
            "×",
        ),
        (
            "simple_insert ≤ 1.0 × hecs",
            ratio("simple_insert", "hecs"),
            1.0,
            true,
            "×",
        ),
        (
            "Sync ≤ 3 ns/output (1M, sum, 1 system, 1 worker)",
            sync_ns,
            3.0,
            true,
            " ns",
        ),
        (
            "empty systems ≤ 0.5 µs each (100 systems, 1 worker)",
            per_system("empty_systems_1w"),
            0.5,
            true,
            " µs",
        ),
        (
            "empty systems ≤ 0.5 µs each (100 systems, 2 workers)",
            per_system("empty_systems_2w"),
            0.5,
            true,
            " µs",
        ),
        (
            "heavy_compute 2 workers ≥ 1.8 × faster than 1",
            speedup,
            1.8,
            false,
            "×",
        ),
        (
            "5M movement (2 workers) ≤ 1.25 × raw on 2 threads",
            ratio("movement_5M_2w", "raw"),
            1.25,
            true,
            "×",
        ),
    ];
    let mut s = String::from("| target | measured | met |\n|---|---:|:---:|\n");
    for (what, value, limit, lower, unit) in checks {
        let (measured, met) = match value {
            Some(v) => (
                format!("{v:.2}{unit}"),
                if (lower && v <= limit) || (!lower && v >= limit) {
                    "yes"
                } else {
                    "**no**"
                },
            ),
            None => ("not measured".to_owned(), "–"),
        };
        let _ = writeln!(s, "| {what} | {measured} | {met} |");
    }
    s
}

/// Writes a grouped bar chart to `path`: for every row measured against another library
/// (runsync's main variant only), each library's time divided by runsync's (runsync = 1;
/// higher bars are slower).
/// Uses only plotters' SVG backend and its built-in text layout: no font libraries.
pub fn write_svg(rows: &[Row], path: &Path) -> io::Result<()> {
    let compared: Vec<&Row> = rows
        .iter()
        .filter(|r| {
            r.time("runsync").is_some()
                && r.times[1..].iter().any(Option::is_some)
                && !r.name.contains('`')
        })
        .collect();
    draw(&compared, path).map_err(|e| io::Error::other(e.to_string()))
}

const COLORS: [RGBColor; 4] = [
    RGBColor(0x1f, 0x77, 0xb4),
    RGBColor(0xff, 0x7f, 0x0e),
    RGBColor(0x2c, 0xa0, 0x2c),
    RGBColor(0x7f, 0x7f, 0x7f),
];

fn draw(rows: &[&Row], path: &Path) -> Result<(), Box<dyn std::error::Error>> {
    let width = 140 * rows.len().max(1) as u32 + 120;
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
    let names: Vec<String> = rows.iter().map(|r| r.name.clone()).collect();
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

    #[test]
    fn rows_line_up_libraries_and_variants() {
        let e = [
            est("simple_iter", "runsync", None, 20.0),
            est("simple_iter", "hecs", None, 10.0),
            est("simple_iter", "runsync_writer", None, 40.0),
            est("empty", "runsync", Some("10"), 5.0),
        ];
        let rows = rows(&e);
        assert_eq!(rows.len(), 3);
        assert_eq!(rows[0].name, "empty (10)");
        assert_eq!(rows[1].name, "simple_iter");
        assert_eq!(rows[1].ratio("hecs"), Some(2.0));
        assert_eq!(rows[2].name, "simple_iter `runsync_writer`");
        assert_eq!(rows[2].ratio("hecs"), Some(4.0));
        let table = markdown_table(&rows);
        assert!(table.contains("| simple_iter | 20.0 ns | 10.0 ns | – | – | – | 2.00× |"));
        assert!(targets_table(&rows).contains("| simple_iter ≤ 1.5 × hecs | 2.00× | **no** |"));
    }

    #[test]
    fn svg_is_written() {
        let e = [
            est("a", "runsync", None, 20.0),
            est("a", "hecs", None, 10.0),
            est("a", "bevy_ecs", None, 30.0),
        ];
        let path = std::env::temp_dir().join(format!("bench-report-{}.svg", std::process::id()));
        write_svg(&rows(&e), &path).unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        assert!(svg.starts_with("<svg") && svg.contains("bevy_ecs"));
    }
}
