//! The framing: little-endian fields, sections with their length and CRC-32C, written
//! through a bounded buffer ([`Sink`]) and read a chunk at a time ([`SaveSource`]) or from a
//! slice ([`Reader`]).

use super::errors::{LoadError, SaveError};
use super::version::{
    EDITS_REPLAY_VERSION, PACKED_EDITS_REPLAY_VERSION, PACKED_REPLAY_VERSION, REPLAY_VERSION,
    STAGED_VERSION, UNCHECKED_VERSION, VERSION,
};

/// Appends little-endian fields to a buffer.
pub(crate) trait Put {
    fn put_u8(&mut self, v: u8);
    fn put_u32(&mut self, v: u32);
    fn put_u64(&mut self, v: u64);
    /// A `u64` length, then the bytes.
    fn put_bytes(&mut self, b: &[u8]);
}

impl Put for Vec<u8> {
    #[inline]
    fn put_u8(&mut self, v: u8) {
        self.push(v);
    }
    #[inline]
    fn put_u32(&mut self, v: u32) {
        self.extend_from_slice(&v.to_le_bytes());
    }
    #[inline]
    fn put_u64(&mut self, v: u64) {
        self.extend_from_slice(&v.to_le_bytes());
    }
    fn put_bytes(&mut self, b: &[u8]) {
        self.put_u64(b.len() as u64);
        self.extend_from_slice(b);
    }
}

/// Ends the section written to `out` since `from`: appends its trailer (length and
/// CRC-32C; see the module docs).
pub(crate) fn seal(out: &mut Vec<u8>, from: usize) {
    let crc = crc32c::crc32c(&out[from..]);
    let len = (out.len() - from) as u64;
    out.put_u64(len);
    out.put_u32(crc);
}

/// Compares a section as read (`len` bytes whose CRC-32C is `crc`) with its trailer.
fn check_section(
    len: u64,
    crc: u32,
    trailer: (u64, u32),
    section: impl FnOnce() -> String,
) -> Result<(), LoadError> {
    let what = if trailer.0 != len {
        format!("{len} bytes read, {} written", trailer.0)
    } else if trailer.1 != crc {
        format!("CRC-32C {crc:08x}, {:08x} written", trailer.1)
    } else {
        return Ok(());
    };
    Err(LoadError::Corrupt {
        section: section(),
        what,
    })
}

/// The first problem found in what a section means (an entity that is not allocated, a
/// name that is not UTF-8, ...), kept while the section is read on to its end: a damaged
/// section is then reported as damaged ([`LoadError::Corrupt`], by its check), a sound
/// one by its first problem. Problems that leave the rest unreadable (a length, an
/// unknown encoding) cannot wait: they are returned at once.
#[derive(Default)]
pub(crate) struct Found(Option<LoadError>);

impl Found {
    /// Keeps `e` if it is the first problem.
    pub(crate) fn keep(&mut self, e: LoadError) {
        self.0.get_or_insert(e);
    }

    /// The value, or `None` with its error kept.
    pub(crate) fn ok<T>(&mut self, r: Result<T, LoadError>) -> Option<T> {
        r.map_err(|e| self.keep(e)).ok()
    }

    /// The first problem, if any: after the section's check.
    pub(crate) fn check(self) -> Result<(), LoadError> {
        self.0.map_or(Ok(()), Err)
    }
}

