//! Required components: a type that requires others (`World::require`,
//! `#[component(requires(..))]`) gets them, made by their constructors, whenever it is
//! spawned or inserted and the entity lacks them.
//!
//! [`Required`] keeps, per component id, the types it requires directly, in the order they
//! were declared, each with a constructor ([`Make`]: stages one value, or pushes `n`
//! onto a column). A required type need not be registered yet when it is declared: the
//! requirement waits, by `TypeId`, until it is ([`Required::resolve`]); spawning or
//! inserting a type whose requirements still wait is a clear error
//! ([`Required::missing`] says which), raised where the spawn or insert is asked for.
//!
//! Which types an entity gets ([`Required::closure`]) is a breadth-first walk: from the
//! types given (a bundle's, in bundle order; or the one inserted), each type's direct
//! requirements in declaration order, then theirs, skipping every type the entity has or
//! already gets. So a type required by two paths is made by the nearest requirement
//! (fewest steps from a given type; ties: the earlier given type, then the earlier
//! declaration), a type given by the bundle or already present is never replaced, and a
//! cycle (`A` requires `B` requires `A`) ends where it meets a type already there.

use std::any::TypeId;
use std::sync::Arc;

use super::column::AnyColumns;
use crate::component::{Component, ComponentId};

/// Makes values of one required type.
pub(crate) trait Make: Send + Sync {
    /// Stages one value in `columns` (for a spawn or insert).
    fn stage(&self, columns: &mut dyn AnyColumns);
    /// Pushes `n` values onto column `col` of `columns` (a batch spawn).
    fn push(&self, columns: &mut dyn AnyColumns, col: u32, n: usize);
}

/// A constructor of `C`.
struct Maker<C, F>(F, std::marker::PhantomData<fn() -> C>);

impl<C: Component, F: Fn() -> C + Send + Sync> Make for Maker<C, F> {
    fn stage(&self, columns: &mut dyn AnyColumns) {
        columns.typed_mut::<C>().stage((self.0)());
    }

    fn push(&self, columns: &mut dyn AnyColumns, col: u32, n: usize) {
        let column = columns.typed_mut::<C>().column_mut(col);
        column.reserve(n);
        column.extend((0..n).map(|_| (self.0)()));
    }
}

/// One declared requirement: its type, resolved to an id once registered, and how to
/// make a value.
#[derive(Clone)]
pub(crate) struct Requirement {
    ty: TypeId,
    name: &'static str,
    id: Option<ComponentId>,
    make: Arc<dyn Make>,
}

impl Requirement {
    /// The required type's id (resolved: spawns and inserts check [`Required::missing`]
    /// first).
    #[inline]
    pub(crate) fn id(&self) -> ComponentId {
        self.id
            .expect("a requirement is resolved before anything that has it is spawned")
    }

    /// Its constructor.
    #[inline]
    pub(crate) fn make(&self) -> &dyn Make {
        &*self.make
    }
}

/// The requirements of every type, by component id.
#[derive(Default)]
pub(crate) struct Required {
    /// Per component id, its direct requirements in declaration order.
    direct: Vec<Vec<Requirement>>,
    /// Requirements whose type is not registered yet.
    waiting: usize,
    /// Whether any type has a requirement.
    any: bool,
    /// A batch spawn's plan: the types it gets, with the requirement that makes each.
    plan: Vec<Requirement>,
}

impl Required {
    /// Whether any type has a requirement (when none does, spawns and inserts pay only
    /// this check).
    #[inline]
    pub(crate) fn any(&self) -> bool {
        self.any
    }

    /// Whether type `id` has requirements.
    #[inline]
    pub(crate) fn has(&self, id: ComponentId) -> bool {
        self.any && self.direct.get(id.index()).is_some_and(|d| !d.is_empty())
    }

    /// The direct requirements of `id`, in declaration order.
    #[inline]
    pub(crate) fn direct(&self, id: ComponentId) -> &[Requirement] {
        self.direct.get(id.index()).map_or(&[], |d| &d[..])
    }

