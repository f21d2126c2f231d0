//! The run's statistics and the end-of-run summary: the table, and the JSON.
//!
//! A game loop runs for hours, so nothing here grows with the number of frames:
//! [`RunStats`] keeps, over the whole run, a [`Histogram`] per timing (percentiles to
//! within 0.05 %, exact maxima and means), sums per system, and a [`Timeline`] of Run and
//! Sync time for the chart (at most [`Timeline::POINTS`] points, each the mean of as many
//! consecutive frames as it takes); and, over the last frames only, a ring of
//! [`FrameRecord`]s (`arena --json`'s `frames`). Its memory is allocated up front, or
//! once the ring is full, and stays the same however long the run.

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
#[derive(Clone, Debug, Default, Serialize)]
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

/// Whole nanoseconds, saturating (at 584 years).
fn ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

impl FrameRecord {
    /// Copies the runtime's stats of the frame that took `wall`.
    pub fn new(stats: &FrameStats, wall: Duration) -> FrameRecord {
        let mut record = FrameRecord::default();
        record.set(stats, wall);
        record
    }

    /// Overwrites this record with the runtime's stats of the frame that took `wall`,
    /// reusing its buffers: once they fit the systems' names, this allocates nothing.
    pub fn set(&mut self, stats: &FrameStats, wall: Duration) {
        self.frame = stats.frame;
        self.frame_us = us(wall);
        self.run_us = us(stats.run);
        self.sync_us = us(stats.sync);
        self.work_us = us(stats.work);
        self.span_us = us(stats.span);
        self.entities = stats.entities;
        self.merged = stats.merged;
        self.dropped = stats.dropped;
        self.spawned = stats.spawned;
        self.despawned = stats.despawned;
        self.systems.truncate(stats.systems.len());
        for (i, s) in stats.systems.iter().enumerate() {
            if i == self.systems.len() {
                self.systems.push(SystemFrame {
                    name: String::new(),
                    time_us: 0.0,
                    work_us: 0.0,
                    span_us: 0.0,
                    writes: 0,
                    commands: 0,
                });
            }
            let f = &mut self.systems[i];
            if *f.name != *s.name {
                f.name.clear();
                f.name.push_str(&s.name);
            }
            f.time_us = us(s.time);
            f.work_us = us(s.work);
            f.span_us = us(s.span);
            f.writes = s.writes;
            f.commands = s.commands;
        }
    }

    /// Bytes this record holds on the heap (its buffers' capacities).
    fn heap_bytes(&self) -> usize {
        self.systems.capacity() * size_of::<SystemFrame>()
            + self
                .systems
                .iter()
                .map(|s| s.name.capacity())
                .sum::<usize>()
    }
}

/// A histogram of durations in fixed buckets: exact below 2,048 ns; above, 1,024 buckets
/// per power of two, so a bucket is at most 1/1024 of its values wide and a percentile,
/// taken at its bucket's middle, is within 0.05 % of the true one. Durations past
/// [`Histogram::TOP`] count in the top bucket. The exact count, sum, minimum and maximum
/// are kept beside the buckets. Its memory (about 270 KiB, zeroed pages the OS maps as
/// they are first touched) is allocated once, in [`Histogram::new`].
#[derive(Clone, Debug)]
pub struct Histogram {
    counts: Box<[u64]>,
    len: u64,
    sum_ns: u64,
    min_ns: u64,
    max_ns: u64,
}

/// Buckets per power of two, as a power of two.
const SUB_BITS: u32 = 10;
const SUB: u64 = 1 << SUB_BITS;
/// Durations are bucketed up to `2^TOP_BITS` ns.
const TOP_BITS: u32 = 42;
const BUCKETS: usize = ((TOP_BITS - SUB_BITS + 1) as u64 * SUB) as usize;

impl Default for Histogram {
    fn default() -> Histogram {
        Histogram::new()
    }
}

