//! Tracy profiling, behind the `tracy` feature.
//!
//! The runtime calls these hooks at fixed points: [`run_zone`] and [`sync_zone`] around the
//! two phases (in `runtime.rs`), [`system_zone`] around each system's `run` (in `run.rs`,
//! on the worker that runs it), [`merge_zone`] around each component type's merge (in
//! `fold/`), [`step_zone`] around each step of Sync (in `sync/`), and [`frame_end`] after each frame: plots, then the frame mark.
//!
//! **Zero cost when off.** Without the feature, [`Zone`] is a field-less unit struct and
//! every hook is an empty `#[inline(always)]` function, so the call sites compile to
//! nothing and no type gains a field.
//!
//! With the feature on, phase zones use static source locations (built once, by
//! `tracy_client::span!`); system and merge zones carry a run-time name, so Tracy
//! allocates their source location each time they are entered (a small allocation, only
//! while profiling).

#[cfg(feature = "tracy")]
mod imp {
    use tracy_client::{Client, Span, plot_name};

    use crate::stats::FrameStats;

    /// An open Tracy zone; it closes when dropped.
    pub(crate) struct Zone(#[allow(dead_code)] Span);

    #[inline]
    fn client() -> Client {
        // With `enable` and without `manual-lifetime`, the client starts before `main`;
        // `start` just hands out a handle.
        Client::start()
    }

    pub(crate) fn run_zone() -> Zone {
        let _ = client();
        Zone(tracy_client::span!("Run"))
    }

    pub(crate) fn sync_zone() -> Zone {
        let _ = client();
        Zone(tracy_client::span!("Sync"))
    }

    pub(crate) fn system_zone(name: &str) -> Zone {
        Zone(client().span_alloc(Some(name), "runsync::run", file!(), line!(), 0))
    }

    pub(crate) fn merge_zone(component: &str) -> Zone {
        Zone(client().span_alloc(Some(component), "runsync::sync::merge", file!(), line!(), 0))
    }

    pub(crate) fn step_zone(step: &'static str) -> Zone {
        Zone(client().span_alloc(Some(step), "runsync::sync", file!(), line!(), 0))
    }

    pub(crate) fn frame_end(stats: &FrameStats) {
        let c = client();
        let writes: usize = stats.systems.iter().map(|s| s.writes).sum();
        let commands: usize = stats.systems.iter().map(|s| s.commands).sum();
        c.plot(plot_name!("runsync entities"), stats.entities as f64);
        c.plot(plot_name!("runsync writes"), writes as f64);
        c.plot(plot_name!("runsync commands"), commands as f64);
        c.plot(plot_name!("runsync merged"), stats.merged as f64);
        c.plot(plot_name!("runsync dropped"), stats.dropped as f64);
        c.frame_mark();
    }
}

#[cfg(not(feature = "tracy"))]
mod imp {
    use crate::stats::FrameStats;

    /// Nothing: profiling is off.
    pub(crate) struct Zone;

    #[inline(always)]
    pub(crate) fn run_zone() -> Zone {
        Zone
    }

    #[inline(always)]
    pub(crate) fn sync_zone() -> Zone {
        Zone
    }

    #[inline(always)]
    pub(crate) fn system_zone(_name: &str) -> Zone {
        Zone
    }

    #[inline(always)]
    pub(crate) fn merge_zone(_component: &str) -> Zone {
        Zone
    }

    #[inline(always)]
    pub(crate) fn step_zone(_step: &'static str) -> Zone {
        Zone
    }

    #[inline(always)]
    pub(crate) fn frame_end(_stats: &FrameStats) {}
}

pub(crate) use imp::{frame_end, merge_zone, run_zone, step_zone, sync_zone, system_zone};
