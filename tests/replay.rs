//! Replays (issue 17): recorded at 2 workers, replayed at 1 and 8; a deliberately
//! injected divergence reported at the right frame, entity, component and systems.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use runsync::prelude::*;
use runsync::{Replay, ReplayError};
use serde::{Deserialize, Serialize};

#[derive(Component, Checksum, Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[component(output = i64, merge = merge::sum, save, checksum, debug)]
struct Hp(i64);
impl std::ops::AddAssign<i64> for Hp {
    fn add_assign(&mut self, d: i64) {
        self.0 += d;
    }
}

#[derive(Component, Checksum, Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[component(merge = merge::last, save, checksum, debug)]
struct Pos(f32, f32);

#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
struct Pad {
    push: i64,
    fire: bool,
}

fn pad(f: u64) -> Pad {
    Pad {
        push: (f as i64 * 37) % 11 - 5,
        fire: f % 4 == 1,
    }
}

/// The game; `cheat` makes the "poison" system hit entity 3 harder from frame 8 on (`Time::frame` 7) —
/// the divergence a replay must find.
fn game(workers: usize, cheat: Arc<AtomicBool>) -> Runtime {
    let mut w = World::new();
    w.register_default::<Hp>();
    w.register_default::<Pos>();
    for i in 0..20 {
        w.spawn((Hp(100 + i), Pos(i as f32, 0.0)));
    }
    let mut rt = Runtime::builder().workers(workers).build(w);
    rt.add_system_named("move", |w: &World, out: &mut Output| {
        let p = w.input::<Pad>();
        for (e, (pos,)) in w.query::<(&Pos,)>() {
            out.write::<Pos>(e, Pos(pos.0 + p.push as f32 * 0.5, pos.1 + 1.0));
        }
    });
    rt.add_system_named("poison", move |w: &World, out: &mut Output| {
        let frame = w.resource::<Time>().frame;
        for (e, (hp,)) in w.query::<(&Hp,)>() {
            let hit = if cheat.load(Ordering::Relaxed) && frame >= 7 && e.index() == 3 {
                -9
            } else {
                -1
            };
            if hp.0 > 0 {
                out.write::<Hp>(e, hit);
            }
        }
    });
    rt.add_system_named("spawn", |w: &World, out: &mut Output| {
        if w.input::<Pad>().fire {
            out.spawn((Hp(5), Pos(0.0, 0.0)));
        }
    });
    rt
}

fn record(workers: usize, frames: u64, keyframes: u64) -> (Replay, Vec<u64>) {
    let mut rt = game(workers, Arc::default());
    rt.frame_with(pad(0)); // recording may start mid-game
    rt.record_replay_keyframes::<Pad>(keyframes).unwrap();
    let mut sums = Vec::new();
    for f in 1..=frames {
        rt.frame_with(pad(f));
        sums.push(rt.world().checksum());
    }
    let mut file = Vec::new();
    rt.finish_replay(&mut file).unwrap();
    (Replay::read(&mut file.as_slice()).unwrap(), sums)
}

#[test]
fn a_replay_recorded_at_2_workers_replays_at_1_and_8() {
    let (replay, sums) = record(2, 30, 10);
    assert_eq!(replay.len(), 30);
    for (i, &s) in sums.iter().enumerate() {
        assert_eq!(replay.checksum(i), Some(s));
    }
    for workers in [1, 2, 8] {
        let mut rt = game(workers, Arc::default());
        let report = rt.play_replay::<Pad>(&replay).unwrap();
        assert!(report.is_identical(), "{workers}: {:?}", report.divergence);
        assert_eq!(report.frames, 30);
        assert_eq!(rt.frame_count(), 31);
        assert_eq!(rt.world().checksum(), *sums.last().unwrap());
    }
}

#[test]
fn an_injected_divergence_is_reported_at_its_frame_entity_and_systems() {
    let (replay, _) = record(2, 20, 1);
    let cheat = Arc::new(AtomicBool::new(true));
    let mut rt = game(8, cheat);
    let report = rt.play_replay::<Pad>(&replay).unwrap();
    let d = report.divergence.expect("the cheat diverges");
    assert_eq!(d.frame, 8, "{d}");
    assert_eq!(
        report.frames, 7,
        "the replay's first 7 frames replayed: frames 2..=8"
    );
    assert_eq!(d.compared_at, Some(8));
    let diff = d.difference.as_ref().unwrap();
    let e = diff.entity().unwrap();
    assert_eq!(e.index(), 3);
    assert_eq!(diff.component(), Some(std::any::type_name::<Hp>()));
    // Recorded: 103 - 8 frames of 1 = 95; replayed: frame 8 (`Time::frame` 7) hit 9, so 87.
    assert_eq!(diff.values(), Some(("Hp(95)", "Hp(87)")));
    let p = d.provenance.as_ref().unwrap();
    assert_eq!(p.frame(), Some(8));
    let hp = &p.components()[0];
    assert_eq!(
        (hp.before.as_deref(), hp.after.as_deref()),
        (Some("Hp(96)"), Some("Hp(87)"))
    );
    let writes: Vec<_> = hp
        .writes
        .iter()
        .map(|w| (&*w.system_name, w.value.as_deref()))
        .collect();
    assert_eq!(writes, [("poison", Some("-9"))]);
    let text = d.to_string();
    assert!(
        text.contains("diverged at frame 8") && text.contains("poison"),
        "{text}"
    );
}

#[test]
fn sparse_keyframes_compare_at_the_next_one() {
    let (replay, _) = record(2, 20, 5);
    let mut rt = game(1, Arc::new(AtomicBool::new(true)));
    let d = rt.play_replay::<Pad>(&replay).unwrap().divergence.unwrap();
    assert_eq!((d.frame, d.compared_at), (8, Some(11)));
    let diff = d.difference.unwrap();
    assert_eq!(diff.entity().map(|e| e.index()), Some(3));
    assert_eq!(diff.values(), Some(("Hp(92)", "Hp(60)")));
    assert_eq!(
        d.provenance.unwrap().components()[0].writes[0]
            .value
            .as_deref(),
        Some("-9")
    );
    // No keyframes: the frame and the checksums only.
    let (replay, _) = record(2, 20, 0);
    let mut rt = game(1, Arc::new(AtomicBool::new(true)));
    let d = rt.play_replay::<Pad>(&replay).unwrap().divergence.unwrap();
    assert_eq!((d.frame, d.compared_at), (8, None));
    assert!(d.difference.is_none() && d.provenance.is_none());
}

#[test]
fn bad_replays_are_errors() {
    let (replay, _) = record(1, 3, 1);
    let mut rt = game(1, Arc::default());
    assert!(matches!(
        rt.play_replay::<u8>(&replay),
        Err(ReplayError::InputType { .. })
    ));
    let mut file = Vec::new();
    let mut rec = game(1, Arc::default());
    assert!(matches!(
        rec.finish_replay(&mut file),
        Err(runsync::SaveError::NotRecording)
    ));
    rec.record_replay::<Pad>().unwrap();
    rec.frame_with(pad(1));
    rec.finish_replay(&mut file).unwrap();
    for len in 0..file.len() {
        assert!(Replay::read(&mut &file[..len]).is_err(), "{len}");
    }
    // A world with other registrations cannot play it.
    let mut other = Runtime::builder().workers(1).build(World::new());
    assert!(matches!(
        other.play_replay::<Pad>(&replay),
        Err(ReplayError::Load(_))
    ));
}
