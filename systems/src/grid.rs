//! A uniform grid for neighbour search, rebuilt every frame into reused buffers.

use std::ops::Range;

use glam::{IVec4, Vec2, Vec4};
use runsync::{Entity, Parallel};

/// One entry of a [`Grid`].
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct GridItem {
    /// The entity.
    pub entity: Entity,
    /// Its position when the grid was built.
    pub pos: Vec2,
    /// Its radius.
    pub radius: f32,
    /// A caller-defined tag (a team, a flag set, ...).
    pub tag: u32,
}

/// A uniform grid over the bounding box of its items, for "who is near this point" queries.
///
/// Rebuilding is a counting sort by cell: O(items + cells), no allocation once the buffers
/// have grown to the frame's size. A system keeps its grid in its own state and rebuilds it
/// at the start of each run — or, to build one grid per frame for several systems, see
/// [`SpatialGrid`](crate::SpatialGrid). Items within a cell keep insertion order, and
/// queries visit cells row by row, so the visit order depends only on the input order —
/// deterministic.
///
/// Two queries: [`for_each_near`](Self::for_each_near) hands out every item of the cells
/// the query square overlaps; [`for_each_within`](Self::for_each_within) only those
/// strictly inside the query circle, in the same order, and is the faster one when most
/// candidates are out of reach (it tests distances in a branch-free pass over each row).
///
/// ```
/// use glam::Vec2;
/// use runsync::prelude::*;
/// use runsync_systems::Grid;
/// # let mut w = World::new();
/// # #[derive(Clone, Copy)] struct M; impl Component for M { type Output = M; }
/// # w.register::<M>(merge::last);
/// let (a, b) = (w.spawn((M,)), w.spawn((M,)));
/// let mut grid = Grid::new(2.0);
/// grid.rebuild([(a, Vec2::ZERO, 0.5, 0), (b, Vec2::new(10.0, 0.0), 0.5, 0)]);
/// let mut near = Vec::new();
/// grid.for_each_near(Vec2::new(0.5, 0.0), 1.0, |it| near.push(it.entity));
/// assert_eq!(near, [a]);
/// assert_eq!(grid.max_radius(), 0.5);
/// ```
#[derive(Clone, Debug)]
pub struct Grid {
    /// The requested cell side.
    cell: f32,
    /// The side in use since the last rebuild (grown for sparse inputs).
    cell_used: f32,
    /// `1 / cell_used` if `cell_used` is a power of two (as the default cells are), so
    /// that multiplying by it is exactly dividing by `cell_used` (and cheaper); else 0.
    per_cell: f32,
    origin: Vec2,
    /// On a fixed lattice ([`on_lattice`](Grid::on_lattice)): the lattice coordinates of
    /// cell `(0, 0)`; `None` for a grid over its items' bounding box.
    lattice: Option<(i64, i64)>,
    /// Whether the grid keeps to its lattice (set by `on_lattice`).
    fixed: bool,
    cols: u32,
    rows: u32,
    /// The far corner of the cells, `origin + (cols, rows) · cell_used` (kept from the
    /// last rebuild: every query tests against it).
    far: Vec2,
    /// The last column and row, `(cols - 1, rows - 1)`, as floats (exact: the grid has
    /// fewer than 2^24 columns and rows).
    last: Vec2,
    /// The largest radius among the items (0 when empty).
    max_radius: f32,
    /// `starts[c]..starts[c + 1]` are the items of cell `c`.
    starts: Vec<u32>,
    items: Vec<GridItem>,
    /// Rebuild scratch: the input, and each input's cell.
    input: Vec<GridItem>,
    cells: Vec<u32>,
    /// The parts of a [`rebuild_parallel`](Self::rebuild_parallel), kept for their
    /// buffers.
    parts: PartBuffers,
}

/// [`GridPart`]s kept for their buffers: scratch, not the grid (its `Debug` shows
/// nothing of them, so two equal grids print the same).
#[derive(Clone, Default)]
struct PartBuffers(Vec<GridPart>);

impl std::fmt::Debug for PartBuffers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("..")
    }
}

/// The most parts a [`Grid::rebuild_parallel`] takes.
pub const MAX_GRID_PARTS: usize = 64;

/// The bands of rows of cells a [`Grid::rebuild_parallel`] sorts in (fewer if the grid has
/// fewer rows): each is a job, so this many workers share the sort.
const MAX_BANDS: usize = 32;

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
/// their bounds. Filled through [`push`](Self::push).
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
        // `c / band_cells` by multiplication (Lemire's: exact for every `u32`): a division
        // per item was most of this pass.
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

