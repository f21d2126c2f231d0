//! Saves and replays of the arena whose `SpatialGrid` resource was edited on purpose (the
//! value rewritten, every length and integrity check made again): a negated cell side
//! (which makes a lattice grid) over items far apart, a cell side that is NaN, infinite,
//! zero or no power of two, positions that are not finite, a lattice whose cells would
//! take 17 GB. Each is refused with a `LoadError` naming `SpatialGrid` and what is wrong
//! (it used to panic in `Grid`, or abort allocating), by `Runtime::load` and by
//! `arena --replay` (the start save, and a keyframe a divergence loads). A lattice grid
//! within the bound a loaded one is held to loads, and plays on as the saved arena did.

#[path = "../../tests/sections/mod.rs"]
mod sections;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use runsync::{LoadError, Runtime};
use runsync_systems::SpatialGrid;
use runsync_tools::scenario::{self, ArenaConfig, Rules};
use sections::{join, reseal, sections, split};

/// One item of a saved grid, as its bytes hold it: an entity's bits, a position, a
/// radius, a tag.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Item {
    entity: u64,
    pos: [f32; 2],
    radius: f32,
    tag: u32,
}

/// A saved `SpatialGrid` as its bytes hold it (postcard): the frame that built it, the
/// cell side (negated for a lattice grid), the items.
#[derive(Clone, Debug, PartialEq)]
struct Saved {
    frame: u64,
    cell: f32,
    items: Vec<Item>,
}

/// A postcard varint (LEB128).
fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    loop {
        let b = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(b);
            return;
        }
        out.push(b | 0x80);
    }
}

/// Reads a postcard varint at `*at`.
fn varint(bytes: &[u8], at: &mut usize) -> u64 {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let b = bytes[*at];
        *at += 1;
        v |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return v;
        }
    }
    panic!("a varint longer than 10 bytes")
}

fn f32_at(bytes: &[u8], at: &mut usize) -> f32 {
    let v = f32::from_le_bytes(bytes[*at..*at + 4].try_into().unwrap());
    *at += 4;
    v
}

/// A saved grid's bytes, read (`None`: no grid was built).
fn parse(bytes: &[u8]) -> Option<Saved> {
    let mut at = 0;
    let some = bytes[0] == 1;
    at += 1;
    if !some {
        assert_eq!(bytes, [0]);
        return None;
    }
    let frame = varint(bytes, &mut at);
    let cell = f32_at(bytes, &mut at);
    let n = varint(bytes, &mut at);
    let items = (0..n)
        .map(|_| Item {
            entity: varint(bytes, &mut at),
            pos: [f32_at(bytes, &mut at), f32_at(bytes, &mut at)],
            radius: f32_at(bytes, &mut at),
            tag: varint(bytes, &mut at) as u32,
        })
        .collect();
    assert_eq!(at, bytes.len(), "the whole value read");
    Some(Saved { frame, cell, items })
}

/// [`parse`]'s inverse.
fn encode(grid: &Option<Saved>) -> Vec<u8> {
    let Some(g) = grid else {
        return vec![0];
    };
    let mut out = vec![1];
    put_varint(&mut out, g.frame);
    out.extend_from_slice(&g.cell.to_le_bytes());
    put_varint(&mut out, g.items.len() as u64);
    for it in &g.items {
        put_varint(&mut out, it.entity);
        out.extend_from_slice(&it.pos[0].to_le_bytes());
        out.extend_from_slice(&it.pos[1].to_le_bytes());
        out.extend_from_slice(&it.radius.to_le_bytes());
        put_varint(&mut out, u64::from(it.tag));
    }
    out
}

fn u64_at(bytes: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap())
}

/// `save` (a save file) with its `SpatialGrid` value passed through `edit`, every length
/// and integrity check made again (a file written on purpose).
fn edit_grid(save: &[u8], edit: impl FnOnce(&mut Option<Saved>)) -> Vec<u8> {
    let mut parts = split(save);
    let name = std::any::type_name::<SpatialGrid>().as_bytes();
    let holding: Vec<usize> = (0..parts.len())
        .filter(|&i| parts[i].windows(name.len()).any(|w| w == name))
        .collect();
    assert_eq!(
        holding.len(),
        1,
        "one section names the grid: the resources"
    );
    let resources = &mut parts[holding[0]];
    // After the name: a presence byte, the value's length, the value.
    let at = resources
        .windows(name.len())
        .position(|w| w == name)
        .unwrap()
        + name.len();
    assert_eq!(resources[at], 1, "the grid resource is present");
    let len = u64_at(resources, at + 1) as usize;
    let mut grid = parse(&resources[at + 9..at + 9 + len]);
    edit(&mut grid);
    let new = encode(&grid);
    resources[at + 1..at + 9].copy_from_slice(&(new.len() as u64).to_le_bytes());
    resources.splice(at + 9..at + 9 + len, new);
    join(&parts)
}

