//! Rollback: 100 frames with churn (spawns, despawns, inserts, removes, and tables first
//! created after the snapshot), a snapshot after frame 50, a restore, and a re-run: the
//! checksum after every re-run frame equals the original run's, at 1, 2 and 8 workers
//! (and under `--features single-threaded`, which CI runs too). Also: snapshots of
//! components that own heap data neither leak nor double-drop.

use std::sync::Arc;

use runsync::prelude::*;

const FRAMES: u64 = if cfg!(miri) { 6 } else { 100 };
const SAVE_AT: u64 = FRAMES / 2;

#[derive(Clone, Copy, Debug, PartialEq)]
struct P(f32, f32);
impl Component for P {
    type Output = (f32, f32);
}
impl Checksum for P {
    fn checksum(&self, h: &mut Checksummer) {
        (self.0, self.1).checksum(h);
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
struct Hp(i32);
impl Component for Hp {
    type Output = i32;
}
impl Checksum for Hp {
    fn checksum(&self, h: &mut Checksummer) {
        self.0.checksum(h);
    }
}

/// Inserted and removed back and forth.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Tag(u32);
impl Component for Tag {
    type Output = Tag;
}
impl Checksum for Tag {
    fn checksum(&self, h: &mut Checksummer) {
        self.0.checksum(h);
    }
}

/// First inserted after the snapshot frame: its tables do not exist in the snapshot.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Late(u64);
impl Component for Late {
    type Output = Late;
}
impl Checksum for Late {
    fn checksum(&self, h: &mut Checksummer) {
        self.0.checksum(h);
    }
}

fn noise(a: u32, b: u64) -> u64 {
    let mut x = (u64::from(a) << 32) ^ b ^ 0x9E37_79B9_7F4A_7C15;
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x
}

fn build(workers: usize) -> Runtime {
    let mut w = World::new();
    w.register::<P>(|p: &mut P, d: &[(f32, f32)]| {
        for &(dx, dy) in d {
            p.0 = p.0 * 0.99 + dx;
            p.1 = p.1 * 0.99 + dy;
        }
    });
    w.register::<Hp>(|h: &mut Hp, d: &[i32]| h.0 += d.iter().sum::<i32>());
    w.register::<Tag>(merge::last);
    w.register::<Late>(merge::last);
    w.snapshotting::<P>()
        .snapshotting::<Hp>()
        .snapshotting::<Tag>()
        .snapshotting::<Late>()
        .checksumming::<P>()
        .checksumming::<Hp>()
        .checksumming::<Tag>()
        .checksumming::<Late>();
    for i in 0..200u32 {
        w.spawn((P(i as f32, 0.0), Hp(20 + (i % 30) as i32)));
    }
    let mut rt = Runtime::builder().workers(workers).build(w);
    rt.add_system_named("move", |world: &World, out: &mut Output| {
        let frame = world.resource::<Time>().frame;
        out.par_for_each::<(&P, &Hp)>(|e, (_, hp), out| {
            let n = noise(e.index(), frame);
            out.write::<P>(e, ((n % 7) as f32 * 0.1, hp.0 as f32 * 0.01));
        });
    });
    rt.add_system_named("damage", |world: &World, out: &mut Output| {
        let frame = world.resource::<Time>().frame;
        for (e, (_,)) in world.query::<(&Hp,)>() {
            out.write::<Hp>(e, -((noise(e.index(), frame) % 3) as i32));
        }
    });
    rt.add_system_named("churn", |world: &World, out: &mut Output| {
        let frame = world.resource::<Time>().frame;
        for (e, (hp, tag, late)) in world.query::<(&Hp, Option<&Tag>, Option<&Late>)>() {
            let n = noise(e.index(), frame + 1);
            if hp.0 <= 0 {
                out.despawn(e);
            } else if tag.is_none() && n % 5 == 0 {
                out.insert(e, Tag(frame as u32));
            } else if tag.is_some() && n % 7 == 0 {
                out.remove::<Tag>(e);
            }
            if frame > SAVE_AT + 5 && late.is_none() && n % 11 == 0 {
                out.insert(e, Late(frame));
            }
        }
        for i in 0..(noise(0, frame) % 6) as u32 {
            out.spawn((P(0.0, i as f32), Hp(10 + i as i32)));
        }
    });
    rt
}

/// Checksums after frames 1..=FRAMES, with a rollback: after frame `SAVE_AT` the state is
/// saved; after the last frame it is restored and frames SAVE_AT+1..=FRAMES are re-run.
/// Returns (first run, re-run) checksums of those frames.
fn run_with_rollback(workers: usize) -> (Vec<u64>, Vec<u64>) {
    let mut rt = build(workers);
    let mut first = Vec::new();
    let mut saved = None;
    for _ in 0..FRAMES {
        rt.frame();
        first.push(rt.world().checksum());
        if rt.frame_count() == SAVE_AT {
            saved = Some(rt.snapshot().expect("every type opted in"));
        }
    }
    let saved = saved.unwrap();
    rt.restore(&saved);
    assert_eq!(rt.frame_count(), SAVE_AT);
    assert_eq!(rt.world().resource::<Time>().frame, SAVE_AT);
    assert_eq!(rt.world().checksum(), first[SAVE_AT as usize - 1]);
    let mut again = first[..SAVE_AT as usize].to_vec();
    for _ in SAVE_AT..FRAMES {
        rt.frame();
        again.push(rt.world().checksum());
    }
    (first, again)
}

#[test]
fn rollback_rerun_matches_every_frame_at_any_worker_count() {
    let (reference, _) = run_with_rollback(1);
    for workers in [1, 2, 8] {
        let (first, again) = run_with_rollback(workers);
        assert_eq!(first, reference, "first run at {workers} workers");
        for (f, (a, b)) in first.iter().zip(&again).enumerate() {
            assert_eq!(a, b, "frame {} after rollback at {workers} workers", f + 1);
        }
    }
    // The scenario really churns and really makes tables after the snapshot.
    let mut rt = build(2);
    for _ in 0..FRAMES {
        rt.frame();
    }
    assert!(rt.world().query::<(&Late,)>().count() > 0 || cfg!(miri));
}

#[test]
fn restored_world_equals_the_original_in_every_respect() {
    let mut rt = build(2);
    for _ in 0..SAVE_AT {
        rt.frame();
    }
    let saved = rt.snapshot().unwrap();
    let mut reference = build(2);
    for _ in 0..SAVE_AT {
        reference.frame();
    }
    for _ in 0..10 {
        rt.frame();
    }
    rt.restore(&saved);
    assert_eq!(rt.world().first_difference(reference.world()), None);
    // Into a fresh world with the same types: same state, and it runs on identically.
    let mut fresh = build(2);
    fresh.restore(&saved);
    assert_eq!(fresh.world().first_difference(reference.world()), None);
    for _ in SAVE_AT..FRAMES {
        fresh.frame();
        reference.frame();
        assert_eq!(fresh.world().checksum(), reference.world().checksum());
    }
}

/// Owns heap data, counted through the `Arc`.
#[derive(Clone, Debug)]
struct Owned(#[allow(dead_code)] Arc<()>);
impl Component for Owned {
    type Output = ();
}

#[test]
fn snapshots_of_drop_components_neither_leak_nor_double_drop() {
    let token = Arc::new(());
    let mut w = World::new();
    w.register::<Owned>(|_: &mut Owned, _: &[()]| {});
    w.snapshotting::<Owned>();
    let es: Vec<Entity> = (0..10).map(|_| w.spawn((Owned(token.clone()),))).collect();
    assert_eq!(Arc::strong_count(&token), 11);
    let snap = w.snapshot().unwrap();
    assert_eq!(
        Arc::strong_count(&token),
        21,
        "the snapshot holds its own clones"
    );
    for &e in &es[..6] {
        w.despawn(e);
    }
    assert_eq!(Arc::strong_count(&token), 15);
    w.restore(&snap);
    assert_eq!(
        Arc::strong_count(&token),
        21,
        "restore clones, the snapshot keeps its own"
    );
    w.restore(&snap);
    assert_eq!(
        Arc::strong_count(&token),
        21,
        "a second restore replaces, not adds"
    );
    let mut ring = Snapshot::new();
    for _ in 0..3 {
        w.snapshot_into(&mut ring).unwrap();
    }
    assert_eq!(
        Arc::strong_count(&token),
        31,
        "snapshot_into replaces its old clones"
    );
    drop(snap);
    assert_eq!(Arc::strong_count(&token), 21);
    w.spawn((Owned(token.clone()),));
    w.restore(&ring);
    assert_eq!(
        Arc::strong_count(&token),
        21,
        "the extra entity's value was dropped"
    );
    drop(ring);
    drop(w);
    assert_eq!(Arc::strong_count(&token), 1);
}

/// Snapshots, restores and the runtime's checksum are incremental: a save into a reused
/// ring entry copies only what changed since the entry was filled, a restore only what
/// differs from the world it overwrites, and `Runtime::checksum` digests again only the
/// blocks that changed since its last call. These games check that against full copies
/// and full digests, as rollback netcode uses them.
mod incremental {
    use proptest::prelude::*;
    use runsync::RuntimeSnapshot;
    use runsync::prelude::*;

    use super::{Hp, Late, P, Tag, noise};

    /// Never written after its spawn: the columns and table a save should skip.
    #[derive(Clone, Copy, Debug, PartialEq)]
    struct Wall(u32);
    impl Component for Wall {
        type Output = Wall;
    }
    impl Checksum for Wall {
        fn checksum(&self, h: &mut Checksummer) {
            self.0.checksum(h);
        }
    }

    /// The frame's input, as the test hands it in: predicted or confirmed.
    #[derive(Clone, Copy)]
    struct Input(u64);

    const RING: usize = 9;

    #[derive(Clone, Debug)]
    struct Game {
        seed: u64,
        walls: u32,
        movers: u32,
        frames: u64,
        /// Frames whose first run sees a wrong input, each with the number of frames
        /// until its correction arrives (1..=8, the ring's reach).
        mispredicted: Vec<(u64, u64)>,
    }

    fn game() -> impl Strategy<Value = Game> {
        (
            any::<u64>(),
            prop_oneof![0u32..200, 4000u32..9000],
            1u32..200,
            20u64..60,
            proptest::collection::vec((1u64..60, 1u64..=8), 0..8),
        )
            .prop_map(|(seed, walls, movers, frames, mut mispredicted)| {
                mispredicted.retain(|m| m.0 < frames);
                mispredicted.sort_unstable();
                mispredicted.dedup_by_key(|m| m.0);
                Game {
                    seed,
                    walls,
                    movers,
                    frames,
                    mispredicted,
                }
            })
    }

    fn build(g: &Game, workers: usize) -> Runtime {
        let mut w = World::new();
        w.register::<P>(|p: &mut P, d: &[(f32, f32)]| {
            if let Some(&(x, y)) = d.last() {
                *p = P(x, y);
            }
        });
        w.register::<Hp>(|h: &mut Hp, d: &[i32]| h.0 += d.iter().sum::<i32>());
        w.register::<Tag>(merge::last);
        w.register::<Late>(merge::last);
        w.register::<Wall>(merge::last);
        w.snapshotting::<P>()
            .snapshotting::<Hp>()
            .snapshotting::<Tag>()
            .snapshotting::<Late>()
            .snapshotting::<Wall>()
            .checksumming::<P>()
            .checksumming::<Hp>()
            .checksumming::<Tag>()
            .checksumming::<Late>()
            .checksumming::<Wall>();
        // Walls share `P` with the movers but sit in their own table, never written.
        w.spawn_batch((0..g.walls).map(|i| (P(i as f32, -1.0), Wall(i))));
        w.spawn_batch((0..g.movers).map(|i| (P(0.0, i as f32), Hp(5 + (i % 9) as i32))));
        w.insert_resource(Input(0));
        let mut rt = Runtime::builder().workers(workers).build(w);
        let seed = g.seed;
        rt.add_system_named("move", move |world: &World, out: &mut Output| {
            let input = world.resource::<Input>().0;
            for (e, (p, _)) in world.query::<(&P, &Hp)>() {
                if noise(e.index(), input ^ seed) % 3 != 0 {
                    out.write::<P>(e, (p.0 + (input % 5) as f32, p.1 * 0.5));
                }
            }
        });
        rt.add_system_named("churn", move |world: &World, out: &mut Output| {
            let input = world.resource::<Input>().0;
            for (e, (hp, tag, late)) in world.query::<(&Hp, Option<&Tag>, Option<&Late>)>() {
                let n = noise(e.index(), input ^ seed);
                if hp.0 <= 0 {
                    out.despawn(e);
                    continue;
                }
                out.write::<Hp>(e, -((n % 3) as i32));
                if tag.is_none() && n % 5 == 0 {
                    out.insert(e, Tag(input as u32));
                } else if tag.is_some() && n % 7 == 0 {
                    out.remove::<Tag>(e);
                }
                if late.is_none() && n % 13 == 0 {
                    out.insert(e, Late(input));
                }
            }
            for i in 0..(input % 4) as u32 {
                out.spawn((P(0.0, i as f32), Hp(3 + i as i32)));
            }
        });
        // Reads the change marks, so a restore must bring them back too.
        rt.add_system_named("changed", |world: &World, out: &mut Output| {
            for (e, (late,)) in world.query_filtered::<(&Late,), Changed<Hp>>() {
                out.write::<Late>(e, Late(late.0.wrapping_add(1)));
            }
        });
        rt
    }

    /// The confirmed input of frame `f`, and the wrong one a misprediction sees.
    fn confirmed(g: &Game, f: u64) -> u64 {
        noise(f as u32, g.seed) % 1000
    }

    fn run(rt: &mut Runtime, input: u64) {
        rt.world_mut().insert_resource(Input(input));
        rt.frame();
    }

    /// Saves the state before frame `f` into its ring entry, as ggrs asks each frame, and
    /// checks the runtime's (incremental) checksum against a full digest; returns the
    /// full digest.
    fn save(rt: &mut Runtime, ring: &mut [RuntimeSnapshot], f: u64) -> u64 {
        let entry = &mut ring[f as usize % RING];
        // Every other frame as a rollback session saves: copy and digest at once.
        let digest = if f % 2 == 0 {
            rt.save_into(entry).unwrap()
        } else {
            rt.snapshot_into(entry).unwrap();
            rt.checksum()
        };
        let full = rt.world().checksum();
        assert_eq!(digest, full, "incremental checksum before frame {f}");
        full
    }

    /// Plays `g` as a rollback session does, at `workers`: every frame saved first, the
    /// mispredicted frames corrected by a rollback to the first wrong one, re-run with
    /// confirmed inputs, each re-run frame saved again. `reference` holds the full digest
    /// of the state before each frame of a straight run with confirmed inputs.
    fn play(g: &Game, workers: usize, reference: &[u64]) -> u64 {
        let mut rt = build(g, workers);
        let mut ring: Vec<RuntimeSnapshot> = (0..RING).map(|_| RuntimeSnapshot::new()).collect();
        let mut saved = vec![0; g.frames as usize + 1];
        let mut pending: Vec<(u64, u64)> = Vec::new();
        let mut rollbacks = 0;
        for f in 0..g.frames {
            saved[f as usize] = save(&mut rt, &mut ring, f);
            let wrong = g.mispredicted.iter().find(|m| m.0 == f);
            match wrong {
                Some(&m) => {
                    run(&mut rt, confirmed(g, f) ^ 1);
                    pending.push(m);
                }
                None => run(&mut rt, confirmed(g, f)),
            }
            // The correction of the earliest pending frame arrives: roll back to it.
            let Some(&(first, delay)) = pending.first() else {
                continue;
            };
            if f + 1 < first + delay && f + 1 < g.frames {
                continue;
            }
            pending.clear();
            rollbacks += 1;
            rt.restore(&ring[first as usize % RING]);
            assert_eq!(rt.frame_count(), first);
            assert_eq!(
                rt.world().checksum(),
                saved[first as usize],
                "restored the state before frame {first} at {workers} workers"
            );
            assert_eq!(rt.world().checksum(), reference[first as usize]);
            // The digests a `save_into` kept with the entry serve the checksum now.
            assert_eq!(
                rt.checksum(),
                reference[first as usize],
                "checksum after restore"
            );
            for again in first..=f {
                // As ggrs asks: the loaded frame is saved again (into the entry it came
                // from), then each re-run frame.
                saved[again as usize] = save(&mut rt, &mut ring, again);
                run(&mut rt, confirmed(g, again));
            }
            assert_eq!(
                rt.world().checksum(),
                reference[f as usize + 1],
                "after re-running frames {first}..={f} at {workers} workers"
            );
            assert_eq!(rt.checksum(), reference[f as usize + 1]);
        }
        assert_eq!(rt.world().checksum(), reference[g.frames as usize]);
        rollbacks
    }

    /// The full digest before each frame, and at the end, of a straight run.
    fn straight(g: &Game) -> Vec<u64> {
        let mut rt = build(g, 1);
        let mut sums = Vec::new();
        for f in 0..g.frames {
            sums.push(rt.world().checksum());
            run(&mut rt, confirmed(g, f));
        }
        sums.push(rt.world().checksum());
        sums
    }

    proptest! {
        #![proptest_config(ProptestConfig {
            cases: if cfg!(miri) { 1 } else { 12 },
            ..ProptestConfig::default()
        })]

        #[test]
        fn incremental_saves_restores_and_checksums_equal_full_ones(g in game()) {
            let reference = straight(&g);
            for workers in [1, 2, 8] {
                let rollbacks = play(&g, workers, &reference);
                prop_assert_eq!(rollbacks > 0, !g.mispredicted.is_empty());
            }
        }
    }

