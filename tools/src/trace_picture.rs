//! A picture of a trace file (`Runtime::finish_trace`, `arena --trace`): the last few frames
//! as a timeline, one lane per thread, as an SVG (plotters, SVG backend only), so a trace
//! can be looked at without Perfetto or `chrome://tracing` (`arena --trace-picture`).
//!
//! How: [`layout`] reads the file's events and places the spans of the window; [`svg`]
//! draws that layout. Reading takes two passes over the bytes, each streaming the events
//! one at a time: the first keeps only the last frames' times (to find the window), the
//! second only the spans that overlap the window and the thread names. So memory is the
//! window's spans, not the file's events.
//!
//! Every byte of the file is untrusted: a file that is not JSON, not a trace, or holds
//! times that are negative or not finite gets a [`TraceError`], never a panic. What can
//! grow is capped: the input ([`MAX_INPUT_BYTES`]), the threads ([`MAX_LANES`]), the spans
//! in the window ([`MAX_SPANS`]) and each lane's rows ([`MAX_ROWS`]; deeper spans share
//! the last row). Values the reader does not use (most `args`) are skipped without being
//! built, and `serde_json` skips nested arrays and objects without recursing.

use std::collections::BTreeMap;
use std::fmt;
use std::io::Read;
use std::path::Path;

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use serde::Deserialize;
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

/// The largest trace file read, in bytes (a frame of the arena is some 3.4 KB of trace).
pub const MAX_INPUT_BYTES: u64 = 256 << 20;
/// The most threads (lanes) a picture has.
pub const MAX_LANES: usize = 256;
/// The most spans a picture's window may hold (an SVG of that many is some 10 MB).
pub const MAX_SPANS: usize = 100_000;
/// The most frames a picture shows.
pub const MAX_FRAMES: usize = 1000;
/// The most rows of nested spans a lane has; spans nested deeper are drawn in the last.
pub const MAX_ROWS: usize = 8;

/// Why a trace file could not be drawn. The message says what was wrong and where.
#[derive(Debug)]
pub enum TraceError {
    /// Reading the file failed.
    Io(std::io::Error),
    /// The file is larger than [`MAX_INPUT_BYTES`].
    TooLarge,
    /// The file is not JSON, or not a trace (its position in the file is in the message).
    Invalid(serde_json::Error),
    /// The trace holds no complete event of category `frame`.
    NoFrames,
    /// Drawing the SVG failed.
    Draw(String),
}

impl fmt::Display for TraceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TraceError::Io(e) => write!(f, "cannot read the trace: {e}"),
            TraceError::TooLarge => write!(
                f,
                "the trace is larger than {} MiB: trace fewer frames",
                MAX_INPUT_BYTES >> 20
            ),
            TraceError::Invalid(e) => write!(f, "not a Chrome trace-event file: {e}"),
            TraceError::NoFrames => write!(
                f,
                "the trace holds no frame (no complete event of category \"frame\")"
            ),
            TraceError::Draw(e) => write!(f, "cannot draw the picture: {e}"),
        }
    }
}

impl std::error::Error for TraceError {}

/// What a span is, which picks its colour.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A whole frame.
    Frame,
    /// A stage of a frame (when a runtime has several).
    Stage,
    /// The Run phase.
    Run,
    /// The Sync phase.
    Sync,
    /// A step of Sync.
    Step,
    /// A system.
    System,
    /// Anything else.
    Other,
}

impl Kind {
    fn of(cat: &str, name: &str) -> Kind {
        match (cat, name) {
            ("frame", _) => Kind::Frame,
            ("stage", _) => Kind::Stage,
            ("phase", "Run") => Kind::Run,
            ("phase", "Sync") => Kind::Sync,
            ("step", _) => Kind::Step,
            ("system", _) => Kind::System,
            _ => Kind::Other,
        }
    }
}

/// One thread of the trace: a lane of the picture.
#[derive(Clone, Debug, PartialEq)]
pub struct Lane {
    /// The thread's name (its `thread_name` metadata), or `thread N`.
    pub name: String,
    /// Rows of nested spans (at least 1, at most [`MAX_ROWS`]).
    pub rows: usize,
}

/// One span in the window, clipped to it.
#[derive(Clone, Debug, PartialEq)]
pub struct Span {
    /// Its name: a frame's with its number (`frame 12`), else the event's.
    pub name: String,
    /// What it is.
    pub kind: Kind,
    /// Its lane, an index into [`Layout::lanes`].
    pub lane: usize,
    /// Its row within the lane: how many spans it lies within (at most `MAX_ROWS - 1`).
    pub row: usize,
    /// Start, in microseconds from the window's start.
    pub start: f64,
    /// End, in microseconds from the window's start.
    pub end: f64,
}

