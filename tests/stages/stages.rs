//! Stages within a frame: several Run/Sync supersteps, each stage's systems seeing the
//! world the previous stage's Sync left. Checked against a sequential reference (plain
//! Rust applying the same rules stage by stage) at 1, 2 and 8 workers, and under
//! `--features single-threaded` (CI runs that too); plus what stages mean for failures,
//! change marks, spawn ids, provenance, `advance`, `set_enabled`, stats and rollback.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use runsync::prelude::*;
use runsync::{CommandKind, StageStats};
use serde::{Deserialize, Serialize};

const WORKERS: [usize; 3] = [1, 2, 8];

/// Position, moved by summed deltas.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
struct Pos(i64);
impl Component for Pos {
    type Output = i64;
}
impl Checksum for Pos {
    fn checksum(&self, h: &mut Checksummer) {
        self.0.checksum(h);
    }
}
impl std::ops::AddAssign<i64> for Pos {
    fn add_assign(&mut self, d: i64) {
        self.0 += d;
    }
}

/// Velocity, set whole.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
struct Vel(i64);
impl Component for Vel {
    type Output = Vel;
}
impl Checksum for Vel {
    fn checksum(&self, h: &mut Checksummer) {
        self.0.checksum(h);
    }
}

/// An order-sensitive fold, written in two stages.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
struct Hits(u64);
impl Component for Hits {
    type Output = u64;
}
impl Checksum for Hits {
    fn checksum(&self, h: &mut Checksummer) {
        self.0.checksum(h);
    }
}
fn fold_hits(h: &mut u64, x: u64) {
    *h = h.wrapping_mul(31).wrapping_add(x);
}

/// Spawned by one stage, despawned by a later one.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
struct Marker(u64);
impl Component for Marker {
    type Output = Marker;
}
impl Checksum for Marker {
    fn checksum(&self, h: &mut Checksummer) {
        self.0.checksum(h);
    }
}

fn world(n: i64) -> (World, Vec<Entity>) {
    let mut w = World::new();
    w.register::<Pos>(merge::sum);
    w.register::<Vel>(merge::last);
    w.register::<Hits>(|h: &mut Hits, xs: &[u64]| xs.iter().for_each(|&x| fold_hits(&mut h.0, x)));
    w.register::<Marker>(merge::last);
    w.snapshotting::<Pos>()
        .snapshotting::<Vel>()
        .snapshotting::<Hits>()
        .snapshotting::<Marker>();
    w.checksumming::<Pos>()
        .checksumming::<Vel>()
        .checksumming::<Hits>()
        .checksumming::<Marker>();
    let es = (0..n)
        .map(|i| w.spawn((Pos(i * 7 - 3 * n), Vel(i % 5 - 2), Hits(0))))
        .collect();
    (w, es)
}