    /// A game of over 16k rows (the saves' copies and digests run on the workers), no
    /// input mispredicted.
    fn big_game(seed: u64) -> Game {
        Game {
            seed,
            walls: 20_000,
            movers: 150,
            frames: 40,
            mispredicted: Vec::new(),
        }
    }

    /// A snapshot keeps the digests its `save_into` computed, and a restore hands them on:
    /// into another runtime of the same game, and not when `snapshot_into` has since
    /// written the snapshot anew; each checksum after a restore equals a full digest.
    #[test]
    fn digests_kept_with_a_save_serve_the_checksum_after_a_restore() {
        let g = big_game(5);
        for workers in [1, 2, 8] {
            let mut rt = build(&g, workers);
            for f in 0..5 {
                run(&mut rt, confirmed(&g, f));
            }
            let mut kept = RuntimeSnapshot::new();
            let at_five = rt.save_into(&mut kept).unwrap();
            assert_eq!(at_five, rt.world().checksum());
            for f in 5..12 {
                run(&mut rt, confirmed(&g, f));
            }
            // Another runtime, elsewhere in the same game.
            let mut other = build(&g, workers);
            run(&mut other, 7);
            assert_ne!(other.checksum(), at_five);
            other.restore(&kept);
            assert_eq!(
                other.checksum(),
                at_five,
                "{workers} workers, another runtime"
            );
            assert_eq!(other.world().checksum(), at_five);
            rt.restore(&kept);
            assert_eq!(
                rt.checksum(),
                at_five,
                "{workers} workers, the same runtime"
            );
            // Ahead again, then the snapshot written anew without digests.
            run(&mut rt, confirmed(&g, 5));
            let at_six = rt.world().checksum();
            rt.snapshot_into(&mut kept).unwrap();
            run(&mut rt, confirmed(&g, 6));
            rt.restore(&kept);
            assert_eq!(
                rt.checksum(),
                at_six,
                "{workers} workers, after snapshot_into"
            );
            assert_eq!(rt.world().checksum(), at_six);
        }
    }

