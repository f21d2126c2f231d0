//! Systems: the [`System`] trait, their ids, and the per-system entry the runtime keeps.

pub use crate::ids::{StageId, SystemId};

use std::borrow::Cow;
use std::panic::Location;
use std::sync::Arc;
use std::time::Duration;

use crate::output::{Output, SystemOutputs};
use crate::world::World;

/// A unit of game logic, run once per frame during Run.
///
/// A system reads the world through `&World` (everything is immutable during Run) and
/// emits outputs through [`Output`]. It may keep its own state in `self`: one system never
/// runs on two threads at once. Any `FnMut(&World, &mut Output) + Send + 'static` closure is
/// a system.
///
/// ```
/// use runsync::prelude::*;
/// struct Counter { frames: u64 }
/// impl System for Counter {
///     fn run(&mut self, _world: &World, _out: &mut Output<'_>) { self.frames += 1; }
/// }
/// let mut rt = Runtime::builder().workers(1).build(World::new());
/// rt.add_system(Counter { frames: 0 });
/// rt.frame();
/// ```
///
/// A system cannot write a component in place during Run; this does not compile:
///
/// ```compile_fail
/// use runsync::prelude::*;
/// #[derive(Clone, Copy)] struct Pos(f32);
/// impl Component for Pos { type Output = Pos; }
/// let mut rt = Runtime::builder().build(World::new());
/// rt.add_system(|world: &World, _out: &mut Output| {
///     for (e, (p,)) in world.query::<(&Pos,)>() {
///         let _: Option<&mut Pos> = world.get_mut::<Pos>(e); // needs &mut World
///     }
/// });
/// ```
///
/// A system must be `Send` (it may run on any worker); this does not compile:
///
/// ```compile_fail
/// use runsync::prelude::*;
/// let shared = std::rc::Rc::new(0);
/// let mut rt = Runtime::builder().build(World::new());
/// rt.add_system(move |_: &World, _: &mut Output| { let _ = &shared; });
/// ```
pub trait System: Send + 'static {
    /// Runs the system for one frame.
    fn run(&mut self, world: &World, out: &mut Output<'_>);

    /// The name shown in [`FrameStats`](crate::FrameStats) and error messages. Defaults to the type name.
    fn name(&self) -> Cow<'static, str> {
        Cow::Borrowed(std::any::type_name::<Self>())
    }

    /// The name a system gets when [`Runtime::add_system`](crate::Runtime::add_system) is
    /// called at `caller`: [`name`](Self::name), except that closures are named by their
    /// call site (`game.rs:42`), which says more than `main::{{closure}}`.
    #[doc(hidden)]
    fn name_at(&self, caller: &'static Location<'static>) -> Cow<'static, str> {
        let _ = caller;
        self.name()
    }
}

impl<F> System for F
where
    F: FnMut(&World, &mut Output<'_>) + Send + 'static,
{
    #[inline]
    fn run(&mut self, world: &World, out: &mut Output<'_>) {
        self(world, out)
    }

    fn name_at(&self, caller: &'static Location<'static>) -> Cow<'static, str> {
        let name = std::any::type_name::<F>();
        if !name.contains("{{closure}}") {
            // A named `fn`: its path says what it is.
            return Cow::Borrowed(name);
        }
        let file = caller.file();
        let file = file.rsplit(['/', '\\']).next().unwrap_or(file);
        Cow::Owned(format!("{file}:{}", caller.line()))
    }
}

/// One system of a [`Runtime`](crate::Runtime), as
/// [`Runtime::systems`](crate::Runtime::systems) lists it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct SystemInfo<'a> {
    /// Its id (registration order).
    pub id: SystemId,
    /// Its name: [`System::name`], a closure's call site, or the name given to
    /// [`Runtime::add_system_named`](crate::Runtime::add_system_named).
    pub name: &'a str,
    /// Whether it runs ([`Runtime::set_enabled`](crate::Runtime::set_enabled)).
    pub enabled: bool,
    /// The stage it runs in.
    pub stage: StageId,
}

/// What the runtime keeps per system: the system, its name, its switch, its buffers and
/// the figures of its last run.
pub(crate) struct SystemEntry {
    /// Its id (registration order; entries are kept stage by stage, so not its place).
    pub(crate) id: SystemId,
    /// The stage it runs in.
    pub(crate) stage: StageId,
    pub(crate) system: Box<dyn System>,
    pub(crate) name: Arc<str>,
    pub(crate) enabled: bool,
    /// Whether the system ran this frame (its outputs count).
    pub(crate) ran: bool,
    pub(crate) time: Duration,
    /// Writes it emitted this frame (counted on its worker, after it ran).
    pub(crate) writes: usize,
    /// Its work and span this frame (see `pool::Cost`).
    pub(crate) cost: crate::pool::Cost,
    pub(crate) out: SystemOutputs,
    /// The system's profiling zone location, made once (nothing without `tracy`).
    pub(crate) zone: crate::profile::ZoneSite,
    /// Where and when it ran in the last traced frame (a trace file's event).
    pub(crate) traced: crate::trace::Interval,
}