/// Stage "move": positions step by velocity (and even indices one more). Stage "collide":
/// reads the moved positions: bounces, spawns a marker past the right wall, despawns
/// markers whose value is a multiple of 3, and writes `Hits` from two systems. Stage
/// "tally": writes `Hits` again, with the number of markers the collide stage left.
fn game(workers: usize, n: i64) -> (Runtime, Vec<Entity>) {
    let (w, es) = world(n);
    let mut rt = Runtime::builder()
        .workers(workers)
        .stages(["move", "collide", "tally"])
        .build(w);
    let (collide, tally) = (
        rt.stage_id("collide").unwrap(),
        rt.stage_id("tally").unwrap(),
    );
    // Registered out of stage order: ids are registration order, merge order within a
    // stage too.
    rt.add_system_named_to(tally, "tally", |w: &World, out: &mut Output| {
        let markers = w.query::<(&Marker,)>().count() as u64;
        for (e, _) in w.query::<(&Hits,)>() {
            out.write::<Hits>(e, markers);
        }
    });
    rt.add_system_named("step", |w: &World, out: &mut Output| {
        for (e, (_, v)) in w.query::<(&Pos, &Vel)>() {
            out.write::<Pos>(e, v.0);
        }
    });
    rt.add_system_named_to(collide, "bounce", |w: &World, out: &mut Output| {
        let frame = w.resource::<Time>().frame;
        for (e, (p, v)) in w.query::<(&Pos, &Vel)>() {
            if p.0 > 50 {
                out.write::<Vel>(e, Vel(-v.0.abs()));
                out.spawn((Marker(frame * 1000 + p.0 as u64),));
            } else if p.0 < -50 {
                out.write::<Vel>(e, Vel(v.0.abs()));
            }
            out.write::<Hits>(e, 7);
        }
    });
    rt.add_system_named("nudge", |w: &World, out: &mut Output| {
        for (e, _) in w.query::<(&Pos,)>() {
            if e.index() % 2 == 0 {
                out.write::<Pos>(e, 1);
            }
        }
    });
    rt.add_system_named_to(collide, "sweep", |w: &World, out: &mut Output| {
        for (e, (p,)) in w.query::<(&Pos,)>() {
            out.write::<Hits>(e, p.0 as u64 & 0xff);
        }
        for (e, (m,)) in w.query::<(&Marker,)>() {
            if m.0 % 3 == 0 {
                out.despawn(e);
            }
        }
    });
    (rt, es)
}

/// The same game, one stage at a time, in plain Rust.
#[derive(Clone, Debug, Default, PartialEq)]
struct Reference {
    /// Per original entity (by index): pos, vel, hits.
    ents: BTreeMap<u32, (i64, i64, u64)>,
    markers: Vec<u64>,
}

impl Reference {
    fn of(es: &[Entity], n: i64) -> Self {
        let ents = (0..n)
            .map(|i| (es[i as usize].index(), (i * 7 - 3 * n, i % 5 - 2, 0)))
            .collect();
        Reference {
            ents,
            markers: Vec::new(),
        }
    }

    /// One frame; `frame` is `Time::frame` during it. Returns per-stage (merged, spawned,
    /// despawned).
    fn frame(&mut self, frame: u64) -> [(u64, u64, u64); 3] {
        // move
        let mut merged0 = 0;
        for (&i, (p, v, _)) in &mut self.ents {
            *p += *v;
            merged0 += 1;
            if i % 2 == 0 {
                *p += 1;
                merged0 += 1;
            }
        }
        // collide: bounce, then sweep, in registration order; commands: bounce's spawns,
        // then sweep's despawns (of markers that existed before this stage).
        let mut merged1 = 0;
        let mut spawned = Vec::new();
        for (p, v, h) in self.ents.values_mut() {
            if *p > 50 {
                *v = -v.abs();
                spawned.push(frame * 1000 + *p as u64);
                merged1 += 1;
            } else if *p < -50 {
                *v = v.abs();
                merged1 += 1;
            }
            fold_hits(h, 7);
            fold_hits(h, *p as u64 & 0xff);
            merged1 += 2;
        }
        let before = self.markers.len();
        self.markers.retain(|m| m % 3 != 0);
        let despawned = (before - self.markers.len()) as u64;
        let born = spawned.len() as u64;
        self.markers.extend(spawned);
        // tally
        let markers = self.markers.len() as u64;
        for (_, _, h) in self.ents.values_mut() {
            fold_hits(h, markers);
        }
        [
            (merged0, 0, 0),
            (merged1, born, despawned),
            (self.ents.len() as u64, 0, 0),
        ]
    }

    fn check(&self, w: &World, es: &[Entity]) {
        for &e in es {
            let got = (
                w.get::<Pos>(e).unwrap().0,
                w.get::<Vel>(e).unwrap().0,
                w.get::<Hits>(e).unwrap().0,
            );
            assert_eq!(got, self.ents[&e.index()], "{e:?}");
        }
        let mut markers: Vec<u64> = w.query::<(&Marker,)>().map(|(_, (m,))| m.0).collect();
        markers.sort_unstable();
        let mut want = self.markers.clone();
        want.sort_unstable();
        assert_eq!(markers, want);
    }
}

