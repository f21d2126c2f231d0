//! Determinism: the same scenario at 1, 2 and 8 workers gives the same world, bit for bit,
//! after every frame. The per-frame digests are also checked against
//! `tests/golden/determinism.txt`, so the `single-threaded` build and release builds
//! (separate binaries) are held to the very same bits. Regenerate the file, after a change
//! that is *meant* to alter the scenario's results, with `RUNSYNC_BLESS=1 cargo test --test
//! determinism`.
//!
//! The scenario uses every kind of output: the write paths, merges of every shape,
//! structural commands, same-frame spawn ids (a child names the parent spawned just
//! before it; bursts that overflow a system's reserved ids; deferred spawns from
//! `par_for_each`) and a resource merge.

use runsync::prelude::*;

// Under Miri (which interprets every instruction) a small version of the same scenario.
const FRAMES: usize = if cfg!(miri) { 4 } else { 120 };
const INITIAL: u32 = if cfg!(miri) { 40 } else { 1500 };

/// Position; merged by an order-dependent fold (damped accumulate).
#[derive(Clone, Copy, Debug, PartialEq)]
struct P(f32, f32);
impl Component for P {
    type Output = (f32, f32);
}

/// Velocity; float sum of deltas (order-dependent in floating point).
#[derive(Clone, Copy, Debug, PartialEq)]
struct V(f32, f32);
impl Component for V {
    type Output = (f32, f32);
}

/// Energy; max of the proposals.
#[derive(Clone, Copy, Debug, PartialEq, PartialOrd)]
struct Energy(f32);
impl Component for Energy {
    type Output = Energy;
}

#[derive(Clone, Copy, Debug, PartialEq)]
struct Age(u32);
impl Component for Age {
    type Output = Age;
}

#[derive(Clone, Copy, Debug, PartialEq)]
struct Marked;
impl Component for Marked {
    type Output = ();
}

/// The parent of a child spawned in the same frame (its id comes from `Output::spawn`).
#[derive(Clone, Copy, Debug, PartialEq)]
struct Parent(Entity);
impl Component for Parent {
    type Output = Parent;
}

/// A resource every system may add to (a float sum: order-dependent bits).
#[derive(Clone, Copy, Debug, PartialEq)]
struct Census(f32);
impl Component for Census {
    type Output = f32;
}

/// A deterministic hash of a few integers to a float in [-1, 1).
fn noise(a: u32, b: u64) -> f32 {
    let mut x = (u64::from(a) << 32) ^ b ^ 0x9E37_79B9_7F4A_7C15;
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    x ^= x >> 33;
    (x >> 40) as f32 / (1u64 << 23) as f32 - 1.0
}

