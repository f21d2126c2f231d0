//! A plain port of `runsync_systems`' spatial grid (`Grid`, box-grid path only, and the
//! `TeamBlocks` summary beside it) to bevy's [`Entity`]: the same cell side, the same
//! growth rule, the same counting sort, the same queries and their visit order.
//!
//! The runsync originals are in `systems/src/grid.rs` and `systems/src/spatial.rs`; only
//! the lattice variant (for sharded worlds, which the arena does not use) is left out.
//!
//! Both builds are ported: the serial one ([`Grid::rebuild`], [`TeamBlocks::rebuild`]) and
//! the parallel one the arena's BuildGrid uses ([`Grid::rebuild_parallel`],
//! [`TeamBlocks::rebuild_parallel`]): parts gathered in parallel, each part's items copied
//! into place with their cells and grouped by band of rows, a counting sort per band, then
//! the team blocks a band of block rows per job. The same parts, bands and jobs as
//! runsync's, run on bevy_tasks' pool ([`Jobs`]) instead of runsync's workers.

use std::ops::Range;

use bevy_ecs::entity::Entity;
use bevy_tasks::TaskPool;
use runsync_systems::glam::{IVec4, Vec2, Vec4};

use super::timing::{SystemTimes, Timed};

/// One entry of a [`Grid`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GridItem {
    /// The entity.
    pub entity: Entity,
    /// Its position when the grid was built.
    pub pos: Vec2,
    /// Its radius.
    pub radius: f32,
    /// Team in the low 8 bits, [`BODY`] and [`VICTIM`] flags.
    pub tag: u32,
}

/// Tag flag: the item is a body for Separation (it has a velocity, is no projectile).
pub const BODY: u32 = 1 << 8;
/// Tag flag: the item is a victim for Contact (it has a team and health).
pub const VICTIM: u32 = 1 << 9;
/// The bits of a tag that hold the team.
pub const TEAM_MASK: u32 = 0xff;

/// Items in reach [`Grid::for_each_within`] notes before handing them out.
const WITHIN_BUFFER: usize = 16;

/// A uniform grid over the bounding box of its items (runsync's `Grid::new`): a counting
/// sort by cell, rebuilt into reused buffers.
#[derive(Clone, Debug)]
pub struct Grid {
    cell: f32,
    cell_used: f32,
    per_cell: f32,
    origin: Vec2,
    cols: u32,
    rows: u32,
    far: Vec2,
    last: Vec2,
    max_radius: f32,
    starts: Vec<u32>,
    items: Vec<GridItem>,
    input: Vec<GridItem>,
    cells: Vec<u32>,
    /// The parts of a [`rebuild_parallel`](Self::rebuild_parallel), kept for their
    /// buffers.
    parts: PartBuffers,
}

/// Two grids are equal if their last rebuilds left the same grid: every field (floats by
/// their bits), the items in cell order and as inserted, the cells, but not the parts kept
/// for their buffers.
impl PartialEq for Grid {
    fn eq(&self, other: &Grid) -> bool {
        let floats = |g: &Grid| {
            [
                g.cell,
                g.cell_used,
                g.per_cell,
                g.origin.x,
                g.origin.y,
                g.far.x,
                g.far.y,
                g.last.x,
                g.last.y,
                g.max_radius,
            ]
            .map(f32::to_bits)
        };
        let items = |a: &[GridItem], b: &[GridItem]| {
            a.len() == b.len()
                && a.iter().zip(b).all(|(a, b)| {
                    (a.entity, a.pos.x.to_bits(), a.pos.y.to_bits())
                        == (b.entity, b.pos.x.to_bits(), b.pos.y.to_bits())
                        && (a.radius.to_bits(), a.tag) == (b.radius.to_bits(), b.tag)
                })
        };
        floats(self) == floats(other)
            && (self.cols, self.rows) == (other.cols, other.rows)
            && self.starts == other.starts
            && items(&self.items, &other.items)
            && items(&self.input, &other.input)
            && self.cells == other.cells
    }
}

/// [`GridPart`]s kept for their buffers: scratch, not the grid (its `Debug` shows nothing
/// of them).
#[derive(Clone, Default)]
struct PartBuffers(Vec<GridPart>);