/// Reads fields from a save held in memory; every read is bounds-checked, every count
/// checked against what is left.
pub(crate) struct Reader<'a> {
    rest: &'a [u8],
    /// The current section, from its start (to the end of the input).
    section: &'a [u8],
    /// Whether the input's sections carry trailers (a version read by
    /// [`header`](Self::header) that has them).
    checked: bool,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(bytes: &'a [u8]) -> Self {
        Reader {
            rest: bytes,
            section: bytes,
            checked: false,
        }
    }

    /// Ends a section: reads its trailer and checks it against the bytes read since the
    /// last one (or the start). Nothing for an input of a version without trailers.
    pub(crate) fn end_section(
        &mut self,
        section: impl FnOnce() -> String,
    ) -> Result<(), LoadError> {
        if !self.checked {
            return Ok(());
        }
        let len = self.section.len() - self.rest.len();
        let crc = crc32c::crc32c(&self.section[..len]);
        let trailer = (
            self.u64("a section's check")?,
            self.u32("a section's check")?,
        );
        self.section = self.rest;
        check_section(len as u64, crc, trailer, section)
    }

    pub(crate) fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], LoadError> {
        if self.rest.len() < n {
            return Err(LoadError::Truncated { what });
        }
        let (head, tail) = self.rest.split_at(n);
        self.rest = tail;
        Ok(head)
    }

    pub(crate) fn u8(&mut self, what: &'static str) -> Result<u8, LoadError> {
        Ok(self.take(1, what)?[0])
    }

    /// What is left to read.
    pub(crate) fn rest(&self) -> &'a [u8] {
        self.rest
    }

    pub(crate) fn u32(&mut self, what: &'static str) -> Result<u32, LoadError> {
        let b = self.take(4, what)?;
        Ok(u32::from_le_bytes(b.try_into().expect("4 bytes")))
    }

    pub(crate) fn u64(&mut self, what: &'static str) -> Result<u64, LoadError> {
        let b = self.take(8, what)?;
        Ok(u64::from_le_bytes(b.try_into().expect("8 bytes")))
    }

    /// A `u64` count of entries of at least `min_size` bytes each, checked against what
    /// is left (so a count that lies cannot size an allocation).
    pub(crate) fn count(
        &mut self,
        min_size: usize,
        what: &'static str,
    ) -> Result<usize, LoadError> {
        let n = self.u64(what)?;
        let fits = usize::try_from(n)
            .ok()
            .filter(|&n| n.saturating_mul(min_size.max(1)) <= self.rest.len());
        fits.ok_or(LoadError::BadLength {
            what,
            length: n,
            remaining: self.rest.len(),
        })
    }

    /// A `u64` length, then that many bytes.
    pub(crate) fn bytes(&mut self, what: &'static str) -> Result<&'a [u8], LoadError> {
        let n = self.count(1, what)?;
        self.take(n, what)
    }

    /// A length-prefixed UTF-8 name.
    pub(crate) fn name(&mut self, what: &'static str) -> Result<&'a str, LoadError> {
        let b = self.bytes(what)?;
        std::str::from_utf8(b).map_err(|_| LoadError::BadData {
            what: format!("{what} is not UTF-8"),
        })
    }

    /// Checks a replay's magic and version (which says whether sections end in trailers,
    /// and which checksum its frames hold: [`REPLAY_VERSION`]'s or the older ones'): the
    /// start of the first section. Returns the version.
    pub(crate) fn replay_header(&mut self, magic: &[u8; 8]) -> Result<u32, LoadError> {
        let found = &self.rest[..self.rest.len().min(8)];
        if found != magic {
            return Err(LoadError::BadMagic {
                found: found.to_vec(),
            });
        }
        self.take(8, "the magic")?;
        let version = self.u32("the version")?;
        self.checked = match version {
            REPLAY_VERSION
            | EDITS_REPLAY_VERSION
            | PACKED_REPLAY_VERSION
            | PACKED_EDITS_REPLAY_VERSION => true,
            VERSION | UNCHECKED_VERSION => check_version(version, false)?,
            found => {
                return Err(LoadError::Version {
                    found,
                    supported: PACKED_EDITS_REPLAY_VERSION,
                });
            }
        };
        Ok(version)
    }

    /// The input must end here.
    pub(crate) fn finish(&self) -> Result<(), LoadError> {
        match self.rest.len() {
            0 => Ok(()),
            count => Err(LoadError::TrailingBytes { count }),
        }
    }
}

/// How many bytes a [`Sink`] gathers before it writes them out, and a [`SaveSource`] reads
/// ahead; also the most a [`SaveSource`] allocates ahead of the bytes it has read.
const CHUNK: usize = 64 * 1024;

/// Writes a save to a `Write` through a bounded buffer: fields are gathered in `buf` and
/// written out a chunk at a time, big slices (plain-data columns) straight through, so a
/// save never holds a copy of the whole file. The first I/O error is kept (nothing more
/// is written after it) and returned by [`finish`](Self::finish).
///
/// It keeps the CRC-32C and length of the current section as its bytes go out, and
/// [`end_section`](Self::end_section) writes them (see the module docs).
pub(crate) struct Sink<'w> {
    w: &'w mut dyn std::io::Write,
    /// Bytes not written yet. A field may be patched here until the next `put_*`, which
    /// may write them out (see [`placeholder`](Self::placeholder)).
    pub(crate) buf: Vec<u8>,
    error: Option<std::io::Error>,
    /// `buf[..summed]` are in `crc` and `len` (or a trailer); the rest may still be
    /// patched.
    summed: usize,
    /// The current section's CRC-32C and length, so far.
    crc: u32,
    len: u64,
}

