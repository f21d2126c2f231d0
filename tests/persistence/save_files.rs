//! Save files: `World::save` / `World::load`, `Runtime::save` / `load`. Round
//! trips at 1, 2 and 8 workers (the same checksum, and the same next 100 frames) of a
//! world with serde types and a plain-data one (`Pos`, `save_pod`), and a corpus of bad
//! files built here, each a typed error naming what is wrong — never a
//! panic — that leaves the world as it was. Integrity: every flipped bit of a
//! save is refused, none loads as another world; edits made on purpose (the checks made
//! again, [`reseal`]) still meet every check of what the file means; version 2 (no
//! checks) still loads.

use super::sections;

use runsync::prelude::*;
use runsync::{LoadError, SaveError};
use sections::{TRAILER, reseal, sections, version_2};
use serde::{Deserialize, Serialize};

/// Plain data (`save_pod`): saved as its bytes. (`Serialize` only for the test of a world
/// that opts it in through serde instead.)
#[derive(
    Component,
    Checksum,
    Clone,
    Copy,
    Debug,
    PartialEq,
    Serialize,
    Deserialize,
    bytemuck::Pod,
    bytemuck::Zeroable,
)]
#[component(merge = merge::last, snapshot, checksum, save_pod)]
#[repr(C)]
struct Pos(f32, f32);

#[derive(Component, Checksum, Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[component(output = i32, merge = merge::sum, snapshot, checksum, save)]
struct Hp(i32);
impl std::ops::AddAssign<i32> for Hp {
    fn add_assign(&mut self, d: i32) {
        self.0 += d;
    }
}

#[derive(Component, Checksum, Clone, Debug, PartialEq, Serialize, Deserialize)]
#[component(merge = merge::last, snapshot, checksum, save)]
struct Name(String);

#[derive(Component, Checksum, Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[component(merge = merge::last, snapshot, checksum, save)]
struct Flag(bool);

/// A resource systems write.
#[derive(Component, Checksum, Clone, Debug, PartialEq, Serialize, Deserialize)]
#[component(output = u64)]
struct Score(u64);

fn world() -> World {
    let mut w = World::new();
    w.register_default::<Pos>();
    w.register_default::<Hp>();
    w.register_default::<Name>();
    w.register_default::<Flag>();
    w.register_resource::<Score>(|s: &mut Score, d: &[u64]| s.0 += d.iter().sum::<u64>());
    w.snapshotting_resource::<Score>()
        .checksumming_resource::<Score>()
        .saving_resource::<Score>();
    w.insert_resource(Score(0));
    w
}

/// `world()` with `entities` entities of three kinds.
fn populate(mut w: World, entities: u32) -> World {
    for i in 0..entities {
        let p = Pos(i as f32, -(i as f32));
        match i % 3 {
            0 => w.spawn((p, Hp(10 + i as i32))),
            1 => w.spawn((p, Hp(5), Name(format!("n{i}")))),
            _ => w.spawn((p, Flag(i % 2 == 0))),
        };
    }
    w
}

fn game(workers: usize, entities: u32) -> Runtime {
    let w = populate(world(), entities);
    let mut rt = Runtime::builder().workers(workers).build(w);
    rt.add_system_named("move", |w: &World, out: &mut Output| {
        for (e, (p,)) in w.query::<(&Pos,)>() {
            out.write::<Pos>(e, Pos(p.0 + p.1 * 0.5, p.1 - 0.25));
        }
    });
    rt.add_system_named("hurt", |w: &World, out: &mut Output| {
        let t = w.resource::<Time>().frame;
        for (e, (hp,)) in w.query::<(&Hp,)>() {
            if hp.0 <= 0 {
                out.despawn(e);
            } else if (e.index() as u64 + t) % 4 == 0 {
                out.write::<Hp>(e, -3);
            }
        }
    });
    rt.add_system_named("spawn", |w: &World, out: &mut Output| {
        let t = w.resource::<Time>().frame;
        if t % 3 == 0 {
            out.spawn((Pos(t as f32, 1.0), Hp(4), Name(format!("s{t}"))));
            out.write_resource::<Score>(t);
        }
    });
    rt.add_system_named("changed", |w: &World, out: &mut Output| {
        // Reads change marks: a save must keep them for the next frame to agree.
        for (e, _) in w.query_filtered::<(&Hp,), Changed<Hp>>() {
            if w.has::<Name>(e) {
                out.write::<Name>(e, Name(format!("c{}", e.index())));
            }
        }
    });
    rt
}

/// A message of the two-stage game.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
struct Ping(u32);

