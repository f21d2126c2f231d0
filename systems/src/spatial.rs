//! One spatial grid per frame for every neighbour system: the [`SpatialGrid`] resource and
//! the [`BuildGrid`] system that fills it.

use std::borrow::Cow;
use std::sync::Arc;

use glam::Vec2;
use runsync::prelude::*;
use serde::{Deserialize, Serialize};

use crate::grid::Grid;
use crate::grid::GridItem;
use crate::grid::MAX_GRID_PARTS;
use crate::{Collider, Health, Position, Projectile, Team, Velocity};

/// The world's colliders as they were one frame ago, indexed in a [`Grid`] once per frame
/// by [`BuildGrid`] and read by every neighbour system: [`Separation`](crate::Separation),
/// [`Contact`](crate::Contact) and yours ([`current`](Self::current)).
///
/// **A resource, written by [`BuildGrid`]; output: `SpatialGrid`; merge: last write
/// wins.** Call [`SpatialGrid::register`] before building the runtime, and add
/// [`BuildGrid`] as a system. A grid built during frame `f` (from the world after frame
/// `f - 1`) is what systems read during frame `f + 1`.
///
/// Every entity with [`Position`] and [`Collider`] that is a *body* (it has [`Velocity`]
/// and is not a [`Projectile`]) or a *victim* (it has [`Team`] and [`Health`]) is an item;
/// its [`GridItem::tag`](crate::GridItem::tag) holds its team in the low 8 bits (0 without
/// a team) and the flags [`BODY`](Self::BODY) and [`VICTIM`](Self::VICTIM).
///
/// # Why a resource read next frame
///
/// [`Separation`](crate::Separation) and [`Contact`](crate::Contact) both need "who is
/// near this point". Each can index the world in a [`Grid`] of its own every frame, but
/// then the same positions are sorted into cells twice. Systems cannot hand data to each
/// other within a frame (they all run at once, seeing only the last Sync's world), so the
/// one grid is built by [`BuildGrid`] during Run and written with
/// [`Output::write_resource`]; Sync swaps it in, and the next frame's systems read it. It
/// is therefore **one frame older** than the world they see: the neighbours' positions,
/// and which entities exist, are those of the frame before.
///
/// # In save files
///
/// The next frame reads this grid, so it is part of the state a save must hold (a world
/// loaded without it would run its next frame on this frame's positions instead, and
/// diverge). [`register`](Self::register) opts it into saves
/// ([`World::saving_resource`]); it is saved as the frame that built it, the requested
/// cell side and its items in the order they were inserted, and loading rebuilds the
/// grid and its per-block teams from them: a rebuild depends only on its input, so the
/// loaded grid is the saved one bit for bit, at about a third of the bytes of its
/// arrays.
///
/// A save is read as hostile: before anything is built, loading checks the cell side (a
/// positive finite number; negated, as a lattice grid's is saved, a positive power of two,
/// as [`Grid::on_lattice`] requires), that every position is finite (a rebuild keeps only
/// those), and that a lattice grid's cells, which its items' extent sizes however sparse
/// they are, number at most 2^20, or 16 per item if that is more: 4 MiB of cells for a
/// small grid, 64 bytes per item for a large one (the arena's lattice has about 1.5 cells
/// per agent). A value that breaks one is refused, the load failing with
/// [`LoadError::Decode`](runsync::LoadError::Decode) naming `SpatialGrid` and what is
/// wrong, never built (a lattice over two far-apart positions would otherwise ask for up
/// to 2^32 cells, 17 GB). So a live lattice grid sparser than that saves but does not
/// load: keep a lattice world's items within a few cells each of the others.
///
/// The grid is shared, not copied: the resource holds an `Arc`, so the merge, snapshots
/// and restores clone a pointer. [`BuildGrid`] rebuilds into whichever of its buffers
/// nobody else holds any more (two in a steady state, more while snapshots keep old
/// grids), so a steady frame allocates nothing.
///
/// ```
/// use glam::Vec2;
/// use runsync::prelude::*;
/// use runsync_systems::*;
/// let mut world = World::new();
/// runsync_systems::register(&mut world);
/// SpatialGrid::register(&mut world);
/// let c = Collider { radius: 0.5 };
/// let a = world.spawn((Position(Vec2::ZERO), Velocity(Vec2::ZERO), c, Team(1), Health::full(9)));
/// let mut rt = Runtime::builder().build(world);
/// rt.add_system(BuildGrid::default());
/// rt.frame(); // the first frame builds the grid from the world before it
/// let grid = rt.world().resource::<SpatialGrid>();
/// assert_eq!(grid.frame(), Some(0));
/// let mut near = Vec::new();
/// grid.grid().unwrap().for_each_within(Vec2::new(0.2, 0.0), 1.0, |it| near.push((it.entity, it.tag)));
/// assert_eq!(near, [(a, 1 | SpatialGrid::BODY | SpatialGrid::VICTIM)]);
/// ```
#[derive(Clone, Default)]
pub struct SpatialGrid {
    built: Option<Arc<Built>>,
}

