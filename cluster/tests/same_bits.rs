//! The sharded frame gives the same bits as one process: the model scenario's world
//! checksum after every frame, on 1 to 4 shards (threads), with runsync workers inside
//! shards, and on two processes over loopback, equals one process's — while entities
//! migrate every frame, write to neighbours across every band boundary, are born and
//! die near them. A mirror range that leaves out a neighbour's neighbour gives other
//! bits.

use std::io::Read;
use std::net::TcpListener;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use runsync::prelude::*;
use runsync_cluster::model::{self, Cry, Hp, Pos, Vel, Wounded};
use runsync_cluster::{Cluster, ClusterError, Partition, Report, timely};

const FRAMES: u64 = 80;

fn sharded(shards: usize, range: f32, shard_workers: usize) -> Report {
    Cluster::new(model::bands_of(2_000, range), model::world, model::systems)
        .frames(FRAMES)
        .shard_workers(shard_workers)
        .run(timely::Config::process(shards))
        .unwrap()
        .expect("shard 0 is in this process")
}

fn checksums(report: &Report) -> Vec<u64> {
    report.frames.iter().map(|f| f.checksum).collect()
}

#[test]
fn one_to_four_shards_give_one_process_bits() {
    let one = model::reference(FRAMES);
    for shards in 1..=4 {
        let report = sharded(shards, 2.0 * model::RANGE, 1);
        assert_eq!(report.shards, shards);
        assert_eq!(checksums(&report), one, "{shards} shards");
        let last = report.frames.last().unwrap();
        let born: usize = report.frames.iter().map(|f| f.spawned).sum();
        assert!(born > 20, "{shards} shards: {born} born");
        assert!(last.entities < 2_000 + born, "agents died");
        if shards > 1 {
            // Every frame mirrors and most migrate.
            assert!(
                report.frames.iter().all(|f| f.ghosts > 0),
                "{shards} shards"
            );
            let migrated: usize = report.frames.iter().map(|f| f.migrations).sum();
            assert!(
                migrated > FRAMES as usize,
                "{shards} shards: {migrated} migrations"
            );
        }
    }
}

#[test]
fn tiles_give_one_process_bits() {
    // 4 × 2 tiles on 3 and 4 shards (with 3, some shards hold tiles far apart).
    let one = model::reference(FRAMES);
    for shards in [3, 4] {
        let report = Cluster::new(
            model::tiles_of(2_000, 4, 2, 2.0 * model::RANGE),
            model::world,
            model::systems,
        )
        .frames(FRAMES)
        .run(timely::Config::process(shards))
        .unwrap()
        .unwrap();
        assert_eq!(checksums(&report), one, "{shards} shards");
        assert!(
            report
                .frames
                .iter()
                .all(|f| f.ghosts > 0 && f.migrations > 0)
        );
    }
}

#[test]
fn world_wide_values_summed_exactly_give_one_process_bits() {
    // Every agent also steers toward the whole herd's centre, as summed after the last
    // frame: each shard sums its own agents, the parts are exchanged and added up.
    let herded = || {
        Cluster::new(model::bands(), model::world, |rt: &mut Runtime| {
            model::systems(rt);
            rt.add_system_named("herd", model::herd);
        })
        .frames(FRAMES)
    };
    let one = herded()
        .global(model::Herd::part, model::Herd::combine)
        .run_in_one_process()
        .unwrap();
    assert_ne!(checksums(&one), model::reference(FRAMES), "the herd steers");
    for shards in 2..=4 {
        let report = herded()
            .global(model::Herd::part, model::Herd::combine)
            .run(timely::Config::process(shards))
            .unwrap()
            .unwrap();
        assert_eq!(checksums(&report), checksums(&one), "{shards} shards");
    }
    // The control: the same centre summed in floats depends on the split.
    let floats = |shards| {
        let cluster = herded().global(model::FloatHerd::part, model::FloatHerd::combine);
        match shards {
            0 => checksums(&cluster.run_in_one_process().unwrap()),
            n => checksums(&cluster.run(timely::Config::process(n)).unwrap().unwrap()),
        }
    };
    assert_ne!(floats(3), floats(0));
}

#[test]
fn runsync_workers_inside_shards_change_nothing() {
    assert_eq!(
        checksums(&sharded(2, 2.0 * model::RANGE, 3)),
        model::reference(FRAMES)
    );
}

