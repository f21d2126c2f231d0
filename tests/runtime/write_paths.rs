//! Every write path of one system, interleaved with the plain `out.write`, which
//! remembers where each type's buffer is between writes: the results must be those of the
//! same writes made one by one, in emission order. Runs under Miri (Tree Borrows, strict
//! provenance) in `tools/reliability.sh miri-tb`: the remembered address, and the slot a
//! cursor keeps in the buffer's room, must never be used after another path reached the
//! buffer.

use runsync::prelude::*;

macro_rules! components {
    ($($name:ident),*) => {$(
        #[derive(Clone, Copy, Debug, PartialEq)]
        struct $name(u32);
        impl Component for $name {
            type Output = u32;
        }
    )*};
}
components!(A, B, C, D, E, F);

/// Each output appended as a decimal digit (wrapping), in merge order: the order is
/// visible.
fn digits(v: &mut u32, outs: &[u32]) {
    for &o in outs {
        *v = v.wrapping_mul(10).wrapping_add(o);
    }
}

fn world(n: u32) -> (World, Vec<Entity>) {
    let mut w = World::new();
    w.register::<A>(|a: &mut A, o: &[u32]| digits(&mut a.0, o));
    w.register::<B>(|b: &mut B, o: &[u32]| digits(&mut b.0, o));
    w.register::<C>(|c: &mut C, o: &[u32]| digits(&mut c.0, o));
    w.register::<D>(|d: &mut D, o: &[u32]| digits(&mut d.0, o));
    w.register::<E>(|e: &mut E, o: &[u32]| digits(&mut e.0, o));
    w.register::<F>(|f: &mut F, o: &[u32]| digits(&mut f.0, o));
    let es = (0..n)
        .map(|_| w.spawn((A(0), B(0), C(0), D(0), E(0), F(0))))
        .collect();
    (w, es)
}

/// One system, every path, `A` written between each: plain, writer, plain, row writes,
/// plain, write_each, plain, par_for_each, plain; and six types through the plain path,
/// more than it remembers at once.
fn all_paths(w: &World, out: &mut Output) {
    let es: Vec<Entity> = w.query::<(&A,)>().map(|(e, _)| e).collect();
    for &e in &es {
        out.write::<A>(e, 1);
    }
    {
        let mut wr = out.writer::<A>();
        for &e in &es {
            wr.write(e, 2);
        }
    }
    for &e in &es {
        out.write::<A>(e, 3);
    }
    for (_, (mut a,)) in out.query::<(Write<A>,)>() {
        a.set(4);
    }
    for &e in es.iter().rev() {
        out.write::<A>(e, 5);
    }
    out.write_each::<A, (&B,)>(|_, _| 6);
    for &e in &es {
        out.write::<A>(e, 7);
    }
    out.par_for_each::<(Write<A>,)>(|_, (mut a,), _| a.set(8));
    for &e in &es {
        out.write::<A>(e, 9);
        out.write::<B>(e, 1);
        out.write::<C>(e, 2);
        out.write::<D>(e, 3);
        out.write::<E>(e, 4);
        out.write::<F>(e, 5);
        out.write::<A>(e, 1);
        out.write::<B>(e, 6);
    }
}

#[test]
fn every_path_around_plain_writes_keeps_emission_order() {
    let n = if cfg!(miri) { 3 } else { 200 };
    for workers in [1, 2] {
        let (w, es) = world(n);
        let mut rt = Runtime::builder().workers(workers).build(w);
        rt.add_system(all_paths);
        for frame in 0..2 {
            rt.try_frame().expect("the frame runs");
            for &e in &es {
                let w = rt.world();
                // The digits of one frame, in emission order; each frame appends.
                let mut expect_a = 0;
                for _ in 0..=frame {
                    digits(&mut expect_a, &[1, 2, 3, 4, 5, 6, 7, 8, 9, 1]);
                }
                assert_eq!(
                    w.get::<A>(e),
                    Some(&A(expect_a)),
                    "A of {e:?}, frame {frame}, {workers} workers"
                );
                if frame == 0 {
                    assert_eq!(w.get::<B>(e), Some(&B(16)));
                    assert_eq!(w.get::<C>(e), Some(&C(2)));
                    assert_eq!(w.get::<D>(e), Some(&D(3)));
                    assert_eq!(w.get::<E>(e), Some(&E(4)));
                    assert_eq!(w.get::<F>(e), Some(&F(5)));
                }
            }
        }
    }
}

/// Counts its outputs: a component whose outputs are zero-sized.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Count(u32);
impl Component for Count {
    type Output = ();
}