impl std::fmt::Debug for PartBuffers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("..")
    }
}

/// The most parts a [`Grid::rebuild_parallel`] takes (runsync's `MAX_GRID_PARTS`).
pub const MAX_GRID_PARTS: usize = 64;

/// The bands of rows of cells a [`Grid::rebuild_parallel`] sorts in (fewer if the grid has
/// fewer rows): each is a job (runsync's `MAX_BANDS`).
const MAX_BANDS: usize = 32;

/// The bands of rows of blocks [`TeamBlocks::rebuild_parallel`] summarises in, a job each
/// (fewer if there are fewer rows of blocks), as runsync's.
const TEAM_BANDS: usize = 32;

/// Where a parallel grid build runs its jobs: a bevy_tasks [`TaskPool`] (the arena's
/// `ComputeTaskPool`), one task per job in a [`TaskPool::scope`]; on a pool of one
/// thread, in order on the calling thread (as bevy's own `par_iter` does then, and
/// runsync's pool on one worker). Jobs of a system's build can be timed as its work
/// ([`SystemTimes`]), as its `par_iter` batches are.
#[derive(Clone, Copy)]
pub struct Jobs<'a> {
    pool: &'a TaskPool,
    timed: Option<&'a Timed<'a>>,
}

impl std::fmt::Debug for Jobs<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Jobs")
            .field("threads", &self.threads())
            .finish()
    }
}

impl<'a> Jobs<'a> {
    /// Jobs on `pool` (`&ComputeTaskPool::get()` in a bevy system).
    pub fn new(pool: &'a TaskPool) -> Jobs<'a> {
        Jobs { pool, timed: None }
    }

    /// The same jobs, each timed as a chunk of the system `timed` times (and the loops'
    /// wall time left out of its serial work).
    pub(crate) fn timed(self, timed: &'a Timed<'a>) -> Jobs<'a> {
        Jobs {
            timed: Some(timed),
            ..self
        }
    }

    /// The threads of the pool.
    pub fn threads(&self) -> usize {
        self.pool.thread_num()
    }

    /// Runs `f(k, &mut items[k])` for every item, a task each.
    fn for_each_mut<T: Send>(&self, items: &mut [T], f: impl Fn(usize, &mut T) + Sync) {
        let chunk: Option<(&SystemTimes, usize)> = self.timed.map(Timed::chunk_of);
        let job = |k: usize, item: &mut T| {
            let _chunk = chunk.map(|(times, id)| times.chunk(id));
            f(k, item);
        };
        let mut run = || {
            if self.threads() <= 1 {
                items.iter_mut().enumerate().for_each(|(k, it)| job(k, it));
                return;
            }
            let job = &job;
            self.pool.scope(|s| {
                for (k, item) in items.iter_mut().enumerate() {
                    s.spawn(async move { job(k, item) });
                }
            });
        };
        match self.timed {
            Some(timed) => timed.parallel(run),
            None => run(),
        }
    }
}

/// `input` and `cells` cut into consecutive stretches of `lens` (at most
/// [`MAX_GRID_PARTS`] of them, adding up to at most their length), paired.
#[allow(clippy::type_complexity)]
fn split_by<'a>(
    input: &'a mut [GridItem],
    cells: &'a mut [u32],
    lens: impl Iterator<Item = usize>,
) -> [(&'a mut [GridItem], &'a mut [u32]); MAX_GRID_PARTS] {
    let mut jobs: [(&mut [GridItem], &mut [u32]); MAX_GRID_PARTS] =
        std::array::from_fn(|_| (&mut [][..], &mut [][..]));
    let (mut items, mut cells) = (input, cells);
    for (job, len) in jobs.iter_mut().zip(lens) {
        let (a, rest_items) = std::mem::take(&mut items).split_at_mut(len);
        let (b, rest_cells) = std::mem::take(&mut cells).split_at_mut(len);
        *job = (a, b);
        (items, cells) = (rest_items, rest_cells);
    }
    jobs
}

