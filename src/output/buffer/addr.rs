//! [`BufAddr`]: where a typed output buffer is, remembered by the plain write path.
//!
//! The plain write path (`Output::write::<C>`) runs once per output — tens of millions of
//! times per second — and needs the system's typed buffer for `C` each time. The buffer
//! is an [`Erased`](crate::erased::Erased) (one `TypeId` compare and a pointer cast to
//! reach it); `Output` goes one step further: it finds the buffer once per type and
//! system run and keeps its address ([`BufAddr`]) beside the type it already compares,
//! which saves the buffer list's bounds and presence checks and the `TypeId` compare on
//! every later write. Covered by Miri (the lib tests and every integration suite that
//! writes outputs).

use std::ptr::NonNull;

use super::OutBuf;
use crate::component::Component;

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

    /// The buffer, known to have an address.
    ///
    /// # Safety
    /// As for [`get`](Self::get), and `self` is not [`NONE`](Self::NONE).
    #[inline(always)]
    pub(crate) unsafe fn get_unchecked<'a, C: Component>(self) -> &'a mut OutBuf<C> {
        // SAFETY: the caller's contract, as for `get`; `self.0` is `Some`.
        unsafe { self.0.unwrap_unchecked().cast::<OutBuf<C>>().as_mut() }
    }
}