/// A run handed from the plain path to a writer and back in the middle of a table: the
/// writer goes on where the plain writes stopped (the same run and the room kept for it),
/// past the room's end and into a second table, and writes to a dead entity are dropped
/// (and counted) on both paths without breaking the run around them.
#[test]
fn a_writer_goes_on_with_a_plain_run_and_hands_it_back() {
    let n = if cfg!(miri) { 12 } else { 300 };
    for workers in [1, 2] {
        let (mut w, _) = world(n);
        w.register::<Count>(|c: &mut Count, o: &[()]| c.0 += o.len() as u32);
        // Every third entity moves to a second table (it gains a `Count`).
        let counted: Vec<Entity> = w.query::<(&A,)>().map(|(e, _)| e).step_by(3).collect();
        for &e in &counted {
            assert!(w.insert(e, Count(0)));
        }
        let dead = w.spawn((A(0),));
        assert!(w.despawn(dead));
        let mut rt = Runtime::builder().workers(workers).build(w);
        rt.add_system(move |w: &World, out: &mut Output| {
            // Query order: the first table's rows, then the second's.
            let es: Vec<Entity> = w.query::<(&A,)>().map(|(e, _)| e).collect();
            let (k, m) = (es.len() / 3, 2 * es.len() / 3);
            for &e in &es[..k] {
                out.write::<A>(e, 1);
            }
            out.write::<A>(dead, 7);
            {
                let mut wr = out.writer::<A>();
                for &e in &es[k..m] {
                    wr.write(e, 1);
                }
                wr.write(dead, 7);
                for &e in &es[m..] {
                    wr.write(e, 1);
                }
            }
            for &e in &es {
                out.write::<A>(e, 2);
            }
            for (e, _) in w.query::<(&Count,)>() {
                out.write::<Count>(e, ());
                out.write::<Count>(e, ());
            }
            let mut wr = out.writer::<Count>();
            for (e, _) in w.query::<(&Count,)>() {
                wr.write(e, ());
            }
            wr.write(dead, ());
        });
        rt.try_frame().expect("the frame runs");
        assert_eq!(rt.stats().dropped, 3, "{workers} workers");
        let w = rt.world();
        for (e, (a, c)) in w.query::<(&A, Option<&Count>)>() {
            assert_eq!(*a, A(12), "A of {e:?}, {workers} workers");
            let expect = counted.contains(&e).then_some(Count(3));
            assert_eq!(c.copied(), expect, "Count of {e:?}, {workers} workers");
        }
        assert_eq!(w.query::<(&A,)>().count(), n as usize);
    }
}

/// A writer can go wherever its buffer can: to a scoped thread, or into a type that must
/// be `Send` or `Sync`.
#[test]
fn a_writer_is_send_and_sync() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<runsync::Writer<'static, 'static, A>>();
}

/// A panic in another path's closure, caught inside the system, leaves no plain cursor
/// pointing into a buffer that path changed: the plain writes after it go on in emission
/// order (under Miri, with no access outside a buffer's room).
#[test]
fn plain_writes_go_on_after_a_caught_panic_in_another_path() {
    use std::panic::{AssertUnwindSafe, catch_unwind};
    let n = if cfg!(miri) { 9 } else { 200 };
    let (w, _) = world(n);
    let mut rt = Runtime::builder().workers(1).build(w);
    rt.add_system(|w: &World, out: &mut Output| {
        let es: Vec<Entity> = w.query::<(&A,)>().map(|(e, _)| e).collect();
        let k = es.len() / 2;
        for &e in &es[..k] {
            out.write::<A>(e, 1);
        }
        let each = catch_unwind(AssertUnwindSafe(|| {
            out.write_each::<A, (&B,)>(|_, _| panic!("a failing closure"))
        }));
        assert!(each.is_err());
        let rows = catch_unwind(AssertUnwindSafe(|| {
            out.par_for_each::<(Write<A>,)>(|_, _, _| panic!("a failing closure"))
        }));
        assert!(rows.is_err());
        for &e in &es {
            out.write::<A>(e, 3);
        }
    });
    rt.try_frame().expect("the frame runs");
    let w = rt.world();
    let es: Vec<Entity> = w.query::<(&A,)>().map(|(e, _)| e).collect();
    for (i, &e) in es.iter().enumerate() {
        let expect = if i < es.len() / 2 { 13 } else { 3 };
        assert_eq!(w.get::<A>(e), Some(&A(expect)), "A of row {i}");
    }
}
