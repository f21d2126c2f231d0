//! A uniform grid for neighbour search, rebuilt every frame into reused buffers.

use glam::Vec2;
use runsync::Entity;

/// One entry of a [`Grid`].
#[derive(Clone, Copy, Debug, PartialEq)]
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
/// at the start of each run. Items within a cell keep insertion order, and queries visit
/// cells row by row, so the visit order depends only on the input order — deterministic.
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
/// ```
#[derive(Clone, Debug)]
pub struct Grid {
    /// The requested cell side.
    cell: f32,
    /// The side in use since the last rebuild (grown for sparse inputs).
    cell_used: f32,
    origin: Vec2,
    cols: u32,
    rows: u32,
    /// `starts[c]..starts[c + 1]` are the items of cell `c`.
    starts: Vec<u32>,
    items: Vec<GridItem>,
    /// Rebuild scratch: the input, and each input's cell.
    input: Vec<GridItem>,
    cells: Vec<u32>,
}

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
            origin: Vec2::ZERO,
            cols: 0,
            rows: 0,
            starts: Vec::new(),
            items: Vec::new(),
            input: Vec::new(),
            cells: Vec::new(),
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

    /// Replaces the contents with `(entity, position, radius, tag)` items. Items with a
    /// non-finite position are skipped.
    pub fn rebuild(&mut self, items: impl IntoIterator<Item = (Entity, Vec2, f32, u32)>) {
        self.input.clear();
        self.input
            .extend(items.into_iter().filter_map(|(entity, pos, radius, tag)| {
                pos.is_finite().then_some(GridItem {
                    entity,
                    pos,
                    radius,
                    tag,
                })
            }));
        let n = self.input.len();
        let (mut lo, mut hi) = (Vec2::splat(f32::MAX), Vec2::splat(f32::MIN));
        for it in &self.input {
            lo = lo.min(it.pos);
            hi = hi.max(it.pos);
        }
        if n == 0 {
            (lo, hi) = (Vec2::ZERO, Vec2::ZERO);
        }
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
        let ncells = (self.cols * self.rows) as usize;

        self.starts.clear();
        self.starts.resize(ncells + 1, 0);
        self.cells.clear();
        for it in &self.input {
            let c = self.cell_of(it.pos);
            self.cells.push(c);
            self.starts[c as usize + 1] += 1;
        }
        for c in 0..ncells {
            self.starts[c + 1] += self.starts[c];
        }
        // Place each item at its cell's cursor (stable: insertion order within a cell).
        self.items.clear();
        self.items.extend_from_slice(&self.input); // overwritten below; sets the length
        for (it, &c) in self.input.iter().zip(&self.cells) {
            let slot = &mut self.starts[c as usize];
            self.items[*slot as usize] = *it;
            *slot += 1;
        }
        // The cursors now hold each cell's end; shift back to starts.
        for c in (1..=ncells).rev() {
            self.starts[c] = self.starts[c - 1];
        }
        self.starts[0] = 0;
    }

    #[inline]
    fn cell_xy(&self, p: Vec2) -> (u32, u32) {
        let rel = (p - self.origin) / self.cell_used;
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

    /// Calls `f` for every item in the cells overlapping the square of half-side `radius`
    /// around `pos` — a superset of the items within `radius`; check the distance yourself.
    /// Visits cells row by row, items in insertion order.
    #[inline]
    pub fn for_each_near(&self, pos: Vec2, radius: f32, mut f: impl FnMut(&GridItem)) {
        if self.items.is_empty() || !pos.is_finite() {
            return;
        }
        let r = Vec2::splat(radius.max(0.0));
        let (lo, hi) = (pos - r, pos + r);
        let max = self.origin + Vec2::new(self.cols as f32, self.rows as f32) * self.cell_used;
        if hi.x < self.origin.x || hi.y < self.origin.y || lo.x > max.x || lo.y > max.y {
            return;
        }
        let (x0, y0) = self.cell_xy(lo);
        let (x1, y1) = self.cell_xy(hi);
        for y in y0..=y1 {
            let row = y * self.cols;
            let (a, b) = (
                self.starts[(row + x0) as usize] as usize,
                self.starts[(row + x1) as usize + 1] as usize,
            );
            // Cells x0..=x1 of one row are contiguous in `items`.
            for it in &self.items[a..b] {
                f(it);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ents(n: usize) -> Vec<Entity> {
        (0..n as u64)
            .map(|i| Entity::from_bits((1 << 32) | i).unwrap())
            .collect()
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
    fn empty_and_degenerate_inputs() {
        let mut g = Grid::new(1.0);
        g.rebuild([]);
        g.for_each_near(Vec2::ZERO, 1.0, |_| panic!("empty"));
        let e = ents(2);
        g.rebuild([(e[0], Vec2::ONE, 0.1, 0), (e[1], Vec2::NAN, 0.1, 0)]);
        assert_eq!(g.len(), 1);
        let mut n = 0;
        g.for_each_near(Vec2::ONE, 0.0, |_| n += 1);
        assert_eq!(n, 1);
    }
}
