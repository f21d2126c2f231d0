//! Edits made between frames ([`Runtime::edit`]) are part of a replay: written into the
//! frame after them (format version 13; a replay without edits is version 12, as before
//! edits existed), applied again when played, so the replay reproduces them. Edit
//! records that lie are refused, when read or when played, and never panic or allocate
//! by a lying count.

use super::sections;

use runsync::prelude::*;
use runsync::{ComponentId, Edit, LoadError, Replay, ReplayError};
use sections::{reseal, sections};
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
struct Name(u32);

fn game() -> Runtime {
    let mut w = World::new();
    w.register_default::<Hp>();
    w.register_default::<Name>();
    for i in 0..8 {
        w.spawn((Hp(100 + i), Name(i as u32)));
    }
    let mut rt = Runtime::builder().workers(2).build(w);
    rt.add_system_named("poison", |w: &World, out: &mut Output| {
        for (e, (_,)) in w.query::<(&Hp,)>() {
            out.write::<Hp>(e, -1);
        }
    });
    rt
}

fn value<C: Component + Serialize>(rt: &Runtime, c: C) -> (ComponentId, Vec<u8>) {
    let mut bytes = Vec::new();
    let id = rt.world().encode_component(&c, &mut bytes).unwrap();
    (id, bytes)
}

fn entity(index: u32) -> Entity {
    Entity::from_bits(u64::from(index) | 1 << 32).unwrap()
}

/// A replay of 6 frames with four edits before frame 3 and one before frame 5; the
/// edits of frame 3 and the final checksum.
fn record_file() -> (Vec<u8>, Vec<Edit>, u64) {
    let (file, edits, end, _) = record_file_with_v2_sums();
    (file, edits, end)
}

/// [`record_file`], with each frame's checksum of digest version 2
/// ([`World::checksum_v2`]), what a replay of version 9 recorded.
fn record_file_with_v2_sums() -> (Vec<u8>, Vec<Edit>, u64, Vec<u64>) {
    let mut rt = game();
    let mut v2 = Vec::new();
    rt.record_replay_keyframes::<()>(2).unwrap();
    rt.frame();
    v2.push(rt.world().checksum_v2());
    rt.frame();
    v2.push(rt.world().checksum_v2());
    let (hp, name) = (value(&rt, Hp(0)).0, value(&rt, Name(0)).0);
    let edits = vec![
        Edit::Insert {
            entity: entity(1),
            components: vec![value(&rt, Hp(5000))],
        },
        Edit::Remove {
            entity: entity(2),
            components: vec![hp],
        },
        Edit::Spawn {
            components: vec![value(&rt, Hp(7)), value(&rt, Name(99))],
        },
        Edit::Despawn { entity: entity(3) },
    ];
    for edit in &edits {
        rt.edit(edit).unwrap();
    }
    rt.frame();
    v2.push(rt.world().checksum_v2());
    rt.frame();
    v2.push(rt.world().checksum_v2());
    rt.edit(&Edit::Remove {
        entity: entity(1),
        components: vec![name],
    })
    .unwrap();
    rt.frame();
    v2.push(rt.world().checksum_v2());
    rt.frame();
    v2.push(rt.world().checksum_v2());
    assert_eq!(rt.world().get::<Hp>(entity(1)), Some(&Hp(5000 - 4)));
    assert_eq!(rt.world().get::<Name>(entity(1)), None);
    let mut file = Vec::new();
    rt.finish_replay(&mut file).unwrap();
    (file, edits, rt.world().checksum(), v2)
}

fn version(file: &[u8]) -> u32 {
    u32::from_le_bytes(file[8..12].try_into().unwrap())
}

fn u64_at(file: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(file[at..at + 8].try_into().unwrap())
}

