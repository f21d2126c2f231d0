//! Tracy profiling, behind the `tracy` feature, and `tracing` spans, behind the `tracing`
//! feature; either, both or neither (then nothing is compiled). The frame's call sites use
//! one macro each ([`zone!`], [`zone_named!`], [`enter!`]), whose guard ([`Phase`],
//! [`Job`]) holds the Tracy zone and the entered span.
//!
//! What a Tracy user sees, and where it comes from:
//!
//! - With more than one stage, a zone per **stage**, named by the stage ([`zone_named!`]
//!   in `runtime/frame.rs`, a plain zone whose location is built once per stage), around that
//!   stage's Run and Sync.
//! - **Run** and **Sync** zones around the two phases ([`zone!`] in `runtime/frame.rs`), and one
//!   zone per step of Sync — `gather`, `fold_all`, `fold_resources`, `return_buffers`,
//!   `commands` — in `sync/`. Their source locations are static and point at those call sites, exactly as
//!   `tracy_client::span!` written there would.
//! - One zone per **system** run (in `run.rs`, on the thread that runs it) and per
//!   component type's **merge** (in `fold/`), named by the system / type. Their source
//!   location is built once per system or type ([`enter!`] with a [`ZoneSite`] kept in
//!   the system's entry or the type's fold), interned by name and call site, and points
//!   at the **user's code**: where the system was added (`Runtime::add_system*`) or the
//!   type registered (`World::register*`), kept by `#[track_caller]` ([`ZoneSite::at`]),
//!   so that Tracy's "go to source" opens the game, not `run.rs`; entering one is then a
//!   plain Tracy zone begin, with no allocation.
//! - A system or merge zone is a *job zone*: while its thread waits for the job's own
//!   parallel parts, the pool may have it run another batch's job (another system, another
//!   type's merge) so that nested batches cannot deadlock. The job zone is then **ended
//!   before and reopened after** the foreign job ([`suspend`](runsync_pool::profile::suspend),
//!   called by the pool once it has claimed a foreign job), so the timeline shows `Steer`, `Bounds`, `Steer` side by
//!   side instead of `Bounds` nested inside `Steer`. `stats()` subtracts the same helping
//!   time from the system's own time ([`crate::pool::Pool`] `helped`).
//!   A zone the *user* opens inside a system around a parallel iteration cannot be seen
//!   by this, so Tracy's strict nesting would end that zone instead: open your own zones
//!   around sequential code, or accept that helping splits them.
//! - **Chunk zones**: a batch started inside a job (`par_for_each`, `write_each`, a
//!   row-range merge) takes the job's chunk location ([`chunk_site`](runsync_pool::profile::chunk_site), kept in the batch),
//!   and every job of it runs in a zone named `"{name} chunk"` ([`chunk`](runsync_pool::profile::chunk)) on whichever
//!   thread runs it, so that a worker busy with another system's parts does not look idle.
//!   Batches started outside a job (Run's systems, Sync's types) get none: their jobs open
//!   their own zones. A chunk zone is a job zone too, so helping inside it splits it.
//! - **One text per piece**, set just before the piece ends, so that `csvexport -u` (which
//!   repeats the last text on a row without one) reads right: `suspended` if the piece
//!   ends because its thread helps, `resumed` first if it was reopened, and on a job's
//!   last piece its counts ([`JobZone::end`]: a system's writes, visited rows and own
//!   time, a merge's merged and dropped outputs, a chunk's index), formatted into a stack
//!   buffer. Visited rows are counted per table entered by a query ([`visited`]), per
//!   thread, each job keeping only its own (what it counted while helping is given back).
//! - A Tracy **message** when a frame fails (a system, merge or `Drop` panicked), so a
//!   stutter can be read from the timeline; **plots** of entities, writes, commands, merged
//!   and dropped outputs and of `Runtime::memory()`, and a **frame mark** per frame (set by
//!   the runtime through [`runtime_plot!`] and [`RuntimeProfile`]: this module knows no ECS
//!   type). A program that runs several runtimes at once (the shards of
//!   `runsync-cluster`) labels each (`RuntimeBuilder::tracy_label`: its plots are
//!   `runsync entities [shard 1]`, ...) and marks frames once itself
//!   (`RuntimeBuilder::tracy_frame_marks(false)`, then `runsync::__tracy::frame_mark`),
//!   so Tracy shows one frame mark per frame and one plot per runtime.
//! - **Thread names**: workers are `runsync-w{i}` (Linux keeps 15 bytes of a thread name;
//!   `runsync-worker-{i}` was cut to `runsync-worker-` for every worker), registered with
//!   Tracy ([`name_worker`](runsync_pool::profile::name_worker)) so that a profiler connecting after they exited still shows
//!   them. A thread that calls `frame()` is named `runsync-frame` in Tracy (which also
//!   sets the OS name) unless it already has a name, which is then registered; Tracy
//!   shows the main thread as `Main thread` whatever its name.
//! - **Allocations**, with the `tracy-memory` feature: a `#[global_allocator]` reporting
//!   to Tracy (`memory`, the only item of that feature).
//!
//! The job zones themselves (opening, suspending, chunks, texts, visited rows, worker
//! names) are the pool's, in `runsync_pool::profile` (its `tracy` feature, which runsync's
//! enables): the pool opens chunk zones and suspends job zones, and knows no ECS. This
//! module interns the zones' locations by system, type and call site, and has everything
//! else (phases, plots, frame marks, messages).
//!
//! What a `tracing` subscriber sees (the `tracing` feature), from the same call sites:
//!
//! - One **tree per frame**: a span `frame` (field `frame`: its number; once it ends,
//!   `entities`, `writes`, `commands`, `merged`, `dropped`, `spawned`, `despawned`,
//!   `messages`, the figures of [`FrameStats`](crate::FrameStats)), with several stages a
//!   span `stage` per stage (`stage = name`), then `Run` (`systems`: how many are enabled)
//!   and `Sync` (`merged`, `dropped`, `spawned`, `despawned`, `messages`), and under Sync
//!   its steps, `gather` ... `deliver_messages`. Those are entered on the frame thread.
//! - A span `system` per system run (`system = name`; `writes`, `own_us` once it ends)
//!   and `fold` per type's merge (`component = type name`; `merged`, `dropped`), entered
//!   on whichever thread runs the job, with an **explicit parent**: the frame thread's
//!   current span when the batch started ([`current`]: Run, or Sync's `fold_all`),
//!   handed to the jobs, since a worker has no current span of the frame's. A system's
//!   own `tracing` events and spans are then in its span. Spans are not split when a
//!   thread helps (a job run while waiting is a span of its own, under its own parent).
//! - Levels: `frame`, `stage`, `Run`, `Sync` and `system` at `INFO`; Sync's steps and the
//!   folds at `DEBUG`. Targets are the modules (`runsync::runtime::frame`,
//!   `runsync::sync`, `runsync::run`, `runsync::fold`).
//! - An `ERROR` **event** per failed frame (`frame`, `error`: the
//!   [`FrameError`](crate::FrameError)'s message), in the frame's span.
//!
//! **Zero cost when off.** Without the feature, [`Zone`], [`JobZone`], [`ZoneSite`] (and
//! the pool's `ChunkSite` and `Suspended`) are field-less unit structs, the macros expand
//! to them, and every hook is an empty `#[inline(always)]` function: the call sites
//! compile to nothing and no type gains a byte. Without `tracing`, [`Entered`] and
//! [`Parent`] are unit structs too, and the fields' values are wrapped in closures never
//! called (type-checked, not evaluated).

