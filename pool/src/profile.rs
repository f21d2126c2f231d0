//! Tracy job zones, behind the `tracy` feature: the pieces the pool itself needs, and
//! which a program built on it (runsync's systems and merges) opens its own zones with.
//!
//! - A **job zone** ([`JobZone`]) is a zone around one job of the program's (a system, a
//!   type's merge), opened at a pair of source locations: the job's own, and the one its
//!   batches' chunks take. While its thread waits for the job's own parallel parts, the
//!   pool may have it run another batch's job so that nested batches cannot deadlock. The
//!   job zone is then **ended before and reopened after** the foreign job ([`suspend`],
//!   called by the pool once it has claimed a foreign job), so the timeline shows `Steer`,
//!   `Bounds`, `Steer` side by side instead of `Bounds` nested inside `Steer`.
//! - **Chunk zones**: a batch started inside a job zone takes the job's chunk location
//!   ([`chunk_site`], kept in the batch), and every job of it runs in a zone named
//!   `"{name} chunk"` ([`chunk`]) on whichever thread runs it, so that a worker busy with
//!   another job's parts does not look idle. Batches started outside any job zone get
//!   none. A chunk zone is a job zone too, so helping inside it splits it.
//! - **One text per piece**, set just before the piece ends, so that `csvexport -u` (which
//!   repeats the last text on a row without one) reads right: `suspended` if the piece
//!   ends because its thread helps, `resumed` first if it was reopened, and on a job's
//!   last piece the job's counts ([`JobZone::end`]), formatted into a stack buffer.
//!   Visited rows are counted per thread ([`visited`]), each job keeping only its own
//!   (what it counted while helping is given back).
//! - **Thread names**: workers are `runsync-w{i}`, registered with Tracy
//!   ([`name_worker`]) so that a profiler connecting after they exited still shows them.
//!
//! **Zero cost when off.** Without the feature, [`JobZone`], [`ChunkSite`] and
//! [`Suspended`] are field-less unit structs and every function is an empty
//! `#[inline(always)]` one: the call sites compile to nothing and no type gains a byte.

#[cfg(feature = "tracy")]
mod imp {
    use std::cell::{Cell, RefCell};
    use std::fmt;

    use tracy_client::{Client, Span, SpanLocation};

    /// The innermost job zone of this thread: its locations and, unless suspended, its
    /// open span.
    struct Open {
        loc: &'static SpanLocation,
        /// The location of the chunk zones of batches this job starts.
        chunk: &'static SpanLocation,
        span: Option<Span>,
        /// Whether the open piece is a reopened one (its text starts with `resumed`).
        resumed: bool,
    }

    thread_local! {
        static CURRENT: RefCell<Option<Open>> = const { RefCell::new(None) };
        /// Rows of the tables this thread's queries entered (see [`visited`]).
        static VISITED: Cell<u64> = const { Cell::new(0) };
    }

    /// An open job zone (see the module docs); it closes when dropped, or with counts
    /// through [`JobZone::end`].
    pub struct JobZone {
        outer: Option<Open>,
        /// False for a chunk of a batch started outside any job: no zone.
        active: bool,
        /// [`VISITED`] when the zone opened.
        visited_at: u64,
    }

    impl JobZone {
        /// Opens a job zone at `loc`, whose batches' chunks take `chunk`. Both locations
        /// must live for the whole program: Tracy keeps a pointer to each.
        pub fn open(loc: &'static SpanLocation, chunk: &'static SpanLocation) -> JobZone {
            let span = client().span(loc, 0);
            let outer = CURRENT.replace(Some(Open {
                loc,
                chunk,
                span: Some(span),
                resumed: false,
            }));
            JobZone {
                outer,
                active: true,
                visited_at: VISITED.get(),
            }
        }

        /// Rows counted by [`visited`] on this thread since the zone opened (not those
        /// of jobs it helped with while waiting).
        pub fn visited(&self) -> u64 {
            VISITED.get().wrapping_sub(self.visited_at)
        }

        /// Ends the zone with `text` (the job's counts) on its last piece. Formatted into a
        /// stack buffer (cut at 160 bytes): no allocation.
        pub fn end(mut self, text: fmt::Arguments<'_>) {
            self.close(Some(text));
        }

        fn close(&mut self, text: Option<fmt::Arguments<'_>>) {
            if !std::mem::take(&mut self.active) {
                return;
            }
            let this = CURRENT.replace(self.outer.take());
            if let Some(Open {
                span: Some(span),
                resumed,
                ..
            }) = this
            {
                emit(&span, resumed, false, text);
                drop(span); // ends this zone
            }
            // What this job visited is not its caller's (a job it helped, a chunk).
            VISITED.set(self.visited_at);
        }
    }