impl Histogram {
    /// The longest duration given its own bucket: 2^42 ns, some 73 minutes.
    pub const TOP: Duration = Duration::from_nanos(1 << TOP_BITS);

    /// An empty histogram.
    pub fn new() -> Histogram {
        Histogram {
            counts: vec![0; BUCKETS].into_boxed_slice(),
            len: 0,
            sum_ns: 0,
            min_ns: u64::MAX,
            max_ns: 0,
        }
    }

    /// The bucket of `v` nanoseconds.
    fn bucket(v: u64) -> usize {
        let v = v.min((1 << TOP_BITS) - 1);
        if v < 2 * SUB {
            return v as usize;
        }
        // `v`'s top bit is `e`: the bucket is `v`'s top SUB_BITS + 1 bits, past the
        // `e - SUB_BITS` groups of SUB buckets below.
        let shift = 63 - v.leading_zeros() - SUB_BITS;
        (u64::from(shift) * SUB + (v >> shift)) as usize
    }

    /// The lowest value of bucket `i` and its width, in nanoseconds.
    fn bounds(i: usize) -> (u64, u64) {
        let i = i as u64;
        if i < 2 * SUB {
            return (i, 1);
        }
        let shift = i / SUB - 1;
        ((i % SUB + SUB) << shift, 1 << shift)
    }

    /// Counts one duration.
    pub fn record(&mut self, d: Duration) {
        let v = ns(d);
        self.counts[Self::bucket(v)] += 1;
        self.len += 1;
        self.sum_ns = self.sum_ns.saturating_add(v);
        self.min_ns = self.min_ns.min(v);
        self.max_ns = self.max_ns.max(v);
    }

    /// Durations counted.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether none was counted.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The longest duration counted (exact); zero when empty.
    pub fn max(&self) -> Duration {
        Duration::from_nanos(self.max_ns)
    }

    /// The mean (exact, to the nanosecond); zero when empty.
    pub fn mean(&self) -> Duration {
        Duration::from_nanos(self.sum_ns.checked_div(self.len).unwrap_or(0))
    }

    /// The `q` quantile (0 to 1) by nearest rank: the middle of the bucket holding the
    /// `ceil(q * len)`-th smallest duration, kept within the exact minimum and maximum.
    /// Zero when empty.
    pub fn quantile(&self, q: f64) -> Duration {
        if self.len == 0 {
            return Duration::ZERO;
        }
        let rank = ((q * self.len as f64).ceil() as u64).clamp(1, self.len);
        let mut seen = 0;
        for (i, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                let (low, width) = Self::bounds(i);
                let mid = low + (width - 1) / 2;
                return Duration::from_nanos(mid.clamp(self.min_ns, self.max_ns));
            }
        }
        self.max()
    }

    /// p50, p95, p99, max and mean.
    pub fn percentiles(&self) -> Percentiles {
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        Percentiles {
            p50_ms: ms(self.quantile(0.50)),
            p95_ms: ms(self.quantile(0.95)),
            p99_ms: ms(self.quantile(0.99)),
            max_ms: ms(self.max()),
            mean_ms: ms(self.mean()),
        }
    }

    /// Bytes this histogram holds on the heap: the same from the first duration to the
    /// last.
    pub fn heap_bytes(&self) -> usize {
        self.counts.len() * size_of::<u64>()
    }
}

/// Run and Sync time per frame over the whole run, for the chart, in at most
/// [`Timeline::POINTS`] points (plus one for the frames since the last): each point is
/// the mean of [`Timeline::width`] consecutive frames. While the run is shorter than
/// `POINTS` frames, that is one frame a point; each time the points fill up, neighbours
/// are merged in pairs and the width doubles.
#[derive(Clone, Debug)]
pub struct Timeline {
    /// Sums of Run and Sync time over each point's frames, in microseconds.
    points: Vec<(f64, f64)>,
    width: u64,
    /// The frames since the last whole point: their sums and how many.
    pending: (f64, f64),
    pending_frames: u64,
}