impl std::fmt::Debug for SpatialGrid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SpatialGrid")
            .field("frame", &self.frame())
            .field("items", &self.grid().map_or(0, Grid::len))
            .finish()
    }
}

/// One grid, its victims' teams per block of cells, and the frame whose Run built it.
#[derive(Debug)]
pub(crate) struct Built {
    pub(crate) grid: Grid,
    pub(crate) teams: TeamBlocks,
    frame: u64,
}

impl Component for SpatialGrid {
    type Output = SpatialGrid;
}

impl SpatialGrid {
    /// Tag flag: the item is a body for [`Separation`](crate::Separation) (it has
    /// [`Velocity`] and is not a [`Projectile`]).
    pub const BODY: u32 = 1 << 8;
    /// Tag flag: the item is a victim for [`Contact`](crate::Contact) (it has [`Team`] and
    /// [`Health`]).
    pub const VICTIM: u32 = 1 << 9;
    /// The bits of a tag that hold the team.
    pub const TEAM_MASK: u32 = 0xff;

    /// Makes `world` ready for [`BuildGrid`]: registers the resource with `merge::last`,
    /// inserts an empty one and opts it into snapshots and save files, so that a restored
    /// or loaded world also gets back the grid its next frame reads (re-simulating after a
    /// rollback, or running on from a save, then gives the same frames).
    ///
    /// # Panics
    /// If it was already registered.
    pub fn register(world: &mut World) {
        world.register_resource::<SpatialGrid>(merge::last);
        world.insert_resource(SpatialGrid::default());
        world.snapshotting_resource::<SpatialGrid>();
        world.saving_resource::<SpatialGrid>();
    }

    /// The grid, if one was built.
    pub fn grid(&self) -> Option<&Grid> {
        self.built.as_ref().map(|b| &b.grid)
    }

    /// [`Time::frame`] as the Run that built the grid read it (the frames completed before
    /// that one: 0 for the first), if one was built.
    pub fn frame(&self) -> Option<u64> {
        self.built.as_ref().map(|b| b.frame)
    }

    /// The world's shared grid if it is current: built during the previous frame, so it
    /// holds the colliders as the frame before this one's world left them. `None` if there
    /// is no [`SpatialGrid`] resource, it was never built, or it is older (no
    /// [`BuildGrid`] ran last frame) — a neighbour system then indexes the world itself.
    pub fn current(world: &World) -> Option<&Grid> {
        Self::current_built(world).map(|b| &b.grid)
    }

    /// [`current`](Self::current), with the grid's teams per block of cells.
    pub(crate) fn current_built(world: &World) -> Option<&Built> {
        let now = world.get_resource::<Time>()?.frame;
        let built = world.get_resource::<SpatialGrid>()?.built.as_deref()?;
        (built.frame.checked_add(1) == Some(now)).then_some(built)
    }
}

/// A [`SpatialGrid`] in a save file (see "In save files" there), written from borrowed
/// items.
#[derive(Serialize)]
struct SavedGrid<'a> {
    frame: u64,
    cell: f32,
    items: &'a [GridItem],
}

/// [`SavedGrid`] read back: the same fields, owned.
#[derive(Deserialize)]
struct LoadedGrid {
    frame: u64,
    cell: f32,
    items: Vec<GridItem>,
}

impl Serialize for SpatialGrid {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.built
            .as_deref()
            .map(|b| SavedGrid {
                frame: b.frame,
                // A lattice grid saves its cell side negated (the format has no other
                // field for it).
                cell: if b.grid.is_on_lattice() {
                    -b.grid.cell()
                } else {
                    b.grid.cell()
                },
                items: b.grid.inserted(),
            })
            .serialize(s)
    }
}

/// The most cells a loaded lattice grid may have, whatever it holds: 2^20 (4 MiB of cell
/// starts). A larger one is refused unless it has few enough per item
/// ([`LOADED_LATTICE_CELLS_PER_ITEM`]).
const LOADED_LATTICE_CELLS: i128 = 1 << 20;

/// The most cells per item a loaded lattice grid may have beyond
/// [`LOADED_LATTICE_CELLS`]: 16 (64 bytes of cell starts, about what the item itself costs
/// the grid: its copies in `items` and `input` and its cell).
const LOADED_LATTICE_CELLS_PER_ITEM: i128 = 16;