/// The saved grid of `save`, as [`edit_grid`] sees it.
fn grid_of(save: &[u8]) -> Option<Saved> {
    let mut seen = None;
    edit_grid(save, |g| seen = g.clone());
    seen
}

const AGENTS: usize = 400;

fn config() -> ArenaConfig {
    ArenaConfig {
        agents: AGENTS,
        seed: 7,
        workers: 1,
    }
}

/// The arena playing by `rules`, on one worker.
fn arena_runtime(rules: Rules) -> Runtime {
    let config = config();
    match rules {
        Rules::Whole => scenario::build(config),
        Rules::Local => {
            let mut rt = Runtime::builder()
                .workers(1)
                .fixed_hz(60)
                .build(scenario::world(config));
            scenario::add_systems(&mut rt, config, rules);
            rt
        }
    }
}

/// A save of the arena (by `rules`) after 3 frames: the grid the next frame reads holds
/// the first wave.
fn arena_save(rules: Rules) -> Vec<u8> {
    let mut rt = arena_runtime(rules);
    for _ in 0..3 {
        rt.frame();
    }
    let mut file = Vec::new();
    rt.save(&mut file).unwrap();
    file
}

fn whole_save() -> &'static [u8] {
    static FILE: OnceLock<Vec<u8>> = OnceLock::new();
    FILE.get_or_init(|| arena_save(Rules::Whole))
}

/// Loads `file` into a fresh arena runtime: the error, which must name `SpatialGrid`
/// (a value of it that does not decode), with what serde said.
fn load_error(file: &[u8]) -> String {
    let mut rt = arena_runtime(Rules::Whole);
    let before = rt.world().checksum();
    let err = rt
        .load(&mut &file[..])
        .expect_err("an edited grid must not load");
    assert_eq!(
        rt.world().checksum(),
        before,
        "a failed load changes nothing"
    );
    match &err {
        LoadError::Decode {
            type_name, message, ..
        } => {
            assert_eq!(*type_name, std::any::type_name::<SpatialGrid>(), "{err}");
            assert!(message.contains("SpatialGrid: "), "{err}");
        }
        other => panic!("not a decode error of the grid: {other}"),
    }
    err.to_string()
}

/// The arena's grid with every item's position kept but two: the first at `a`, the
/// second at `b`, and the cell side `cell`.
fn with(cell: f32, a: [f32; 2], b: [f32; 2]) -> impl FnOnce(&mut Option<Saved>) {
    move |g| {
        let g = g.as_mut().expect("the arena's grid was built");
        assert!(g.items.len() >= 2, "the first wave is in the grid");
        g.cell = cell;
        g.items[0].pos = a;
        g.items[1].pos = b;
    }
}

#[test]
fn the_editor_reads_and_writes_a_saved_grid_as_it_is() {
    let file = whole_save();
    let grid = grid_of(file).expect("built");
    assert_eq!(
        grid.cell, 2.0,
        "the arena's own rules: a box grid of side 2"
    );
    assert!(grid.items.len() >= AGENTS / 2, "{} items", grid.items.len());
    assert_eq!(edit_grid(file, |_| {}), file, "no edit, the same bytes");
    // An edit that keeps the grid sound loads: the editor itself breaks nothing.
    let moved = edit_grid(file, with(2.0, [1.0, 1.0], [30.0, 2.5]));
    arena_runtime(Rules::Whole).load(&mut &moved[..]).unwrap();
}

/// The attack first found: the cell side negated (a lattice grid, in the format)
/// over two items far apart used to panic in `Grid` ("a lattice Grid over .. would need
/// .. cells"), or overflow computing the cells.
#[test]
fn a_negated_cell_side_over_items_far_apart_is_refused() {
    let file = whole_save();
    for (cell, a, b) in [
        (-2.0, [-1e6, -1e6], [1e6, 1e6]),
        (-2.0, [-3e38, 0.0], [3e38, 1.0]),
        (-1.0, [0.0, 0.0], [1e30, 1e30]),
        // A cell so small that positions scaled by it leave the `i64` range.
        (
            -(2f32.powi(-126)),
            [-f32::MAX, -f32::MAX],
            [f32::MAX, f32::MAX],
        ),
        (-(2f32.powi(-126)), [0.0, 0.0], [40.0, 40.0]),
    ] {
        let err = load_error(&edit_grid(file, with(cell, a, b)));
        assert!(
            err.contains("a lattice grid of side") && err.contains("cells"),
            "{cell} {a:?} {b:?}: {err}"
        );
    }
}