#[cfg(feature = "tracy")]
mod imp {
    use std::cell::Cell;
    use std::collections::HashMap;
    use std::ffi::CString;
    use std::panic::Location;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::{LazyLock, Mutex};

    use tracy_client::{Client, PlotName, Span, SpanLocation};

    use super::{JobZone, PLOTS, Plot};

    /// An open Tracy zone with a static location; it closes when dropped.
    pub(crate) struct Zone(#[allow(dead_code)] Span);

    impl Zone {
        /// Opens a zone at `loc` (made by `span_location!` at the call site).
        #[inline]
        pub(crate) fn new(loc: &'static SpanLocation) -> Zone {
            Zone(client().span(loc, 0))
        }

        /// Opens a plain zone (not a job zone: helping does not split it) at the first
        /// of `locs`, interned by [`zone_named!`].
        #[inline]
        pub(crate) fn named(locs: &'static Locations) -> Zone {
            Zone(client().span(&locs.job, 0))
        }
    }

    /// The source locations kept in `site` (a `&mut ZoneSite`) for `name`, interned at
    /// its first use, then reused: at the user's call site the site was made with
    /// ([`ZoneSite::at`]: where the system was added, the merge registered), else at the
    /// call site of the macro that expands this (function, file, line).
    macro_rules! site_locations {
        ($site:expr, $name:expr) => {{
            let site: &mut $crate::profile::ZoneSite = $site;
            match site.locs {
                Some(locs) => locs,
                None => {
                    let locs = match site.caller {
                        Some(caller) => $crate::profile::intern_at(&$name, caller),
                        None => $crate::profile::intern(
                            &$name,
                            {
                                struct S;
                                ::std::any::type_name::<S>()
                            },
                            concat!(file!(), "\0"),
                            line!(),
                        ),
                    };
                    *site.locs.insert(locs)
                }
            }
        }};
    }
    pub(crate) use site_locations;

    /// Opens a plain zone named `name` (known only at run time: a stage's), with this call
    /// site as its source location, built once per site (a `&mut ZoneSite`) and reused.
    macro_rules! zone_named {
        ($site:expr, $name:expr) => {
            $crate::profile::Zone::named($crate::profile::site_locations!($site, $name))
        };
    }
    pub(crate) use zone_named;

    /// Opens a zone whose source location is this call site (function, file, line), like
    /// `tracy_client::span!`, and which closes when the returned guard is dropped.
    macro_rules! zone {
        ($name:literal) => {
            $crate::profile::Zone::new(::tracy_client::span_location!($name))
        };
    }
    pub(crate) use zone;

    /// The two source locations of a job site, both at the site's call site: the job's own
    /// zone, named for the system or type, and its parallel chunks' zones, named
    /// `"{name} chunk"`.
    pub(crate) struct Locations {
        job: SpanLocation,
        chunk: SpanLocation,
    }

    impl Locations {
        /// Opens the job zone of a system or a type's merge at these locations.
        pub(crate) fn enter(&'static self) -> JobZone {
            JobZone::open(&self.job, &self.chunk)
        }
    }

    /// Where a job zone (one system, one type's merge) is entered: its interned source
    /// locations, made on first entry and kept for every later one, and the user's call
    /// site they point at, if it was given ([`at`](Self::at)).
    #[derive(Default)]
    pub(crate) struct ZoneSite {
        pub(crate) locs: Option<&'static Locations>,
        pub(crate) caller: Option<&'static Location<'static>>,
    }

    impl ZoneSite {
        /// A site whose zones point at `caller` (a `#[track_caller]` location: where the
        /// user added the system or registered the merge), so that Tracy's "go to source"
        /// opens the user's code rather than runsync's.
        pub(crate) fn at(caller: &'static Location<'static>) -> ZoneSite {
            ZoneSite {
                locs: None,
                caller: Some(caller),
            }
        }
    }

    /// Enters the job zone kept in `site` (a `&mut ZoneSite`), named `name`, with this call
    /// site as its source location (built once per site and name, then reused).
    macro_rules! enter {
        ($site:expr, $name:expr) => {
            $crate::profile::site_locations!($site, $name).enter()
        };
    }
    pub(crate) use enter;

    /// (name, function, file, line); for a site at a user's call site, the function is
    /// empty and the file not NUL-terminated (so the two kinds never share a key).
    type Key = (Box<str>, &'static str, &'static str, u32);

    /// Source locations of job zones, one pair per (name, function, file, line), leaked
    /// once: Tracy keeps a pointer to each for the whole session.
    static LOCATIONS: LazyLock<Mutex<HashMap<Key, &'static Locations>>> =
        LazyLock::new(Default::default);

    /// Every job zone's source location interned so far, as (name, file, line), sorted:
    /// what Tracy's "go to source" opens for each system and merge zone (the tests' view of
    /// it; a profiler shows the same).
    pub fn zone_sites() -> Vec<(String, String, u32)> {
        let map = LOCATIONS.lock().unwrap_or_else(|e| e.into_inner());
        let mut sites: Vec<(String, String, u32)> = map
            .keys()
            .map(|(name, _, file, line)| {
                (
                    name.to_string(),
                    file.trim_end_matches('\0').to_owned(),
                    *line,
                )
            })
            .collect();
        sites.sort();
        sites
    }

    /// The interned locations for `name` at the user's call site `caller`: its file and
    /// line, with the name as the function Tracy shows. The file's NUL-terminated copy and
    /// the function's name are leaked once per site and name, as the locations are.
    pub(crate) fn intern_at(name: &str, caller: &'static Location<'static>) -> &'static Locations {
        let mut map = LOCATIONS.lock().unwrap_or_else(|e| e.into_inner());
        let key: Key = (name.into(), "", caller.file(), caller.line());
        if let Some(&locs) = map.get(&key) {
            return locs;
        }
        let leak = |s: String| -> &'static str { Box::leak(s.into_boxed_str()) };
        // `make_span_location` drops a type name's last three characters (`::S`).
        let function = leak(format!("{}::S", name.replace('\0', " ")));
        let file = leak(format!("{}\0", caller.file().replace('\0', " ")));
        let locs = make_locations(name, function, file, caller.line());
        map.insert(key, locs);
        locs
    }

