//! Resources: global values systems read ([`World::resource`]) and, once registered
//! with a merge, write ([`World::register_resource`]).

use std::any::{TypeId, type_name};

use super::World;
use crate::component::Component;
use crate::merge::Merge;
use crate::resource::ResourceFold;

#[cold]
#[track_caller]
fn missing_resource<R>() -> ! {
    panic!(
        "runsync: no resource of type `{}`; add it with `world.insert_resource(..)` before \
         running systems that read it",
        type_name::<R>()
    )
}

impl World {
    /// Lets systems write resource `R` with [`Output::write_resource`], folded in Sync by
    /// `merge` like a component's outputs: every system's, in registration order then
    /// emission order, in one merge call, visible from the next frame. `R` declares its
    /// output type through [`Component`] (e.g. `type Output = Self` for a value replaced
    /// by `merge::last`, or a delta for `merge::sum`). The value itself comes from
    /// [`insert_resource`](Self::insert_resource), before or after; outputs for a
    /// resource that is absent in Sync are dropped and counted.
    ///
    /// Derived data several systems need (a spatial grid, a path field) is built once per
    /// frame by one system and written to such a resource (with `merge::last`); the others
    /// read it in the next frame — one frame old, like everything in Run, and built once
    /// instead of by every reader.
    ///
    /// ```
    /// use runsync::prelude::*;
    ///
    /// #[derive(Clone, Copy, Debug, PartialEq)]
    /// struct Score(u32);
    /// impl Component for Score { type Output = u32; } // points to add
    /// impl std::ops::AddAssign<u32> for Score { fn add_assign(&mut self, d: u32) { self.0 += d } }
    ///
    /// let mut world = World::new();
    /// world.register_resource::<Score>(merge::sum);
    /// world.insert_resource(Score(0));
    /// let mut rt = Runtime::builder().workers(2).build(world);
    /// rt.add_system(|_: &World, out: &mut Output| out.write_resource::<Score>(3));
    /// rt.add_system(|_: &World, out: &mut Output| out.write_resource::<Score>(4));
    /// rt.frame();
    /// assert_eq!(rt.world().resource::<Score>(), &Score(7));
    /// ```
    ///
    /// # Panics
    /// If `R` is already registered as a written resource.
    ///
    /// [`Output::write_resource`]: crate::Output::write_resource
    #[track_caller]
    pub fn register_resource<R: Component>(&mut self, merge: impl Merge<R>) {
        let next = self.resource_folds.len() as u32;
        if self.resource_ids.insert(TypeId::of::<R>(), next).is_some() {
            panic!(
                "runsync: resource type `{}` is registered twice; register each written \
                 resource once, with the one merge it uses",
                type_name::<R>()
            );
        }
        self.resource_folds.push(ResourceFold::new::<R, _>(merge));
    }

