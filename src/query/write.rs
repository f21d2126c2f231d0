//! The write element of [`Output::query`](crate::Output::query): [`Write<C>`], the row's
//! write handle for `C`.
//!
//! Its state points at the system's output buffer for `C`, which stays in the system's
//! outputs (see [`Source::out_buf`]); its part of each table is row writes in a pending
//! column of that buffer (see `output::buffer::row_writes`); `get` hands out the row's
//! [`RowWrite`]. Nothing of it needs dropping or handing back, so a query iterator
//! holding it has no drop glue: the compiler keeps the loop's row state in registers even
//! when the loop body may panic.

use std::marker::PhantomData;
use std::ptr::NonNull;

use super::fetch::{Fetch, QueryOut};
use super::state::{Source, TableRef};
use crate::component::{Component, ComponentId};
use crate::output::buffer::OutBuf;
use crate::output::buffer::row_writes::{RowWrite, RowWrites};

/// A query element of [`Output::query`](crate::Output::query): the row's write handle for
/// `C`. Matches entities that have a `C` (like `&C`) and yields a [`RowWrite`], whose
/// [`set`](RowWrite::set) emits the row's `C` output for this frame.
///
/// ```
/// # use runsync::prelude::*;
/// # #[derive(Clone, Copy, Debug, PartialEq)] struct Pos(f32);
/// # impl Component for Pos { type Output = Pos; }
/// # #[derive(Clone, Copy, Debug, PartialEq)] struct Vel(f32);
/// # impl Component for Vel { type Output = Vel; }
/// # let mut world = World::new();
/// # world.register::<Pos>(merge::last);
/// # world.register::<Vel>(merge::last);
/// # let e = world.spawn((Pos(1.0), Vel(2.0)));
/// # let mut rt = Runtime::builder().build(world);
/// rt.add_system(|_: &World, out: &mut Output| {
///     for (_e, (p, v, mut pos)) in out.query::<(&Pos, &Vel, Write<Pos>)>() {
///         pos.set(Pos(p.0 + v.0));
///     }
/// });
/// rt.frame();
/// # assert_eq!(rt.world().get::<Pos>(e), Some(&Pos(3.0)));
/// ```
pub struct Write<C>(PhantomData<fn() -> C>);

/// The state of a [`Write<C>`] element: `C`'s id and the system's buffer for `C`.
pub struct WriteState<'w, C: Component> {
    id: ComponentId,
    /// From [`Source::out_buf`]: valid, and used by this element only, for `'w`.
    buf: NonNull<OutBuf<C>>,
    _outputs: PhantomData<&'w mut OutBuf<C>>,
}

impl<C: Component> Fetch for Write<C> {
    type Out<'w> = RowWrite<'w, C::Output>;
    type State<'w> = WriteState<'w, C>;
    type Columns<'w> = RowWrites<C::Output>;

    #[track_caller]
    fn init<'w>(source: &mut Source<'w>) -> Self::State<'w> {
        let id = source.id::<C>();
        WriteState {
            id,
            buf: source.out_buf::<C>(id),
            _outputs: PhantomData,
        }
    }
    #[inline]
    fn filter(state: &Self::State<'_>) -> Option<(ComponentId, bool)> {
        Some((state.id, true))
    }
    #[inline]
    fn columns<'w>(state: &mut Self::State<'w>, table: TableRef<'w>) -> Self::Columns<'w> {
        let col = table
            .column(state.id)
            .expect("a matching table holds every required type");
        // SAFETY: `buf` comes from `Source::out_buf`: the buffer lives, unmoved, for
        // `'w`, the query borrows the system's outputs exclusively for `'w`, and no other
        // element of the query writes `C`; so this is the only reference to it now.
        let buf = unsafe { state.buf.as_mut() };
        buf.row_writes(col, table.len())
    }
    #[inline]
    fn no_columns<'w>() -> Self::Columns<'w> {
        RowWrites::none()
    }
    #[inline(always)]
    unsafe fn get<'w>(columns: &mut Self::Columns<'w>, row: usize) -> Self::Out<'w> {
        columns.row(row)
    }
}

impl<C: Component> QueryOut for Write<C> {
    type Item<'w> = RowWrite<'w, C::Output>;
}
