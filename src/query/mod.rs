//! Queries: the entities that have a set of components, and those components, row by row.
//!
//! A query is a tuple of up to 12 *elements*: `&C` (entities that have `C`; yields `&C`),
//! `Option<&C>` (any entity; yields `Option<&C>`), the table filters [`With<C>`] and
//! [`Without<C>`] and the row filters [`Changed<C>`] and [`Added<C>`] (yield `()`), and,
//! through `&mut World` only, `&mut C` and `Option<&mut C>`, and through a system's
//! `Output` only, [`Write<C>`] (the row's write handle).
//! [`World::query`](crate::World::query) and
//! [`World::query_filtered`](crate::World::query_filtered) take the read-only ones
//! ([`QueryData`]); [`World::query_mut`](crate::World::query_mut) takes them all but
//! `Write` ([`QueryMut`]); [`Output::query`](crate::Output::query) and
//! `Output::par_for_each` take the read-only ones and `Write` ([`QueryOut`]). The three
//! traits are sealed faces of one crate-private engine, so a query means the same thing
//! whichever way it is run.
//!
//! **Order.** Iteration visits matching tables in creation order and rows in table order,
//! so the order depends only on the world's contents and history, never on threads; it
//! is the same for `query`, `query_filtered`, `query_mut`, `Output::write_each` and
//! `Output::par_for_each` (whose chunks are concatenated in that order).
//!
//! **Matching.** Table filters (`&C`, `With`, `Without`) decide per table; row filters
//! (`Changed`, `Added`) also test one bit per row of the tables that pass, and skip a
//! table none of whose rows is marked without visiting its rows. A query without row
//! filters compiles to the same loop as before they existed (whether an element filters
//! rows is a constant). Matching is cached per component type: see `state.rs` for the
//! cache and the masks; `write.rs` for the write element, `Write<C>`.
//!
//! **Mutable queries** ([`World::query_mut`](crate::World::query_mut)) are for the owner between frames: setup,
//! loading, editors, tools, as in hecs:
//! `for (e, (pos, vel)) in world.query_mut::<(&mut Pos, &Vel)>()`. They are safe code: the
//! query takes the one `&mut` to each named type's column vectors (a type that is read or
//! written may be named once, or the call panics), and hands out each table's column of
//! it once, tables in creation order (see `fetch::ColumnWalk`). Systems cannot use it —
//! they get `&World` — so this does not compile:
//!
//! ```compile_fail
//! use runsync::prelude::*;
//! #[derive(Clone, Copy)] struct Pos(f32);
//! impl Component for Pos { type Output = Pos; }
//! let mut rt = Runtime::builder().build(World::new());
//! rt.add_system(|world: &World, _out: &mut Output| {
//!     for (_e, (p,)) in world.query_mut::<(&mut Pos,)>() { p.0 += 1.0; }
//! });
//! ```
//!
//! Nor does asking a shared query for `&mut C` (see [`QueryData`]).
//!
//! The files: `fetch.rs` (the engine and the component elements), `filter.rs` (the
//! filters), `write.rs` (the write element), `state.rs` (borrowing columns,
//! matching tables), `iter.rs` (the iterators).

mod fetch;
mod filter;
mod iter;
mod state;
mod write;

pub use fetch::{QueryData, QueryMut, QueryOut};
pub use filter::{Added, Changed, With, Without};
pub(crate) use iter::keeps;
pub use iter::{QueryFiltered, QueryIter, QueryMutIter, QueryOutIter};
pub(crate) use state::QueryState;
pub use write::Write;

#[cfg(test)]
mod tests {
    use crate::prelude::*;

    #[derive(Clone, Copy, Debug, PartialEq)]
    struct Many<const N: usize>(u32);
    impl<const N: usize> Component for Many<N> {
        type Output = Many<N>;
    }

    type P = Many<0>;
    type V = Many<1>;
    type T = Many<2>;

