//! No safe code a user writes can break an invariant the engine's `unsafe` code relies on:
//! every table keeps one value per row in each of its columns, whatever a
//! merge, a `Clone`, a `Drop` or a required component's constructor does, and however it
//! panics. The query engine reads rows unchecked, so a column shorter than its table would
//! be a read out of bounds (a segfault in release); here every hostile callback is caught
//! and the world is read back, row by row, afterwards.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicU32, Ordering};

use runsync::merge::{ColumnOutputs, Merge};
use runsync::prelude::*;

#[derive(Clone, Copy, Debug, PartialEq)]
struct Pos(f32);
impl Component for Pos {
    type Output = Pos;
}

/// Reads every row of every table holding `Pos` and `Tag`, and checks each entity's
/// values through `get` too: a short column would read out of bounds here.
fn read_back(w: &World) -> usize {
    let mut n = 0;
    for (e, (p, t)) in w.query::<(&Pos, Option<&Tag>)>() {
        assert_eq!(w.get::<Pos>(e).map(|q| q.0.to_bits()), Some(p.0.to_bits()));
        assert_eq!(w.get::<Tag>(e), t);
        n += 1;
    }
    assert_eq!(
        n,
        w.query::<()>()
            .filter(|(e, ())| w.get::<Pos>(*e).is_some())
            .count()
    );
    n
}

/// A merge that replaces whole columns badly: it scribbles over the rows, swaps, scribbles
/// again, and panics half-way — everything safe code can do to the column it is handed.
struct Scribble;
impl Merge<Pos> for Scribble {
    fn merge(&self, v: &mut Pos, outs: &[Pos]) {
        *v = *outs.last().unwrap();
    }
    const REPLACES_COLUMNS: bool = true;
    fn replace_column(&self, mut column: ColumnOutputs<'_, Pos>) -> bool {
        let (values, outputs) = column.rows();
        values.reverse();
        outputs[0] = Pos(-1.0);
        column.swap();
        let (values, _) = column.rows();
        values[1] = Pos(f32::NAN);
        panic!("half done")
    }
}

/// The hole this closes: a safe `replace_column` used to get `&mut Vec<C>`, so one that
/// cleared the column left a table shorter than its rows, and the next query read past
/// the end (a segfault in release). The column is now handed over as `ColumnOutputs`,
/// which cannot change a length (a compile-fail doctest on it shows `clear` does not
/// compile); whatever a merge does to its rows, and however it panics, every row keeps a
/// value and the world stays readable and usable.
#[test]
fn a_misbehaving_replace_column_cannot_shorten_a_column() {
    let mut w = World::new();
    w.register::<Pos>(Scribble);
    w.register::<Tag>(merge::last);
    let es: Vec<Entity> = (0..64).map(|i| w.spawn((Pos(i as f32),))).collect();
    let mut rt = Runtime::builder().workers(2).build(w);
    rt.add_system(|w: &World, out: &mut Output| {
        for (e, (p,)) in w.query::<(&Pos,)>() {
            out.write::<Pos>(e, Pos(p.0 + 100.0));
        }
    });
    let err = rt.try_frame().unwrap_err();
    assert!(matches!(err, FrameError::MergePanicked { .. }), "{err:?}");
    assert_eq!(read_back(rt.world()), 64);
    let nan = rt
        .world()
        .query::<(&Pos,)>()
        .filter(|(_, (p,))| p.0.is_nan())
        .count();
    assert_eq!(nan, 1, "the merge's last write stands");
    // And the world goes on.
    rt.world_mut().despawn(es[0]);
    assert_eq!(read_back(rt.world()), 63);
    assert!(rt.try_frame().is_err(), "the merge panics again, cleanly");
    assert_eq!(read_back(rt.world()), 63);
}

/// A component whose `Clone` panics on the value 13, once armed.
#[derive(Debug, PartialEq)]
struct Tag(u32);
static ARMED: AtomicU32 = AtomicU32::new(0);
impl Clone for Tag {
    fn clone(&self) -> Self {
        if self.0 == 13 && ARMED.load(Ordering::SeqCst) == 1 {
            panic!("no cloning 13");
        }
        Tag(self.0)
    }
}
impl Component for Tag {
    type Output = Tag;
}

