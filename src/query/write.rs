//! The write element of [`Output::query`](crate::Output::query): [`Write<C>`], the row's
//! output slot for `C`.
//!
//! Its state holds the system's output buffer for `C` for the length of the query (taken
//! out of the system's outputs by [`Source::take_out`], given back by
//! [`Fetch::release`]); its part of each table is a pending column of that buffer (see
//! `output::slots`); `get` hands out the row's [`Slot`].

use std::marker::PhantomData;

use super::fetch::{Fetch, QueryOut};
use super::state::{Source, TableRef};
use crate::component::{Component, ComponentId};
use crate::output::buffer::{OutBuf, SystemOutputs};
use crate::output::erased::ErasedBuf;
use crate::output::slots::{Slot, SlotBase};

/// A query element of [`Output::query`](crate::Output::query): the row's output slot for
/// `C`. Matches entities that have a `C` (like `&C`) and yields a [`Slot`], whose
/// [`set`](Slot::set) emits the row's `C` output for this frame.
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

/// The state of a [`Write<C>`] element: `C`'s id and, while the query runs, the system's
/// buffer for `C`.
pub struct WriteState<C: Component> {
    id: ComponentId,
    buf: Option<Box<OutBuf<C>>>,
}

impl<C: Component> Fetch for Write<C> {
    type Out<'w> = Slot<'w, C::Output>;
    type State<'w> = WriteState<C>;
    type Columns<'w> = SlotBase<C::Output>;

    #[track_caller]
    fn init<'w>(source: &mut Source<'w>) -> Self::State<'w> {
        let id = source.id::<C>();
        WriteState {
            id,
            buf: Some(source.take_out::<C>(id)),
        }
    }
    fn for_each_filter(state: &Self::State<'_>, f: &mut dyn FnMut(ComponentId, bool)) {
        f(state.id, true)
    }
    #[inline]
    fn matches(state: &Self::State<'_>, table: TableRef<'_>) -> bool {
        table.has(state.id)
    }
    #[inline]
    fn columns<'w>(state: &mut Self::State<'w>, table: TableRef<'w>) -> Self::Columns<'w> {
        let col = table
            .column(state.id)
            .expect("a matching table holds every required type");
        state
            .buf
            .as_mut()
            .expect("the buffer is held until the query ends")
            .slots(col, table.len())
    }
    #[inline]
    fn no_columns<'w>() -> Self::Columns<'w> {
        SlotBase::none()
    }
    #[inline(always)]
    unsafe fn get<'w>(columns: &mut Self::Columns<'w>, row: usize) -> Self::Out<'w> {
        columns.slot(row)
    }
    fn release(state: &mut Self::State<'_>, outputs: &mut SystemOutputs) {
        if let Some(buf) = state.buf.take() {
            outputs.buffers[state.id.index()] = Some(ErasedBuf::from_typed(buf));
        }
    }
}

impl<C: Component> QueryOut for Write<C> {
    type Item<'w> = Slot<'w, C::Output>;
}
