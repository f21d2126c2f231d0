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
        let v = T::deserialize(&mut de).map_err(|e| format!("value {i} of {n}: {e}"))?;
        out.push(v);
    }
    let left = de.finalize().map_err(|e| e.to_string())?;
    if !left.is_empty() {
        return Err(format!("{} bytes left over after {n} values", left.len()));
    }
    Ok(())
}