/// The model in one process, noting per boundary of `shards` bands the agents that died,
/// were born and were marked or unmarked `Wounded` within the mirror range of it (2 ×
/// `RANGE`: where ghosts are involved), the cries sent there, and the pairs within reach
/// that straddle it.
fn boundary_traffic(shards: usize) -> [Vec<usize>; 5] {
    let (width, _) = model::size(2_000);
    let band = |x: f32| ((x / width * shards as f32).max(0.0) as usize).min(shards - 1);
    let mut w = model::world();
    w.set_canonical_order(true);
    let mut rt = Runtime::builder().workers(1).build(w);
    model::systems(&mut rt);
    let [mut deaths, mut births, mut marks, mut cries, mut pairs] =
        std::array::from_fn(|_| vec![0; shards - 1]);
    let near = |x: f32, counts: &mut Vec<usize>| {
        for (b, count) in counts.iter_mut().enumerate() {
            let edge = width * (b + 1) as f32 / shards as f32;
            if (x - edge).abs() < 2.0 * model::RANGE {
                *count += 1;
            }
        }
    };
    for _ in 0..FRAMES {
        let before: Vec<(Entity, [f32; 2])> = rt
            .world()
            .query::<(&Pos,)>()
            .map(|(e, (p,))| (e, p.0))
            .collect();
        let wounded: Vec<bool> = (before.iter())
            .map(|&(e, _)| rt.world().has::<Wounded>(e))
            .collect();
        for (i, &(a, p)) in before.iter().enumerate() {
            for &(_, q) in &before[i + 1..] {
                let d = [p[0] - q[0], p[1] - q[1]];
                if d[0] * d[0] + d[1] * d[1] < model::RANGE * model::RANGE
                    && band(p[0]) != band(q[0])
                {
                    pairs[band(p[0]).min(band(q[0]))] += 1;
                }
            }
            let _ = a;
        }
        rt.frame();
        for (&(e, p), &was) in before.iter().zip(&wounded) {
            if !rt.world().is_alive(e) {
                near(p[0], &mut deaths);
            } else if rt.world().has::<Wounded>(e) != was {
                near(p[0], &mut marks);
            }
        }
        for (e, (p,)) in rt.world().query::<(&Pos,)>() {
            if !before.iter().any(|&(b, _)| b == e) {
                near(p.0[0], &mut births);
            }
        }
        for c in rt.world().messages::<Cry>() {
            near(c.0[0], &mut cries);
        }
    }
    [deaths, births, marks, cries, pairs]
}

#[test]
fn the_scenario_crosses_every_boundary() {
    // What `one_to_four_shards_give_one_process_bits` exercised, counted in one process:
    // at 4 shards, each of the 3 boundaries sees neighbours writing across it every
    // frame, and agents dying, born, marked or unmarked (inserts, removes) and crying
    // (messages) within reach of it.
    let [deaths, births, marks, cries, pairs] = boundary_traffic(4);
    for b in 0..3 {
        assert!(
            pairs[b] > FRAMES as usize,
            "boundary {b}: {} pairs",
            pairs[b]
        );
        assert!(deaths[b] > 0, "boundary {b}: no death near it ({deaths:?})");
        assert!(births[b] > 0, "boundary {b}: no birth near it ({births:?})");
        assert!(
            marks[b] > 0,
            "boundary {b}: no insert or remove near it ({marks:?})"
        );
        assert!(
            cries[b] > 0,
            "boundary {b}: no message sent near it ({cries:?})"
        );
    }
}

#[test]
fn a_missing_ghost_gives_other_bits() {
    // Mirroring within the interaction range only: an agent near the edge still sees all
    // its neighbours, but not all of theirs, so what they deal it differs.
    let one = model::reference(FRAMES);
    let short = sharded(2, model::RANGE, 1);
    assert_ne!(checksums(&short), one);
    let first = (checksums(&short).iter().zip(&one)).position(|(a, b)| a != b);
    assert!(first.is_some());
}

#[test]
fn a_system_reading_every_message_is_not_local() {
    // The control for messages: a system that counts *every* cry in the world (not only
    // those within reach) sees only its shard's on a shard, so the bits differ.
    let everyone = |rt: &mut Runtime| {
        model::systems(rt);
        rt.add_system_named("rumour", |w: &World, out: &mut Output| {
            let n = w.messages::<Cry>().len();
            if n > 0 {
                for (e, (_,)) in w.query::<(&Hp,)>() {
                    out.write::<Hp>(e, 0.001 * n as f32);
                }
            }
        });
    };
    let cluster = || Cluster::new(model::bands(), model::world, everyone).frames(30);
    let one = cluster().run_in_one_process().unwrap();
    let two = cluster().run(timely::Config::process(2)).unwrap().unwrap();
    assert_ne!(checksums(&two), checksums(&one));
}

/// The model plus a burst: in frame 3, every 40th agent spawns (with `Output::spawn`,
/// whose provisional id the cluster replaces) two newborns equal to each other at its
/// own position, and one elsewhere — 5 units to its right, still within reach.
fn with_a_burst(rt: &mut Runtime) {
    model::systems(rt);
    rt.add_system_named("burst", |w: &World, out: &mut Output| {
        // `Time::frame` is 2 during frame 3.
        if w.resource::<Time>().frame != 2 {
            return;
        }
        for (e, (p,)) in w.query::<(&Pos,)>() {
            if e.index() % 40 == 0 {
                for _ in 0..2 {
                    out.spawn((Pos(p.0), Vel([0.0; 2]), Hp(1.0)));
                }
                out.spawn((Pos([p.0[0] + 5.0, p.0[1]]), Vel([0.1, 0.0]), Hp(2.0)));
            }
        }
    });
}