    /// Tables `(P, V)`, `(P,)`, `(P, V, T)`, `(V,)` with holes from despawns and moves.
    fn mixed() -> World {
        let mut w = World::new();
        w.register::<P>(merge::last);
        w.register::<V>(merge::last);
        w.register::<T>(merge::last);
        let mut es = Vec::new();
        for i in 0..120 {
            es.push(match i % 4 {
                0 => w.spawn((Many::<0>(i), Many::<1>(i))),
                1 => w.spawn((Many::<0>(i),)),
                2 => w.spawn((Many::<0>(i), Many::<1>(i), Many::<2>(i))),
                _ => w.spawn((Many::<1>(i),)),
            });
        }
        for e in es.iter().step_by(7) {
            w.despawn(*e);
        }
        w.insert(es[5], Many::<2>(0));
        w.remove::<V>(es[10]);
        w
    }

    /// `query_mut` visits what `query` visits, in the same order, through `next` and
    /// `fold`, with required and optional writes.
    #[test]
    fn query_mut_walks_like_query() {
        let mut w = mixed();
        let seen: Vec<(Entity, u32, Option<u32>)> = w
            .query::<(&P, Option<&V>)>()
            .map(|(e, (p, v))| (e, p.0, v.map(|v| v.0)))
            .collect();
        let mut walked = Vec::new();
        for (e, (p, v)) in w.query_mut::<(&mut P, Option<&mut V>)>() {
            walked.push((e, p.0, v.as_ref().map(|v| v.0)));
            p.0 += 1000;
            if let Some(v) = v {
                v.0 += 2000;
            }
        }
        assert_eq!(walked, seen);
        let folded = w
            .query_mut::<(&mut P, Without<T>)>()
            .fold(0, |n, (_, (p, ()))| {
                p.0 += 1000;
                n + 1
            });
        assert_eq!(folded, w.query::<(&P, Without<T>)>().count());
        for (e, p, v) in seen {
            let bump = if w.get::<T>(e).is_some() { 1000 } else { 2000 };
            assert_eq!(w.get::<P>(e), Some(&Many(p + bump)));
            assert_eq!(w.get::<V>(e).map(|v| v.0), v.map(|v| v + 2000));
        }
    }

    /// Row filters in `query_mut`, before or after a write of the same type, skip the
    /// unmarked rows of every element (a `&mut` column walked with gaps).
    #[test]
    fn query_mut_filters_rows() {
        let w = mixed();
        let written: Vec<Entity> = w.query::<(&P,)>().map(|(e, _)| e).step_by(3).collect();
        let mut rt = Runtime::builder().build(w);
        let targets = written.clone();
        let mut once = true;
        rt.add_system(move |_: &World, out: &mut Output| {
            if std::mem::take(&mut once) {
                for &e in &targets {
                    out.write::<P>(e, Many(7));
                }
            }
        });
        rt.frame();
        let w = rt.world_mut();
        let changed: Vec<Entity> = w
            .query_mut::<(&mut P, Changed<P>)>()
            .map(|(e, (p, ()))| {
                p.0 += 1;
                e
            })
            .collect();
        assert_eq!(changed, written);
        let mut changed_first = Vec::new();
        for (e, ((), v, p)) in w.query_mut::<(Changed<P>, Option<&mut V>, &mut P)>() {
            assert_eq!(p.0, 8);
            if let Some(v) = v {
                v.0 = 0;
            }
            changed_first.push(e);
        }
        assert_eq!(changed_first, written);
        assert_eq!(w.query_mut::<(&P, Added<P>)>().count(), 0);
        for &e in &written {
            assert!(w.get::<V>(e).is_none_or(|v| v.0 == 0));
        }
    }

    #[test]
    #[should_panic(expected = "query_mut names component type")]
    fn query_mut_reading_a_type_twice_panics() {
        let mut w = mixed();
        let _ = w.query_mut::<(&P, Option<&P>)>();
    }

