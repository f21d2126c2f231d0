//! Messages between systems (`Output::send`, `World::messages`): what readers see, in
//! which order, for how long; against a sequential reference at 1, 2 and 8 workers (and
//! single-threaded, when the suite runs with that feature); with 0, 1 and many senders;
//! addressed messages; failed frames; rollback.

use std::sync::{Arc, Mutex};

use runsync::prelude::*;
use runsync::{Checksummer, SnapshotError};

#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
struct Val(i64);
impl Component for Val {
    type Output = i64;
}
impl Checksum for Val {
    fn checksum(&self, h: &mut Checksummer) {
        self.0.checksum(h);
    }
}

/// A message: who sent it (system, entity index) and a value.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Note {
    system: u32,
    from: u32,
    value: i64,
}
impl Checksum for Note {
    fn checksum(&self, h: &mut Checksummer) {
        (self.system, self.from, self.value).checksum(h);
    }
}

const ENTITIES: i64 = 600;

fn world() -> World {
    let mut w = World::new();
    w.register::<Val>(|v: &mut Val, d: &[i64]| {
        // Order-sensitive on purpose: a wrong message order shows in the values.
        for x in d {
            v.0 = v.0.wrapping_mul(31).wrapping_add(*x);
        }
    });
    w.snapshotting::<Val>().checksumming::<Val>();
    w.register_message::<Note>()
        .snapshotting_message::<Note>()
        .checksumming_message::<Note>();
    for i in 0..ENTITIES {
        w.spawn((Val(i),));
    }
    w
}

/// What system `s` (of `senders`) sends in a frame, given the world: one note per
/// entity whose value fits its residue, so the counts vary from frame to frame.
fn sends(s: u32, senders: u32, w: &World) -> Vec<Note> {
    w.query::<(&Val,)>()
        .filter(|(_, (v,))| v.0.rem_euclid(i64::from(senders) + 1) as u32 == s)
        .map(|(e, (v,))| Note {
            system: s,
            from: e.index(),
            value: v.0 % 1000,
        })
        .collect()
}

/// `senders` systems send notes (the odd ones from `par_for_each` chunks); one more
/// system folds the notes it reads into every entity's value. Returns the messages and
/// the values after each frame, and the checksums.
fn run(workers: usize, senders: u32, frames: usize) -> (Vec<Frame>, Vec<u64>) {
    let mut rt = Runtime::builder().workers(workers).build(world());
    for s in 0..senders {
        rt.add_system(move |w: &World, out: &mut Output| {
            if s % 2 == 0 {
                for n in sends(s, senders, w) {
                    out.send(n);
                }
            } else {
                out.par_for_each::<(&Val,)>(|e, (v,), out| {
                    if v.0.rem_euclid(i64::from(senders) + 1) as u32 == s {
                        out.send(Note {
                            system: s,
                            from: e.index(),
                            value: v.0 % 1000,
                        });
                    }
                });
            }
        });
    }
    rt.add_system(|w: &World, out: &mut Output| {
        let notes = w.messages::<Note>();
        for (i, (e, _)) in w.query::<(&Val,)>().enumerate() {
            let n = notes[i % notes.len().max(1)..].first();
            out.write::<Val>(e, n.map_or(1, |n| n.value + i64::from(n.from)));
        }
    });
    (0..frames)
        .map(|_| {
            rt.frame();
            let w = rt.world();
            ((w.messages::<Note>().to_vec(), values(w)), w.checksum())
        })
        .unzip()
}

/// What one frame leaves: the delivered messages and every value, in storage order.
type Frame = (Vec<Note>, Vec<i64>);

fn values(w: &World) -> Vec<i64> {
    w.query::<(&Val,)>().map(|(_, (v,))| v.0).collect()
}

