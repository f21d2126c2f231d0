//! Values in and out of a save: serde through postcard, or plain data as its bytes.

use super::errors::ColumnError;
use super::io::SaveSource;

/// A postcard output that appends to a `Vec<u8>` (one serializer for a whole column).
pub(crate) struct VecOut<'a>(pub(crate) &'a mut Vec<u8>);

impl postcard::ser_flavors::Flavor for VecOut<'_> {
    type Output = ();
    #[inline(always)]
    fn try_push(&mut self, data: u8) -> postcard::Result<()> {
        self.0.push(data);
        Ok(())
    }
    #[inline(always)]
    fn try_extend(&mut self, data: &[u8]) -> postcard::Result<()> {
        self.0.extend_from_slice(data);
        Ok(())
    }
    fn finalize(self) -> postcard::Result<()> {
        Ok(())
    }
}

/// Appends `values`, postcard-encoded one after the other, to `out`.
pub(crate) fn encode_values<T: serde::Serialize>(
    values: &[T],
    out: &mut Vec<u8>,
) -> Result<(), String> {
    let mut ser = postcard::Serializer {
        output: VecOut(out),
    };
    for v in values {
        v.serialize(&mut ser).map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// Appends the bytes of `values` to `out`: the plain-data encoding, one copy.
pub(crate) fn encode_pod<T: bytemuck::Pod>(values: &[T], out: &mut Vec<u8>) -> Result<(), String> {
    out.extend_from_slice(bytemuck::cast_slice(values));
    Ok(())
}

/// Reads a plain-data column of `len` bytes holding `n` values onto `out`: any bytes are a
/// valid `Pod` value, so only the length is checked (before anything is read), and the
/// bytes are read straight into `out`, grown as they arrive (a zero-sized type reads and
/// allocates nothing).
pub(crate) fn decode_pod<T: bytemuck::Pod>(
    src: &mut SaveSource<'_>,
    len: u64,
    n: usize,
    out: &mut Vec<T>,
) -> Result<(), ColumnError> {
    let size = std::mem::size_of::<T>();
    if (n as u64).checked_mul(size as u64) != Some(len) {
        return Err(ColumnError::Decode(format!(
            "{len} bytes for {n} values of {size} bytes"
        )));
    }
    if size == 0 {
        out.resize(n, T::zeroed());
        return Ok(());
    }
    src.pod(n, "a column", out)?;
    Ok(())
}

/// Reads a serde column of `len` bytes holding `n` postcard-encoded values onto `out`.
pub(crate) fn decode_serde<T: serde::de::DeserializeOwned>(
    src: &mut SaveSource<'_>,
    len: u64,
    n: usize,
    out: &mut Vec<T>,
) -> Result<(), ColumnError> {
    let bytes = src.scratch(len, "a column")?;
    decode_values(bytes, n, out).map_err(ColumnError::Decode)
}

/// Decodes exactly `n` values from `bytes` (all of them) onto `out`. Reserves at most one
/// value per byte of input (a value may be zero-sized), so a count that lies cannot size
/// an allocation.
pub(crate) fn decode_values<T: serde::de::DeserializeOwned>(
    bytes: &[u8],
    n: usize,
    out: &mut Vec<T>,
) -> Result<(), String> {
    out.reserve(n.min(bytes.len().max(1)));
    let mut de = postcard::Deserializer::from_bytes(bytes);
    for i in 0..n {
        let v = T::deserialize(&mut de).map_err(|e| {
            let why = match e {
                postcard::Error::SerdeDeCustom => kept_message::<T>(bytes, i),
                _ => None,
            };
            format!("value {i} of {n}: {}", why.unwrap_or_else(|| e.to_string()))
        })?;
        out.push(v);
    }
    let left = de.finalize().map_err(|e| e.to_string())?;
    if !left.is_empty() {
        return Err(format!("{} bytes left over after {n} values", left.len()));
    }
    Ok(())
}

/// The message of the error value `i` of `bytes` failed to decode with, if its type's
/// `Deserialize` made it (`serde::de::Error::custom`: "cell side -3 is not a power of two")
/// at its top level. postcard's error keeps no message ("Serde Deserialization Error"),
/// so the value is decoded again, through [`Keep`], which does: only once a decode has
/// failed, so a load that succeeds pays nothing for it. `None` if the error comes from
/// deeper inside the value (a field's own `Deserialize`), or the decode goes otherwise.
fn kept_message<T: serde::de::DeserializeOwned>(bytes: &[u8], i: usize) -> Option<String> {
    let mut de = postcard::Deserializer::from_bytes(bytes);
    for _ in 0..i {
        T::deserialize(&mut de).ok()?;
    }
    match T::deserialize(Keep(&mut de)) {
        Err(Kept(Some(message))) => Some(message),
        _ => None,
    }
}

/// A deserializer that is `D` but keeps the message of an error made with
/// `serde::de::Error::custom` on it (by the `Deserialize` of the value it is handed to),
/// where `D`'s own error may drop it (postcard's does). Errors of `D` itself (and of
/// what it hands on, deeper in the value) come out as they are, without a message.
struct Keep<D>(D);

/// [`Keep`]'s error: the message of a custom error, `None` for one of the inner
/// deserializer's.
#[derive(Debug)]
struct Kept(Option<String>);

impl std::fmt::Display for Kept {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0.as_deref().unwrap_or("(no message)"))
    }
}