/// A cell side that is NaN, infinite, zero, negative zero, or (negated, for a lattice) no
/// positive power of two is refused, saying so.
#[test]
fn a_cell_side_that_is_nan_infinite_zero_or_no_power_of_two_is_refused() {
    let file = whole_save();
    let subnormal = f32::from_bits(1);
    for cell in [
        f32::NAN,
        -f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        0.0,
        -0.0,
        -3.0,
        -0.3,
        -subnormal,
    ] {
        let edited = edit_grid(file, |g| g.as_mut().unwrap().cell = cell);
        let err = load_error(&edited);
        assert!(
            err.contains(&format!("SpatialGrid: cell side {cell} ")),
            "{cell}: {err}"
        );
        let want = if cell < 0.0 {
            "is not a positive power of two"
        } else {
            "is not a positive finite number"
        };
        assert!(err.contains(want), "{cell}: {err}");
    }
    // The sound sides load: any positive finite one for a box grid (subnormal included,
    // as `BuildGrid::new` takes it), a power of two for a lattice.
    for cell in [subnormal, 0.3, 3.0, 1e30, -0.25, -1.0, -(2f32.powi(-126))] {
        let edited = edit_grid(file, |g| {
            let g = g.as_mut().unwrap();
            g.cell = cell;
            if cell < 0.0 {
                // Within the cells a loaded lattice may have.
                g.items.truncate(1);
            }
        });
        arena_runtime(Rules::Whole)
            .load(&mut &edited[..])
            .unwrap_or_else(|e| panic!("{cell}: {e}"));
    }
}

/// A lattice whose cells would take about 17 GB (65,434 x 65,434 cells of side 2^-10
/// over 64 units, a `u32` each): the arena used to allocate them (or abort trying).
#[test]
fn a_lattice_of_17_gb_of_cells_is_refused_without_allocating_them() {
    let file = whole_save();
    let err = load_error(&edit_grid(
        file,
        with(-(2f32.powi(-10)), [-1.0, -1.0], [62.9, 62.9]),
    ));
    assert!(
        err.contains("65434 x 65434 cells")
            && err.contains("a loaded one may have at most 1048576"),
        "{err}"
    );
    // The arena's own positions are enough: its field at side 2^-16.
    let err = load_error(&edit_grid(file, |g| {
        g.as_mut().unwrap().cell = -(2f32.powi(-16));
    }));
    assert!(err.contains("a lattice grid of side"), "{err}");
}

/// Positions that are not finite are refused: a rebuild skips them, so a grid saved by a
/// rebuild never holds one.
#[test]
fn item_positions_that_are_not_finite_are_refused() {
    let file = whole_save();
    for pos in [
        [f32::NAN, 1.0],
        [1.0, f32::INFINITY],
        [f32::NEG_INFINITY, f32::NAN],
    ] {
        for cell in [2.0, -2.0] {
            let err = load_error(&edit_grid(file, |g| {
                let g = g.as_mut().unwrap();
                g.cell = cell;
                g.items[3].pos = pos;
            }));
            assert!(
                err.contains("SpatialGrid: item 3 of ")
                    && err.contains("has a position that is not finite"),
                "{pos:?}: {err}"
            );
        }
    }
}

/// The arena by local rules saves a lattice grid (its side negated): it loads, within the
/// bound, and the loaded arena plays on as the saved one does.
#[test]
fn a_saved_lattice_grid_loads_and_plays_on() {
    let file = arena_save(Rules::Local);
    let grid = grid_of(&file).expect("built");
    assert_eq!(grid.cell, -2.0, "a lattice grid of side 2, negated");
    let mut saved = arena_runtime(Rules::Local);
    saved.load(&mut &file[..]).unwrap();
    let mut loaded = arena_runtime(Rules::Local);
    loaded.load(&mut &file[..]).unwrap();
    for _ in 0..5 {
        saved.frame();
        loaded.frame();
        assert_eq!(loaded.world().checksum(), saved.world().checksum());
    }
    // Items spread as far as the bound allows (2^20 cells here: 1024 x 1024) load too.
    let edited = edit_grid(&file, with(-2.0, [-1000.0, -1000.0], [1047.0, 1047.0]));
    arena_runtime(Rules::Local).load(&mut &edited[..]).unwrap();
    let over = edit_grid(&file, with(-2.0, [-1000.0, -1000.0], [1048.0, 1047.0]));
    let err = arena_runtime(Rules::Local)
        .load(&mut &over[..])
        .unwrap_err()
        .to_string();
    assert!(err.contains("1025 x 1024 cells"), "{err}");
}

// `arena --replay FILE` with the grid of its start, or of a keyframe, edited.

