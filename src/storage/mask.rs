//! Sets of component types as bit masks: a table's signature, a query's filter.
//!
//! Built on `bitvec`'s [`BitArray`] over plain `u64` words, never `BitVec`: with bitvec
//! 1.1.1, `BitArray` reads, writes, `&`, `|`, `count_ones` and `iter_ones` pass Miri under
//! Tree Borrows with `-Zmiri-strict-provenance`, while `BitVec` needs permissive provenance
//! (and all of bitvec fails Stacked Borrows, ferrilab/bitvec#193). So a [`Mask`] keeps the
//! first [`INLINE_BITS`] types in one inline `BitArray` and *spills* higher ids into a
//! `Vec` of further `BitArray`s, grown only when a table holds such a type.
//!
//! A [`QueryMask`] is `Copy` (a query's state is passed by value through the iteration
//! hot path): it holds only the inline bit array and says when the query names a type
//! beyond it (`wide`); such a query checks those types one by one against the signature.
//!
//! The two tests on the query path, [`Mask::contains`] and [`Mask::passes`], read the bit
//! arrays' raw `u64` words (bitvec's `Lsb0` order: bit `i` of a bit array is bit `i % 64`
//! of word `i / 64`) instead of going through `BitSlice` indexing and `&`: those are
//! generic over order and store and were measured slower on `fragmented_iter` (a query
//! test per table). Building and walking a mask stays with bitvec; a test checks that
//! both views agree bit for bit.

use bitvec::array::BitArray;

use crate::component::ComponentId;

/// Words per bit array.
const WORDS: usize = 2;
/// Component ids below this are in a mask's inline bit array.
pub(crate) const INLINE_BITS: usize = WORDS * 64;

/// One bit array of [`INLINE_BITS`] bits.
type Bits = BitArray<[u64; WORDS]>;

/// A set of component types (a table's signature). Ids below [`INLINE_BITS`] cost no
/// allocation; higher ids grow a spill vector.
#[derive(Clone, Default, Debug, PartialEq, Eq)]
pub(crate) struct Mask {
    inline: Bits,
    /// Bit arrays for ids `INLINE_BITS * (k + 1) ..`, allocated on demand.
    spill: Vec<Bits>,
}

impl Mask {
    /// Adds `id`.
    pub(crate) fn insert(&mut self, id: ComponentId) {
        let (array, bit) = split(id);
        if array == 0 {
            self.inline.set(bit, true);
        } else {
            if self.spill.len() < array {
                self.spill.resize(array, Bits::ZERO);
            }
            self.spill[array - 1].set(bit, true);
        }
    }

    /// Whether `id` is in the set.
    #[inline]
    pub(crate) fn contains(&self, id: ComponentId) -> bool {
        let (array, bit) = split(id);
        let b = if array == 0 {
            &self.inline
        } else {
            match self.spill.get(array - 1) {
                Some(b) => b,
                None => return false,
            }
        };
        b.data[bit / 64] & (1 << (bit % 64)) != 0
    }

    /// How many types are in the set.
    pub(crate) fn len(&self) -> usize {
        self.inline.count_ones() + self.spill.iter().map(|b| b.count_ones()).sum::<usize>()
    }

    /// The types in the set, ascending.
    pub(crate) fn iter(&self) -> impl Iterator<Item = ComponentId> + '_ {
        std::iter::once(&self.inline)
            .chain(&self.spill)
            .enumerate()
            .flat_map(|(k, b)| {
                b.iter_ones()
                    .map(move |bit| ComponentId((k * INLINE_BITS + bit) as u32))
            })
    }

    /// Whether a table with this signature passes `q`'s inline part: it has every required
    /// type and none of the excluded ones (below [`INLINE_BITS`]; see [`QueryMask::wide`]).
    /// Word operations only, no per-type loop.
    #[inline]
    pub(crate) fn passes(&self, q: &QueryMask) -> bool {
        let mut ok = true;
        for w in 0..WORDS {
            let have = self.inline.data[w];
            ok &= q.required.data[w] & !have == 0 && q.excluded.data[w] & have == 0;
        }
        ok
    }
}

/// A query's filter over the inline bit array: required and excluded types. `Copy`.
#[derive(Clone, Copy, Default, Debug)]
pub(crate) struct QueryMask {
    required: Bits,
    excluded: Bits,
    /// The query names a type with an id of [`INLINE_BITS`] or more: those are not in the
    /// bit arrays, and the query must test them one by one.
    pub(crate) wide: bool,
}

impl QueryMask {
    /// Tables must have `id`.
    pub(crate) fn require(&mut self, id: ComponentId) {
        self.set(id, true);
    }

    /// Tables must not have `id`.
    pub(crate) fn exclude(&mut self, id: ComponentId) {
        self.set(id, false);
    }

    fn set(&mut self, id: ComponentId, required: bool) {
        match split(id) {
            (0, bit) if required => self.required.set(bit, true),
            (0, bit) => self.excluded.set(bit, true),
            _ => self.wide = true,
        }
    }
}

/// `(array, bit)`: array 0 is the inline one.
#[inline]
fn split(id: ComponentId) -> (usize, usize) {
    (id.index() / INLINE_BITS, id.index() % INLINE_BITS)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(i: usize) -> ComponentId {
        ComponentId(i as u32)
    }

    #[test]
    fn insert_contains_iter_across_the_spill() {
        let mut m = Mask::default();
        for i in [0, 5, 63, 64, 127, 128, 300] {
            m.insert(id(i));
        }
        assert_eq!(m.len(), 7);
        for i in [0, 5, 63, 64, 127, 128, 300] {
            assert!(m.contains(id(i)), "{i}");
        }
        for i in [1, 62, 129, 299, 301, 5000] {
            assert!(!m.contains(id(i)), "{i}");
        }
        let ids: Vec<usize> = m.iter().map(ComponentId::index).collect();
        assert_eq!(ids, [0, 5, 63, 64, 127, 128, 300]);
        assert_eq!(m.spill.len(), 2, "bit arrays up to id 300 only");
    }

    /// The raw-word reads agree with bitvec's own view of the bits.
    #[test]
    fn raw_words_agree_with_bitvec() {
        let mut m = Mask::default();
        let ids = [0, 1, 31, 63, 64, 65, 100, 127, 128, 191, 200];
        for i in ids {
            m.insert(id(i));
        }
        for i in 0..256 {
            let bitvec_view = match split(id(i)) {
                (0, bit) => m.inline[bit],
                (k, bit) => m.spill.get(k - 1).is_some_and(|b| b[bit]),
            };
            assert_eq!(m.contains(id(i)), bitvec_view, "{i}");
            assert_eq!(bitvec_view, ids.contains(&i), "{i}");
        }
        let mut q = QueryMask::default();
        q.require(id(63));
        q.require(id(64));
        q.exclude(id(2));
        assert!(m.passes(&q));
        q.exclude(id(100));
        assert!(!m.passes(&q));
    }

    #[test]
    fn query_masks() {
        let mut table = Mask::default();
        table.insert(id(1));
        table.insert(id(70));
        let mut q = QueryMask::default();
        q.require(id(1));
        assert!(table.passes(&q));
        q.require(id(70));
        assert!(table.passes(&q));
        q.exclude(id(2));
        assert!(table.passes(&q));
        let mut q2 = q;
        q2.exclude(id(70));
        assert!(!table.passes(&q2));
        let mut q3 = q;
        q3.require(id(3));
        assert!(!table.passes(&q3));
        assert!(!q3.wide);
        q3.require(id(INLINE_BITS));
        assert!(q3.wide);
    }
}
