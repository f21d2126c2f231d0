//! Stable digests of world state: the [`Checksum`] trait and the [`Checksummer`] mixer.
//!
//! The hash is fixed and written out here, so a checksum is the same on every run, every
//! build and every worker count (unlike `std`'s `DefaultHasher`, whose algorithm may
//! change between releases). It is a word mixer in the style of FxHash — for each 64-bit
//! word `w`, `h = (h.rotate_left(5) ^ w) * 0x51_7c_c1_b7_27_22_0a_95`, starting from
//! `h = 0xcbf2_9ce4_8422_2325` — finished by the SplitMix64 finaliser. Each step is a bijection of `h` for a fixed `w` and of `w` for a
//! fixed `h`, so two inputs of the same length that differ in exactly one word always
//! give different checksums. It is not a cryptographic hash.

use std::fmt;

use crate::entity::Entity;

#[cfg(feature = "glam")]
mod glam;

/// The fixed multiplier of the word mixer (FxHash's 64-bit constant).
const K: u64 = 0x51_7c_c1_b7_27_22_0a_95;

/// The version of [`World::checksum`](crate::World::checksum)'s definition, its first
/// word: 2 (blocks on four chains; version 1 is
/// [`World::checksum_v1`](crate::World::checksum_v1)). Replays record checksums of the
/// version they were written with.
pub(crate) const CHECKSUM_VERSION: u64 = 2;

/// How many values a block of the world's checksum holds (see [`digest_values`]): a
/// column or an entity list is digested in blocks of this many rows, each on its own,
/// so that blocks can go to different workers. Part of the digest's definition.
pub(crate) const BLOCK: usize = 4096;

/// The lane digest of `values`, as the world's checksum takes it for a block of rows:
/// four [`Checksummer`] chains, value `i` written (by `write`) into chain `i % 4`; then a
/// fresh [`Checksummer`] over the number of values and each chain's
/// [`finish`](Checksummer::finish), in chain order. A chain waits on its own multiply
/// for every word; four independent ones keep a core's multipliers busy, about four times
/// the words per second of one.
#[inline]
pub(crate) fn digest_values<T>(values: &[T], mut write: impl FnMut(&T, &mut Checksummer)) -> u64 {
    let (mut a, mut b, mut c, mut d) = (
        Checksummer::new(),
        Checksummer::new(),
        Checksummer::new(),
        Checksummer::new(),
    );
    let mut quads = values.chunks_exact(4);
    for quad in &mut quads {
        if let [v0, v1, v2, v3] = quad {
            write(v0, &mut a);
            write(v1, &mut b);
            write(v2, &mut c);
            write(v3, &mut d);
        }
    }
    for (v, lane) in quads
        .remainder()
        .iter()
        .zip([&mut a, &mut b, &mut c, &mut d])
    {
        write(v, lane);
    }
    join_lanes(values.len(), [a, b, c, d])
}

/// [`digest_values`] of words given one by one: the same digest as of a slice of them.
pub(crate) fn digest_words(words: impl ExactSizeIterator<Item = u64>) -> u64 {
    let n = words.len();
    let mut lanes = [Checksummer::new(); 4];
    for (i, w) in words.enumerate() {
        lanes[i % 4].write_u64(w);
    }
    join_lanes(n, lanes)
}

/// A block's digest from its row count and its four chains.
fn join_lanes(rows: usize, lanes: [Checksummer; 4]) -> u64 {
    let mut h = Checksummer::new();
    h.write_u64(rows as u64);
    for lane in lanes {
        h.write_u64(lane.finish());
    }
    h.finish()
}

/// The stable hasher behind [`World::checksum`](crate::World::checksum) and
/// [`Checksum`]. Feed it words; [`finish`](Self::finish) returns the digest.
///
/// ```
/// use runsync::Checksummer;
/// let mut a = Checksummer::new();
/// a.write_u64(1);
/// a.write_f32(0.5);
/// let mut b = Checksummer::new();
/// b.write_u64(1);
/// b.write_f32(-0.5);
/// assert_ne!(a.finish(), b.finish());
/// // A fixed algorithm: this value never changes, on any run or platform.
/// let mut h = Checksummer::new();
/// h.write_u64(42);
/// assert_eq!(h.finish(), 0x84ff_eb30_c526_1a1b);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Checksummer {
    state: u64,
}

impl Default for Checksummer {
    fn default() -> Self {
        Self::new()
    }
}

impl Checksummer {
    /// A fresh hasher. Its state starts at the FNV-1a offset basis, not zero, so leading
    /// zero words still change the digest.
    pub fn new() -> Self {
        Checksummer {
            state: 0xcbf2_9ce4_8422_2325,
        }
    }