/// The spans of the window placed in lanes and rows: what [`svg`] draws.
#[derive(Clone, Debug, PartialEq)]
pub struct Layout {
    /// The threads, in the trace's order (`thread_sort_index`, then id).
    pub lanes: Vec<Lane>,
    /// The spans, in the order they start.
    pub spans: Vec<Span>,
    /// The window's length in microseconds.
    pub length: f64,
    /// The first and last frame number shown, where the frames carry one.
    pub frames: Option<(u64, u64)>,
}

/// An event as the file has it; fields not listed are skipped unread.
#[derive(Deserialize)]
struct RawEvent {
    #[serde(default)]
    name: String,
    #[serde(default)]
    cat: String,
    #[serde(default)]
    ph: String,
    #[serde(default)]
    ts: f64,
    #[serde(default)]
    dur: f64,
    #[serde(default)]
    pid: u64,
    #[serde(default)]
    tid: u64,
    #[serde(default)]
    args: RawArgs,
}

/// The `args` an event may carry that the picture uses.
#[derive(Default, Deserialize)]
struct RawArgs {
    /// A `thread_name` event's name.
    #[serde(default)]
    name: Scalar,
    /// A `thread_sort_index` event's index.
    #[serde(default)]
    sort_index: Scalar,
    /// A frame's number.
    #[serde(default)]
    frame: Scalar,
}

/// A value that may be a string, an unsigned integer, or anything else (skipped): args
/// are free-form, so a value of another type is not an error.
#[derive(Default)]
enum Scalar {
    #[default]
    None,
    Text(String),
    Int(u64),
}

impl<'de> Deserialize<'de> for Scalar {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Scalar, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Scalar;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any value")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Scalar, E> {
                Ok(Scalar::Text(s.to_owned()))
            }
            fn visit_u64<E: de::Error>(self, n: u64) -> Result<Scalar, E> {
                Ok(Scalar::Int(n))
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Scalar, E> {
                Ok(Scalar::None)
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Scalar, E> {
                Ok(Scalar::None)
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Scalar, E> {
                Ok(Scalar::None)
            }
            fn visit_unit<E: de::Error>(self) -> Result<Scalar, E> {
                Ok(Scalar::None)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Scalar, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Scalar::None)
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Scalar, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Scalar::None)
            }
        }
        d.deserialize_any(V)
    }
}

/// Calls `each` with every event of a trace file, one at a time: the file is either
/// `{"traceEvents": [...], ...}` or the bare array.
fn for_each_event(
    bytes: &[u8],
    each: &mut dyn FnMut(RawEvent) -> Result<(), String>,
) -> Result<(), TraceError> {
    struct Events<'f>(&'f mut dyn FnMut(RawEvent) -> Result<(), String>);
    impl<'de> Visitor<'de> for Events<'_> {
        type Value = ();
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("an array of trace events")
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
            while let Some(e) = seq.next_element::<RawEvent>()? {
                (self.0)(e).map_err(de::Error::custom)?;
            }
            Ok(())
        }
    }
    impl<'de> DeserializeSeed<'de> for Events<'_> {
        type Value = ();
        fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
            d.deserialize_seq(self)
        }
    }
    struct File<'f>(&'f mut dyn FnMut(RawEvent) -> Result<(), String>);
    impl<'de> Visitor<'de> for File<'_> {
        type Value = ();
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("{\"traceEvents\": [...]} or an array of trace events")
        }
        fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<(), A::Error> {
            Events(self.0).visit_seq(seq)
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
            let mut found = false;
            while let Some(key) = map.next_key::<String>()? {
                if key == "traceEvents" && !found {
                    map.next_value_seed(Events(&mut *self.0))?;
                    found = true;
                } else {
                    map.next_value::<IgnoredAny>()?;
                }
            }
            if found {
                Ok(())
            } else {
                Err(de::Error::custom("no \"traceEvents\" array"))
            }
        }
    }
    let mut d = serde_json::Deserializer::from_slice(bytes);
    d.deserialize_any(File(each))
        .and_then(|()| d.end())
        .map_err(TraceError::Invalid)
}