/// Runs `cluster` in one process and on 2, 3 and 4 shards, asserts that every frame's
/// checksum is the same, and returns the one-process report and the sharded ones.
fn equal_on_2_to_4_shards<P: Partition>(cluster: impl Fn() -> Cluster<P>) -> (Report, Vec<Report>) {
    let one = cluster().run_in_one_process().unwrap();
    let sharded: Vec<Report> = (2..=4)
        .map(|shards| {
            let report = cluster()
                .run(timely::Config::process(shards))
                .unwrap()
                .unwrap();
            assert_eq!(checksums(&report), checksums(&one), "{shards} shards");
            report
        })
        .collect();
    (one, sharded)
}

#[test]
fn spawns_get_the_ids_one_process_gives_them() {
    // The burst's far newborn lands 5 units away: within the mirror range (2 × RANGE).
    let (one, sharded) = equal_on_2_to_4_shards(|| {
        Cluster::new(model::bands(), model::world, with_a_burst).frames(12)
    });
    assert!(one.frames[2].spawned >= 3 * 2_000 / 40, "the burst spawned");
    let born = |r: &Report| r.frames.iter().map(|f| f.spawned).collect::<Vec<_>>();
    for report in &sharded {
        assert_eq!(
            born(report),
            born(&one),
            "{} shards: each spawn once",
            report.shards
        );
    }
}

/// A tag carried by some agents as a child entity: the parent's health last frame.
#[derive(
    Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize, runsync::Checksum,
)]
struct Tag(f32);
impl Component for Tag {
    type Output = Tag;
}

/// The model world with parents and children: every 10th agent carries a [`Tag`].
fn tagged_world() -> World {
    let mut w = model::world();
    w.register_hierarchy();
    w.register::<Tag>(merge::last);
    w.saving::<Tag>().checksumming::<Tag>();
    let parents: Vec<Entity> = (w.query::<(&Pos,)>())
        .map(|(e, _)| e)
        .filter(|e| e.index() % 10 == 0)
        .collect();
    for p in parents {
        w.spawn((Tag(0.0), ChildOf(p)));
    }
    w
}

/// The model, tags copying their parent's health, and every 5th frame agents whose index
/// is a multiple of 7 and who carry nothing getting a tag (a spawned child).
fn tagged_systems(rt: &mut Runtime) {
    model::systems(rt);
    rt.add_system_named("tags", |w: &World, out: &mut Output| {
        for (e, (_, parent)) in w.query::<(&Tag, &ChildOf)>() {
            if let Some(hp) = w.get::<Hp>(parent.0) {
                out.write::<Tag>(e, Tag(hp.0));
            }
        }
        if w.resource::<Time>().frame % 5 == 0 {
            for (e, (_,)) in w.query::<(&Hp,)>() {
                if e.index() % 7 == 0 && w.children(e).is_empty() {
                    out.spawn_deferred((Tag(-1.0), ChildOf(e)));
                }
            }
        }
    });
}

#[test]
fn trees_move_whole_with_their_roots() {
    equal_on_2_to_4_shards(|| {
        Cluster::new(model::bands(), tagged_world, tagged_systems).frames(60)
    });
    // What that covered, counted in one process: parents with children crossing a
    // boundary of 4 bands, parents dying (their tags with them), tags spawned.
    let (width, _) = model::size(2_000);
    let band = |x: f32| ((x / width * 4.0).max(0.0) as usize).min(3);
    let mut w = tagged_world();
    w.set_canonical_order(true);
    let mut rt = Runtime::builder().workers(1).build(w);
    tagged_systems(&mut rt);
    let (mut crossed, mut died, mut born) = (0, 0, 0);
    for _ in 0..60 {
        let before: Vec<(Entity, usize, usize)> = (rt.world().query::<(&Pos,)>())
            .filter(|(e, _)| !rt.world().children(*e).is_empty())
            .map(|(e, (p,))| (e, band(p.0[0]), rt.world().children(e).len()))
            .collect();
        let tags = rt.world().query::<(&Tag,)>().count();
        rt.frame();
        for &(e, b, _) in &before {
            match rt.world().get::<Pos>(e) {
                Some(p) if band(p.0[0]) != b => crossed += 1,
                Some(_) => {}
                None => died += 1,
            }
        }
        born += rt.world().query::<(&Tag,)>().count().saturating_sub(tags);
    }
    assert!(crossed > 5, "{crossed} trees crossed a boundary");
    assert!(died > 5, "{died} parents died with their tags");
    assert!(born > 20, "{born} tags spawned");
}

