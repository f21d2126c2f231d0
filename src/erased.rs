//! [`Erased`]: the crate's one type-erased buffer, and [`Buffer`], what it can hold.
//!
//! Every place that keeps values of a type it does not name — a system's output buffer of
//! one component type, its resource outputs and sent messages, a command list's insert
//! and spawn values — keeps them in an [`Erased`]: a box of some [`Buffer`] (a `Vec<T>`,
//! a `VecDeque<T>`, an `OutBuf<C>`, a `MsgBuf<M>`) with the `TypeId` of that buffer
//! beside it. What needs no type (its length, clearing it, appending another buffer of the
//! same type, an empty one like it, its capacity) is one dynamic call; the typed buffer is
//! one checked downcast ([`typed_mut`](Erased::typed_mut)), taken once where the typed
//! code starts (per buffer and frame in Sync, once per type and system run on the write
//! path) and kept, never per value.
//!
//! The downcast compares the stored `TypeId` and casts the pointer: one compare, where
//! `dyn Any` would make a dynamic call for the pointee's `TypeId` first. Covered by Miri
//! (the lib tests and every integration suite that writes outputs).

use std::any::TypeId;
use std::collections::VecDeque;

/// A container of values that an [`Erased`] can hold: what Sync and the output buffers do
/// with a buffer whose type they do not name.
pub(crate) trait Buffer: Default + Send + Sync + 'static {
    /// Values held (for an output buffer: writes kept plus writes dropped).
    fn len(&self) -> usize;
    /// Drops every value, keeping capacity.
    fn clear(&mut self);
    /// Moves all of `other`'s values behind `self`'s, leaving `other` empty.
    fn append(&mut self, other: &mut Self);
    /// Bytes reserved.
    fn capacity_bytes(&self) -> usize;
    /// Makes every value visible to [`len`](Self::len) and to Sync (an output buffer
    /// settles its pending row writes); returns `len`. Nothing to do for plain
    /// containers.
    fn seal(&mut self) -> usize {
        self.len()
    }
}

impl<T: Send + Sync + 'static> Buffer for Vec<T> {
    fn len(&self) -> usize {
        Vec::len(self)
    }
    fn clear(&mut self) {
        Vec::clear(self);
    }
    fn append(&mut self, other: &mut Self) {
        Vec::append(self, other);
    }
    fn capacity_bytes(&self) -> usize {
        self.capacity() * size_of::<T>()
    }
}

impl<T: Send + Sync + 'static> Buffer for VecDeque<T> {
    fn len(&self) -> usize {
        VecDeque::len(self)
    }
    fn clear(&mut self) {
        VecDeque::clear(self);
    }
    fn append(&mut self, other: &mut Self) {
        VecDeque::append(self, other);
    }
    fn capacity_bytes(&self) -> usize {
        self.capacity() * size_of::<T>()
    }
}

/// The object-safe face of every [`Buffer`]: one blanket impl, the only one.
trait AnyBuf: Send + Sync {
    fn len(&self) -> usize;
    fn clear(&mut self);
    fn seal(&mut self) -> usize;
    fn empty_like(&self) -> Erased;
    /// Appends `other`, which holds the same type (checked: the one downcast).
    fn append_erased(&mut self, other: &mut Erased);
    fn capacity_bytes(&self) -> usize;
}

impl<B: Buffer> AnyBuf for B {
    fn len(&self) -> usize {
        Buffer::len(self)
    }
    fn clear(&mut self) {
        Buffer::clear(self);
    }
    fn seal(&mut self) -> usize {
        Buffer::seal(self)
    }
    fn empty_like(&self) -> Erased {
        Erased::new(B::default())
    }
    fn append_erased(&mut self, other: &mut Erased) {
        self.append(other.typed_mut::<B>());
    }
    fn capacity_bytes(&self) -> usize {
        Buffer::capacity_bytes(self)
    }
}

/// A boxed [`Buffer`] of some type, with that type's `TypeId`.
pub(crate) struct Erased {
    /// `TypeId::of::<B>()` for the `B` that `buf` was created with. Set together with
    /// `buf` (in [`from_box`](Self::from_box)), and neither field is ever assigned on its
    /// own.
    ty: TypeId,
    buf: Box<dyn AnyBuf>,
}

impl Erased {
    /// Erases `buf`.
    pub(crate) fn new<B: Buffer>(buf: B) -> Self {
        Self::from_box(Box::new(buf))
    }

    /// Erases a boxed buffer (no new allocation).
    pub(crate) fn from_box<B: Buffer>(buf: Box<B>) -> Self {
        Erased {
            ty: TypeId::of::<B>(),
            buf,
        }
    }

    /// Whether it holds a `B`.
    #[inline(always)]
    pub(crate) fn is<B: Buffer>(&self) -> bool {
        self.ty == TypeId::of::<B>()
    }