/// An event's start and end in microseconds, checked: finite, not negative.
fn times(e: &RawEvent) -> Result<(f64, f64), String> {
    let end = e.ts + e.dur;
    if !(e.ts >= 0.0 && e.dur >= 0.0 && end.is_finite()) {
        return Err(format!(
            "event \"{}\" has ts {} and dur {}: times must be finite and not negative",
            e.name.chars().take(60).collect::<String>(),
            e.ts,
            e.dur
        ));
    }
    Ok((e.ts, end))
}

/// A thread's name and sort index, by (pid, tid).
type Threads = BTreeMap<(u64, u64), (Option<String>, Option<u64>)>;

/// The entry of the thread `key`, made if new (at most [`MAX_LANES`] threads).
fn thread(
    threads: &mut Threads,
    key: (u64, u64),
) -> Result<&mut (Option<String>, Option<u64>), String> {
    if !threads.contains_key(&key) && threads.len() >= MAX_LANES {
        return Err(format!("more than {MAX_LANES} threads"));
    }
    Ok(threads.entry(key).or_default())
}

/// Places the spans of the last `frames` frames of the trace in `bytes` (Chrome
/// trace-event JSON, as `Runtime::finish_trace` writes it): the window runs from the
/// first of those frames' start to the last one's end. Cost: two streaming passes over
/// the bytes; memory for the window's spans only.
///
/// # Errors
/// A [`TraceError`] if the bytes are not a trace, hold no frame, or pass a cap.
pub fn layout(bytes: &[u8], frames: usize) -> Result<Layout, TraceError> {
    if bytes.len() as u64 > MAX_INPUT_BYTES {
        return Err(TraceError::TooLarge);
    }
    let frames = frames.clamp(1, MAX_FRAMES);

    // The last frames by start: (start, end, number), sorted by start.
    let mut last: Vec<(f64, f64, Option<u64>)> = Vec::with_capacity(frames + 1);
    for_each_event(bytes, &mut |e| {
        if e.ph != "X" {
            return Ok(());
        }
        let (start, end) = times(&e)?;
        if Kind::of(&e.cat, &e.name) == Kind::Frame {
            let number = match e.args.frame {
                Scalar::Int(n) => Some(n),
                _ => None,
            };
            let at = last.partition_point(|f| f.0 <= start);
            last.insert(at, (start, end, number));
            if last.len() > frames {
                last.remove(0);
            }
        }
        Ok(())
    })?;
    let (Some(first), Some(final_frame)) = (last.first(), last.last()) else {
        return Err(TraceError::NoFrames);
    };
    let from = first.0;
    let to = last.iter().map(|f| f.1).fold(final_frame.1, f64::max);
    let numbers = first.2.zip(final_frame.2);

    // Threads, keyed (pid, tid): name and sort index.
    let mut threads = Threads::new();
    let mut spans: Vec<(Span, (u64, u64))> = Vec::new();
    for_each_event(bytes, &mut |e| {
        let key = (e.pid, e.tid);
        match e.ph.as_str() {
            "M" => {
                let t = thread(&mut threads, key)?;
                match (e.name.as_str(), e.args.name, e.args.sort_index) {
                    ("thread_name", Scalar::Text(name), _) => t.0 = Some(name),
                    ("thread_sort_index", _, Scalar::Int(i)) => t.1 = Some(i),
                    _ => {}
                }
            }
            "X" => {
                let (start, end) = times(&e)?;
                let inside = if end > start {
                    end > from && start < to
                } else {
                    from <= start && start <= to
                };
                if !inside {
                    return Ok(());
                }
                if spans.len() >= MAX_SPANS {
                    return Err(format!(
                        "more than {MAX_SPANS} spans in the window: show fewer frames"
                    ));
                }
                thread(&mut threads, key)?;
                let kind = Kind::of(&e.cat, &e.name);
                let name = match (kind, e.args.frame) {
                    (Kind::Frame, Scalar::Int(n)) => format!("frame {n}"),
                    _ => e.name,
                };
                spans.push((
                    Span {
                        name,
                        kind,
                        lane: 0,
                        row: 0,
                        start: start.max(from) - from,
                        end: end.min(to) - from,
                    },
                    key,
                ));
            }
            _ => {}
        }
        Ok(())
    })?;

    // Lanes in the trace's order; spans into rows by nesting.
    let mut order: Vec<_> = threads.into_iter().collect();
    order.sort_by_key(|(key, (_, sort))| (sort.unwrap_or(u64::MAX), *key));
    let index: BTreeMap<(u64, u64), usize> = order
        .iter()
        .enumerate()
        .map(|(i, (key, _))| (*key, i))
        .collect();
    let mut lanes: Vec<Lane> = order
        .into_iter()
        .map(|((_, tid), (name, _))| Lane {
            name: name.unwrap_or_else(|| format!("thread {tid}")),
            rows: 1,
        })
        .collect();
    // Outer spans before inner ones: by start, then the longer first.
    spans.sort_by(|a, b| {
        a.0.start
            .total_cmp(&b.0.start)
            .then(b.0.end.total_cmp(&a.0.end))
    });
    let mut open: Vec<Vec<f64>> = vec![Vec::new(); lanes.len()];
    let spans = spans
        .into_iter()
        .map(|(mut span, key)| {
            span.lane = index[&key];
            let stack = &mut open[span.lane];
            while stack.last().is_some_and(|&end| end <= span.start) {
                stack.pop();
            }
            span.row = stack.len().min(MAX_ROWS - 1);
            stack.push(span.end);
            let lane = &mut lanes[span.lane];
            lane.rows = lane.rows.max(span.row + 1);
            span
        })
        .collect();
    Ok(Layout {
        lanes,
        spans,
        length: to - from,
        frames: numbers,
    })
}

