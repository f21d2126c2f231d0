//! The stage rule: with any number of stages, every system sees every message exactly
//! once and every change (`Changed`, `Added`) exactly once, the first time it runs after
//! the Sync that delivered or made it — whichever stage sent or wrote it and whichever
//! stage reads it. A sender/writer in each stage, a reader in every
//! stage, at 1, 2 and 8 workers (and under `--features single-threaded`): each reader's
//! log is compared with the one the rule predicts, entry for entry, and the worlds'
//! checksums bit for bit. Also: an empty stage changes nothing a reader sees, a restored
//! snapshot or a loaded runtime save continues identically, a replay recorded mid-run
//! plays back identically, and what a load that cannot put the stages back does.

use std::sync::{Arc, Mutex};

use runsync::prelude::*;
use serde::{Deserialize, Serialize};

const WORKERS: [usize; 3] = [1, 2, 8];
/// Frames each game runs; senders stop two frames before, so every reader has seen all.
const FRAMES: u64 = 24;
/// Entities spawned before the first frame (the first `TARGETS` get addressed messages).
const N: usize = 24;
const TARGETS: usize = 3;

/// Written by the writer on frames `f % 3 == 0` (the frame number) but 0, so no entity
/// is written twice within a few frames: each write is one mark.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
struct Val(i64);
impl Component for Val {
    type Output = i64;
}
impl Checksum for Val {
    fn checksum(&self, h: &mut Checksummer) {
        self.0.checksum(h);
    }
}

/// Spawned by the writer on frames `f % 3 == 1`, with the frame number; despawned three
/// frames later (rows move under the marks).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
struct Born(u64);
impl Component for Born {
    type Output = Born;
}
impl Checksum for Born {
    fn checksum(&self, h: &mut Checksummer) {
        self.0.checksum(h);
    }
}

/// Inserted by the writer on frames `f % 3 == 2`, once per entity (the entity moves to
/// another table: its `Val` marks go with it).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
struct Extra(u64);
impl Component for Extra {
    type Output = Extra;
}
impl Checksum for Extra {
    fn checksum(&self, h: &mut Checksummer) {
        self.0.checksum(h);
    }
}

