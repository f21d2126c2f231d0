//! Stable digests of world state: the [`Checksum`] trait and the [`Checksummer`] mixer.
//!
//! The hash is fixed and written out here, so a checksum is the same on every run, every
//! build and every worker count (unlike `std`'s `DefaultHasher`, whose algorithm may
//! change between releases). It is a word mixer in the style of FxHash — for each 64-bit
//! word `w`, `h = (h.rotate_left(5) ^ w) * 0x51_7c_c1_b7_27_22_0a_95`, starting from
//! `h = 0xcbf2_9ce4_8422_2325` — finished by the SplitMix64 finaliser. Two 32-bit writes
//! in a row make one word (the first in the low half), so a pair of `f32`s costs one
//! multiply. Each step is a bijection of `h` for a fixed `w` and of `w` for a fixed `h`,
//! so two inputs of the same length that differ in exactly one word always give
//! different checksums. It is not a cryptographic hash.

use std::fmt;

use crate::entity::Entity;

#[cfg(feature = "glam")]
mod glam;

/// The fixed multiplier of the word mixer (FxHash's 64-bit constant).
const K: u64 = 0x51_7c_c1_b7_27_22_0a_95;

/// A definition of [`World::checksum`](crate::World::checksum) after the first (version
/// 1, [`World::checksum_v1`](crate::World::checksum_v1), is a walk of its own). Its
/// number is the checksum's first word; replays record checksums of the version they
/// were written with, and are checked with it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Version {
    /// Blocks on four chains, every write of 32 bits or less a word of its own
    /// ([`World::checksum_v2`](crate::World::checksum_v2)).
    V2,
    /// As version 2, with two 32-bit writes in a row packed into one word: the current
    /// definition.
    V3,
}

impl Version {
    /// The definition [`World::checksum`](crate::World::checksum) follows.
    pub(crate) const CURRENT: Version = Version::V3;

    /// The version's number, the checksum's first word.
    pub(crate) const fn number(self) -> u64 {
        match self {
            Version::V2 => 2,
            Version::V3 => 3,
        }
    }

    /// A fresh [`Checksummer`] of this version's word rule.
    #[inline]
    pub(crate) fn checksummer(self) -> Checksummer {
        match self {
            Version::V2 => Checksummer::unpacked(),
            Version::V3 => Checksummer::new(),
        }
    }
}

/// How many values a block of the world's checksum holds (see [`digest_values`]): a
/// column or an entity list is digested in blocks of this many rows, each on its own,
/// so that blocks can go to different workers. Part of the digest's definition.
pub(crate) const BLOCK: usize = 4096;