/// One part of a [`Grid::rebuild_parallel`]: the items one job gathered, in order, and
/// their bounds (runsync's `GridPart`). Filled through [`push`](Self::push).
#[derive(Clone, Debug, Default)]
pub struct GridPart {
    items: Vec<GridItem>,
    lo: Vec2,
    hi: Vec2,
    max_radius: f32,
    /// The items grouped by band of rows of cells (in their order within a band), with
    /// their cells; band `b` is `bands[b]..bands[b + 1]`.
    grouped: Vec<GridItem>,
    grouped_cells: Vec<u32>,
    bands: Vec<u32>,
}

impl GridPart {
    /// Adds an item, as [`Grid::rebuild`] takes one: skipped if its position is not
    /// finite.
    #[inline]
    pub fn push(&mut self, entity: Entity, pos: Vec2, radius: f32, tag: u32) {
        if !pos.is_finite() {
            return;
        }
        self.lo = self.lo.min(pos);
        self.hi = self.hi.max(pos);
        self.max_radius = self.max_radius.max(radius);
        self.items.push(GridItem {
            entity,
            pos,
            radius,
            tag,
        });
    }

    /// Groups the items (whose cells are `cells`) by band of `band_cells` cells, stably.
    fn group_by_band(&mut self, cells: &[u32], band_cells: usize, bands: usize) {
        // `c / band_cells` by multiplication (Lemire's: exact for every `u32`).
        let magic = u128::from(u64::MAX) / band_cells as u128 + 1;
        let band_of = |c: u32| ((magic * u128::from(c)) >> 64) as usize;
        self.bands.clear();
        self.bands.resize(bands + 1, 0);
        for &c in cells {
            self.bands[band_of(c) + 1] += 1;
        }
        for b in 0..bands {
            self.bands[b + 1] += self.bands[b];
        }
        let mut at = [0u32; MAX_BANDS + 1];
        at[..=bands].copy_from_slice(&self.bands);
        self.grouped.clear();
        self.grouped_cells.clear();
        if let Some(&first) = self.items.first() {
            self.grouped.resize(self.items.len(), first);
            self.grouped_cells.resize(self.items.len(), 0);
        }
        for (it, &c) in self.items.iter().zip(cells) {
            let next = &mut at[band_of(c)];
            self.grouped[*next as usize] = *it;
            self.grouped_cells[*next as usize] = c;
            *next += 1;
        }
    }

    /// The items of band `b` (after [`group_by_band`](Self::group_by_band)) and their
    /// cells.
    fn band(&self, b: usize) -> (&[GridItem], &[u32]) {
        let r = self.bands[b] as usize..self.bands[b + 1] as usize;
        (&self.grouped[r.clone()], &self.grouped_cells[r])
    }

    fn clear(&mut self) {
        self.items.clear();
        (self.lo, self.hi) = (Vec2::splat(f32::MAX), Vec2::splat(f32::MIN));
        self.max_radius = 0.0;
    }
}

impl Grid {
    /// An empty grid with square cells of side `cell`.
    ///
    /// # Panics
    /// If `cell` is not a positive finite number.
    pub fn new(cell: f32) -> Grid {
        assert!(
            cell.is_finite() && cell > 0.0,
            "Grid cell size must be positive, got {cell}"
        );
        Grid {
            cell,
            cell_used: cell,
            per_cell: 0.0,
            origin: Vec2::ZERO,
            cols: 0,
            rows: 0,
            far: Vec2::ZERO,
            last: Vec2::ZERO,
            max_radius: 0.0,
            starts: Vec::new(),
            items: Vec::new(),
            input: Vec::new(),
            cells: Vec::new(),
            parts: PartBuffers::default(),
        }
    }

    /// Number of items.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether the grid holds no item.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// The largest radius among the items (0 when empty).
    pub fn max_radius(&self) -> f32 {
        self.max_radius
    }

    /// Replaces the contents with `(entity, position, radius, tag)` items; items with a
    /// non-finite position are skipped. One pass over the input, a prefix sum over the
    /// cells, one scatter.
    pub fn rebuild(&mut self, items: impl IntoIterator<Item = (Entity, Vec2, f32, u32)>) {
        self.input.clear();
        let (mut lo, mut hi) = (Vec2::splat(f32::MAX), Vec2::splat(f32::MIN));
        let mut max_radius = 0.0f32;
        let finite = items.into_iter().filter(|(_, pos, _, _)| pos.is_finite());
        self.input.extend(finite.map(|(entity, pos, radius, tag)| {
            lo = lo.min(pos);
            hi = hi.max(pos);
            max_radius = max_radius.max(radius);
            GridItem {
                entity,
                pos,
                radius,
                tag,
            }
        }));
        let n = self.input.len();
        self.place(lo, hi, max_radius, n);
        let ncells = (self.cols * self.rows) as usize;
        self.fill(ncells, n);
    }

