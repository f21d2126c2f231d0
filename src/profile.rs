//! Tracy profiling, behind the `tracy` feature.
//!
//! What a Tracy user sees, and where it comes from:
//!
//! - **Run** and **Sync** zones around the two phases ([`zone!`] in `runtime.rs`), and one
//!   zone per step of Sync — `gather`, `fold_all`, `fold_resources`, `return_buffers`,
//!   `commands` — in `sync/`. Their source locations are static and point at those call sites, exactly as
//!   `tracy_client::span!` written there would.
//! - One zone per **system** run (in `run.rs`, on the thread that runs it) and per
//!   component type's **merge** (in `fold/`), named by the system / type. Their source
//!   location is built once per system or type ([`enter!`] with a [`ZoneSite`] kept in the
//!   system's slot or the type's fold), interned by name and call site, and points at the
//!   call site; entering one is then a plain Tracy zone begin, with no allocation.
//! - A system or merge zone is a *job zone*: while its thread waits for the job's own
//!   parallel parts, the pool may have it run another batch's job (another system, another
//!   type's merge) so that nested batches cannot deadlock. The job zone is then **ended
//!   before and reopened after** the foreign job ([`suspend`], called by the pool), so the
//!   timeline shows `Steer`, `Bounds`, `Steer` side by side instead of `Bounds` nested
//!   inside `Steer`; the reopened part carries the text `resumed`. `stats()` subtracts the
//!   same helping time from the system's own time ([`crate::pool::Pool`] `helped`).
//!   A zone the *user* opens inside a system around a parallel iteration cannot be seen
//!   by this, so Tracy's strict nesting would end that zone instead: open your own zones
//!   around sequential code, or accept that helping splits them.
//! - A Tracy **message** when a frame fails (a system, merge or `Drop` panicked), so a
//!   stutter can be read from the timeline; **plots** of entities, writes, commands, merged
//!   and dropped outputs and a **frame mark** per frame (set by the runtime through
//!   [`plot!`] and [`frame_mark`]: this module knows no ECS type).
//! - **Thread names**: workers are `runsync-w{i}` (Linux keeps 15 bytes of a thread name;
//!   `runsync-worker-{i}` was cut to `runsync-worker-` for every worker). A thread that
//!   calls `frame()` is named `runsync-frame` in Tracy (which also sets the OS name) unless
//!   it already has a name; Tracy shows the main thread as `Main thread` whatever its name.
//!
//! **Zero cost when off.** Without the feature, [`Zone`], [`JobZone`], [`ZoneSite`] and
//! [`Suspended`] are field-less unit structs, the macros expand to them, and every hook is
//! an empty `#[inline(always)]` function: the call sites compile to nothing and no type
//! gains a byte.

#[cfg(feature = "tracy")]
mod imp {
    use std::cell::{Cell, RefCell};
    use std::collections::HashMap;
    use std::ffi::CString;
    use std::sync::{LazyLock, Mutex};

    use tracy_client::{Client, Span, SpanLocation};