/// Where frame `k`'s edits start in a version 9 or 13 file: the frames section, its count, then
/// per frame a presence byte, the input (a `u64` length and bytes), the checksum, the edits.
fn edits_at(file: &[u8], k: usize) -> usize {
    let mut at = sections(file).unwrap()[1].start + 8;
    for i in 0..=k {
        at += 1;
        at += 8 + u64_at(file, at) as usize + 8;
        if i < k {
            at = skip_edits(file, at);
        }
    }
    at
}

/// The end of the edits starting at `at` (the layout of `src/world/edit.rs`).
fn skip_edits(file: &[u8], mut at: usize) -> usize {
    let n = u64_at(file, at);
    at += 8;
    for _ in 0..n {
        let tag = file[at];
        at += 1;
        if tag != 2 {
            at += 8; // the entity
        }
        if tag == 3 {
            continue;
        }
        let k = u64_at(file, at);
        at += 8;
        for _ in 0..k {
            at += 4;
            if tag != 1 {
                at += 8 + u64_at(file, at) as usize;
            }
        }
    }
    at
}

#[test]
fn a_replay_holds_the_edits_between_its_frames_and_plays_them() {
    let (file, edits, end) = record_file();
    assert_eq!(version(&file), 13);
    let replay = Replay::read(&mut file.as_slice()).unwrap();
    assert_eq!(replay.len(), 6);
    assert_eq!(
        replay.edits(2),
        edits.as_slice(),
        "made after frame 2, before 3"
    );
    assert_eq!(replay.edits(4).len(), 1);
    assert!([0, 1, 3, 5, 6].iter().all(|&i| replay.edits(i).is_empty()));
    let mut again = game();
    let report = again.play_replay::<()>(&replay).unwrap();
    assert!(report.is_identical(), "{:?}", report.divergence);
    assert_eq!(again.world().checksum(), end);
    assert_eq!(again.world().get::<Hp>(entity(1)), Some(&Hp(5000 - 4)));
    // Written again, it is the same file.
    let mut written = Vec::new();
    replay.write(&mut written).unwrap();
    assert_eq!(written, file);

    // A replay without edits is written as before edits existed.
    let mut rt = game();
    rt.record_replay::<()>().unwrap();
    rt.frame();
    let mut plain = Vec::new();
    rt.finish_replay(&mut plain).unwrap();
    assert_eq!(version(&plain), 12);
    assert!(
        Replay::read(&mut plain.as_slice())
            .unwrap()
            .edits(0)
            .is_empty()
    );

    // The edits matter: without them the same frames diverge at frame 3.
    let mut stripped = Replay::new::<()>(replay.start_save().to_vec());
    for i in 0..replay.len() {
        stripped
            .push_frame::<()>(None, replay.checksum(i).unwrap())
            .unwrap();
    }
    let report = game().play_replay::<()>(&stripped).unwrap();
    assert_eq!(report.divergence.map(|d| d.frame), Some(3));
}

/// A replay with edits written before digest version 3 (format version 9) holds
/// checksums of digest version 2: it reads as such, plays identical, and is written
/// again as the same bytes; the same file with version 3's checksums diverges at once.
#[test]
fn a_replay_with_edits_and_the_second_checksum_still_plays() {
    let (file, _, end, v2) = record_file_with_v2_sums();
    let as_version_9 = |sums: &[u64]| {
        let mut f = file.clone();
        f[8..12].copy_from_slice(&9u32.to_le_bytes());
        for (k, sum) in sums.iter().enumerate() {
            let at = edits_at(&f, k) - 8;
            f[at..at + 8].copy_from_slice(&sum.to_le_bytes());
        }
        reseal(&mut f);
        f
    };
    let old = as_version_9(&v2);
    let replay = Replay::read(&mut old.as_slice()).unwrap();
    assert_eq!((replay.len(), replay.checksum_version()), (6, 2));
    let mut again = game();
    let report = again.play_replay::<()>(&replay).unwrap();
    assert!(report.is_identical(), "{:?}", report.divergence);
    assert_eq!(again.world().checksum(), end);
    let mut written = Vec::new();
    replay.write(&mut written).unwrap();
    assert_eq!(written, old);
    // Version 3's checksums under version 9: checked as version 2's, they differ from
    // the first frame on, and the keyframe after frame 2 (which matches the replayed
    // state) contradicts its recorded checksum.
    let v3: Vec<u64> = (0..6)
        .map(|i| {
            Replay::read(&mut file.as_slice())
                .unwrap()
                .checksum(i)
                .unwrap()
        })
        .collect();
    assert!(v3.iter().zip(&v2).all(|(a, b)| a != b));
    let mislabelled = Replay::read(&mut as_version_9(&v3).as_slice()).unwrap();
    let played = game().play_replay::<()>(&mislabelled);
    assert!(
        matches!(
            played,
            Err(runsync::ReplayError::Contradiction { frame: 2, .. })
        ),
        "{played:?}"
    );
}