/// A game in two stages, with a message type: once it has run a frame, its runtime
/// saves are version 5 (which stage's Sync made each mark and delivered each message).
/// Stage `a` moves, hurts and sends; stage `b` spawns and reads the pings and the marks.
fn staged_game(entities: u32) -> Runtime {
    let mut w = populate(world(), entities);
    w.register_message::<Ping>();
    w.saving_message::<Ping>();
    let mut rt = Runtime::builder().workers(1).stages(["a", "b"]).build(w);
    let (a, b) = (rt.stage_id("a").unwrap(), rt.stage_id("b").unwrap());
    rt.add_system_named_to(a, "move", |w: &World, out: &mut Output| {
        let t = w.resource::<Time>().frame;
        for (e, (p,)) in w.query::<(&Pos,)>() {
            if (e.index() as u64 + t) % 2 == 0 {
                out.write::<Pos>(e, Pos(p.0 + 1.0, p.1));
            }
        }
        out.send(Ping(t as u32));
    });
    rt.add_system_named_to(a, "hurt", |w: &World, out: &mut Output| {
        for (e, (_,)) in w.query_filtered::<(&Hp,), Changed<Pos>>() {
            out.write::<Hp>(e, -1);
            out.send_to(e, Ping(e.index()));
        }
    });
    rt.add_system_named_to(b, "spawn", |w: &World, out: &mut Output| {
        let t = w.resource::<Time>().frame;
        if t % 2 == 0 {
            out.spawn((Pos(t as f32, 1.0), Hp(4), Name(format!("s{t}"))));
        }
        out.write_resource::<Score>(w.messages::<Ping>().len() as u64);
    });
    rt.add_system_named_to(b, "changed", |w: &World, out: &mut Output| {
        for (e, _) in w.query_filtered::<(&Hp,), Changed<Hp>>() {
            if w.has::<Name>(e) {
                out.write::<Name>(e, Name(format!("c{}", e.index())));
            }
        }
    });
    rt
}

fn save(rt: &Runtime) -> Vec<u8> {
    let mut file = Vec::new();
    rt.save(&mut file).unwrap();
    file
}

#[test]
fn round_trips_give_the_same_world_and_the_same_next_100_frames() {
    let mut reference: Option<Vec<u64>> = None;
    for workers in [1, 2, 8] {
        let mut rt = game(workers, 60);
        for _ in 0..15 {
            rt.frame();
        }
        let file = save(&rt);
        let mut loaded = game(workers, 0);
        loaded.load(&mut file.as_slice()).unwrap();
        assert_eq!(loaded.frame_count(), rt.frame_count());
        assert_eq!(
            loaded.world().resource::<Time>(),
            rt.world().resource::<Time>()
        );
        assert_eq!(loaded.world().checksum(), rt.world().checksum());
        assert!(rt.world().first_difference(loaded.world()).is_none());
        // The file of the loaded world is the same file.
        assert_eq!(save(&loaded), file, "{workers} workers");
        let mut sums = Vec::new();
        for _ in 0..100 {
            rt.frame();
            loaded.frame();
            assert_eq!(loaded.world().checksum(), rt.world().checksum());
            sums.push(rt.world().checksum());
        }
        assert!(rt.world().first_difference(loaded.world()).is_none());
        match &reference {
            None => reference = Some(sums),
            Some(r) => assert_eq!(r, &sums, "{workers} workers differ from 1"),
        }
    }
}

#[test]
fn a_world_save_loads_into_an_empty_world_and_a_full_one() {
    let mut rt = game(2, 30);
    for _ in 0..5 {
        rt.frame();
    }
    let mut file = Vec::new();
    rt.world().save(&mut file).unwrap();
    for mut into in [world(), game(1, 90).into_world()] {
        into.load(&mut file.as_slice()).unwrap();
        assert!(rt.world().first_difference(&into).is_none());
        assert_eq!(into.checksum(), rt.world().checksum());
    }
    // A world save has no frame counter: a runtime asks for a runtime save.
    let mut other = game(1, 0);
    assert!(matches!(
        other.load(&mut file.as_slice()),
        Err(LoadError::NotARuntimeSave)
    ));
}

#[test]
fn types_not_opted_in_cannot_be_saved() {
    #[derive(Clone, Copy, Debug)]
    struct Loose;
    impl Component for Loose {
        type Output = ();
    }
    let mut w = world();
    w.register::<Loose>(|_: &mut Loose, _: &[()]| {});
    let err = w.save(&mut Vec::new()).unwrap_err();
    assert!(matches!(err, SaveError::NotSaving { type_name } if type_name.ends_with("Loose")));
    assert!(err.to_string().contains("world.saving::<Loose>()"), "{err}");
    #[derive(Clone, Debug)]
    struct Wind;
    impl Component for Wind {
        type Output = ();
    }
    let mut w = world();
    w.register_resource::<Wind>(|_: &mut Wind, _: &[()]| {});
    let err = w.save(&mut Vec::new()).unwrap_err();
    assert!(
        matches!(err, SaveError::ResourceNotSaving { type_name } if type_name.ends_with("Wind"))
    );
}