/// One point of a [`Timeline`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TimelinePoint {
    /// The index (from 0) of its first frame in the run.
    pub first: u64,
    /// Frames it stands for.
    pub frames: u64,
    /// Their mean Run time, in milliseconds.
    pub run_ms: f64,
    /// Their mean Sync time, in milliseconds.
    pub sync_ms: f64,
}

impl Default for Timeline {
    fn default() -> Timeline {
        Timeline::new()
    }
}

impl Timeline {
    /// The most whole points kept (even, so that they merge in pairs).
    pub const POINTS: usize = 2048;

    /// An empty timeline; its points are allocated here, once.
    pub fn new() -> Timeline {
        Timeline {
            points: Vec::with_capacity(Self::POINTS),
            width: 1,
            pending: (0.0, 0.0),
            pending_frames: 0,
        }
    }

    /// Adds the next frame's Run and Sync time.
    pub fn push(&mut self, run: Duration, sync: Duration) {
        self.pending.0 += us(run);
        self.pending.1 += us(sync);
        self.pending_frames += 1;
        if self.pending_frames < self.width {
            return;
        }
        self.points.push(self.pending);
        self.pending = (0.0, 0.0);
        self.pending_frames = 0;
        if self.points.len() == Self::POINTS {
            for i in 0..Self::POINTS / 2 {
                let (a, b) = (self.points[2 * i], self.points[2 * i + 1]);
                self.points[i] = (a.0 + b.0, a.1 + b.1);
            }
            self.points.truncate(Self::POINTS / 2);
            self.width *= 2;
        }
    }

    /// Frames per whole point.
    pub fn width(&self) -> u64 {
        self.width
    }

    /// Frames added.
    pub fn frames(&self) -> u64 {
        self.points.len() as u64 * self.width + self.pending_frames
    }

    /// The points in frame order, the frames since the last whole point included.
    pub fn points(&self) -> impl Iterator<Item = TimelinePoint> + '_ {
        let whole = self
            .points
            .iter()
            .zip(0..)
            .map(|(&(run, sync), i)| (i, self.width, run, sync));
        let rest = (self.pending_frames > 0).then_some((
            self.points.len() as u64,
            self.pending_frames,
            self.pending.0,
            self.pending.1,
        ));
        whole
            .chain(rest)
            .map(move |(i, frames, run, sync)| TimelinePoint {
                first: i * self.width,
                frames,
                run_ms: run / frames as f64 / 1e3,
                sync_ms: sync / frames as f64 / 1e3,
            })
    }

    /// Bytes this timeline holds on the heap: the same from the first frame to the last.
    pub fn heap_bytes(&self) -> usize {
        self.points.capacity() * size_of::<(f64, f64)>()
    }
}

/// One system's totals over the run.
#[derive(Clone, Debug)]
struct SystemTotals {
    name: String,
    time_ns: u64,
    work_ns: u64,
    span_ns: u64,
    writes: u64,
    commands: u64,
}

/// What the report keeps of a run, in memory that does not grow with its length: over
/// the whole run, histograms of frame, Run, Sync and Run + Sync time, sums of work, span,
/// counts and each system's figures, and the [`Timeline`]; over the last
/// [`recent`](RunStats::recent) frames only, their [`FrameRecord`]s.
#[derive(Clone, Debug)]
pub struct RunStats {
    frames: u64,
    frame: Histogram,
    run: Histogram,
    sync: Histogram,
    run_sync: Histogram,
    work_ns: u64,
    span_ns: u64,
    entities: usize,
    merged: u64,
    dropped: u64,
    spawned: u64,
    despawned: u64,
    systems: Vec<SystemTotals>,
    timeline: Timeline,
    /// The last frames' records, a ring: once full, `next` is the oldest.
    recent: Vec<FrameRecord>,
    recent_cap: usize,
    next: usize,
}

