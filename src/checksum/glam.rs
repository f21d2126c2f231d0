//! [`Checksum`] for glam's vectors, matrices, quaternions and affine transforms (the
//! `glam` feature).
//!
//! Each impl writes exactly what a hand-written impl over the type's public fields would:
//! every component through its own `Checksum` (a float by its bits, an integer as one
//! word), in a fixed order that is part of the checksum's definition:
//!
//! - a vector or quaternion: `x, y`, `x, y, z` or `x, y, z, w`;
//! - a matrix: its columns in order (`x_axis, y_axis, ..`), each as a vector, so
//!   column-major, the order of `to_cols_array`;
//! - an affine transform: its matrix (`matrix2` or `matrix3`), then `translation`.
//!
//! So `Vec2 { x, y }` checksums as `(x, y)`, `Mat2` as `(x_axis.x, x_axis.y, y_axis.x,
//! y_axis.y)`, and a struct with a `Vec2` field may switch between a hand-written
//! `(self.p.x, self.p.y).checksum(h)` and `self.p.checksum(h)` without changing its
//! checksum. `Vec3A` (and so `Mat3A` and `Affine3A`) writes `x, y, z` only: the padding
//! lane of its 16 bytes is not state, and is never hashed.

use ::glam::{
    Affine2, Affine3A, DAffine2, DAffine3, DMat2, DMat3, DMat4, DQuat, DVec2, DVec3, DVec4, I8Vec2,
    I8Vec3, I8Vec4, I16Vec2, I16Vec3, I16Vec4, I64Vec2, I64Vec3, I64Vec4, IVec2, IVec3, IVec4,
    Mat2, Mat3, Mat3A, Mat4, Quat, U8Vec2, U8Vec3, U8Vec4, U16Vec2, U16Vec3, U16Vec4, U64Vec2,
    U64Vec3, U64Vec4, UVec2, UVec3, UVec4, Vec2, Vec3, Vec3A, Vec4,
};

use super::{Checksum, Checksummer};

/// `impl Checksum` writing the named fields, in the order given, as one tuple.
macro_rules! checksum_fields {
    ($($t:ty { $($f:ident),+ }),* $(,)?) => {$(
        impl Checksum for $t {
            #[inline]
            fn checksum(&self, h: &mut Checksummer) {
                ($(self.$f,)+).checksum(h);
            }
        }
    )*};
}

checksum_fields!(
    // Float vectors: each component by its bits.
    Vec2 { x, y },
    Vec3 { x, y, z },
    Vec3A { x, y, z },
    Vec4 { x, y, z, w },
    DVec2 { x, y },
    DVec3 { x, y, z },
    DVec4 { x, y, z, w },
    // Integer vectors: each component as one word, as the integer's own impl writes it.
    I8Vec2 { x, y },
    I8Vec3 { x, y, z },
    I8Vec4 { x, y, z, w },
    U8Vec2 { x, y },
    U8Vec3 { x, y, z },
    U8Vec4 { x, y, z, w },
    I16Vec2 { x, y },
    I16Vec3 { x, y, z },
    I16Vec4 { x, y, z, w },
    U16Vec2 { x, y },
    U16Vec3 { x, y, z },
    U16Vec4 { x, y, z, w },
    IVec2 { x, y },
    IVec3 { x, y, z },
    IVec4 { x, y, z, w },
    UVec2 { x, y },
    UVec3 { x, y, z },
    UVec4 { x, y, z, w },
    I64Vec2 { x, y },
    I64Vec3 { x, y, z },
    I64Vec4 { x, y, z, w },
    U64Vec2 { x, y },
    U64Vec3 { x, y, z },
    U64Vec4 { x, y, z, w },
    // Quaternions: the vector part, then the scalar.
    Quat { x, y, z, w },
    DQuat { x, y, z, w },
    // Matrices: column by column.
    Mat2 { x_axis, y_axis },
    Mat3 {
        x_axis,
        y_axis,
        z_axis
    },
    Mat3A {
        x_axis,
        y_axis,
        z_axis
    },
    Mat4 {
        x_axis,
        y_axis,
        z_axis,
        w_axis
    },
    DMat2 { x_axis, y_axis },
    DMat3 {
        x_axis,
        y_axis,
        z_axis
    },
    DMat4 {
        x_axis,
        y_axis,
        z_axis,
        w_axis
    },
    // Affine transforms: the matrix, then the translation.
    Affine2 {
        matrix2,
        translation
    },
    Affine3A {
        matrix3,
        translation
    },
    DAffine2 {
        matrix2,
        translation
    },
    DAffine3 {
        matrix3,
        translation
    },
);