    /// Lays the cells over `n` items within `lo..=hi` (ignored when `n` is 0), of radii
    /// up to `max_radius`.
    fn place(&mut self, mut lo: Vec2, mut hi: Vec2, max_radius: f32, n: usize) {
        if n == 0 {
            (lo, hi) = (Vec2::ZERO, Vec2::ZERO);
        }
        self.max_radius = max_radius;
        self.box_over(lo, hi, n);
        self.far = self.origin + Vec2::new(self.cols as f32, self.rows as f32) * self.cell_used;
        self.last = Vec2::new(
            self.cols.saturating_sub(1) as f32,
            self.rows.saturating_sub(1) as f32,
        );
    }

    /// [`rebuild`](Self::rebuild) in parallel on `jobs` (runsync's
    /// `Grid::rebuild_parallel`, step for step): job `k` of `parts` (at most
    /// [`MAX_GRID_PARTS`]) pushes the `k`-th part of the items, in order, into the
    /// [`GridPart`] it is given (emptied), and the grid is the one `rebuild` makes from
    /// the parts' items one after the other, at every thread count (the sort by cell is
    /// stable, so its result does not depend on how it is split).
    ///
    /// The parts gather their items; then each part copies them into place, computes
    /// their cells and groups them by band of rows of cells; then each band (at most 32,
    /// a fixed number: the same work at every thread count) sorts its items by cell. On
    /// one thread the grouping is skipped and `rebuild`'s own sort runs instead.
    ///
    /// # Panics
    /// If `parts` is more than [`MAX_GRID_PARTS`].
    pub fn rebuild_parallel(
        &mut self,
        jobs: Jobs<'_>,
        parts: usize,
        gather: impl Fn(usize, &mut GridPart) + Sync,
    ) {
        assert!(
            parts <= MAX_GRID_PARTS,
            "Grid::rebuild_parallel takes at most {MAX_GRID_PARTS} parts, got {parts}"
        );
        self.items.clear();
        self.input.clear();
        self.cells.clear();
        self.starts.clear();
        self.starts.push(0);
        (self.cols, self.rows) = (0, 0);
        if self.parts.0.len() < parts {
            self.parts.0.resize_with(parts, GridPart::default);
        }
        let mut gathered = std::mem::take(&mut self.parts.0);
        jobs.for_each_mut(&mut gathered[..parts], |k, part| {
            part.clear();
            gather(k, part);
        });
        let (mut lo, mut hi) = (Vec2::splat(f32::MAX), Vec2::splat(f32::MIN));
        let mut max_radius = 0.0f32;
        let mut n = 0;
        for p in &gathered[..parts] {
            if !p.items.is_empty() {
                lo = lo.min(p.lo);
                hi = hi.max(p.hi);
                max_radius = max_radius.max(p.max_radius);
                n += p.items.len();
            }
        }
        self.place(lo, hi, max_radius, n);
        let ncells = (self.cols * self.rows) as usize;
        // Bands of whole rows of cells, a fixed number of them.
        let (cols, rows) = (self.cols as usize, self.rows as usize);
        let band_cells = rows.div_ceil(MAX_BANDS.min(rows)) * cols;
        let bands = ncells.div_ceil(band_cells);
        // Each part copies its items into place (in insertion order), computes their
        // cells, and groups them by band, stably.
        let mut input = std::mem::take(&mut self.input);
        let mut cells = std::mem::take(&mut self.cells);
        if let Some(first) = gathered[..parts].iter().find_map(|p| p.items.first()) {
            input.resize(n, *first);
            cells.resize(n, 0);
        }
        let serial = jobs.threads() <= 1;
        {
            let grid = &*self;
            let lens: [usize; MAX_GRID_PARTS] =
                std::array::from_fn(|k| gathered.get(k).map_or(0, |p| p.items.len()));
            let mut slices = split_by(&mut input, &mut cells, lens[..parts].iter().copied());
            #[allow(clippy::type_complexity)]
            let mut placed: [(Option<&mut GridPart>, &mut [GridItem], &mut [u32]);
                MAX_GRID_PARTS] = std::array::from_fn(|_| (None, &mut [][..], &mut [][..]));
            for ((job, part), (items, cells)) in placed
                .iter_mut()
                .zip(gathered.iter_mut())
                .zip(slices.iter_mut())
            {
                *job = (Some(part), std::mem::take(items), std::mem::take(cells));
            }
            jobs.for_each_mut(&mut placed[..parts], |_, (part, items, cells)| {
                let part = part.as_mut().expect("one part per job");
                items.copy_from_slice(&part.items);
                grid.cells_into(items, cells);
                if !serial {
                    part.group_by_band(cells, band_cells, bands);
                }
            });
        }
        self.input = input;
        self.cells = cells;
        self.parts.0 = gathered;
        if serial {
            self.sort_by_cell(ncells, n);
        } else {
            self.sort_in_bands(jobs, ncells, n, band_cells, bands, parts);
        }
    }