/// The sequential reference: the same game, one loop, no runtime.
fn reference(senders: u32, frames: usize) -> Vec<Frame> {
    let mut w = world();
    let mut delivered: Vec<Note> = Vec::new();
    let mut result = Vec::new();
    for _ in 0..frames {
        let mut sent = Vec::new();
        for s in 0..senders {
            sent.extend(sends(s, senders, &w));
        }
        let writes: Vec<(Entity, i64)> = w
            .query::<(&Val,)>()
            .enumerate()
            .map(|(i, (e, _))| {
                let n = delivered[i % delivered.len().max(1)..].first();
                (e, n.map_or(1, |n| n.value + i64::from(n.from)))
            })
            .collect();
        for (e, x) in writes {
            let v = w.get_mut::<Val>(e).unwrap();
            v.0 = v.0.wrapping_mul(31).wrapping_add(x);
        }
        delivered = sent;
        result.push((delivered.clone(), values(&w)));
    }
    result
}

#[test]
fn same_messages_and_world_as_a_sequential_loop_at_any_worker_count() {
    for senders in [0, 1, 5] {
        let want = reference(senders, 6);
        if senders > 0 {
            assert!(want.iter().all(|(m, _)| !m.is_empty()), "notes every frame");
        }
        let (_, sums) = run(1, senders, 6);
        for workers in [1, 2, 8] {
            let (got, s) = run(workers, senders, 6);
            assert_eq!(got, want, "{senders} senders, {workers} workers");
            assert_eq!(s, sums, "{senders} senders, {workers} workers: checksums");
        }
    }
}

#[test]
fn messages_live_one_frame_read_or_not() {
    let mut w = World::new();
    w.register_message::<u32>();
    let mut rt = Runtime::builder().workers(2).build(w);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    rt.add_system(move |w: &World, out: &mut Output| {
        let frame = w.resource::<Time>().frame as u32;
        if frame < 2 {
            out.send(frame * 10);
            out.send(frame * 10 + 1);
        }
        s.lock().unwrap().push(w.messages::<u32>().to_vec());
    });
    for _ in 0..4 {
        rt.frame();
    }
    assert_eq!(rt.stats().messages, 0);
    assert_eq!(
        *seen.lock().unwrap(),
        [vec![], vec![0, 1], vec![10, 11], vec![]],
        "each frame reads exactly the previous frame's messages"
    );
}

/// With stages, every system reads each message once, the next time it runs: a message
/// sent in the first stage is read by the second stage in the same frame and by the first
/// stage (its sender too) in the next frame, then dropped by the first stage's next Sync.
/// (The rule as a whole, at every stage pairing: `tests/stages/stage_rule.rs`.)
#[test]
fn with_stages_every_system_reads_each_message_once() {
    for workers in [1, 2, 8] {
        let mut w = World::new();
        w.register_message::<u32>();
        let mut rt = Runtime::builder()
            .workers(workers)
            .stages(["send", "read"])
            .build(w);
        let read = rt.stage_id("read").unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let (first, second) = (seen.clone(), seen.clone());
        rt.add_system(move |w: &World, out: &mut Output| {
            first
                .lock()
                .unwrap()
                .push(("send", w.messages::<u32>().to_vec()));
            out.send(w.resource::<Time>().frame as u32);
        });
        rt.add_system_to(read, move |w: &World, _: &mut Output| {
            second
                .lock()
                .unwrap()
                .push(("read", w.messages::<u32>().to_vec()));
        });
        rt.frame();
        rt.frame();
        assert_eq!(
            *seen.lock().unwrap(),
            [
                ("send", vec![]),
                ("read", vec![0]),
                ("send", vec![0]),
                ("read", vec![1]),
            ],
            "{workers} workers"
        );
    }
}