    /// Mixes one 64-bit word in. Cost: a rotate, a xor and a multiply.
    #[inline]
    pub fn write_u64(&mut self, w: u64) {
        self.state = (self.state.rotate_left(5) ^ w).wrapping_mul(K);
    }

    /// Mixes a `u32` in (as one word).
    #[inline]
    pub fn write_u32(&mut self, w: u32) {
        self.write_u64(u64::from(w));
    }

    /// Mixes an `f32` in by its bits: `0.0` and `-0.0` differ, a NaN hashes its payload.
    #[inline]
    pub fn write_f32(&mut self, x: f32) {
        self.write_u32(x.to_bits());
    }

    /// Mixes an `f64` in by its bits.
    #[inline]
    pub fn write_f64(&mut self, x: f64) {
        self.write_u64(x.to_bits());
    }

    /// Mixes bytes in: their length, then 8-byte little-endian words (the last one
    /// zero-padded).
    pub fn write_bytes(&mut self, bytes: &[u8]) {
        self.write_u64(bytes.len() as u64);
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(word));
        }
    }

    /// The digest of everything written so far (SplitMix64 finaliser of the state).
    #[inline]
    pub fn finish(&self) -> u64 {
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// A value that contributes to [`World::checksum`](crate::World::checksum): it writes
/// every bit of its state into a [`Checksummer`], in a fixed order.
///
/// Implemented for integers, `bool`, `char`, floats (by bits), [`Entity`] (by
/// [`to_bits`](Entity::to_bits)), `()`, `Option`, arrays, slices, `Vec`, `str`, `String`
/// and tuples up to eight; with the `glam` feature, for glam's vectors, quaternions,
/// matrices and affine transforms, each written as its fields would be by hand: `x, y,
/// z, w` in that order, a matrix column by column, an affine transform's matrix then its
/// translation (`Vec3A`'s padding lane is not written). Implement it for a component by
/// writing its fields in order, then opt the type in with
/// [`World::checksumming`](crate::World::checksumming):
///
/// ```
/// use runsync::{Checksum, Checksummer};
/// struct Pos { x: f32, y: f32 }
/// impl Checksum for Pos {
///     fn checksum(&self, h: &mut Checksummer) {
///         (self.x, self.y).checksum(h);
///     }
/// }
/// let mut h = Checksummer::new();
/// Pos { x: 1.0, y: 2.0 }.checksum(&mut h);
/// ```
pub trait Checksum {
    /// Writes this value's state into `h`.
    fn checksum(&self, h: &mut Checksummer);
}

macro_rules! checksum_as_u64 {
    ($($t:ty),*) => {$(
        impl Checksum for $t {
            #[inline]
            fn checksum(&self, h: &mut Checksummer) {
                h.write_u64(*self as u64);
            }
        }
    )*};
}
checksum_as_u64!(
    u8, u16, u32, u64, usize, i8, i16, i32, i64, isize, bool, char
);

impl Checksum for u128 {
    fn checksum(&self, h: &mut Checksummer) {
        h.write_u64(*self as u64);
        h.write_u64((*self >> 64) as u64);
    }
}

impl Checksum for i128 {
    fn checksum(&self, h: &mut Checksummer) {
        (*self as u128).checksum(h);
    }
}

impl Checksum for f32 {
    #[inline]
    fn checksum(&self, h: &mut Checksummer) {
        h.write_f32(*self);
    }
}

impl Checksum for f64 {
    #[inline]
    fn checksum(&self, h: &mut Checksummer) {
        h.write_f64(*self);
    }
}

impl Checksum for Entity {
    #[inline]
    fn checksum(&self, h: &mut Checksummer) {
        h.write_u64(self.to_bits());
    }
}

impl Checksum for () {
    #[inline]
    fn checksum(&self, _: &mut Checksummer) {}
}

impl Checksum for str {
    fn checksum(&self, h: &mut Checksummer) {
        h.write_bytes(self.as_bytes());
    }
}

impl Checksum for String {
    fn checksum(&self, h: &mut Checksummer) {
        self.as_str().checksum(h);
    }
}

impl<T: Checksum + ?Sized> Checksum for &T {
    fn checksum(&self, h: &mut Checksummer) {
        (**self).checksum(h);
    }
}

impl<T: Checksum + ?Sized> Checksum for Box<T> {
    fn checksum(&self, h: &mut Checksummer) {
        (**self).checksum(h);
    }
}

impl<T: Checksum> Checksum for Option<T> {
    fn checksum(&self, h: &mut Checksummer) {
        match self {
            None => h.write_u64(0),
            Some(v) => {
                h.write_u64(1);
                v.checksum(h);
            }
        }
    }
}

impl<T: Checksum> Checksum for [T] {
    fn checksum(&self, h: &mut Checksummer) {
        h.write_u64(self.len() as u64);
        for v in self {
            v.checksum(h);
        }
    }
}

impl<T: Checksum, const N: usize> Checksum for [T; N] {
    fn checksum(&self, h: &mut Checksummer) {
        for v in self {
            v.checksum(h);
        }
    }
}

impl<T: Checksum> Checksum for Vec<T> {
    fn checksum(&self, h: &mut Checksummer) {
        self.as_slice().checksum(h);
    }
}

macro_rules! checksum_tuple {
    ($($n:tt $t:ident),+) => {
        impl<$($t: Checksum),+> Checksum for ($($t,)+) {
            #[inline]
            fn checksum(&self, h: &mut Checksummer) {
                $(self.$n.checksum(h);)+
            }
        }
    };
}
checksum_tuple!(0 A);
checksum_tuple!(0 A, 1 B);
checksum_tuple!(0 A, 1 B, 2 C);
checksum_tuple!(0 A, 1 B, 2 C, 3 D);
checksum_tuple!(0 A, 1 B, 2 C, 3 D, 4 E);
checksum_tuple!(0 A, 1 B, 2 C, 3 D, 4 E, 5 F);
checksum_tuple!(0 A, 1 B, 2 C, 3 D, 4 E, 5 F, 6 G);
checksum_tuple!(0 A, 1 B, 2 C, 3 D, 4 E, 5 F, 6 G, 7 H);

/// Where two worlds that should be equal first differ, from
/// [`World::first_difference`](crate::World::first_difference): the entity, the component
/// type and both values (formatted with `Debug`) when the difference is in a value.
///
/// `Display` prints one line, e.g. ``entity 3v1, component `game::Pos`: Pos(1.0) vs
/// Pos(2.0)``.
///
/// ```
/// use runsync::prelude::*;
/// let mut a = World::new();
/// let b = World::new();
/// let e = a.spawn(());
/// let d = a.first_difference(&b).unwrap();
/// assert_eq!(d.entity(), Some(e));
/// assert_eq!(d.component(), None);
/// assert_eq!(d.to_string(), "entity 0v1 is alive only on the left");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Desync {
    pub(crate) entity: Option<Entity>,
    pub(crate) component: Option<&'static str>,
    pub(crate) left: Option<String>,
    pub(crate) right: Option<String>,
    pub(crate) what: String,
}

