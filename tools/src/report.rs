//! Per-frame records and the end-of-run summary: the table, and the JSON.

use std::fmt::Write as _;
use std::time::Duration;

use runsync::FrameStats;
use serde::Serialize;

/// One system in one frame.
#[derive(Clone, Debug, Serialize)]
pub struct SystemFrame {
    /// The system's name.
    pub name: String,
    /// Wall time of its `run`, in microseconds.
    pub time_us: f64,
    /// Its work (`SystemStats::work`: every piece, its parallel chunks included, added
    /// up), in microseconds.
    pub work_us: f64,
    /// Its span (`SystemStats::span`: its serial time plus its longest chunks), in
    /// microseconds.
    pub span_us: f64,
    /// Component writes it emitted.
    pub writes: usize,
    /// Structural commands it emitted.
    pub commands: usize,
}

/// One frame.
#[derive(Clone, Debug, Serialize)]
pub struct FrameRecord {
    /// The frame's number (`FrameStats::frame`: the first frame is 1).
    pub frame: u64,
    /// Wall time of the whole `Runtime::frame` call, in microseconds.
    pub frame_us: f64,
    /// Run phase, in microseconds.
    pub run_us: f64,
    /// Sync phase, in microseconds.
    pub sync_us: f64,
    /// The frame's work (`FrameStats::work`: every piece of Run and Sync added up), in
    /// microseconds.
    pub work_us: f64,
    /// The frame's span (`FrameStats::span`: the longest chain more workers cannot
    /// shorten), in microseconds.
    pub span_us: f64,
    /// Live entities after the frame.
    pub entities: usize,
    /// Writes folded in by merges.
    pub merged: u64,
    /// Writes and commands dropped (dead or lacking targets).
    pub dropped: u64,
    /// Entities spawned in Sync.
    pub spawned: u64,
    /// Entities despawned in Sync.
    pub despawned: u64,
    /// Per system, in registration order.
    pub systems: Vec<SystemFrame>,
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

impl FrameRecord {
    /// Copies the runtime's stats of the frame that took `wall`.
    pub fn new(stats: &FrameStats, wall: Duration) -> FrameRecord {
        FrameRecord {
            frame: stats.frame,
            frame_us: us(wall),
            run_us: us(stats.run),
            sync_us: us(stats.sync),
            work_us: us(stats.work),
            span_us: us(stats.span),
            entities: stats.entities,
            merged: stats.merged,
            dropped: stats.dropped,
            spawned: stats.spawned,
            despawned: stats.despawned,
            systems: stats
                .systems
                .iter()
                .map(|s| SystemFrame {
                    name: s.name.to_string(),
                    time_us: us(s.time),
                    work_us: us(s.work),
                    span_us: us(s.span),
                    writes: s.writes,
                    commands: s.commands,
                })
                .collect(),
        }
    }
}

/// p50, p95, p99, max and mean of a series, in milliseconds.
#[derive(Clone, Copy, Debug, Default, Serialize, PartialEq)]
pub struct Percentiles {
    /// Median.
    pub p50_ms: f64,
    /// 95th percentile (nearest rank).
    pub p95_ms: f64,
    /// 99th percentile (nearest rank).
    pub p99_ms: f64,
    /// Maximum.
    pub max_ms: f64,
    /// Mean.
    pub mean_ms: f64,
}

impl Percentiles {
    /// Of `values` given in microseconds. All zero when empty.
    pub fn of_us(values: impl IntoIterator<Item = f64>) -> Percentiles {
        let mut v: Vec<f64> = values.into_iter().map(|x| x / 1e3).collect();
        if v.is_empty() {
            return Percentiles::default();
        }
        v.sort_by(f64::total_cmp);
        let rank = |q: f64| v[((q * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1];
        Percentiles {
            p50_ms: rank(0.50),
            p95_ms: rank(0.95),
            p99_ms: rank(0.99),
            max_ms: v[v.len() - 1],
            mean_ms: v.iter().sum::<f64>() / v.len() as f64,
        }
    }
}

/// One system over the whole run.
#[derive(Clone, Debug, Serialize)]
pub struct SystemSummary {
    /// The system's name.
    pub name: String,
    /// Mean wall time per frame, in milliseconds.
    pub mean_ms: f64,
    /// Mean work per frame, in milliseconds.
    pub work_ms: f64,
    /// Mean span per frame, in milliseconds.
    pub span_ms: f64,
    /// Mean component writes per frame.
    pub writes_per_frame: f64,
    /// Mean structural commands per frame.
    pub commands_per_frame: f64,
}

/// Work and span over a run: what one worker would need per frame, and the part of it
/// no number of workers can shorten.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct Scaling {
    /// Mean work per frame, in milliseconds.
    pub work_ms: f64,
    /// Mean span per frame, in milliseconds.
    pub span_ms: f64,
    /// The span as a percentage of the work.
    pub span_percent: f64,
    /// `(workers, bound)`: the most a frame of mean work and span can speed up on that
    /// many workers against one, `min(workers, work / span)`.
    pub speedup_bound: Vec<(usize, f64)>,
}

impl Scaling {
    /// The workers [`Scaling::speedup_bound`] is given for.
    pub const WORKERS: [usize; 3] = [4, 16, 64];