/// The picture's width in pixels.
const WIDTH: i32 = 1200;
/// The lane names' column.
const LEFT: i32 = 120;
/// Right margin.
const RIGHT: i32 = 16;
/// Above the lanes: the title.
const TOP: i32 = 40;
/// A row's height.
const ROW: i32 = 20;
/// Between lanes.
const GAP: i32 = 10;
/// Below the lanes: the time axis.
const BOTTOM: i32 = 44;
/// Labels' font size (plotters' size; the SVG's is this / 1.24).
const FONT: f64 = 13.0;
/// A label's width per character, in pixels: sans-serif at the SVG's font size, a little
/// generous so a label never overflows its box.
const CHAR: f64 = FONT / 1.24 * 0.6;

/// The legend: a swatch per kind drawn (systems in one of their shades).
pub const LEGEND: [(Kind, &str); 5] = [
    (Kind::Frame, "frame"),
    (Kind::Run, "Run"),
    (Kind::Sync, "Sync"),
    (Kind::Step, "Sync step"),
    (Kind::System, "system"),
];

/// A span's fill and its label's colour, by kind (Run and Sync as in the arena's chart).
fn colors(span: &Span) -> (RGBColor, RGBColor) {
    const SYSTEMS: [RGBColor; 4] = [
        RGBColor(46, 139, 87),
        RGBColor(34, 120, 110),
        RGBColor(70, 150, 60),
        RGBColor(30, 105, 80),
    ];
    match span.kind {
        Kind::Frame => (RGBColor(205, 205, 200), BLACK),
        Kind::Stage => (RGBColor(180, 190, 210), BLACK),
        Kind::Run => (RGBColor(52, 120, 200), WHITE),
        Kind::Sync => (RGBColor(230, 126, 34), WHITE),
        Kind::Step => (RGBColor(248, 190, 110), BLACK),
        Kind::System => {
            // The same system has the same shade in every frame.
            let h = span
                .name
                .bytes()
                .fold(0u32, |h, b| h.wrapping_mul(31).wrapping_add(u32::from(b)));
            (SYSTEMS[h as usize % SYSTEMS.len()], WHITE)
        }
        Kind::Other => (RGBColor(150, 150, 160), WHITE),
    }
}

/// `name` cut to fit `width` pixels (with an ellipsis), or `None` if not even 3
/// characters fit.
fn label(name: &str, width: f64) -> Option<String> {
    let fits = ((width - 6.0) / CHAR).floor();
    let n = name.chars().count();
    if fits >= n as f64 {
        Some(name.to_owned())
    } else if fits >= 4.0 {
        let mut s: String = name.chars().take(fits as usize - 1).collect();
        s.push('…');
        Some(s)
    } else {
        None
    }
}

/// The spacing of the time axis's marks: 1, 2 or 5 × 10ⁿ microseconds, some 8 marks over
/// `length`.
fn mark_spacing(length: f64) -> f64 {
    let raw = (length / 8.0).max(1e-3);
    let mag = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * mag)
        .find(|&s| s >= raw)
        .unwrap_or(10.0 * mag)
}