#[test]
fn a_tree_spawned_in_one_frame_is_refused_with_a_clear_error() {
    // A parent and its child spawned in the same frame: the child's record names the
    // parent by a provisional id, so no order of the spawns is shared by the shards.
    let systems = |rt: &mut Runtime| {
        tagged_systems(rt);
        rt.add_system_named("twins", |w: &World, out: &mut Output| {
            if w.resource::<Time>().frame == 3 {
                let parent = out.spawn((Pos([1.0, 1.0]), Vel([0.0; 2]), Hp(1.0)));
                out.spawn((Tag(0.0), ChildOf(parent)));
            }
        });
    };
    let cluster = || Cluster::new(model::bands(), tagged_world, systems).frames(6);
    match cluster().run_in_one_process() {
        Err(e @ ClusterError::Frame { .. }) => {
            assert!(e.to_string().contains("spawned in the same frame"), "{e}");
        }
        other => panic!("expected a frame error, got {other:?}"),
    }
    // Sharded: every shard stops, with the failing shard, its frame and the cause.
    match cluster().run(timely::Config::process(2)) {
        Err(e @ ClusterError::Shard { frame: 4, .. }) => {
            let ClusterError::Shard { cause, .. } = &e else {
                unreachable!()
            };
            assert!(matches!(**cause, ClusterError::Frame { .. }), "{e}");
            assert!(e.to_string().contains("spawned in the same frame"), "{e}");
        }
        other => panic!("expected a shard's frame error, got {other:?}"),
    }
}

#[test]
fn a_cluster_resumes_from_its_checkpoints_with_the_same_bits() {
    let dir = std::env::temp_dir().join(format!("runsync-cluster-ckpt-{}", std::process::id()));
    let cluster = || Cluster::new(model::bands(), model::world, model::systems).frames(30);
    let full = cluster()
        .checkpoints(10, &dir)
        .run(timely::Config::process(3))
        .unwrap()
        .unwrap();
    assert!(runsync_cluster::checkpoint_path(&dir, 2, 3, 20).exists());
    // Say a shard died during frame 24: every shard goes back to frame 20 and runs on.
    let resumed = cluster()
        .resume(&dir, 20)
        .run(timely::Config::process(3))
        .unwrap()
        .unwrap();
    assert_eq!(resumed.frames.first().map(|f| f.frame), Some(21));
    assert_eq!(checksums(&resumed), checksums(&full)[20..]);
    assert_eq!(checksums(&full), model::reference(30));
    // A checkpoint written by another number of shards is not there.
    let err = cluster()
        .resume(&dir, 20)
        .run(timely::Config::process(2))
        .unwrap_err();
    assert!(
        matches!(&err, ClusterError::Shard { frame: 0, cause, .. }
            if matches!(&**cause, ClusterError::Io { path, .. }
                if path.ends_with("shard-0-of-2-frame-20.runsync"))),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A free port on 127.0.0.1 (bound, then released).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[test]
fn two_processes_on_loopback_give_one_process_bits() {
    let addresses = format!("127.0.0.1:{},127.0.0.1:{}", free_port(), free_port());
    let start = |process: usize| {
        Command::new(env!("CARGO_BIN_EXE_shards"))
            .args(["--processes", "2", "--shards", "1", "--entities", "2000"])
            .args(["--frames", &FRAMES.to_string(), "--checksums"])
            .args(["--process", &process.to_string(), "--addresses", &addresses])
            // The processes prove a cluster key to each other (`--cluster-key`).
            .args(["--cluster-key", "two processes, one key"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let mut children = [start(0), start(1)];
    // Bounded in time: both must finish within a minute.
    let deadline = Instant::now() + Duration::from_secs(60);
    for child in &mut children {
        loop {
            if child.try_wait().unwrap().is_some() {
                break;
            }
            if Instant::now() > deadline {
                for c in &mut children {
                    let _ = c.kill();
                }
                panic!("the processes did not finish within a minute");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    let mut out = String::new();
    children[0]
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    for (i, child) in children.iter_mut().enumerate() {
        let status = child.wait().unwrap();
        let mut err = String::new();
        child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut err)
            .unwrap();
        assert!(status.success(), "process {i} failed: {err}");
    }
    let got: Vec<u64> = out
        .lines()
        .filter_map(|l| l.strip_prefix("frame "))
        .map(|l| {
            let hex = l.split(" checksum 0x").nth(1).expect("a checksum line");
            u64::from_str_radix(hex, 16).unwrap()
        })
        .collect();
    assert_eq!(got, model::reference(FRAMES), "process 0 printed:\n{out}");
    assert!(out.contains("2 shards"), "{out}");
}