#[cfg(test)]
mod tests {
    use super::*;

    fn sum<T: Checksum + ?Sized>(v: &T) -> u64 {
        let mut h = Checksummer::new();
        v.checksum(&mut h);
        h.finish()
    }

    /// The digest of `f32`s written one by one, by their bits.
    fn floats(xs: &[f32]) -> u64 {
        let mut h = Checksummer::new();
        for &x in xs {
            h.write_f32(x);
        }
        h.finish()
    }

    /// The digest of `f64`s written one by one, by their bits.
    fn doubles(xs: &[f64]) -> u64 {
        let mut h = Checksummer::new();
        for &x in xs {
            h.write_f64(x);
        }
        h.finish()
    }

    /// The digest of 64-bit words written one by one.
    fn words(xs: &[i64]) -> u64 {
        let mut h = Checksummer::new();
        for &x in xs {
            h.write_u64(x as u64);
        }
        h.finish()
    }

    fn f(n: usize) -> Vec<f32> {
        (1..=n).map(|i| i as f32 * 0.5 - 1.25).collect()
    }

    fn d(n: usize) -> Vec<f64> {
        (1..=n).map(|i| i as f64 * 0.5 - 1.25).collect()
    }

    #[test]
    fn float_vectors_write_their_components_in_order() {
        assert_eq!(sum(&Vec2::new(1.0, 2.0)), floats(&[1.0, 2.0]));
        assert_eq!(sum(&Vec3::new(1.0, 2.0, 3.0)), floats(&[1.0, 2.0, 3.0]));
        assert_eq!(sum(&Vec3A::new(1.0, 2.0, 3.0)), floats(&[1.0, 2.0, 3.0]));
        let v4 = Vec4::new(1.0, 2.0, 3.0, 4.0);
        assert_eq!(sum(&v4), floats(&[1.0, 2.0, 3.0, 4.0]));
        assert_eq!(sum(&DVec2::new(1.0, 2.0)), doubles(&[1.0, 2.0]));
        assert_eq!(sum(&DVec3::new(1.0, 2.0, 3.0)), doubles(&[1.0, 2.0, 3.0]));
        let d4 = DVec4::new(1.0, 2.0, 3.0, 4.0);
        assert_eq!(sum(&d4), doubles(&[1.0, 2.0, 3.0, 4.0]));
        // The order counts.
        assert_ne!(sum(&Vec2::new(1.0, 2.0)), sum(&Vec2::new(2.0, 1.0)));
        // As a hand-written impl over the fields writes it.
        let v = Vec3::new(0.1, -7.0, 1e30);
        assert_eq!(sum(&v), sum(&(v.x, v.y, v.z)));
    }

    /// The digest of `v` under the unpacked rule (digest versions 1 and 2).
    fn sum_unpacked<T: Checksum + ?Sized>(v: &T) -> u64 {
        let mut h = Checksummer::unpacked();
        v.checksum(&mut h);
        h.finish()
    }

    /// The digest of integers written one by one, each as one word (sign-extended),
    /// under the unpacked rule.
    fn unpacked_words(xs: &[i64]) -> u64 {
        let mut h = Checksummer::unpacked();
        for &x in xs {
            h.write_u64(x as u64);
        }
        h.finish()
    }