impl LoadedGrid {
    /// The empty grid this save describes, once everything a rebuild and the queries rely
    /// on is checked: the cell side, every position, and (for a lattice grid) that its
    /// cells are within the bound of a loaded one. Nothing is allocated by the saved
    /// values before they are checked.
    fn check(&self) -> Result<Grid, String> {
        let (cell, n) = (self.cell, self.items.len());
        let side = cell.abs();
        let lattice = cell < 0.0;
        if lattice {
            if !(side.is_finite() && side.to_bits() & 0x007f_ffff == 0 && side > 0.0) {
                return Err(format!(
                    "cell side {cell} (negated: a lattice grid's) is not a positive power of two"
                ));
            }
        } else if !(side.is_finite() && side > 0.0) {
            return Err(format!("cell side {cell} is not a positive finite number"));
        }
        let (mut lo, mut hi) = (Vec2::splat(f32::MAX), Vec2::splat(f32::MIN));
        for (i, it) in self.items.iter().enumerate() {
            if !it.pos.is_finite() {
                return Err(format!(
                    "item {i} of {n} has a position that is not finite ({})",
                    it.pos
                ));
            }
            (lo, hi) = (lo.min(it.pos), hi.max(it.pos));
        }
        if !lattice {
            // A box grid grows its cells to at most two per item.
            return Ok(Grid::new(side));
        }
        if n > 0 {
            let (_, (cols, rows)) = crate::grid::lattice_span(side, lo, hi);
            let bound = LOADED_LATTICE_CELLS.max(LOADED_LATTICE_CELLS_PER_ITEM * n as i128);
            if cols.checked_mul(rows).is_none_or(|c| c > bound) {
                return Err(format!(
                    "a lattice grid of side {side} over {lo}..{hi} would need {cols} x {rows} \
                     cells; a loaded one may have at most {bound} (2^20, or 16 per item)"
                ));
            }
        }
        Ok(Grid::on_lattice(side))
    }
}

impl<'de> Deserialize<'de> for SpatialGrid {
    /// Reads a grid saved by `Serialize`, checked before it is built: see "In save files"
    /// on [`SpatialGrid`].
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let Some(saved) = Option::<LoadedGrid>::deserialize(d)? else {
            return Ok(SpatialGrid::default());
        };
        let mut grid = saved
            .check()
            .map_err(|why| serde::de::Error::custom(format!("SpatialGrid: {why}")))?;
        grid.rebuild(
            saved
                .items
                .iter()
                .map(|it| (it.entity, it.pos, it.radius, it.tag)),
        );
        let mut teams = TeamBlocks::default();
        teams.rebuild(&grid);
        Ok(SpatialGrid {
            built: Some(Arc::new(Built {
                grid,
                teams,
                frame: saved.frame,
            })),
        })
    }
}

/// Per block of 4 x 4 cells of a [`Grid`] tagged like a [`SpatialGrid`], the one team of
/// the victims in it, if they are all of one team: an attacker whose surroundings hold
/// victims of its own team only (most attackers, away from the fronts) need not search
/// them one by one. At a byte per block the table stays in cache, where a random look-up
/// into the grid itself would not.
#[derive(Clone, Debug, Default)]
pub(crate) struct TeamBlocks {
    /// The grid's origin, and 1 / the side of a block.
    origin: Vec2,
    per_side: f32,
    /// Blocks per row and column.
    cols: u32,
    rows: u32,
    teams: Vec<u8>,
}

impl TeamBlocks {
    /// Cells per block side, as a shift.
    const SHIFT: u32 = 2;
    /// A block without victims.
    const NONE: u8 = u8::MAX;
    /// A block with victims of several teams — or of team 254 or 255, which do not fit
    /// beside the two markers (their blocks are always searched).
    const MIXED: u8 = u8::MAX - 1;

    /// Summarises the cells of `grid` as last rebuilt. Cost: one pass over the items, and
    /// one over the blocks of each row of cells.
    pub(crate) fn rebuild(&mut self, grid: &Grid) {
        let (cols, rows) = grid.dims();
        if !self.cover(grid) {
            return;
        }
        for y in 0..rows {
            let first = ((y >> Self::SHIFT) * self.cols) as usize;
            let row = &mut self.teams[first..first + self.cols as usize];
            Self::summarise_row(grid, y, cols, row);
        }
    }