impl<'w> Sink<'w> {
    pub(crate) fn new(w: &'w mut dyn std::io::Write) -> Self {
        Sink {
            w,
            buf: Vec::with_capacity(CHUNK),
            error: None,
            summed: 0,
            crc: 0,
            len: 0,
        }
    }

    /// Adds the gathered bytes not summed yet to the section's CRC and length.
    fn sum(&mut self) {
        let new = &self.buf[self.summed..];
        self.crc = crc32c::crc32c_append(self.crc, new);
        self.len += new.len() as u64;
        self.summed = self.buf.len();
    }

    /// Writes out the gathered bytes.
    fn flush(&mut self) {
        self.sum();
        if self.error.is_none() && !self.buf.is_empty() {
            if let Err(e) = self.w.write_all(&self.buf) {
                self.error = Some(e);
            }
        }
        self.buf.clear();
        self.summed = 0;
    }

    /// Ends a section: writes its trailer (its length and CRC-32C) after it. Every
    /// placeholder in it must have been patched.
    pub(crate) fn end_section(&mut self) {
        self.spill();
        self.sum();
        self.buf.extend_from_slice(&self.len.to_le_bytes());
        self.buf.extend_from_slice(&self.crc.to_le_bytes());
        self.summed = self.buf.len();
        (self.crc, self.len) = (0, 0);
    }

    /// Writes out the gathered bytes if they are a chunk or more.
    #[inline]
    fn spill(&mut self) {
        if self.buf.len() >= CHUNK {
            self.flush();
        }
    }

    /// Appends `n` zero bytes to be patched in `buf[at..at + n]` (`at` returned) before
    /// the next `put_*` or [`raw`](Self::raw).
    pub(crate) fn placeholder(&mut self, n: usize) -> usize {
        self.spill();
        let at = self.buf.len();
        self.buf.resize(at + n, 0);
        at
    }

    /// Appends bytes; a chunk or more are written straight through, not copied.
    pub(crate) fn raw(&mut self, bytes: &[u8]) {
        if bytes.len() < CHUNK {
            self.spill();
            self.buf.extend_from_slice(bytes);
        } else {
            self.flush();
            self.crc = crc32c::crc32c_append(self.crc, bytes);
            self.len += bytes.len() as u64;
            if self.error.is_none() {
                if let Err(e) = self.w.write_all(bytes) {
                    self.error = Some(e);
                }
            }
        }
    }

    /// Writes out the rest; the first I/O error, if there was one. The last section
    /// must have been ended.
    pub(crate) fn finish(mut self) -> Result<(), SaveError> {
        debug_assert!(
            self.summed == self.buf.len() && self.len == 0,
            "bytes after the last section"
        );
        self.flush();
        match self.error.take() {
            Some(e) => Err(SaveError::Io(e)),
            None => Ok(()),
        }
    }
}

impl Put for Sink<'_> {
    #[inline]
    fn put_u8(&mut self, v: u8) {
        self.spill();
        self.buf.push(v);
    }
    #[inline]
    fn put_u32(&mut self, v: u32) {
        self.spill();
        self.buf.extend_from_slice(&v.to_le_bytes());
    }
    #[inline]
    fn put_u64(&mut self, v: u64) {
        self.spill();
        self.buf.extend_from_slice(&v.to_le_bytes());
    }
    fn put_bytes(&mut self, b: &[u8]) {
        self.put_u64(b.len() as u64);
        self.raw(b);
    }
}

/// Reads a save from a `Read` a chunk at a time: fields from a read-ahead buffer, big
/// runs of bytes straight into their destination (plain-data values through a buffer
/// aligned for them). It never allocates by a length the input claims beyond its
/// [`allowance`](Self::allowance), 16 times the bytes read so far, so a length that lies
/// ends in [`LoadError::Truncated`], not in a huge allocation.
///
/// Once [`header`](Self::header) has read a version with integrity checks, it keeps the
/// CRC-32C and length of the bytes consumed in the current section, and
/// [`end_section`](Self::end_section) checks them against the section's trailer. Bytes
/// are summed a buffer at a time, as it is refilled, not field by field.
pub(crate) struct SaveSource<'r> {
    r: &'r mut dyn std::io::Read,
    /// Read ahead: `buf[pos..end]` are the next bytes.
    buf: Box<[u8]>,
    pos: usize,
    end: usize,
    /// `buf[summed..pos]` are consumed but not yet in `crc` and `len`.
    summed: usize,
    /// The current section's CRC-32C and length, so far (when `checked`).
    crc: u32,
    len: u64,
    /// Whether the input's sections end in trailers.
    checked: bool,
    /// Whether the input is version 5: it holds a runtime's stage parts (see
    /// `savefile`'s "Versions").
    staged: bool,
    /// A serde column's bytes, reused from column to column.
    scratch: Vec<u8>,
    /// Plain-data values on their way to a column, aligned for them.
    aligned: Vec<u128>,
    /// Bytes read from the input so far.
    consumed: usize,
}

