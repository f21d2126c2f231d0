//! Contested claims (merge::max_by_key): many predators bite the same prey; each prey's
//! merge keeps exactly one winner; only the winner gains next frame; the same winners at
//! any worker count.

use runsync::prelude::*;

#[derive(Clone, Copy, Debug, PartialEq)]
struct Claim {
    by: Option<Entity>,
    strength: u32,
}
impl Component for Claim {
    type Output = Claim;
}

#[derive(Clone, Copy, Debug, PartialEq)]
struct Energy(u32);
impl Component for Energy {
    type Output = u32;
}
impl std::ops::AddAssign<u32> for Energy {
    fn add_assign(&mut self, d: u32) {
        self.0 += d;
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
struct Hunts(Entity);
impl Component for Hunts {
    type Output = Hunts;
}

const RABBITS: u32 = 40;
const FOXES: u32 = 300;

fn run(workers: usize) -> Vec<(Entity, u32, Option<Entity>)> {
    let mut w = World::new();
    w.register::<Claim>(merge::max_by_key(|c: &Claim| {
        (c.strength, std::cmp::Reverse(c.by.map(Entity::index)))
    }));
    w.register::<Energy>(merge::sum);
    w.register::<Hunts>(merge::last);
    let rabbits: Vec<Entity> = (0..RABBITS)
        .map(|_| {
            w.spawn((Claim {
                by: None,
                strength: 0,
            },))
        })
        .collect();
    for i in 0..FOXES {
        w.spawn((Energy(i % 7), Hunts(rabbits[(i * 13 % RABBITS) as usize])));
    }
    let mut rt = Runtime::builder().workers(workers).build(w);
    // Every fox claims its prey with its energy as the bid (in parallel chunks too).
    rt.add_system(|_: &World, out: &mut Output| {
        out.par_for_each::<(&Hunts, &Energy)>(|fox, (h, e), out| {
            out.write::<Claim>(
                h.0,
                Claim {
                    by: Some(fox),
                    strength: e.0,
                },
            );
        });
    });
    // The winner named by last frame's claim eats.
    rt.add_system(|w: &World, out: &mut Output| {
        for (fox, (h,)) in w.query::<(&Hunts,)>() {
            if w.get::<Claim>(h.0).and_then(|c| c.by) == Some(fox) {
                out.write::<Energy>(fox, 10);
            }
        }
    });
    for _ in 0..5 {
        rt.frame();
    }
    let world = rt.world();
    // One winner per rabbit: it is the strongest claimant (smallest index among equals).
    for &r in &rabbits {
        let claim = *world.get::<Claim>(r).unwrap();
        let claimants: Vec<(Entity, u32)> = world
            .query::<(&Hunts, &Energy)>()
            .filter(|(_, (h, _))| h.0 == r)
            .map(|(f, (_, e))| (f, e.0))
            .collect();
        if claimants.is_empty() {
            continue;
        }
        let best = claimants.iter().map(|c| c.1).max().unwrap();
        let winner = claimants
            .iter()
            .filter(|c| c.1 == best)
            .map(|c| c.0)
            .min_by_key(|e| e.index())
            .unwrap();
        // The claim was merged from last frame's energies; the winner has gained since,
        // so it is still the strongest.
        assert_eq!(claim.by, Some(winner), "rabbit {r:?}");
    }
    world
        .query::<(&Energy, &Hunts)>()
        .map(|(f, (e, h))| (f, e.0, world.get::<Claim>(h.0).and_then(|c| c.by)))
        .collect()
}

#[test]
fn one_winner_per_prey_at_any_worker_count() {
    let one = run(1);
    // Energy only grows for winners: with 40 prey, at most 40 foxes gain per frame.
    let gained = one.iter().filter(|(_, e, _)| *e >= 10).count();
    assert!(
        gained > 0 && gained <= RABBITS as usize,
        "{gained} foxes gained"
    );
    assert_eq!(run(2), one);
    assert_eq!(run(8), one);
}