impl RunStats {
    /// The frames [`RunStats::recent`] keeps by default (`arena --recent-frames`).
    pub const DEFAULT_RECENT: usize = 1000;

    /// Statistics of a run yet to start, keeping the records of its last `recent` frames.
    pub fn new(recent: usize) -> RunStats {
        RunStats {
            frames: 0,
            frame: Histogram::new(),
            run: Histogram::new(),
            sync: Histogram::new(),
            run_sync: Histogram::new(),
            work_ns: 0,
            span_ns: 0,
            entities: 0,
            merged: 0,
            dropped: 0,
            spawned: 0,
            despawned: 0,
            systems: Vec::new(),
            timeline: Timeline::new(),
            recent: Vec::new(),
            recent_cap: recent,
            next: 0,
        }
    }

    /// Adds the frame the runtime's `stats` describe, which took `wall` (the whole
    /// `Runtime::frame` call). Once the ring of recent records is full, this allocates
    /// nothing (while the systems keep their names).
    pub fn record(&mut self, stats: &FrameStats, wall: Duration) {
        self.frames += 1;
        self.frame.record(wall);
        self.run.record(stats.run);
        self.sync.record(stats.sync);
        self.run_sync.record(stats.run + stats.sync);
        self.work_ns = self.work_ns.saturating_add(ns(stats.work));
        self.span_ns = self.span_ns.saturating_add(ns(stats.span));
        self.entities = stats.entities;
        self.merged += stats.merged;
        self.dropped += stats.dropped;
        self.spawned += stats.spawned;
        self.despawned += stats.despawned;
        for (i, s) in stats.systems.iter().enumerate() {
            if i == self.systems.len() {
                self.systems.push(SystemTotals {
                    name: s.name.to_string(),
                    time_ns: 0,
                    work_ns: 0,
                    span_ns: 0,
                    writes: 0,
                    commands: 0,
                });
            }
            let t = &mut self.systems[i];
            t.time_ns = t.time_ns.saturating_add(ns(s.time));
            t.work_ns = t.work_ns.saturating_add(ns(s.work));
            t.span_ns = t.span_ns.saturating_add(ns(s.span));
            t.writes += s.writes as u64;
            t.commands += s.commands as u64;
        }
        self.timeline.push(stats.run, stats.sync);
        if self.recent_cap == 0 {
            return;
        }
        if self.recent.len() < self.recent_cap {
            self.recent.push(FrameRecord::new(stats, wall));
        } else {
            self.recent[self.next].set(stats, wall);
        }
        self.next = (self.next + 1) % self.recent_cap;
    }

    /// Frames recorded.
    pub fn frames(&self) -> u64 {
        self.frames
    }

