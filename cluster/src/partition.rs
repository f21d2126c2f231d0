//! Who owns an entity and who mirrors it: the [`Partition`] trait and the two ready-made
//! ones, bands along x ([`Bands`]) and tiles of the plane ([`Tiles`]).

use runsync::{Entity, World};

/// Which shard owns an entity, and which others mirror it. Evaluated on the owner after
/// every frame (and once at the start), from the entity's state then — for roots only:
/// children (with a [hierarchy](World::register_hierarchy)) go with their root.
pub trait Partition: Send + Sync + 'static {
    /// The shard (in `0..shards`) that owns `e`.
    fn owner(&self, world: &World, e: Entity, shards: usize) -> usize;

    /// Pushes onto `out` every shard that must hold a ghost of `e`: those whose region
    /// lies within the mirror range of it. The owner may be among them (it is skipped).
    fn mirrors(&self, world: &World, e: Entity, shards: usize, out: &mut Vec<usize>);
}

/// A ready-made [`Partition`]: the x axis from `min` to `max` cut into one band per shard
/// (equal widths; the outer bands reach to infinity), entities mirrored by every band
/// within `range` of their x. An entity without an x (`x` returns `None`) belongs to
/// shard 0 and is not mirrored.
pub struct Bands<F> {
    min: f32,
    max: f32,
    range: f32,
    x: F,
}

impl<F: Fn(&World, Entity) -> Option<f32> + Send + Sync + 'static> Bands<F> {
    /// Bands over `min..max` mirroring within `range`; `x` reads an entity's x.
    ///
    /// # Panics
    /// If `min < max` does not hold or `range` is negative (or any is not finite).
    #[track_caller]
    pub fn new(min: f32, max: f32, range: f32, x: F) -> Self {
        assert!(
            min.is_finite() && max.is_finite() && min < max,
            "runsync-cluster: bands need finite min < max, got {min}..{max}"
        );
        assert!(
            range.is_finite() && range >= 0.0,
            "runsync-cluster: the mirror range must be finite and not negative, got {range}"
        );
        Bands { min, max, range, x }
    }

    /// The band of `x` among `shards`.
    fn band(&self, x: f32, shards: usize) -> usize {
        let t = (x - self.min) / (self.max - self.min) * shards as f32;
        if t.is_nan() || t < 0.0 {
            return 0;
        }
        (t as usize).min(shards - 1)
    }
}

impl<F: Fn(&World, Entity) -> Option<f32> + Send + Sync + 'static> Partition for Bands<F> {
    fn owner(&self, world: &World, e: Entity, shards: usize) -> usize {
        (self.x)(world, e).map_or(0, |x| self.band(x, shards))
    }

    fn mirrors(&self, world: &World, e: Entity, shards: usize, out: &mut Vec<usize>) {
        if let Some(x) = (self.x)(world, e) {
            let (lo, hi) = (
                self.band(x - self.range, shards),
                self.band(x + self.range, shards),
            );
            out.extend(lo..=hi);
        }
    }
}

/// A ready-made [`Partition`] over the plane: the rectangle from `min` to `max` cut into
/// `cols × rows` equal tiles (the outer ones reach to infinity), tile `row * cols + col`
/// owned by shard `tile % shards`, entities mirrored by every tile within `range` of
/// their position (its shard, when that is not the owner). Square-ish tiles keep the
/// mirrored border short: with `M` shards a shard's ghosts grow as `sqrt(N / M)`, where
/// bands ([`Bands`]) keep a whole world-height of border. An entity without a position
/// (`pos` returns `None`) belongs to shard 0 and is not mirrored.
pub struct Tiles<F> {
    min: [f32; 2],
    max: [f32; 2],
    tiles: [usize; 2],
    range: f32,
    pos: F,
}

impl<F: Fn(&World, Entity) -> Option<[f32; 2]> + Send + Sync + 'static> Tiles<F> {
    /// `cols × rows` tiles over `min..max`, mirroring within `range`; `pos` reads an
    /// entity's position.
    ///
    /// # Panics
    /// If the rectangle is empty or not finite, a tile count is 0, or `range` is negative
    /// or not finite.
    #[track_caller]
    pub fn new(min: [f32; 2], max: [f32; 2], cols: usize, rows: usize, range: f32, pos: F) -> Self {
        assert!(
            (0..2).all(|i| min[i].is_finite() && max[i].is_finite() && min[i] < max[i]),
            "runsync-cluster: tiles need a finite, non-empty rectangle, got {min:?}..{max:?}"
        );
        assert!(
            cols > 0 && rows > 0,
            "runsync-cluster: tiles need at least one column and row"
        );
        assert!(
            range.is_finite() && range >= 0.0,
            "runsync-cluster: the mirror range must be finite and not negative, got {range}"
        );
        Tiles {
            min,
            max,
            tiles: [cols, rows],
            range,
            pos,
        }
    }

    /// The column (`axis` 0) or row (1) of coordinate `v`.
    fn cut(&self, axis: usize, v: f32) -> usize {
        let t = (v - self.min[axis]) / (self.max[axis] - self.min[axis]) * self.tiles[axis] as f32;
        if t.is_nan() || t < 0.0 {
            return 0;
        }
        (t as usize).min(self.tiles[axis] - 1)
    }
}

