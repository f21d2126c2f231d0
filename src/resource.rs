//! Resources as merge targets: `World::register_resource` and `Output::write_resource`.
//!
//! A resource registered with a merge is written like a component: systems emit outputs
//! during Run, and Sync folds them — every system's, in system registration order, then
//! emission order — into the resource with one merge call, after the component folds. The
//! new value is visible from the next frame on.
//!
//! Also here: the world's map of resources ([`Resources`]), and how an opted-in resource
//! type is saved, loaded and checksummed ([`ResourceHook`], [`ResourceSum`]).

use std::any::{Any, TypeId, type_name};
use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};

use crate::checksum::{Checksum, Checksummer};
use crate::component::{Component, TypeIdMap};
use crate::erased::Erased;
use crate::merge::Merge;

/// What folding one resource did.
#[derive(Default)]
pub(crate) struct ResourceCounts {
    pub(crate) merged: u64,
    pub(crate) dropped: u64,
    pub(crate) panic: Option<(&'static str, String)>,
}

/// Folds a resource's gathered outputs into it: see [`ResourceFold::new`].
type FoldFn = Box<dyn Fn(&mut Resources, &mut Erased) -> ResourceCounts + Send + Sync>;

/// The merge of one resource type `R`, with its gathering scratch. A system's outputs for
/// `R` are an [`Erased`] `Vec<R::Output>` (in its `SystemOutputs`).
pub(crate) struct ResourceFold {
    /// Every system's outputs of this frame, gathered (a `Vec<R::Output>`; emptied after
    /// the fold, capacity kept).
    all: Erased,
    fold: FoldFn,
    type_id: TypeId,
    type_name: &'static str,
}

impl ResourceFold {
    /// The fold of resource `R` registered with `merge`.
    pub(crate) fn new<R: Component, M: Merge<R>>(merge: M) -> Self {
        // The one downcast per frame: the gathered outputs, as `R`'s.
        let fold = move |resources: &mut Resources, all: &mut Erased| {
            let all = all.typed_mut::<Vec<R::Output>>();
            let mut counts = ResourceCounts::default();
            if all.is_empty() {
                return counts;
            }
            let n = all.len() as u64;
            match resources.get_mut::<R>() {
                Some(r) => {
                    let all = &*all;
                    if let Err(p) = catch_unwind(AssertUnwindSafe(|| merge.merge(r, all))) {
                        counts.panic = Some((type_name::<R>(), crate::pool::payload_message(&*p)));
                    }
                    counts.merged = n;
                }
                // Registered but not inserted (or removed): nothing to fold into.
                None => counts.dropped = n,
            }
            all.clear();
            counts
        };
        ResourceFold {
            all: Erased::new(Vec::<R::Output>::new()),
            fold: Box::new(fold),
            type_id: TypeId::of::<R>(),
            type_name: type_name::<R>(),
        }
    }

    /// Folds the outputs of `sources` (one buffer per system that wrote this resource, in
    /// system order; emptied) into the resource in `resources`.
    pub(crate) fn fold(
        &mut self,
        resources: &mut Resources,
        sources: &mut dyn Iterator<Item = &mut Erased>,
    ) -> ResourceCounts {
        for buf in sources {
            self.all.append(buf);
        }
        (self.fold)(resources, &mut self.all)
    }

    pub(crate) fn capacity_bytes(&self) -> usize {
        self.all.capacity_bytes()
    }

    /// The resource type.
    pub(crate) fn type_id(&self) -> TypeId {
        self.type_id
    }

    /// The resource type's name, for messages.
    pub(crate) fn type_name(&self) -> &'static str {
        self.type_name
    }
}

/// A resource value, type-erased.
pub(crate) type AnyBox = Box<dyn Any + Send + Sync>;

/// The world's resources, one value per type.
#[derive(Default)]
pub(crate) struct Resources {
    map: TypeIdMap<AnyBox>,
}

impl Resources {
    pub(crate) fn len(&self) -> usize {
        self.map.len()
    }
    pub(crate) fn insert<R: Send + Sync + 'static>(&mut self, r: R) {
        self.map.insert(TypeId::of::<R>(), Box::new(r));
    }
    pub(crate) fn get<R: Send + Sync + 'static>(&self) -> Option<&R> {
        self.map.get(&TypeId::of::<R>())?.downcast_ref()
    }
    pub(crate) fn get_mut<R: Send + Sync + 'static>(&mut self) -> Option<&mut R> {
        self.map.get_mut(&TypeId::of::<R>())?.downcast_mut()
    }
    pub(crate) fn remove<R: Send + Sync + 'static>(&mut self) -> Option<R> {
        let b = self.map.remove(&TypeId::of::<R>())?;
        b.downcast().ok().map(|b| *b)
    }
}