    /// The records of the last frames (at most the `recent` given to [`RunStats::new`]),
    /// oldest first.
    pub fn recent(&self) -> impl Iterator<Item = &FrameRecord> + '_ {
        // Until the ring is full, `next` is its length; after, its oldest record.
        let (older, newer) = (&self.recent[self.next..], &self.recent[..self.next]);
        older.iter().chain(newer)
    }

    /// How many records [`RunStats::recent`] gives.
    pub fn recent_len(&self) -> usize {
        self.recent.len()
    }

    /// Run and Sync time over the whole run, for the chart.
    pub fn timeline(&self) -> &Timeline {
        &self.timeline
    }

    /// Run + Sync time per frame over the whole run.
    pub fn run_sync(&self) -> &Histogram {
        &self.run_sync
    }

    /// Bytes these statistics hold on the heap (every buffer's capacity): they reach their
    /// final size once [`recent`](RunStats::recent) frames are kept, and stay there.
    pub fn heap_bytes(&self) -> usize {
        [&self.frame, &self.run, &self.sync, &self.run_sync]
            .iter()
            .map(|h| h.heap_bytes())
            .sum::<usize>()
            + self.timeline.heap_bytes()
            + self.systems.capacity() * size_of::<SystemTotals>()
            + self
                .systems
                .iter()
                .map(|s| s.name.capacity())
                .sum::<usize>()
            + self.recent.capacity() * size_of::<FrameRecord>()
            + self
                .recent
                .iter()
                .map(FrameRecord::heap_bytes)
                .sum::<usize>()
    }

    /// The summary of the run so far; the counts at the end are passed in.
    pub fn summary(
        &self,
        workers: usize,
        agents_alive: usize,
        turrets_alive: usize,
        peak_memory_bytes: Option<u64>,
    ) -> Summary {
        let n = self.frames.max(1) as f64;
        let mean_ms = |total_ns: u64| total_ns as f64 / n / 1e6;
        let seconds = self.frame.sum_ns as f64 / 1e9;
        Summary {
            frames: self.frames as usize,
            workers,
            seconds,
            fps: if seconds > 0.0 {
                self.frames as f64 / seconds
            } else {
                0.0
            },
            frame: self.frame.percentiles(),
            run: self.run.percentiles(),
            sync: self.sync.percentiles(),
            systems: self
                .systems
                .iter()
                .map(|s| SystemSummary {
                    name: s.name.clone(),
                    mean_ms: mean_ms(s.time_ns),
                    work_ms: mean_ms(s.work_ns),
                    span_ms: mean_ms(s.span_ns),
                    writes_per_frame: s.writes as f64 / n,
                    commands_per_frame: s.commands as f64 / n,
                })
                .collect(),
            scaling: Scaling::of(mean_ms(self.work_ns), mean_ms(self.span_ns), workers),
            entities_alive: self.entities,
            agents_alive,
            turrets_alive,
            spawned: self.spawned,
            despawned: self.despawned,
            merged: self.merged,
            dropped: self.dropped,
            peak_memory_bytes,
        }
    }
}

/// p50, p95, p99, max and mean of a series, in milliseconds (see [`Histogram`] for their
/// precision).
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

/// `n` workers, in words: "1 worker", "2 workers".
pub fn workers_phrase(n: usize) -> String {
    match n {
        1 => "1 worker".to_owned(),
        n => format!("{n} workers"),
    }
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
    /// Whether the run's parallel loops were cut into parts (two workers or more). On one
    /// worker each loop runs as one piece, so its whole time counts as span: the span and
    /// the bound then say nothing about more workers, and the table says so.
    pub split: bool,
}

impl Scaling {
    /// The workers [`Scaling::speedup_bound`] is given for.
    pub const WORKERS: [usize; 3] = [4, 16, 64];