    /// Types with ids beyond a mask's inline bit array (128) spill in table signatures
    /// and make a query "wide": matching must still be exact on both sides of the
    /// boundary.
    #[test]
    fn queries_over_more_types_than_the_inline_mask() {
        let mut w = World::new();
        w.register::<Many<0>>(merge::last);
        w.register::<Many<1>>(merge::last);
        w.register::<Many<2>>(merge::last);
        w.register::<Many<3>>(merge::last);
        w.register::<Many<4>>(merge::last);
        w.register::<Many<5>>(merge::last);
        w.register::<Many<6>>(merge::last);
        w.register::<Many<7>>(merge::last);
        w.register::<Many<8>>(merge::last);
        w.register::<Many<9>>(merge::last);
        w.register::<Many<10>>(merge::last);
        w.register::<Many<11>>(merge::last);
        w.register::<Many<12>>(merge::last);
        w.register::<Many<13>>(merge::last);
        w.register::<Many<14>>(merge::last);
        w.register::<Many<15>>(merge::last);
        w.register::<Many<16>>(merge::last);
        w.register::<Many<17>>(merge::last);
        w.register::<Many<18>>(merge::last);
        w.register::<Many<19>>(merge::last);
        w.register::<Many<20>>(merge::last);
        w.register::<Many<21>>(merge::last);
        w.register::<Many<22>>(merge::last);
        w.register::<Many<23>>(merge::last);
        w.register::<Many<24>>(merge::last);
        w.register::<Many<25>>(merge::last);
        w.register::<Many<26>>(merge::last);
        w.register::<Many<27>>(merge::last);
        w.register::<Many<28>>(merge::last);
        w.register::<Many<29>>(merge::last);
        w.register::<Many<30>>(merge::last);
        w.register::<Many<31>>(merge::last);
        w.register::<Many<32>>(merge::last);
        w.register::<Many<33>>(merge::last);
        w.register::<Many<34>>(merge::last);
        w.register::<Many<35>>(merge::last);
        w.register::<Many<36>>(merge::last);
        w.register::<Many<37>>(merge::last);
        w.register::<Many<38>>(merge::last);
        w.register::<Many<39>>(merge::last);
        w.register::<Many<40>>(merge::last);
        w.register::<Many<41>>(merge::last);
        w.register::<Many<42>>(merge::last);
        w.register::<Many<43>>(merge::last);
        w.register::<Many<44>>(merge::last);
        w.register::<Many<45>>(merge::last);
        w.register::<Many<46>>(merge::last);
        w.register::<Many<47>>(merge::last);
        w.register::<Many<48>>(merge::last);
        w.register::<Many<49>>(merge::last);
        w.register::<Many<50>>(merge::last);
        w.register::<Many<51>>(merge::last);
        w.register::<Many<52>>(merge::last);
        w.register::<Many<53>>(merge::last);
        w.register::<Many<54>>(merge::last);
        w.register::<Many<55>>(merge::last);
        w.register::<Many<56>>(merge::last);
        w.register::<Many<57>>(merge::last);
        w.register::<Many<58>>(merge::last);
        w.register::<Many<59>>(merge::last);
        w.register::<Many<60>>(merge::last);
        w.register::<Many<61>>(merge::last);
        w.register::<Many<62>>(merge::last);
        w.register::<Many<63>>(merge::last);
        w.register::<Many<64>>(merge::last);
        w.register::<Many<65>>(merge::last);
        w.register::<Many<66>>(merge::last);
        w.register::<Many<67>>(merge::last);
        w.register::<Many<68>>(merge::last);
        w.register::<Many<69>>(merge::last);
        w.register::<Many<70>>(merge::last);
        w.register::<Many<71>>(merge::last);
        w.register::<Many<72>>(merge::last);
        w.register::<Many<73>>(merge::last);
        w.register::<Many<74>>(merge::last);
        w.register::<Many<75>>(merge::last);
        w.register::<Many<76>>(merge::last);
        w.register::<Many<77>>(merge::last);
        w.register::<Many<78>>(merge::last);
        w.register::<Many<79>>(merge::last);
        w.register::<Many<80>>(merge::last);
        w.register::<Many<81>>(merge::last);
        w.register::<Many<82>>(merge::last);
        w.register::<Many<83>>(merge::last);
        w.register::<Many<84>>(merge::last);
        w.register::<Many<85>>(merge::last);
        w.register::<Many<86>>(merge::last);
        w.register::<Many<87>>(merge::last);
        w.register::<Many<88>>(merge::last);
        w.register::<Many<89>>(merge::last);
        w.register::<Many<90>>(merge::last);
        w.register::<Many<91>>(merge::last);
        w.register::<Many<92>>(merge::last);
        w.register::<Many<93>>(merge::last);
        w.register::<Many<94>>(merge::last);
        w.register::<Many<95>>(merge::last);
        w.register::<Many<96>>(merge::last);
        w.register::<Many<97>>(merge::last);
        w.register::<Many<98>>(merge::last);
        w.register::<Many<99>>(merge::last);
        w.register::<Many<100>>(merge::last);
        w.register::<Many<101>>(merge::last);
        w.register::<Many<102>>(merge::last);
        w.register::<Many<103>>(merge::last);
        w.register::<Many<104>>(merge::last);
        w.register::<Many<105>>(merge::last);
        w.register::<Many<106>>(merge::last);
        w.register::<Many<107>>(merge::last);
        w.register::<Many<108>>(merge::last);
        w.register::<Many<109>>(merge::last);
        w.register::<Many<110>>(merge::last);
        w.register::<Many<111>>(merge::last);
        w.register::<Many<112>>(merge::last);
        w.register::<Many<113>>(merge::last);
        w.register::<Many<114>>(merge::last);
        w.register::<Many<115>>(merge::last);
        w.register::<Many<116>>(merge::last);
        w.register::<Many<117>>(merge::last);
        w.register::<Many<118>>(merge::last);
        w.register::<Many<119>>(merge::last);
        w.register::<Many<120>>(merge::last);
        w.register::<Many<121>>(merge::last);
        w.register::<Many<122>>(merge::last);
        w.register::<Many<123>>(merge::last);
        w.register::<Many<124>>(merge::last);
        w.register::<Many<125>>(merge::last);
        w.register::<Many<126>>(merge::last);
        w.register::<Many<127>>(merge::last);
        w.register::<Many<128>>(merge::last);
        w.register::<Many<129>>(merge::last);
        let a = w.spawn((Many::<0>(1), Many::<128>(2)));
        let b = w.spawn((Many::<0>(3), Many::<129>(4)));
        let c = w.spawn((Many::<127>(5), Many::<129>(6)));
        let q: Vec<Entity> = w
            .query::<(&Many<0>, &Many<128>)>()
            .map(|(e, _)| e)
            .collect();
        assert_eq!(q, [a]);
        let q: Vec<Entity> = w
            .query::<(&Many<129>, Without<Many<0>>)>()
            .map(|(e, _)| e)
            .collect();
        assert_eq!(q, [c]);
        let q: Vec<Entity> = w
            .query::<(&Many<0>, Without<Many<128>>)>()
            .map(|(e, _)| e)
            .collect();
        assert_eq!(q, [b]);
        let q: Vec<Entity> = w
            .query::<(&Many<129>, With<Many<127>>)>()
            .map(|(e, _)| e)
            .collect();
        assert_eq!(q, [c]);
        let q: Vec<Entity> = w
            .query::<(Option<&Many<128>>, With<Many<0>>)>()
            .map(|(e, _)| e)
            .collect();
        assert_eq!(q, [a, b]);
        assert_eq!(w.get::<Many<129>>(b), Some(&Many(4)));
        let q: Vec<Entity> = w
            .query_mut::<(&mut Many<129>, Without<Many<0>>)>()
            .map(|(e, (m, ()))| {
                m.0 += 1;
                e
            })
            .collect();
        assert_eq!(q, [c]);
        assert_eq!(w.get::<Many<129>>(c), Some(&Many(7)));
    }
}