/// Draws `layout` as an SVG: the title and a [`LEGEND`], one lane per thread (its name on the left, a pale
/// band behind it), a rectangle per span (by kind: frame grey, Run blue, Sync orange,
/// Sync's steps light orange, systems green) labelled where the name fits, and a time
/// axis in milliseconds from the window's start. Cost: a rectangle and at most a label
/// per span.
///
/// # Errors
/// [`TraceError::Draw`] if plotters fails.
pub fn svg(layout: &Layout, title: &str) -> Result<String, TraceError> {
    let draw = |e: &dyn fmt::Display| TraceError::Draw(e.to_string());
    let lane_top: Vec<i32> = layout
        .lanes
        .iter()
        .scan(TOP, |y, lane| {
            let top = *y;
            *y += lane.rows as i32 * ROW + GAP;
            Some(top)
        })
        .collect();
    let lanes_bottom = TOP
        + layout
            .lanes
            .iter()
            .map(|l| l.rows as i32 * ROW + GAP)
            .sum::<i32>();
    let height = lanes_bottom + BOTTOM;
    let span_px = f64::from(WIDTH - LEFT - RIGHT);
    let scale = if layout.length > 0.0 {
        span_px / layout.length
    } else {
        0.0
    };
    let x = |us: f64| LEFT + (us * scale).round() as i32;

    let mut out = String::new();
    {
        let root =
            SVGBackend::with_string(&mut out, (WIDTH as u32, height as u32)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| draw(&e))?;
        let font = |size: f64, color: RGBColor, h: HPos, v: VPos| {
            ("sans-serif", size)
                .into_font()
                .color(&color)
                .pos(Pos::new(h, v))
        };
        root.draw(&Text::new(
            title.to_owned(),
            (LEFT, 12),
            font(17.0, BLACK, HPos::Left, VPos::Top),
        ))
        .map_err(|e| draw(&e))?;
        // The legend, right-aligned on the title's line.
        let mut right = WIDTH - RIGHT;
        for (kind, name) in LEGEND.iter().rev() {
            let (fill, _) = colors(&Span {
                name: String::new(),
                kind: *kind,
                lane: 0,
                row: 0,
                start: 0.0,
                end: 0.0,
            });
            let text_left = right - (name.chars().count() as f64 * CHAR).ceil() as i32;
            root.draw(&Text::new(
                name.to_string(),
                (text_left, 20),
                font(FONT, BLACK, HPos::Left, VPos::Center),
            ))
            .map_err(|e| draw(&e))?;
            root.draw(&Rectangle::new(
                [(text_left - 18, 14), (text_left - 4, 26)],
                fill.filled(),
            ))
            .map_err(|e| draw(&e))?;
            right = text_left - 30;
        }
        for (lane, &top) in layout.lanes.iter().zip(&lane_top) {
            let bottom = top + lane.rows as i32 * ROW;
            root.draw(&Rectangle::new(
                [(LEFT, top), (WIDTH - RIGHT, bottom)],
                RGBColor(246, 246, 242).filled(),
            ))
            .map_err(|e| draw(&e))?;
            let name = label(&lane.name, f64::from(LEFT - 10)).unwrap_or_default();
            root.draw(&Text::new(
                name,
                (LEFT - 8, top + ROW / 2),
                font(FONT, BLACK, HPos::Right, VPos::Center),
            ))
            .map_err(|e| draw(&e))?;
        }
        // Time axis: marks and faint grid lines through the lanes.
        let step = mark_spacing(layout.length);
        let ms_digits = if step >= 1000.0 {
            0
        } else if step >= 100.0 {
            1
        } else if step >= 10.0 {
            2
        } else {
            3
        };
        let mut t = 0.0;
        while t <= layout.length + step * 1e-9 {
            let px = x(t);
            root.draw(&PathElement::new(
                [(px, TOP - 4), (px, lanes_bottom)],
                RGBColor(215, 215, 210),
            ))
            .map_err(|e| draw(&e))?;
            root.draw(&Text::new(
                format!("{:.*}", ms_digits, t / 1000.0),
                (px, lanes_bottom + 4),
                font(FONT, BLACK, HPos::Center, VPos::Top),
            ))
            .map_err(|e| draw(&e))?;
            t += step;
        }
        root.draw(&Text::new(
            "milliseconds from the start of the first frame shown".to_owned(),
            (LEFT + (span_px / 2.0) as i32, lanes_bottom + 24),
            font(FONT, RGBColor(90, 90, 90), HPos::Center, VPos::Top),
        ))
        .map_err(|e| draw(&e))?;
        for span in &layout.spans {
            let top = lane_top[span.lane] + span.row as i32 * ROW;
            let (x0, x1) = (x(span.start), x(span.end).max(x(span.start) + 1));
            let (fill, ink) = colors(span);
            root.draw(&Rectangle::new(
                [(x0, top + 1), (x1, top + ROW - 1)],
                fill.filled(),
            ))
            .map_err(|e| draw(&e))?;
            if let Some(text) = label(&span.name, f64::from(x1 - x0)) {
                root.draw(&Text::new(
                    text,
                    (x0 + 3, top + ROW / 2),
                    font(FONT, ink, HPos::Left, VPos::Center),
                ))
                .map_err(|e| draw(&e))?;
            }
        }
        root.present().map_err(|e| draw(&e))?;
    }
    Ok(out)
}