/// A small valid world save and the world it came from.
fn small() -> (Vec<u8>, World) {
    let mut rt = game(1, 7);
    for _ in 0..4 {
        rt.frame();
    }
    let w = rt.into_world();
    let mut file = Vec::new();
    w.save(&mut file).unwrap();
    (file, w)
}

/// Loads `file` into a fresh world holding one entity; on an error, checks the world is
/// untouched. Never panics unless the loader does.
fn try_load(file: &[u8]) -> Result<World, LoadError> {
    let mut w = world();
    w.spawn((Hp(99),));
    let before = w.checksum();
    match w.load(&mut &file[..]) {
        Ok(()) => Ok(w),
        Err(e) => {
            assert_eq!(w.checksum(), before, "a failed load changed the world: {e}");
            assert!(!e.to_string().is_empty());
            Err(e)
        }
    }
}

fn u64_at(file: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(file[at..at + 8].try_into().unwrap())
}

#[test]
fn every_truncation_is_an_error() {
    let (file, _) = small();
    assert!(try_load(&file).is_ok());
    for len in 0..file.len() {
        let e = try_load(&file[..len]).unwrap_err();
        assert!(
            matches!(
                e,
                LoadError::Truncated { .. }
                    | LoadError::BadLength { .. }
                    | LoadError::BadMagic { .. }
            ) || matches!(e, LoadError::Decode { .. }),
            "{len}: {e}"
        );
    }
    assert!(matches!(try_load(&[]), Err(LoadError::BadMagic { .. })));
}

#[test]
fn bad_headers_and_trailing_bytes() {
    let (file, _) = small();
    let mut f = file.clone();
    f[0] = b'X';
    assert!(matches!(try_load(&f), Err(LoadError::BadMagic { .. })));
    for (v, says) in [
        (0u32, "which no runsync writes"),
        (1, "only a runsync from before version 2 can load it"),
        (3, "which no runsync writes"),
        (
            6,
            "written by a newer runsync; this build reads versions 2, 4 and 5",
        ),
    ] {
        let mut f = file.clone();
        f[8..12].copy_from_slice(&v.to_le_bytes());
        match try_load(&f) {
            Err(
                e @ LoadError::Version {
                    found,
                    supported: 5,
                },
            ) if found == v => {
                assert!(e.to_string().contains(says), "{e}")
            }
            other => panic!("version {v}: {other:?}"),
        }
    }
    // 5 is one bit from 4: a version this build reads, with checks, so the header's
    // check refuses the flip.
    let mut f = file.clone();
    f[8..12].copy_from_slice(&5u32.to_le_bytes());
    assert!(
        matches!(try_load(&f), Err(LoadError::Corrupt { ref section, .. }) if section == "the header")
    );
    let mut f = file.clone();
    f[12] = 9;
    assert!(matches!(try_load(&f), Err(LoadError::BadData { .. })));
    let mut f = file.clone();
    f.push(0);
    assert!(matches!(
        try_load(&f),
        Err(LoadError::TrailingBytes { count: 1 })
    ));
}

#[test]
fn lengths_that_lie_are_errors_not_allocations() {
    let (file, _) = small();
    // The type count, just after the header (8 + 4), the kind byte and its trailer.
    let at = 13 + TRAILER;
    assert_eq!(u64_at(&file, at), 4);
    for lie in [5, 1 << 40, u64::MAX] {
        let mut f = file.clone();
        f[at..at + 8].copy_from_slice(&lie.to_le_bytes());
        // As damage, or written on purpose with its checks made again.
        for resealed in [false, true] {
            if resealed {
                reseal(&mut f);
            }
            let e = try_load(&f).unwrap_err();
            assert!(
                matches!(
                    e,
                    LoadError::BadLength { .. }
                        | LoadError::Truncated { .. }
                        | LoadError::BadData { .. }
                        | LoadError::UnknownType { .. }
                        | LoadError::Corrupt { .. }
                ),
                "{lie}: {e}"
            );
        }
    }
    // A save is read as a stream: a count that lies is read until the input runs out
    // (nothing is allocated by it), then is an error.
    let mut f = file.clone();
    f[at..at + 8].copy_from_slice(&u64::MAX.to_le_bytes());
    assert!(matches!(try_load(&f), Err(LoadError::Truncated { .. })));
}