/// Each reader's running digest of what it saw, in the world (so checksums cover it).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
struct Tally(u64);
impl Component for Tally {
    type Output = u64;
}
impl Checksum for Tally {
    fn checksum(&self, h: &mut Checksummer) {
        self.0.checksum(h);
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
struct Msg(u64);
impl Checksum for Msg {
    fn checksum(&self, h: &mut Checksummer) {
        self.0.checksum(h);
    }
}

/// What a reader saw: kind, reader's stage, the frame it saw it in, what it was.
type Entry = (Kind, usize, u64, u64);

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    /// A broadcast message: its value.
    Message,
    /// An addressed message: value × 16 + target.
    Addressed,
    /// A changed `Val`: value << 32 | entity index.
    Changed,
    /// An added `Born`: its frame.
    AddedBorn,
    /// An added `Extra`: its value.
    AddedExtra,
}

type Log = Arc<Mutex<Vec<Entry>>>;

/// Which stages a game has: names, where the writer is, and whether to put an empty
/// stage before each named one.
struct Setup {
    stages: usize,
    writer: usize,
    empty_stages: bool,
}

struct Game {
    rt: Runtime,
    log: Log,
    writer: SystemId,
    /// By stage.
    readers: Vec<SystemId>,
}

fn world() -> (World, Vec<Entity>, Vec<Entity>) {
    let mut w = World::new();
    w.register::<Val>(|v: &mut Val, d: &[i64]| v.0 = *d.last().unwrap());
    w.register::<Born>(merge::last);
    w.register::<Extra>(merge::last);
    w.register::<Tally>(|t: &mut Tally, d: &[u64]| {
        for &x in d {
            t.0 = t.0.wrapping_mul(0x100_0000_01b3).wrapping_add(x);
        }
    });
    w.register_message::<Msg>();
    w.snapshotting::<Val>()
        .snapshotting::<Born>()
        .snapshotting::<Extra>()
        .snapshotting::<Tally>()
        .snapshotting_message::<Msg>();
    w.saving::<Val>()
        .saving::<Born>()
        .saving::<Extra>()
        .saving::<Tally>()
        .saving_message::<Msg>();
    w.checksumming::<Val>()
        .checksumming::<Born>()
        .checksumming::<Extra>()
        .checksumming::<Tally>()
        .checksumming_message::<Msg>();
    let es: Vec<Entity> = (0..N).map(|_| w.spawn((Val(1000),))).collect();
    let tallies = (0..8).map(|_| w.spawn((Tally(0),))).collect();
    (w, es, tallies)
}

fn frame_of(w: &World) -> u64 {
    w.resource::<Time>().frame
}

/// The writer (sender) of stage `setup.writer`, and one reader in every stage.
fn game(workers: usize, setup: &Setup) -> Game {
    let (w, es, tallies) = world();
    let mut names = Vec::new();
    for k in 0..setup.stages {
        if setup.empty_stages {
            names.push(format!("empty {k}"));
        }
        names.push(format!("stage {k}"));
    }
    let mut rt = Runtime::builder().workers(workers).stages(names).build(w);
    let stage = |rt: &Runtime, k: usize| rt.stage_id(&format!("stage {k}")).unwrap();
    let log: Log = Arc::default();
    let writer = stage(&rt, setup.writer);
    let targets: Vec<Entity> = es[..TARGETS].to_vec();
    let all = es.clone();
    let writer = rt.add_system_named_to(writer, "writer", move |w: &World, out: &mut Output| {
        let f = frame_of(w);
        // Nothing in frame 0, whose readers see the setup's marks (a write in frame 0
        // would be the same mark, for readers after the writer).
        if f == 0 || f + 2 >= FRAMES {
            return;
        }
        match f % 3 {
            0 => {
                out.send(Msg(f * 100));
                out.send(Msg(f * 100 + 1));
                out.send_to(targets[(f / 3) as usize % TARGETS], Msg(f * 100 + 50));
                for (j, &e) in all.iter().enumerate() {
                    if (j as u64 + f / 3) % 2 == 0 {
                        out.write::<Val>(e, f as i64);
                    }
                }
            }
            1 => {
                for (e, _) in w.query::<(&Born,)>() {
                    out.despawn(e);
                }
                out.spawn((Born(f),));
                out.spawn((Born(f + 1000),));
            }
            _ => out.insert(all[(f / 3) as usize % N], Extra(f)),
        }
    });
    let mut readers = Vec::new();
    for (r, &tally) in tallies.iter().enumerate().take(setup.stages) {
        let log = log.clone();
        let targets: Vec<Entity> = es[..TARGETS].to_vec();
        let id = rt.add_system_named_to(
            stage(&rt, r),
            format!("reader {r}"),
            move |w: &World, out: &mut Output| {
                let f = frame_of(w);
                let mut seen = Vec::new();
                for m in w.messages::<Msg>() {
                    seen.push((Kind::Message, r, f, m.0));
                }
                for (t, &e) in targets.iter().enumerate() {
                    for m in w.messages_for::<Msg>(e) {
                        seen.push((Kind::Addressed, r, f, m.0 * 16 + t as u64));
                    }
                }
                for (e, (v,)) in w.query_filtered::<(&Val,), Changed<Val>>() {
                    seen.push((
                        Kind::Changed,
                        r,
                        f,
                        (v.0 as u64) << 32 | u64::from(e.index()),
                    ));
                }
                for (_, (b, ())) in w.query::<(&Born, Added<Born>)>() {
                    seen.push((Kind::AddedBorn, r, f, b.0));
                }
                for (_, (x, ())) in w.query::<(&Extra, Added<Extra>)>() {
                    seen.push((Kind::AddedExtra, r, f, x.0));
                }
                for &(kind, _, _, what) in &seen {
                    out.write::<Tally>(tally, (kind as u64) << 56 ^ what);
                }
                log.lock().unwrap().extend(seen);
            },
        );
        readers.push(id);
    }
    Game {
        rt,
        log,
        writer,
        readers,
    }
}

/// What the rule says each reader sees, sorted: whatever the writer's Sync of frame `f`
/// did, a reader in a later stage sees in frame `f`, a reader in its stage or an earlier
/// one in frame `f + 1`; what was made before the first frame, every reader sees in
/// frame 0.
fn predicted(setup: &Setup, es: &[Entity]) -> Vec<Entry> {
    let mut want = Vec::new();
    for r in 0..setup.stages {
        let when = |f: u64| if r > setup.writer { f } else { f + 1 };
        for e in es {
            want.push((Kind::Changed, r, 0, 1000u64 << 32 | u64::from(e.index())));
        }
        for f in 1..FRAMES - 2 {
            match f % 3 {
                0 => {
                    want.push((Kind::Message, r, when(f), f * 100));
                    want.push((Kind::Message, r, when(f), f * 100 + 1));
                    let t = (f / 3) as usize % TARGETS;
                    want.push((Kind::Addressed, r, when(f), (f * 100 + 50) * 16 + t as u64));
                    for (j, e) in es.iter().enumerate() {
                        if (j as u64 + f / 3) % 2 == 0 {
                            want.push((Kind::Changed, r, when(f), f << 32 | u64::from(e.index())));
                        }
                    }
                }
                1 => {
                    want.push((Kind::AddedBorn, r, when(f), f));
                    want.push((Kind::AddedBorn, r, when(f), f + 1000));
                }
                _ => want.push((Kind::AddedExtra, r, when(f), f)),
            }
        }
    }
    want.sort();
    want
}

/// Runs the game; returns its log (in the order the readers saw it, per reader) and
/// the final checksum.
fn play(workers: usize, setup: &Setup) -> (Vec<Entry>, u64) {
    let mut g = game(workers, setup);
    for _ in 0..FRAMES {
        g.rt.frame();
    }
    let mut log = std::mem::take(&mut *g.log.lock().unwrap());
    // Readers of one stage run in parallel with the writer only: a stable sort by
    // (reader, frame) keeps each reader's own order.
    log.sort_by_key(|&(_, r, f, _)| (r, f));
    (log, g.rt.world().checksum())
}

fn setup_entities() -> Vec<Entity> {
    world().1
}

fn check(setup: &Setup) {
    let want = predicted(setup, &setup_entities());
    let mut first: Option<(Vec<Entry>, u64)> = None;
    for workers in WORKERS {
        let (log, sum) = play(workers, setup);
        let mut sorted = log.clone();
        sorted.sort();
        let what = format!(
            "{} stages, writer in {}, {workers} workers",
            setup.stages, setup.writer
        );
        if sorted != want {
            let extra: Vec<_> = sorted
                .iter()
                .filter(|e| !want.contains(e))
                .take(5)
                .collect();
            let missing: Vec<_> = want
                .iter()
                .filter(|e| !sorted.contains(e))
                .take(5)
                .collect();
            panic!(
                "{what}: {} entries seen, {} predicted; seen but not predicted (first 5): \
                 {extra:?}; predicted, not seen: {missing:?}",
                sorted.len(),
                want.len()
            );
        }
        match &first {
            None => first = Some((log, sum)),
            Some((l, s)) => {
                assert_eq!(&log, l, "{what}: the readers' logs, in order");
                assert_eq!(sum, *s, "{what}: the checksum");
            }
        }
    }
}

#[test]
fn one_stage_sees_everything_the_next_frame() {
    check(&Setup {
        stages: 1,
        writer: 0,
        empty_stages: false,
    });
}

#[test]
fn with_two_stages_every_reader_sees_every_write_and_message_once() {
    for writer in 0..2 {
        check(&Setup {
            stages: 2,
            writer,
            empty_stages: false,
        });
    }
}

#[test]
fn with_three_stages_every_reader_sees_every_write_and_message_once() {
    for writer in 0..3 {
        check(&Setup {
            stages: 3,
            writer,
            empty_stages: false,
        });
    }
}

/// Empty stages under the rule: an empty stage before each stage changes nothing a
/// reader sees, nor the checksum.
#[test]
fn empty_stages_change_nothing_readers_see() {
    for writer in 0..2 {
        let plain = Setup {
            stages: 2,
            writer,
            empty_stages: false,
        };
        let padded = Setup {
            empty_stages: true,
            ..plain
        };
        assert_eq!(
            play(2, &plain),
            play(2, &padded),
            "writer in stage {writer}"
        );
    }
}

/// A stage whose systems are all disabled for a frame takes its turn all the same: what
/// its last Sync did is not seen twice by the others. (A disabled system misses what is
/// seen while it is disabled, as it misses a message.)
#[test]
fn a_stage_disabled_for_a_frame_forgets_its_marks_at_its_turn() {
    let setup = Setup {
        stages: 2,
        writer: 1,
        empty_stages: false,
    };
    let mut g = game(1, &setup);
    g.rt.frame(); // frame 0: the writer does nothing in frame 0
    g.rt.frame(); // frame 1
    g.rt.frame(); // frame 2
    g.rt.frame(); // frame 3: the writer (stage 1) writes `Val` and sends
    g.rt.set_enabled(g.writer, false);
    g.rt.set_enabled(g.readers[1], false);
    g.rt.frame(); // frame 4: stage 1 has no enabled system, but forgets frame 3's work
    g.rt.set_enabled(g.readers[1], true);
    g.rt.frame(); // frame 5
    g.rt.frame(); // frame 6
    let log = g.log.lock().unwrap().clone();
    let at =
        |r: usize, f: u64, k: Kind| log.iter().filter(|e| (e.0, e.1, e.2) == (k, r, f)).count();
    // Frame 3's work: stage 0's reader sees it in frame 4.
    assert_eq!(at(0, 4, Kind::Message), 2);
    assert_eq!(at(0, 4, Kind::Addressed), 1);
    assert_eq!(at(0, 4, Kind::Changed), N / 2);
    // ... and no one sees it again.
    for f in 4..7 {
        for r in 0..2 {
            if (r, f) != (0, 4) {
                assert_eq!(at(r, f, Kind::Message), 0, "reader {r}, frame {f}");
                assert_eq!(at(r, f, Kind::Addressed), 0, "reader {r}, frame {f}");
                assert_eq!(at(r, f, Kind::Changed), 0, "reader {r}, frame {f}");
            }
        }
    }
    assert!(g.rt.world().messages::<Msg>().is_empty());
    let changed =
        g.rt.world()
            .query_filtered::<(&Val,), Changed<Val>>()
            .count();
    assert_eq!(changed, 0);
}

/// A snapshot taken between frames of a two-stage game, restored: the frames after it
/// see and do exactly what they did the first time (the marks' layers and the messages'
/// stages are part of the snapshot).
#[test]
fn a_restored_two_stage_world_continues_identically() {
    for writer in 0..2 {
        let setup = Setup {
            stages: 2,
            writer,
            empty_stages: false,
        };
        let mut g = game(2, &setup);
        // Stop on a frame whose writes stage-0 readers have not seen yet.
        for _ in 0..7 {
            g.rt.frame();
        }
        let snap = g.rt.snapshot().unwrap();
        let run = |g: &mut Game| {
            g.log.lock().unwrap().clear();
            for _ in 0..8 {
                g.rt.frame();
            }
            let mut log = std::mem::take(&mut *g.log.lock().unwrap());
            log.sort_by_key(|&(_, r, f, _)| (r, f));
            (log, g.rt.world().checksum())
        };
        let first = run(&mut g);
        assert!(!first.0.is_empty());
        g.rt.restore(&snap);
        assert_eq!(run(&mut g), first, "writer in stage {writer}");
    }
}

/// The format version a save file says it is.
fn version(file: &[u8]) -> u32 {
    u32::from_le_bytes(file[8..12].try_into().unwrap())
}

/// A runtime's save of a two-stage game (format version 5) holds which stage's Sync made
/// each mark and delivered each message: loaded into a runtime with the same two stages,
/// whichever frame it was saved after, the game goes on as if it had not stopped. Every
/// reader's log, the part before the save and the part after the load together, is the
/// one the rule predicts (each mark and message seen exactly once), at 1, 2 and 8
/// workers, and the last checksum is the uninterrupted game's.
#[test]
fn a_load_into_the_same_two_stages_shows_every_system_each_mark_and_message_once() {
    for writer in 0..2 {
        let setup = Setup {
            stages: 2,
            writer,
            empty_stages: false,
        };
        let want = predicted(&setup, &setup_entities());
        // After frames 0, 3 (stage `writer` wrote and sent), 4 (it spawned) and 5 (it
        // inserted), whose work some reader has not seen yet.
        for at in [1, 4, 5, 6] {
            for workers in WORKERS {
                let what =
                    format!("writer in stage {writer}, saved after {at} frames, {workers} workers");
                let mut saved = game(workers, &setup);
                for _ in 0..at {
                    saved.rt.frame();
                }
                let mut file = Vec::new();
                saved.rt.save(&mut file).unwrap();
                assert_eq!(version(&file), 5, "{what}");
                let mut log = std::mem::take(&mut *saved.log.lock().unwrap());
                let mut loaded = game(workers, &setup);
                loaded.rt.load(&mut file.as_slice()).unwrap();
                assert_eq!(loaded.rt.world().checksum(), saved.rt.world().checksum());
                for _ in at..FRAMES {
                    loaded.rt.frame();
                }
                log.extend(std::mem::take(&mut *loaded.log.lock().unwrap()));
                log.sort();
                if log != want {
                    let extra: Vec<_> = log.iter().filter(|e| !want.contains(e)).take(5).collect();
                    let missing: Vec<_> =
                        want.iter().filter(|e| !log.contains(e)).take(5).collect();
                    panic!(
                        "{what}: {} seen, {} predicted; seen, not predicted: {extra:?}; \
                         predicted, not seen: {missing:?}",
                        log.len(),
                        want.len()
                    );
                }
                assert_eq!(
                    loaded.rt.world().checksum(),
                    play(workers, &setup).1,
                    "{what}: the checksum"
                );
            }
        }
    }
}

/// A version-5 save falls back to what a save without the stages means (version 4)
/// where the stages cannot be put back: loaded into a one-stage runtime, its reader sees
/// every saved mark and message in the next frame, once (as one stage sees what was
/// made between frames); loaded by `World::load`, the world is exactly the one a
/// `World::save` of the saved world holds, byte for byte.
#[test]
fn a_two_stage_save_loaded_into_one_stage_or_a_world_keeps_the_marks_and_messages_only() {
    let setup = Setup {
        stages: 2,
        writer: 0,
        empty_stages: false,
    };
    let mut saved = game(2, &setup);
    for _ in 0..4 {
        saved.rt.frame(); // frame 3: stage 0 writes and sends; stage 1's reader saw it
    }
    let mut file = Vec::new();
    saved.rt.save(&mut file).unwrap();
    assert_eq!(version(&file), 5);
    let mut world_file = Vec::new();
    saved.rt.world().save(&mut world_file).unwrap();
    assert_eq!(version(&world_file), 4, "a world's save has no stages");

    // A plain world: what a world save holds, exactly.
    let mut w = world().0;
    w.load(&mut file.as_slice()).unwrap();
    let mut again = Vec::new();
    w.save(&mut again).unwrap();
    assert!(again == world_file, "World::load of a version-5 save");

    // One stage: everything saved, seen once in the next frame.
    let one = Setup {
        stages: 1,
        writer: 0,
        empty_stages: false,
    };
    let mut loaded = game(2, &one);
    loaded.rt.load(&mut file.as_slice()).unwrap();
    assert_eq!(loaded.rt.world().checksum(), saved.rt.world().checksum());
    let count = |g: &Game, f: u64, k: Kind| {
        let log = g.log.lock().unwrap();
        log.iter().filter(|e| (e.0, e.1, e.2) == (k, 0, f)).count()
    };
    loaded.rt.frame(); // frame 4
    loaded.rt.frame(); // frame 5
    for (k, n) in [
        (Kind::Message, 2),
        (Kind::Addressed, 1),
        (Kind::Changed, N / 2),
    ] {
        assert_eq!(
            (count(&loaded, 4, k), count(&loaded, 5, k)),
            (n, 0),
            "{k:?}"
        );
    }
    let mut after = Vec::new();
    loaded.rt.save(&mut after).unwrap();
    assert_eq!(
        version(&after),
        4,
        "one stage keeps no layers once it has run"
    );
}

/// A replay of a two-stage game recorded from before its first frame plays back
/// identically (the start save's marks and messages are the setup's, which count as made
/// between frames in the recorded run too).
#[test]
fn a_two_stage_replay_from_the_first_frame_plays_back_identically() {
    for writer in 0..2 {
        let setup = Setup {
            stages: 2,
            writer,
            empty_stages: false,
        };
        let mut g = game(2, &setup);
        g.rt.record_replay::<u8>().unwrap();
        for _ in 0..FRAMES {
            g.rt.frame_with(0u8);
        }
        let mut file = Vec::new();
        g.rt.finish_replay(&mut file).unwrap();
        let replay = runsync::Replay::read(&mut file.as_slice()).unwrap();
        let report = game(1, &setup).rt.play_replay::<u8>(&replay).unwrap();
        assert!(
            report.is_identical(),
            "writer in stage {writer}: {report:?}"
        );
        assert_eq!(report.frames, FRAMES);
    }
}

/// A replay of a two-stage game recorded mid-run (after a few frames, with marks and
/// messages some readers have seen and others not) plays back identically at 1, 2 and 8
/// workers: its start save holds which stage's Sync made each (format version 5), and
/// the replayed readers see what the recorded ones saw, entry for entry.
#[test]
fn a_two_stage_replay_recorded_mid_run_plays_back_identically() {
    const START: u64 = 4;
    let sorted = |g: &Game| {
        let mut log = std::mem::take(&mut *g.log.lock().unwrap());
        log.sort_by_key(|&(_, r, f, _)| (r, f));
        log
    };
    for writer in 0..2 {
        let setup = Setup {
            stages: 2,
            writer,
            empty_stages: false,
        };
        let mut g = game(2, &setup);
        for _ in 0..START {
            g.rt.frame_with(0u8);
        }
        g.log.lock().unwrap().clear();
        g.rt.record_replay::<u8>().unwrap();
        for _ in START..FRAMES {
            g.rt.frame_with(0u8);
        }
        let recorded = sorted(&g);
        assert!(!recorded.is_empty());
        let mut file = Vec::new();
        g.rt.finish_replay(&mut file).unwrap();
        let replay = runsync::Replay::read(&mut file.as_slice()).unwrap();
        for workers in WORKERS {
            let mut p = game(workers, &setup);
            let report = p.rt.play_replay::<u8>(&replay).unwrap();
            assert!(
                report.is_identical(),
                "writer in stage {writer}, {workers} workers: {report:?}"
            );
            assert_eq!(report.frames, FRAMES - START);
            assert_eq!(
                sorted(&p),
                recorded,
                "writer in stage {writer}, {workers} workers: the readers' logs"
            );
        }
    }
}