    /// The buffer as `B`: the one downcast.
    ///
    /// # Panics
    /// If it holds another type (an index reused for another type, e.g. after replacing
    /// a runtime's whole world; see [`wrong_type`]).
    #[inline(always)]
    pub(crate) fn typed_mut<B: Buffer>(&mut self) -> &mut B {
        if !self.is::<B>() {
            wrong_type::<B>();
        }
        let p = &mut *self.buf as *mut dyn AnyBuf as *mut B;
        // SAFETY: `self.ty` is the `TypeId` of the concrete type of `*self.buf` (both are
        // set together from one `Box<B>` and never changed apart), and it equals
        // `TypeId::of::<B>()`, so the pointee is a `B`; dropping the vtable of the fat
        // pointer keeps its address and provenance. The pointer comes from a unique
        // borrow of the box that `&mut self` keeps alive for the returned lifetime, so the
        // returned reference is the only access to the buffer.
        unsafe { &mut *p }
    }

    /// [`typed_mut`](Self::typed_mut), shared.
    ///
    /// # Panics
    /// If it holds another type.
    #[inline(always)]
    pub(crate) fn typed<B: Buffer>(&self) -> &B {
        if !self.is::<B>() {
            wrong_type::<B>();
        }
        let p = &*self.buf as *const dyn AnyBuf as *const B;
        // SAFETY: as in `typed_mut`: the pointee is a `B`; the pointer comes from a shared
        // borrow of the box that `&self` keeps alive for the returned lifetime.
        unsafe { &*p }
    }

    /// The box as `B`, for a fold that keeps it typed (no new allocation).
    ///
    /// # Panics
    /// If it holds another type.
    pub(crate) fn into_typed<B: Buffer>(self) -> Box<B> {
        if !self.is::<B>() {
            wrong_type::<B>();
        }
        let p = Box::into_raw(self.buf) as *mut B;
        // SAFETY: the pointee is a `B` (as in `typed_mut`), and the pointer comes from
        // `Box::into_raw` of a box that allocated it as one (a `Box<B>` unsized to
        // `Box<dyn AnyBuf>`, with `B`'s layout), so `Box::from_raw` owns it again.
        unsafe { Box::from_raw(p) }
    }

    /// Values held; for an output buffer, writes kept plus writes dropped.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.buf.len()
    }

    /// Drops every value, keeping capacity.
    #[inline]
    pub(crate) fn clear(&mut self) {
        self.buf.clear();
    }

    /// Settles pending values (an output buffer's row writes) and returns
    /// [`len`](Self::len).
    #[inline]
    pub(crate) fn seal(&mut self) -> usize {
        self.buf.seal()
    }

    /// A new empty buffer of the same type.
    pub(crate) fn empty_like(&self) -> Erased {
        self.buf.empty_like()
    }

    /// Moves all of `other`'s values behind `self`'s.
    ///
    /// # Panics
    /// If `other` holds another type.
    pub(crate) fn append(&mut self, other: &mut Erased) {
        self.buf.append_erased(other);
    }

    /// Bytes reserved by the buffer.
    pub(crate) fn capacity_bytes(&self) -> usize {
        self.buf.capacity_bytes()
    }

    /// The buffer in `place`, created empty on first use, as `B`.
    #[inline]
    pub(crate) fn get_or_new<B: Buffer>(place: &mut Option<Erased>) -> &mut B {
        place
            .get_or_insert_with(|| Erased::new(B::default()))
            .typed_mut()
    }

    /// Appends `theirs` (if any) to `mine`, creating `mine` empty like it first: what
    /// merging two lists of buffers by index does for each index.
    pub(crate) fn append_into(mine: &mut Option<Erased>, theirs: &mut Option<Erased>) {
        if let Some(theirs) = theirs {
            mine.get_or_insert_with(|| theirs.empty_like())
                .append(theirs);
        }
    }
}

#[cold]
#[inline(never)]
#[track_caller]
fn wrong_type<B>() -> ! {
    panic!(
        "runsync: a buffer holds another type than `{}`; a system's buffers belong to \
         the world it first wrote to (do not replace a runtime's world with one that \
         registered types in another order)",
        std::any::type_name::<B>()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typed_access_appends_and_round_trips() {
        let mut a = Erased::new(vec![1u32, 2]);
        let mut b = a.empty_like();
        b.typed_mut::<Vec<u32>>().push(3);
        a.append(&mut b);
        assert_eq!(a.typed::<Vec<u32>>(), &[1, 2, 3]);
        assert_eq!((a.len(), b.len()), (3, 0));
        a.clear();
        assert_eq!(a.len(), 0);
        assert!(a.capacity_bytes() >= 3 * 4);
        let mut c = Erased::new(VecDeque::from([7u8]));
        assert_eq!(c.seal(), 1);
        assert_eq!(*c.into_typed::<VecDeque<u8>>(), [7]);
    }

    #[test]
    #[should_panic(expected = "another type than `alloc::vec::Vec<u8>`")]
    fn another_type_panics() {
        Erased::new(vec![1u32]).typed_mut::<Vec<u8>>();
    }

    #[test]
    #[should_panic(expected = "another type")]
    fn appending_another_type_panics() {
        Erased::new(vec![1u32]).append(&mut Erased::new(vec![1u8]));
    }
}