#[test]
fn unknown_missing_and_reordered_types() {
    let (file, _) = small();
    let mut fewer = World::new();
    fewer.register_default::<Pos>();
    fewer.register_default::<Hp>();
    fewer.register_default::<Name>();
    let e = fewer.load(&mut file.as_slice()).unwrap_err();
    assert!(
        matches!(&e, LoadError::UnknownType { name } if name.ends_with("Flag")),
        "{e}"
    );

    let mut more = world();
    more.register_default::<Extra>();
    let e = more.load(&mut file.as_slice()).unwrap_err();
    assert!(matches!(e, LoadError::MissingType { type_name } if type_name.ends_with("Extra")));

    let mut reordered = World::new();
    reordered.register_default::<Hp>();
    reordered.register_default::<Pos>();
    reordered.register_default::<Name>();
    reordered.register_default::<Flag>();
    assert!(matches!(
        reordered.load(&mut file.as_slice()),
        Err(LoadError::TypeOrder { .. })
    ));

    // Registered, not opted into saves.
    let mut w = World::new();
    w.register::<Pos>(merge::last);
    w.register_default::<Hp>();
    w.register_default::<Name>();
    w.register_default::<Flag>();
    let e = w.load(&mut file.as_slice()).unwrap_err();
    assert!(matches!(e, LoadError::NotSaving { type_name } if type_name.ends_with("Pos")));

    // Resources: the file's `Score` unknown here; a resource the file lacks.
    let mut w = world();
    let e = {
        let mut no_score = World::new();
        no_score.register_default::<Pos>();
        no_score.register_default::<Hp>();
        no_score.register_default::<Name>();
        no_score.register_default::<Flag>();
        no_score.load(&mut file.as_slice()).unwrap_err()
    };
    assert!(
        matches!(&e, LoadError::UnknownResource { name } if name.ends_with("Score")),
        "{e}"
    );
    w.saving_resource::<Extra>();
    let e = w.load(&mut file.as_slice()).unwrap_err();
    assert!(matches!(e, LoadError::MissingResource { type_name } if type_name.ends_with("Extra")));
}

#[derive(Component, Clone, Copy, Debug, Serialize, Deserialize)]
#[component(merge = merge::last, save)]
struct Extra(u8);

#[test]
fn values_that_do_not_decode_name_their_type() {
    // One entity with one `Flag`: the file ends with the column (length, one byte), an
    // empty resource list and an empty message type list, each a section with its
    // trailer.
    let mut w = World::new();
    w.register_default::<Flag>();
    w.spawn((Flag(true),));
    let mut file = Vec::new();
    w.save(&mut file).unwrap();
    // (`n`: where the column's section ends.)
    let n = file.len() - 3 * TRAILER - 16;
    let s = sections(&file).unwrap();
    assert_eq!(s[s.len() - 3].end, n, "the column's section ends there");
    assert_eq!(
        (
            u64_at(&file, n - 9),
            file[n - 1],
            u64_at(&file, n + TRAILER)
        ),
        (1, 1, 0),
        "column length, value, no resource"
    );
    let load = |f: &[u8]| {
        let mut w = World::new();
        w.register_default::<Flag>();
        w.load(&mut &f[..])
    };
    let mut f = file.clone();
    f[n - 1] = 7; // not a bool
    let e = load(&f).unwrap_err();
    assert!(
        matches!(&e, LoadError::Decode { type_name, table: Some(1), .. } if type_name.ends_with("Flag")),
        "{e}"
    );
    // A column longer than its values: bytes left over.
    let mut f = file.clone();
    f[n - 9..n - 1].copy_from_slice(&2u64.to_le_bytes());
    f.insert(n, 0);
    let e = load(&f).unwrap_err();
    assert!(e.to_string().contains("left over"), "{e}");
    // A column length past the end of the file, up to one no memory could hold: read
    // until the input runs out, never allocated.
    for lie in [1000, 1 << 40, u64::MAX] {
        let mut f = file.clone();
        f[n - 9..n - 1].copy_from_slice(&lie.to_le_bytes());
        assert!(
            matches!(load(&f), Err(LoadError::Truncated { what: "a column" })),
            "{lie}"
        );
    }
}

#[test]
fn duplicate_and_unallocated_entities() {
    let mut w = world();
    let a = w.spawn((Hp(1),));
    let b = w.spawn((Hp(2),));
    let mut file = Vec::new();
    w.save(&mut file).unwrap();
    // The table's rows: their count, then `a`, then `b`.
    let rows: Vec<u8> = [2, a.to_bits(), b.to_bits()]
        .iter()
        .flat_map(|x| x.to_le_bytes())
        .collect();
    let b_at = file.windows(24).position(|x| x == rows).unwrap() + 16;
    let at = |_: Entity| b_at;
    // (Edits made on purpose: the checks made again. As damage, each is refused as that.)
    let mut f = file.clone();
    f[at(b)..at(b) + 8].copy_from_slice(&a.to_bits().to_le_bytes());
    assert!(matches!(
        try_load(&f),
        Err(LoadError::Corrupt { section, .. }) if section == "the tables"
    ));
    reseal(&mut f);
    assert!(matches!(
        try_load(&f),
        Err(LoadError::DuplicateEntity { entity }) if entity == a
    ));
    // A row whose entity has another generation than its slot.
    let stale = Entity::from_bits(b.to_bits() + (1 << 32)).unwrap();
    let mut f = file.clone();
    f[at(b)..at(b) + 8].copy_from_slice(&stale.to_bits().to_le_bytes());
    reseal(&mut f);
    assert!(matches!(try_load(&f), Err(LoadError::BadEntities { .. })));
}