impl<'r> SaveSource<'r> {
    pub(crate) fn new(r: &'r mut dyn std::io::Read) -> Self {
        Self::with_chunk(r, CHUNK)
    }

    /// A source over an input of at most `len` bytes (one value of an entity record):
    /// its buffers are as small as that allows, not a chunk (64 KiB zeroed per value
    /// was most of the time of importing an entity).
    pub(crate) fn sized(r: &'r mut dyn std::io::Read, len: usize) -> Self {
        Self::with_chunk(r, len.clamp(16, CHUNK).next_multiple_of(16))
    }

    /// A source whose read-ahead buffer is `chunk` bytes (a multiple of 16, at most
    /// [`CHUNK`]).
    fn with_chunk(r: &'r mut dyn std::io::Read, chunk: usize) -> Self {
        SaveSource {
            r,
            buf: vec![0; chunk].into_boxed_slice(),
            pos: 0,
            end: 0,
            summed: 0,
            crc: 0,
            len: 0,
            checked: false,
            staged: false,
            scratch: Vec::new(),
            aligned: Vec::new(),
            consumed: 0,
        }
    }

    /// Reads into `into`; `Ok(0)` at the end of the input.
    fn read_some(&mut self, into: &mut [u8]) -> Result<usize, LoadError> {
        loop {
            match self.r.read(into) {
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(LoadError::Io(e)),
                Ok(n) => {
                    self.consumed += n;
                    return Ok(n);
                }
            }
        }
    }

    /// Adds the consumed bytes of the buffer not summed yet to the section's CRC and
    /// length.
    fn sum(&mut self) {
        if self.checked {
            let new = &self.buf[self.summed..self.pos];
            self.crc = crc32c::crc32c_append(self.crc, new);
            self.len += new.len() as u64;
        }
        self.summed = self.pos;
    }

    /// Ends a section: reads its trailer and checks it against the bytes consumed since
    /// the last one (or the start). Nothing for an input of a version without trailers.
    pub(crate) fn end_section(
        &mut self,
        section: impl FnOnce() -> String,
    ) -> Result<(), LoadError> {
        if !self.checked {
            return Ok(());
        }
        self.sum();
        let (crc, len) = (self.crc, self.len);
        let trailer = (
            self.u64("a section's check")?,
            self.u32("a section's check")?,
        );
        // The trailer is no section's.
        self.summed = self.pos;
        (self.crc, self.len) = (0, 0);
        check_section(len, crc, trailer, section)
    }

    /// How many bytes may be reserved ahead of reading them: 16 times what was read so
    /// far (a column is a few times its rows' entity ids), at least a few chunks. A file
    /// that lies about a length gets no more than that before it runs out.
    fn allowance(&self) -> usize {
        self.consumed.saturating_mul(16).max(4 * CHUNK)
    }

    /// Fills `into` exactly, from the read-ahead buffer first, then the input.
    fn read_exact(&mut self, into: &mut [u8], what: &'static str) -> Result<(), LoadError> {
        let buffered = (self.end - self.pos).min(into.len());
        into[..buffered].copy_from_slice(&self.buf[self.pos..self.pos + buffered]);
        self.pos += buffered;
        let mut done = buffered;
        if done < into.len() {
            // The buffer is used up: sum it before reading past it.
            self.sum();
        }
        while done < into.len() {
            // Small reads refill the buffer (one `read` for many fields); big ones go
            // straight to their destination.
            if into.len() - done < self.buf.len() / 4 {
                self.fill(into.len() - done, what)?;
                let n = into.len() - done;
                into[done..].copy_from_slice(&self.buf[self.pos..self.pos + n]);
                self.pos += n;
                return Ok(());
            }
            match self.read_some(&mut into[done..])? {
                0 => return Err(LoadError::Truncated { what }),
                n => {
                    if self.checked {
                        self.crc = crc32c::crc32c_append(self.crc, &into[done..done + n]);
                        self.len += n as u64;
                    }
                    done += n;
                }
            }
        }
        Ok(())
    }