    /// `fill`'s counting sort, a band of rows of cells per job: band `b` takes, part by
    /// part, the items each part grouped into it (so in input order), counts them per
    /// cell, places them after the bands before it, and scatters them into its own
    /// stretch of `items`. The result is `fill`'s: a stable sort by cell is unique.
    fn sort_in_bands(
        &mut self,
        jobs: Jobs<'_>,
        ncells: usize,
        n: usize,
        band_cells: usize,
        bands: usize,
        parts: usize,
    ) {
        self.starts.clear();
        self.starts.resize(ncells + 1, 0);
        self.items.clear();
        let Some(&first) = self.input.first() else {
            return;
        };
        self.items.resize(n, first);
        let grouped = &self.parts.0[..parts];
        #[allow(clippy::type_complexity)]
        let mut sorts: [(&mut [u32], &mut [GridItem], usize); MAX_BANDS] =
            std::array::from_fn(|_| (&mut [][..], &mut [][..], 0));
        let mut rest = &mut self.items[..];
        let mut base = 0;
        for (b, (job, starts)) in sorts
            .iter_mut()
            .zip(self.starts[..ncells].chunks_mut(band_cells))
            .enumerate()
        {
            let total: usize = grouped.iter().map(|p| p.band(b).0.len()).sum();
            let (mine, after) = std::mem::take(&mut rest).split_at_mut(total);
            *job = (starts, mine, base);
            base += total;
            rest = after;
        }
        jobs.for_each_mut(&mut sorts[..bands], |b, (starts, items, base)| {
            let first = (b * band_cells) as u32;
            for p in grouped {
                for &c in p.band(b).1 {
                    starts[(c - first) as usize] += 1;
                }
            }
            let base = *base as u32;
            let mut at = base;
            for s in starts.iter_mut() {
                let k = *s;
                *s = at;
                at += k;
            }
            for p in grouped {
                let (its, cs) = p.band(b);
                for (it, &c) in its.iter().zip(cs) {
                    let next = &mut starts[(c - first) as usize];
                    items[(*next - base) as usize] = *it;
                    *next += 1;
                }
            }
            // The cursors hold each cell's end; shift back to starts.
            for c in (1..starts.len()).rev() {
                starts[c] = starts[c - 1];
            }
            if let Some(s) = starts.first_mut() {
                *s = base;
            }
        });
        self.starts[ncells] = n as u32;
    }

    /// The cells of `items`, into `cells` (as long), as `fill` computes them.
    fn cells_into(&self, items: &[GridItem], cells: &mut [u32]) {
        let pairs = items.chunks_exact(2);
        let rest = pairs.remainder();
        let mut out = cells.chunks_exact_mut(2);
        for (p, c) in pairs.zip(&mut out) {
            let b = self.box_cells([p[0].pos, p[1].pos]);
            c[0] = b.y as u32 * self.cols + b.x as u32;
            c[1] = b.w as u32 * self.cols + b.z as u32;
        }
        if let (Some(it), Some(c)) = (rest.first(), out.into_remainder().first_mut()) {
            *c = self.cell_of(it.pos);
        }
    }