fn stage_figures(s: &StageStats) -> (u64, u64, u64) {
    (s.merged, s.spawned, s.despawned)
}

#[test]
fn every_stage_writes_and_sees_the_stage_before_at_any_worker_count() {
    const N: i64 = 40;
    const FRAMES: u64 = 30;
    let mut sums: Vec<Vec<u64>> = Vec::new();
    for workers in WORKERS {
        let (mut rt, es) = game(workers, N);
        let mut reference = Reference::of(&es, N);
        let mut trace = Vec::new();
        for f in 0..FRAMES {
            let want = reference.frame(f);
            rt.frame();
            reference.check(rt.world(), &es);
            let st = rt.stats();
            let got: Vec<_> = st.stages.iter().map(stage_figures).collect();
            assert_eq!(got, want, "frame {}", f + 1);
            assert!(st.stages.iter().all(|s| s.ran));
            assert_eq!(st.merged, want.iter().map(|s| s.0).sum::<u64>());
            assert_eq!(st.spawned, want[1].1);
            assert_eq!(st.despawned, want[1].2);
            assert_eq!(st.run, st.stages.iter().map(|s| s.run).sum());
            assert_eq!(st.sync, st.stages.iter().map(|s| s.sync).sum());
            trace.push(rt.world().checksum());
        }
        assert!(
            !reference.markers.is_empty(),
            "the scenario spawns markers that live on"
        );
        sums.push(trace);
    }
    assert!(
        sums.windows(2).all(|w| w[0] == w[1]),
        "1, 2 and 8 workers agree frame by frame"
    );
}

#[test]
fn stages_are_listed_and_systems_keep_their_ids() {
    let (rt, _) = game(1, 4);
    assert_eq!(rt.stage_count(), 3);
    let names: Vec<&str> = (0..3).map(|k| rt.stage_name(stage(k))).collect();
    assert_eq!(names, ["move", "collide", "tally"]);
    let listed: Vec<(usize, &str, usize)> = rt
        .systems()
        .map(|s| (s.id.index(), s.name, s.stage.index()))
        .collect();
    assert_eq!(
        listed,
        [
            (0, "tally", 2),
            (1, "step", 0),
            (2, "bounce", 1),
            (3, "nudge", 0),
            (4, "sweep", 1)
        ]
    );
    let stats = rt.stats();
    assert!(
        stats
            .systems
            .iter()
            .enumerate()
            .all(|(i, s)| s.id.index() == i)
    );
    assert_eq!(stats.systems[0].stage, stage(2));
    assert_eq!(stats.stages[1].name.as_ref(), "collide");
    // The default: one stage, "main".
    let one = Runtime::builder().build(World::new());
    assert_eq!(
        (one.stage_count(), one.stage_name(StageId::FIRST)),
        (1, "main")
    );
}

fn stage(k: u32) -> StageId {
    let rt = Runtime::builder()
        .stages(["a", "b", "c"])
        .workers(1)
        .build(World::new());
    rt.stage_id(["a", "b", "c"][k as usize]).unwrap()
}

#[test]
#[should_panic(expected = "already a stage named `move`")]
fn stage_names_are_unique() {
    let mut rt = Runtime::builder().stages(["move"]).build(World::new());
    rt.add_stage("move");
}

#[test]
#[should_panic(expected = "already a stage named `a`")]
fn builder_stage_names_are_unique() {
    Runtime::builder().stages(["a", "b", "a"]);
}

#[test]
#[should_panic(expected = "at least one stage")]
fn a_frame_has_a_stage() {
    Runtime::builder().stages(Vec::<String>::new());
}

#[test]
#[should_panic(expected = "is not a stage of this runtime (1 stages)")]
fn a_foreign_stage_is_a_clear_error() {
    let mut rt = Runtime::builder().build(World::new());
    rt.add_system_to(stage(2), |_: &World, _: &mut Output| {});
}

