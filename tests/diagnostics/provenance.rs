//! Write provenance (`Runtime::watch` / `Runtime::provenance`), as a user sees it: writes
//! listed in registration order then emission order with the values before and after the
//! merge; nothing recorded for unwatched entities; the same record at any worker count;
//! watching never changes the world.

use std::ops::AddAssign;

use runsync::prelude::*;
use runsync::{CommandKind, Provenance};

#[derive(Clone, Copy, Debug, PartialEq)]
struct Health(i32);
impl Component for Health {
    type Output = i32;
}
impl AddAssign<i32> for Health {
    fn add_assign(&mut self, d: i32) {
        self.0 += d;
    }
}
impl Checksum for Health {
    fn checksum(&self, h: &mut Checksummer) {
        self.0.checksum(h)
    }
}

/// Keeps every output its merge saw, in the order it saw them: the merge order itself.
#[derive(Clone, Debug, PartialEq)]
struct Log(Vec<i32>);
impl Component for Log {
    type Output = i32;
}
impl Checksum for Log {
    fn checksum(&self, h: &mut Checksummer) {
        for x in &self.0 {
            x.checksum(h);
        }
    }
}

/// Not opted into `debugging`: no `Debug` needed.
#[derive(Clone, Copy, PartialEq)]
struct Opaque(u8);
impl Component for Opaque {
    type Output = Opaque;
}

#[derive(Clone, Copy, Debug, PartialEq)]
struct Tag;
impl Component for Tag {
    type Output = Tag;
}

fn world(n: usize) -> (World, Vec<Entity>) {
    let mut w = World::new();
    w.register::<Health>(merge::sum);
    // A closure merge is not one-at-a-time: with several sources Sync takes the keyed
    // path (sorting out-of-order sources), yet the merge must see provenance's order.
    w.register::<Log>(|l: &mut Log, outs: &[i32]| l.0.extend_from_slice(outs));
    w.register::<Opaque>(merge::last);
    w.register::<Tag>(merge::last);
    w.debugging::<Health>().debugging::<Log>();
    w.checksumming::<Health>().checksumming::<Log>();
    let es = (0..n)
        .map(|i| w.spawn((Health(100), Log(Vec::new()), Opaque(i as u8))))
        .collect();
    (w, es)
}

/// `(system name, index, value)` of each write to one component of a record.
fn writes(p: &Provenance, c: usize) -> Vec<(String, u32, Option<String>)> {
    p.components()[c]
        .writes
        .iter()
        .map(|w| (w.system_name.to_string(), w.index, w.value.clone()))
        .collect()
}

fn wr(system: &str, index: u32, value: i32) -> (String, u32, Option<String>) {
    (system.to_owned(), index, Some(value.to_string()))
}

/// Three systems write `Health` (sum) and `Log` of the same entity; one of them twice,
/// and out of row order (the target is written, then another entity, then it again).
fn three_writers(rt: &mut Runtime, target: Entity, other: Entity) {
    rt.add_system_named("a_loop", |w: &World, out: &mut Output| {
        for (e, _) in w.query::<(&Health,)>() {
            out.write::<Health>(e, -1);
            out.write::<Log>(e, 1);
        }
    });
    rt.add_system_named("b_twice", move |_: &World, out: &mut Output| {
        out.write::<Health>(target, -5);
        out.write::<Log>(target, 20);
        out.write::<Health>(other, -50);
        out.write::<Log>(other, 99);
        out.write::<Health>(target, -7);
        out.write::<Log>(target, 21);
    });
    rt.add_system_named("c_keyed", move |_: &World, out: &mut Output| {
        out.write::<Log>(other, 98);
        out.write::<Log>(target, 3);
        out.write::<Health>(target, -11);
    });
}

