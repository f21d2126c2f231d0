//! A replay whose divergence is structural (an entity spawned or despawned on one side
//! only) names the first entity that differs and who spawned or despawned it — not only
//! "entity slot count: 58 vs 59".

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use runsync::prelude::*;
use runsync::{CommandKind, Replay};
use serde::{Deserialize, Serialize};

#[derive(Component, Checksum, Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[component(output = i64, merge = merge::sum, save, checksum, debug)]
struct Hp(i64);
impl std::ops::AddAssign<i64> for Hp {
    fn add_assign(&mut self, d: i64) {
        self.0 += d;
    }
}

/// A spark: lives one frame.
#[derive(Component, Checksum, Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[component(merge = merge::last, save, checksum, debug)]
struct Spark(u8);

/// Ten units losing 1 hp a frame. `flaky` makes "sparks" spawn a spark in frame 6
/// (`Time::frame` 5), which "reaper" despawns in frame 7: a transient entity that leaves
/// the live entities as they were, and one more entity slot. `doomed` makes "reaper" also
/// despawn unit 4 in frame 6. The spark's id goes into `spark`.
fn game(
    workers: usize,
    flaky: Arc<AtomicBool>,
    doomed: Arc<AtomicBool>,
    spark: Arc<Mutex<Option<Entity>>>,
) -> Runtime {
    let mut w = World::new();
    w.register_default::<Hp>();
    w.register_default::<Spark>();
    for i in 0..10 {
        w.spawn((Hp(100 + i),));
    }
    let mut rt = Runtime::builder().workers(workers).build(w);
    rt.add_system_named("hurt", |w: &World, out: &mut Output| {
        for (e, _) in w.query::<(&Hp,)>() {
            out.write::<Hp>(e, -1);
        }
    });
    rt.add_system_named("sparks", move |w: &World, out: &mut Output| {
        if flaky.load(Ordering::Relaxed) && w.resource::<Time>().frame == 5 {
            *spark.lock().unwrap() = Some(out.spawn((Spark(1),)));
        }
    });
    rt.add_system_named("reaper", move |w: &World, out: &mut Output| {
        for (e, _) in w.query::<(&Spark,)>() {
            out.despawn(e);
        }
        if doomed.load(Ordering::Relaxed) && w.resource::<Time>().frame == 5 {
            if let Some((e, _)) = w.query::<(&Hp,)>().nth(4) {
                out.despawn(e);
            }
        }
    });
    rt
}

fn record(frames: u64, keyframes: u64) -> Replay {
    let mut rt = game(2, Arc::default(), Arc::default(), Arc::default());
    rt.record_replay_keyframes::<()>(keyframes).unwrap();
    for _ in 0..frames {
        rt.frame();
    }
    let mut file = Vec::new();
    rt.finish_replay(&mut file).unwrap();
    Replay::read(&mut file.as_slice()).unwrap()
}

#[test]
fn a_transient_entity_is_named_with_the_system_that_spawned_it() {
    // Keyframes every 10 frames: at frame 10 the spark is long gone and the live
    // entities are the same on both sides; only the allocator differs.
    let replay = record(12, 10);
    for workers in [1, 2, 8] {
        let spawned = Arc::default();
        let flaky = Arc::new(AtomicBool::new(true));
        let mut rt = game(workers, flaky, Arc::default(), Arc::clone(&spawned));
        let report = rt.play_replay::<()>(&replay).unwrap();
        let d = report.divergence.expect("the spark diverges");
        assert_eq!((d.frame, d.compared_at), (6, Some(10)), "{d}");
        let spark = spawned.lock().unwrap().expect("the replay spawned a spark");
        let diff = d.difference.as_ref().unwrap();
        assert_eq!(
            diff.entity(),
            Some(spark),
            "the first entity that differs: {d}"
        );
        let named = format!("{spark:?}");
        assert!(
            diff.to_string()
                .contains(&format!("{named} spawned, then despawned")),
            "the difference names it and what became of it: {diff}"
        );
        let p = d.provenance.as_ref().expect("who spawned it");
        assert_eq!(p.entity(), spark);
        assert_eq!(p.frame(), Some(6), "the frame it was spawned in: {p}");
        let who: Vec<_> = p
            .commands()
            .iter()
            .map(|c| (&*c.system_name, c.kind))
            .collect();
        assert_eq!(who, [("sparks", CommandKind::Spawn)], "{p}");
        let text = d.to_string();
        assert!(
            text.contains(&named) && text.contains("spawn by sparks"),
            "{text}"
        );
    }
}

#[test]
fn an_entity_despawned_on_one_side_only_is_named_with_who_despawned_it() {
    let replay = record(12, 1);
    let doomed = Arc::new(AtomicBool::new(true));
    let mut rt = game(2, Arc::default(), doomed, Arc::default());
    let d = rt.play_replay::<()>(&replay).unwrap().divergence.unwrap();
    assert_eq!((d.frame, d.compared_at), (6, Some(6)), "{d}");
    let diff = d.difference.as_ref().unwrap();
    let unit = diff.entity().unwrap();
    assert!(
        diff.to_string().contains("alive only on the left"),
        "{diff}"
    );
    let p = d.provenance.as_ref().unwrap();
    assert_eq!(p.entity(), unit);
    let who: Vec<_> = p
        .commands()
        .iter()
        .map(|c| (&*c.system_name, c.kind))
        .collect();
    assert_eq!(who, [("reaper", CommandKind::Despawn)], "{p}");
    assert!(d.to_string().contains("despawn by reaper"), "{d}");
}