/// Runs the arena; killed, and the test failed, if it runs past 120 s.
fn arena(args: &[&str]) -> Output {
    let deadline = Duration::from_secs(120);
    let mut child = Command::new(env!("CARGO_BIN_EXE_arena"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the arena binary runs");
    let start = Instant::now();
    while child.try_wait().expect("waits").is_none() {
        if start.elapsed() > deadline {
            child.kill().expect("kills");
            let out = child.wait_with_output().expect("collects");
            panic!("arena {args:?} ran past {deadline:?}:\n{}", text(&out));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().expect("collects")
}

fn text(out: &Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn path(name: &str) -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("{name}-{}", std::process::id()))
}

/// A recording of 400 agents, 10 frames, a keyframe every 5 (after frames 5 and 10).
fn recording() -> &'static [u8] {
    static FILE: OnceLock<Vec<u8>> = OnceLock::new();
    FILE.get_or_init(|| {
        let file = path("grid.replay");
        let f = file.to_str().unwrap();
        let out = arena(&[
            "--entities",
            "400",
            "--frames",
            "10",
            "--workers",
            "1",
            "--record",
            f,
            "--keyframes",
            "5",
        ]);
        assert!(out.status.success(), "{}", text(&out));
        let bytes = std::fs::read(&file).unwrap();
        std::fs::remove_file(file).unwrap();
        bytes
    })
}

/// Plays `bytes` as a replay file named `name`.
fn play(name: &str, bytes: &[u8]) -> Output {
    let file = path(name);
    std::fs::write(&file, bytes).unwrap();
    let out = arena(&["--replay", file.to_str().unwrap(), "--workers", "1"]);
    std::fs::remove_file(file).unwrap();
    out
}

/// The recording with its start save's grid passed through `edit`.
fn edit_start(file: &[u8], edit: impl FnOnce(&mut Option<Saved>)) -> Vec<u8> {
    let mut parts = split(file);
    // The replay's header: magic, version, the input type's name, the start save.
    let name_end = 12 + 8 + u64_at(&parts[0], 12) as usize;
    let start = edit_grid(&parts[0][name_end + 8..], edit);
    parts[0].truncate(name_end);
    parts[0].extend_from_slice(&(start.len() as u64).to_le_bytes());
    parts[0].extend_from_slice(&start);
    join(&parts)
}

/// The recording with keyframe `k`'s (from 1) grid passed through `edit`.
fn edit_keyframe(file: &[u8], k: usize, edit: impl FnOnce(&mut Option<Saved>)) -> Vec<u8> {
    let mut parts = split(file);
    // A keyframe: the frames it follows, the save's length, the save.
    let section = &mut parts[1 + k];
    let save = edit_grid(&section[16..], edit);
    section.truncate(8);
    section.extend_from_slice(&(save.len() as u64).to_le_bytes());
    section.extend_from_slice(&save);
    join(&parts)
}

fn refused(out: &Output) -> bool {
    let stderr = String::from_utf8_lossy(&out.stderr);
    out.status.code() == Some(2)
        && stderr.contains("cannot replay")
        && stderr.contains("SpatialGrid")
        && stderr.contains("a lattice grid of side")
}

/// The start save's grid: before any frame no grid was built, so the attacker writes one
/// (the first attack found: a lattice over two items far apart).
#[test]
fn arena_replay_refuses_a_start_whose_grid_was_edited() {
    let file = recording();
    let mut before = None;
    edit_start(file, |g| before = Some(g.clone()));
    assert_eq!(before, Some(None), "no grid built yet");
    let item = |pos| Item {
        entity: 1 << 32,
        pos,
        radius: 0.5,
        tag: SpatialGrid::BODY,
    };
    let edited = edit_start(file, |g| {
        *g = Some(Saved {
            frame: 0,
            cell: -2.0,
            items: vec![item([-1e6, -1e6]), item([1e6, 1e6])],
        });
    });
    let out = play("grid-start.replay", &edited);
    assert!(refused(&out), "{}", text(&out));
    assert!(!String::from_utf8_lossy(&out.stdout).contains("replaying"));
}

/// A keyframe's grid: loaded when a divergence before it is looked into (here a recorded
/// checksum altered on purpose, frame 7).
#[test]
fn arena_replay_refuses_a_keyframe_whose_grid_was_edited() {
    let file = recording();
    let s = sections(file).unwrap();
    assert_eq!(s.len(), 4, "header and start, frames, 2 keyframes");
    let mut edited = edit_keyframe(file, 2, with(-(2f32.powi(-10)), [-1.0, -1.0], [62.9, 62.9]));
    // Frame index 6 (frame 7)'s checksum: the frames section, its count, then per frame
    // a presence byte, a `u64` length (0), the checksum.
    let at = sections(&edited).unwrap()[1].start + 8 + 6 * 17 + 9;
    edited[at] ^= 1;
    reseal(&mut edited);
    let out = play("grid-keyframe.replay", &edited);
    assert!(refused(&out), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("65434 x 65434 cells"),
        "{}",
        text(&out)
    );
}