#[test]
fn lists_systems_in_registration_then_emission_order() {
    let (w, es) = world(10);
    let (target, other) = (es[6], es[2]);
    let mut rt = Runtime::builder().workers(1).build(w);
    three_writers(&mut rt, target, other);
    rt.watch(target);
    rt.frame();

    let p = rt.provenance(target).expect("watched");
    assert_eq!(p.entity(), target);
    assert_eq!(p.frame(), Some(1));
    // Health and Log, in component id order; Opaque got no output.
    assert_eq!(p.components().len(), 2);
    let health = &p.components()[0];
    assert_eq!(health.name, std::any::type_name::<Health>());
    assert_eq!(health.before.as_deref(), Some("Health(100)"));
    assert_eq!(health.after.as_deref(), Some("Health(76)"));
    assert_eq!(
        writes(p, 0),
        [
            wr("a_loop", 0, -1),
            wr("b_twice", 0, -5),
            wr("b_twice", 1, -7),
            wr("c_keyed", 0, -11)
        ]
    );
    assert_eq!(rt.world().get::<Health>(target), Some(&Health(76)));

    // The merge saw exactly provenance's order.
    let log = &p.components()[1];
    assert_eq!(log.before.as_deref(), Some("Log([])"));
    assert_eq!(log.after.as_deref(), Some("Log([1, 20, 21, 3])"));
    assert_eq!(
        writes(p, 1),
        [
            wr("a_loop", 0, 1),
            wr("b_twice", 0, 20),
            wr("b_twice", 1, 21),
            wr("c_keyed", 0, 3)
        ]
    );
    assert_eq!(
        rt.world().get::<Log>(target),
        Some(&Log(vec![1, 20, 21, 3]))
    );
    assert!(p.commands().is_empty());

    // The report names every write.
    let text = p.to_string();
    assert!(text.contains("Health(100) -> Health(76)"), "{text}");
    assert!(text.contains("b_twice (system 1) #1: -7"), "{text}");

    // Next frame: the record is replaced, not appended to.
    rt.frame();
    let p = rt.provenance(target).unwrap();
    assert_eq!(p.frame(), Some(2));
    assert_eq!(p.components()[0].before.as_deref(), Some("Health(76)"));
    assert_eq!(p.components()[0].after.as_deref(), Some("Health(52)"));
    assert_eq!(p.components()[0].writes.len(), 4);
}

#[test]
fn nothing_recorded_for_unwatched_entities() {
    let (w, es) = world(4);
    let mut rt = Runtime::builder().workers(1).build(w);
    three_writers(&mut rt, es[1], es[2]);
    rt.watch(es[3]); // written only by `a_loop`
    rt.watch(es[0]);
    assert_eq!(rt.provenance(es[0]).unwrap().frame(), None);
    rt.frame();
    assert!(rt.provenance(es[1]).is_none());
    assert!(rt.provenance(es[2]).is_none());
    assert_eq!(
        writes(rt.provenance(es[3]).unwrap(), 0),
        [wr("a_loop", 0, -1)]
    );

    // Watched but not written this frame: an empty record for that frame.
    let mut rt2 = Runtime::builder().workers(1).build(world(3).0);
    let quiet = rt2
        .world()
        .query::<(&Health,)>()
        .map(|(e, _)| e)
        .nth(1)
        .unwrap();
    rt2.add_system(|_: &World, _: &mut Output| {});
    rt2.watch(quiet);
    rt2.frame();
    let p = rt2.provenance(quiet).unwrap();
    assert!(p.is_empty());
    assert_eq!(p.frame(), Some(1));
    assert!(p.to_string().contains("nothing written"));
}

#[test]
fn unwatch_stops_recording() {
    let (w, es) = world(4);
    let mut rt = Runtime::builder().workers(1).build(w);
    three_writers(&mut rt, es[1], es[2]);
    rt.watch(es[1]);
    rt.watch(es[1]); // twice: one record
    rt.frame();
    assert_eq!(rt.provenance(es[1]).unwrap().components().len(), 2);
    assert!(rt.unwatch(es[1]));
    assert!(!rt.unwatch(es[1]));
    rt.frame();
    assert!(rt.provenance(es[1]).is_none());
    // Watched again: a fresh record, filled by the next frame.
    rt.watch(es[1]);
    assert_eq!(rt.provenance(es[1]).unwrap().frame(), None);
    assert!(rt.provenance(es[1]).unwrap().is_empty());
    rt.frame();
    assert_eq!(rt.provenance(es[1]).unwrap().frame(), Some(3));
}

#[test]
fn without_debugging_values_are_none_but_systems_are_listed() {
    let (w, es) = world(3);
    let mut rt = Runtime::builder().workers(1).build(w);
    let e = es[1];
    rt.add_system_named("paint", move |_: &World, out: &mut Output| {
        out.write::<Opaque>(e, Opaque(7));
        out.write::<Opaque>(e, Opaque(8));
    });
    rt.watch(e);
    rt.frame();
    let p = rt.provenance(e).unwrap();
    let c = &p.components()[0];
    assert_eq!(c.name, std::any::type_name::<Opaque>());
    assert_eq!((c.before.as_deref(), c.after.as_deref()), (None, None));
    let got: Vec<_> = c
        .writes
        .iter()
        .map(|w| (w.system.index(), w.index, w.value.clone()))
        .collect();
    assert_eq!(got, [(0, 0, None), (0, 1, None)]);
    assert!(rt.world().get::<Opaque>(e) == Some(&Opaque(8)));
}

