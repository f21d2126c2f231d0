//! A runtime's state kept and brought back: in memory ([`RuntimeSnapshot`],
//! [`Runtime::snapshot`], [`Runtime::restore`]) and in save files ([`Runtime::save`],
//! [`Runtime::load`]), each the world plus the frame counter and [`Time`].

use super::Runtime;
use super::builder::Time;
use crate::checksum::Version;
use crate::savefile::{LoadError, Put, Reader, SaveError, SaveSource, Sink};
use crate::storage::snapshot::{Digested, Digests, Panic, Piece, Plan, SaveJob};
use crate::world::snapshot::{Snapshot, SnapshotError};

#[cfg(doc)]
use crate::world::World;

/// A [`Runtime`]'s saved state: a world [`Snapshot`], the frame counter and [`Time`]; see
/// [`Runtime::snapshot`] (an example) and [`Runtime::snapshot_into`] (a reused ring).
///
/// ```
/// use runsync::prelude::*;
/// use runsync::RuntimeSnapshot;
/// let mut rt = Runtime::builder().workers(1).build(World::new());
/// let mut ring: Vec<RuntimeSnapshot> = (0..3).map(|_| RuntimeSnapshot::new()).collect();
/// for f in 0..6 {
///     rt.snapshot_into(&mut ring[f % 3]).unwrap(); // the state before frame f
///     rt.frame();
/// }
/// rt.restore(&ring[4 % 3]);
/// assert_eq!((rt.frame_count(), ring[4 % 3].frame()), (4, 4));
/// ```
#[derive(Debug, Default)]
pub struct RuntimeSnapshot {
    world: Snapshot,
    frame: u64,
    time: Option<Time>,
    /// The checksum's block digests [`Runtime::save_into`] computed for this state, by
    /// block, with the stamp of the rows each is of: a restore hands them to the
    /// runtime, so that the checksum or save that follows it digests only what changed
    /// since (a stamp names one content for the life of the process, so a digest stays
    /// true of its stamp whatever happened since). Empty from
    /// [`Runtime::snapshot_into`].
    digests: Vec<(Piece, (u64, u64))>,
}

impl RuntimeSnapshot {
    /// An empty snapshot, to be filled by [`Runtime::snapshot_into`].
    pub fn new() -> Self {
        Self::default()
    }

    /// The number of frames completed when it was taken ([`Runtime::frame_count`]).
    pub fn frame(&self) -> u64 {
        self.frame
    }

    /// The world part.
    pub fn world(&self) -> &Snapshot {
        &self.world
    }
}

/// Below this many rows in all, [`Runtime::checksum`] digests on the calling thread:
/// handing blocks to the workers costs more than it saves.
const PARALLEL_ROWS: usize = 16 * 1024;

impl Runtime {
    /// The world's [checksum](World::checksum), its blocks (4096 rows of a column, a
    /// table's entities or the allocator's slots) digested on the runtime's workers and
    /// combined in the fixed order: the same value as `self.world().checksum()` at any
    /// worker count, in about `1 / workers` of its time on a large world. What rollback
    /// (`runsync-net`), replays and the inspector's ring compare.
    ///
    /// It is incremental: the runtime keeps the digest of each block from its last call,
    /// and a block whose rows (of a column, an entity list or the allocator's slots) have
    /// not changed since — the same contents, by the stamp snapshots use too (see
    /// [`World::snapshot_into`]) — is not digested again.
    ///
    /// ```
    /// # use runsync::prelude::*;
    /// let mut world = World::new();
    /// world.spawn_batch((0..50_000u32).map(|_| ()));
    /// let rt = Runtime::builder().workers(4).build(world);
    /// assert_eq!(rt.checksum(), rt.world().checksum());
    /// ```
    ///
    /// # Panics
    /// If a [`Checksum`](crate::Checksum) implementation panics (the panic is passed on).
    pub fn checksum(&self) -> u64 {
        let digests = self.digest_blocks();
        self.world
            .digest_with(Version::CURRENT, &mut Digested(digests.plan.iter()))
    }

    /// [`World::checksum_parts`], its blocks digested on the workers as
    /// [`checksum`](Self::checksum) does: the same parts.
    ///
    /// # Panics
    /// As [`checksum`](Self::checksum).
    pub fn checksum_parts(&self) -> Vec<(&'static str, u64)> {
        let digests = self.digest_blocks();
        self.world.parts_with(&mut Digested(digests.plan.iter()))
    }