    /// [`rebuild`](Self::rebuild) on a system's workers: a band of rows of blocks per job
    /// (each block is summarised from its own cells, so the bands are independent and the
    /// table is the same).
    pub(crate) fn rebuild_parallel(&mut self, grid: &Grid, par: runsync::Parallel<'_>) {
        let (cols, rows) = grid.dims();
        if !self.cover(grid) {
            return;
        }
        let block_cols = self.cols;
        // A fixed number of bands (not one per worker): the same work and longest job at
        // every worker count.
        let band = (self.rows as usize).div_ceil(32).max(1);
        par.chunks_mut(&mut self.teams, band * block_cols as usize, |k, teams| {
            let by0 = (k * band) as u32;
            for (j, row) in teams.chunks_mut(block_cols as usize).enumerate() {
                let by = by0 + j as u32;
                for y in (by << Self::SHIFT)..((by + 1) << Self::SHIFT).min(rows) {
                    Self::summarise_row(grid, y, cols, row);
                }
            }
        });
    }

    /// Sizes the table for `grid`'s cells, every block without victims; `false` if the
    /// grid is empty (nothing more to do).
    fn cover(&mut self, grid: &Grid) -> bool {
        let (cols, rows) = grid.dims();
        let (origin, cell) = grid.cell_geometry();
        let side = 1 << Self::SHIFT;
        self.origin = origin;
        self.per_side = 1.0 / (cell * side as f32);
        self.cols = cols.div_ceil(side);
        self.rows = rows.div_ceil(side);
        self.teams.clear();
        self.teams
            .resize((self.cols * self.rows) as usize, Self::NONE);
        !grid.is_empty()
    }

    /// Folds row `y` of `grid`'s cells (of `cols` columns) into `row`, the blocks of its
    /// row of blocks.
    fn summarise_row(grid: &Grid, y: u32, cols: u32, row: &mut [u8]) {
        let side = 1 << Self::SHIFT;
        for (bx, one) in row.iter_mut().enumerate() {
            let bx = bx as u32;
            let cells = bx * side..((bx + 1) * side).min(cols);
            for it in grid.items_in(y, cells) {
                if it.tag & SpatialGrid::VICTIM == 0 {
                    continue;
                }
                let team = (it.tag & SpatialGrid::TEAM_MASK) as u8;
                *one = if team < Self::MIXED && (*one == Self::NONE || *one == team) {
                    team
                } else {
                    Self::MIXED
                };
            }
        }
    }

    /// Whether every victim in the cells that [`Grid::for_each_within`] searches for
    /// `(pos, radius)` in the grid last summarised is of `team` (also when there are none):
    /// then such a search finds no enemy of `team`. It looks at the blocks around those
    /// cells, with a margin against rounding, so it may say `false` when the search would
    /// find no enemy, never the other way round.
    ///
    /// Cost: two multiplications per axis and a byte or two, in a table that stays in cache
    /// (no division, unlike locating the cells themselves).
    #[inline]
    pub(crate) fn only(&self, pos: Vec2, radius: f32, team: u8) -> bool {
        if team >= Self::MIXED || self.teams.is_empty() {
            return self.teams.is_empty();
        }
        // A cell's block is `floor(cell / 4)`: the block of the same point at a quarter of
        // the resolution. Dividing by the cell side (as the grid does) and multiplying by
        // this reciprocal differ by a few float roundings, under a millionth of the value:
        // the slack covers that, and a thousandth of a block more.
        let slack = |v: Vec2| v.abs() * 1e-6 + 1e-3;
        let r = Vec2::splat(radius.max(0.0));
        let lo = (pos - r - self.origin) * self.per_side;
        let hi = (pos + r - self.origin) * self.per_side;
        let (lo, hi) = (lo - slack(lo), hi + slack(hi));
        // `as` saturates (negatives and NaN to 0); clamp to the table.
        let (bx0, by0) = (lo.x as u32, lo.y as u32);
        let bx1 = (hi.x as u32).min(self.cols - 1);
        let by1 = (hi.y as u32).min(self.rows - 1);
        let mut only = true;
        for by in by0.min(by1)..=by1 {
            let row = (by * self.cols) as usize;
            // No early exit: a predictable loop over one or two blocks.
            for &t in &self.teams[row + bx0.min(bx1) as usize..=row + bx1 as usize] {
                only &= t == team || t == Self::NONE;
            }
        }
        only
    }
}