/// Loads a saved resource (or its absence) back into the resources.
pub(crate) type LoadFn = fn(&mut Resources, Option<&(dyn Any + Send + Sync)>);

/// How to save and load one resource type opted into snapshots.
pub(crate) struct ResourceHook {
    pub(crate) type_id: TypeId,
    /// Copies the resource into the place given (reusing what it holds); `false` if
    /// absent.
    pub(crate) save: fn(&Resources, &mut Option<AnyBox>) -> bool,
    pub(crate) load: LoadFn,
}

impl ResourceHook {
    pub(crate) fn of<R: Clone + Send + Sync + 'static>() -> Self {
        ResourceHook {
            type_id: TypeId::of::<R>(),
            save: save_resource::<R>,
            load: load_resource::<R>,
        }
    }
}

fn save_resource<R: Clone + Send + Sync + 'static>(
    from: &Resources,
    into: &mut Option<AnyBox>,
) -> bool {
    let Some(src) = from.get::<R>() else {
        return false;
    };
    match into.as_mut().and_then(|b| b.downcast_mut::<R>()) {
        Some(dst) => dst.clone_from(src),
        None => *into = Some(Box::new(src.clone())),
    }
    true
}

fn load_resource<R: Clone + Send + Sync + 'static>(
    into: &mut Resources,
    from: Option<&(dyn Any + Send + Sync)>,
) {
    let Some(from) = from else {
        into.remove::<R>();
        return;
    };
    let src = from
        .downcast_ref::<R>()
        .expect("a saved resource of another type");
    match into.get_mut::<R>() {
        Some(dst) => dst.clone_from(src),
        None => into.insert(src.clone()),
    }
}

/// How to checksum and show one resource type opted into checksums.
#[derive(Clone, Copy)]
pub(crate) struct ResourceSum {
    pub(crate) type_id: TypeId,
    pub(crate) name: &'static str,
    /// Writes presence and value into the checksum.
    pub(crate) sum: fn(&Resources, &mut Checksummer),
    /// The value, `Debug`-formatted, if present.
    pub(crate) show: fn(&Resources) -> Option<String>,
}

impl ResourceSum {
    pub(crate) fn of<R: Checksum + fmt::Debug + Send + Sync + 'static>() -> Self {
        ResourceSum {
            type_id: TypeId::of::<R>(),
            name: type_name::<R>(),
            sum: |res, h| match res.get::<R>() {
                None => h.write_u64(0),
                Some(r) => {
                    h.write_u64(1);
                    r.checksum(h);
                }
            },
            show: |res| res.get::<R>().map(|r| format!("{r:?}")),
        }
    }
}

/// How to save and load one resource type opted into save files.
#[derive(Clone, Copy)]
pub(crate) struct ResourceSerde {
    pub(crate) type_id: TypeId,
    pub(crate) name: &'static str,
    /// Appends the value (postcard) if present; returns whether it was.
    pub(crate) encode: fn(&Resources, &mut Vec<u8>) -> Result<bool, String>,
    /// Decodes a value from all of the bytes.
    pub(crate) decode: fn(&[u8]) -> Result<AnyBox, String>,
    /// Puts a decoded value in (or removes the resource, for `None`).
    pub(crate) put: fn(&mut Resources, Option<AnyBox>),
}

impl ResourceSerde {
    pub(crate) fn of<R>() -> Self
    where
        R: serde::Serialize + serde::de::DeserializeOwned + Send + Sync + 'static,
    {
        ResourceSerde {
            type_id: TypeId::of::<R>(),
            name: type_name::<R>(),
            encode: |res, out| match res.get::<R>() {
                None => Ok(false),
                Some(r) => {
                    crate::savefile::encode_values(std::slice::from_ref(r), out).map(|_| true)
                }
            },
            decode: |bytes| {
                let mut v: Vec<R> = Vec::with_capacity(1);
                crate::savefile::decode_values(bytes, 1, &mut v)?;
                Ok(Box::new(v.pop().expect("one value decoded")))
            },
            put: |res, value| match value {
                None => {
                    res.remove::<R>();
                }
                Some(b) => {
                    let r = b
                        .downcast::<R>()
                        .expect("a decoded resource of another type");
                    res.insert(*r);
                }
            },
        }
    }
}
