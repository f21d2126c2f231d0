//! Rollback netcode in miniature (the loop GGRS-style libraries drive): two players, the
//! remote player's input arrives `DELAY` frames late. Each frame the game runs at once
//! with a *predicted* remote input (the last one confirmed) and saves a snapshot before
//! the frame. When a confirmed input contradicts the prediction for frame k, the game
//! restores the snapshot taken before frame k and re-simulates frames k.. with the
//! corrected inputs. At the end its checksum equals that of a game that knew every input
//! in time — bit for bit.
//!
//! ```sh
//! cargo run --example rollback
//! ```
//!
//! What makes this work: every component opts into snapshots and checksums where it is
//! declared (`#[component(.., snapshot, checksum)]`, `#[derive(Checksum)]`); the inputs of
//! a frame are given with `Runtime::frame_with`, which makes them the `Input<Inputs>`
//! resource systems read (`World::input`) and part of every snapshot; systems keep no
//! state of their own across frames (a system's `self` is not in the snapshot).

use runsync::RuntimeSnapshot;
use runsync::prelude::*;

const FRAMES: u64 = 120;
/// How many frames late the remote input arrives.
const DELAY: u64 = 4;

/// A player's position on a line; systems emit moves (summed).
#[derive(Component, Checksum, Clone, Copy, Debug, PartialEq)]
#[component(output = i32, merge = |p: &mut Pos, moves: &[i32]| p.0 += moves.iter().sum::<i32>(), snapshot, checksum)]
struct Pos(i32);

/// Which player (0 local, 1 remote) an entity is.
#[derive(Component, Checksum, Clone, Copy, Debug, PartialEq)]
#[component(merge = merge::last, snapshot, checksum)]
struct Player(u8);

/// A shot: flies, and despawns when its time is up.
#[derive(Component, Checksum, Clone, Copy, Debug, PartialEq)]
#[component(merge = merge::last, snapshot, checksum)]
struct Shot {
    speed: i32,
    frames_left: u32,
}

/// One frame's inputs: -1 / 0 / +1 moves, 2 fires.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Inputs([i8; 2]);

/// What the players "press" on frame `f` (the remote one changes its mind often).
fn pressed(player: usize, f: u64) -> i8 {
    let x = (f * 2_654_435_761 + player as u64 * 97) >> 7;
    [-1, 0, 1, 2][(x % 4) as usize]
}

fn game() -> Runtime {
    let mut world = World::new();
    world.register_default::<Pos>();
    world.register_default::<Player>();
    world.register_default::<Shot>();
    assert!(
        world.unchecksummed().is_empty(),
        "every type counts in the checksum"
    );
    world.spawn((Pos(0), Player(0)));
    world.spawn((Pos(100), Player(1)));
    let mut rt = Runtime::builder().workers(2).build(world);
    rt.add_system_named("players", |w: &World, out: &mut Output| {
        let inputs = w.input::<Inputs>().0;
        for (e, (p, player)) in w.query::<(&Pos, &Player)>() {
            match inputs[usize::from(player.0)] {
                2 => {
                    out.spawn((
                        Pos(p.0),
                        Shot {
                            speed: if player.0 == 0 { 3 } else { -3 },
                            frames_left: 10,
                        },
                    ));
                }
                step => out.write::<Pos>(e, i32::from(step)),
            }
        }
    });
    rt.add_system_named("shots", |w: &World, out: &mut Output| {
        for (e, (s,)) in w.query::<(&Shot,)>() {
            if s.frames_left == 0 {
                out.despawn(e);
            } else {
                out.write::<Pos>(e, s.speed);
                out.write::<Shot>(
                    e,
                    Shot {
                        frames_left: s.frames_left - 1,
                        ..*s
                    },
                );
            }
        }
    });
    rt
}

fn main() {
    // The game as it would be with every input known in time.
    let mut truth = game();
    for f in 0..FRAMES {
        truth.frame_with(Inputs([pressed(0, f), pressed(1, f)]));
    }

    // The networked game.
    let mut rt = game();
    // Entry `f % len` holds the state before frame `f`.
    let len = (DELAY + 2) as usize;
    let mut ring: Vec<RuntimeSnapshot> = (0..len).map(|_| RuntimeSnapshot::new()).collect();
    // The remote input each frame used (a prediction until confirmed).
    let mut used_remote: Vec<i8> = Vec::new();
    let mut confirmed_remote = 0i8;
    let (mut rollbacks, mut resimulated) = (0, 0);
    // Frames FRAMES.. run nothing: they only let the last remote inputs arrive.
    for f in 0..FRAMES + DELAY {
        let ran = f.min(FRAMES); // frames run so far
        // The remote input of frame `k = f - DELAY` arrives.
        if let Some(k) = f.checked_sub(DELAY) {
            confirmed_remote = pressed(1, k);
            if used_remote[k as usize] != confirmed_remote {
                // Mispredicted: back to the state before frame k; re-run k..ran with the
                // confirmed input on k and the new prediction (the same value) after it.
                rt.restore(&ring[k as usize % len]);
                rollbacks += 1;
                for j in k..ran {
                    used_remote[j as usize] = confirmed_remote;
                    rt.snapshot_into(&mut ring[j as usize % len])
                        .expect("every type is opted in");
                    rt.frame_with(Inputs([pressed(0, j), confirmed_remote]));
                    resimulated += 1;
                }
            }
        }
        if f < FRAMES {
            rt.snapshot_into(&mut ring[f as usize % len])
                .expect("every type is opted in");
            used_remote.push(confirmed_remote); // predict: the last confirmed input repeats
            rt.frame_with(Inputs([pressed(0, f), confirmed_remote]));
        }
    }

    println!(
        "{FRAMES} frames, remote input {DELAY} frames late: {rollbacks} rollbacks, \
         {resimulated} frames re-simulated"
    );
    println!(
        "checksum {:016x} (networked) vs {:016x} (inputs known in time)",
        rt.world().checksum(),
        truth.world().checksum()
    );
    match truth.world().first_difference(rt.world()) {
        None => println!("identical"),
        Some(d) => {
            println!("DESYNC: {d}");
            std::process::exit(1);
        }
    }
    assert_eq!(rt.world().checksum(), truth.world().checksum());
}