#[test]
fn addressed_messages_reach_live_entities_and_count_the_rest() {
    #[derive(Debug, PartialEq)]
    struct Hit(u32);
    let mut w = World::new();
    w.register_message::<Hit>();
    let a = w.spawn(());
    let b = w.spawn(());
    let mut rt = Runtime::builder().workers(2).build(w);
    let born = Arc::new(Mutex::new(None));
    let bn = born.clone();
    rt.add_system(move |w: &World, out: &mut Output| {
        if w.resource::<Time>().frame == 0 {
            out.send_to(a, Hit(1));
            out.send_to(b, Hit(2)); // b dies in this Sync: dropped
            out.despawn(b);
            let c = out.spawn(()); // alive at delivery: kept
            out.send_to(c, Hit(3));
            *bn.lock().unwrap() = Some(c);
        }
    });
    rt.add_system(move |_: &World, out: &mut Output| out.send_to(a, Hit(4)));
    rt.frame();
    let c = born.lock().unwrap().unwrap();
    let w = rt.world();
    assert!(w.messages_for::<Hit>(a).eq([&Hit(1), &Hit(4)]));
    assert_eq!(w.messages_for::<Hit>(b).count(), 0);
    assert!(w.messages_for::<Hit>(c).eq([&Hit(3)]));
    assert_eq!(
        w.addressed_messages::<Hit>(),
        [(a, Hit(1)), (c, Hit(3)), (a, Hit(4))]
    );
    assert_eq!(rt.stats().messages, 3);
    assert_eq!(rt.stats().dropped, 1, "the message to b");
}

#[test]
fn a_failed_run_discards_the_frames_messages_and_keeps_the_delivered_ones() {
    let mut w = World::new();
    w.register_message::<u8>();
    let mut rt = Runtime::builder().workers(2).build(w);
    rt.add_system(|w: &World, out: &mut Output| {
        out.send(w.resource::<Time>().frame as u8);
        if w.resource::<Time>().frame == 1 && w.messages::<u8>() == [0] {
            panic!("once");
        }
    });
    rt.frame();
    assert_eq!(rt.world().messages::<u8>(), [0]);
    assert!(rt.try_frame().is_err());
    assert_eq!(rt.world().messages::<u8>(), [0], "kept for the retry");
    // The retry sees the same messages, and panics again: disable the check.
    rt.world_mut().send_message(9u8);
    rt.frame();
    assert_eq!(rt.world().messages::<u8>(), [1]);
}

#[test]
fn rollback_restores_the_delivered_messages() {
    let mut rt = Runtime::builder().workers(2).build(world());
    for s in 0..3 {
        rt.add_system(move |w: &World, out: &mut Output| {
            for n in sends(s, 3, w) {
                out.send(n);
            }
        });
    }
    rt.add_system(|w: &World, out: &mut Output| {
        let notes = w.messages::<Note>();
        for (i, (e, _)) in w.query::<(&Val,)>().enumerate() {
            if let Some(n) = notes.get(i) {
                out.write::<Val>(e, n.value);
            }
        }
    });
    rt.frame();
    rt.frame();
    let saved = rt.snapshot().unwrap();
    let sums = |rt: &mut Runtime| {
        (0..4)
            .map(|_| {
                rt.frame();
                rt.world().checksum()
            })
            .collect::<Vec<_>>()
    };
    let first = sums(&mut rt);
    rt.restore(&saved);
    assert!(!rt.world().messages::<Note>().is_empty());
    assert_eq!(sums(&mut rt), first);
    let mut bare = world();
    bare.register_message::<u8>().snapshotting_message::<u8>();
    assert!(matches!(
        bare.try_restore(saved.world()),
        Err(SnapshotError::OtherMessageTypes { .. })
    ));
}

#[test]
fn snapshot_of_a_message_type_not_opted_in_is_an_error_naming_it() {
    struct Plain;
    let mut w = World::new();
    w.register_message::<Plain>();
    let err = w.snapshot().unwrap_err();
    assert!(
        matches!(err, SnapshotError::MessageNotSnapshotting { type_name } if type_name.ends_with("Plain"))
    );
    assert!(
        err.to_string().contains("snapshotting_message::<Plain>()"),
        "{err}"
    );
}