    /// Makes at least `n` (at most a chunk) bytes buffered.
    fn fill(&mut self, n: usize, what: &'static str) -> Result<(), LoadError> {
        debug_assert!(n <= self.buf.len());
        if self.end - self.pos >= n {
            return Ok(());
        }
        self.sum();
        self.buf.copy_within(self.pos..self.end, 0);
        self.end -= self.pos;
        self.pos = 0;
        self.summed = 0;
        while self.end < n {
            let mut buf = std::mem::take(&mut self.buf);
            let read = self.read_some(&mut buf[self.end..]);
            self.buf = buf;
            match read? {
                0 => return Err(LoadError::Truncated { what }),
                k => self.end += k,
            }
        }
        Ok(())
    }

    #[inline(always)]
    fn array<const N: usize>(&mut self, what: &'static str) -> Result<[u8; N], LoadError> {
        if self.end - self.pos < N {
            self.fill_cold(N, what)?;
        }
        let b: [u8; N] = self.buf[self.pos..self.pos + N]
            .try_into()
            .expect("N bytes");
        self.pos += N;
        Ok(b)
    }

    #[cold]
    #[inline(never)]
    fn fill_cold(&mut self, n: usize, what: &'static str) -> Result<(), LoadError> {
        self.fill(n, what)
    }

    /// The bytes of the next entries of `size` bytes (at most `n` of them, at least one,
    /// at most a chunk): for a list read in runs rather than field by field. Consumed.
    pub(crate) fn entries(
        &mut self,
        n: usize,
        size: usize,
        what: &'static str,
    ) -> Result<&[u8], LoadError> {
        debug_assert!(n > 0 && size > 0 && size <= self.buf.len());
        if self.end - self.pos < size {
            self.fill(size, what)?;
        }
        let k = ((self.end - self.pos) / size).min(n);
        let run = &self.buf[self.pos..self.pos + k * size];
        self.pos += k * size;
        Ok(run)
    }

    #[inline]
    pub(crate) fn u8(&mut self, what: &'static str) -> Result<u8, LoadError> {
        Ok(self.array::<1>(what)?[0])
    }

    #[inline]
    pub(crate) fn u32(&mut self, what: &'static str) -> Result<u32, LoadError> {
        Ok(u32::from_le_bytes(self.array(what)?))
    }

    #[inline]
    pub(crate) fn u64(&mut self, what: &'static str) -> Result<u64, LoadError> {
        Ok(u64::from_le_bytes(self.array(what)?))
    }

    /// A `u64` count. Nothing is allocated by it: callers reserve at most
    /// [`capacity`](Self::capacity) entries up front and grow as entries are read.
    pub(crate) fn count(&mut self, what: &'static str) -> Result<usize, LoadError> {
        let n = self.u64(what)?;
        usize::try_from(n).map_err(|_| LoadError::BadData {
            what: format!("{what}: {n} entries, more than this machine can address"),
        })
    }

    /// What to reserve up front for `n` entries of `size` bytes claimed by the input:
    /// no more than [`allowance`](Self::allowance) allows.
    pub(crate) fn capacity(&self, n: usize, size: usize) -> usize {
        n.min(self.allowance() / size.max(1))
    }

    /// `n` bytes into `out` (replacing what it held), grown a chunk at a time as they
    /// are read.
    fn read_vec(&mut self, n: u64, what: &'static str, out: &mut Vec<u8>) -> Result<(), LoadError> {
        out.clear();
        let n = usize::try_from(n).map_err(|_| LoadError::Truncated { what })?;
        out.reserve(n.min(self.allowance()));
        while out.len() < n {
            let at = out.len();
            out.resize(at + (n - at).min(4 * CHUNK), 0);
            self.read_exact(&mut out[at..], what)?;
        }
        Ok(())
    }

    /// A `u64` length, then that many bytes.
    pub(crate) fn bytes(&mut self, what: &'static str) -> Result<Vec<u8>, LoadError> {
        let n = self.u64(what)?;
        let mut out = Vec::new();
        self.read_vec(n, what, &mut out)?;
        Ok(out)
    }