/// A game whose stage `fail` (of 3) panics when the flag says so.
fn failing(workers: usize, fail: Arc<Mutex<Option<u32>>>) -> (Runtime, Vec<Entity>) {
    let (w, es) = world(6);
    let mut rt = Runtime::builder()
        .workers(workers)
        .stages(["a", "b", "c"])
        .build(w);
    for k in 0..3u32 {
        let fail = fail.clone();
        rt.add_system_named_to(
            stage(k),
            format!("s{k}"),
            move |w: &World, out: &mut Output| {
                for (e, _) in w.query::<(&Pos,)>() {
                    out.write::<Pos>(e, 10i64.pow(k));
                }
                out.spawn((Marker(u64::from(k)),));
                if *fail.lock().unwrap() == Some(k) {
                    panic!("stage {k} fails");
                }
            },
        );
    }
    (rt, es)
}

#[test]
fn a_panic_in_a_later_stage_keeps_the_earlier_stages_and_counts_the_frame() {
    let mut sums = Vec::new();
    for workers in WORKERS {
        let fail = Arc::new(Mutex::new(None));
        let (mut rt, es) = failing(workers, fail.clone());
        *fail.lock().unwrap() = Some(1);
        let err = rt.try_frame().unwrap_err();
        match &err {
            FrameError::SystemPanicked {
                name,
                message,
                stage: s,
                ..
            } => {
                assert_eq!((&**name, &**message, *s), ("s1", "stage 1 fails", stage(1)));
            }
            other => panic!("unexpected {other:?}"),
        }
        assert_eq!(err.stage(), stage(1));
        assert!(err.counts_as_done());
        let text = err.to_string();
        assert!(
            text.contains("during Run of stage 1")
                && text.contains("earlier stages' changes stay applied")
                && text.contains("later stages did not run"),
            "{text}"
        );
        assert_eq!(rt.frame_count(), 1, "the frame counts as done");
        assert_eq!(rt.world().resource::<Time>().frame, 1);
        // Stage a's write and spawn are in; b's are not; c never ran. world(6): Pos is
        // i * 7 - 18, and stage a adds 1.
        for (i, &e) in es.iter().enumerate() {
            assert_eq!(rt.world().get::<Pos>(e), Some(&Pos(i as i64 * 7 - 18 + 1)));
        }
        let markers: Vec<u64> = rt
            .world()
            .query::<(&Marker,)>()
            .map(|(_, (m,))| m.0)
            .collect();
        assert_eq!(markers, [0]);
        let st = rt.stats();
        assert_eq!(
            st.stages.iter().map(|s| s.ran).collect::<Vec<_>>(),
            [true, true, false]
        );
        assert_eq!(st.stages[1].sync, Duration::ZERO);
        assert_eq!((st.spawned, st.stages[0].spawned), (1, 1));
        assert!(st.systems[1].ran && !st.systems[2].ran);
        assert_eq!(st.systems[2].writes, 0);

        let failed = rt.world().checksum();

        // The next frame runs all three stages.
        *fail.lock().unwrap() = None;
        rt.frame();
        assert_eq!(rt.frame_count(), 2);
        assert!(rt.stats().stages.iter().all(|s| s.ran));
        assert_eq!(rt.world().query::<(&Marker,)>().count(), 4);
        for (i, &e) in es.iter().enumerate() {
            assert_eq!(
                rt.world().get::<Pos>(e),
                Some(&Pos(i as i64 * 7 - 18 + 112))
            );
        }
        sums.push((failed, rt.world().checksum()));
    }
    // What the failure leaves (reservations included) is the same at any worker count.
    assert!(sums.windows(2).all(|w| w[0] == w[1]), "{sums:?}");
}