    /// Declares that `of` (named `of_name`) requires `R`, made by `make`; `id` is `R`'s id
    /// if it is registered. A second declaration of the same pair replaces the first's
    /// constructor (in its place).
    ///
    /// # Panics
    /// If `R` is `of` itself.
    #[track_caller]
    pub(crate) fn add<R: Component>(
        &mut self,
        of: ComponentId,
        of_name: &'static str,
        id: Option<ComponentId>,
        make: impl Fn() -> R + Send + Sync + 'static,
    ) {
        let ty = TypeId::of::<R>();
        assert!(
            id != Some(of),
            "runsync: component type `{of_name}` cannot require itself"
        );
        if self.direct.len() <= of.index() {
            self.direct.resize_with(of.index() + 1, Vec::new);
        }
        let requirement = Requirement {
            ty,
            name: std::any::type_name::<R>(),
            id,
            make: Arc::new(Maker(make, std::marker::PhantomData)),
        };
        let direct = &mut self.direct[of.index()];
        match direct.iter_mut().find(|r| r.ty == ty) {
            Some(r) => {
                if r.id.is_none() {
                    self.waiting -= 1;
                }
                *r = requirement;
            }
            None => direct.push(requirement),
        }
        if id.is_none() {
            self.waiting += 1;
        }
        self.any = true;
    }

    /// Type `ty` was just registered as `id`: the requirements waiting for it resolve.
    /// (One cannot resolve to the type that has it: that type was registered, under
    /// another `TypeId`, when the requirement was declared.)
    pub(crate) fn resolve(&mut self, ty: TypeId, id: ComponentId) {
        if self.waiting == 0 {
            return;
        }
        for direct in &mut self.direct {
            for r in direct.iter_mut().filter(|r| r.ty == ty && r.id.is_none()) {
                r.id = Some(id);
                self.waiting -= 1;
            }
        }
    }

    /// Why `id` cannot be spawned or inserted yet: it, or a type it requires
    /// transitively, requires a type that is not registered (the message names both and
    /// says the fix). `name` names a registered type. Cost: nothing when no requirement
    /// waits.
    #[inline]
    pub(crate) fn missing(
        &self,
        id: ComponentId,
        name: impl Fn(ComponentId) -> &'static str,
    ) -> Option<String> {
        if self.waiting == 0 {
            return None;
        }
        self.missing_slow(id, name)
    }

    #[cold]
    fn missing_slow(
        &self,
        id: ComponentId,
        name: impl Fn(ComponentId) -> &'static str,
    ) -> Option<String> {
        let mut seen = vec![id];
        let mut i = 0;
        while i < seen.len() {
            for r in self.direct(seen[i]) {
                match r.id {
                    None => {
                        let short = r.name.rsplit("::").next().unwrap_or(r.name);
                        return Some(format!(
                            "runsync: component type `{}` requires `{}`, which is not \
                             registered; register it (e.g. `world.register::<{short}>(..)`) \
                             before spawning or inserting `{}`",
                            name(seen[i]),
                            r.name,
                            name(id)
                        ));
                    }
                    Some(r) if !seen.contains(&r) => seen.push(r),
                    Some(_) => {}
                }
            }
            i += 1;
        }
        None
    }

    /// Appends to `types` (the types an entity has or gets, of which those from `from` on
    /// are the ones given: a bundle's, or the one inserted) every type they require,
    /// transitively, that is not among them, breadth first (see the module docs), calling
    /// `made` with each appended type's requirement, in order. Types before `from` are
    /// present and not walked.
    pub(crate) fn closure(
        &self,
        types: &mut Vec<ComponentId>,
        from: usize,
        mut made: impl FnMut(&Requirement),
    ) {
        let mut i = from;
        while i < types.len() {
            for r in self.direct(types[i]) {
                let id = r.id();
                if !types.contains(&id) {
                    types.push(id);
                    made(r);
                }
            }
            i += 1;
        }
    }

    /// The plan of the batch spawn in progress (see [`Storage::add_required`]).
    ///
    /// [`Storage::add_required`]: super::Storage::add_required
    pub(crate) fn plan_mut(&mut self) -> &mut Vec<Requirement> {
        &mut self.plan
    }
}