/// Builds the world's [`SpatialGrid`] once per frame, for every neighbour system to read
/// in the next frame (see [`SpatialGrid`] for what it holds).
///
/// Cost: one pass over the colliders into a counting sort by cell, and one over the cells
/// noting which team each block of them holds (single-threaded; it runs beside the other
/// systems); no allocation in a steady state. It writes nothing but the resource, so where
/// it sits in the registration order does not matter.
///
/// ```
/// use glam::Vec2;
/// use runsync::prelude::*;
/// use runsync_systems::*;
/// let mut world = World::new();
/// runsync_systems::register(&mut world);
/// SpatialGrid::register(&mut world);
/// let body = (Velocity(Vec2::ZERO), Collider { radius: 1.0 });
/// let a = world.spawn((Position(Vec2::new(0.0, 0.0)), body.0, body.1));
/// let b = world.spawn((Position(Vec2::new(1.0, 0.0)), body.0, body.1));
/// let mut rt = Runtime::builder().build(world);
/// rt.add_system(BuildGrid::default());
/// rt.add_system(Separation::new(10.0));
/// rt.frame(); // no grid yet: Separation indexes the world itself
/// rt.frame(); // Separation reads the grid BuildGrid built in the first frame
/// assert!(rt.world().get::<Velocity>(a).unwrap().0.x < 0.0);
/// assert!(rt.world().get::<Velocity>(b).unwrap().0.x > 0.0);
/// ```
///
/// # Panics
/// If the world has no [`SpatialGrid`] resource: call [`SpatialGrid::register`] first.
pub struct BuildGrid {
    cell: f32,
    /// Cells on a fixed lattice ([`Grid::on_lattice`]).
    lattice: bool,
    /// Grids this system built; those nobody else holds are free to rebuild into.
    buffers: Vec<Arc<Built>>,
}

impl std::fmt::Debug for BuildGrid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BuildGrid")
            .field("cell", &self.cell)
            .field("lattice", &self.lattice)
            .field("buffers", &self.buffers.len())
            .finish()
    }
}

impl Default for BuildGrid {
    /// Cells of side 2 (the right size for radii up to 1).
    fn default() -> Self {
        BuildGrid::new(2.0)
    }
}

/// Rows per part below which [`BuildGrid`] gathers no more parts.
const GATHER_MIN_PART: usize = if cfg!(miri) { 8 } else { 2048 };

/// The entities [`BuildGrid`] looks at.
type Collidable = (
    &'static Position,
    &'static Collider,
    Option<&'static Team>,
    Option<&'static Velocity>,
    Option<&'static Health>,
    Option<&'static Projectile>,
);

impl BuildGrid {
    /// A builder whose grid has cells of side `cell` (about the largest query radius: the
    /// largest collider's diameter).
    ///
    /// # Panics
    /// If `cell` is not a positive finite number.
    pub fn new(cell: f32) -> BuildGrid {
        // Checked here rather than at the first frame.
        let _ = Grid::new(cell);
        BuildGrid {
            cell,
            lattice: false,
            buffers: Vec::new(),
        }
    }

    /// A builder whose grid keeps its cells of side `cell` on a fixed lattice
    /// ([`Grid::on_lattice`]): what a world split into shards needs, so that each
    /// shard's grid hands out the entities it shares with the whole world's in the same
    /// order.
    ///
    /// # Panics
    /// If `cell` is not a positive power of two.
    pub fn on_lattice(cell: f32) -> BuildGrid {
        let _ = Grid::on_lattice(cell);
        BuildGrid {
            lattice: true,
            ..BuildGrid::new(cell)
        }
    }

    /// The index of a buffer nobody else holds (a new one if there is none); drops free
    /// buffers beyond two (left by snapshots that were dropped).
    fn free_buffer(&mut self) -> usize {
        let free = |b: &Arc<Built>| Arc::strong_count(b) == 1;
        let mut spare = 0;
        self.buffers.retain(|b| {
            let keep = !free(b) || spare < 2;
            spare += usize::from(free(b));
            keep
        });
        match self.buffers.iter().position(free) {
            Some(i) => i,
            None => {
                self.buffers.push(Arc::new(Built {
                    grid: if self.lattice {
                        Grid::on_lattice(self.cell)
                    } else {
                        Grid::new(self.cell)
                    },
                    teams: TeamBlocks::default(),
                    frame: 0,
                }));
                self.buffers.len() - 1
            }
        }
    }
}