#[test]
fn a_panic_in_the_first_stage_leaves_the_world_as_it_was() {
    for workers in WORKERS {
        let fail = Arc::new(Mutex::new(Some(0)));
        let (mut rt, _) = failing(workers, fail.clone());
        let (before, sum) = (rt.world().len(), rt.world().checksum());
        let err = rt.try_frame().unwrap_err();
        assert_eq!(err.stage(), StageId::FIRST);
        assert!(!err.counts_as_done());
        assert!(err.to_string().contains("the world is unchanged"), "{err}");
        assert_eq!((rt.world().len(), rt.world().checksum()), (before, sum));
        assert_eq!(rt.frame_count(), 0);
        assert_eq!(
            rt.stats().frame,
            1,
            "the stats describe frame 1, which failed"
        );
        assert!(rt.stats().stages[1..].iter().all(|s| !s.ran));
    }
}

#[test]
fn a_merge_panic_in_a_later_stage_stops_the_frame_there() {
    let (mut w, es) = world(3);
    #[derive(Clone, Copy, Debug, PartialEq)]
    struct Fragile(u32);
    impl Component for Fragile {
        type Output = u32;
    }
    w.register::<Fragile>(|_: &mut Fragile, _: &[u32]| panic!("fragile"));
    w.insert(es[0], Fragile(0));
    let mut rt = Runtime::builder()
        .workers(2)
        .stages(["a", "b", "c"])
        .build(w);
    let e = es[0];
    rt.add_system_to(stage(1), move |_: &World, out: &mut Output| {
        out.write::<Fragile>(e, 1);
        out.write::<Pos>(e, 100);
    });
    rt.add_system_to(stage(2), move |_: &World, out: &mut Output| {
        out.write::<Pos>(e, 1000);
    });
    let err = rt.try_frame().unwrap_err();
    assert!(
        matches!(&err, FrameError::MergePanicked { stage: s, .. } if *s == stage(1)),
        "{err:?}"
    );
    assert!(err.to_string().contains("during Sync of stage 1"), "{err}");
    assert_eq!(
        rt.world().get::<Pos>(e),
        Some(&Pos(-9 + 100)),
        "b merged, c never ran"
    );
    assert_eq!(rt.frame_count(), 1);
    assert!(!rt.stats().stages[2].ran);
}

#[test]
fn try_advance_charges_a_frame_that_failed_in_a_later_stage() {
    let fail = Arc::new(Mutex::new(Some(2)));
    let (mut rt, _) = failing(1, fail.clone());
    // Two steps of 60 Hz (the default).
    let err = rt.try_advance(Duration::from_secs(1) / 30).unwrap_err();
    assert_eq!(err.stage(), stage(2));
    assert_eq!(rt.frame_count(), 1, "the failed frame counts");
    *fail.lock().unwrap() = None;
    // The failed frame's step was charged once: one step is left to run.
    assert_eq!(rt.try_advance(Duration::ZERO).unwrap().frames, 1);
    assert_eq!(rt.frame_count(), 2);
}