    /// Cells over the items' bounding box, grown until there are at most ~2 per item.
    fn box_over(&mut self, lo: Vec2, hi: Vec2, n: usize) {
        let mut cell = self.cell;
        let max_cells = (2 * n).max(1) as f64;
        let extent = hi - lo;
        loop {
            let cols = f64::from((extent.x / cell) as u32) + 1.0;
            let rows = f64::from((extent.y / cell) as u32) + 1.0;
            if cols * rows <= max_cells {
                self.cols = cols as u32;
                self.rows = rows as u32;
                break;
            }
            cell *= 2.0;
        }
        self.origin = lo;
        self.cell_used = cell;
        let pow2 = cell.is_normal() && cell.to_bits() & 0x007f_ffff == 0;
        self.per_cell = if pow2 && cell.recip().is_normal() {
            cell.recip()
        } else {
            0.0
        };
    }

    /// Sorts the input into `ncells` cells (a counting sort: stable).
    fn fill(&mut self, ncells: usize, n: usize) {
        self.starts.clear();
        self.starts.resize(ncells + 1, 0);
        let mut cells = std::mem::take(&mut self.cells);
        cells.clear();
        let pairs = self.input.chunks_exact(2);
        let rest = pairs.remainder();
        for p in pairs {
            let c = self.box_cells([p[0].pos, p[1].pos]);
            cells.push(c.y as u32 * self.cols + c.x as u32);
            cells.push(c.w as u32 * self.cols + c.z as u32);
        }
        cells.extend(rest.iter().map(|it| self.cell_of(it.pos)));
        self.cells = cells;
        self.sort_by_cell(ncells, n);
    }

    /// The counting sort of `input` by `cells` into `items` and `starts` (stable).
    fn sort_by_cell(&mut self, ncells: usize, n: usize) {
        self.starts.clear();
        self.starts.resize(ncells + 1, 0);
        for &c in &self.cells {
            self.starts[c as usize + 1] += 1;
        }
        for c in 0..ncells {
            self.starts[c + 1] += self.starts[c];
        }
        if let Some(&first) = self.input.first() {
            self.items.resize(n, first);
        }
        self.items.truncate(n);
        for (it, &c) in self.input.iter().zip(&self.cells) {
            let next = &mut self.starts[c as usize];
            self.items[*next as usize] = *it;
            *next += 1;
        }
        for c in (1..=ncells).rev() {
            self.starts[c] = self.starts[c - 1];
        }
        self.starts[0] = 0;
    }

    #[inline]
    fn cell_of(&self, p: Vec2) -> u32 {
        let d = p - self.origin;
        let rel = if self.per_cell != 0.0 {
            d * self.per_cell
        } else {
            d / self.cell_used
        };
        let x = (rel.x as u32).min(self.cols.saturating_sub(1));
        let y = (rel.y as u32).min(self.rows.saturating_sub(1));
        y * self.cols + x
    }

    /// The cells of two points at once, as `(x0, y0, x1, y1)`, clamped as floats.
    #[inline]
    fn box_cells(&self, [a, b]: [Vec2; 2]) -> IVec4 {
        let (o, last) = (self.origin, self.last);
        let d = Vec4::new(a.x - o.x, a.y - o.y, b.x - o.x, b.y - o.y);
        let rel = if self.per_cell != 0.0 {
            d * self.per_cell
        } else {
            d / self.cell_used
        };
        rel.max(Vec4::ZERO)
            .min(Vec4::new(last.x, last.y, last.x, last.y))
            .as_ivec4()
    }

    /// The cells overlapping the square of half-side `radius` around `pos`.
    #[inline]
    fn cell_box(&self, pos: Vec2, radius: f32) -> Option<(u32, u32, u32, u32)> {
        if self.items.is_empty() || !pos.is_finite() {
            return None;
        }
        let r = Vec2::splat(radius.max(0.0));
        let (lo, hi) = (pos - r, pos + r);
        let max = self.far;
        if hi.x < self.origin.x || hi.y < self.origin.y || lo.x > max.x || lo.y > max.y {
            return None;
        }
        let c = self.box_cells([lo, hi]);
        Some((c.x as u32, c.y as u32, c.z as u32, c.w as u32))
    }