#[test]
fn structural_commands_and_dropped_writes() {
    let (w, es) = world(3);
    let mut rt = Runtime::builder().workers(1).build(w);
    let (e, gone) = (es[0], es[1]);
    rt.world_mut().despawn(gone);
    rt.add_system_named("tagger", move |_: &World, out: &mut Output| {
        out.insert(e, Tag);
        out.write::<Tag>(e, Tag); // dropped in Run: `e` has no `Tag` yet
        out.write::<Health>(gone, -1); // dropped in Run: dead
    });
    rt.add_system_named("reaper", move |_: &World, out: &mut Output| {
        out.remove::<Log>(e);
        out.despawn(e);
        out.despawn(gone);
    });
    rt.watch(e);
    rt.watch(gone);
    rt.frame();
    let p = rt.provenance(e).unwrap();
    assert!(p.components().is_empty(), "{p}");
    let cmds: Vec<_> = p
        .commands()
        .iter()
        .map(|c| (c.system_name.to_string(), c.kind))
        .collect();
    let id = |name| match name {
        CommandKind::Insert { id, .. } | CommandKind::Remove { id, .. } => Some(id),
        _ => None,
    };
    assert_eq!(cmds.len(), 3);
    assert_eq!(cmds[0].0, "tagger");
    assert!(
        matches!(cmds[0].1, CommandKind::Insert { name, .. } if name == std::any::type_name::<Tag>())
    );
    assert!(
        matches!(cmds[1].1, CommandKind::Remove { name, .. } if name == std::any::type_name::<Log>())
    );
    assert_eq!(cmds[2], ("reaper".to_owned(), CommandKind::Despawn));
    assert_ne!(id(cmds[0].1), id(cmds[1].1));
    assert!(p.to_string().contains("despawn by reaper (system 1)"));
    // A dead watched entity: only the commands aimed at it.
    let p = rt.provenance(gone).unwrap();
    assert!(p.components().is_empty());
    assert_eq!(p.commands().len(), 1);
    assert!(!rt.world().is_alive(e));
}

/// Many entities through every write path (query loop, keyed, `write_each`,
/// `par_for_each`), a few watched; returns each frame's records and checksum.
fn scenario(workers: usize, watch: bool) -> (Vec<Vec<Provenance>>, Vec<u64>) {
    let n = if cfg!(miri) { 40 } else { 3000 };
    let (w, es) = world(n);
    let mut rt = Runtime::builder().workers(workers).build(w);
    rt.add_system_named("each", |_: &World, out: &mut Output| {
        out.write_each::<Log, (&Health,)>(|_, (h,)| h.0 % 7);
    });
    rt.add_system_named("par", |_: &World, out: &mut Output| {
        out.par_for_each::<(&Health,)>(|e, (h,), out| {
            out.write::<Health>(e, -(h.0 % 3) - 1);
            if e.index() % 5 == 0 {
                out.write::<Log>(e, e.index() as i32);
                out.write::<Health>(e, 2);
            }
        });
    });
    let picks = [es[0], es[5], es[n / 2], es[n - 1]];
    rt.add_system_named("keyed", move |w: &World, out: &mut Output| {
        for &e in picks.iter().rev() {
            if let Some(h) = w.get::<Health>(e) {
                out.write::<Log>(e, h.0);
                out.write::<Health>(e, 1);
            }
        }
    });
    if watch {
        for &e in &picks {
            rt.watch(e);
        }
    }
    let mut records = Vec::new();
    let mut sums = Vec::new();
    for _ in 0..4 {
        rt.frame();
        records.push(
            picks
                .iter()
                .filter_map(|&e| rt.provenance(e).cloned())
                .collect(),
        );
        sums.push(rt.world().checksum());
    }
    (records, sums)
}

#[test]
fn same_record_at_any_worker_count_and_watching_changes_nothing() {
    let (reference, sums) = scenario(1, true);
    assert_eq!(reference[0].len(), 4);
    // Entity 0 (index % 5 == 0): each, par (twice to Health), keyed.
    let p0 = &reference[3][0];
    assert_eq!(
        p0.components()[0]
            .writes
            .iter()
            .map(|w| (&*w.system_name, w.index))
            .collect::<Vec<_>>(),
        [("par", 0), ("par", 1), ("keyed", 0)]
    );
    assert_eq!(
        p0.components()[1]
            .writes
            .iter()
            .map(|w| (&*w.system_name, w.index))
            .collect::<Vec<_>>(),
        [("each", 0), ("par", 0), ("keyed", 0)]
    );
    for workers in [2, 8] {
        let (records, s) = scenario(workers, true);
        assert_eq!(records, reference, "records at {workers} workers");
        assert_eq!(s, sums, "checksums at {workers} workers");
    }
    for workers in [1, 2] {
        let (records, s) = scenario(workers, false);
        assert!(records.iter().all(|r| r.is_empty()));
        assert_eq!(s, sums, "unwatched checksums at {workers} workers");
    }
}