impl Desync {
    /// The entity whose state differs, if the difference is about one entity.
    pub fn entity(&self) -> Option<Entity> {
        self.entity
    }

    /// The type name of the component that differs (present on one side only, or with
    /// different values), if any.
    pub fn component(&self) -> Option<&'static str> {
        self.component
    }

    /// The value on the left (`self`) and right (`other`) side, `Debug`-formatted, when
    /// the difference is in a checksummed component's or resource's value.
    pub fn values(&self) -> Option<(&str, &str)> {
        Some((self.left.as_deref()?, self.right.as_deref()?))
    }
}

impl fmt::Display for Desync {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.what)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The two ways to digest a block agree at every length around the four lanes, and
    /// a block's digest depends on where each word is.
    #[test]
    fn lane_digests_of_a_slice_and_of_words_agree() {
        let words: Vec<u64> = (0..23u64).map(|i| i.wrapping_mul(0x9e37_79b9)).collect();
        for n in 0..words.len() {
            let slice = digest_values(&words[..n], |&w, h| h.write_u64(w));
            assert_eq!(slice, digest_words(words[..n].iter().copied()), "{n} words");
        }
        let mut swapped = words.clone();
        swapped.swap(4, 5);
        assert_ne!(
            digest_words(words.iter().copied()),
            digest_words(swapped.iter().copied())
        );
    }

    fn sum<T: Checksum + ?Sized>(v: &T) -> u64 {
        let mut h = Checksummer::new();
        v.checksum(&mut h);
        h.finish()
    }

    #[test]
    fn fixed_values_and_bit_sensitivity() {
        // The algorithm is part of the contract: these never change.
        assert_eq!(Checksummer::new().finish(), 0xf52a_15e9_a9b5_e89b);
        assert_eq!(sum(&(1u32, 2.5f32, "ab")), 0x3468_602e_a7eb_3f5c);
        assert_ne!(sum(&0u64), sum(&(0u64, 0u64)), "leading zero words count");
        let base = sum(&(1u32, 2.5f32, [3u8; 4]));
        assert_eq!(base, sum(&(1u32, 2.5f32, [3u8; 4])));
        for bit in 0..32 {
            let x = f32::from_bits(2.5f32.to_bits() ^ (1 << bit));
            assert_ne!(base, sum(&(1u32, x, [3u8; 4])), "bit {bit}");
        }
        assert_ne!(sum(&0.0f32), sum(&-0.0f32));
        assert_ne!(sum("ab"), sum("ab\0"));
        assert_ne!(sum(&Some(0u8)), sum(&None::<u8>));
    }
}