    /// Restoring every entry of the ring in turn, each a different depth back (1 to 8
    /// frames, with spawns and despawns in between), gives the state saved there; and a
    /// world restored from a fresh full snapshot has no difference from it.
    #[test]
    fn every_ring_depth_restores_the_state_it_saved() {
        let g = big_game(11);
        for workers in [1, 2, 8] {
            let mut rt = build(&g, workers);
            let mut ring: Vec<RuntimeSnapshot> =
                (0..RING).map(|_| RuntimeSnapshot::new()).collect();
            let mut full: Vec<RuntimeSnapshot> = Vec::new();
            for f in 0..30 {
                save(&mut rt, &mut ring, f);
                full.push(rt.snapshot().unwrap());
                run(&mut rt, confirmed(&g, f));
            }
            let mut other = build(&g, workers);
            for depth in 1..RING as u64 {
                let at = 30 - depth;
                rt.restore(&ring[at as usize % RING]);
                other.restore(&full[at as usize]);
                assert_eq!(rt.frame_count(), at);
                assert_eq!(
                    rt.world().first_difference(other.world()),
                    None,
                    "{depth} frames back at {workers} workers"
                );
                // Each live entity is found by its handle where its table holds it: the
                // restore rebuilt the allocator's locations from the tables.
                let world = rt.world();
                for (e, (p,)) in world.query::<(&P,)>() {
                    assert_eq!(world.get::<P>(e), Some(p), "{depth} frames back, {e:?}");
                }
                // Run on to frame 30 again from there (overwriting nothing).
                for f in at..30 {
                    run(&mut rt, confirmed(&g, f));
                }
            }
        }
    }
}

