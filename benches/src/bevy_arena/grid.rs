//! A plain port of `runsync_systems`' spatial grid (`Grid`, box-grid path only, and the
//! `TeamBlocks` summary beside it) to bevy's [`Entity`]: the same cell side, the same
//! growth rule, the same counting sort, the same queries and their visit order.
//!
//! The runsync originals are in `systems/src/grid.rs` and `systems/src/spatial.rs`; only
//! the lattice variant (for sharded worlds, which the arena does not use) is left out.

use std::ops::Range;

use bevy_ecs::entity::Entity;
use runsync_systems::glam::{IVec4, Vec2, Vec4};

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
        let ncells = (self.cols * self.rows) as usize;
        self.fill(ncells, n);
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
        for &c in &cells {
            self.starts[c as usize + 1] += 1;
        }
        self.cells = cells;
        for c in 0..ncells {
            self.starts[c + 1] += self.starts[c];
        }
        if let Some(&first) = self.input.first() {
            self.items.resize(n, first);
        }
        self.items.truncate(n);
        for (it, &c) in self.input.iter().zip(&self.cells) {
            let slot = &mut self.starts[c as usize];
            self.items[*slot as usize] = *it;
            *slot += 1;
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
#[derive(Clone, Debug, Default)]
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

    /// Summarises the cells of `grid` as last rebuilt.
    pub fn rebuild(&mut self, grid: &Grid) {
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
        if grid.is_empty() {
            return;
        }
        for y in 0..rows {
            let first = (y >> Self::SHIFT) * self.cols;
            for bx in 0..self.cols {
                let cells = bx * side..((bx + 1) * side).min(cols);
                let one = &mut self.teams[(first + bx) as usize];
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