impl std::error::Error for Kept {}

impl serde::de::Error for Kept {
    fn custom<T: std::fmt::Display>(msg: T) -> Self {
        Kept(Some(msg.to_string()))
    }
}

/// Forwards `deserialize_*` methods to the inner deserializer, forgetting its error.
macro_rules! forward {
    ($($method:ident($($arg:ident: $ty:ty),*);)*) => {$(
        fn $method<V: serde::de::Visitor<'de>>(
            self,
            $($arg: $ty,)*
            visitor: V,
        ) -> Result<V::Value, Kept> {
            self.0.$method($($arg,)* visitor).map_err(|_| Kept(None))
        }
    )*};
}

impl<'de, D: serde::Deserializer<'de>> serde::Deserializer<'de> for Keep<D> {
    type Error = Kept;

    forward! {
        deserialize_any();
        deserialize_bool();
        deserialize_i8();
        deserialize_i16();
        deserialize_i32();
        deserialize_i64();
        deserialize_i128();
        deserialize_u8();
        deserialize_u16();
        deserialize_u32();
        deserialize_u64();
        deserialize_u128();
        deserialize_f32();
        deserialize_f64();
        deserialize_char();
        deserialize_str();
        deserialize_string();
        deserialize_bytes();
        deserialize_byte_buf();
        deserialize_option();
        deserialize_unit();
        deserialize_unit_struct(name: &'static str);
        deserialize_newtype_struct(name: &'static str);
        deserialize_seq();
        deserialize_tuple(len: usize);
        deserialize_tuple_struct(name: &'static str, len: usize);
        deserialize_map();
        deserialize_struct(name: &'static str, fields: &'static [&'static str]);
        deserialize_enum(name: &'static str, variants: &'static [&'static str]);
        deserialize_identifier();
        deserialize_ignored_any();
    }

    fn is_human_readable(&self) -> bool {
        self.0.is_human_readable()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `u32` that refuses odd values, with a message, as a type checking what it reads
    /// does.
    #[derive(Debug, PartialEq, serde::Serialize)]
    struct Even(u32);

    impl<'de> serde::Deserialize<'de> for Even {
        fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            let v = u32::deserialize(d)?;
            if v % 2 == 1 {
                return Err(serde::de::Error::custom(format!("Even: {v} is odd")));
            }
            Ok(Even(v))
        }
    }

    fn encoded<T: serde::Serialize>(values: &[T]) -> Vec<u8> {
        let mut out = Vec::new();
        encode_values(values, &mut out).unwrap();
        out
    }

    #[test]
    fn a_value_refused_by_its_type_says_why_which_postcard_alone_does_not() {
        let bytes = encoded(&[Even(2), Even(3)]);
        let mut out = Vec::new();
        let err = decode_values::<Even>(&bytes, 2, &mut out).unwrap_err();
        assert_eq!(err, "value 1 of 2: Even: 3 is odd");
        // Without the second decode, postcard's own error says nothing of it.
        let direct = postcard::from_bytes::<Even>(&encoded(&[Even(3)])).unwrap_err();
        assert_eq!(direct.to_string(), "Serde Deserialization Error");
        let mut out = Vec::new();
        decode_values::<Even>(&bytes[..1], 1, &mut out).unwrap();
        assert_eq!(out, [Even(2)]);
    }

    #[test]
    fn a_value_refused_deeper_inside_or_cut_short_says_what_postcard_says() {
        // A field's own refusal: postcard's (message-less) error, not a wrong message.
        let bytes = encoded(&[(1u8, 3u32)]);
        let mut out = Vec::new();
        let err = decode_values::<(u8, Even)>(&bytes, 1, &mut out).unwrap_err();
        assert_eq!(err, "value 0 of 1: Serde Deserialization Error");
        let mut out = Vec::new();
        let err = decode_values::<Even>(&[], 1, &mut out).unwrap_err();
        assert!(
            err.starts_with("value 0 of 1: ") && err.contains("end"),
            "{err}"
        );
        // A value that is not a `bool`: postcard's own error, kept as it was.
        let mut out = Vec::new();
        let err = decode_values::<bool>(&[7], 1, &mut out).unwrap_err();
        assert!(!err.contains("Serde Deserialization Error"), "{err}");
    }
}