    impl Drop for JobZone {
        fn drop(&mut self) {
            self.close(None);
        }
    }

    /// Where the chunk zones of a batch go: the chunk location of the job that started it,
    /// or none for a batch started outside any job (whose jobs open zones of their own).
    #[derive(Clone, Copy)]
    pub struct ChunkSite(Option<&'static SpanLocation>);

    /// The chunk site for a batch this thread starts now.
    #[inline]
    pub fn chunk_site() -> ChunkSite {
        ChunkSite(CURRENT.with_borrow(|c| c.as_ref().map(|o| o.chunk)))
    }

    /// Opens the zone of one chunk (a job of a batch) at `site`, if it has one. A chunk
    /// zone is a job zone: it is split like one if its thread helps while inside it.
    #[inline]
    pub fn chunk(site: ChunkSite) -> JobZone {
        match site.0 {
            Some(loc) => JobZone::open(loc, loc),
            None => JobZone {
                outer: None,
                active: false,
                visited_at: 0,
            },
        }
    }

    /// Counts `rows` as visited by the job running on this thread: called once per table a
    /// query enters (with the table's length), so it costs nothing per row.
    #[inline]
    pub fn visited(rows: usize) {
        VISITED.set(VISITED.get().wrapping_add(rows as u64));
    }

    /// A zone text built without allocating: cut at its capacity.
    struct Text {
        buf: [u8; 160],
        len: usize,
    }

    impl fmt::Write for Text {
        fn write_str(&mut self, s: &str) -> fmt::Result {
            let n = s.len().min(self.buf.len() - self.len);
            self.buf[self.len..self.len + n].copy_from_slice(&s.as_bytes()[..n]);
            self.len += n;
            Ok(())
        }
    }

    impl Text {
        fn as_str(&self) -> &str {
            let bytes = &self.buf[..self.len];
            // A cut may split a character: keep what is whole.
            std::str::from_utf8(bytes).unwrap_or_else(|e| {
                std::str::from_utf8(&bytes[..e.valid_up_to()]).expect("valid up to here")
            })
        }
    }

    /// Sets the text of a job zone's piece, just before it ends: `resumed` if the piece was
    /// reopened, `suspended` if it ends because its thread helps, then `counts`, separated
    /// by spaces — one text per piece, as `csvexport -u` shows one.
    fn emit(span: &Span, resumed: bool, suspended: bool, counts: Option<fmt::Arguments<'_>>) {
        use fmt::Write as _;
        let mut t = Text {
            buf: [0; 160],
            len: 0,
        };
        let words = [
            resumed.then_some("resumed"),
            suspended.then_some("suspended"),
        ];
        for w in words.into_iter().flatten() {
            if t.len > 0 {
                let _ = t.write_str(" ");
            }
            let _ = t.write_str(w);
        }
        if let Some(counts) = counts {
            if t.len > 0 {
                let _ = t.write_str(" ");
            }
            let _ = t.write_fmt(counts);
        }
        if t.len > 0 {
            span.emit_text(t.as_str());
        }
    }

    /// While alive, this thread's job zone is closed; it reopens when dropped.
    pub struct Suspended(bool);

    /// Ends this thread's job zone, if one is open, until the guard is dropped: called by
    /// the pool around a job of another batch that it runs while waiting for its own.
    pub fn suspend() -> Suspended {
        Suspended(CURRENT.with_borrow_mut(|c| {
            let Some(open) = c else { return false };
            let Some(span) = open.span.take() else {
                return false;
            };
            emit(&span, open.resumed, true, None);
            true
        }))
    }

    impl Drop for Suspended {
        fn drop(&mut self) {
            if self.0 {
                CURRENT.with_borrow_mut(|c| {
                    if let Some(open) = c {
                        open.span = Some(client().span(open.loc, 0));
                        open.resumed = true;
                    }
                });
            }
        }
    }

    #[inline]
    fn client() -> Client {
        // With `enable` and without `manual-lifetime`, the client starts before `main`;
        // `start` just hands out a handle.
        Client::start()
    }

    /// Registers a worker's name (`runsync-w{i}`, its OS name) with Tracy, which keeps it
    /// for a profiler that connects after the worker has exited; the OS name alone is
    /// read from `/proc` at connection time, and is gone by then.
    pub fn name_worker() {
        if let Some(name) = std::thread::current().name() {
            client().set_thread_name(name);
        }
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        fn job_zone_open() -> Option<bool> {
            CURRENT.with_borrow(|c| c.as_ref().map(|o| o.span.is_some()))
        }

        /// A job's pair of locations, as a program interns them once per job.
        macro_rules! locations {
            ($name:literal) => {
                (
                    ::tracy_client::span_location!($name),
                    ::tracy_client::span_location!(concat!($name, " chunk")),
                )
            };
        }

        #[test]
        fn helping_ends_the_job_zone_and_reopens_it() {
            let (steer, steer_chunk) = locations!("Steer");
            let (bounds, bounds_chunk) = locations!("Bounds");
            assert_eq!(job_zone_open(), None);
            let outer = JobZone::open(steer, steer_chunk);
            assert_eq!(job_zone_open(), Some(true));
            {
                let _helping = suspend();
                assert_eq!(job_zone_open(), Some(false), "ended while helping");
                {
                    let _inner = JobZone::open(bounds, bounds_chunk);
                    assert_eq!(job_zone_open(), Some(true));
                }
                assert_eq!(job_zone_open(), Some(false));
            }
            assert_eq!(job_zone_open(), Some(true), "reopened after");
            drop(outer);
            assert_eq!(job_zone_open(), None);
            // Helping outside any job zone (the frame thread in Run) changes nothing.
            drop(suspend());
            assert_eq!(job_zone_open(), None);
        }

        #[test]
        fn chunks_take_the_site_of_the_job_that_started_their_batch() {
            assert!(chunk_site().0.is_none(), "no job: no chunk zones");
            let (steer, steer_chunk) = locations!("Steer");
            let job = JobZone::open(steer, steer_chunk);
            let chunks = chunk_site();
            assert!(std::ptr::eq(chunks.0.expect("inside a job"), steer_chunk));
            {
                let _chunk = chunk(chunks);
                assert_eq!(job_zone_open(), Some(true));
                // A batch started inside a chunk has chunk zones of the same name.
                assert!(std::ptr::eq(chunk_site().0.unwrap(), steer_chunk));
            }
            job.end(format_args!("writes={}", 1));
            assert_eq!(job_zone_open(), None);
            let none = chunk(chunk_site());
            assert!(!none.active);
        }

        #[test]
        fn a_job_counts_the_rows_it_visited_not_those_of_jobs_it_helped() {
            let (steer, steer_chunk) = locations!("Steer");
            let (bounds, bounds_chunk) = locations!("Bounds");
            let outer = JobZone::open(steer, steer_chunk);
            visited(100);
            {
                let _helping = suspend();
                let inner = JobZone::open(bounds, bounds_chunk);
                visited(7);
                assert_eq!(inner.visited(), 7);
            }
            visited(5);
            assert_eq!(outer.visited(), 105);
        }

        #[test]
        fn zone_texts_are_cut_on_a_character_boundary() {
            use fmt::Write as _;
            let mut t = Text {
                buf: [0; 160],
                len: 0,
            };
            for _ in 0..100 {
                let _ = t.write_str("é");
            }
            assert_eq!(t.len, 160);
            assert_eq!(t.as_str().chars().count(), 80);
            let mut t = Text {
                buf: [b'a'; 160],
                len: 159,
            };
            let _ = t.write_str("é");
            assert_eq!(t.as_str().len(), 159, "half a character is dropped");
        }
    }
}

#[cfg(not(feature = "tracy"))]
mod imp {
    /// Nothing: profiling is off.
    pub struct JobZone;

    impl JobZone {
        /// Nothing: profiling is off.
        #[inline(always)]
        pub fn visited(&self) -> u64 {
            0
        }

        /// Nothing (and nothing is formatted): profiling is off.
        #[inline(always)]
        pub fn end(self, _text: std::fmt::Arguments<'_>) {}
    }

    /// Nothing: profiling is off.
    #[derive(Clone, Copy)]
    pub struct ChunkSite;

    /// Nothing: profiling is off.
    #[inline(always)]
    pub fn chunk_site() -> ChunkSite {
        ChunkSite
    }

    /// Nothing: profiling is off.
    #[inline(always)]
    pub fn chunk(_site: ChunkSite) -> JobZone {
        JobZone
    }

    /// Nothing: profiling is off.
    #[inline(always)]
    pub fn visited(_rows: usize) {}

    /// Nothing: profiling is off.
    pub struct Suspended;

    /// Nothing: profiling is off.
    #[inline(always)]
    pub fn suspend() -> Suspended {
        Suspended
    }

    /// Nothing: profiling is off.
    #[inline(always)]
    pub fn name_worker() {}
}

pub use imp::{ChunkSite, JobZone, Suspended, chunk, chunk_site, name_worker, suspend, visited};