/// Every byte of a valid file set to a few values. As damage, each is refused. Written on
/// purpose (the checks made again), each load is an error or a world, and never a panic
/// (the loader's fuzz target in `fuzz/`, in miniature).
#[test]
fn single_byte_corruptions_are_refused_and_edits_never_panic() {
    let (file, original) = small();
    let (mut refused, mut errors, mut loaded) = (0, 0, 0);
    for at in 0..file.len() {
        for v in [0u8, 1, 0x7f, 0xff, file[at].wrapping_add(1)] {
            if v == file[at] {
                continue;
            }
            let mut f = file.clone();
            f[at] = v;
            assert!(try_load(&f).is_err(), "byte {at} set to {v} loaded");
            refused += 1;
            if sections(&f).is_none() {
                continue; // a trailer's length: no way to make the checks again
            }
            reseal(&mut f);
            match try_load(&f) {
                Err(_) => errors += 1,
                Ok(w) => {
                    // A value changed into another valid value: a world that runs.
                    let mut rt = Runtime::builder().workers(2).build(w);
                    rt.frame();
                    let _ = rt.world().first_difference(&original);
                    loaded += 1;
                }
            }
        }
    }
    assert!(
        refused > 2000 && errors > 0 && loaded > 0,
        "{refused} refused; edits: {errors} errors, {loaded} loaded"
    );
}

/// Flips `bit` of `file` and loads it into a fresh runtime (`runtime`) or world; the
/// error, if it is one. A load that succeeds must give the saved world exactly.
fn flip_and_load(file: &[u8], bit: usize, runtime: bool, saved: &World) -> Option<LoadError> {
    let mut f = file.to_vec();
    f[bit / 8] ^= 1 << (bit % 8);
    let loaded = if runtime {
        let mut rt = game(1, 0);
        rt.load(&mut f.as_slice()).map(|()| rt.into_world())
    } else {
        try_load(&f)
    };
    match loaded {
        Err(e) => {
            assert!(!e.to_string().is_empty());
            Some(e)
        }
        Ok(w) => {
            assert!(
                w.first_difference(saved).is_none() && w.checksum() == saved.checksum(),
                "bit {bit} flipped: the file loaded as another world, silently"
            );
            None
        }
    }
}

/// Counts errors by kind (`Corrupt` naming its section), for the failure messages.
fn tally(errors: &[LoadError]) -> std::collections::BTreeMap<String, usize> {
    let mut kinds = std::collections::BTreeMap::new();
    for e in errors {
        let kind = match e {
            LoadError::Corrupt { section, .. } => format!("Corrupt({section})"),
            e => format!("{e:?}")
                .split([' ', '(', '{'])
                .next()
                .unwrap()
                .to_owned(),
        };
        *kinds.entry(kind).or_insert(0) += 1;
    }
    kinds
}

/// Integrity: a flipped bit anywhere in a save (every bit of a small world save; a seeded
/// sample of 40 in every section and trailer of a bigger runtime save) is refused: none
/// loads, silently, as another world (nor at all). Most are caught by the integrity
/// check, named by their section; the others by a check that comes first, as the damaged
/// field is read (a length past the end, a value that does not decode).
#[test]
fn every_flipped_bit_is_refused() {
    let (file, saved) = small();
    let errors: Vec<LoadError> = (0..file.len() * 8)
        .map(|bit| flip_and_load(&file, bit, false, &saved).expect("refused"))
        .collect();
    let kinds = tally(&errors);
    // Every section of the file is named by some flip in it.
    let sections = sections(&file).unwrap();
    let named = kinds.keys().filter(|k| k.starts_with("Corrupt(")).count();
    assert!(
        named == sections.len() && damage_as_damage(&kinds),
        "{} sections; {kinds:#?}",
        sections.len()
    );

    // A runtime save of a bigger game: 40 flips in each section and trailer.
    let mut rt = game(1, 60);
    for _ in 0..15 {
        rt.frame();
    }
    let file = save(&rt);
    let saved = rt.into_world();
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = |n: usize| {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (seed >> 33) as usize % n
    };
    let mut errors = Vec::new();
    let sections = sections::sections(&file).unwrap();
    assert!(sections.len() >= 10, "{sections:?}");
    for s in &sections {
        for range in [s.clone(), s.end..s.end + TRAILER] {
            for _ in 0..40 {
                let bit = range.start * 8 + next(range.len() * 8);
                errors.push(flip_and_load(&file, bit, true, &saved).expect("refused"));
            }
        }
    }
    assert!(errors.len() >= 800);
    let kinds = tally(&errors);
    assert!(damage_as_damage(&kinds), "{kinds:#?}");
}