    #[test]
    fn integer_vectors_write_their_components_in_order() {
        // Under the unpacked rule each component is a word, as the fields were written
        // by hand before: versions 1 and 2 of the world checksum are unchanged.
        assert_eq!(sum_unpacked(&IVec2::new(-1, 2)), unpacked_words(&[-1, 2]));
        assert_eq!(
            sum_unpacked(&IVec3::new(-1, 2, -3)),
            unpacked_words(&[-1, 2, -3])
        );
        assert_eq!(
            sum_unpacked(&IVec4::new(-1, 2, -3, 4)),
            unpacked_words(&[-1, 2, -3, 4])
        );
        assert_eq!(
            sum_unpacked(&UVec2::new(1, u32::MAX)),
            unpacked_words(&[1, u32::MAX.into()])
        );
        assert_eq!(
            sum_unpacked(&UVec3::new(1, 2, 3)),
            unpacked_words(&[1, 2, 3])
        );
        assert_eq!(
            sum_unpacked(&UVec4::new(1, 2, 3, 4)),
            unpacked_words(&[1, 2, 3, 4])
        );
        assert_eq!(
            sum_unpacked(&I8Vec3::new(-1, 2, -3)),
            unpacked_words(&[-1, 2, -3])
        );
        assert_eq!(
            sum_unpacked(&U8Vec4::new(1, 2, 3, 255)),
            unpacked_words(&[1, 2, 3, 255])
        );
        assert_eq!(
            sum_unpacked(&I16Vec2::new(-300, 2)),
            unpacked_words(&[-300, 2])
        );
        assert_eq!(
            sum_unpacked(&U16Vec2::new(65535, 2)),
            unpacked_words(&[65535, 2])
        );
        assert_eq!(
            sum_unpacked(&I64Vec2::new(i64::MIN, 2)),
            unpacked_words(&[i64::MIN, 2])
        );
        assert_eq!(
            sum_unpacked(&U64Vec2::new(u64::MAX, 2)),
            unpacked_words(&[-1, 2])
        );
        // Packed: 64-bit components are words; narrower ones pair up, two to a word.
        assert_eq!(sum(&I64Vec2::new(i64::MIN, 2)), words(&[i64::MIN, 2]));
        assert_eq!(sum(&U64Vec2::new(u64::MAX, 2)), words(&[-1, 2]));
        assert_eq!(sum(&IVec2::new(-1, 2)), words(&[0xffff_ffff | 2 << 32]));
        assert_eq!(
            sum(&U8Vec4::new(1, 2, 3, 255)),
            words(&[1 | 2 << 32, 3 | 255 << 32])
        );
        assert_eq!(
            sum(&I16Vec2::new(-300, 2)),
            words(&[(-300i32 as u32) as i64 | 2 << 32])
        );
        assert_eq!(sum(&UVec3::new(1, 2, 3)), words(&[1 | 2 << 32, 3]));
        // Each as its field tuple.
        for h in [Checksummer::new(), Checksummer::unpacked()] {
            let tuple = |v: &dyn Fn(&mut Checksummer)| {
                let mut h = h;
                v(&mut h);
                h.finish()
            };
            let i = IVec4::new(5, -6, 7, -8);
            assert_eq!(
                tuple(&|h| i.checksum(h)),
                tuple(&|h| (i.x, i.y, i.z, i.w).checksum(h))
            );
            let u = U64Vec3::new(1, 2, 3);
            assert_eq!(
                tuple(&|h| u.checksum(h)),
                tuple(&|h| (u.x, u.y, u.z).checksum(h))
            );
            let b = U8Vec3::new(1, 200, 3);
            assert_eq!(
                tuple(&|h| b.checksum(h)),
                tuple(&|h| (b.x, b.y, b.z).checksum(h))
            );
        }
    }

    #[test]
    fn quaternions_write_x_y_z_w() {
        let q = Quat::from_xyzw(0.1, 0.2, 0.3, 0.9);
        assert_eq!(sum(&q), floats(&[0.1, 0.2, 0.3, 0.9]));
        let q = DQuat::from_xyzw(0.1, 0.2, 0.3, 0.9);
        assert_eq!(sum(&q), doubles(&[0.1, 0.2, 0.3, 0.9]));
    }

    #[test]
    fn matrices_write_column_by_column() {
        let m2 = Mat2::from_cols_slice(&f(4));
        assert_eq!(sum(&m2), floats(&f(4)));
        assert_eq!(sum(&m2), floats(&m2.to_cols_array()));
        let m3 = Mat3::from_cols_slice(&f(9));
        assert_eq!(sum(&m3), floats(&f(9)));
        let m3a = Mat3A::from_cols_slice(&f(9));
        assert_eq!(sum(&m3a), floats(&f(9)));
        let m4 = Mat4::from_cols_slice(&f(16));
        assert_eq!(sum(&m4), floats(&f(16)));
        assert_eq!(sum(&DMat2::from_cols_slice(&d(4))), doubles(&d(4)));
        assert_eq!(sum(&DMat3::from_cols_slice(&d(9))), doubles(&d(9)));
        assert_eq!(sum(&DMat4::from_cols_slice(&d(16))), doubles(&d(16)));
        // Column-major, not row-major: the transpose differs.
        assert_ne!(sum(&m2), sum(&m2.transpose()));
        // As a hand-written impl over the columns writes it.
        assert_eq!(sum(&m3), sum(&(m3.x_axis, m3.y_axis, m3.z_axis)));
        let c = m3.x_axis;
        assert_eq!(sum(&c), sum(&(c.x, c.y, c.z)));
    }