    /// An open Tracy zone with a static location; it closes when dropped.
    pub(crate) struct Zone(#[allow(dead_code)] Span);

    impl Zone {
        /// Opens a zone at `loc` (made by `span_location!` at the call site).
        #[inline]
        pub(crate) fn new(loc: &'static SpanLocation) -> Zone {
            Zone(client().span(loc, 0))
        }
    }

    /// Opens a zone whose source location is this call site (function, file, line), like
    /// `tracy_client::span!`, and which closes when the returned guard is dropped.
    macro_rules! zone {
        ($name:literal) => {
            $crate::profile::Zone::new(::tracy_client::span_location!($name))
        };
    }
    pub(crate) use zone;

    /// Where a job zone (one system, one type's merge) is entered: its interned source
    /// location, made on first entry and kept for every later one.
    #[derive(Default)]
    pub(crate) struct ZoneSite(pub(crate) Option<&'static SpanLocation>);

    /// Enters the job zone kept in `site` (a `&mut ZoneSite`), named `name`, with this call
    /// site as its source location (built once per site and name, then reused).
    macro_rules! enter {
        ($site:expr, $name:expr) => {{
            let site: &mut $crate::profile::ZoneSite = $site;
            let loc = match site.0 {
                Some(loc) => loc,
                None => *site.0.insert($crate::profile::intern(
                    &$name,
                    {
                        struct S;
                        ::std::any::type_name::<S>()
                    },
                    concat!(file!(), "\0"),
                    line!(),
                )),
            };
            $crate::profile::JobZone::enter(loc)
        }};
    }
    pub(crate) use enter;

    type Key = (Box<str>, &'static str, &'static str, u32);

    /// Source locations of job zones, one per (name, function, file, line), leaked once:
    /// Tracy keeps a pointer to each for the whole session.
    static LOCATIONS: LazyLock<Mutex<HashMap<Key, &'static SpanLocation>>> =
        LazyLock::new(Default::default);

    /// The interned location for `name` at the call site described by `function` (a
    /// `type_name` of a local item, as `span_location!` uses), `file` (NUL-terminated) and
    /// `line`.
    pub(crate) fn intern(
        name: &str,
        function: &'static str,
        file: &'static str,
        line: u32,
    ) -> &'static SpanLocation {
        let mut map = LOCATIONS.lock().unwrap_or_else(|e| e.into_inner());
        let key: Key = (name.into(), function, file, line);
        if let Some(&loc) = map.get(&key) {
            return loc;
        }
        let cname = CString::new(name.replace('\0', " ")).expect("NULs replaced");
        let cname: &'static std::ffi::CStr = Box::leak(cname.into_boxed_c_str());
        let loc: &'static SpanLocation =
            Box::leak(Box::new(tracy_client::internal::make_span_location(
                function,
                cname.as_ptr().cast(),
                file.as_ptr(),
                line,
            )));
        map.insert(key, loc);
        loc
    }

    /// The innermost job zone of this thread: its location and, unless suspended, its
    /// open span.
    struct Open {
        loc: &'static SpanLocation,
        span: Option<Span>,
    }

    thread_local! {
        static CURRENT: RefCell<Option<Open>> = const { RefCell::new(None) };
        static NAMED: Cell<bool> = const { Cell::new(false) };
    }

    /// An open job zone (see the module docs); it closes when dropped.
    pub(crate) struct JobZone {
        outer: Option<Open>,
    }

    impl JobZone {
        pub(crate) fn enter(loc: &'static SpanLocation) -> JobZone {
            let span = client().span(loc, 0);
            let outer = CURRENT.replace(Some(Open {
                loc,
                span: Some(span),
            }));
            JobZone { outer }
        }
    }

    impl Drop for JobZone {
        fn drop(&mut self) {
            let this = CURRENT.replace(self.outer.take());
            drop(this); // ends this zone (or nothing, if it is suspended)
        }
    }

    /// While alive, this thread's job zone is closed; it reopens when dropped.
    pub(crate) struct Suspended(bool);

    /// Ends this thread's job zone, if one is open, until the guard is dropped: called by
    /// the pool around a job of another batch that it runs while waiting for its own.
    pub(crate) fn suspend() -> Suspended {
        Suspended(
            CURRENT.with_borrow_mut(|c| c.as_mut().is_some_and(|open| open.span.take().is_some())),
        )
    }

    impl Drop for Suspended {
        fn drop(&mut self) {
            if self.0 {
                CURRENT.with_borrow_mut(|c| {
                    if let Some(open) = c {
                        let span = client().span(open.loc, 0);
                        span.emit_text("resumed");
                        open.span = Some(span);
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

    /// Names the calling thread `runsync-frame` in Tracy, once per thread — if it has no
    /// name: a thread the user named keeps its name, and Tracy always shows the process's
    /// main thread as `Main thread` (renaming it would only change the process's name).
    pub(crate) fn name_frame_thread() {
        if !NAMED.replace(true) && std::thread::current().name().is_none() {
            client().set_thread_name("runsync-frame");
        }
    }

    /// A message on the Tracy timeline (a failed frame).
    #[cold]
    pub(crate) fn message(text: std::fmt::Arguments<'_>) {
        client().message(&text.to_string(), 0);
    }

    /// Sets the Tracy plot named `name` to `value` for this frame.
    #[inline]
    pub(crate) fn plot_value(name: tracy_client::PlotName, value: f64) {
        client().plot(name, value);
    }

    /// Ends the frame on the Tracy timeline.
    #[inline]
    pub(crate) fn frame_mark() {
        client().frame_mark();
    }

    /// Sets a Tracy plot, named by a string literal, to a value (`f64`).
    macro_rules! plot {
        ($name:literal, $value:expr) => {
            $crate::profile::plot_value(::tracy_client::plot_name!($name), $value)
        };
    }
    pub(crate) use plot;

    #[cfg(test)]
    mod tests {
        use super::*;

        fn job_zone_open() -> Option<bool> {
            CURRENT.with_borrow(|c| c.as_ref().map(|o| o.span.is_some()))
        }

        #[test]
        fn a_site_builds_its_location_once_and_names_share_it() {
            let mut site = ZoneSite::default();
            let mut locs = Vec::new();
            for _ in 0..3 {
                let _z = enter!(&mut site, "Sys");
                locs.push(site.0.expect("made on first entry") as *const SpanLocation);
            }
            assert!(locs.windows(2).all(|w| w[0] == w[1]));
            // Interned: the same name at the same call site is one location (a second
            // runtime with the same systems allocates nothing more).
            let a = intern("Sys", "f::S", "x.rs\0", 1);
            assert!(std::ptr::eq(a, intern("Sys", "f::S", "x.rs\0", 1)));
            assert!(!std::ptr::eq(a, intern("Other", "f::S", "x.rs\0", 1)));
            assert!(!std::ptr::eq(a, intern("Sys", "f::S", "x.rs\0", 2)));
        }

        #[test]
        fn helping_ends_the_job_zone_and_reopens_it() {
            let mut outer_site = ZoneSite::default();
            let mut inner_site = ZoneSite::default();
            assert_eq!(job_zone_open(), None);
            let outer = enter!(&mut outer_site, "Steer");
            assert_eq!(job_zone_open(), Some(true));
            {
                let _helping = suspend();
                assert_eq!(job_zone_open(), Some(false), "ended while helping");
                {
                    let _inner = enter!(&mut inner_site, "Bounds");
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
    }
}

#[cfg(not(feature = "tracy"))]
mod imp {
    /// Nothing: profiling is off.
    pub(crate) struct Zone;

    /// Nothing: profiling is off.
    macro_rules! zone {
        ($name:literal) => {
            $crate::profile::Zone
        };
    }
    pub(crate) use zone;

    /// Nothing: profiling is off.
    #[derive(Default)]
    pub(crate) struct ZoneSite;

    /// Nothing: profiling is off (`$name` is not evaluated).
    macro_rules! enter {
        ($site:expr, $name:expr) => {{
            let _: &mut $crate::profile::ZoneSite = $site;
            $crate::profile::JobZone
        }};
    }
    pub(crate) use enter;

    /// Nothing: profiling is off.
    pub(crate) struct JobZone;

    /// Nothing: profiling is off.
    pub(crate) struct Suspended;

    #[inline(always)]
    pub(crate) fn suspend() -> Suspended {
        Suspended
    }

    #[inline(always)]
    pub(crate) fn name_frame_thread() {}

    /// Nothing (and nothing is formatted): profiling is off.
    #[inline(always)]
    pub(crate) fn message(_text: std::fmt::Arguments<'_>) {}

    /// Nothing: profiling is off (`$value` is wrapped in a closure never called, so it
    /// is type-checked but not evaluated).
    macro_rules! plot {
        ($name:literal, $value:expr) => {{
            let _ = || $value;
        }};
    }
    pub(crate) use plot;

    #[inline(always)]
    pub(crate) fn frame_mark() {}
}

pub(crate) use imp::{
    JobZone, Zone, ZoneSite, enter, frame_mark, message, name_frame_thread, plot, suspend, zone,
};
#[cfg(feature = "tracy")]
pub(crate) use imp::{intern, plot_value};