/// Change marks with two stages: each system sees each change once, the first time it
/// runs after the Sync that made it; between frames, the whole last frame's marks.
#[test]
fn change_marks_are_seen_once_by_each_stage() {
    let (w, es) = world(4);
    let mut rt = Runtime::builder().workers(2).stages(["a", "b"]).build(w);
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let log = seen.clone();
    let (e0, e1) = (es[0], es[1]);
    rt.add_system_named("a", move |w: &World, out: &mut Output| {
        let changed: Vec<Entity> = w
            .query_filtered::<(&Pos,), Changed<Pos>>()
            .map(|(e, _)| e)
            .collect();
        let vel: Vec<Entity> = w
            .query_filtered::<(&Vel,), Changed<Vel>>()
            .map(|(e, _)| e)
            .collect();
        log.lock()
            .unwrap()
            .push(format!("a sees Pos {changed:?} Vel {vel:?}"));
        out.write::<Pos>(e0, 1);
    });
    let log = seen.clone();
    rt.add_system_named_to(stage(1), "b", move |w: &World, out: &mut Output| {
        let changed: Vec<Entity> = w
            .query_filtered::<(&Pos,), Changed<Pos>>()
            .map(|(e, _)| e)
            .collect();
        let vel: Vec<Entity> = w
            .query_filtered::<(&Vel,), Changed<Vel>>()
            .map(|(e, _)| e)
            .collect();
        log.lock()
            .unwrap()
            .push(format!("b sees Pos {changed:?} Vel {vel:?}"));
        out.write::<Vel>(e1, Vel(9));
        out.insert(e1, Marker(1));
    });
    rt.frame();
    // Between frames: the whole frame's marks, both stages'.
    assert!(rt.world().is_changed::<Pos>(e0) && rt.world().is_changed::<Vel>(e1));
    assert!(rt.world().is_added::<Marker>(e1));
    assert!(!rt.world().is_changed::<Pos>(e1));
    rt.frame();
    let s = seen.lock().unwrap();
    let all = format!("{es:?}");
    assert_eq!(
        *s,
        [
            // Frame 1: both stages see the setup spawns (neither ran since), b also a's
            // write (e0 is among the spawns).
            format!("a sees Pos {all} Vel {all}"),
            format!("b sees Pos {all} Vel {all}"),
            // Frame 2: a sees all of frame 1 (both stages); b sees this frame's a and
            // frame 1's b, made after b ran: each system sees each change once.
            format!("a sees Pos [{e0:?}] Vel [{e1:?}]"),
            format!("b sees Pos [{e0:?}] Vel [{e1:?}]"),
        ]
    );
}

#[test]
fn spawns_of_a_stage_are_alive_in_the_next_with_ids_known_at_once() {
    let mut per_workers = Vec::new();
    for workers in WORKERS {
        let (w, es) = world(2);
        let mut rt = Runtime::builder()
            .workers(workers)
            .stages(["spawn", "use"])
            .build(w);
        let ids: Arc<Mutex<Vec<Entity>>> = Arc::default();
        let seen: Arc<Mutex<Vec<Vec<Entity>>>> = Arc::default();
        let (i, s) = (ids.clone(), seen.clone());
        let parent = es[0];
        rt.add_system(move |_: &World, out: &mut Output| {
            // More than a reservation: overflow ids too.
            for k in 0..40 {
                let e = out.spawn((Marker(k),));
                i.lock().unwrap().push(e);
            }
            out.write::<Pos>(parent, 1);
        });
        let stage_use = rt.stage_id("use").unwrap();
        let i2 = ids.clone();
        rt.add_system_to(stage_use, move |w: &World, out: &mut Output| {
            let markers: Vec<Entity> = w.query::<(&Marker,)>().map(|(e, _)| e).collect();
            s.lock().unwrap().push(markers.clone());
            for &e in markers.iter().take(5) {
                out.despawn(e);
            }
            let e = out.spawn((Marker(99),));
            i2.lock().unwrap().push(e);
        });
        for _ in 0..3 {
            rt.frame();
        }
        let ids = ids.lock().unwrap().clone();
        let seen = seen.lock().unwrap().clone();
        // Stage "use" of frame 1 sees the 40 markers stage "spawn" made in that frame,
        // with the ids `spawn` returned in Run.
        assert_eq!(seen[0], ids[..40]);
        // Frame 2: the 35 left, frame 1's late spawn, and the new 40.
        assert_eq!(seen[1].len(), 35 + 1 + 40);
        assert!(seen[1].ends_with(&ids[41..81]));
        // Every id handed out is distinct, and alive unless "use" despawned it.
        let mut distinct = ids.clone();
        distinct.sort_unstable();
        distinct.dedup();
        assert_eq!(distinct.len(), ids.len());
        let alive = ids.iter().filter(|&&e| rt.world().is_alive(e)).count();
        assert_eq!(alive, 3 * 41 - 15);
        assert_eq!(rt.world().query::<(&Marker,)>().count(), alive);
        per_workers.push((ids, seen, rt.world().checksum()));
    }
    assert!(per_workers.windows(2).all(|w| w[0] == w[1]));
}