    /// Of frames with these works and spans (microseconds).
    pub fn of(frames: &[FrameRecord]) -> Scaling {
        let n = frames.len().max(1) as f64;
        let work = frames.iter().map(|f| f.work_us).sum::<f64>() / n / 1e3;
        let span = frames.iter().map(|f| f.span_us).sum::<f64>() / n / 1e3;
        let ratio = if span > 0.0 { work / span } else { 1.0 };
        Scaling {
            work_ms: work,
            span_ms: span,
            span_percent: if work > 0.0 { 100.0 * span / work } else { 0.0 },
            speedup_bound: Self::WORKERS
                .iter()
                .map(|&p| (p, ratio.min(p as f64)))
                .collect(),
        }
    }
}

/// The whole run.
#[derive(Clone, Debug, Serialize)]
pub struct Summary {
    /// Frames run.
    pub frames: usize,
    /// Worker threads.
    pub workers: usize,
    /// Wall time of all frames, in seconds.
    pub seconds: f64,
    /// Frames per second (frames / seconds).
    pub fps: f64,
    /// Whole frames.
    pub frame: Percentiles,
    /// Run phase.
    pub run: Percentiles,
    /// Sync phase.
    pub sync: Percentiles,
    /// Per system, in registration order.
    pub systems: Vec<SystemSummary>,
    /// Work and span of the mean frame, and the speed-up they allow.
    pub scaling: Scaling,
    /// Live entities at the end.
    pub entities_alive: usize,
    /// Agents (entities with health) alive at the end.
    pub agents_alive: usize,
    /// Turrets (children of ships) alive at the end.
    pub turrets_alive: usize,
    /// Entities spawned over the run.
    pub spawned: u64,
    /// Entities despawned over the run.
    pub despawned: u64,
    /// Outputs merged over the run.
    pub merged: u64,
    /// Outputs dropped over the run.
    pub dropped: u64,
    /// Peak resident memory (VmHWM), in bytes, where the OS reports it.
    pub peak_memory_bytes: Option<u64>,
}

impl Summary {
    /// Summarises `frames`; the counts at the end are passed in.
    pub fn new(
        frames: &[FrameRecord],
        workers: usize,
        agents_alive: usize,
        turrets_alive: usize,
        peak_memory_bytes: Option<u64>,
    ) -> Summary {
        let n = frames.len().max(1) as f64;
        let seconds = frames.iter().map(|f| f.frame_us).sum::<f64>() / 1e6;
        let systems = frames.first().map_or(Vec::new(), |first| {
            (0..first.systems.len())
                .map(|i| {
                    let sum = |f: &dyn Fn(&SystemFrame) -> f64| {
                        frames.iter().map(|fr| f(&fr.systems[i])).sum::<f64>() / n
                    };
                    SystemSummary {
                        name: first.systems[i].name.clone(),
                        mean_ms: sum(&|s| s.time_us) / 1e3,
                        work_ms: sum(&|s| s.work_us) / 1e3,
                        span_ms: sum(&|s| s.span_us) / 1e3,
                        writes_per_frame: sum(&|s| s.writes as f64),
                        commands_per_frame: sum(&|s| s.commands as f64),
                    }
                })
                .collect()
        });
        Summary {
            frames: frames.len(),
            workers,
            seconds,
            fps: if seconds > 0.0 {
                frames.len() as f64 / seconds
            } else {
                0.0
            },
            frame: Percentiles::of_us(frames.iter().map(|f| f.frame_us)),
            run: Percentiles::of_us(frames.iter().map(|f| f.run_us)),
            sync: Percentiles::of_us(frames.iter().map(|f| f.sync_us)),
            systems,
            scaling: Scaling::of(frames),
            entities_alive: frames.last().map_or(0, |f| f.entities),
            agents_alive,
            turrets_alive,
            spawned: frames.iter().map(|f| f.spawned).sum(),
            despawned: frames.iter().map(|f| f.despawned).sum(),
            merged: frames.iter().map(|f| f.merged).sum(),
            dropped: frames.iter().map(|f| f.dropped).sum(),
            peak_memory_bytes,
        }
    }