    /// Calls `f` with the item ranges of the cells around `pos`, one per row of cells.
    #[inline]
    fn for_each_row(&self, pos: Vec2, radius: f32, mut f: impl FnMut(Range<usize>)) {
        let Some((x0, y0, x1, y1)) = self.cell_box(pos, radius) else {
            return;
        };
        for y in y0..=y1 {
            let row = (y * self.cols) as usize;
            f(
                self.starts[row + x0 as usize] as usize
                    ..self.starts[row + x1 as usize + 1] as usize,
            );
        }
    }

    /// The items of cells `xs` of row `y`.
    fn items_in(&self, y: u32, xs: Range<u32>) -> &[GridItem] {
        let row = (y * self.cols) as usize;
        &self.items[self.starts[row + xs.start as usize] as usize
            ..self.starts[row + xs.end as usize] as usize]
    }

    /// Calls `f` for every item strictly closer than `radius` to `pos`, in grid order (a
    /// branch-free distance pass per row of cells, as runsync's).
    #[inline]
    pub fn for_each_within(&self, pos: Vec2, radius: f32, mut f: impl FnMut(&GridItem)) {
        let r = radius.max(0.0);
        let r2 = r * r;
        let mut hits = [0u32; WITHIN_BUFFER];
        let mut n = 0;
        let items = &self.items[..];
        self.for_each_row(pos, radius, |row| {
            let start = row.start;
            for (i, it) in items[row].iter().enumerate() {
                hits[n & (WITHIN_BUFFER - 1)] = (start + i) as u32;
                n += usize::from((pos - it.pos).length_squared() < r2);
                if n == WITHIN_BUFFER {
                    hits.iter().for_each(|&j| f(&items[j as usize]));
                    n = 0;
                }
            }
        });
        hits[..n].iter().for_each(|&j| f(&items[j as usize]));
    }
}

/// Per block of 4 x 4 cells, the one team of the victims in it, if they are all of one
/// team (runsync's `TeamBlocks`): an attacker with only teammates around skips its search.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TeamBlocks {
    origin: Vec2,
    per_side: f32,
    cols: u32,
    rows: u32,
    teams: Vec<u8>,
}

impl TeamBlocks {
    const SHIFT: u32 = 2;
    const NONE: u8 = u8::MAX;
    const MIXED: u8 = u8::MAX - 1;

    /// Summarises the cells of `grid` as last rebuilt: one pass over the items, and one
    /// over the blocks of each row of cells.
    pub fn rebuild(&mut self, grid: &Grid) {
        let (cols, rows) = (grid.cols, grid.rows);
        if !self.cover(grid) {
            return;
        }
        for y in 0..rows {
            let first = ((y >> Self::SHIFT) * self.cols) as usize;
            let row = &mut self.teams[first..first + self.cols as usize];
            Self::summarise_row(grid, y, cols, row);
        }
    }