/// A restore clones every column with the user's `Clone`. One that panics part-way used
/// to leave the tables holding the snapshot's entities beside columns holding only part
/// of their values: the next query read past the end. Now a restore that unwinds leaves
/// the world empty and valid — every entity despawned (stale handles stay stale), every
/// column as long as its table — and the panic goes on to the caller.
#[test]
fn a_panicking_clone_during_a_restore_leaves_a_valid_world() {
    let mut src = World::new();
    src.register::<Pos>(merge::last);
    src.register::<Tag>(merge::last);
    src.snapshotting::<Pos>().snapshotting::<Tag>();
    let es: Vec<Entity> = (0..40)
        .map(|i| src.spawn((Pos(i as f32), Tag(i))))
        .collect();
    src.spawn((Pos(-1.0),));
    let snap = src.snapshot().unwrap();

    let mut dst = World::new();
    dst.register::<Pos>(merge::last);
    dst.register::<Tag>(merge::last);
    dst.snapshotting::<Pos>().snapshotting::<Tag>();
    let mine = dst.spawn((Pos(5.0), Tag(1)));
    ARMED.store(1, Ordering::SeqCst);
    let err = catch_unwind(AssertUnwindSafe(|| dst.restore(&snap)));
    ARMED.store(0, Ordering::SeqCst);
    assert!(err.is_err(), "the Clone's panic reaches the caller");
    assert_eq!(read_back(&dst), 0);
    assert_eq!(dst.len(), 0, "every entity despawned");
    assert!(!dst.is_alive(mine) && !dst.is_alive(es[3]));
    // The world is usable: spawns, a good restore.
    let e = dst.spawn((Pos(1.0), Tag(2)));
    assert_eq!(dst.get::<Tag>(e), Some(&Tag(2)));
    dst.restore(&snap);
    assert_eq!(read_back(&dst), 41);
    assert_eq!(dst.get::<Tag>(es[13]), Some(&Tag(13)));
}

#[derive(Clone, Copy, Debug, PartialEq)]
struct Armor(u32);
impl Component for Armor {
    type Output = Armor;
}
static MADE: AtomicU32 = AtomicU32::new(0);
/// Armor's constructor: panics on the 5th call after it is armed (a budget of 4).
fn armor() -> Armor {
    let k = MADE.fetch_add(1, Ordering::SeqCst);
    if k == 4 {
        panic!("out of armor");
    }
    Armor(k)
}

/// A required component's constructor is user code too. One that panics in a batch spawn
/// used to leave the batch's other columns appended to a table whose entity list never
/// grew: the next spawn there took the batch's leftover values. Now the batch is cut back
/// whole, and single spawns after a panicking constructor (in debug builds too) work.
#[test]
fn a_panicking_required_constructor_leaves_every_table_whole() {
    let mut w = World::new();
    w.register::<Pos>(merge::last);
    w.register::<Tag>(merge::last);
    w.register::<Armor>(merge::last);
    w.require_with::<Tag, Armor>(armor);
    w.spawn((Pos(0.5),));
    MADE.store(0, Ordering::SeqCst);
    let err = catch_unwind(AssertUnwindSafe(|| {
        w.spawn_batch((0..10).map(|i| (Pos(i as f32), Tag(i))))
    }));
    assert!(err.is_err());
    assert_eq!(read_back(&w), 1, "the batch left nothing behind");
    // A spawn into the batch's table gets its own values.
    MADE.store(100, Ordering::SeqCst);
    let e = w.spawn((Pos(7.0), Tag(7)));
    assert_eq!(w.get::<Pos>(e), Some(&Pos(7.0)));
    assert_eq!(w.get::<Armor>(e), Some(&Armor(100)));
    // A single spawn whose constructor panics leaves its staged values behind; the next
    // spawn of those types is not confused by them.
    MADE.store(4, Ordering::SeqCst);
    assert!(catch_unwind(AssertUnwindSafe(|| w.spawn((Pos(8.0), Tag(8))))).is_err());
    let f = w.spawn((Pos(9.0), Tag(9)));
    assert_eq!(
        (w.get::<Pos>(f), w.get::<Tag>(f)),
        (Some(&Pos(9.0)), Some(&Tag(9)))
    );
    assert_eq!(read_back(&w), 3);
    let all: Vec<(f32, u32)> = w
        .query::<(&Pos, &Tag, &Armor)>()
        .map(|(_, (p, t, _))| (p.0, t.0))
        .collect();
    assert_eq!(all, [(7.0, 7), (9.0, 9)]);
}