    /// The human-readable table.
    pub fn table(&self) -> String {
        let n = self.frames.max(1) as f64;
        let mut s = String::new();
        let _ = writeln!(
            s,
            "frames per second  {:>9.1}   ({} frames in {:.2} s on {} workers)",
            self.fps, self.frames, self.seconds, self.workers
        );
        let _ = writeln!(s);
        // The first column fits the longest system name (`PropagateTransforms`).
        let w = self
            .systems
            .iter()
            .map(|sys| sys.name.chars().count())
            .max()
            .unwrap_or(0)
            .max(12);
        let _ = writeln!(
            s,
            "{:<w$} {:>9} {:>9} {:>9} {:>9} {:>9}",
            "phase", "p50 ms", "p95 ms", "p99 ms", "max ms", "mean ms"
        );
        for (name, p) in [
            ("Run", self.run),
            ("Sync", self.sync),
            ("frame", self.frame),
        ] {
            let _ = writeln!(
                s,
                "{:<w$} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>9.3}",
                name, p.p50_ms, p.p95_ms, p.p99_ms, p.max_ms, p.mean_ms
            );
        }
        let _ = writeln!(s);
        let sc = &self.scaling;
        let _ = writeln!(
            s,
            "work, span {:>w2$.3} ms, {:.3} ms a frame (span {:.1} % of work)",
            sc.work_ms,
            sc.span_ms,
            sc.span_percent,
            w2 = w.saturating_sub(1)
        );
        let bounds: Vec<String> = sc
            .speedup_bound
            .iter()
            .map(|(p, b)| format!("{b:.1}x on {p}"))
            .collect();
        let _ = writeln!(s, "{:<w$} {}", "speed-up bound", bounds.join(", "));
        let _ = writeln!(s);
        let _ = writeln!(
            s,
            "{:<w$} {:>9} {:>9} {:>9} {:>14} {:>16}",
            "system", "mean ms", "work ms", "span ms", "writes/frame", "commands/frame"
        );
        for sys in &self.systems {
            let _ = writeln!(
                s,
                "{:<w$} {:>9.3} {:>9.3} {:>9.3} {:>14.0} {:>16.1}",
                sys.name,
                sys.mean_ms,
                sys.work_ms,
                sys.span_ms,
                sys.writes_per_frame,
                sys.commands_per_frame
            );
        }
        let _ = writeln!(s);
        let _ = writeln!(
            s,
            "entities alive   {:>12}   ({} agents, {} turrets, {} projectiles)",
            group(self.entities_alive as u64),
            group(self.agents_alive as u64),
            group(self.turrets_alive as u64),
            group(
                self.entities_alive
                    .saturating_sub(self.agents_alive + self.turrets_alive) as u64
            )
        );
        let _ = writeln!(
            s,
            "spawned/despawned {:>11} / {}",
            group(self.spawned),
            group(self.despawned)
        );
        let _ = writeln!(
            s,
            "outputs merged   {:>12}   ({} per frame)",
            group(self.merged),
            group((self.merged as f64 / n).round() as u64)
        );
        let _ = writeln!(
            s,
            "outputs dropped  {:>12}   ({} per frame)",
            group(self.dropped),
            group((self.dropped as f64 / n).round() as u64)
        );
        let mem = self.peak_memory_bytes.map_or("n/a".to_string(), |b| {
            format!("{:.1} MiB", b as f64 / 1048576.0)
        });
        let _ = writeln!(s, "peak memory      {mem:>12}");
        s
    }
}

/// `1234567` as `1,234,567`.
pub fn group(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Peak resident set size of this process (`VmHWM` in `/proc/self/status`), on Linux.
pub fn peak_memory_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_use_nearest_rank() {
        let p = Percentiles::of_us((1..=100).map(|x| x as f64 * 1e3));
        assert_eq!(
            (p.p50_ms, p.p95_ms, p.p99_ms, p.max_ms),
            (50.0, 95.0, 99.0, 100.0)
        );
        assert_eq!(p.mean_ms, 50.5);
        assert_eq!(Percentiles::of_us([]), Percentiles::default());
    }

    #[test]
    fn grouping() {
        assert_eq!(group(0), "0");
        assert_eq!(group(999), "999");
        assert_eq!(group(1000), "1,000");
        assert_eq!(group(1234567), "1,234,567");
    }

    #[test]
    fn peak_memory_is_read_on_linux() {
        if cfg!(target_os = "linux") {
            assert!(peak_memory_bytes().unwrap() > 0);
        }
    }

    #[test]
    fn summary_table_names_every_system() {
        let rec = |frame| FrameRecord {
            frame,
            frame_us: 2000.0,
            run_us: 1500.0,
            sync_us: 400.0,
            work_us: 2400.0,
            span_us: 600.0,
            entities: 10,
            merged: 7,
            dropped: 1,
            spawned: 0,
            despawned: 0,
            systems: vec![SystemFrame {
                name: "Integrate".into(),
                time_us: 1000.0,
                work_us: 1800.0,
                span_us: 300.0,
                writes: 7,
                commands: 0,
            }],
        };
        let s = Summary::new(&[rec(0), rec(1)], 2, 8, 0, Some(1 << 20));
        assert_eq!(s.fps, 500.0);
        let t = s.table();
        assert!(
            t.contains("Integrate") && t.contains("1.0 MiB") && t.contains("Sync"),
            "{t}"
        );
        // Work 2.4 ms, span 0.6 ms: 25 %, a bound of 4x however many workers past 4.
        assert_eq!(s.scaling.span_percent, 25.0);
        assert_eq!(s.scaling.speedup_bound, [(4, 4.0), (16, 4.0), (64, 4.0)]);
        assert!(
            t.contains("span 25.0 % of work") && t.contains("4.0x on 16"),
            "{t}"
        );
    }
}