    /// `n` bytes into the scratch buffer (reused), borrowed until the next read.
    pub(crate) fn scratch(&mut self, n: u64, what: &'static str) -> Result<&[u8], LoadError> {
        let mut scratch = std::mem::take(&mut self.scratch);
        let read = self.read_vec(n, what, &mut scratch);
        self.scratch = scratch;
        read?;
        Ok(&self.scratch)
    }

    /// `n` plain-data values onto `out`, their bytes read straight into it, a chunk of
    /// values at a time.
    pub(crate) fn pod<T: bytemuck::Pod>(
        &mut self,
        n: usize,
        what: &'static str,
        out: &mut Vec<T>,
    ) -> Result<(), LoadError> {
        let size = std::mem::size_of::<T>().max(1);
        out.reserve(n.min(self.allowance() / size));
        let mut left = n;
        let chunk = self.buf.len();
        if std::mem::align_of::<T>() <= std::mem::align_of::<u128>() && size <= chunk {
            // A chunk of values at a time, read into a buffer aligned for `T` (it stays in
            // cache), then copied onto `out` with one `memcpy`.
            let mut aligned = std::mem::take(&mut self.aligned);
            aligned.resize(chunk / 16, 0);
            let per_chunk = chunk / size;
            let read = loop {
                if left == 0 {
                    break Ok(());
                }
                let step = left.min(per_chunk);
                let bytes = &mut bytemuck::cast_slice_mut::<u128, u8>(&mut aligned)[..step * size];
                if let Err(e) = self.read_exact(bytes, what) {
                    break Err(e);
                }
                out.extend_from_slice(bytemuck::cast_slice(bytes));
                left -= step;
            };
            self.aligned = aligned;
            return read;
        }
        // Over-aligned or huge values: zeroed a chunk at a time (safe Rust cannot read
        // into uninitialised memory), then read over while still in cache.
        let per_chunk = (4 * CHUNK / size).max(1);
        while left > 0 {
            let at = out.len();
            let step = left.min(per_chunk);
            out.resize(at + step, T::zeroed());
            self.read_exact(bytemuck::cast_slice_mut(&mut out[at..]), what)?;
            left -= step;
        }
        Ok(())
    }

    /// Checks the magic and the version (which says whether sections end in trailers):
    /// the start of the first section.
    pub(crate) fn header(&mut self, magic: &[u8; 8]) -> Result<(), LoadError> {
        let mut found = Vec::with_capacity(8);
        while found.len() < 8 {
            match self.u8("the magic") {
                Ok(b) => found.push(b),
                Err(LoadError::Truncated { .. }) => break,
                Err(e) => return Err(e),
            }
            if !magic.starts_with(&found) {
                break;
            }
        }
        if found != magic {
            return Err(LoadError::BadMagic { found });
        }
        let version = self.u32("the version")?;
        self.checked = check_version(version, true)?;
        self.staged = version == STAGED_VERSION;
        // The magic and the version open the first section.
        self.summed = self.pos;
        self.crc = crc32c::crc32c_append(crc32c::crc32c(magic), &version.to_le_bytes());
        self.len = 12;
        Ok(())
    }

    /// Whether the input holds a runtime's stage parts (version 5; known once
    /// [`header`](Self::header) has read the version).
    pub(crate) fn staged(&self) -> bool {
        self.staged
    }

    /// The input must end here: reads it to its end, counting.
    pub(crate) fn finish(&mut self) -> Result<(), LoadError> {
        let mut count = self.end - self.pos;
        self.pos = self.end;
        let mut buf = std::mem::take(&mut self.buf);
        let read = loop {
            match self.read_some(&mut buf) {
                Ok(0) => break Ok(()),
                Ok(n) => count += n,
                Err(e) => break Err(e),
            }
        };
        self.buf = buf;
        read?;
        match count {
            0 => Ok(()),
            count => Err(LoadError::TrailingBytes { count }),
        }
    }
}

/// Whether a version this build reads has integrity checks, or the error. `staged`:
/// whether version 5 (a save's stage parts) is one here (not for a replay's own header).
fn check_version(version: u32, staged: bool) -> Result<bool, LoadError> {
    match version {
        VERSION => Ok(true),
        STAGED_VERSION if staged => Ok(true),
        UNCHECKED_VERSION => Ok(false),
        found => Err(LoadError::Version {
            found,
            supported: if staged { STAGED_VERSION } else { VERSION },
        }),
    }
}
