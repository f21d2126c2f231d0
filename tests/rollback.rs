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