    /// Of a mean frame of this work and span (milliseconds), measured on `workers`
    /// workers.
    pub fn of(work_ms: f64, span_ms: f64, workers: usize) -> Scaling {
        let ratio = if span_ms > 0.0 {
            work_ms / span_ms
        } else {
            1.0
        };
        Scaling {
            work_ms,
            span_ms,
            span_percent: if work_ms > 0.0 {
                100.0 * span_ms / work_ms
            } else {
                0.0
            },
            speedup_bound: Self::WORKERS
                .iter()
                .map(|&p| (p, ratio.min(p as f64)))
                .collect(),
            split: workers > 1,
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
    /// The human-readable table.
    pub fn table(&self) -> String {
        let n = self.frames.max(1) as f64;
        let mut s = String::new();
        let _ = writeln!(
            s,
            "frames per second  {:>9.1}   ({} frames in {:.2} s on {})",
            self.fps,
            self.frames,
            self.seconds,
            workers_phrase(self.workers)
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
        if sc.split {
            let bounds: Vec<String> = sc
                .speedup_bound
                .iter()
                .map(|(p, b)| format!("{b:.1}x on {p}"))
                .collect();
            let _ = writeln!(s, "{:<w$} {}", "speed-up bound", bounds.join(", "));
        } else {
            let _ = writeln!(
                s,
                "{:<w$} not measured on 1 worker: each parallel loop ran as one piece, so it \
                 all counts as span (run with --workers 2 or more)",
                "speed-up bound"
            );
        }
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

    /// The stats of a real frame of a runtime with one system, `Integrate`, with these
    /// figures put in.
    fn frame_stats(frame: u64, run_us: u64, sync_us: u64) -> FrameStats {
        static ONE: std::sync::OnceLock<FrameStats> = std::sync::OnceLock::new();
        let mut s = ONE
            .get_or_init(|| {
                let mut rt = runsync::Runtime::builder()
                    .workers(1)
                    .build(runsync::World::new());
                rt.add_system_named(
                    "Integrate",
                    |_: &runsync::World, _: &mut runsync::Output| {},
                );
                rt.frame();
                rt.stats().clone()
            })
            .clone();
        s.frame = frame;
        s.run = Duration::from_micros(run_us);
        s.sync = Duration::from_micros(sync_us);
        s.work = Duration::from_micros(2400);
        s.span = Duration::from_micros(600);
        s.entities = 10;
        (s.merged, s.dropped, s.spawned, s.despawned) = (7, 1, 0, 0);
        let sys = &mut s.systems[0];
        sys.time = Duration::from_micros(1000);
        sys.work = Duration::from_micros(1800);
        sys.span = Duration::from_micros(300);
        (sys.writes, sys.commands) = (7, 0);
        s
    }

    #[test]
    fn buckets_hold_their_values_and_are_narrow() {
        let mut v = 1u64;
        let mut last = 0;
        while v < 1 << 45 {
            for x in [v - 1, v, v + 1, v + v / 3] {
                let (low, width) = Histogram::bounds(Histogram::bucket(x));
                if x < 1 << TOP_BITS {
                    assert!(low <= x && x < low + width, "{x} in [{low}, +{width})");
                    assert!(width == 1 || width * SUB <= low, "{x}: width {width}");
                }
            }
            assert!(Histogram::bucket(v) >= last, "{v}");
            last = Histogram::bucket(v);
            v = v * 5 / 4 + 1;
        }
        // Consecutive buckets tile the values.
        for i in 1..BUCKETS {
            let (a, w) = Histogram::bounds(i - 1);
            assert_eq!(Histogram::bounds(i).0, a + w, "bucket {i}");
        }
        assert_eq!(Histogram::bucket(u64::MAX), BUCKETS - 1);
    }

    #[test]
    fn percentiles_use_nearest_rank_within_the_precision() {
        let mut h = Histogram::new();
        for ms in 1..=100 {
            h.record(Duration::from_millis(ms));
        }
        let p = h.percentiles();
        for (got, want) in [(p.p50_ms, 50.0), (p.p95_ms, 95.0), (p.p99_ms, 99.0)] {
            assert!((got - want).abs() <= want * 0.0005, "{got} for {want}");
        }
        assert_eq!((p.max_ms, p.mean_ms), (100.0, 50.5));
        assert_eq!(Histogram::new().percentiles(), Percentiles::default());
        // Exact below 2,048 ns.
        let mut h = Histogram::new();
        for x in 1..=100 {
            h.record(Duration::from_nanos(x * 10));
        }
        assert_eq!(h.quantile(0.5), Duration::from_nanos(500));
        assert_eq!(h.quantile(0.99), Duration::from_nanos(990));
        assert_eq!(h.quantile(0.0), Duration::from_nanos(10));
        // Within the minimum and maximum, however wide their bucket.
        let mut h = Histogram::new();
        h.record(Duration::from_secs(3 * 3600));
        assert_eq!(h.quantile(0.5), Duration::from_secs(3 * 3600));
    }

    #[test]
    fn timeline_merges_pairs_into_means() {
        let mut t = Timeline::new();
        let points = Timeline::POINTS as u64;
        for i in 0..points - 1 {
            t.push(Duration::from_micros(i), Duration::ZERO);
        }
        assert_eq!((t.width(), t.points().count()), (1, Timeline::POINTS - 1));
        t.push(Duration::from_micros(points - 1), Duration::from_micros(2));
        // Full: merged in pairs, two frames a point.
        assert_eq!((t.width(), t.points().count()), (2, Timeline::POINTS / 2));
        let first = t.points().next().unwrap();
        assert_eq!((first.first, first.frames, first.run_ms), (0, 2, 0.0005));
        let last = t.points().last().unwrap();
        assert_eq!((last.first, last.sync_ms), (points - 2, 0.001));
        // A frame more is a point of its own, until its pair comes.
        t.push(Duration::from_micros(10), Duration::ZERO);
        let last = t.points().last().unwrap();
        assert_eq!((last.first, last.frames, last.run_ms), (points, 1, 0.01));
        for _ in 0..100 * points {
            t.push(Duration::from_micros(4), Duration::from_micros(1));
        }
        assert_eq!(t.frames(), 101 * points + 1);
        assert!(t.points().count() <= Timeline::POINTS + 1);
        let covered: u64 = t.points().map(|p| p.frames).sum();
        assert_eq!(covered, t.frames());
    }

    #[test]
    fn the_ring_keeps_the_last_frames_oldest_first() {
        let mut r = RunStats::new(3);
        let frames = |r: &RunStats| r.recent().map(|f| f.frame).collect::<Vec<_>>();
        assert!(frames(&r).is_empty());
        r.record(&frame_stats(1, 10, 1), Duration::from_micros(12));
        r.record(&frame_stats(2, 10, 1), Duration::from_micros(12));
        assert_eq!(frames(&r), [1, 2]);
        for f in 3..=7 {
            r.record(&frame_stats(f, 10, 1), Duration::from_micros(12));
        }
        assert_eq!(
            (frames(&r), r.recent_len(), r.frames()),
            (vec![5, 6, 7], 3, 7)
        );
        assert_eq!(r.recent().last().unwrap().systems[0].name, "Integrate");
        let none = {
            let mut r = RunStats::new(0);
            r.record(&frame_stats(1, 10, 1), Duration::from_micros(12));
            r
        };
        assert_eq!((none.recent().count(), none.frames()), (0, 1));
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
        let mut r = RunStats::new(RunStats::DEFAULT_RECENT);
        for f in 1..=2 {
            r.record(&frame_stats(f, 1500, 400), Duration::from_micros(2000));
        }
        let s = r.summary(2, 8, 0, Some(1 << 20));
        assert_eq!(s.fps, 500.0);
        assert_eq!(
            (s.frames, s.merged, s.dropped, s.entities_alive),
            (2, 14, 2, 10)
        );
        assert_eq!(s.run.p50_ms, 1.5);
        assert_eq!(s.systems[0].mean_ms, 1.0);
        assert_eq!(s.systems[0].writes_per_frame, 7.0);
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
        // On one worker no loop was cut into parts: the bound is not given.
        let one = r.summary(1, 8, 0, Some(1 << 20));
        assert!(!one.scaling.split);
        let t = one.table();
        assert!(
            t.contains("not measured on 1 worker") && !t.contains("4.0x on 16"),
            "{t}"
        );
    }

    #[test]
    fn memory_is_reached_once_the_ring_is_full_and_stays() {
        let mut r = RunStats::new(100);
        let mut at = Vec::new();
        for f in 1..=20_000u64 {
            // Times spread over many buckets, as a run's do.
            let x = f.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40;
            r.record(
                &frame_stats(f, x % 50_000, x % 700),
                Duration::from_micros(x),
            );
            if [100, 1000, 20_000].contains(&f) {
                at.push(r.heap_bytes());
            }
        }
        assert_eq!(at[0], at[1]);
        assert_eq!(at[1], at[2]);
    }
}