/// Reads the trace file at `input` and writes a picture of its last `frames` frames
/// ([`layout`], [`svg`]) to `svg_path`, titled `title`.
///
/// # Errors
/// A [`TraceError`] if the file cannot be read or drawn (as [`layout`] says), or the SVG
/// cannot be written.
pub fn draw(input: &Path, svg_path: &Path, frames: usize, title: &str) -> Result<(), TraceError> {
    let mut bytes = Vec::new();
    std::fs::File::open(input)
        .and_then(|f| f.take(MAX_INPUT_BYTES + 1).read_to_end(&mut bytes))
        .map_err(TraceError::Io)?;
    let layout = layout(&bytes, frames)?;
    let title = match layout.frames {
        Some((a, b)) => format!("{title}: frames {a} to {b}"),
        None => title.to_owned(),
    };
    std::fs::write(svg_path, svg(&layout, &title)?).map_err(TraceError::Io)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::{ArenaConfig, build};
    use serde_json::Value;

    /// The trace of `frames` frames of a small arena on 2 threads.
    fn real_trace(frames: usize) -> Vec<u8> {
        let mut rt = build(ArenaConfig {
            agents: 400,
            seed: 5,
            workers: 2,
        });
        rt.start_trace();
        for _ in 0..frames {
            rt.frame();
        }
        let mut bytes = Vec::new();
        rt.finish_trace(&mut bytes).unwrap();
        bytes
    }

    /// The labels of an SVG plotters wrote: each `<text>`'s content.
    fn texts(svg: &str) -> Vec<&str> {
        svg.split("<text")
            .skip(1)
            .filter_map(|t| t.split_once(">\n")?.1.split_once("\n</text>"))
            .map(|(text, _)| text)
            .collect()
    }

    /// A complete event as the test reads it: name, category, start and end.
    type Event = (String, String, f64, f64);

    /// What the picture of the last `n` frames must hold, read from the file with
    /// `serde_json::Value` (not the streaming reader): the threads' names in order, and
    /// the complete events `(name, cat, start, end)` that overlap the window.
    fn expected(bytes: &[u8], n: usize) -> (Vec<String>, Vec<Event>) {
        let v: Value = serde_json::from_slice(bytes).unwrap();
        let events = v["traceEvents"].as_array().unwrap();
        let threads = events
            .iter()
            .filter(|e| e["name"] == "thread_name")
            .map(|e| e["args"]["name"].as_str().unwrap().to_owned())
            .collect();
        let complete: Vec<Event> = events
            .iter()
            .filter(|e| e["ph"] == "X")
            .map(|e| {
                let ts = e["ts"].as_f64().unwrap();
                let name = e["name"].as_str().unwrap().to_owned();
                let cat = e["cat"].as_str().unwrap().to_owned();
                (name, cat, ts, ts + e["dur"].as_f64().unwrap())
            })
            .collect();
        let mut frames: Vec<_> = complete.iter().filter(|e| e.1 == "frame").collect();
        frames.sort_by(|a, b| a.2.total_cmp(&b.2));
        let last = &frames[frames.len() - n..];
        let from = last[0].2;
        let to = last.iter().map(|f| f.3).fold(f64::MIN, f64::max);
        let window = complete
            .iter()
            .filter(|e| {
                if e.3 > e.2 {
                    e.3 > from && e.2 < to
                } else {
                    from <= e.2 && e.2 <= to
                }
            })
            .cloned()
            .collect();
        (threads, window)
    }

    #[test]
    fn a_real_trace_gets_a_lane_per_thread_and_a_rect_per_span_of_its_last_frames() {
        let bytes = real_trace(8);
        let (threads, window) = expected(&bytes, 3);
        // Built `single-threaded`, the pool has no worker: only the frame thread is named.
        let workers = build(ArenaConfig {
            agents: 1,
            seed: 5,
            workers: 2,
        })
        .workers();
        assert_eq!(threads.len(), workers, "the frame thread and each worker");
        let layout = layout(&bytes, 3).unwrap();
        let lanes: Vec<&str> = layout.lanes.iter().map(|l| l.name.as_str()).collect();
        assert_eq!(lanes, threads);
        assert_eq!(layout.spans.len(), window.len());
        let count = |kind| layout.spans.iter().filter(|s| s.kind == kind).count();
        assert_eq!(count(Kind::Frame), 3);
        assert_eq!(count(Kind::Run), 3);
        assert_eq!(count(Kind::Sync), 3);
        assert_eq!(
            count(Kind::System),
            window.iter().filter(|e| e.1 == "system").count()
        );
        assert_eq!(layout.frames, Some((6, 8)));
        // Frames on row 0 of the frame thread; Run and Sync inside them, on row 1.
        for s in &layout.spans {
            match s.kind {
                Kind::Frame => assert_eq!((s.lane, s.row), (0, 0), "{s:?}"),
                Kind::Run | Kind::Sync => assert_eq!((s.lane, s.row), (0, 1), "{s:?}"),
                Kind::Step => assert_eq!((s.lane, s.row), (0, 2), "{s:?}"),
                _ => {}
            }
            assert!(0.0 <= s.start && s.start <= s.end && s.end <= layout.length);
        }

        let svg = svg(&layout, "arena").unwrap();
        assert!(svg.starts_with("<svg"), "{}", &svg[..80]);
        let rects = svg.matches("<rect").count();
        assert_eq!(
            rects,
            1 + LEGEND.len() + layout.lanes.len() + layout.spans.len(),
            "the background, the legend's swatches, a band per lane, a rect per span"
        );
        let labels = texts(&svg);
        for lane in &threads {
            // Long names are cut, with an ellipsis.
            let named = |l: &&str| lane.starts_with(l.trim_end_matches('…')) && l.len() > 8;
            assert!(labels.iter().any(named), "{lane} in {labels:?}");
        }
        if workers > 1 {
            assert!(labels.contains(&"runsync-w0"), "{labels:?}");
        }
        for label in ["frame 6", "frame 7", "frame 8", "Run", "Sync"] {
            assert!(labels.contains(&label), "{label} in {labels:?}");
        }
    }

    #[test]
    fn the_widest_system_of_a_frame_is_labelled_with_its_name() {
        let bytes = real_trace(4);
        let (_, window) = expected(&bytes, 1);
        let systems: Vec<_> = window.iter().filter(|e| e.1 == "system").collect();
        let names: Vec<&str> = systems.iter().map(|e| e.0.as_str()).collect();
        for known in ["BuildGrid", "Steer", "Separation", "Integrate"] {
            assert!(names.contains(&known), "{known} in {names:?}");
        }
        let widest = systems
            .iter()
            .max_by(|a, b| (a.3 - a.2).total_cmp(&(b.3 - b.2)))
            .unwrap();
        let svg = svg(&layout(&bytes, 1).unwrap(), "arena").unwrap();
        assert!(
            texts(&svg).contains(&widest.0.as_str()),
            "{} (the widest, of {names:?}) is labelled",
            widest.0
        );
    }

    #[test]
    fn spans_nest_in_rows_and_a_bare_array_of_events_is_a_trace() {
        let file = br#"[
            {"ph":"X","cat":"frame","name":"frame","ts":0,"dur":100,"tid":0,"args":{"frame":4}},
            {"ph":"X","cat":"phase","name":"Run","ts":1,"dur":60,"tid":0},
            {"ph":"X","cat":"system","name":"A","ts":2,"dur":50,"tid":0},
            {"ph":"X","cat":"system","name":"B","ts":5,"dur":10,"tid":7},
            {"ph":"X","cat":"phase","name":"Sync","ts":70,"dur":20,"tid":0},
            {"ph":"M","name":"thread_name","tid":7,"args":{"name":"worker"}},
            {"ph":"M","name":"thread_sort_index","tid":7,"args":{"sort_index":1}},
            {"ph":"M","name":"thread_sort_index","tid":0,"args":{"sort_index":0}}
        ]"#;
        let l = layout(file, 3).unwrap();
        let lanes: Vec<_> = l.lanes.iter().map(|l| (l.name.as_str(), l.rows)).collect();
        assert_eq!(lanes, [("thread 0", 3), ("worker", 1)]);
        let rows: Vec<_> = l
            .spans
            .iter()
            .map(|s| (s.name.as_str(), s.lane, s.row))
            .collect();
        assert_eq!(
            rows,
            [
                ("frame 4", 0, 0),
                ("Run", 0, 1),
                ("A", 0, 2),
                ("B", 1, 0),
                ("Sync", 0, 1)
            ]
        );
        assert_eq!((l.length, l.frames), (100.0, Some((4, 4))));
    }

    #[test]
    fn spans_nested_past_the_last_row_share_it() {
        let mut file = String::from(r#"{"traceEvents":["#);
        for i in 0..50 {
            let cat = if i == 0 { "frame" } else { "system" };
            file.push_str(&format!(
                r#"{{"ph":"X","cat":"{cat}","name":"s{i}","ts":{i},"dur":{}}},"#,
                1000 - 2 * i
            ));
        }
        file.push_str(r#"{"ph":"i","name":"instant","ts":3}]}"#);
        let l = layout(file.as_bytes(), 1).unwrap();
        assert_eq!(l.lanes[0].rows, MAX_ROWS);
        assert_eq!(l.spans.len(), 50);
        assert_eq!(l.spans[49].row, MAX_ROWS - 1);
    }

    #[test]
    fn a_malformed_or_hostile_file_is_an_error_that_says_what_is_wrong() {
        let real = real_trace(2);
        // Nested 100,000 deep where the reader skips a value and where it reads one: read
        // without recursing (no stack overflow), and still no frame.
        let deep = format!(
            r#"{{"traceEvents":[{{"ph":"X","args":{{"name":{open}{close},"x":{open}{close}}}}}]}}"#,
            open = "[".repeat(100_000),
            close = "]".repeat(100_000),
        );
        let threads: String = (0..MAX_LANES + 1)
            .map(|t| {
                format!(r#"{{"ph":"M","name":"thread_name","tid":{t},"args":{{"name":"t"}}}},"#)
            })
            .collect();
        let threads =
            format!(r#"{{"traceEvents":[{threads}{{"ph":"X","cat":"frame","ts":0,"dur":1}}]}}"#);
        let cases: Vec<(&str, Vec<u8>, &str)> = vec![
            ("empty", Vec::new(), "EOF"),
            ("not JSON", b"trace".to_vec(), "line 1 column"),
            ("cut short", real[..real.len() / 2].to_vec(), "EOF"),
            ("trailing bytes", [&real[..], b"]"].concat(), "trailing"),
            (
                "no traceEvents",
                br#"{"events":[]}"#.to_vec(),
                "no \"traceEvents\"",
            ),
            (
                "traceEvents not an array",
                br#"{"traceEvents":{}}"#.to_vec(),
                "array",
            ),
            ("a number", b"17".to_vec(), "traceEvents"),
            (
                "ts a string",
                br#"[{"ph":"X","cat":"frame","ts":"0","dur":1}]"#.to_vec(),
                "invalid type",
            ),
            (
                "negative ts",
                br#"[{"ph":"X","cat":"frame","ts":-5,"dur":1}]"#.to_vec(),
                "not negative",
            ),
            (
                "ts out of range",
                br#"[{"ph":"X","cat":"frame","ts":1e999,"dur":1}]"#.to_vec(),
                "out of range",
            ),
            (
                "end not finite",
                br#"[{"ph":"X","cat":"frame","ts":1e308,"dur":1e308}]"#.to_vec(),
                "finite",
            ),
            (
                "tid negative",
                br#"[{"ph":"X","cat":"frame","ts":0,"dur":1,"tid":-1}]"#.to_vec(),
                "invalid value",
            ),
            (
                "too many threads",
                threads.into_bytes(),
                "more than 256 threads",
            ),
        ];
        for (what, bytes, says) in cases {
            match layout(&bytes, 3) {
                Err(e @ TraceError::Invalid(_)) => {
                    let message = e.to_string();
                    assert!(message.contains(says), "{what}: {message}");
                    assert!(
                        message.starts_with("not a Chrome trace-event file"),
                        "{what}"
                    );
                }
                other => panic!("{what}: {other:?}"),
            }
        }
        for no_frames in [
            &br#"{"traceEvents":[]}"#[..],
            br#"[{"ph":"X","cat":"system"}]"#,
            deep.as_bytes(),
        ] {
            assert!(matches!(layout(no_frames, 3), Err(TraceError::NoFrames)));
        }
    }
}