#[test]
fn provenance_records_every_stage() {
    let (mut w, es) = world(2);
    w.debugging::<Pos>();
    let e = es[1];
    let mut rt = Runtime::builder().workers(1).stages(["a", "b"]).build(w);
    rt.add_system_named("first", move |_: &World, out: &mut Output| {
        out.write::<Pos>(e, 1)
    });
    rt.add_system_named_to(stage(1), "second", move |_: &World, out: &mut Output| {
        out.write::<Pos>(e, 10);
        out.remove::<Vel>(e);
    });
    rt.watch(e);
    rt.frame();
    let p = rt.provenance(e).unwrap();
    assert_eq!(p.frame(), Some(1));
    let c = p.components();
    assert_eq!(c.len(), 2, "Pos once per stage");
    assert_eq!((c[0].stage, c[1].stage), (stage(0), stage(1)));
    assert_eq!(
        (c[0].before.as_deref(), c[0].after.as_deref()),
        (Some("Pos(1)"), Some("Pos(2)"))
    );
    assert_eq!(
        (c[1].before.as_deref(), c[1].after.as_deref()),
        (Some("Pos(2)"), Some("Pos(12)"))
    );
    assert_eq!(&*c[1].writes[0].system_name, "second");
    assert_eq!(c[1].writes[0].system, rt.system_id("second").unwrap());
    assert_eq!(p.commands().len(), 1);
    assert_eq!(p.commands()[0].stage, stage(1));
    assert!(matches!(p.commands()[0].kind, CommandKind::Remove { .. }));
    let text = p.to_string();
    assert!(text.contains("Pos(2) -> Pos(12) (stage 1)"), "{text}");
    // The next frame replaces the record.
    rt.frame();
    assert_eq!(rt.provenance(e).unwrap().components().len(), 2);
    assert_eq!(rt.provenance(e).unwrap().frame(), Some(2));
}

#[test]
fn disabled_systems_and_empty_stages() {
    let (w, es) = world(1);
    let mut rt = Runtime::builder()
        .workers(2)
        .stages(["a", "empty", "b"])
        .build(w);
    let e = es[0];
    let a = rt.add_system(move |_: &World, out: &mut Output| out.write::<Pos>(e, 1));
    rt.add_system_to(stage(2), move |_: &World, out: &mut Output| {
        out.write::<Pos>(e, 10)
    });
    rt.frame();
    assert_eq!(rt.world().get::<Pos>(e), Some(&Pos(-3 + 11)));
    rt.set_enabled(a, false);
    rt.frame();
    assert_eq!(rt.world().get::<Pos>(e), Some(&Pos(-3 + 21)));
    let st = rt.stats();
    let ran: Vec<bool> = st.stages.iter().map(|s| s.ran).collect();
    assert_eq!(
        ran,
        [false, false, true],
        "stages with no enabled system are skipped"
    );
    assert!(!st.systems[a.index()].ran);
    assert_eq!(st.stages[1].merged, 0);
}

/// Rollback across stages: snapshots between frames, a restore, and a re-run give the
/// same world after every frame.
#[test]
fn rollback_across_stages_is_bit_identical() {
    const FRAMES: u64 = 24;
    for workers in WORKERS {
        let (mut rt, _) = game(workers, 30);
        let mut sums = Vec::new();
        let mut saved = None;
        for f in 0..FRAMES {
            if f == FRAMES / 2 {
                saved = Some(rt.snapshot().unwrap());
            }
            rt.frame();
            sums.push(rt.world().checksum());
        }
        rt.restore(saved.as_ref().unwrap());
        assert_eq!(rt.frame_count(), FRAMES / 2);
        for f in FRAMES / 2..FRAMES {
            rt.frame();
            assert_eq!(rt.world().checksum(), sums[f as usize], "frame {}", f + 1);
        }
    }
}

/// A message the empty-stage game sends and reads back.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
struct Ping(u64);
impl Checksum for Ping {
    fn checksum(&self, h: &mut Checksummer) {
        self.0.checksum(h);
    }
}