impl<F: Fn(&World, Entity) -> Option<[f32; 2]> + Send + Sync + 'static> Partition for Tiles<F> {
    fn owner(&self, world: &World, e: Entity, shards: usize) -> usize {
        (self.pos)(world, e).map_or(0, |p| {
            (self.cut(1, p[1]) * self.tiles[0] + self.cut(0, p[0])) % shards
        })
    }

    fn mirrors(&self, world: &World, e: Entity, shards: usize, out: &mut Vec<usize>) {
        if let Some(p) = (self.pos)(world, e) {
            let r = self.range;
            for row in self.cut(1, p[1] - r)..=self.cut(1, p[1] + r) {
                for col in self.cut(0, p[0] - r)..=self.cut(0, p[0] + r) {
                    out.push((row * self.tiles[0] + col) % shards);
                }
            }
        }
    }
}

/// The root of `e`'s tree (`e` itself without a parent, or without a hierarchy): what a
/// partition is asked about, and what a tree moves with.
pub(crate) fn root_of(world: &World, e: Entity) -> Entity {
    if world.has_hierarchy() {
        world.ancestors(e).last().unwrap_or(e)
    } else {
        e
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model;

    fn x_of(w: &World, e: Entity) -> Option<f32> {
        w.get::<model::Pos>(e).map(|p| p.0[0])
    }

    fn pos_of(w: &World, e: Entity) -> Option<[f32; 2]> {
        w.get::<model::Pos>(e).map(|p| p.0)
    }

    /// A world with one agent at each of `at`.
    fn agents(at: &[[f32; 2]]) -> (World, Vec<Entity>) {
        let mut w = World::new();
        model::register(&mut w);
        let es = at
            .iter()
            .map(|&p| w.spawn((model::Pos(p), model::Vel([0.0; 2]), model::Hp(1.0))))
            .collect();
        (w, es)
    }

    fn mirrors(p: &impl Partition, w: &World, e: Entity, shards: usize) -> Vec<usize> {
        let mut out = Vec::new();
        p.mirrors(w, e, shards, &mut out);
        out.sort_unstable();
        out.dedup();
        out
    }

    #[test]
    fn bands_own_by_x_and_mirror_within_range() {
        let bands = Bands::new(0.0, 100.0, 5.0, x_of);
        let (w, es) = agents(&[
            [-10.0, 0.0],
            [24.0, 0.0],
            [26.0, 0.0],
            [50.0, 0.0],
            [1e9, 0.0],
        ]);
        let owners: Vec<usize> = es.iter().map(|&e| bands.owner(&w, e, 4)).collect();
        assert_eq!(owners, [0, 0, 1, 2, 3], "outer bands reach to infinity");
        assert_eq!(mirrors(&bands, &w, es[1], 4), [0, 1]);
        assert_eq!(mirrors(&bands, &w, es[3], 4), [1, 2]); // 45..55 touches band 1 at 45
        assert_eq!(mirrors(&bands, &w, es[0], 4), [0]);
        // One shard: everything on it.
        assert!(es.iter().all(|&e| bands.owner(&w, e, 1) == 0));
        // No position: shard 0, no mirrors.
        let mut w2 = World::new();
        model::register(&mut w2);
        let bare = w2.spawn((model::Hp(1.0),));
        assert_eq!(bands.owner(&w2, bare, 4), 0);
        assert!(mirrors(&bands, &w2, bare, 4).is_empty());
    }

    #[test]
    fn tiles_own_by_tile_and_mirror_the_tiles_around() {
        // 2 × 2 tiles of 50 × 50.
        let tiles = Tiles::new([0.0, 0.0], [100.0, 100.0], 2, 2, 3.0, pos_of);
        let (w, es) = agents(&[[10.0, 10.0], [60.0, 10.0], [10.0, 60.0], [49.0, 49.0]]);
        let owners: Vec<usize> = es.iter().map(|&e| tiles.owner(&w, e, 4)).collect();
        assert_eq!(owners, [0, 1, 2, 0]);
        // The corner agent is within range of all four tiles.
        assert_eq!(mirrors(&tiles, &w, es[3], 4), [0, 1, 2, 3]);
        assert_eq!(mirrors(&tiles, &w, es[0], 4), [0]);
        // Three shards: tile 3 goes to shard 0.
        assert_eq!(mirrors(&tiles, &w, es[3], 3), [0, 1, 2]);
    }

    #[test]
    #[should_panic(expected = "bands need finite min < max")]
    fn empty_bands_are_refused() {
        let _ = Bands::new(1.0, 1.0, 0.0, x_of);
    }

    #[test]
    #[should_panic(expected = "mirror range must be finite and not negative")]
    fn a_negative_range_is_refused() {
        let _ = Tiles::new([0.0; 2], [1.0; 2], 1, 1, -1.0, pos_of);
    }
}