fn build(workers: usize) -> Runtime {
    let mut w = World::new();
    w.register::<P>(|p: &mut P, d: &[(f32, f32)]| {
        for &(dx, dy) in d {
            p.0 = p.0 * 0.999 + dx;
            p.1 = p.1 * 0.999 + dy;
        }
    });
    w.register::<V>(|v: &mut V, d: &[(f32, f32)]| {
        for &(dx, dy) in d {
            v.0 += dx;
            v.1 += dy;
        }
    });
    w.register::<Energy>(merge::max);
    w.register::<Age>(merge::last);
    w.register::<Marked>(|_: &mut Marked, _: &[()]| {});
    w.register::<Parent>(merge::last);
    w.insert_resource(Census(0.0));
    w.register_resource::<Census>(|c: &mut Census, xs: &[f32]| {
        c.0 = c.0 * 0.5 + xs.iter().sum::<f32>();
    });
    for i in 0..INITIAL {
        let p = P(noise(i, 1) * 100.0, noise(i, 2) * 100.0);
        let v = V(noise(i, 3), noise(i, 4));
        match i % 3 {
            0 => w.spawn((p, v, Energy(1.0), Age(i % 50))),
            1 => w.spawn((p, v, Age(i % 70))),
            _ => w.spawn((p, Energy(0.5))),
        };
    }
    let mut rt = Runtime::builder().workers(workers).dt(0.1).build(w);

    rt.add_system_named("move", |world: &World, out: &mut Output| {
        // Whole-column outputs: must merge exactly like a `write` loop in query order.
        let dt = world.resource::<Time>().dt;
        out.write_each::<P, (&V,)>(|_, (v,)| (v.0 * dt, v.1 * dt));
    });
    rt.add_system_named("attract", |_: &World, out: &mut Output| {
        out.par_for_each::<(&P, Option<&V>)>(|e, (p, v), out| {
            if v.is_some() {
                out.write::<V>(e, (-p.0 * 0.001, -p.1 * 0.001));
            }
            out.write_resource::<Census>(p.0 * 1e-3);
            if e.index() % 97 == 0 && p.0 > 0.0 {
                // Ids chosen in Sync, in chunk order.
                out.spawn_deferred((P(p.1, p.0), Age(3)));
            }
        });
    });
    rt.add_system_named("jitter", |world: &World, out: &mut Output| {
        let frame = world.resource::<Time>().frame;
        for (e, (_, _)) in world.query::<(&P, &V)>() {
            let n = noise(e.index(), frame);
            out.write::<V>(e, (n * 0.3, -n * 0.2));
            if e.index() % 4 == 0 {
                out.write::<P>(e, (n, n * 0.5));
            }
        }
    });
    rt.add_system_named("energy", |world: &World, out: &mut Output| {
        let frame = world.resource::<Time>().frame;
        for (e, (en, p)) in world.query::<(&Energy, &P)>() {
            out.write::<Energy>(e, Energy(en.0 * 0.99));
            out.write::<Energy>(e, Energy(noise(e.index(), frame + 7).abs() + p.0 * 1e-4));
        }
    });
    rt.add_system_named("age-fill", |_: &World, out: &mut Output| {
        // Overwritten by "age" below wherever both write (last wins, by registration).
        out.write_each::<Age, (&Age,)>(|e, (a,)| Age(a.0 + e.index() % 2));
    });
    rt.add_system_named("age", |world: &World, out: &mut Output| {
        for (e, (a,)) in world
            .query::<(&Age,)>()
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
        {
            out.write::<Age>(e, Age(a.0 + 1));
        }
    });
    rt.add_system_named("lifecycle", |world: &World, out: &mut Output| {
        let frame = world.resource::<Time>().frame;
        let mut alive = 0u32;
        for (e, (a, p, marked)) in world.query::<(&Age, &P, Option<&Marked>)>() {
            alive += 1;
            if a.0 > 60 && noise(e.index(), frame) > 0.0 {
                out.despawn(e);
                out.despawn(e); // a double despawn is a counted no-op
            } else if a.0 % 10 == 0 && marked.is_none() {
                out.insert(e, Marked);
            } else if marked.is_some() && p.0 > 0.0 {
                out.remove::<Marked>(e);
            }
        }
        out.write_resource::<Census>(alive as f32);
        let mut births = (noise(alive, frame) * 20.0 + 25.0) as u32;
        if frame % 40 == 17 {
            // A burst: more than the ids reserved for this system (overflow ids).
            births += 300;
        }
        let mut parent = None;
        for i in 0..births {
            let n = noise(i, frame);
            if i % 2 == 0 {
                parent = Some(out.spawn((P(n * 50.0, -n * 50.0), V(n, n), Age(0))));
            } else {
                let child = out.spawn((P(n, n), V(0.0, 0.0), Age(0), Energy(n.abs())));
                if let Some(p) = parent {
                    // A same-frame id, inside a component and as a command's target.
                    out.insert(child, Parent(p));
                    if i % 3 == 0 {
                        out.insert(p, Marked);
                    }
                }
            }
        }
    });
    rt.add_system_named("sparks", |world: &World, out: &mut Output| {
        // A second spawner: its reserved ids interleave with "lifecycle"'s.
        let frame = world.resource::<Time>().frame;
        for i in 0..(frame % 5) as u32 {
            let n = noise(i, frame + 99);
            let e = out.spawn((P(n, -n), Age(1)));
            out.write::<Age>(e, Age(7)); // not alive until Sync: dropped and counted
        }
    });
    rt
}