    /// [`rebuild`](Self::rebuild) on `jobs`, a band of rows of blocks per job (runsync's
    /// `TeamBlocks::rebuild_parallel`: each block is summarised from its own cells, so the
    /// bands are independent and the table is the same).
    pub fn rebuild_parallel(&mut self, grid: &Grid, jobs: Jobs<'_>) {
        let (cols, rows) = (grid.cols, grid.rows);
        if !self.cover(grid) {
            return;
        }
        let block_cols = self.cols as usize;
        // A fixed number of bands (not one per thread): the same work and longest job at
        // every thread count.
        let band = (self.rows as usize).div_ceil(TEAM_BANDS).max(1);
        let mut bands: [&mut [u8]; TEAM_BANDS] = std::array::from_fn(|_| &mut [][..]);
        let mut count = 0;
        for (band_teams, teams) in bands
            .iter_mut()
            .zip(self.teams.chunks_mut(band * block_cols))
        {
            *band_teams = teams;
            count += 1;
        }
        jobs.for_each_mut(&mut bands[..count], |k, teams| {
            let by0 = (k * band) as u32;
            for (j, row) in teams.chunks_mut(block_cols).enumerate() {
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
        let (cols, rows) = (grid.cols, grid.rows);
        let (origin, cell) = (grid.origin, grid.cell_used);
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
                if it.tag & VICTIM == 0 {
                    continue;
                }
                let team = (it.tag & TEAM_MASK) as u8;
                *one = if team < Self::MIXED && (*one == Self::NONE || *one == team) {
                    team
                } else {
                    Self::MIXED
                };
            }
        }
    }

    /// Whether every victim in the cells a search of `(pos, radius)` looks at is of
    /// `team` (or there are none): then the search finds no enemy.
    #[inline]
    pub fn only(&self, pos: Vec2, radius: f32, team: u8) -> bool {
        if team >= Self::MIXED || self.teams.is_empty() {
            return self.teams.is_empty();
        }
        let slack = |v: Vec2| v.abs() * 1e-6 + 1e-3;
        let r = Vec2::splat(radius.max(0.0));
        let lo = (pos - r - self.origin) * self.per_side;
        let hi = (pos + r - self.origin) * self.per_side;
        let (lo, hi) = (lo - slack(lo), hi + slack(hi));
        let (bx0, by0) = (lo.x as u32, lo.y as u32);
        let bx1 = (hi.x as u32).min(self.cols - 1);
        let by1 = (hi.y as u32).min(self.rows - 1);
        let mut only = true;
        for by in by0.min(by1)..=by1 {
            let row = (by * self.cols) as usize;
            for &t in &self.teams[row + bx0.min(bx1) as usize..=row + bx1 as usize] {
                only &= t == team || t == Self::NONE;
            }
        }
        only
    }
}

/// A built grid, its team blocks and the frame ([`ArenaTime::frame`]) whose schedule
/// built it.
///
/// [`ArenaTime::frame`]: super::ArenaTime::frame
#[derive(Clone, Debug)]
pub struct Built {
    /// The grid.
    pub grid: Grid,
    /// Its victims' teams per block of cells.
    pub teams: TeamBlocks,
    /// The frame that built it; `None` before the first build.
    pub frame: Option<u64>,
}

impl Default for Built {
    fn default() -> Self {
        Built {
            grid: Grid::new(2.0),
            teams: TeamBlocks::default(),
            frame: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The port hands out exactly what runsync's grid hands out, in the same order, for the
    /// same items (entity ids mapped one to one).
    #[test]
    fn the_port_finds_what_runsyncs_grid_finds_in_the_same_order() {
        use runsync_systems::Grid as RsGrid;
        let mut w = runsync::World::new();
        #[derive(Clone, Copy)]
        struct M;
        impl runsync::Component for M {
            type Output = M;
        }
        w.register::<M>(runsync::merge::last);
        let mut bw = bevy_ecs::world::World::new();
        let n = 3000;
        let rs: Vec<runsync::Entity> = (0..n).map(|_| w.spawn((M,))).collect();
        let bv: Vec<Entity> = (0..n).map(|_| bw.spawn_empty().id()).collect();
        let pos = |i: usize| {
            let f = i as f32;
            Vec2::new((f * 7.31).sin() * 60.0 + 3.0, (f * 3.17).cos() * 40.0)
        };
        let tag = |i: usize| (i % 4) as u32 | if i.is_multiple_of(3) { VICTIM } else { BODY };
        let mut a = RsGrid::new(2.0);
        a.rebuild((0..n).map(|i| (rs[i], pos(i), 0.2 + (i % 3) as f32 * 0.15, tag(i))));
        let mut b = Grid::new(2.0);
        b.rebuild((0..n).map(|i| (bv[i], pos(i), 0.2 + (i % 3) as f32 * 0.15, tag(i))));
        assert_eq!(a.len(), b.len());
        assert_eq!(a.max_radius(), b.max_radius());
        let index_rs = |e: runsync::Entity| rs.iter().position(|&x| x == e).unwrap();
        let index_bv = |e: Entity| bv.iter().position(|&x| x == e).unwrap();
        for q in 0..200 {
            let p = pos(q * 7 + 1) + Vec2::new(0.3, -0.2);
            let r = 0.5 + (q % 5) as f32;
            let (mut x, mut y) = (Vec::new(), Vec::new());
            a.for_each_within(p, r, |it| x.push((index_rs(it.entity), it.tag)));
            b.for_each_within(p, r, |it| y.push((index_bv(it.entity), it.tag)));
            assert_eq!(x, y, "query {p} radius {r}");
        }
    }
}
