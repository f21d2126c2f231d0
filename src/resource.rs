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
use crate::merge::Merge;

/// One system's outputs for one resource type.
pub(crate) struct ResBuf<R: Component> {
    pub(crate) values: Vec<R::Output>,
}

/// The type-erased face of a [`ResBuf`].
pub(crate) trait AnyResBuf: Send + Sync {
    fn as_any_mut(&mut self) -> &mut dyn Any;
    fn len(&self) -> usize;
    fn clear(&mut self);
    fn empty_like(&self) -> Box<dyn AnyResBuf>;
    /// Moves `other`'s outputs (of the same type) behind this buffer's.
    fn append_any(&mut self, other: &mut dyn AnyResBuf);
    fn capacity_bytes(&self) -> usize;
}

impl<R: Component> AnyResBuf for ResBuf<R> {
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
    fn len(&self) -> usize {
        self.values.len()
    }
    fn clear(&mut self) {
        self.values.clear();
    }
    fn empty_like(&self) -> Box<dyn AnyResBuf> {
        Box::new(ResBuf::<R> { values: Vec::new() })
    }
    fn append_any(&mut self, other: &mut dyn AnyResBuf) {
        let other = other
            .as_any_mut()
            .downcast_mut::<ResBuf<R>>()
            .expect("a resource buffer of another type");
        self.values.append(&mut other.values);
    }
    fn capacity_bytes(&self) -> usize {
        self.values.capacity() * std::mem::size_of::<R::Output>()
    }
}

/// The buffer for resource `R`, as a system's typed handle.
pub(crate) fn typed_buf<R: Component>(slot: &mut Option<Box<dyn AnyResBuf>>) -> &mut ResBuf<R> {
    slot.get_or_insert_with(|| Box::new(ResBuf::<R> { values: Vec::new() }))
        .as_any_mut()
        .downcast_mut()
        .expect("resource id maps to another type")
}

/// What folding one resource did.
#[derive(Default)]
pub(crate) struct ResourceCounts {
    pub(crate) merged: u64,
    pub(crate) dropped: u64,
    pub(crate) panic: Option<(&'static str, String)>,
}

/// The merge of one resource type, with its gathering scratch.
pub(crate) struct ResourceFold<R: Component, M: Merge<R>> {
    merge: M,
    all: Vec<R::Output>,
}

impl<R: Component, M: Merge<R>> ResourceFold<R, M> {
    pub(crate) fn new(merge: M) -> Self {
        ResourceFold {
            merge,
            all: Vec::new(),
        }
    }
}

/// The type-erased face of a [`ResourceFold`].
pub(crate) trait AnyResourceFold: Send + Sync {
    /// Folds the outputs of `sources` (one buffer per system that wrote this resource, in
    /// system order; emptied) into the resource in `resources`.
    fn fold<'a>(
        &mut self,
        resources: &mut Resources,
        sources: &mut dyn Iterator<Item = &'a mut (dyn AnyResBuf + 'static)>,
    ) -> ResourceCounts;
    fn capacity_bytes(&self) -> usize;
    /// The resource type.
    fn type_id(&self) -> TypeId;
    /// The resource type's name, for messages.
    fn type_name(&self) -> &'static str;
}

impl<R: Component, M: Merge<R>> AnyResourceFold for ResourceFold<R, M> {
    fn fold<'a>(
        &mut self,
        resources: &mut Resources,
        sources: &mut dyn Iterator<Item = &'a mut (dyn AnyResBuf + 'static)>,
    ) -> ResourceCounts {
        for buf in sources {
            let buf = buf
                .as_any_mut()
                .downcast_mut::<ResBuf<R>>()
                .expect("a resource buffer of another type");
            self.all.append(&mut buf.values);
        }
        let mut counts = ResourceCounts::default();
        if self.all.is_empty() {
            return counts;
        }
        let n = self.all.len() as u64;
        let target = resources.get_mut::<R>();
        match target {
            Some(r) => {
                let (merge, all) = (&self.merge, &self.all);
                if let Err(p) = catch_unwind(AssertUnwindSafe(|| merge.merge(r, all))) {
                    counts.panic = Some((type_name::<R>(), crate::pool::payload_message(&*p)));
                }
                counts.merged = n;
            }
            // Registered but not inserted (or removed): nothing to fold into.
            None => counts.dropped = n,
        }
        self.all.clear();
        counts
    }

    fn capacity_bytes(&self) -> usize {
        self.all.capacity() * std::mem::size_of::<R::Output>()
    }

    fn type_id(&self) -> TypeId {
        TypeId::of::<R>()
    }

    fn type_name(&self) -> &'static str {
        type_name::<R>()
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
    /// Copies the resource into the slot (reusing it); `false` if absent.
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