impl System for BuildGrid {
    fn run(&mut self, world: &World, out: &mut Output<'_>) {
        assert!(
            world.get_resource::<SpatialGrid>().is_some(),
            "BuildGrid: the world has no SpatialGrid resource; call \
             `SpatialGrid::register(&mut world)` before building the runtime"
        );
        let frame = world.resource::<Time>().frame;
        let i = self.free_buffer();
        let built = Arc::get_mut(&mut self.buffers[i]).expect("a free buffer is unshared");
        built.frame = frame;
        // The colliders in parts of consecutive rows (cut by count only, so the grid is
        // the same at every worker count), gathered, placed and sorted by cell in
        // parallel; then the teams per block, a band of block rows per job.
        let rows = world.query::<Collidable>().len();
        let per = rows.div_ceil(MAX_GRID_PARTS).max(GATHER_MIN_PART);
        let parts = rows.div_ceil(per);
        built
            .grid
            .rebuild_parallel(out.parallel(), parts, |k, part| {
                let rows = world.query::<Collidable>().rows(k * per..(k + 1) * per);
                // A table at a time: which of the optional components it has (so whether its
                // entities are bodies, victims or neither) is decided once, not per row.
                rows.for_each_chunk(|entities, (pos, collider, team, vel, health, shot)| {
                    let body = vel.is_some() && shot.is_none();
                    let victim = team.is_some() && health.is_some();
                    if !(body || victim) {
                        return;
                    }
                    let flags = if body { SpatialGrid::BODY } else { 0 }
                        | if victim { SpatialGrid::VICTIM } else { 0 };
                    let rows = entities.iter().zip(pos).zip(collider);
                    match team {
                        Some(team) => {
                            for (((&e, p), c), t) in rows.zip(team) {
                                part.push(e, p.0, c.radius, flags | u32::from(t.0));
                            }
                        }
                        None => {
                            for ((&e, p), c) in rows {
                                part.push(e, p.0, c.radius, flags);
                            }
                        }
                    }
                });
            });
        built.teams.rebuild_parallel(&built.grid, out.parallel());
        out.write_resource::<SpatialGrid>(SpatialGrid {
            built: Some(Arc::clone(&self.buffers[i])),
        });
    }

    fn name(&self) -> Cow<'static, str> {
        "BuildGrid".into()
    }
}

#[cfg(test)]
mod tests {
    use glam::Vec2;

    use super::*;
    use crate::test_util::{runtime, world};

    fn spatial_world() -> World {
        let mut w = world();
        SpatialGrid::register(&mut w);
        w
    }

    #[test]
    fn holds_bodies_and_victims_with_their_flags_and_is_current_one_frame_later() {
        let mut w = spatial_world();
        let c = Collider { radius: 0.5 };
        let body = w.spawn((Position(Vec2::ZERO), Velocity(Vec2::ZERO), c));
        let victim = w.spawn((Position(Vec2::ONE), c, Team(3), Health::full(5)));
        let _shot = w.spawn((
            Position(Vec2::ONE),
            Velocity(Vec2::ONE),
            c,
            Team(2),
            Projectile,
        ));
        let _no_collider = w.spawn((Position(Vec2::ONE), Velocity(Vec2::ONE)));
        let mut rt = runtime(w);
        rt.add_system(BuildGrid::default());
        assert!(SpatialGrid::current(rt.world()).is_none(), "not built yet");
        rt.frame();
        // Between frames `Time::frame` is 1: the grid built in the first frame (which
        // read `Time::frame` 0) is current.
        let grid = SpatialGrid::current(rt.world()).expect("built last frame");
        let mut items = Vec::new();
        grid.for_each_near(Vec2::ZERO, 10.0, |it| items.push((it.entity, it.tag)));
        items.sort_by_key(|(e, _)| e.to_bits());
        assert_eq!(
            items,
            [(body, SpatialGrid::BODY), (victim, 3 | SpatialGrid::VICTIM)]
        );
        rt.world_mut().resource_mut::<Time>().frame += 1;
        assert!(SpatialGrid::current(rt.world()).is_none(), "two frames old");
    }

    #[test]
    fn rebuilds_only_into_buffers_nobody_else_holds() {
        let mut b = BuildGrid::default();
        let first = b.free_buffer();
        // The resource (or a snapshot) holds the grid just built.
        let held = Arc::clone(&b.buffers[first]);
        let second = b.free_buffer();
        assert_ne!(first, second);
        let held_too = Arc::clone(&b.buffers[second]);
        drop(held);
        assert_eq!(
            b.free_buffer(),
            first,
            "freed again: reused, not reallocated"
        );
        assert_eq!(b.buffers.len(), 2);
        // Many grids freed at once (snapshots dropped): at most two free ones are kept.
        let held: Vec<_> = (0..5)
            .map(|_| {
                let i = b.free_buffer();
                Arc::clone(&b.buffers[i])
            })
            .collect();
        assert!(b.buffers.len() >= 6);
        drop((held, held_too));
        b.free_buffer();
        assert_eq!(b.buffers.len(), 2);
    }