    #[test]
    fn affine_transforms_write_the_matrix_then_the_translation() {
        // `to_cols_array` is the matrix's columns then the translation: the same order.
        let a2 = Affine2::from_cols_slice(&f(6));
        assert_eq!(sum(&a2), floats(&f(6)));
        assert_eq!(sum(&a2), floats(&a2.to_cols_array()));
        let a3 = Affine3A::from_cols_slice(&f(12));
        assert_eq!(sum(&a3), floats(&f(12)));
        assert_eq!(sum(&DAffine2::from_cols_slice(&d(6))), doubles(&d(6)));
        assert_eq!(sum(&DAffine3::from_cols_slice(&d(12))), doubles(&d(12)));
        assert_eq!(sum(&a3), sum(&(a3.matrix3, a3.translation)));
    }

    /// `Vec3A`'s fourth lane is padding: whatever it holds, the checksum is that of
    /// `x, y, z`, and so for `Mat3A` and `Affine3A`, built from them.
    #[test]
    fn the_padding_of_aligned_types_is_not_hashed() {
        // `from_vec4` keeps `w` in the padding lane where glam uses SIMD (SSE2, NEON).
        let with_w = |w: f32| Vec3A::from_vec4(Vec4::new(1.0, 2.0, 3.0, w));
        assert_eq!(sum(&with_w(0.0)), sum(&with_w(f32::NAN)));
        assert_eq!(sum(&with_w(-9.0)), floats(&[1.0, 2.0, 3.0]));
        // 3 words, not 4: the checksum of a `Vec3A` is that of a `Vec3`.
        assert_eq!(sum(&with_w(7.0)), sum(&Vec3::new(1.0, 2.0, 3.0)));
        let m = Mat3A::from_cols(with_w(5.0), with_w(6.0), with_w(f32::INFINITY));
        assert_eq!(
            sum(&m),
            sum(&Mat3::from_cols_slice(&[
                1., 2., 3., 1., 2., 3., 1., 2., 3.
            ]))
        );
        let a = Affine3A {
            matrix3: m,
            translation: with_w(-1.0),
        };
        assert_eq!(
            sum(&a),
            floats(&[1., 2., 3., 1., 2., 3., 1., 2., 3., 1., 2., 3.])
        );
    }

    /// Floats by their bits: `-0.0` and `0.0` differ, and so do two NaNs with different
    /// payloads, in every position.
    #[test]
    fn signed_zeros_and_nan_payloads_count() {
        let nan_a = f32::from_bits(0x7fc0_0001);
        let nan_b = f32::from_bits(0x7fc0_0002);
        for i in 0..4 {
            let with = |x: f32| {
                let mut c = [1.0f32; 4];
                c[i] = x;
                Vec4::from_array(c)
            };
            assert_ne!(sum(&with(0.0)), sum(&with(-0.0)), "lane {i}");
            assert_ne!(sum(&with(nan_a)), sum(&with(nan_b)), "lane {i}");
            let q = |x: f32| Quat::from_vec4(with(x));
            assert_ne!(sum(&q(0.0)), sum(&q(-0.0)), "lane {i}");
            assert_ne!(sum(&q(nan_a)), sum(&q(nan_b)), "lane {i}");
        }
        assert_ne!(sum(&Vec2::new(0.0, 1.0)), sum(&Vec2::new(-0.0, 1.0)));
        assert_ne!(
            sum(&Vec3A::new(1.0, 0.0, 1.0)),
            sum(&Vec3A::new(1.0, -0.0, 1.0))
        );
        assert_ne!(
            sum(&Vec3A::new(1.0, 1.0, nan_a)),
            sum(&Vec3A::new(1.0, 1.0, nan_b))
        );
        let dnan_a = f64::from_bits(0x7ff8_0000_0000_0001);
        let dnan_b = f64::from_bits(0x7ff8_0000_0000_0002);
        assert_ne!(
            sum(&DVec3::new(1.0, 0.0, 1.0)),
            sum(&DVec3::new(1.0, -0.0, 1.0))
        );
        assert_ne!(sum(&DVec2::new(dnan_a, 1.0)), sum(&DVec2::new(dnan_b, 1.0)));
        assert_ne!(
            sum(&DQuat::from_xyzw(0.0, 0.0, 0.0, 1.0)),
            sum(&DQuat::from_xyzw(-0.0, 0.0, 0.0, 1.0))
        );
        // In a matrix's last column and an affine transform's translation too.
        let mut m = Mat4::IDENTITY;
        m.w_axis.w = nan_a;
        let mut n = Mat4::IDENTITY;
        n.w_axis.w = nan_b;
        assert_ne!(sum(&m), sum(&n));
        let t = |x: f32| Affine2::from_translation(Vec2::new(x, 1.0));
        assert_ne!(sum(&t(0.0)), sum(&t(-0.0)));
    }
}