/// The cells of a lattice of side `cell` (a positive power of two) from the one holding
/// `lo` to the one holding `hi` (`lo <= hi`, finite): the lattice coordinates of the first,
/// and how many columns and rows (at least 1 each). A coordinate past the `i64` range is
/// clamped to it (`as` saturates); the counts are `i128`, where the difference of two
/// `i64`s cannot overflow, so corners as far apart as `f32` allows are counted, not wrapped.
pub(crate) fn lattice_span(cell: f32, lo: Vec2, hi: Vec2) -> ((i64, i64), (i128, i128)) {
    let per_cell = cell.recip();
    let at = |v: f32| (v * per_cell).floor() as i64;
    let (x0, y0) = (at(lo.x), at(lo.y));
    let cols = i128::from(at(hi.x)) - i128::from(x0) + 1;
    let rows = i128::from(at(hi.y)) - i128::from(y0) + 1;
    ((x0, y0), (cols, rows))
}

/// Items in reach [`Grid::for_each_within`] notes before handing them out (a power of 2;
/// small, as the buffer is cleared for every query).
const WITHIN_BUFFER: usize = 16;

impl Grid {
    /// An empty grid with square cells of side `cell` (about the largest query radius is a
    /// good choice). The grid grows its cells if needed to keep at most ~2 cells per item.
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
            lattice: None,
            fixed: false,
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

    /// An empty grid whose cells lie on one fixed lattice: cell `(x, y)` covers
    /// `[x·cell, (x+1)·cell) × [y·cell, (y+1)·cell)` whatever items it holds, and the cells
    /// never grow. Two such grids holding overlapping sets of items (the parts of a world
    /// split into shards) hand out the items they share in the same relative order, which
    /// a grid over its items' bounding box does not promise (its origin and cell side
    /// follow the items). The price: as many cells as the items' extent needs, however
    /// sparse, and a `floor` per lookup.
    ///
    /// ```
    /// use glam::Vec2;
    /// use runsync::prelude::*;
    /// use runsync_systems::Grid;
    /// # let mut w = World::new();
    /// # #[derive(Clone, Copy)] struct M; impl Component for M { type Output = M; }
    /// # w.register::<M>(merge::last);
    /// let (a, b, c) = (w.spawn((M,)), w.spawn((M,)), w.spawn((M,)));
    /// let order = |items: &[(Entity, Vec2)]| {
    ///     let mut g = Grid::on_lattice(2.0);
    ///     g.rebuild(items.iter().map(|&(e, p)| (e, p, 0.5, 0)));
    ///     let mut seen = Vec::new();
    ///     g.for_each_within(Vec2::new(3.0, 3.0), 3.0, |it| seen.push(it.entity));
    ///     seen
    /// };
    /// let (pa, pb, pc) = (Vec2::new(3.9, 2.5), Vec2::new(2.1, 3.5), Vec2::new(-40.0, 0.0));
    /// // With a far item or without it, `a` and `b` come out in the same order.
    /// assert_eq!(order(&[(a, pa), (b, pb), (c, pc)]), order(&[(a, pa), (b, pb)]));
    /// ```
    ///
    /// # Panics
    /// If `cell` is not a positive power of two (so that scaling by its reciprocal is
    /// exact, and every position falls in one lattice cell however it is computed).
    pub fn on_lattice(cell: f32) -> Grid {
        assert!(
            cell.is_finite() && cell > 0.0 && cell.to_bits() & 0x007f_ffff == 0,
            "a lattice Grid's cell side must be a positive power of two, got {cell}"
        );
        Grid {
            fixed: true,
            ..Grid::new(cell)
        }
    }

    /// Whether this grid keeps to a fixed lattice ([`on_lattice`](Self::on_lattice)).
    pub fn is_on_lattice(&self) -> bool {
        self.fixed
    }

    /// The requested cell side ([`new`](Self::new)).
    pub(crate) fn cell(&self) -> f32 {
        self.cell
    }

    /// The items of the last rebuild in the order they were given (those with a finite
    /// position): rebuilding from them gives this grid again, bit for bit, as a rebuild
    /// depends only on its input and the requested cell side.
    pub(crate) fn inserted(&self) -> &[GridItem] {
        &self.input
    }

    /// Number of items.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether the grid holds no item.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// The largest radius among the items (NaN radii ignored; 0 when empty). A query for
    /// everything that may touch a circle of radius `r` asks for `r + max_radius()`.
    pub fn max_radius(&self) -> f32 {
        self.max_radius
    }