#[test]
fn checksums_count_opted_in_messages() {
    let mut a = world();
    let b = world();
    assert_eq!(a.checksum(), b.checksum());
    a.send_message(Note {
        system: 0,
        from: 1,
        value: 2,
    });
    assert_ne!(a.checksum(), b.checksum());
    let d = a.first_difference(&b).unwrap();
    assert!(d.to_string().contains("messages"), "{d}");
}

#[test]
#[should_panic(expected = "register_message::<u16>()")]
fn sending_an_unregistered_type_says_how_to_register_it() {
    let mut rt = Runtime::builder().workers(1).build(World::new());
    rt.add_system(|_: &World, out: &mut Output| out.send(7u16));
    rt.frame();
}

#[test]
#[should_panic(expected = "message type `u16` is not registered")]
fn reading_an_unregistered_type_is_an_error() {
    World::new().messages::<u16>();
}

/// Delivered messages are state the next frame reads, so save files hold them: a type
/// not opted in is an error naming it (on save and on load), an opted-in one comes back
/// as it was, broadcast and addressed, and the next frames run the same.
#[test]
fn save_files_hold_the_delivered_messages() {
    #[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
    struct Ping(u32);
    impl Checksum for Ping {
        fn checksum(&self, h: &mut Checksummer) {
            self.0.checksum(h);
        }
    }
    let make = |opt_in: bool| {
        let mut w = World::new();
        w.register::<Val>(|v: &mut Val, d: &[i64]| v.0 += d.iter().sum::<i64>());
        w.saving::<Val>().checksumming::<Val>();
        w.register_message::<Ping>().checksumming_message::<Ping>();
        if opt_in {
            w.saving_message::<Ping>();
        }
        w
    };
    let mut w = make(false);
    let e = w.spawn((Val(1),));
    w.send_message(Ping(7));
    w.send_message_to(e, Ping(9));
    let err = w.save(&mut Vec::new()).unwrap_err();
    assert!(
        matches!(err, runsync::SaveError::MessageNotSaving { type_name } if type_name.ends_with("Ping")),
        "{err}"
    );
    assert!(
        err.to_string().contains("saving_message::<Ping>()"),
        "{err}"
    );

    let mut w = make(true);
    let e = w.spawn((Val(1),));
    w.send_message(Ping(7));
    w.send_message_to(e, Ping(9));
    let mut file = Vec::new();
    w.save(&mut file).unwrap();
    let mut back = make(true);
    back.load(&mut file.as_slice()).unwrap();
    assert_eq!(back.messages::<Ping>(), [Ping(7)]);
    assert_eq!(back.messages_for::<Ping>(e).collect::<Vec<_>>(), [&Ping(9)]);
    assert_eq!(back.checksum(), w.checksum());
    // The next frame reads them alike.
    let run = |w: World| {
        let mut rt = Runtime::builder().workers(2).build(w);
        rt.add_system(|w: &World, out: &mut Output| {
            let n: i64 = w.messages::<Ping>().iter().map(|p| i64::from(p.0)).sum();
            for (e, _) in w.query::<(&Val,)>() {
                let to: i64 = w.messages_for::<Ping>(e).map(|p| i64::from(p.0)).sum();
                out.write::<Val>(e, n * 100 + to);
            }
        });
        rt.frame();
        rt.world().checksum()
    };
    assert_eq!(run(back), run(w));

    // A world that does not opt the type in, or registers other message types, refuses
    // the file.
    let mut not_opted = make(false);
    let err = not_opted.load(&mut file.as_slice()).unwrap_err();
    assert!(
        matches!(err, runsync::LoadError::MessageNotSaving { .. }),
        "{err}"
    );
    let mut other = make(true);
    other.register_message::<u8>();
    other.saving_message::<u8>();
    let err = other.load(&mut file.as_slice()).unwrap_err();
    assert!(
        matches!(err, runsync::LoadError::MessageTypes { .. }),
        "{err}"
    );
}