/// The empty-stage game in one stage "main", with empty stages added before and after as
/// `layout` says: spawns in and past every
/// reservation, despawns whose slots respawns reuse, messages read a frame later, and
/// `Changed` read back.
fn one_stage_game(workers: usize, layout: &[&'static str]) -> Runtime {
    let (mut w, _) = world(12);
    w.register_message::<Ping>();
    w.snapshotting_message::<Ping>()
        .checksumming_message::<Ping>()
        .saving_message::<Ping>();
    w.saving::<Pos>()
        .saving::<Vel>()
        .saving::<Hits>()
        .saving::<Marker>();
    let mut rt = Runtime::builder()
        .workers(workers)
        .stages(layout.iter().copied())
        .build(w);
    let main = rt.stage_id("main").unwrap();
    rt.add_system_named_to(main, "burst", |w: &World, out: &mut Output| {
        let frame = w.resource::<Time>().frame;
        // Every third frame a burst past any reservation (overflow ids), else a few.
        let n = if frame % 3 == 1 { 40 } else { frame % 4 };
        for k in 0..n {
            out.spawn((Marker(frame * 100 + k),));
        }
        out.send(Ping(frame));
    });
    rt.add_system_named_to(main, "cull", |w: &World, out: &mut Output| {
        for (e, (m,)) in w.query::<(&Marker,)>() {
            if m.0 % 3 != 1 {
                out.despawn(e);
            }
        }
    });
    rt.add_system_named_to(main, "listen", |w: &World, out: &mut Output| {
        let heard: u64 = w.messages::<Ping>().iter().map(|p| p.0 + 1).sum();
        let changed = w.query_filtered::<(&Pos,), Changed<Pos>>().count() as u64;
        for (e, _) in w.query::<(&Hits,)>() {
            out.write::<Hits>(e, heard * 1_000 + changed);
        }
    });
    rt.add_system_named_to(main, "step", |w: &World, out: &mut Output| {
        let frame = w.resource::<Time>().frame as i64;
        for (e, (_, v)) in w.query::<(&Pos, &Vel)>() {
            if (e.index() as i64 + frame) % 3 == 0 {
                out.write::<Pos>(e, v.0);
            }
        }
    });
    rt
}

/// An empty stage anywhere in the frame changes
/// nothing a checksum, a save or a spawn id can see: every frame's checksum (which covers
/// the free list and the reserved ids), save file and set of live ids equal the one-stage
/// layout's, at 1, 2 and 8 workers; messages and `Changed` reach the readers the same.
#[test]
fn an_empty_stage_changes_nothing_a_checksum_a_save_or_a_spawn_id_sees() {
    fn trace(workers: usize, layout: &[&'static str]) -> Vec<(u64, Vec<u8>, Vec<u64>)> {
        let mut rt = one_stage_game(workers, layout);
        (0..24)
            .map(|_| {
                rt.frame();
                let w = rt.world();
                let mut save = Vec::new();
                w.save(&mut save).unwrap();
                let ids = w.query::<()>().map(|(e, ())| e.to_bits()).collect();
                (w.checksum(), save, ids)
            })
            .collect()
    }
    let reference = trace(1, &["main"]);
    let spawned: usize = reference.windows(2).filter(|p| p[0].2 != p[1].2).count();
    assert!(spawned > 20, "the game spawns and despawns every frame");
    for workers in WORKERS {
        for layout in [
            &["main"][..],
            &["main", "empty"],
            &["empty", "main"],
            &["before", "main", "after"],
        ] {
            let got = trace(workers, layout);
            for (f, (a, b)) in reference.iter().zip(&got).enumerate() {
                assert_eq!(
                    a.2, b.2,
                    "live ids, frame {f}, {layout:?}, {workers} workers"
                );
                assert_eq!(
                    a.0, b.0,
                    "checksum, frame {f}, {layout:?}, {workers} workers"
                );
                assert!(
                    a.1 == b.1,
                    "save file, frame {f}, {layout:?}, {workers} workers"
                );
            }
        }
    }
}