/// The lane digest of `values`, as the world's checksum takes it for a block of rows:
/// four [`Checksummer`] chains of version `v`'s word rule, value `i` written (by `write`)
/// into chain `i % 4`; then a fresh [`Checksummer`] over the number of values and each
/// chain's [`finish`](Checksummer::finish), in chain order. A chain waits on its own
/// multiply for every word; four independent ones keep a core's multipliers busy, about
/// four times the words per second of one.
#[inline]
pub(crate) fn digest_values<T>(
    v: Version,
    values: &[T],
    mut write: impl FnMut(&T, &mut Checksummer),
) -> u64 {
    let (mut a, mut b, mut c, mut d) = (
        v.checksummer(),
        v.checksummer(),
        v.checksummer(),
        v.checksummer(),
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
    for (value, lane) in quads
        .remainder()
        .iter()
        .zip([&mut a, &mut b, &mut c, &mut d])
    {
        write(value, lane);
    }
    join_lanes(v, values.len(), [a, b, c, d])
}

/// [`digest_values`] of words given one by one: the same digest as of a slice of them.
/// The four chains are locals taken in turn (not an array indexed by `i % 4`, which
/// kept them in memory: a store and a load on every word's chain).
pub(crate) fn digest_words(v: Version, mut words: impl ExactSizeIterator<Item = u64>) -> u64 {
    let n = words.len();
    let (mut a, mut b, mut c, mut d) = (
        v.checksummer(),
        v.checksummer(),
        v.checksummer(),
        v.checksummer(),
    );
    while let Some(w) = words.next() {
        a.write_u64(w);
        let Some(w) = words.next() else { break };
        b.write_u64(w);
        let Some(w) = words.next() else { break };
        c.write_u64(w);
        let Some(w) = words.next() else { break };
        d.write_u64(w);
    }
    join_lanes(v, n, [a, b, c, d])
}

/// A block's digest from its row count and its four chains.
fn join_lanes(v: Version, rows: usize, lanes: [Checksummer; 4]) -> u64 {
    let mut h = v.checksummer();
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
    /// A 32-bit write waiting for the next one to make a word with (when `held`).
    half: u32,
    held: bool,
    /// Whether 32-bit writes pair up (`false`: each is a word, as digest versions 1 and
    /// 2 took them).
    packs: bool,
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
            half: 0,
            held: false,
            packs: true,
        }
    }

    /// A fresh hasher that mixes every 32-bit write as a word of its own: the rule of
    /// digest versions 1 and 2, kept to check what was recorded with them.
    pub(crate) fn unpacked() -> Self {
        Checksummer {
            packs: false,
            ..Checksummer::new()
        }
    }

    /// One step of the mixer.
    #[inline(always)]
    fn mix(&mut self, w: u64) {
        self.state = (self.state.rotate_left(5) ^ w).wrapping_mul(K);
    }

    /// Mixes one 64-bit word in (after a held 32-bit write, as a word of its own). Cost:
    /// a rotate, a xor and a multiply.
    #[inline]
    pub fn write_u64(&mut self, w: u64) {
        if self.held {
            self.held = false;
            self.mix(u64::from(self.half));
        }
        self.mix(w);
    }

    /// Mixes a `u32` in: held until the next write, and with a `u32` right after it made
    /// into one word (this one the low half); followed by anything else, or by nothing
    /// before [`finish`](Self::finish), it is a word of its own.
    #[inline]
    pub fn write_u32(&mut self, w: u32) {
        if !self.packs {
            self.mix(u64::from(w));
        } else if self.held {
            self.held = false;
            self.mix(u64::from(self.half) | u64::from(w) << 32);
        } else {
            self.half = w;
            self.held = true;
        }
    }

    /// A value of 32 bits or less: `narrow` as a [`write_u32`](Self::write_u32), or, in
    /// the unpacked rule, `wide` (the value widened to 64 bits, sign-extended for a
    /// signed type, as versions 1 and 2 wrote it).
    #[inline]
    fn write_narrow(&mut self, narrow: u32, wide: u64) {
        if self.packs {
            self.write_u32(narrow);
        } else {
            self.mix(wide);
        }
    }

    /// Mixes an `f32` in by its bits (a [`write_u32`](Self::write_u32)): `0.0` and
    /// `-0.0` differ, a NaN hashes its payload.
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

    /// The digest of everything written so far (a held 32-bit write mixed in as a word
    /// of its own, then the SplitMix64 finaliser of the state).
    #[inline]
    pub fn finish(&self) -> u64 {
        let mut done = *self;
        if done.held {
            done.mix(u64::from(done.half));
        }
        let mut z = done.state;
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
checksum_as_u64!(u64, usize, i64, isize);

// Values of 32 bits or less pair up like `u32`s; the unpacked rule widens them as
// `as u64` does (sign-extending a signed one).
macro_rules! checksum_narrow {
    ($($t:ty),*) => {$(
        impl Checksum for $t {
            #[inline]
            fn checksum(&self, h: &mut Checksummer) {
                h.write_narrow(*self as u32, *self as u64);
            }
        }
    )*};
}
checksum_narrow!(u8, u16, u32, i8, i16, i32, char);

impl Checksum for bool {
    #[inline]
    fn checksum(&self, h: &mut Checksummer) {
        h.write_narrow(u32::from(*self), u64::from(*self));
    }
}

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
        for v in [Version::V2, Version::V3] {
            for n in 0..words.len() {
                let slice = digest_values(v, &words[..n], |&w, h| h.write_u64(w));
                assert_eq!(
                    slice,
                    digest_words(v, words[..n].iter().copied()),
                    "{n} words"
                );
            }
            let mut swapped = words.clone();
            swapped.swap(4, 5);
            assert_ne!(
                digest_words(v, words.iter().copied()),
                digest_words(v, swapped.iter().copied())
            );
        }
    }

    fn sum_in<T: Checksum + ?Sized>(mut h: Checksummer, v: &T) -> u64 {
        v.checksum(&mut h);
        h.finish()
    }

    fn sum<T: Checksum + ?Sized>(v: &T) -> u64 {
        sum_in(Checksummer::new(), v)
    }

    #[test]
    fn fixed_values_and_bit_sensitivity() {
        // The algorithm is part of the contract: these never change (the unpacked rule's
        // are those of digest versions 1 and 2).
        assert_eq!(Checksummer::new().finish(), 0xf52a_15e9_a9b5_e89b);
        let unpacked = |v: &dyn Fn(&mut Checksummer)| {
            let mut h = Checksummer::unpacked();
            v(&mut h);
            h.finish()
        };
        assert_eq!(
            unpacked(&|h| (1u32, 2.5f32, "ab").checksum(h)),
            0x3468_602e_a7eb_3f5c
        );
        assert_eq!(
            unpacked(&|h| (-1i32, 7u8, true, 'x').checksum(h)),
            unpacked(&|h| [u64::MAX, 7, 1, 120].iter().for_each(|&w| h.write_u64(w)))
        );
        assert_eq!(sum(&(1u32, 2.5f32, "ab")), 0x9b67_4ef2_6282_6517);
        for h in [Checksummer::new(), Checksummer::unpacked()] {
            assert_ne!(
                sum_in(h, &0u64),
                sum_in(h, &(0u64, 0u64)),
                "leading zero words count"
            );
            let base = sum_in(h, &(1u32, 2.5f32, [3u8; 4]));
            assert_eq!(base, sum_in(h, &(1u32, 2.5f32, [3u8; 4])));
            for bit in 0..32 {
                let x = f32::from_bits(2.5f32.to_bits() ^ (1 << bit));
                assert_ne!(base, sum_in(h, &(1u32, x, [3u8; 4])), "bit {bit}");
                assert_ne!(
                    base,
                    sum_in(h, &(1u32 ^ (1 << bit), 2.5f32, [3u8; 4])),
                    "bit {bit}"
                );
            }
            assert_ne!(sum_in(h, &0.0f32), sum_in(h, &-0.0f32));
            assert_ne!(sum_in(h, "ab"), sum_in(h, "ab\0"));
            assert_ne!(sum_in(h, &Some(0u8)), sum_in(h, &None::<u8>));
            assert_ne!(
                sum_in(h, &(1u32, 2u32)),
                sum_in(h, &(2u32, 1u32)),
                "order counts"
            );
        }
    }

    /// Two 32-bit writes in a row are one word, the first in the low half; one followed
    /// by a wider write, or by nothing, is a word of its own.
    #[test]
    fn thirty_two_bit_writes_pair_up() {
        let words = |ws: &[u64]| {
            let mut h = Checksummer::new();
            ws.iter().for_each(|&w| h.write_u64(w));
            h.finish()
        };
        let f = |x: f32| u64::from(x.to_bits());
        assert_eq!(sum(&(1.5f32, -2.0f32)), words(&[f(1.5) | f(-2.0) << 32]));
        assert_eq!(
            sum(&(1.5f32, 9u64, 3u8)),
            words(&[f(1.5), 9, 3]),
            "a lone half, then a word; a lone half at the end"
        );
        assert_eq!(
            sum(&(-1i32, 5u16, 6u32)),
            words(&[0xffff_ffff | 5 << 32, 6])
        );
        // The unpacked rule: a word per write.
        let mut h = Checksummer::unpacked();
        (1.5f32, -2.0f32).checksum(&mut h);
        let mut w = Checksummer::unpacked();
        w.write_u64(f(1.5));
        w.write_u64(f(-2.0));
        assert_eq!(h.finish(), w.finish());
    }
}