/// The whole world as bits: every entity and every component, in query order.
fn snapshot(w: &World) -> Vec<u64> {
    let mut s = Vec::new();
    s.push(u64::from(w.resource::<Census>().0.to_bits()));
    for (e, (p, v, en, a, m, parent)) in w.query::<(
        Option<&P>,
        Option<&V>,
        Option<&Energy>,
        Option<&Age>,
        Option<&Marked>,
        Option<&Parent>,
    )>() {
        s.push(e.to_bits());
        s.push(parent.map_or(u64::MAX, |p| p.0.to_bits()));
        s.push(p.map_or(u64::MAX, |p| {
            (u64::from(p.0.to_bits()) << 32) | u64::from(p.1.to_bits())
        }));
        s.push(v.map_or(u64::MAX, |v| {
            (u64::from(v.0.to_bits()) << 32) | u64::from(v.1.to_bits())
        }));
        s.push(en.map_or(u64::MAX, |x| u64::from(x.0.to_bits())));
        s.push(a.map_or(u64::MAX, |x| u64::from(x.0)));
        s.push(u64::from(m.is_some()));
    }
    s
}

fn digest(words: &[u64]) -> u64 {
    // FNV-1a over the words' bytes.
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    for w in words {
        for b in w.to_le_bytes() {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    h
}

fn run(workers: usize) -> Vec<Vec<u64>> {
    let mut rt = build(workers);
    let mut frames = vec![snapshot(rt.world())];
    let (mut churn, mut dropped) = (0, 0);
    let mut children = 0;
    for _ in 0..FRAMES {
        rt.frame();
        churn += rt.stats().spawned + rt.stats().despawned;
        dropped += rt.stats().dropped;
        let w = rt.world();
        for (e, (parent, a)) in w.query::<(&Parent, &Age)>() {
            if a.0 == 0 {
                // Spawned this frame, naming a parent spawned this frame too.
                children += 1;
                assert!(w.is_alive(parent.0) && parent.0 != e, "{e:?} -> {parent:?}");
                assert_eq!(w.get::<Age>(parent.0), Some(&Age(0)));
            }
        }
        frames.push(snapshot(w));
    }
    assert!(
        children > FRAMES,
        "children name same-frame parents ({children})"
    );
    assert!(
        churn as usize > FRAMES * 8,
        "the scenario must churn entities (got {churn})"
    );
    // (The Miri-sized run is too short for anyone to reach the despawn age.)
    assert!(dropped > 0 || cfg!(miri), "double despawns are counted");
    frames
}

#[test]
fn same_bits_at_1_2_and_8_workers_and_matches_golden() {
    let one = run(1);
    for workers in [2, 8] {
        let other = run(workers);
        for (f, (a, b)) in one.iter().zip(&other).enumerate() {
            assert!(
                a == b,
                "frame {f}: world at {workers} workers differs from 1 worker"
            );
        }
    }
    if cfg!(miri) {
        return;
    }
    let digests: Vec<String> = one.iter().map(|s| format!("{:016x}", digest(s))).collect();
    let text = digests.join("\n") + "\n";
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden/determinism.txt");
    if std::env::var_os("RUNSYNC_BLESS").is_some() {
        std::fs::write(path, &text).unwrap();
        return;
    }
    let golden = std::fs::read_to_string(path).expect(
        "missing golden file; create it with RUNSYNC_BLESS=1 cargo test --test determinism",
    );
    for (f, (got, want)) in text.lines().zip(golden.lines()).enumerate() {
        assert_eq!(
            got,
            want,
            "frame {f} differs from the golden digest (single-threaded: {})",
            cfg!(feature = "single-threaded")
        );
    }
    assert_eq!(text.lines().count(), golden.lines().count());
}