/// Whether the errors of flipped bits say the file is damaged: most by an integrity
/// check, the others by the damaged field as it is read (a header, a length that runs
/// past the end, a value or an encoding that does not decode) — never as a problem of
/// what a sound file means (an unallocated entity, a bad table, an unknown resource).
fn damage_as_damage(kinds: &std::collections::BTreeMap<String, usize>) -> bool {
    let read = [
        "BadMagic",
        "Version",
        "Truncated",
        "BadLength",
        "Decode",
        "BadData",
    ];
    let (mut corrupt, mut other) = (0, 0);
    for (k, &n) in kinds {
        if k.starts_with("Corrupt(") {
            corrupt += n;
        } else if read.contains(&k.as_str()) {
            other += n;
        } else {
            return false;
        }
    }
    corrupt > 2 * other
}

/// A `Corrupt` error names the section and says what to make of it.
#[test]
fn a_damaged_column_is_named() {
    let (file, _) = small();
    // `Pos` is plain data: any bytes are values, so only the check can tell.
    let section = format!("the columns of `{}`", std::any::type_name::<Pos>());
    let bits = 1.5f32.to_bits().to_le_bytes();
    let mut w = world();
    w.spawn((Pos(1.5, 1.5),));
    let mut f = Vec::new();
    w.save(&mut f).unwrap();
    let at = f
        .windows(8)
        .position(|x| x == [bits, bits].concat())
        .unwrap();
    f[at + 2] ^= 0x10;
    match try_load(&f) {
        Err(e @ LoadError::Corrupt { .. }) => {
            let text = e.to_string();
            assert!(
                text.contains(&section)
                    && text.contains("fails its integrity check")
                    && text.contains("damaged after it was written"),
                "{text}"
            );
        }
        other => panic!("{other:?}"),
    }
    drop(file);
}

/// A two-stage game's runtime save (version 5): it loads into the same stages as the
/// same file (its save again, byte for byte), and every flipped bit of it is refused —
/// none loads, silently, as another game — mostly by the integrity check of its
/// section (every section named by some flip), as version 4's are. A one-stage world's
/// save is still version 4.
#[test]
fn every_flipped_bit_of_a_version_5_save_is_refused() {
    let mut rt = staged_game(7);
    for _ in 0..5 {
        rt.frame();
    }
    let file = save(&rt);
    assert_eq!(u32::from_le_bytes(file[8..12].try_into().unwrap()), 5);
    let mut back = staged_game(0);
    back.load(&mut file.as_slice()).unwrap();
    assert!(save(&back) == file, "a version-5 save loads as itself");
    assert!(rt.world().first_difference(back.world()).is_none());
    let (world_file, _) = small();
    assert_eq!(u32::from_le_bytes(world_file[8..12].try_into().unwrap()), 4);

    let errors: Vec<LoadError> = (0..file.len() * 8)
        .map(|bit| {
            let mut f = file.clone();
            f[bit / 8] ^= 1 << (bit % 8);
            let mut rt = staged_game(0);
            match rt.load(&mut f.as_slice()) {
                Err(e) => e,
                Ok(()) => panic!("bit {bit} flipped: the file loaded"),
            }
        })
        .collect();
    let kinds = tally(&errors);
    let sections = sections(&file).unwrap();
    let named = kinds.keys().filter(|k| k.starts_with("Corrupt(")).count();
    assert!(
        named == sections.len() && damage_as_damage(&kinds),
        "{} sections {sections:?} of {}; {kinds:#?}",
        sections.len(),
        file.len()
    );
}

/// The stage parts of a version-5 save are checked for what they mean, as the rest of
/// the file is (edits made on purpose, the checks made again): a message delivery of a
/// stage past the stage count, or holding more messages than were delivered, is
/// refused, naming the message type.
#[test]
fn a_version_5_file_whose_message_deliveries_do_not_hold_together_is_refused() {
    let mut rt = staged_game(7);
    for _ in 0..5 {
        rt.frame();
    }
    let file = save(&rt);
    // The messages section ends with the last delivery: stage (u32), broadcast and
    // addressed counts (u64 each).
    let end = sections(&file).unwrap().last().unwrap().end;
    for (at, value, says) in [
        (end - 20, 7u64, "a delivery of stage 7, of 2 stages"),
        (end - 16, 1000, "delivered"),
        (end - 8, 1000, "delivered"),
    ] {
        let mut f = file.clone();
        if at == end - 20 {
            f[at..at + 4].copy_from_slice(&(value as u32).to_le_bytes());
        } else {
            f[at..at + 8].copy_from_slice(&value.to_le_bytes());
        }
        reseal(&mut f);
        match staged_game(0).load(&mut f.as_slice()) {
            Err(e @ LoadError::BadData { .. }) => {
                let text = e.to_string();
                assert!(text.contains(says) && text.contains("Ping"), "{text}")
            }
            other => panic!("{says}: {other:?}"),
        }
    }
}

