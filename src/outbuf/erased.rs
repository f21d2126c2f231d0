//! [`ErasedBuf`]: a type-erased output buffer that remembers its concrete type.
//!
//! and [`BufAddr`]: where a typed buffer is, remembered by the plain write path.
//!
//! The plain write path (`Output::write::<C>`) runs once per output — tens of millions of
//! times per second — and needs the system's typed buffer for `C` each time. `dyn Any`
//! downcasting costs two dynamic calls per write (`as_any_mut`, then `type_id`); here the
//! box keeps the `TypeId` of its contents beside it, so getting back to the typed buffer is
//! one compare of two `TypeId`s and a pointer cast, exactly what `downcast_mut` does after
//! its dynamic call. `Output` goes one step further: it finds the buffer once per type and
//! system run and keeps its address ([`BufAddr`]) beside the type it already compares,
//! which saves the buffer list's bounds and presence checks and the `TypeId` compare on
//! every later write. Covered by Miri (the lib tests and every integration suite that
//! writes outputs).

use std::any::TypeId;
use std::ptr::NonNull;

use super::buffer::{AnyBuffer, OutBuf};
use crate::component::Component;

/// A boxed [`OutBuf`] of some component type, with the `TypeId` of that `OutBuf`.
pub(crate) struct ErasedBuf {
    /// `TypeId::of::<OutBuf<C>>()` for the `C` that `buf` was created with. Set together
    /// with `buf` (in [`new`](Self::new) and [`from_typed`](Self::from_typed)), and neither
    /// field is ever assigned on its own.
    ty: TypeId,
    buf: Box<dyn AnyBuffer>,
}

impl ErasedBuf {
    /// An empty buffer for `C`.
    pub(crate) fn new<C: Component>() -> Self {
        Self::from_typed::<C>(Box::default())
    }

    /// Erases a typed buffer.
    pub(crate) fn from_typed<C: Component>(buf: Box<OutBuf<C>>) -> Self {
        ErasedBuf {
            ty: TypeId::of::<OutBuf<C>>(),
            buf,
        }
    }

    /// The buffer as `OutBuf<C>`.
    ///
    /// # Panics
    /// If it holds another type (a component id reused for another type, e.g. after
    /// replacing a runtime's whole world).
    #[inline(always)]
    pub(crate) fn typed_mut<C: Component>(&mut self) -> &mut OutBuf<C> {
        if self.ty != TypeId::of::<OutBuf<C>>() {
            wrong_type();
        }
        let p = &mut *self.buf as *mut dyn AnyBuffer as *mut OutBuf<C>;
        // SAFETY: `self.ty` is the `TypeId` of the concrete type of `*self.buf` (both are
        // set together from one `Box<OutBuf<C>>` and never changed apart), and it equals
        // `TypeId::of::<OutBuf<C>>()`, so the pointee is an `OutBuf<C>`; dropping the
        // vtable of the fat pointer keeps its address and provenance. The pointer comes
        // from a unique borrow of the box that `&mut self` keeps alive for the returned
        // lifetime, so the returned reference is the only access to the buffer.
        unsafe { &mut *p }
    }

    /// The buffer as a trait object.
    #[inline]
    pub(crate) fn as_dyn(&mut self) -> &mut dyn AnyBuffer {
        &mut *self.buf
    }

    /// The buffer as a trait object.
    #[inline]
    pub(crate) fn as_dyn_ref(&self) -> &dyn AnyBuffer {
        &*self.buf
    }

    /// The box, for its fold (which downcasts it once per frame).
    pub(crate) fn into_box(self) -> Box<dyn AnyBuffer> {
        self.buf
    }
}

#[cold]
#[inline(never)]
fn wrong_type() -> ! {
    panic!(
        "runsync: an output buffer holds another component type than its id now names; \
         a system's buffers belong to the world it first wrote to (do not replace a \
         runtime's world with one that registered types in another order)"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    struct A;
    impl Component for A {
        type Output = u64;
    }
    struct B;
    impl Component for B {
        type Output = u8;
    }

    #[test]
    fn typed_round_trip() {
        let mut e = ErasedBuf::new::<A>();
        e.typed_mut::<A>().start_run(0, 0, true);
        e.typed_mut::<A>().push_in_run(7);
        assert_eq!(e.as_dyn_ref().writes(), 1);
        assert_eq!(e.typed_mut::<A>().len(), 1);
    }

    #[test]
    #[should_panic(expected = "another component type")]
    fn wrong_type_panics() {
        ErasedBuf::new::<A>().typed_mut::<B>();
    }
}

/// The address of a typed [`OutBuf`], found once by [`Output`](crate::Output) and used
/// for its later plain writes of that type; or none.
///
/// The address is taken from a `&mut OutBuf<C>` ([`of`](Self::of)) and used as one again
/// ([`get`](Self::get)); in between, nothing else may touch the buffer: whoever holds a
/// `BufAddr` forgets it (sets [`NONE`](Self::NONE)) when the buffer is reached any other
/// way, before using it again (under Tree Borrows, another `&mut` to the buffer ends this
/// one's right to write).
#[derive(Clone, Copy)]
pub(crate) struct BufAddr(Option<NonNull<()>>);

impl BufAddr {
    /// No buffer: [`get`](Self::get) returns `None`.
    pub(crate) const NONE: BufAddr = BufAddr(None);

    /// Where `buf` is.
    #[inline(always)]
    pub(crate) fn of<C: Component>(buf: &mut OutBuf<C>) -> Self {
        BufAddr(Some(NonNull::from(buf).cast()))
    }

    /// The buffer, if there is an address.
    ///
    /// # Safety
    /// `self` was made by [`of::<C>`](Self::of) (the same `C`) from a buffer that is still
    /// alive and has not moved, no access to that buffer other than through `self` has
    /// happened since, and the returned reference is the only one used until it is gone.
    #[inline(always)]
    pub(crate) unsafe fn get<'a, C: Component>(self) -> Option<&'a mut OutBuf<C>> {
        // SAFETY: the caller's contract: the pointer came from a unique `&mut OutBuf<C>`
        // whose pointee still lives at that address, and no other access since has
        // ended the uniqueness of this one.
        self.0.map(|p| unsafe { p.cast::<OutBuf<C>>().as_mut() })
    }
}