    #[test]
    fn a_snapshot_keeps_its_grid_while_later_frames_build_new_ones() {
        let mut w = spatial_world();
        w.spawn((
            Position(Vec2::ZERO),
            Velocity(Vec2::X),
            Collider { radius: 0.5 },
        ));
        let mut rt = runtime(w);
        rt.add_system(BuildGrid::default());
        rt.add_system(crate::motion::Integrate);
        rt.frame();
        let saved = rt.snapshot().unwrap();
        let at = |rt: &Runtime| {
            let g = rt.world().resource::<SpatialGrid>();
            let mut pos = Vec::new();
            g.grid()
                .unwrap()
                .for_each_near(Vec2::ZERO, 100.0, |it| pos.push(it.pos));
            (g.frame(), pos)
        };
        let before = at(&rt);
        assert_eq!(before, (Some(0), vec![Vec2::ZERO]));
        for _ in 0..3 {
            rt.frame();
        }
        assert_eq!(at(&rt).0, Some(3));
        rt.restore(&saved);
        assert_eq!(at(&rt), before);
    }

    /// The grid a runtime's world holds, as `Debug` text (every field, scratch included).
    fn grid_text(rt: &Runtime) -> String {
        format!("{:?}", rt.world().resource::<SpatialGrid>().built)
    }

    #[test]
    fn a_saved_grid_loads_bit_for_bit_and_the_next_frames_match() {
        let mut w = spatial_world();
        let c = Collider { radius: 0.5 };
        for i in 0..40u8 {
            let p = Vec2::new(f32::from(i % 7) * 0.9, f32::from(i / 7) * 1.1);
            let v = Vec2::new(f32::from(i % 3) - 1.0, -0.0);
            w.spawn((Position(p), Velocity(v), c, Team(i % 2), Health::full(9)));
        }
        let game = |w: World| {
            let mut rt = runtime(w);
            rt.add_system(BuildGrid::default());
            rt.add_system(crate::separation::Separation::new(5.0));
            rt.add_system(crate::motion::Integrate);
            rt
        };
        let mut rt = game(w);
        for _ in 0..3 {
            rt.frame();
        }
        let mut file = Vec::new();
        rt.save(&mut file).unwrap();
        let mut loaded = game(spatial_world());
        loaded.load(&mut file.as_slice()).unwrap();
        assert_eq!(grid_text(&loaded), grid_text(&rt));
        assert!(SpatialGrid::current(loaded.world()).is_some());
        for _ in 0..5 {
            rt.frame();
            loaded.frame();
            assert_eq!(loaded.world().checksum(), rt.world().checksum());
        }
        // Without its grid, the world's next frame would differ: the grid is state.
        let mut without = game(spatial_world());
        without.load(&mut file.as_slice()).unwrap();
        without.world_mut().insert_resource(SpatialGrid::default());
        let mut with = game(spatial_world());
        with.load(&mut file.as_slice()).unwrap();
        with.frame();
        without.frame();
        assert_ne!(without.world().checksum(), with.world().checksum());
    }

    #[test]
    fn a_saved_grid_with_a_bad_cell_side_does_not_load() {
        let item = GridItem {
            entity: Entity::from_bits(1 << 32).unwrap(),
            pos: Vec2::ONE,
            radius: 0.5,
            tag: 0,
        };
        // Negative: a lattice grid's side, which must be a power of two.
        for cell in [0.0, -0.0, -3.0, f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
            let bytes = postcard::to_allocvec(&Some(SavedGrid {
                frame: 0,
                cell,
                items: &[item],
            }))
            .unwrap();
            let err = postcard::from_bytes::<SpatialGrid>(&bytes).unwrap_err();
            assert!(
                err.to_string().contains("Serde Deserialization Error"),
                "{err}"
            );
        }
        // A lattice grid comes back on its lattice.
        let lattice = postcard::to_allocvec(&Some(SavedGrid {
            frame: 3,
            cell: -2.0,
            items: &[item],
        }))
        .unwrap();
        let loaded = postcard::from_bytes::<SpatialGrid>(&lattice).unwrap();
        let grid = loaded.grid().unwrap();
        assert!(grid.is_on_lattice() && grid.cell() == 2.0);
        let again = postcard::to_allocvec(&loaded).unwrap();
        assert_eq!(again, lattice);
        let good = Some(SavedGrid {
            frame: 7,
            cell: 2.0,
            items: &[item],
        });
        let grid: SpatialGrid =
            postcard::from_bytes(&postcard::to_allocvec(&good).unwrap()).unwrap();
        assert_eq!(
            (grid.frame(), grid.grid().map(Grid::len)),
            (Some(7), Some(1))
        );
    }