    /// Lists the checksum's blocks and digests them: those whose rows are unchanged
    /// since the last call from then, the others anew, on the workers for a large world.
    fn digest_blocks(&self) -> std::sync::MutexGuard<'_, Digests> {
        let storage = self.world.storage();
        let mut d = self.plan_digests();
        let rows: usize = d.todo.iter().map(|(_, p, _)| p.rows()).sum();
        let parallel = self.parallel(d.todo.len(), rows);
        let digest = |(_, piece, digest): &mut (usize, Piece, u64)| {
            *digest = storage.digest_piece(Version::CURRENT, *piece);
        };
        if let Err(payload) = self.each(parallel, &mut d.todo, &digest) {
            std::panic::resume_unwind(payload);
        }
        let Digests { plan, todo, .. } = &mut *d;
        for &(i, _, digest) in todo.iter() {
            plan[i].1 = digest;
        }
        Self::keep_digests(&mut d);
        d
    }

    /// Whether `jobs` jobs over `rows` rows in all go to the workers: below
    /// [`PARALLEL_ROWS`], handing them out costs more than it saves.
    fn parallel(&self, jobs: usize, rows: usize) -> bool {
        self.pool.threads() > 1 && jobs > 1 && rows >= PARALLEL_ROWS
    }

    /// Runs `job` on each item, on the workers if `parallel`, else here in order; `Err`
    /// with the payload if one panicked (after every item has run).
    fn each<T: Send>(
        &self,
        parallel: bool,
        items: &mut [T],
        job: &(dyn Fn(&mut T) + Sync),
    ) -> Result<(), Panic> {
        if parallel {
            return self
                .pool
                .for_each_mut(items, &|_, item| job(item))
                .map_err(|p| p.payload);
        }
        items.iter_mut().for_each(job);
        Ok(())
    }

    /// The checksum's blocks, in order, with the digests kept for those whose rows are
    /// unchanged since; the others listed in `todo`, to digest.
    fn plan_digests(&self) -> std::sync::MutexGuard<'_, Digests> {
        let storage = self.world.storage();
        // Poisoned only by a panicking `Checksum` or `Clone`: the lists are cleared first
        // anyway, and `known` is replaced only after every block is digested.
        let mut guard = self
            .digests
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let d = &mut *guard;
        d.plan.clear();
        storage.digest_walk(Version::CURRENT, &mut Plan(&mut d.plan), |_, _| {});
        d.stamps.clear();
        d.stamps
            .extend(d.plan.iter().map(|&(p, _)| storage.piece_stamp(p)));
        d.todo.clear();
        for (i, ((piece, digest), &stamp)) in d.plan.iter_mut().zip(&d.stamps).enumerate() {
            // `known` holds only stamped blocks, so a match is a stamp, never 0.
            match d.known.get(piece) {
                Some(&(was, known)) if was == stamp => *digest = known,
                _ => d.todo.push((i, *piece, 0)),
            }
        }
        guard
    }

    /// Keeps the digests of the plan's stamped blocks for the next call.
    fn keep_digests(d: &mut Digests) {
        d.known.clear();
        for (&(piece, digest), &stamp) in d.plan.iter().zip(&d.stamps) {
            if stamp != 0 {
                d.known.insert(piece, (stamp, digest));
            }
        }
    }

    /// A copy of the world ([`World::snapshot`]) plus the frame counter and the [`Time`]
    /// resource: [`restore`](Self::restore) makes the runtime continue exactly as it did
    /// from this frame.
    ///
    /// ```
    /// use runsync::prelude::*;
    /// #[derive(Clone, Copy, Debug, PartialEq)]
    /// struct Hp(i32);
    /// impl Component for Hp { type Output = i32; }
    ///
    /// let mut world = World::new();
    /// world.register::<Hp>(|h: &mut Hp, d: &[i32]| h.0 += d.iter().sum::<i32>());
    /// world.snapshotting::<Hp>();
    /// let e = world.spawn((Hp(100),));
    /// let mut rt = Runtime::builder().workers(1).build(world);
    /// rt.add_system(move |_: &World, out: &mut Output| out.write::<Hp>(e, -1));
    /// rt.frame();
    /// let saved = rt.snapshot().unwrap();   // after frame 1
    /// rt.frame();
    /// rt.frame();
    /// rt.restore(&saved);
    /// assert_eq!(rt.frame_count(), 1);
    /// assert_eq!(rt.world().resource::<Time>().frame, 1);
    /// assert_eq!(rt.world().get::<Hp>(e), Some(&Hp(99)));
    /// ```
    ///
    /// # Errors
    /// As [`World::snapshot`]: a component type not opted in with
    /// [`World::snapshotting`].
    pub fn snapshot(&self) -> Result<RuntimeSnapshot, SnapshotError> {
        let mut s = RuntimeSnapshot::default();
        self.snapshot_into(&mut s)?;
        Ok(s)
    }

    /// [`snapshot`](Self::snapshot) into an existing one, reusing its memory (see
    /// [`World::snapshot_into`]).
    ///
    /// # Errors
    /// As [`World::snapshot`].
    pub fn snapshot_into(&self, into: &mut RuntimeSnapshot) -> Result<(), SnapshotError> {
        into.digests.clear();
        self.world.snapshot_into(&mut into.world)?;
        into.frame = self.frame;
        into.time = self.world.get_resource::<Time>().copied();
        Ok(())
    }

    /// [`snapshot_into`](Self::snapshot_into) and [`checksum`](Self::checksum) at once,
    /// what a rollback session does every frame: one job copies the allocator, one the
    /// tables' entity lists, one per component type its columns (the biggest first), and
    /// one per block of the checksum digests it; the jobs run on the workers for a large
    /// world. Returns the checksum, the same value as [`checksum`](Self::checksum).
    ///
    /// The snapshot keeps the blocks' digests too: a [`restore`](Self::restore) of it
    /// hands them back, so that the checksum or save right after digests only the blocks
    /// changed since it was saved. A rollback session saves the frame it has just loaded
    /// (ggrs asks for it), into the entry it loaded it from: that save then copies and
    /// digests nothing.
    ///
    /// ```
    /// # use runsync::prelude::*;
    /// # use runsync::RuntimeSnapshot;
    /// let mut world = World::new();
    /// world.spawn_batch((0..50_000u32).map(|_| ()));
    /// let rt = Runtime::builder().workers(2).build(world);
    /// let mut saved = RuntimeSnapshot::new();
    /// let checksum = rt.save_into(&mut saved).unwrap();
    /// assert_eq!(checksum, rt.world().checksum());
    /// assert_eq!(saved.world().len(), 50_000);
    /// ```
    ///
    /// # Errors
    /// As [`snapshot_into`](Self::snapshot_into); the checksum is not returned then.
    ///
    /// # Panics
    /// As [`checksum`](Self::checksum), and if a component's `Clone` panics.
    pub fn save_into(&self, into: &mut RuntimeSnapshot) -> Result<u64, SnapshotError> {
        let mut d = self.plan_digests();
        let mut digested = false;
        let saved = self
            .world
            .snapshot_into_with(&mut into.world, |storage, into| {
                let rows = storage.len() + d.todo.iter().map(|(_, p, _)| p.rows()).sum::<usize>();
                // At least two jobs: the allocator's copy and the entity lists'.
                let parallel = self.parallel(2, rows);
                let run = |jobs: &mut [SaveJob], job: &(dyn Fn(&mut SaveJob) + Sync)| {
                    self.each(parallel, jobs, job)
                };
                match storage.save_digesting(into, &mut d, &run) {
                    Ok(saved) => {
                        digested = true;
                        saved
                    }
                    Err(payload) => std::panic::resume_unwind(payload),
                }
            });
        // Not digested only if the snapshot was refused before the copy began.
        into.digests.clear();
        if digested {
            Self::keep_digests(&mut d);
        }
        saved?;
        into.digests
            .extend(d.known.iter().map(|(&piece, &kept)| (piece, kept)));
        into.frame = self.frame;
        into.time = self.world.get_resource::<Time>().copied();
        Ok(self
            .world
            .digest_with(Version::CURRENT, &mut Digested(d.plan.iter())))
    }

    /// Brings back a [`snapshot`](Self::snapshot): the world ([`World::restore`]), the
    /// frame counter and [`Time`]. Systems, their enabled flags and their own state are
    /// not touched; output buffers are empty between frames. The next [`frame`](Self::frame)
    /// is the one after the snapshot's.
    ///
    /// # Panics
    /// As [`World::restore`]; the runtime is then left as it was.
    #[track_caller]
    pub fn restore(&mut self, snapshot: &RuntimeSnapshot) {
        if let Err(e) = self.try_restore(snapshot) {
            panic!("{e}");
        }
    }

    /// [`restore`](Self::restore), reporting a snapshot that cannot be restored here
    /// instead of panicking.
    ///
    /// # Errors
    /// As [`World::try_restore`]: the world, the frame counter and [`Time`] are then left
    /// as they were.
    pub fn try_restore(&mut self, snapshot: &RuntimeSnapshot) -> Result<(), SnapshotError> {
        self.world.try_restore(&snapshot.world)?;
        self.frame = snapshot.frame;
        // The restored rows have the stamps they had when the snapshot was saved, so the
        // digests it keeps of them hold again.
        let d = self
            .digests
            .get_mut()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        // One by one: `extend` would reserve room for them all, though most are known.
        for &(piece, kept) in &snapshot.digests {
            d.known.insert(piece, kept);
        }
        match (snapshot.time, self.world.get_resource_mut::<Time>()) {
            (Some(t), Some(now)) => *now = t,
            (Some(t), None) => self.world.insert_resource(t),
            (None, _) => {
                self.world.remove_resource::<Time>();
            }
        }
        Ok(())
    }

    /// Writes a save file ([`World::save`]) that also holds the frame counter and
    /// [`Time`]: [`load`](Self::load) makes a runtime with the same systems continue
    /// exactly as this one does from here.
    ///
    /// ```
    /// use runsync::prelude::*;
    /// #[derive(Component, Checksum, Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
    /// #[component(output = i32, merge = merge::sum, save, checksum)]
    /// struct Hp(i32);
    /// impl std::ops::AddAssign<i32> for Hp { fn add_assign(&mut self, d: i32) { self.0 += d } }
    ///
    /// let game = || {
    ///     let mut world = World::new();
    ///     world.register_default::<Hp>();
    ///     let mut rt = Runtime::builder().workers(2).build(world);
    ///     rt.add_system(|w: &World, out: &mut Output| {
    ///         for (e, _) in w.query::<(&Hp,)>() { out.write::<Hp>(e, -1); }
    ///     });
    ///     rt
    /// };
    /// let mut rt = game();
    /// rt.world_mut().spawn((Hp(100),));
    /// rt.frame();
    /// let mut file = Vec::new();
    /// rt.save(&mut file).unwrap();
    /// rt.frame();
    ///
    /// let mut other = game();
    /// other.load(&mut file.as_slice()).unwrap();
    /// assert_eq!(other.frame_count(), 1);
    /// other.frame();
    /// assert_eq!(other.world().checksum(), rt.world().checksum());
    /// ```
    ///
    /// # Errors
    /// As [`World::save`].
    pub fn save(&self, w: &mut impl std::io::Write) -> Result<(), SaveError> {
        self.write_save(w)
    }

    /// Loads a save made by [`save`](Self::save): the world ([`World::load`]), the frame
    /// counter and [`Time`]. Systems, their enabled flags and their own state are not
    /// touched (as [`restore`](Self::restore)).
    ///
    /// # Errors
    /// As [`World::load`], and [`LoadError::NotARuntimeSave`] for a save made by
    /// [`World::save`]. The runtime is then as it was.
    pub fn load(&mut self, r: &mut impl std::io::Read) -> Result<(), LoadError> {
        let mut src = SaveSource::new(r);
        self.read_save(&mut src)?;
        src.finish()
    }

    /// Writes a runtime save to `w`.
    pub(super) fn write_save(&self, w: &mut dyn std::io::Write) -> Result<(), SaveError> {
        let mut part = Vec::with_capacity(21);
        part.put_u64(self.frame);
        let time = self.world.get_resource::<Time>();
        part.put_u8(u8::from(time.is_some()));
        let t = time.copied().unwrap_or(Time { dt: 0.0, frame: 0 });
        part.put_u32(t.dt.to_bits());
        part.put_u64(t.frame);
        let mut out = Sink::new(w);
        self.world.write_save(&mut out, Some(&part))?;
        out.finish()
    }

    /// Reads a runtime save from `r` (which may go on after it) and applies it.
    pub(super) fn read_save(&mut self, r: &mut SaveSource<'_>) -> Result<(), LoadError> {
        let parsed = self.world.parse_save_from(r)?;
        let runtime = parsed
            .runtime
            .as_deref()
            .ok_or(LoadError::NotARuntimeSave)?;
        let mut part = Reader::new(runtime);
        let frame = part.u64("the frame counter")?;
        let has_time = part.u8("the time")?;
        let dt = f32::from_bits(part.u32("the time")?);
        let time_frame = part.u64("the time")?;
        part.finish()?;
        self.world.apply_save(parsed);
        self.frame = frame;
        match has_time {
            0 => {
                self.world.remove_resource::<Time>();
            }
            _ => self.world.insert_resource(Time {
                dt,
                frame: time_frame,
            }),
        }
        Ok(())
    }
}