/// Version 2 had no integrity checks: its saves still load, world and runtime.
#[test]
fn a_version_2_save_still_loads() {
    let (file, saved) = small();
    let loaded = try_load(&version_2(&file)).expect("a version-2 world save loads");
    assert!(loaded.first_difference(&saved).is_none());
    let mut rt = game(1, 20);
    for _ in 0..5 {
        rt.frame();
    }
    let mut back = game(1, 0);
    back.load(&mut version_2(&save(&rt)).as_slice())
        .expect("a version-2 runtime save loads");
    assert_eq!(back.frame_count(), rt.frame_count());
    assert!(rt.world().first_difference(back.world()).is_none());
    // A version-4 file whose version says 2 (two flipped bits) is not one.
    let mut f = file.clone();
    f[8..12].copy_from_slice(&2u32.to_le_bytes());
    assert!(try_load(&f).is_err());
}

#[test]
fn plain_data_is_its_bytes_and_loads_only_as_saved() {
    let mut w = World::new();
    w.register_default::<Pos>();
    let es: Vec<Entity> = (0..3)
        .map(|i| w.spawn((Pos(i as f32, f32::from_bits(0x7fc0_0001 + i)),)))
        .collect();
    let mut file = Vec::new();
    w.save(&mut file).unwrap();
    // The column is the values' bytes, NaN payloads included, at the end of the file
    // (before the empty resource and message type lists), each a section with its
    // trailer.
    let bytes: Vec<u8> = (0..3u32)
        .flat_map(|i| [(i as f32).to_bits(), 0x7fc0_0001 + i])
        .flat_map(u32::to_le_bytes)
        .collect();
    // (`n`: where the column's section ends.)
    let n = file.len() - 3 * TRAILER - 16;
    assert_eq!(&file[n - 24..n], &bytes[..]);
    assert_eq!(u64_at(&file, n - 24 - 8), 24, "the column's length");
    let make = || {
        let mut w = World::new();
        w.register_default::<Pos>();
        w
    };
    let mut loaded = make();
    loaded.load(&mut file.as_slice()).unwrap();
    assert!(w.first_difference(&loaded).is_none());
    for (i, &e) in es.iter().enumerate() {
        assert_eq!(
            loaded.get::<Pos>(e).unwrap().1.to_bits(),
            0x7fc0_0001 + i as u32
        );
    }

    // The encoding follows the type's name: plain, little-endian, 8 bytes a value.
    let name = std::any::type_name::<Pos>().as_bytes();
    let at = file.windows(name.len()).position(|x| x == name).unwrap() + name.len();
    let plain = if cfg!(target_endian = "little") { 1 } else { 2 };
    assert_eq!(file[at..at + 5], [plain, 8, 0, 0, 0]);
    // An edit of the file, checks made again (else it is refused as corrupt).
    let edit = |at: usize, v: u8| {
        let mut f = file.clone();
        f[at] = v;
        let damaged = make().load(&mut f.as_slice()).unwrap_err();
        assert!(
            matches!(&damaged, LoadError::Corrupt { section, .. } if section == "the component types"),
            "{damaged}"
        );
        reseal(&mut f);
        f
    };
    let encoding_error = |f: &[u8], w: &mut World| match w.load(&mut &f[..]) {
        Err(e @ LoadError::Encoding { .. }) => e.to_string(),
        other => panic!("{other:?}"),
    };
    // Opted in through serde here: the file's plain data does not load, and the error
    // says both ways.
    let mut serde_world = World::new();
    serde_world.register::<Pos>(merge::last);
    serde_world.saving::<Pos>();
    let e = encoding_error(&file, &mut serde_world);
    assert!(
        e.contains("saved as plain data of 8 bytes") && e.contains("serde values (`saving`)"),
        "{e}"
    );
    // Nor does a serde save load as plain data.
    let mut serde_file = Vec::new();
    serde_world.spawn((Pos(1.0, 2.0),));
    serde_world.save(&mut serde_file).unwrap();
    let e = encoding_error(&serde_file, &mut make());
    assert!(e.contains("saved as serde values"), "{e}");
    // Another size, another byte order, an unknown encoding.
    let f = edit(at + 1, 12);
    assert!(encoding_error(&f, &mut make()).contains("12 bytes a value"));
    let f = edit(at, 3 - plain);
    assert!(encoding_error(&f, &mut make()).contains("-endian"));
    // (An unknown encoding is found as it is read, before the check.)
    let mut f = file.clone();
    f[at] = 9;
    assert!(matches!(
        make().load(&mut f.as_slice()),
        Err(LoadError::BadData { .. })
    ));

    // A column whose length is not its rows' values: an error naming the type and table.
    let mut f = file.clone();
    f[n - 32..n - 24].copy_from_slice(&23u64.to_le_bytes());
    f.remove(n - 1);
    let e = make().load(&mut f.as_slice()).unwrap_err();
    assert!(
        matches!(&e, LoadError::Decode { type_name, table: Some(1), message }
            if type_name.ends_with("Pos") && message.contains("23 bytes for 3 values")),
        "{e}"
    );
}

