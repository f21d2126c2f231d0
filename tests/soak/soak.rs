//! Soak: tens of thousands of frames of constant spawn/despawn churn. Entity counts match a
//! model every frame, and once warmed up, tables, entity slots, columns and output buffers
//! stop growing. Bounded to a few seconds.

use runsync::prelude::*;

const TARGET: usize = 300;
const FRAMES: u64 = if cfg!(miri) { 30 } else { 20_000 };
const WARMUP: u64 = FRAMES / 10;

#[derive(Clone, Copy, Debug, PartialEq)]
struct Life(i32);
impl Component for Life {
    type Output = i32;
}
impl std::ops::AddAssign<i32> for Life {
    fn add_assign(&mut self, d: i32) {
        self.0 += d;
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
struct Flag;
impl Component for Flag {
    type Output = ();
}

fn lifespan(seed: u64) -> i32 {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    x ^= x >> 29;
    (x % 40) as i32 + 1
}

#[test]
fn churn_for_tens_of_thousands_of_frames() {
    let mut w = World::new();
    w.register::<Life>(merge::sum);
    w.register::<Flag>(|_: &mut Flag, _: &[()]| {});
    for i in 0..TARGET {
        w.spawn((Life(lifespan(i as u64)),));
    }
    let mut rt = Runtime::builder().workers(2).build(w);
    // Ages everyone; despawns the dead (life reached 0 last frame).
    rt.add_system_named("age", |world: &World, out: &mut Output| {
        let mut life = out.writer::<Life>();
        for (e, (l,)) in world.query::<(&Life,)>() {
            if l.0 > 0 {
                life.write(e, -1);
            }
        }
        for (e, (l,)) in world.query::<(&Life,)>() {
            if l.0 <= 0 {
                out.despawn(e);
            }
        }
    });
    // Keeps the population at TARGET: replaces exactly those despawned this frame.
    rt.add_system_named("spawn", |world: &World, out: &mut Output| {
        let frame = world.resource::<Time>().frame;
        let dying = world
            .query::<(&Life,)>()
            .filter(|(_, (l,))| l.0 <= 0)
            .count();
        let missing = TARGET - (world.len() - dying);
        for i in 0..missing {
            let life = Life(lifespan(frame * 1000 + i as u64));
            if i % 2 == 0 {
                out.spawn((life, Flag));
            } else {
                out.spawn((life,));
            }
        }
    });
    // Toggles a zero-sized tag, moving entities between two tables.
    rt.add_system_named("toggle", |world: &World, out: &mut Output| {
        for (e, (l, f)) in world.query::<(&Life, Option<&Flag>)>() {
            match (l.0 % 7 == 0, f.is_some()) {
                (true, false) => out.insert(e, Flag),
                (false, true) if l.0 % 5 == 0 => out.remove::<Flag>(e),
                _ => {}
            }
        }
    });

    let (mut spawned, mut despawned, mut peak) = (0u64, 0u64, 0u64);
    let mut warm = None;
    for f in 0..FRAMES {
        rt.frame();
        let s = rt.stats();
        spawned += s.spawned;
        peak = peak.max(s.spawned);
        despawned += s.despawned;
        // The model: a constant population, and spawns minus despawns add up.
        assert_eq!(rt.world().len(), TARGET, "frame {f}");
        assert_eq!(TARGET as u64 + spawned - despawned, TARGET as u64);
        assert_eq!(rt.world().query::<(&Life,)>().count(), TARGET);
        if f == WARMUP {
            warm = Some(rt.memory());
        }
    }
    assert!(
        despawned > FRAMES,
        "the soak must churn (despawned {despawned})"
    );
    let warm = warm.unwrap();
    let end = rt.memory();
    assert_eq!(end.tables, warm.tables, "tables stopped growing");
    // Slots are reused: every slot is live, free or reserved for a system's spawns in Run
    // (a reservation of twice what the system spawned the frame before, at least 16), so
    // the count is bounded by the population plus the reservations at the busiest frame,
    // however long the run.
    let bound = TARGET + 2 * 16 + 3 * (16.max(2 * peak as usize));
    assert!(
        end.entity_slots <= bound,
        "entity slots are reused: {} slots for {TARGET} entities (peak {peak} spawns per \
         frame, bound {bound}; {} at frame {WARMUP})",
        end.entity_slots,
        warm.entity_slots
    );
    assert_eq!(
        end.component_bytes, warm.component_bytes,
        "columns stopped growing"
    );
    assert_eq!(
        end.output_bytes, warm.output_bytes,
        "output buffers stopped growing"
    );
}
