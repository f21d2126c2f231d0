//! Replays: recorded at 2 workers, replayed at 1 and 8; a deliberately
//! injected divergence reported at the right frame, entity, component and systems.
//! Files that lie: every flipped bit refused when read (a damaged keyframe
//! named), counts that lie refused before anything is allocated by them, a recording
//! that contradicts itself called corrupt; version 2 (no checks) still plays.

mod sections;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use runsync::prelude::*;
use runsync::{LoadError, Replay, ReplayError};
use sections::{reseal, sections, version_2};
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

/// A replay file of `frames` frames, a keyframe every `keyframes`, and the checksum
/// after each frame.
fn record_file(workers: usize, frames: u64, keyframes: u64) -> (Vec<u8>, Vec<u64>) {
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
    (file, sums)
}

fn record(workers: usize, frames: u64, keyframes: u64) -> (Replay, Vec<u64>) {
    let (file, sums) = record_file(workers, frames, keyframes);
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

fn u64_at(file: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(file[at..at + 8].try_into().unwrap())
}

/// Where frame `k`'s recorded checksum is in a replay file (the layout of
/// `src/runtime/replay/file.rs`): the frames section (after the header's), its count,
/// then per frame a presence byte, the input (a `u64` length and bytes) and the checksum.
fn checksum_at(file: &[u8], k: usize) -> usize {
    let mut at = sections(file).unwrap()[1].start + 8;
    for _ in 0..k {
        at += 1;
        at += 8 + u64_at(file, at) as usize + 8;
    }
    at += 1;
    at + 8 + u64_at(file, at) as usize
}

/// Every flipped bit of a replay file (its start, frames and keyframes) is refused when
/// it is read — a damaged keyframe too, named, before any divergence needs it.
#[test]
fn every_flipped_bit_of_a_replay_is_refused_when_read() {
    let (file, _) = record_file(1, 4, 2);
    let sections = sections(&file).unwrap();
    assert_eq!(sections.len(), 4, "header and start, frames, 2 keyframes");
    let mut named = std::collections::BTreeSet::new();
    for bit in 0..file.len() * 8 {
        let mut f = file.clone();
        f[bit / 8] ^= 1 << (bit % 8);
        match Replay::read(&mut f.as_slice()) {
            Ok(_) => panic!("bit {bit} flipped: the replay was read"),
            Err(LoadError::Corrupt { section, .. }) => {
                named.insert(section);
            }
            Err(e) => assert!(!e.to_string().is_empty()),
        }
    }
    let want = [
        "keyframe 1 of 2",
        "keyframe 2 of 2",
        "the frames",
        "the replay's header and start save",
    ];
    assert_eq!(named.iter().map(String::as_str).collect::<Vec<_>>(), want);

    // A damaged keyframe, in words.
    let mut f = file.clone();
    f[sections[3].start + 40] ^= 4;
    let e = Replay::read(&mut f.as_slice()).unwrap_err();
    assert!(
        e.to_string()
            .contains("keyframe 2 of 2 fails its integrity check"),
        "{e}"
    );
}

/// Counts and lengths in a replay that lie are refused against the bytes that are left,
/// before anything is allocated by them — as damage, and written on purpose (the checks
/// made again).
#[test]
fn counts_that_lie_in_a_replay_are_refused_before_allocating() {
    let (file, _) = record_file(1, 4, 2);
    let s = sections(&file).unwrap();
    let name = 12;
    let start = name + 8 + u64_at(&file, name) as usize;
    let fields = [
        ("the input type", name),
        ("the start save", start),
        ("the frames", s[1].start),
        ("a frame's input", s[1].start + 9),
        ("the keyframes", s[1].end - 8),
        ("a keyframe", s[2].start + 8),
    ];
    for (what, at) in fields {
        for lie in [1u64 << 40, u64::MAX, u64::MAX / 17] {
            let mut f = file.clone();
            f[at..at + 8].copy_from_slice(&lie.to_le_bytes());
            for resealed in [false, true] {
                if resealed {
                    // (Only where the trailers still tile the file.)
                    if sections::sections(&f).is_none() {
                        continue;
                    }
                    reseal(&mut f);
                }
                match Replay::read(&mut f.as_slice()) {
                    Err(LoadError::BadLength {
                        what: w, length, ..
                    }) => {
                        assert_eq!((w, length), (what, lie))
                    }
                    other => panic!("{what} = {lie}: {other:?}"),
                }
            }
        }
    }
}

/// A recording whose keyframe contradicts the checksum recorded for its own frame (an
/// edit with its checks made again) is a corrupt file, not a divergence.
#[test]
fn a_recording_that_contradicts_itself_is_corrupt() {
    let (file, _) = record_file(2, 20, 1);
    let mut f = file.clone();
    let at = checksum_at(&f, 9); // frame index 9: the tenth after the start, frame 11
    f[at] ^= 1;
    assert!(matches!(
        Replay::read(&mut f.as_slice()),
        Err(LoadError::Corrupt { section, .. }) if section == "the frames"
    ));
    reseal(&mut f);
    let replay = Replay::read(&mut f.as_slice()).unwrap();
    match game(1, Arc::default()).play_replay::<Pad>(&replay) {
        Err(e @ ReplayError::Contradiction { frame: 11, .. }) => {
            let text = e.to_string();
            assert!(
                text.contains("the replay file is corrupt: it contradicts itself")
                    && text.contains("recorded for frame 11"),
                "{text}"
            );
        }
        other => panic!("{other:?}"),
    }

    // With a keyframe every 5 frames, the checksum of frame 8 altered: the keyframe
    // after it agrees with the replay and with its own checksum. No contradiction: the
    // divergence is reported, and the report says the state was back in step.
    let (file, _) = record_file(2, 20, 5);
    let mut f = file.clone();
    let at = checksum_at(&f, 6);
    f[at] ^= 1;
    reseal(&mut f);
    let replay = Replay::read(&mut f.as_slice()).unwrap();
    let report = game(1, Arc::default()).play_replay::<Pad>(&replay).unwrap();
    let d = report.divergence.expect("frame 8's checksum differs");
    assert_eq!((d.frame, d.compared_at), (8, Some(11)));
    assert!(d.difference.is_none());
    let text = d.to_string();
    assert!(
        text.contains("the keyframe after 11 frames shows no difference, and has the checksum")
            && !text.contains("sees through"),
        "{text}"
    );
}

/// Played with the cheat on, `replay` diverges at frame 8, in entity 3 (which a
/// keyframe shows).
fn assert_the_cheat_is_found(replay: &Replay) {
    let d = game(1, Arc::new(AtomicBool::new(true)))
        .play_replay::<Pad>(replay)
        .unwrap()
        .divergence
        .unwrap();
    assert_eq!(d.frame, 8);
    assert_eq!(d.difference.unwrap().entity().map(|e| e.index()), Some(3));
}

/// The replay file as version 2 wrote it: no trailers, in the file or in its saves.
fn replay_version_2(file: &[u8]) -> Vec<u8> {
    let s = sections(file).unwrap();
    let mut v2 = Vec::new();
    // The header: magic, version, the input type, the start save.
    let name = 12 + 8 + u64_at(file, 12) as usize;
    v2.extend_from_slice(&file[..name]);
    let start = version_2(&file[name + 8..s[0].end]);
    v2.extend_from_slice(&(start.len() as u64).to_le_bytes());
    v2.extend_from_slice(&start);
    v2.extend_from_slice(&file[s[1].clone()]);
    for k in &s[2..] {
        v2.extend_from_slice(&file[k.start..k.start + 8]);
        let save = version_2(&file[k.start + 16..k.end]);
        v2.extend_from_slice(&(save.len() as u64).to_le_bytes());
        v2.extend_from_slice(&save);
    }
    v2[8..12].copy_from_slice(&2u32.to_le_bytes());
    v2
}

/// Version 2 had no integrity checks: its replays still read and play, divergence
/// reports (which load keyframes) included. Its checksums are of digest version 1.
#[test]
fn a_version_2_replay_still_plays() {
    let (mut file, _) = record_file(2, 20, 1);
    let sums = v1_sums(20);
    for (k, sum) in sums.iter().enumerate() {
        let at = checksum_at(&file, k);
        file[at..at + 8].copy_from_slice(&sum.to_le_bytes());
    }
    let v2 = replay_version_2(&file);
    let replay = Replay::read(&mut v2.as_slice()).unwrap();
    assert_eq!((replay.len(), replay.checksum_version()), (20, 1));
    assert!((0..20).all(|i| replay.checksum(i) == Some(sums[i])));
    assert_eq!(&replay.start_save()[8..12], 2u32.to_le_bytes());
    let report = game(1, Arc::default()).play_replay::<Pad>(&replay).unwrap();
    assert!(report.is_identical(), "{:?}", report.divergence);
    assert_the_cheat_is_found(&replay);
}

/// The checksums of digest version 1 ([`World::checksum_v1`]) after each frame of
/// [`record_file`]'s game: what a replay of the same frames written before digest
/// version 2 recorded.
fn v1_sums(frames: u64) -> Vec<u64> {
    let mut rt = game(1, Arc::default());
    rt.frame_with(pad(0));
    (1..=frames)
        .map(|f| {
            rt.frame_with(pad(f));
            rt.world().checksum_v1()
        })
        .collect()
}

/// A replay written by runsync before digest version 2 (format version 4, recorded from
/// this file's game with `record_file(2, 24, 8)`): its checksums are of version 1. It
/// reads, plays identical (checked with `checksum_v1`), and a divergence in it is still
/// found, with the values.
#[test]
fn a_replay_recorded_with_the_first_checksum_still_plays() {
    let file = include_bytes!("data/replay-checksum-v1.bin");
    assert_eq!(file[8..12], 4u32.to_le_bytes());
    let replay = Replay::read(&mut &file[..]).unwrap();
    assert_eq!((replay.len(), replay.checksum_version()), (24, 1));
    assert_eq!(replay.checksum(23), Some(0xe2f4_2f2b_6618_c12c));
    assert_eq!(
        (0..24)
            .map(|i| replay.checksum(i).unwrap())
            .collect::<Vec<_>>(),
        v1_sums(24)
    );
    for workers in [1, 4] {
        let mut rt = game(workers, Arc::default());
        let report = rt.play_replay::<Pad>(&replay).unwrap();
        assert!(report.is_identical(), "{:?}", report.divergence);
        assert_eq!(rt.world().checksum_v1(), 0xe2f4_2f2b_6618_c12c);
        assert_ne!(rt.world().checksum(), 0xe2f4_2f2b_6618_c12c);
    }
    assert_the_cheat_is_found(&replay);
    // Written again, it keeps its version (its checksums are version 1's).
    let mut again = Vec::new();
    replay.write(&mut again).unwrap();
    assert_eq!(again, file);
    // A replay recorded now is of version 3.
    let (new, _) = record(1, 3, 1);
    assert_eq!(new.checksum_version(), 3);
}

/// The checksums of digest version 2 ([`World::checksum_v2`]) after each frame of
/// [`record_file`]'s game.
fn v2_sums(frames: u64) -> Vec<u64> {
    let mut rt = game(1, Arc::default());
    rt.frame_with(pad(0));
    (1..=frames)
        .map(|f| {
            rt.frame_with(pad(f));
            rt.world().checksum_v2()
        })
        .collect()
}

/// A replay written by runsync before digest version 3 (format version 8, recorded from
/// this file's game with `record_file(2, 24, 8)`): its checksums are of version 2, a word
/// per `f32`. It reads, plays identical at 1 and 4 workers (checked with `checksum_v2`,
/// its keyframes too), a divergence in it is still found, and written again it is the
/// same bytes.
#[test]
fn a_replay_recorded_with_the_second_checksum_still_plays() {
    let file = include_bytes!("data/replay-checksum-v2.bin");
    assert_eq!(file[8..12], 8u32.to_le_bytes());
    let replay = Replay::read(&mut &file[..]).unwrap();
    assert_eq!((replay.len(), replay.checksum_version()), (24, 2));
    assert_eq!(replay.checksum(23), Some(0xb5cb_658a_e8d7_614a));
    assert_eq!(
        (0..24)
            .map(|i| replay.checksum(i).unwrap())
            .collect::<Vec<_>>(),
        v2_sums(24)
    );
    for workers in [1, 4] {
        let mut rt = game(workers, Arc::default());
        let report = rt.play_replay::<Pad>(&replay).unwrap();
        assert!(report.is_identical(), "{:?}", report.divergence);
        assert_eq!(rt.world().checksum_v2(), 0xb5cb_658a_e8d7_614a);
        assert_ne!(rt.world().checksum(), 0xb5cb_658a_e8d7_614a);
    }
    assert_the_cheat_is_found(&replay);
    let mut again = Vec::new();
    replay.write(&mut again).unwrap();
    assert_eq!(again, file);
    // A replay recorded now has version 12 and checksums of version 3, which differ
    // from version 2's on this game's `f32` pairs.
    let (new_file, sums) = record_file(2, 24, 8);
    assert_eq!(new_file[8..12], 12u32.to_le_bytes());
    assert_eq!(sums.len(), 24);
    assert!(sums.iter().zip(v2_sums(24)).all(|(v3, v2)| *v3 != v2));
}

/// Replay versions no runsync writes (10, 11: one bit from 8 and 9, and 10 one bit from
/// the unchecked 2) and newer ones are refused with the versions this build reads; a
/// checked version flipped into another checked one (13 into 12 or 9) fails the
/// header's own check.
#[test]
fn unknown_and_flipped_replay_versions_are_refused() {
    let (file, _) = record_file(1, 4, 2);
    assert_eq!(file[8..12], 12u32.to_le_bytes());
    for v in [10u32, 11, 14, 15, 3] {
        let mut f = file.clone();
        f[8..12].copy_from_slice(&v.to_le_bytes());
        match Replay::read(&mut f.as_slice()) {
            Err(
                e @ LoadError::Version {
                    found,
                    supported: 13,
                },
            ) if found == v => {
                assert!(e.to_string().contains("2, 4, 8, 9, 12 and 13"), "{e}");
            }
            other => panic!("version {v}: {other:?}"),
        }
    }
    for v in [13u32, 8] {
        let mut f = file.clone();
        f[8..12].copy_from_slice(&v.to_le_bytes());
        assert!(
            matches!(
                Replay::read(&mut f.as_slice()),
                Err(LoadError::Corrupt { .. } | LoadError::BadData { .. })
            ),
            "version {v} read"
        );
    }
}