#[test]
fn zero_sized_plain_data() {
    #[derive(Component, Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
    #[component(merge = merge::last, save_pod)]
    #[repr(C)]
    struct Marker;
    let make = || {
        let mut w = World::new();
        w.register_default::<Marker>();
        w
    };
    let mut w = make();
    let es: Vec<Entity> = (0..5).map(|_| w.spawn((Marker,))).collect();
    let mut file = Vec::new();
    w.save(&mut file).unwrap();
    let mut loaded = make();
    loaded.load(&mut file.as_slice()).unwrap();
    assert!(es.iter().all(|&e| loaded.has::<Marker>(e)));
    assert_eq!(loaded.len(), 5);
}

/// The offset of the first reservation's `spawned_last` in a world save (the layout of
/// `src/storage/save.rs`): header and kind, the type list (name, encoding), each a
/// section with its trailer; then the slots, the free list, the retired count, the
/// reservation count.
fn first_reservation_at(file: &[u8]) -> usize {
    let mut at = 13 + TRAILER;
    let types = u64_at(file, at);
    at += 8;
    for _ in 0..types {
        at += 8 + u64_at(file, at) as usize;
        at += if file[at] == 0 { 1 } else { 5 };
    }
    at += TRAILER;
    at += 8 + 4 * u64_at(file, at) as usize;
    at += 8 + 4 * u64_at(file, at) as usize;
    at + 8 + 8
}

/// Found by the fuzz target `load` (an out-of-memory in the frame after the load): a
/// reservation that claims its system spawned billions of entities last frame loaded, and
/// the next frame then reserved twice that many ids. Now the load says the allocator does
/// not hold together.
#[test]
fn a_reservation_that_claims_more_spawns_than_slots_is_an_error() {
    let mut rt = game(1, 4);
    rt.frame();
    let mut file = Vec::new();
    rt.world().save(&mut file).unwrap();
    let at = first_reservation_at(&file);
    let spawned = u32::from_le_bytes(file[at..at + 4].try_into().unwrap());
    assert!(
        spawned <= 1,
        "the test game spawns at most one entity a frame: {spawned}"
    );
    assert!(try_load(&file).is_ok());
    let mut f = file.clone();
    f[at..at + 4].copy_from_slice(&0x7575_7575u32.to_le_bytes());
    reseal(&mut f);
    match try_load(&f) {
        Err(LoadError::BadEntities { what }) => assert!(
            what.contains("entities were spawned last frame, more than the"),
            "{what}"
        ),
        other => panic!("{other:?}"),
    }
}

/// A reader that hands out its bytes in odd pieces (1, 7, 4096, 70,000 and 3 bytes, in
/// turn), as a pipe or a slow disk might: the integrity checks sum the bytes a buffer at a
/// time, and read straight into big columns, so every way a piece can end must be summed
/// once.
struct Pieces<'a> {
    rest: &'a [u8],
    turn: usize,
}

impl std::io::Read for Pieces<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = [1, 7, 4096, 70_000, 3][self.turn % 5]
            .min(buf.len())
            .min(self.rest.len());
        self.turn += 1;
        buf[..n].copy_from_slice(&self.rest[..n]);
        self.rest = &self.rest[n..];
        Ok(n)
    }
}

#[test]
fn a_save_read_in_odd_pieces_loads_and_is_checked() {
    let mut rt = game(1, 10_000);
    rt.frame();
    let file = save(&rt);
    assert!(
        file.len() > 3 * 64 * 1024,
        "{} bytes: more than a few chunks",
        file.len()
    );
    for turn in 0..5 {
        let mut loaded = game(1, 0);
        loaded
            .load(&mut Pieces { rest: &file, turn })
            .expect("every piece summed once");
        assert!(rt.world().first_difference(loaded.world()).is_none());
    }
    // Damage past the first chunk is still found.
    let mut f = file.clone();
    f[file.len() * 2 / 3] ^= 0x40;
    let e = game(1, 0)
        .load(&mut Pieces { rest: &f, turn: 1 })
        .unwrap_err();
    assert!(!e.to_string().is_empty(), "{e}");
    assert!(game(1, 0).load(&mut f.as_slice()).is_err());
}
