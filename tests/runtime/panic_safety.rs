//! Panics in user code never corrupt the world, double-drop or leak, and the caller is
//! told. (Panicking systems, merges and parallel chunks are covered in `runtime.rs`.)

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use runsync::prelude::*;

static DROPS: AtomicUsize = AtomicUsize::new(0);

/// Panics when dropped if `explode` is set; counts every drop.
#[derive(Debug)]
struct Bomb {
    explode: bool,
    _token: Arc<()>,
}
impl Component for Bomb {
    type Output = ();
}
impl Drop for Bomb {
    fn drop(&mut self) {
        DROPS.fetch_add(1, Ordering::SeqCst);
        if self.explode && !std::thread::panicking() {
            panic!("bomb went off");
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
struct Pos(f32);
impl Component for Pos {
    type Output = Pos;
}

fn world() -> World {
    let mut w = World::new();
    w.register::<Bomb>(|_: &mut Bomb, _: &[()]| {});
    w.register::<Pos>(merge::last);
    w
}

// One test function so that the global drop counter is not shared between threads.
#[test]
fn a_panicking_drop_is_reported_and_nothing_leaks() {
    let token = Arc::new(());
    let bomb = |explode| Bomb {
        explode,
        _token: token.clone(),
    };

    // In Sync: a despawn and a remove release a panicking and a quiet value.
    {
        let mut w = world();
        let a = w.spawn((bomb(true), Pos(1.0)));
        let b = w.spawn((bomb(false), Pos(2.0)));
        let c = w.spawn((bomb(false), Pos(3.0)));
        let mut rt = Runtime::builder().workers(2).build(w);
        rt.add_system(move |_: &World, out: &mut Output| {
            out.despawn(a);
            out.remove::<Bomb>(b);
            out.write::<Pos>(c, Pos(30.0));
        });
        DROPS.store(0, Ordering::SeqCst);
        let err = rt.try_frame().unwrap_err();
        assert!(
            matches!(&err, FrameError::DropPanicked { message, stage: StageId::FIRST } if message == "bomb went off"),
            "{err:?}"
        );
        assert_eq!(
            DROPS.load(Ordering::SeqCst),
            2,
            "both released values dropped once"
        );
        let w = rt.world();
        assert!(!w.is_alive(a));
        assert!(!w.has::<Bomb>(b));
        assert_eq!(w.get::<Pos>(b), Some(&Pos(2.0)));
        assert_eq!(w.get::<Pos>(c), Some(&Pos(30.0)), "merges were applied");
        assert_eq!(w.len(), 2);
        rt.frame(); // the next frame is fine (despawning a dead entity is a no-op)
        assert_eq!(rt.stats().dropped, 2);
    }
    assert_eq!(Arc::strong_count(&token), 1, "no Bomb leaked");

    // Between frames: a panicking Drop during `despawn` and during an insert-replace
    // leaves the world consistent.
    {
        let mut w = world();
        let a = w.spawn((bomb(true), Pos(1.0)));
        let b = w.spawn((bomb(false), Pos(2.0)));
        DROPS.store(0, Ordering::SeqCst);
        let r = catch_unwind(AssertUnwindSafe(|| w.despawn(a)));
        assert!(r.is_err());
        assert_eq!(DROPS.load(Ordering::SeqCst), 1);
        assert!(!w.is_alive(a));
        assert_eq!(
            w.get::<Pos>(b),
            Some(&Pos(2.0)),
            "b moved into a's row intact"
        );
        assert_eq!(w.len(), 1);
        w.insert(b, bomb(true));
        let r = catch_unwind(AssertUnwindSafe(|| w.insert(b, bomb(false))));
        assert!(r.is_err(), "replacing drops the old, exploding value");
        assert!(w.has::<Bomb>(b));
        assert_eq!(w.query::<(&Bomb, &Pos)>().count(), 1);
    }
    assert_eq!(Arc::strong_count(&token), 1, "no Bomb leaked");
}