    /// The interned locations for `name` at the call site described by `function` (a
    /// `type_name` of a local item, as `span_location!` uses), `file` (NUL-terminated) and
    /// `line`. The only place a zone name is formatted: once per site, never per frame.
    pub(crate) fn intern(
        name: &str,
        function: &'static str,
        file: &'static str,
        line: u32,
    ) -> &'static Locations {
        let mut map = LOCATIONS.lock().unwrap_or_else(|e| e.into_inner());
        let key: Key = (name.into(), function, file, line);
        if let Some(&locs) = map.get(&key) {
            return locs;
        }
        let locs = make_locations(name, function, file, line);
        map.insert(key, locs);
        locs
    }

    /// The job and chunk locations for `name` at (`function`, `file`, `line`), leaked:
    /// Tracy keeps a pointer to each for the whole session.
    fn make_locations(
        name: &str,
        function: &'static str,
        file: &'static str,
        line: u32,
    ) -> &'static Locations {
        let location = |name: String| {
            let cname = CString::new(name.replace('\0', " ")).expect("NULs replaced");
            let cname: &'static std::ffi::CStr = Box::leak(cname.into_boxed_c_str());
            tracy_client::internal::make_span_location(
                function,
                cname.as_ptr().cast(),
                file.as_ptr(),
                line,
            )
        };
        Box::leak(Box::new(Locations {
            job: location(name.to_owned()),
            chunk: location(format!("{name} chunk")),
        }))
    }

    thread_local! {
        static NAMED: Cell<bool> = const { Cell::new(false) };
    }

    #[inline]
    fn client() -> Client {
        // With `enable` and without `manual-lifetime`, the client starts before `main`;
        // `start` just hands out a handle.
        Client::start()
    }

    /// Names the calling thread in Tracy, once per thread: `runsync-frame` if it has no
    /// name, else its own name (registered, so that a profiler that connects late still
    /// shows it). The process's main thread is left alone: Tracy always shows it as
    /// `Main thread`, and renaming it would only rename the process.
    pub(crate) fn name_frame_thread() {
        if NAMED.replace(true) {
            return;
        }
        match std::thread::current().name() {
            None => client().set_thread_name("runsync-frame"),
            Some("main") => {}
            Some(name) => client().set_thread_name(name),
        }
    }

    /// A message on the Tracy timeline (a failed frame).
    #[cold]
    pub(crate) fn message(text: std::fmt::Arguments<'_>) {
        client().message(&text.to_string(), 0);
    }

    /// Frame marks emitted so far by [`frame_mark`] (the tests' view of them).
    static FRAME_MARKS: AtomicU64 = AtomicU64::new(0);

    /// Ends the frame on the Tracy timeline: once per frame of the program, whatever
    /// the number of runtimes it runs (see [`ProfileSettings`]).
    #[inline]
    pub fn frame_mark() {
        FRAME_MARKS.fetch_add(1, Ordering::Relaxed);
        client().frame_mark();
    }

    /// How many frame marks [`frame_mark`] has emitted in this process.
    pub fn frame_marks() -> u64 {
        FRAME_MARKS.load(Ordering::Relaxed)
    }

    /// Plot names, each leaked once (Tracy keeps a pointer to it for the whole session)
    /// and configured once.
    static PLOT_NAMES: LazyLock<Mutex<HashMap<String, PlotName>>> = LazyLock::new(Default::default);

    /// The plot named `name`, made on first use (shown in bytes if `bytes`).
    pub fn plot_name(name: &str, bytes: bool) -> PlotName {
        let mut map = PLOT_NAMES.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(&p) = map.get(name) {
            return p;
        }
        let plot = PlotName::new_leak(name.replace('\0', " "));
        if bytes {
            use tracy_client::{PlotConfiguration, PlotFormat};
            client().plot_config(
                plot,
                PlotConfiguration::default().format(PlotFormat::Memory),
            );
        }
        map.insert(name.to_owned(), plot);
        plot
    }

    /// Every plot name made so far, sorted (the tests' view of them).
    pub fn plot_names() -> Vec<String> {
        let map = PLOT_NAMES.lock().unwrap_or_else(|e| e.into_inner());
        let mut names: Vec<String> = map.keys().cloned().collect();
        names.sort();
        names
    }

    /// How a runtime shows itself in Tracy, from its builder
    /// (`RuntimeBuilder::tracy_label`, `tracy_frame_marks`).
    #[derive(Clone, Debug)]
    pub(crate) struct ProfileSettings {
        label: Option<String>,
        frame_marks: bool,
    }

    impl Default for ProfileSettings {
        fn default() -> Self {
            ProfileSettings {
                label: None,
                frame_marks: true,
            }
        }
    }

    impl ProfileSettings {
        /// Suffixes the runtime's plots with ` [label]`.
        pub(crate) fn label(&mut self, label: String) {
            self.label = Some(label);
        }

        /// Whether the runtime marks the end of its frames.
        pub(crate) fn frame_marks(&mut self, on: bool) {
            self.frame_marks = on;
        }
    }

    /// A runtime's plots (named once, at build) and whether it marks frames.
    pub(crate) struct RuntimeProfile {
        names: [PlotName; PLOTS.len()],
        frame_marks: bool,
    }

    impl RuntimeProfile {
        pub(crate) fn new(settings: &ProfileSettings) -> RuntimeProfile {
            RuntimeProfile {
                names: PLOTS.map(|p| {
                    let name = match &settings.label {
                        Some(label) => format!("{} [{label}]", p.name()),
                        None => p.name().to_owned(),
                    };
                    plot_name(&name, p.bytes())
                }),
                frame_marks: settings.frame_marks,
            }
        }

        /// Sets `plot` to `value` for this frame (through [`runtime_plot!`], which
        /// evaluates `value` only with `tracy`).
        #[inline]
        pub(crate) fn plot(&self, plot: Plot, value: f64) {
            client().plot(self.names[plot as usize], value);
        }

        /// Ends the frame on the timeline, unless the program marks frames itself.
        #[inline]
        pub(crate) fn frame_mark(&self) {
            if self.frame_marks {
                frame_mark();
            }
        }
    }

    /// Sets one of a runtime's plots (a [`RuntimeProfile`], a [`Plot`] variant) to a value
    /// (`f64`).
    macro_rules! runtime_plot {
        ($profile:expr, $plot:ident, $value:expr) => {
            $profile.plot($crate::profile::Plot::$plot, $value)
        };
    }
    pub(crate) use runtime_plot;

    /// Tracy's allocation tracking, with the `tracy-memory` feature: every allocation and
    /// free of the process goes through the system allocator and is reported to Tracy
    /// (without call stacks, which would cost far more per allocation).
    #[cfg(feature = "tracy-memory")]
    mod memory {
        use std::alloc::System;

        use tracy_client::ProfiledAllocator;

        #[global_allocator]
        static ALLOCATOR: ProfiledAllocator<System> = ProfiledAllocator::new(System, 0);
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn a_site_builds_its_location_once_and_names_share_it() {
            let mut site = ZoneSite::default();
            let mut locs = Vec::new();
            for _ in 0..3 {
                let _z = enter!(&mut site, "Sys");
                locs.push(site.locs.expect("made on first entry") as *const Locations);
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
        fn a_site_made_at_a_caller_points_there() {
            let here = Location::caller();
            let mut site = ZoneSite::at(here);
            drop(enter!(&mut site, "UserSystem"));
            let sites = zone_sites();
            let at = ("UserSystem".to_owned(), here.file().to_owned(), here.line());
            assert!(sites.contains(&at), "{sites:?}");
            // Not at the macro's own call site (this file, the `enter!` line).
            assert!(
                !sites
                    .iter()
                    .any(|s| s.0 == "UserSystem" && s.2 != here.line())
            );
            // Interned once per name and caller: a second site at the same caller shares it.
            let mut again = ZoneSite::at(here);
            drop(enter!(&mut again, "UserSystem"));
            assert!(std::ptr::eq(site.locs.unwrap(), again.locs.unwrap()));
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

    /// Nothing: profiling is off (`$name` is not evaluated).
    macro_rules! zone_named {
        ($site:expr, $name:expr) => {{
            let _: &mut $crate::profile::ZoneSite = $site;
            $crate::profile::Zone
        }};
    }
    pub(crate) use zone_named;

    /// Nothing: profiling is off.
    #[derive(Default)]
    pub(crate) struct ZoneSite;

    impl ZoneSite {
        /// Nothing: profiling is off (the location is not kept).
        #[inline(always)]
        pub(crate) fn at(_caller: &'static std::panic::Location<'static>) -> ZoneSite {
            ZoneSite
        }
    }

    /// Nothing: profiling is off (`$name` is not evaluated).
    macro_rules! enter {
        ($site:expr, $name:expr) => {{
            let _: &mut $crate::profile::ZoneSite = $site;
            $crate::profile::JobZone
        }};
    }
    pub(crate) use enter;

    #[inline(always)]
    pub(crate) fn name_frame_thread() {}

    /// Nothing (and nothing is formatted): profiling is off.
    #[inline(always)]
    pub(crate) fn message(_text: std::fmt::Arguments<'_>) {}

    /// Nothing: profiling is off (`$value` is wrapped in a closure never called, so it
    /// is type-checked but not evaluated).
    macro_rules! runtime_plot {
        ($profile:expr, $plot:ident, $value:expr) => {{
            let _: &$crate::profile::RuntimeProfile = &$profile;
            let _ = $crate::profile::Plot::$plot;
            let _ = || $value;
        }};
    }
    pub(crate) use runtime_plot;

    /// Nothing: profiling is off.
    #[derive(Clone, Debug, Default)]
    pub(crate) struct ProfileSettings;

    impl ProfileSettings {
        /// Nothing: profiling is off.
        #[inline(always)]
        pub(crate) fn label(&mut self, _label: String) {}

        /// Nothing: profiling is off.
        #[inline(always)]
        pub(crate) fn frame_marks(&mut self, _on: bool) {}
    }

    /// Nothing: profiling is off.
    pub(crate) struct RuntimeProfile;

    impl RuntimeProfile {
        #[inline(always)]
        pub(crate) fn new(_settings: &ProfileSettings) -> RuntimeProfile {
            RuntimeProfile
        }

        #[inline(always)]
        pub(crate) fn frame_mark(&self) {}
    }
}

/// The plots a runtime sets every frame (with `tracy`), in the order their names are kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Plot {
    Entities,
    Writes,
    Commands,
    Merged,
    WorkMs,
    SpanMs,
    SpeedupBound,
    Dropped,
    ComponentBytes,
    OutputBytes,
}

/// Every [`Plot`], in order.
#[cfg_attr(not(feature = "tracy"), allow(dead_code))]
pub(crate) const PLOTS: [Plot; 10] = [
    Plot::Entities,
    Plot::Writes,
    Plot::Commands,
    Plot::Merged,
    Plot::WorkMs,
    Plot::SpanMs,
    Plot::SpeedupBound,
    Plot::Dropped,
    Plot::ComponentBytes,
    Plot::OutputBytes,
];

#[cfg_attr(not(feature = "tracy"), allow(dead_code))]
impl Plot {
    /// The plot's name in Tracy (a labelled runtime's gets ` [label]` after it).
    pub(crate) fn name(self) -> &'static str {
        match self {
            Plot::Entities => "runsync entities",
            Plot::Writes => "runsync writes",
            Plot::Commands => "runsync commands",
            Plot::Merged => "runsync merged",
            Plot::WorkMs => "runsync work ms",
            Plot::SpanMs => "runsync span ms",
            Plot::SpeedupBound => "runsync speed-up bound",
            Plot::Dropped => "runsync dropped",
            Plot::ComponentBytes => "runsync component bytes",
            Plot::OutputBytes => "runsync output bytes",
        }
    }

    /// Whether it counts bytes (Tracy shows KiB, MiB, ...).
    pub(crate) fn bytes(self) -> bool {
        matches!(self, Plot::ComponentBytes | Plot::OutputBytes)
    }
}

pub(crate) use imp::{
    ProfileSettings, RuntimeProfile, Zone, ZoneSite, message, name_frame_thread, runtime_plot,
};
pub(crate) use imp::{enter as tracy_enter, zone as tracy_zone, zone_named as tracy_zone_named};
#[cfg(feature = "tracy")]
pub use imp::{frame_mark, frame_marks, plot_name, plot_names, zone_sites};
#[cfg(feature = "tracy")]
pub(crate) use imp::{intern, intern_at, site_locations};
/// The job zones, their chunks and their visited rows: the pool's (`runsync_pool::profile`).
pub(crate) use runsync_pool::profile::{JobZone, visited};

/// `tracing` spans, behind the `tracing` feature (see the module docs): the span type a
/// guard holds, the parent a worker's span is made under, and the macros that make and
/// fill spans.
#[cfg(feature = "tracing")]
mod spans {
    /// An entered `tracing` span; exited when dropped.
    pub(crate) type Entered = tracing::span::EnteredSpan;

    /// The span that jobs on other threads hang from ([`current`]).
    pub(crate) type Parent = tracing::Span;

    /// The calling thread's current span: taken on the frame thread before a batch, and
    /// handed to its jobs as their spans' explicit parent (a worker has no current span
    /// of the frame's).
    #[inline]
    pub(crate) fn current() -> Parent {
        tracing::Span::current()
    }

    /// Makes and enters a span at `$level` (`INFO`, `DEBUG`, ...) named `$name`, under
    /// `parent: $parent` if it comes first (else the current span), with `$field = $value`
    /// fields and, after `;`, fields to [`record!`] later.
    macro_rules! entered {
        (parent: $parent:expr, $level:ident, $name:literal $(, $field:ident = $value:expr)*
         $(; $($later:ident),+)?) => {
            ::tracing::span!(
                parent: $parent,
                ::tracing::Level::$level,
                $name
                $(, $field = $value)*
                $($(, $later = ::tracing::field::Empty)+)?
            )
            .entered()
        };
        ($level:ident, $name:literal $(, $field:ident = $value:expr)*
         $(; $($later:ident),+)?) => {
            ::tracing::span!(
                ::tracing::Level::$level,
                $name
                $(, $field = $value)*
                $($(, $later = ::tracing::field::Empty)+)?
            )
            .entered()
        };
    }
    pub(crate) use entered;

    /// Records fields declared after `;` in [`entered!`] on an entered span (a guard's
    /// `span`).
    macro_rules! record {
        ($span:expr, $($field:ident = $value:expr),+ $(,)?) => {{
            let span: &$crate::profile::Entered = &$span;
            $(span.record(stringify!($field), $value);)+
        }};
    }
    pub(crate) use record;

    /// An error event for a failed frame, in the frame's span.
    #[cold]
    pub(crate) fn frame_failed(frame: u64, error: &dyn std::fmt::Display) {
        tracing::error!(frame, error = %error, "runsync: frame failed");
    }
}

/// Nothing: `tracing` is off.
#[cfg(not(feature = "tracing"))]
mod spans {
    /// Nothing: `tracing` is off.
    pub(crate) struct Entered;

    /// Nothing: `tracing` is off.
    pub(crate) struct Parent;

    /// Nothing: `tracing` is off.
    #[inline(always)]
    pub(crate) fn current() -> Parent {
        Parent
    }

    /// Nothing: `tracing` is off (the values are wrapped in closures never called, so
    /// they are type-checked but not evaluated).
    macro_rules! entered {
        (parent: $parent:expr, $level:ident, $name:literal $($rest:tt)*) => {{
            let _: &$crate::profile::Parent = $parent;
            $crate::profile::entered!($level, $name $($rest)*)
        }};
        ($level:ident, $name:literal $(, $field:ident = $value:expr)*
         $(; $($later:ident),+)?) => {{
            $(let _ = || $value;)*
            $crate::profile::Entered
        }};
    }
    pub(crate) use entered;

    /// Nothing: `tracing` is off (the values are not evaluated).
    macro_rules! record {
        ($span:expr, $($field:ident = $value:expr),+ $(,)?) => {{
            let _: &$crate::profile::Entered = &$span;
            $(let _ = || $value;)+
        }};
    }
    pub(crate) use record;

    /// Nothing: `tracing` is off.
    #[inline(always)]
    pub(crate) fn frame_failed(_frame: u64, _error: &dyn std::fmt::Display) {}
}

pub(crate) use spans::{Entered, Parent, current, entered, frame_failed, record};

/// A phase's guard (the frame thread's: Run, Sync, a step of Sync, a stage): its Tracy
/// zone (with `tracy`) and its entered `tracing` span (with `tracing`); both end when it
/// is dropped, the span first. Without either feature it has no field.
pub(crate) struct Phase {
    pub(crate) span: Entered,
    /// Held for its drop.
    pub(crate) _zone: Zone,
}

/// Opens a phase ([`Phase`]): a Tracy zone named `$name` whose source location is this
/// call site (as `tracy_client::span!`), and a `tracing` span of the same name at `$level`
/// (`INFO` if not given) with the given fields (see [`entered!`]).
macro_rules! zone {
    ($level:ident, $name:literal $($fields:tt)*) => {
        $crate::profile::Phase {
            _zone: $crate::profile::tracy_zone!($name),
            span: $crate::profile::entered!($level, $name $($fields)*),
        }
    };
    ($name:literal $($fields:tt)*) => {
        $crate::profile::zone!(INFO, $name $($fields)*)
    };
}
pub(crate) use zone;

/// Opens a stage's phase ([`Phase`]): a Tracy zone named `$name` (known only at run time)
/// at this call site, its location built once per site (a `&mut ZoneSite`), and a
/// `tracing` span `stage` with the field `stage = $name`.
macro_rules! zone_named {
    ($site:expr, $name:expr) => {
        $crate::profile::Phase {
            _zone: $crate::profile::tracy_zone_named!($site, $name),
            span: $crate::profile::entered!(INFO, "stage", stage = &*$name),
        }
    };
}
pub(crate) use zone_named;

/// A job's guard (a system's run, a type's merge, on whichever thread runs it): its
/// Tracy job zone (with `tracy`) and its entered `tracing` span (with `tracing`).
pub(crate) struct Job {
    pub(crate) span: Entered,
    pub(crate) zone: JobZone,
}

impl Job {
    /// Rows visited by the job so far (with `tracy`; see [`visited`]).
    #[inline(always)]
    pub(crate) fn visited(&self) -> u64 {
        self.zone.visited()
    }

    /// Ends the span, then the zone with `text` (the job's counts) on its last piece: in
    /// the reverse order of opening, as Tracy needs if a `tracing` layer also feeds it
    /// (`tracing-tracy`).
    #[inline(always)]
    // Without `tracing` the span is a unit struct.
    #[cfg_attr(not(feature = "tracing"), allow(clippy::drop_non_drop))]
    pub(crate) fn end(self, text: std::fmt::Arguments<'_>) {
        let Job { span, zone } = self;
        drop(span);
        zone.end(text);
    }
}

/// Enters a job ([`Job`]): the Tracy job zone kept in `$site` (a `&mut ZoneSite`) named
/// `$name`, and a `tracing` span named `$span` at `$level` with the field
/// `$field = $name`, under `parent` (the frame thread's span when the batch started:
/// jobs run on workers, which have no current span of the frame's), with fields to
/// [`record!`] after `;`.
macro_rules! enter {
    ($level:ident, $site:expr, $name:expr, $span:literal, $field:ident, parent: $parent:expr
     $(; $($later:ident),+)?) => {
        $crate::profile::Job {
            zone: $crate::profile::tracy_enter!($site, $name),
            span: $crate::profile::entered!(
                parent: $parent, $level, $span, $field = &*$name $(; $($later),+)?
            ),
        }
    };
}
pub(crate) use enter;