    /// The index of written resource `R`.
    ///
    /// # Panics
    /// If `R` was not registered with [`register_resource`](Self::register_resource).
    #[track_caller]
    pub(crate) fn resource_index<R: 'static>(&self) -> usize {
        match self.resource_ids.get(&TypeId::of::<R>()) {
            Some(&i) => i as usize,
            None => {
                let name = type_name::<R>();
                let short = name.rsplit("::").next().unwrap_or(name);
                panic!(
                    "runsync: resource type `{name}` cannot be written by systems: register \
                     it once with its merge, e.g. `world.register_resource::<{short}>(runsync::merge::last)`"
                )
            }
        }
    }

    /// Inserts (or replaces) a resource: a global value systems read with
    /// [`resource`](Self::resource).
    pub fn insert_resource<R: Send + Sync + 'static>(&mut self, resource: R) {
        self.resources.insert(resource);
    }

    /// The resource of type `R`.
    ///
    /// # Panics
    /// If there is none; use [`get_resource`](Self::get_resource) to check.
    #[track_caller]
    pub fn resource<R: Send + Sync + 'static>(&self) -> &R {
        match self.get_resource::<R>() {
            Some(r) => r,
            None => missing_resource::<R>(),
        }
    }

    /// The resource of type `R`, if any.
    pub fn get_resource<R: Send + Sync + 'static>(&self) -> Option<&R> {
        self.resources.get::<R>()
    }

    /// The resource of type `R`, mutably (between frames).
    ///
    /// # Panics
    /// If there is none; use [`get_resource_mut`](Self::get_resource_mut) to check.
    #[track_caller]
    pub fn resource_mut<R: Send + Sync + 'static>(&mut self) -> &mut R {
        match self.get_resource_mut::<R>() {
            Some(r) => r,
            None => missing_resource::<R>(),
        }
    }

    /// The resource of type `R`, mutably (between frames), if any.
    pub fn get_resource_mut<R: Send + Sync + 'static>(&mut self) -> Option<&mut R> {
        self.resources.get_mut::<R>()
    }

    /// Makes `input` the frame input systems read with [`input`](Self::input): the
    /// resource [`Input<I>`](crate::Input). The first call for an `I` also opts
    /// `Input<I>` into snapshots ([`snapshotting_resource`](Self::snapshotting_resource)),
    /// so a restore brings back the input as it was. Usually called for you by
    /// [`Runtime::frame_with`](crate::Runtime::frame_with).
    pub fn set_input<I: Clone + Send + Sync + 'static>(&mut self, input: I) {
        match self.get_resource_mut::<crate::input::Input<I>>() {
            Some(held) => held.0 = input,
            None => {
                self.snapshotting_resource::<crate::input::Input<I>>();
                self.insert_resource(crate::input::Input(input));
            }
        }
    }

    /// The frame input of type `I` ([`Runtime::frame_with`](crate::Runtime::frame_with)):
    /// what systems read as this frame's input.
    ///
    /// ```
    /// use runsync::prelude::*;
    /// #[derive(Clone, Copy, Debug, PartialEq)]
    /// struct Pad(i8);
    /// #[derive(Component, Clone, Copy, Debug, PartialEq)]
    /// #[component(output = i32, merge = |p: &mut X, d: &[i32]| p.0 += d.iter().sum::<i32>())]
    /// struct X(i32);
    ///
    /// let mut world = World::new();
    /// world.register_default::<X>();
    /// let e = world.spawn((X(0),));
    /// let mut rt = Runtime::builder().workers(2).build(world);
    /// rt.add_system(|w: &World, out: &mut Output| {
    ///     let pad = w.input::<Pad>();
    ///     for (e, _) in w.query::<(&X,)>() { out.write::<X>(e, i32::from(pad.0)); }
    /// });
    /// rt.frame_with(Pad(1));
    /// rt.frame_with(Pad(-3));
    /// assert_eq!(rt.world().get::<X>(e), Some(&X(-2)));
    /// ```
    ///
    /// # Panics
    /// If no input of type `I` was set; use [`get_input`](Self::get_input) to check.
    #[track_caller]
    pub fn input<I: Send + Sync + 'static>(&self) -> &I {
        match self.get_input::<I>() {
            Some(i) => i,
            None => {
                let name = type_name::<I>();
                panic!(
                    "runsync: no input of type `{name}`; run the frame with \
                     `rt.frame_with(input)` (or `rt.advance_with(..)`), or set one with \
                     `world.set_input(..)`"
                )
            }
        }
    }

    /// The frame input of type `I`, if one was set.
    pub fn get_input<I: Send + Sync + 'static>(&self) -> Option<&I> {
        self.get_resource::<crate::input::Input<I>>().map(|i| &i.0)
    }

    /// Removes and returns the resource of type `R`.
    pub fn remove_resource<R: Send + Sync + 'static>(&mut self) -> Option<R> {
        self.resources.remove::<R>()
    }
}