/// `Runtime::save_into` on a world large enough that its copy and digests run as jobs on
/// the workers: a `Clone` that panics in one job is passed on, the runtime stays usable
/// and its next save and checksum are right; a type not opted into snapshots is named.
mod save_jobs {
    use std::sync::atomic::{AtomicBool, Ordering};

    use runsync::prelude::*;
    use runsync::{RuntimeSnapshot, SnapshotError};

    use super::P;

    static BOOM: AtomicBool = AtomicBool::new(false);

    /// Panics when cloned while `BOOM` is set, if its second field says it may: only the
    /// test that sets `BOOM` spawns such values, so a test running beside it on another
    /// thread never sees its clones panic.
    #[derive(Debug, PartialEq)]
    struct Fragile(u32, bool);
    impl Clone for Fragile {
        fn clone(&self) -> Self {
            assert!(!(self.1 && BOOM.load(Ordering::Relaxed)), "Fragile cloned");
            Fragile(self.0, self.1)
        }
    }
    impl Component for Fragile {
        type Output = u32;
    }

    #[derive(Clone, Copy, Debug, PartialEq)]
    struct Unsaved(u8);
    impl Component for Unsaved {
        type Output = Unsaved;
    }

    /// `fragile`: whether its `Fragile`s panic when cloned while `BOOM` is set.
    fn runtime(workers: usize, unsaved: bool, fragile: bool) -> Runtime {
        let mut w = World::new();
        w.register::<P>(|p: &mut P, d: &[(f32, f32)]| {
            if let Some(&(x, y)) = d.last() {
                *p = P(x, y);
            }
        });
        w.register::<Fragile>(|f: &mut Fragile, v: &[u32]| f.0 += v.iter().sum::<u32>());
        w.snapshotting::<P>()
            .checksumming::<P>()
            .snapshotting::<Fragile>();
        if unsaved {
            w.register::<Unsaved>(merge::last);
        }
        w.spawn_batch((0..40_000u32).map(|i| (P(i as f32, 0.0), Fragile(i, fragile))));
        if unsaved {
            w.spawn((Unsaved(1),));
        }
        let mut rt = Runtime::builder().workers(workers).build(w);
        rt.add_system(|world: &World, out: &mut Output| {
            for (e, (p,)) in world.query::<(&P,)>() {
                out.write::<P>(e, (p.0 + 1.0, p.1));
            }
        });
        rt
    }