    /// Replaces the contents with `(entity, position, radius, tag)` items. Items with a
    /// non-finite position are skipped.
    ///
    /// Cost: one pass over the input, one over the cells (a prefix sum) and one scattering
    /// the items into cell order; no allocation once the buffers have grown.
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
        if self.fixed {
            self.lattice_over(lo, hi);
        } else {
            self.box_over(lo, hi, n);
        }
        self.far = self.origin + Vec2::new(self.cols as f32, self.rows as f32) * self.cell_used;
        self.last = Vec2::new(
            self.cols.saturating_sub(1) as f32,
            self.rows.saturating_sub(1) as f32,
        );
    }

    /// [`rebuild`](Self::rebuild) in parallel on a system's workers: job `k` of `parts`
    /// (at most [`MAX_GRID_PARTS`]) pushes the `k`-th part of the items, in order, into
    /// the [`GridPart`] it is given (emptied), and the grid is the one `rebuild` makes
    /// from the parts' items one after the other — bit for bit, at every worker count
    /// (the sort by cell is stable, so its result does not depend on how it is split).
    ///
    /// Every step runs in parallel: the parts gather their items; then each part copies
    /// them into place and computes their cells; then bands of rows of cells each sort
    /// their items (a counting sort each, over all the items' cells: its cost grows with
    /// the number of bands, one per worker, at most 16). Cost on one worker: about
    /// `rebuild`'s; no allocation once the buffers have grown.
    ///
    /// ```
    /// use glam::Vec2;
    /// use runsync::prelude::*;
    /// use runsync_systems::Grid;
    /// #[derive(Clone, Copy)] struct P(Vec2);
    /// impl Component for P { type Output = P; }
    /// let mut world = World::new();
    /// world.register::<P>(merge::last);
    /// for i in 0..5000 { world.spawn((P(Vec2::new(i as f32 * 0.37 % 50.0, i as f32 * 0.11 % 30.0)),)); }
    /// let mut rt = Runtime::builder().workers(2).build(world);
    /// rt.add_system(|w: &World, out: &mut Output| {
    ///     let mut grid = Grid::new(2.0);
    ///     let per = 1000;
    ///     grid.rebuild_parallel(out.parallel(), 5, |k, part| {
    ///         for (e, (p,)) in w.query::<(&P,)>().rows(k * per..(k + 1) * per) {
    ///             part.push(e, p.0, 0.5, 0);
    ///         }
    ///     });
    ///     let mut serial = Grid::new(2.0);
    ///     serial.rebuild(w.query::<(&P,)>().map(|(e, (p,))| (e, p.0, 0.5, 0)));
    ///     assert_eq!(grid.len(), 5000);
    ///     let (mut a, mut b) = (Vec::new(), Vec::new());
    ///     grid.for_each_near(Vec2::new(20.0, 10.0), 3.0, |it| a.push(it.entity));
    ///     serial.for_each_near(Vec2::new(20.0, 10.0), 3.0, |it| b.push(it.entity));
    ///     assert_eq!(a, b);
    /// });
    /// rt.frame();
    /// ```
    ///
    /// # Panics
    /// If `parts` is more than [`MAX_GRID_PARTS`]; a panic in `gather` goes on to the
    /// system (the grid is then empty).
    pub fn rebuild_parallel(
        &mut self,
        par: Parallel<'_>,
        parts: usize,
        gather: impl Fn(usize, &mut GridPart) + Sync,
    ) {
        assert!(
            parts <= MAX_GRID_PARTS,
            "Grid::rebuild_parallel takes at most {MAX_GRID_PARTS} parts, got {parts}"
        );
        // Empty until done: a panic below leaves no half-built grid.
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
        par.for_each_mut(&mut gathered[..parts], |k, part| {
            part.clear();
            gather(k, part);
        });
        let gathered_parts = &gathered[..parts];
        let (mut lo, mut hi) = (Vec2::splat(f32::MAX), Vec2::splat(f32::MIN));
        let mut max_radius = 0.0f32;
        let mut n = 0;
        for p in gathered_parts {
            if !p.items.is_empty() {
                lo = lo.min(p.lo);
                hi = hi.max(p.hi);
                max_radius = max_radius.max(p.max_radius);
                n += p.items.len();
            }
        }
        self.place(lo, hi, max_radius, n);
        let ncells = (self.cols * self.rows) as usize;
        // Bands of whole rows of cells, a fixed number of them (not one per worker: the
        // work and the longest job stay the same at every worker count).
        let (cols, rows) = (self.cols as usize, self.rows as usize);
        let band_cells = rows.div_ceil(MAX_BANDS.min(rows)) * cols;
        let bands = ncells.div_ceil(band_cells);
        // Each part copies its items into place (the insertion order, for saves),
        // computes their cells, and groups them by band, stably (a counting sort of its
        // own).
        let mut input = std::mem::take(&mut self.input);
        let mut cells = std::mem::take(&mut self.cells);
        if let Some(first) = gathered[..parts].iter().find_map(|p| p.items.first()) {
            input.resize(n, *first);
            cells.resize(n, 0);
        }
        {
            let grid = &*self;
            let lens: [usize; MAX_GRID_PARTS] =
                std::array::from_fn(|k| gathered.get(k).map_or(0, |p| p.items.len()));
            let mut slices = split_by(&mut input, &mut cells, lens[..parts].iter().copied());
            let mut jobs: [(Option<&mut GridPart>, &mut [GridItem], &mut [u32]); MAX_GRID_PARTS] =
                std::array::from_fn(|_| (None, &mut [][..], &mut [][..]));
            for ((job, part), (items, cells)) in jobs
                .iter_mut()
                .zip(gathered.iter_mut())
                .zip(slices.iter_mut())
            {
                *job = (Some(part), std::mem::take(items), std::mem::take(cells));
            }
            // One worker: no bands (the grouping is an extra pass that only parallel
            // sorting needs), `rebuild`'s own sort below.
            let serial = par.threads() == 1;
            par.for_each_mut(&mut jobs[..parts], |_, (part, items, cells)| {
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
        if par.threads() == 1 {
            self.sort_by_cell(ncells, n);
        } else {
            self.sort_in_bands(par, ncells, n, band_cells, bands, parts);
        }
    }

    /// `fill`'s counting sort, a band of rows of cells per job: band `b` takes, part by
    /// part, the items each part grouped into it (so in input order), counts them per
    /// cell, places them after the bands before it, and scatters them into its own
    /// stretch of `items`. The result is `fill`'s: a stable sort by cell is unique.
    fn sort_in_bands(
        &mut self,
        par: Parallel<'_>,
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
        let mut jobs: [(&mut [u32], &mut [GridItem], usize); MAX_BANDS] =
            std::array::from_fn(|_| (&mut [][..], &mut [][..], 0));
        let mut rest = &mut self.items[..];
        let mut base = 0;
        for (b, (job, starts)) in jobs
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
        par.for_each_mut(&mut jobs[..bands], |b, (starts, items, base)| {
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
        if self.lattice.is_none() {
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
        } else {
            for (it, c) in items.iter().zip(cells) {
                *c = self.cell_of(it.pos);
            }
        }
    }

    /// Cells on the lattice, from the one holding `lo` to the one holding `hi`.
    fn lattice_over(&mut self, lo: Vec2, hi: Vec2) {
        let cell = self.cell;
        let ((x0, y0), (cols, rows)) = lattice_span(cell, lo, hi);
        assert!(
            cols.checked_mul(rows)
                .is_some_and(|c| c <= i128::from(u32::MAX)),
            "a lattice Grid over {lo}..{hi} would need {cols} x {rows} cells of side {cell}"
        );
        (self.cols, self.rows) = (cols as u32, rows as u32);
        self.lattice = Some((x0, y0));
        self.origin = Vec2::new(x0 as f32 * cell, y0 as f32 * cell);
        self.cell_used = cell;
        self.per_cell = cell.recip();
    }

    /// Cells over the items' bounding box, grown until there are at most ~2 per item.
    fn box_over(&mut self, lo: Vec2, hi: Vec2, n: usize) {
        self.lattice = None;
        // Grow the cell until the grid has at most ~2 cells per item (and fits in u32).
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
        if self.lattice.is_none() {
            // `cell_of` two items at a time (the inputs are finite).
            let pairs = self.input.chunks_exact(2);
            let rest = pairs.remainder();
            for p in pairs {
                let c = self.box_cells([p[0].pos, p[1].pos]);
                cells.push(c.y as u32 * self.cols + c.x as u32);
                cells.push(c.w as u32 * self.cols + c.z as u32);
            }
            cells.extend(rest.iter().map(|it| self.cell_of(it.pos)));
        } else {
            cells.extend(self.input.iter().map(|it| self.cell_of(it.pos)));
        }
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
        // Place each item at its cell's cursor (stable: insertion order within a cell).
        // Every item is overwritten below: only the length matters (no copy when it
        // stays).
        if let Some(&first) = self.input.first() {
            self.items.resize(n, first);
        }
        self.items.truncate(n);
        for (it, &c) in self.input.iter().zip(&self.cells) {
            let next = &mut self.starts[c as usize];
            self.items[*next as usize] = *it;
            *next += 1;
        }
        // The cursors now hold each cell's end; shift back to starts.
        for c in (1..=ncells).rev() {
            self.starts[c] = self.starts[c - 1];
        }
        self.starts[0] = 0;
    }

    #[inline]
    fn cell_xy(&self, p: Vec2) -> (u32, u32) {
        if let Some((x0, y0)) = self.lattice {
            // Exact: scaling by a power of two, then whole numbers. (`p - origin` could
            // round differently for two grids of different origins.)
            // Saturating: a point far outside (a query of a huge radius) is clamped, not
            // an overflow.
            let at = |v: f32, from: i64, n: u32| {
                ((v * self.per_cell).floor() as i64)
                    .saturating_sub(from)
                    .clamp(0, i64::from(n.saturating_sub(1))) as u32
            };
            return (at(p.x, x0, self.cols), at(p.y, y0, self.rows));
        }
        let d = p - self.origin;
        // The same bits either way: a power of two's reciprocal is exact.
        let rel = if self.per_cell != 0.0 {
            d * self.per_cell
        } else {
            d / self.cell_used
        };
        // `as` truncates towards zero and saturates: for `rel >= 0` that is `floor`, and
        // negatives (and NaN) go to 0, as a clamp would. (No `floor` call: without SSE4.1
        // it is a libm call, and this is the hottest line of a grid query.)
        let x = (rel.x as u32).min(self.cols.saturating_sub(1));
        let y = (rel.y as u32).min(self.rows.saturating_sub(1));
        (x, y)
    }

    #[inline]
    fn cell_of(&self, p: Vec2) -> u32 {
        let (x, y) = self.cell_xy(p);
        y * self.cols + x
    }

    /// The cells overlapping the square of half-side `radius` around `pos`, as the
    /// inclusive column and row ranges `(x0, y0, x1, y1)`; `None` if the square misses the
    /// grid or the grid is empty.
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
        if self.lattice.is_some() {
            let (x0, y0) = self.cell_xy(lo);
            let (x1, y1) = self.cell_xy(hi);
            return Some((x0, y0, x1, y1));
        }
        // `lo` and `hi` are not NaN: a finite `pos`, a radius that is not NaN.
        let c = self.box_cells([lo, hi]);
        Some((c.x as u32, c.y as u32, c.z as u32, c.w as u32))
    }

    /// `cell_xy` of two points of a box grid at once, as `(x0, y0, x1, y1)`, for points
    /// that are not NaN: the clamp to `0..=last` is done on the floats, then the
    /// truncation, which gives `cell_xy`'s cells (truncation is monotone and the bounds are
    /// whole numbers) in four lanes of one register, without the saturating casts'
    /// fix-ups (a sixth of a crowd frame went to them in `cell_box`).
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

    /// Columns and rows of cells (of the last rebuild).
    pub(crate) fn dims(&self) -> (u32, u32) {
        (self.cols, self.rows)
    }

    /// The lower corner of cell `(0, 0)` and the side of the cells in use (of the last
    /// rebuild).
    pub(crate) fn cell_geometry(&self) -> (Vec2, f32) {
        (self.origin, self.cell_used)
    }

    /// Calls `f` with the indices (into `items`) of the items of the cells overlapping the
    /// square of half-side `radius` around `pos`: one range per row of cells, rows in order.
    #[inline]
    fn for_each_row(&self, pos: Vec2, radius: f32, mut f: impl FnMut(Range<usize>)) {
        let Some((x0, y0, x1, y1)) = self.cell_box(pos, radius) else {
            return;
        };
        for y in y0..=y1 {
            let row = (y * self.cols) as usize;
            // Cells x0..=x1 of one row are contiguous in `items`.
            f(
                self.starts[row + x0 as usize] as usize
                    ..self.starts[row + x1 as usize + 1] as usize,
            );
        }
    }

    /// The items of cells `xs` of row `y` (contiguous in cell order).
    pub(crate) fn items_in(&self, y: u32, xs: Range<u32>) -> &[GridItem] {
        let row = (y * self.cols) as usize;
        &self.items[self.starts[row + xs.start as usize] as usize
            ..self.starts[row + xs.end as usize] as usize]
    }

    /// Calls `f` for every item in the cells overlapping the square of half-side `radius`
    /// around `pos` — a superset of the items within `radius`; check the distance yourself.
    /// Visits cells row by row, items in insertion order.
    #[inline]
    pub fn for_each_near(&self, pos: Vec2, radius: f32, mut f: impl FnMut(&GridItem)) {
        self.for_each_row(pos, radius, |row| self.items[row].iter().for_each(&mut f));
    }

    /// Calls `f` for every item strictly closer than `radius` to `pos`
    /// (`pos.distance_squared(item.pos) < radius * radius`), in the order of
    /// [`for_each_near`](Self::for_each_near) — so calling `f` only for the items of
    /// `for_each_near` that pass that test gives exactly the same calls.
    ///
    /// Cost: per row of cells, a branch-free pass computes every distance and notes the
    /// items in reach, then `f` runs for those; far cheaper than `for_each_near` with a
    /// distance check in `f` when most candidates are out of reach (the usual case), as
    /// the test never mispredicts a branch.
    ///
    /// ```
    /// use glam::Vec2;
    /// use runsync::prelude::*;
    /// use runsync_systems::Grid;
    /// # let mut w = World::new();
    /// # #[derive(Clone, Copy)] struct M; impl Component for M { type Output = M; }
    /// # w.register::<M>(merge::last);
    /// let (a, b) = (w.spawn((M,)), w.spawn((M,)));
    /// let mut grid = Grid::new(2.0);
    /// grid.rebuild([(a, Vec2::ZERO, 0.5, 0), (b, Vec2::new(1.5, 0.0), 0.5, 0)]);
    /// let mut within = Vec::new();
    /// grid.for_each_within(Vec2::new(0.5, 0.0), 1.0, |it| within.push(it.entity));
    /// assert_eq!(within, [a]); // b is 1.0 away: not strictly within
    /// ```
    #[inline]
    pub fn for_each_within(&self, pos: Vec2, radius: f32, mut f: impl FnMut(&GridItem)) {
        let r = radius.max(0.0);
        let r2 = r * r;
        // Indices of the items in reach, handed to `f` after the scan of every row (or when
        // full), so that the rows' loads overlap and the scan has no data-dependent branch.
        let mut hits = [0u32; WITHIN_BUFFER];
        let mut n = 0;
        let items = &self.items[..];
        self.for_each_row(pos, radius, |row| {
            let start = row.start;
            for (i, it) in items[row].iter().enumerate() {
                // Always note the index; count it only if in reach. `n < WITHIN_BUFFER`
                // here (the mask only spares the bounds check).
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lattice_grids_hand_out_shared_items_in_one_order() {
        // A world of 400 items and the part of it a shard holds (x from 10 to 60, and a
        // few far ones): near the part, both grids give the items they share in one order.
        let es = ents(400);
        let at = |i: usize| {
            let h = (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
            Vec2::new(
                (h % 10_000) as f32 / 100.0 - 3.7,
                ((h >> 20) % 10_000) as f32 / 125.0,
            )
        };
        let all: Vec<_> = (0..400).map(|i| (es[i], at(i), 0.5, 0)).collect();
        let part: Vec<_> = (all.iter())
            .copied()
            .filter(|&(e, p, _, _)| (10.0..60.0).contains(&p.x) || e.index() % 50 == 0)
            .collect();
        let (mut whole, mut shard) = (Grid::on_lattice(2.0), Grid::on_lattice(2.0));
        whole.rebuild(all.iter().copied());
        shard.rebuild(part.iter().copied());
        let inside: std::collections::HashSet<Entity> = part.iter().map(|it| it.0).collect();
        for q in 0..300 {
            let pos = Vec2::new((q % 25) as f32 * 1.6 + 13.0, (q / 25) as f32 * 6.5 + 0.3);
            let (mut a, mut b) = (Vec::new(), Vec::new());
            whole.for_each_within(pos, 2.5, |it| {
                if inside.contains(&it.entity) {
                    a.push(it.entity);
                }
            });
            shard.for_each_within(pos, 2.5, |it| b.push(it.entity));
            assert_eq!(a, b, "query at {pos}");
        }
        // A grid over its items' box (cells follow the items) does not promise it.
        let near: Vec<_> = (part.iter().copied())
            .filter(|&(_, p, _, _)| (10.0..60.0).contains(&p.x))
            .collect();
        let (mut whole, mut shard) = (Grid::new(3.0), Grid::new(3.0));
        whole.rebuild(all.iter().copied());
        shard.rebuild(near.iter().copied());
        let inside: std::collections::HashSet<Entity> = near.iter().map(|it| it.0).collect();
        let differs = (0..300).any(|q| {
            let pos = Vec2::new((q % 25) as f32 * 1.6 + 13.0, (q / 25) as f32 * 6.5 + 0.3);
            let (mut a, mut b) = (Vec::new(), Vec::new());
            whole.for_each_near(pos, 3.0, |it| {
                if inside.contains(&it.entity) {
                    a.push(it.entity);
                }
            });
            shard.for_each_near(pos, 3.0, |it| b.push(it.entity));
            a != b
        });
        assert!(differs, "the control: box grids differ somewhere");
    }

    /// Pseudo-random floats in `[0, 1)` (xorshift) from `seed`.
    fn unit_floats(mut seed: u64) -> impl FnMut() -> f32 {
        move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed >> 40) as f32 / (1u64 << 24) as f32
        }
    }

    /// Everything a rebuild leaves, as text (bits of floats included), for comparing two
    /// grids.
    fn state(g: &Grid) -> String {
        format!(
            "{:?} {:?} {:?} {:?} {:?} {} {} {:?} {:?} {:?} {}",
            g.items
                .iter()
                .map(|i| (i.entity, i.pos.x.to_bits(), i.pos.y.to_bits(), i.tag))
                .collect::<Vec<_>>(),
            g.starts,
            g.input.len(),
            g.cells,
            g.lattice,
            g.cols,
            g.rows,
            g.origin,
            g.cell_used.to_bits(),
            (g.far, g.last),
            g.max_radius.to_bits()
        )
    }

    /// `rebuild_parallel` gives `rebuild`'s grid bit for bit, on 1 to 8 workers, for box
    /// and lattice grids, with parts of every size (empty ones too), non-finite positions
    /// skipped, items piled on one point, and no items at all.
    #[test]
    fn a_parallel_rebuild_is_the_serial_one() {
        use runsync::prelude::*;
        let n = if cfg!(miri) { 90 } else { 3000 };
        let es = ents(n);
        let mut next = unit_floats(0x51_7cc1_b727_220a);
        let mut items: Vec<(Entity, Vec2, f32, u32)> = (0..n)
            .map(|i| {
                let p = Vec2::new(next() * 120.0 - 30.0, next() * 70.0 + 5.0);
                (es[i], p, 0.2 + next(), i as u32 % 5)
            })
            .collect();
        items[7].1 = Vec2::NAN;
        items[8].1 = Vec2::new(f32::INFINITY, 1.0);
        for it in &mut items[100..140] {
            it.1 = Vec2::new(3.0, 3.0);
        }
        let items = std::sync::Arc::new(items);
        for workers in [1, 2, 3, 8] {
            let items = items.clone();
            let mut rt = Runtime::builder().workers(workers).build(World::new());
            rt.add_system(move |_: &World, out: &mut Output| {
                for (cell, lattice) in [(2.0, false), (1.5, false), (2.0, true)] {
                    let new = || if lattice { Grid::on_lattice(cell) } else { Grid::new(cell) };
                    for (len, parts) in [(items.len(), 7), (items.len(), 1), (5, 3), (0, 4), (1, 0)] {
                        let items = &items[..len];
                        let mut serial = new();
                        serial.rebuild(items.iter().copied());
                        let mut par = new();
                        // Twice: the buffers are reused.
                        for _ in 0..2 {
                            let per = len.div_ceil(parts.max(1)).max(1);
                            par.rebuild_parallel(out.parallel(), parts, |k, part| {
                                for &(e, p, r, t) in items.iter().skip(k * per).take(per) {
                                    part.push(e, p, r, t);
                                }
                            });
                            if parts == 0 {
                                // No part gathered anything: an empty grid.
                                assert!(par.is_empty());
                                continue;
                            }
                            assert_eq!(
                                state(&par),
                                state(&serial),
                                "{workers} workers, cell {cell}, lattice {lattice}, {len} items in {parts} parts"
                            );
                        }
                    }
                }
            });
            rt.frame();
        }
    }

    fn ents(n: usize) -> Vec<Entity> {
        (0..n as u64)
            .map(|i| Entity::from_bits((1 << 32) | i).unwrap())
            .collect()
    }

    /// `cell_box`'s four-lane path gives the cells `cell_xy` gives for the two corners,
    /// for box grids with and without an exact reciprocal, and queries inside, outside,
    /// straddling, with huge, infinite, zero, negative and NaN radii.
    #[test]
    fn cell_box_is_the_cells_of_both_corners() {
        let es = ents(300);
        let mut next = unit_floats(0x2545_f491_4f6c_dd1d);
        for cell in [2.0, 1.5] {
            let mut g = Grid::new(cell);
            g.rebuild((0..300).map(|i| {
                let p = Vec2::new(next() * 90.0 - 30.0, next() * 40.0 + 7.0);
                (es[i], p, 0.5, 0)
            }));
            assert_eq!(g.per_cell != 0.0, cell == 2.0, "both scalings are covered");
            let radii = [0.0, 0.3, 2.5, 17.0, 1e30, f32::INFINITY, -1.0, f32::NAN];
            for q in 0..400 {
                let pos = Vec2::new(next() * 200.0 - 100.0, next() * 120.0 - 50.0);
                let radius = radii[q % radii.len()];
                let want = {
                    let r = Vec2::splat(radius.max(0.0));
                    let (lo, hi) = (pos - r, pos + r);
                    let max = g.origin + Vec2::new(g.cols as f32, g.rows as f32) * g.cell_used;
                    let miss =
                        hi.x < g.origin.x || hi.y < g.origin.y || lo.x > max.x || lo.y > max.y;
                    (!miss).then(|| {
                        let ((x0, y0), (x1, y1)) = (g.cell_xy(lo), g.cell_xy(hi));
                        (x0, y0, x1, y1)
                    })
                };
                assert_eq!(
                    g.cell_box(pos, radius),
                    want,
                    "cell {cell}: {pos} r {radius}"
                );
            }
        }
    }

    /// The cells a rebuild computes two at a time are `cell_of`'s, for box grids with and
    /// without an exact reciprocal, an odd count (the last one alone), a lattice grid.
    #[test]
    fn rebuilt_cells_are_cell_of() {
        let es = ents(301);
        let mut next = unit_floats(0x9e37_79b9_7f4a_7c15);
        let items: Vec<_> = (0..301)
            .map(|i| {
                (
                    es[i],
                    Vec2::new(next() * 97.0 - 13.0, next() * 41.0 + 3.0),
                    0.5,
                    0,
                )
            })
            .collect();
        for mut g in [Grid::new(2.0), Grid::new(1.5), Grid::on_lattice(2.0)] {
            g.rebuild(items.iter().copied());
            assert_eq!(g.cells.len(), 301);
            for (it, &c) in g.input.iter().zip(&g.cells) {
                assert_eq!(c, g.cell_of(it.pos), "{} at {}", g.cell, it.pos);
            }
        }
    }

    #[test]
    fn finds_exactly_what_brute_force_finds() {
        let es = ents(500);
        let pos: Vec<Vec2> = (0..500)
            .map(|i| {
                let f = i as f32;
                Vec2::new((f * 7.31).sin() * 40.0, (f * 3.17).cos() * 25.0)
            })
            .collect();
        let mut g = Grid::new(1.5);
        // Rebuild twice to exercise reuse of the buffers.
        g.rebuild(es.iter().zip(&pos).map(|(&e, &p)| (e, p, 0.5, 0)));
        g.rebuild(es.iter().zip(&pos).map(|(&e, &p)| (e, p, 0.5, 0)));
        assert_eq!(g.len(), 500);
        for (q, r) in [
            (Vec2::ZERO, 3.0),
            (Vec2::new(39.0, -20.0), 5.0),
            (Vec2::new(100.0, 0.0), 2.0),
        ] {
            let mut got = Vec::new();
            g.for_each_near(q, r, |it| {
                if it.pos.distance(q) <= r {
                    got.push(it.entity)
                }
            });
            got.sort();
            let mut want: Vec<Entity> = es
                .iter()
                .zip(&pos)
                .filter(|(_, p)| p.distance(q) <= r)
                .map(|(&e, _)| e)
                .collect();
            want.sort();
            assert_eq!(got, want);
        }
    }

    #[test]
    fn within_is_near_filtered_by_distance_in_the_same_order() {
        // Crowded enough that rows hold more items than `for_each_within` notes at once.
        let n = 3000;
        let es = ents(n);
        let pos: Vec<Vec2> = (0..n)
            .map(|i| {
                let f = i as f32;
                Vec2::new((f * 7.31).sin() * 6.0, (f * 3.17).cos() * 4.0)
            })
            .collect();
        let mut g = Grid::new(2.0);
        g.rebuild(
            es.iter()
                .zip(&pos)
                .enumerate()
                .map(|(i, (&e, &p))| (e, p, 0.1 + (i % 5) as f32 * 0.1, 0)),
        );
        assert_eq!(g.max_radius(), 0.5);
        for (q, r) in [
            (Vec2::ZERO, 1.0f32),
            (Vec2::new(2.5, -1.0), 3.0),
            (Vec2::new(-6.0, 4.0), 0.7),
            (Vec2::new(100.0, 0.0), 2.0),
            (Vec2::ZERO, 0.0),
            (Vec2::ZERO, -1.0),
        ] {
            let (mut near, mut within) = (Vec::new(), Vec::new());
            let r2 = r.max(0.0) * r.max(0.0);
            g.for_each_near(q, r, |it| {
                if q.distance_squared(it.pos) < r2 {
                    near.push(*it)
                }
            });
            g.for_each_within(q, r, |it| within.push(*it));
            assert_eq!(near, within, "query {q} radius {r}");
        }
        let mut all = 0;
        g.for_each_within(Vec2::ZERO, 100.0, |_| all += 1);
        assert_eq!(all, n);
    }

    /// A lattice grid queried with a radius reaching past the `i64` range of lattice
    /// coordinates (a collider of radius 1e30, from a save) clamps the query to its cells;
    /// a live rebuild over items too far apart for its cells says so, not an overflow.
    #[test]
    fn lattice_extremes_clamp_or_say_so() {
        let es = ents(2);
        let mut g = Grid::on_lattice(2.0);
        g.rebuild([
            (es[0], Vec2::new(-10.0, -10.0), 0.5, 0),
            (es[1], Vec2::new(10.0, 10.0), 0.5, 0),
        ]);
        for r in [1e30, f32::MAX, f32::INFINITY] {
            let mut n = 0;
            g.for_each_near(Vec2::ZERO, r, |_| n += 1);
            g.for_each_within(Vec2::new(1.0, -1.0), r, |_| n += 1);
            assert_eq!(n, 4, "radius {r}");
        }
        let ((x0, y0), (cols, rows)) = lattice_span(
            2f32.powi(-126),
            Vec2::splat(-f32::MAX),
            Vec2::splat(f32::MAX),
        );
        assert_eq!((x0, y0), (i64::MIN, i64::MIN));
        assert_eq!((cols, rows), (1 << 64, 1 << 64));
        let far = std::panic::catch_unwind(|| {
            let mut g = Grid::on_lattice(2.0);
            g.rebuild([
                (es[0], Vec2::splat(-3e38), 0.5, 0),
                (es[1], Vec2::splat(3e38), 0.5, 0),
            ]);
        });
        let msg = far.unwrap_err();
        let msg = msg.downcast_ref::<String>().unwrap();
        assert!(msg.contains("a lattice Grid over"), "{msg}");
    }

    #[test]
    fn empty_and_degenerate_inputs() {
        let mut g = Grid::new(1.0);
        g.rebuild([]);
        g.for_each_near(Vec2::ZERO, 1.0, |_| panic!("empty"));
        g.for_each_within(Vec2::ZERO, 1.0, |_| panic!("empty"));
        assert_eq!(g.max_radius(), 0.0);
        let e = ents(2);
        g.rebuild([(e[0], Vec2::ONE, 0.1, 0), (e[1], Vec2::NAN, 0.1, 0)]);
        assert_eq!(g.len(), 1);
        let mut n = 0;
        g.for_each_near(Vec2::ONE, 0.0, |_| n += 1);
        assert_eq!(n, 1);
        g.for_each_within(Vec2::NAN, 10.0, |_| panic!("NaN query"));
        g.for_each_within(Vec2::ONE, f32::NAN, |_| panic!("NaN radius"));
    }
}
