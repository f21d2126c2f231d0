//! Write provenance: for a few watched entities, which systems wrote which outputs to
//! which of their components in the last frame, in merge order, with the values.
//!
//! [`Runtime::watch`](crate::Runtime::watch) adds an entity to the runtime's [`Watches`];
//! Sync then records, between its gather and fold steps (when every output of the frame
//! sits, in system order, in its type's fold, still resolved to the `(column, row)` Run
//! gave it), each watched entity's writes and stored values, and after the fold step the
//! merged values. Nothing on the Run write path changes, and with nothing watched Sync
//! pays one `is_empty` check per step.
//!
//! Values are text only for types opted in with [`World::debugging`] (which needs `Debug`
//! on the component and on its output type); others list systems and write indices with
//! values `None`.

use std::fmt;
use std::sync::Arc;

use crate::commands::Command;
use crate::component::ComponentId;
use crate::entity::Entity;
use crate::system::{StageId, SystemEntry, SystemId};
use crate::world::World;

/// What Sync recorded for one watched entity in the last frame; from
/// [`Runtime::provenance`](crate::Runtime::provenance).
///
/// Lists, per component type of the entity that received outputs (in component id
/// order), every write in the order the merge saw them — system registration order, then
/// emission order within a system — with the value before and after the merge; then the
/// structural commands that targeted the entity, in the order Sync applied them. Writes
/// dropped in Run (the entity lacked the type, or was dead) do not appear. A frame with
/// several [stages](crate::Runtime::add_stage) records each stage's Sync in turn: the
/// components of the first stage, then those of the next (a type written in two stages
/// appears twice, each with its stage), and likewise the commands.
///
/// `Display` prints a readable report, one line per write.
///
/// ```
/// use runsync::prelude::*;
/// #[derive(Clone, Copy, Debug, PartialEq)]
/// struct Health(i32);
/// impl Component for Health { type Output = i32; }
///
/// let mut world = World::new();
/// world.register::<Health>(|h: &mut Health, d: &[i32]| h.0 += d.iter().sum::<i32>());
/// world.debugging::<Health>(); // values as `Debug` text
/// let e = world.spawn((Health(100),));
/// let mut rt = Runtime::builder().workers(1).build(world);
/// rt.add_system_named("poison", move |_: &World, out: &mut Output| out.write::<Health>(e, -1));
/// rt.add_system_named("sword", move |_: &World, out: &mut Output| {
///     out.write::<Health>(e, -5);
///     out.write::<Health>(e, -7);
/// });
/// rt.watch(e);
/// rt.frame();
///
/// let p = rt.provenance(e).unwrap();
/// let health = &p.components()[0];
/// assert_eq!(health.name, std::any::type_name::<Health>());
/// assert_eq!(health.before.as_deref(), Some("Health(100)"));
/// assert_eq!(health.after.as_deref(), Some("Health(87)"));
/// let writes: Vec<_> = health
///     .writes
///     .iter()
///     .map(|w| (&*w.system_name, w.index, w.value.as_deref().unwrap()))
///     .collect();
/// assert_eq!(writes, [("poison", 0, "-1"), ("sword", 0, "-5"), ("sword", 1, "-7")]);
/// println!("{p}");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Provenance {
    entity: Entity,
    frame: Option<u64>,
    components: Vec<ComponentWrites>,
    commands: Vec<CommandRecord>,
}

impl Provenance {
    fn new(entity: Entity) -> Self {
        Provenance {
            entity,
            frame: None,
            components: Vec::new(),
            commands: Vec::new(),
        }
    }

    /// The watched entity.
    pub fn entity(&self) -> Entity {
        self.entity
    }

    /// The frame this record describes (its number, counting from 1, as in
    /// [`FrameStats::frame`](crate::FrameStats::frame)); `None` until a Sync ran after
    /// [`watch`](crate::Runtime::watch). A frame whose Run failed records nothing, and the
    /// record keeps describing the frame before.
    pub fn frame(&self) -> Option<u64> {
        self.frame
    }

    /// Per component type that received outputs, in component id order.
    pub fn components(&self) -> &[ComponentWrites] {
        &self.components
    }

    /// The record of component type `id`, if it received outputs (the first stage's that
    /// did, with several stages).
    pub fn component(&self, id: ComponentId) -> Option<&ComponentWrites> {
        self.components.iter().find(|c| c.id == id)
    }