    #[test]
    fn a_clone_that_panics_in_a_save_job_is_passed_on_and_the_next_save_is_right() {
        for workers in [1, 2, 8] {
            let mut rt = runtime(workers, false, true);
            let mut slot = RuntimeSnapshot::new();
            rt.save_into(&mut slot).unwrap();
            rt.frame();
            // `Fragile`'s column has not changed since `slot` was filled: force a copy
            // by filling the slot from another world first.
            let mut other = runtime(workers, false, false);
            other.frame();
            other.frame();
            other.save_into(&mut slot).unwrap();
            BOOM.store(true, Ordering::Relaxed);
            let caught =
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| rt.save_into(&mut slot)));
            BOOM.store(false, Ordering::Relaxed);
            let message = caught.expect_err("the clone panicked");
            let message = message
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| message.downcast_ref::<&str>().copied());
            assert_eq!(message, Some("Fragile cloned"), "{workers} workers");
            // The runtime goes on; its next save copies and digests right.
            rt.frame();
            let checksum = rt.save_into(&mut slot).unwrap();
            assert_eq!(checksum, rt.world().checksum(), "{workers} workers");
            let frame = rt.frame_count();
            rt.frame();
            rt.restore(&slot);
            assert_eq!(rt.frame_count(), frame);
            assert_eq!(rt.world().checksum(), checksum, "{workers} workers");
        }
    }

    #[test]
    fn a_save_of_a_type_not_opted_in_names_it_and_the_checksum_stays_right() {
        for workers in [1, 2, 8] {
            let mut rt = runtime(workers, true, false);
            let mut slot = RuntimeSnapshot::new();
            match rt.save_into(&mut slot) {
                Err(e @ SnapshotError::NotSnapshotting { .. }) => {
                    assert!(e.to_string().contains("Unsaved"), "{e}");
                }
                other => panic!("expected NotSnapshotting, got {other:?}"),
            }
            rt.frame();
            assert_eq!(rt.checksum(), rt.world().checksum(), "{workers} workers");
        }
    }
}