/// Every flipped bit of a replay with edits is refused when read.
#[test]
fn every_flipped_bit_of_its_edits_is_refused_when_read() {
    let (file, _, _) = record_file();
    let from = edits_at(&file, 2);
    let to = skip_edits(&file, from);
    for bit in from * 8..to * 8 {
        let mut f = file.clone();
        f[bit / 8] ^= 1 << (bit % 8);
        assert!(
            Replay::read(&mut f.as_slice()).is_err(),
            "bit {bit} flipped: the replay was read"
        );
    }
}

/// Edit records written to lie (their checks made again): counts are refused before
/// anything is allocated by them; unknown tags and ids that are not entities when read;
/// what only the world can check (types, values, live entities) when played, as
/// [`ReplayError::Edit`] naming the frame. Every byte of the edits, set to every
/// interesting value, reads and plays to an error or a report: never a panic.
#[test]
fn edit_records_that_lie_are_refused_and_never_panic() {
    let (file, _, _) = record_file();
    let at = edits_at(&file, 2);
    let patch = |at: usize, bytes: &[u8]| {
        let mut f = file.clone();
        f[at..at + bytes.len()].copy_from_slice(bytes);
        reseal(&mut f);
        f
    };
    for lie in [1u64 << 40, u64::MAX, u64::MAX / 9] {
        // The edit count, and the first edit's (an insert's) component count.
        for (what, field) in [("a frame's edits", at), ("an edit's components", at + 17)] {
            let f = patch(field, &lie.to_le_bytes());
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
    let f = patch(at + 8, &[7]);
    let e = Replay::read(&mut f.as_slice()).unwrap_err();
    assert!(e.to_string().contains("edit tag 7"), "{e}");
    let f = patch(at + 9, &[1, 0, 0, 0, 0, 0, 0, 0]);
    let e = Replay::read(&mut f.as_slice()).unwrap_err();
    assert!(e.to_string().contains("not an entity id"), "{e}");

    let plays = |f: &[u8]| -> Result<bool, ReplayError> {
        let replay = Replay::read(&mut &f[..])?;
        Ok(game().play_replay::<()>(&replay)?.is_identical())
    };
    let edit_error = |f: &[u8], words: &str| match plays(f) {
        Err(ReplayError::Edit { frame: 3, error }) => {
            assert!(error.to_string().contains(words), "{error}")
        }
        other => panic!("{words}: {other:?}"),
    };
    // The insert's entity: dead; its type: not registered; its value: not an `Hp`.
    edit_error(
        &patch(at + 9, &entity(40).to_bits().to_le_bytes()),
        "not alive",
    );
    edit_error(&patch(at + 25, &[200, 0, 0, 0]), "not registered");
    assert_eq!(u64_at(&file, at + 29), 2, "`Hp(5000)` is two bytes");
    edit_error(&patch(at + 37, &[0xff, 0xff]), "Hp");

    // Every byte of the edits of frame 3, set to each of a few values.
    let end = skip_edits(&file, at);
    for i in at..end {
        for b in [0u8, 1, 2, 3, 0x7f, 0x80, 0xff] {
            let f = patch(i, &[b]);
            let _ = plays(&f);
        }
    }
}