    /// Structural commands (spawn, insert, remove, despawn) that targeted the entity, in
    /// the order Sync applied them: system registration order, then emission order.
    pub fn commands(&self) -> &[CommandRecord] {
        &self.commands
    }

    /// Whether nothing targeted the entity (no write, no command).
    pub fn is_empty(&self) -> bool {
        self.components.is_empty() && self.commands.is_empty()
    }
}

impl fmt::Display for Provenance {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let opt = |v: &Option<String>| v.clone().unwrap_or_else(|| "?".to_owned());
        match self.frame {
            Some(n) => writeln!(f, "entity {}, frame {n}:", self.entity)?,
            None => writeln!(f, "entity {}, no frame recorded yet", self.entity)?,
        }
        if self.is_empty() {
            writeln!(f, "  nothing written")?;
        }
        for c in &self.components {
            write!(f, "  {}: {} -> {}", c.name, opt(&c.before), opt(&c.after))?;
            in_stage(f, c.stage)?;
            for w in &c.writes {
                writeln!(
                    f,
                    "    {} (system {}) #{}: {}",
                    w.system_name,
                    w.system.index(),
                    w.index,
                    opt(&w.value)
                )?;
            }
        }
        for c in &self.commands {
            let what = match c.kind {
                CommandKind::Insert { name, .. } => format!("insert {name}"),
                CommandKind::Remove { name, .. } => format!("remove {name}"),
                CommandKind::Despawn => "despawn".to_owned(),
                CommandKind::Spawn => "spawn".to_owned(),
            };
            write!(
                f,
                "  {what} by {} (system {})",
                c.system_name,
                c.system.index()
            )?;
            in_stage(f, c.stage)?;
        }
        Ok(())
    }
}

/// Ends a line of the report, naming the stage unless it is the first.
fn in_stage(f: &mut fmt::Formatter<'_>, stage: StageId) -> fmt::Result {
    match stage {
        StageId::FIRST => writeln!(f),
        _ => writeln!(f, " (stage {})", stage.index()),
    }
}

/// The writes one component type of a watched entity received in one stage of one frame;
/// part of a [`Provenance`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ComponentWrites {
    /// The component type.
    pub id: ComponentId,
    /// The stage whose Sync merged them.
    pub stage: StageId,
    /// Its type name.
    pub name: &'static str,
    /// The writes, in merge order: system registration order, then emission order.
    pub writes: Vec<WriteRecord>,
    /// The stored value before the merge (`Debug` text; `None` unless the type was opted
    /// in with [`World::debugging`]). With several stages: before this stage's merge.
    pub before: Option<String>,
    /// The stored value right after the merge, before structural commands (`Debug` text;
    /// `None` unless opted in).
    pub after: Option<String>,
}

/// One output a system emitted for a watched entity's component; part of a
/// [`ComponentWrites`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct WriteRecord {
    /// The system that emitted it.
    pub system: SystemId,
    /// That system's name.
    pub system_name: Arc<str>,
    /// Its place among that system's writes to this entity and type this frame (0 for the
    /// first): the emission order.
    pub index: u32,
    /// The output value (`Debug` text of `C::Output`; `None` unless the type was opted in
    /// with [`World::debugging`]).
    pub value: Option<String>,
}

/// A structural command that targeted a watched entity; part of a [`Provenance`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct CommandRecord {
    /// The system that emitted it.
    pub system: SystemId,
    /// The stage whose Sync applied it.
    pub stage: StageId,
    /// That system's name.
    pub system_name: Arc<str>,
    /// What it asked for.
    pub kind: CommandKind,
}

/// What a [`CommandRecord`] asked for. Whether it took effect is not recorded: an insert
/// into an entity despawned earlier in the same Sync, say, is dropped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum CommandKind {
    /// [`Output::insert`](crate::Output::insert) of a component.
    Insert {
        /// The component type.
        id: ComponentId,
        /// Its type name.
        name: &'static str,
    },
    /// [`Output::remove`](crate::Output::remove) of a component.
    Remove {
        /// The component type.
        id: ComponentId,
        /// Its type name.
        name: &'static str,
    },
    /// [`Output::despawn`](crate::Output::despawn).
    Despawn,
    /// [`Output::spawn`](crate::Output::spawn), which gave the entity its id in Run (a
    /// [`spawn_deferred`](crate::Output::spawn_deferred) takes its id only when Sync
    /// applies it, and is not recorded).
    Spawn,
}