    /// What loading checks before it builds a grid: the cell side, the positions, a
    /// lattice's cells against the bound (2^20, or 16 per item), with what is wrong.
    #[test]
    fn a_loaded_grid_is_checked_before_it_is_built() {
        let item = |x: f32, y: f32| GridItem {
            entity: Entity::from_bits(1 << 32).unwrap(),
            pos: Vec2::new(x, y),
            radius: 0.5,
            tag: 0,
        };
        let check = |cell: f32, items: Vec<GridItem>| {
            (LoadedGrid {
                frame: 0,
                cell,
                items,
            })
            .check()
            .map(|g| (g.is_on_lattice(), g.cell()))
        };
        let two = |x: f32, y: f32| vec![item(0.0, 0.0), item(x, y)];
        assert_eq!(check(1.5, two(1e30, -1e30)), Ok((false, 1.5)));
        assert_eq!(check(-2.0, two(2047.0, 2047.0)), Ok((true, 2.0)));
        assert_eq!(
            check(-2.0, two(2048.0, 2047.0)).unwrap_err(),
            "a lattice grid of side 2 over [0, 0]..[2048, 2047] would need 1025 x 1024 \
             cells; a loaded one may have at most 1048576 (2^20, or 16 per item)"
        );
        // More items, more cells: 2^17 items may span 2^21 cells.
        let mut many = vec![item(0.0, 0.0); 1 << 17];
        many.push(item(4095.0, 2047.0));
        assert_eq!(check(-2.0, many.clone()), Ok((true, 2.0)));
        many.push(item(4096.0, 2047.0));
        assert!(check(-2.0, many).unwrap_err().contains("at most 2097184"));
        assert_eq!(check(-2.0, Vec::new()), Ok((true, 2.0)));
        assert_eq!(
            check(2.0, vec![item(1.0, 1.0), item(f32::NAN, 0.0)]).unwrap_err(),
            "item 1 of 2 has a position that is not finite ([NaN, 0])"
        );
        assert_eq!(
            check(-0.0, two(1.0, 1.0)).unwrap_err(),
            "cell side -0 is not a positive finite number"
        );
        assert_eq!(
            check(-3.0, two(1.0, 1.0)).unwrap_err(),
            "cell side -3 (negated: a lattice grid's) is not a positive power of two"
        );
        assert!(check(-(2f32.powi(-126)), two(1.0, 1.0)).is_err());
        assert_eq!(
            check(-(2f32.powi(127)), two(1e38, 1e38)),
            Ok((true, 2f32.powi(127)))
        );
    }

    #[test]
    fn team_blocks_say_whether_only_one_team_is_around() {
        let es: Vec<Entity> = (0..5)
            .map(|i| Entity::from_bits((1 << 32) | i).unwrap())
            .collect();
        let v = SpatialGrid::VICTIM;
        let mut g = Grid::new(1.0);
        g.rebuild([
            (es[0], Vec2::new(0.5, 0.5), 0.5, 1 | v),
            (es[1], Vec2::new(0.6, 0.5), 0.5, 1 | v),
            // A body that is no victim does not count, whatever its team.
            (es[2], Vec2::new(5.5, 0.5), 0.5, 2 | SpatialGrid::BODY),
            (es[3], Vec2::new(9.5, 0.5), 0.5, 2 | v),
            (es[4], Vec2::new(9.5, 0.6), 0.5, 3 | v),
        ]);
        let mut t = TeamBlocks::default();
        t.rebuild(&g);
        assert!(t.only(Vec2::new(0.5, 0.5), 0.4, 1));
        assert!(!t.only(Vec2::new(0.5, 0.5), 0.4, 2));
        assert!(t.only(Vec2::new(5.5, 0.5), 0.4, 7), "no victims");
        assert!(
            !t.only(Vec2::new(9.5, 0.5), 0.4, 2),
            "two teams in one block"
        );
        assert!(
            !t.only(Vec2::new(4.0, 0.5), 6.0, 1),
            "a wide search sees them all"
        );
        // Teams 254 and 255 do not fit beside the markers: always searched.
        g.rebuild([(es[0], Vec2::ZERO, 0.5, 255 | v)]);
        t.rebuild(&g);
        assert!(!t.only(Vec2::ZERO, 1.0, 0));
        assert!(!t.only(Vec2::ZERO, 1.0, 255));
    }

    #[test]
    #[should_panic(expected = "SpatialGrid::register")]
    fn building_without_the_resource_says_what_to_call() {
        let mut rt = runtime(world());
        rt.add_system(BuildGrid::default());
        rt.frame();
    }
}