/// The runtime's watched entities, each with its last record, in watch order. Meant for a
/// few entities: lookups are linear.
#[derive(Default)]
pub(crate) struct Watches {
    records: Vec<Provenance>,
    /// The frame Sync is about to record (set by the runtime before Sync).
    pub(crate) frame: u64,
    /// `(system, value)` of one (entity, type), reused.
    scratch: Vec<(u32, Option<String>)>,
}

impl Watches {
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    pub(crate) fn watch(&mut self, e: Entity) {
        if self.get(e).is_none() {
            self.records.push(Provenance::new(e));
        }
    }

    pub(crate) fn unwatch(&mut self, e: Entity) -> bool {
        let before = self.records.len();
        self.records.retain(|p| p.entity != e);
        self.records.len() != before
    }

    pub(crate) fn get(&self, e: Entity) -> Option<&Provenance> {
        self.records.iter().find(|p| p.entity == e)
    }

    /// Sync of `stage` (whose systems are `systems`), between gather and fold: adds the
    /// stage's writes (and values before the merge) and commands to every record, which
    /// the frame's `first` stage empties first.
    pub(crate) fn record_writes(
        &mut self,
        world: &World,
        systems: &[SystemEntry],
        stage: StageId,
        first: bool,
    ) {
        let (storage, folds) = (world.storage(), world.folds());
        let Watches {
            records,
            frame,
            scratch,
        } = self;
        for p in records.iter_mut() {
            if first {
                p.frame = Some(*frame);
                p.components.clear();
                p.commands.clear();
            }
            record_commands(p, world, systems, stage);
            let Some(loc) = storage.locate(p.entity) else {
                continue;
            };
            let table = storage.tables().get(loc.table);
            for &id in table.components() {
                let fold = &folds[id.index()];
                if !fold.has_sources() {
                    continue;
                }
                let col = table.column(id).expect("a table has a column per type");
                scratch.clear();
                fold.writes_to(col, loc.row, scratch);
                if scratch.is_empty() {
                    continue;
                }
                let mut writes = Vec::with_capacity(scratch.len());
                for (s, value) in scratch.drain(..) {
                    // `s` is the system's place in the stage.
                    let entry = &systems[s as usize];
                    let index = match writes.last() {
                        Some(WriteRecord { system, index, .. }) if *system == entry.id => index + 1,
                        _ => 0,
                    };
                    writes.push(WriteRecord {
                        system: entry.id,
                        system_name: entry.name.clone(),
                        index,
                        value,
                    });
                }
                p.components.push(ComponentWrites {
                    id,
                    stage,
                    name: storage.type_name(id),
                    writes,
                    before: storage.columns(id).debug_value(col, loc.row),
                    after: None,
                });
            }
        }
    }

    /// Sync of `stage`, right after the fold step (no table has changed since
    /// [`record_writes`](Self::record_writes)): the merged values of that stage's records.
    pub(crate) fn record_after(&mut self, world: &World, stage: StageId) {
        let storage = world.storage();
        for p in &mut self.records {
            for c in p.components.iter_mut().filter(|c| c.stage == stage) {
                let (col, row) = storage
                    .column_row_of(p.entity, c.id)
                    .expect("no table changes between gather and commands");
                c.after = storage.columns(c.id).debug_value(col, row);
            }
        }
    }
}

/// The commands of this stage that target `p`'s entity, in the order Sync applies them.
fn record_commands(p: &mut Provenance, world: &World, systems: &[SystemEntry], stage: StageId) {
    let name = |id| world.storage().type_name(id);
    for entry in systems {
        if !entry.ran {
            continue;
        }
        for &cmd in entry.out.commands.commands() {
            let kind = match cmd {
                Command::Insert(e, id) if e == p.entity => {
                    CommandKind::Insert { id, name: name(id) }
                }
                Command::Remove(e, id) if e == p.entity => {
                    CommandKind::Remove { id, name: name(id) }
                }
                Command::Despawn(e) if e == p.entity => CommandKind::Despawn,
                Command::Spawn(_, Some(e)) if e == p.entity => CommandKind::Spawn,
                _ => continue,
            };
            p.commands.push(CommandRecord {
                system: entry.id,
                stage,
                system_name: entry.name.clone(),
                kind,
            });
        }
    }
}
