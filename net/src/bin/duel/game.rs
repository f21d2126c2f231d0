//! The duel: two to four ships in a walled arena, each steered by one player, shooting at
//! the others. A hit costs one hit point; a ship at zero respawns at its spawn point and
//! every other player scores. Integer positions (1/16 of a cell), so there is no float in
//! the game state at all.
//!
//! Shared by the `duel` binary and this crate's tests (`#[path]`-included), so the game
//! the tests play over the network is the one people play.

use runsync::prelude::*;
use runsync_net::PlayerInputs;
use serde::{Deserialize, Serialize};

/// Arena width and height, in cells (what a terminal draws).
pub(crate) const WIDTH: i32 = 60;
/// See [`WIDTH`].
pub(crate) const HEIGHT: i32 = 20;
/// Sub-cell units per cell.
pub(crate) const UNIT: i32 = 16;
/// Ship speed, units per frame.
const SPEED: i32 = 4;
/// Bullet speed, units per frame.
const BULLET_SPEED: i32 = 12;
/// Frames a bullet lives.
const BULLET_TTL: u16 = 90;
/// Frames between shots.
const COOLDOWN: u8 = 12;
/// Hit points of a fresh ship.
pub(crate) const MAX_HP: i32 = 5;
/// A bullet this close (in units, on both axes) to an enemy ship hits it.
const HIT: i32 = UNIT * 3 / 2;
/// The most players a duel has (one per side of the arena).
pub(crate) const MAX_PLAYERS: usize = 4;

/// One player's input: which of up, down, left, right and fire are held.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Pad(pub(crate) u8);

impl Pad {
    pub(crate) const UP: u8 = 1;
    pub(crate) const DOWN: u8 = 2;
    pub(crate) const LEFT: u8 = 4;
    pub(crate) const RIGHT: u8 = 8;
    pub(crate) const FIRE: u8 = 16;

    fn held(self, bit: u8) -> bool {
        self.0 & bit != 0
    }

    /// The direction held, each axis -1, 0 or 1.
    pub(crate) fn dir(self) -> (i32, i32) {
        let axis = |neg, pos| i32::from(self.held(pos)) - i32::from(self.held(neg));
        (axis(Pad::LEFT, Pad::RIGHT), axis(Pad::UP, Pad::DOWN))
    }
}

/// A ship, played by `player`.
#[derive(Component, Checksum, Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[component(merge = merge::last, snapshot, save, checksum)]
pub(crate) struct Ship {
    pub(crate) player: u8,
}

/// Position in units; systems emit moves, summed.
#[derive(Component, Checksum, Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[component(output = (i32, i32), merge = |p: &mut Pos, d: &[(i32, i32)]| for &(dx, dy) in d { p.x += dx; p.y += dy; }, snapshot, save, checksum)]
pub(crate) struct Pos {
    pub(crate) x: i32,
    pub(crate) y: i32,
}

/// The last direction a ship moved: its shots fly towards the opposite side, drifting
/// across as it last moved (up or down for players 0 and 1, left or right for 2 and 3).
#[derive(Component, Checksum, Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[component(merge = merge::last, snapshot, save, checksum)]
pub(crate) struct Facing {
    pub(crate) dx: i32,
    pub(crate) dy: i32,
}

/// Frames until the ship may fire again.
#[derive(Component, Checksum, Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[component(merge = merge::last, snapshot, save, checksum)]
pub(crate) struct Cooldown(pub(crate) u8);

/// Hit points; systems emit changes, summed.
#[derive(Component, Checksum, Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[component(output = i32, merge = |h: &mut Hp, d: &[i32]| h.0 += d.iter().sum::<i32>(), snapshot, save, checksum)]
pub(crate) struct Hp(pub(crate) i32);

/// Points scored; systems emit points, summed.
#[derive(Component, Checksum, Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[component(output = u32, merge = |s: &mut Score, d: &[u32]| s.0 += d.iter().sum::<u32>(), snapshot, save, checksum)]
pub(crate) struct Score(pub(crate) u32);

/// A bullet fired by `owner`'s ship, moving `(dx, dy)` units a frame for `ttl` more
/// frames; systems emit the new `ttl`.
#[derive(Component, Checksum, Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[component(output = u16, merge = |b: &mut Bullet, d: &[u16]| b.ttl = d[d.len() - 1], snapshot, save, checksum)]
pub(crate) struct Bullet {
    pub(crate) owner: u8,
    pub(crate) dx: i32,
    pub(crate) dy: i32,
    pub(crate) ttl: u16,
}

/// A ship's spawn point, in units: player 0 at the middle of the left side, 1 of the
/// right side, 2 of the top, 3 of the bottom.
fn spawn_point(player: u8) -> (i32, i32) {
    let (x, y) = match player {
        0 => (4, HEIGHT / 2),
        1 => (WIDTH - 5, HEIGHT / 2),
        2 => (WIDTH / 2, 2),
        _ => (WIDTH / 2, HEIGHT - 3),
    };
    (x * UNIT, y * UNIT)
}

/// Where a fresh ship of `player` faces: towards the opposite side.
fn spawn_facing(player: u8) -> Facing {
    let (dx, dy) = match player {
        0 => (1, 0),
        1 => (-1, 0),
        2 => (0, 1),
        _ => (0, -1),
    };
    Facing { dx, dy }
}

/// A shot's velocity, in units a frame: straight at the opposite side, drifting a quarter
/// as fast across as the ship last moved.
fn aim(player: u8, facing: &Facing) -> (i32, i32) {
    let drift = |d: i32| d * BULLET_SPEED / 4;
    match player {
        0 => (BULLET_SPEED, drift(facing.dy)),
        1 => (-BULLET_SPEED, drift(facing.dy)),
        2 => (drift(facing.dx), BULLET_SPEED),
        _ => (drift(facing.dx), -BULLET_SPEED),
    }
}

/// The two-player duel's runtime on `workers` workers ([`build_players`] with 2).
pub(crate) fn build(workers: usize) -> Runtime {
    build_players(workers, 2)
}

/// The duel's runtime for `players` players (2 to [`MAX_PLAYERS`]) on `workers` workers:
/// each ship at its spawn point, the systems `steer`, `fly`, `hit`, `respawn`. With 2
/// players it is the game of every earlier version, checksum for checksum.
pub(crate) fn build_players(workers: usize, players: usize) -> Runtime {
    build_with(workers, players, None)
}

/// Opts every component type of the duel into `Debug` text (an inspector's entity view
/// and provenance show them).
pub(crate) fn show_types(world: &mut World) {
    world
        .debugging::<Ship>()
        .debugging::<Pos>()
        .debugging::<Facing>()
        .debugging::<Cooldown>()
        .debugging::<Hp>()
        .debugging::<Score>()
        .debugging::<Bullet>();
}

/// [`build_players`], except that in frame `at` the `steer` system of this build also
/// nudges player `player`'s ship one unit right: a game that parts from every other
/// peer's there, for testing desync reports (`duel --desync-at`). The same systems in
/// the same order, so until that frame its states are the other builds', bit for bit.
pub(crate) fn build_perturbed(workers: usize, players: usize, player: usize, at: u64) -> Runtime {
    build_with(workers, players, Some((player, at)))
}

fn build_with(workers: usize, players: usize, perturb: Option<(usize, u64)>) -> Runtime {
    assert!(
        (2..=MAX_PLAYERS).contains(&players),
        "a duel has 2 to {MAX_PLAYERS} players, not {players}"
    );
    let mut world = World::new();
    world.register_default::<Ship>();
    world.register_default::<Pos>();
    world.register_default::<Facing>();
    world.register_default::<Cooldown>();
    world.register_default::<Hp>();
    world.register_default::<Score>();
    world.register_default::<Bullet>();
    for player in 0..players as u8 {
        let (x, y) = spawn_point(player);
        world.spawn((
            Ship { player },
            Pos { x, y },
            spawn_facing(player),
            Cooldown(0),
            Hp(MAX_HP),
            Score(0),
        ));
    }
    let mut rt = Runtime::builder()
        .workers(workers)
        .fixed_hz(60)
        .build(world);
    match perturb {
        None => rt.add_system_named("steer", steer),
        Some((player, at)) => rt.add_system_named("steer", move |w: &World, out: &mut Output| {
            steer(w, out);
            if w.resource::<Time>().frame == at {
                for (e, (ship,)) in w.query::<(&Ship,)>() {
                    if usize::from(ship.player) == player {
                        out.write::<Pos>(e, (1, 0));
                    }
                }
            }
        }),
    };
    rt.add_system_named("fly", fly);
    rt.add_system_named("hit", hit);
    rt.add_system_named("respawn", respawn);
    rt
}

/// Ships move as their player's pad says (a departed player's ship stands still), turn,
/// and fire when the cooldown allows.
fn steer(w: &World, out: &mut Output) {
    let pads = w.input::<PlayerInputs<Pad>>();
    for (e, (ship, pos, facing, cooldown)) in w.query::<(&Ship, &Pos, &Facing, &Cooldown)>() {
        let player = usize::from(ship.player);
        let pad = if player < pads.len() && pads.is_connected(player) {
            pads.get(player)
        } else {
            Pad::default()
        };
        let (dx, dy) = pad.dir();
        let x = (pos.x + dx * SPEED).clamp(0, (WIDTH - 1) * UNIT);
        let y = (pos.y + dy * SPEED).clamp(0, (HEIGHT - 1) * UNIT);
        if (x, y) != (pos.x, pos.y) {
            out.write::<Pos>(e, (x - pos.x, y - pos.y));
        }
        if (dx, dy) != (0, 0) && (dx, dy) != (facing.dx, facing.dy) {
            out.write::<Facing>(e, Facing { dx, dy });
        }
        if cooldown.0 > 0 {
            out.write::<Cooldown>(e, Cooldown(cooldown.0 - 1));
        } else if pad.held(Pad::FIRE) {
            out.write::<Cooldown>(e, Cooldown(COOLDOWN));
            let (dx, dy) = aim(ship.player, facing);
            out.spawn((
                Bullet {
                    owner: ship.player,
                    dx,
                    dy,
                    ttl: BULLET_TTL,
                },
                Pos { x: pos.x, y: pos.y },
            ));
        }
    }
}

/// Bullets fly, age, and vanish at the walls or when their time is up.
fn fly(w: &World, out: &mut Output) {
    for (e, (b, pos)) in w.query::<(&Bullet, &Pos)>() {
        let (x, y) = (pos.x + b.dx, pos.y + b.dy);
        let outside = !(0..WIDTH * UNIT).contains(&x) || !(0..HEIGHT * UNIT).contains(&y);
        if b.ttl == 0 || outside {
            out.despawn(e);
        } else {
            out.write::<Pos>(e, (b.dx, b.dy));
            out.write::<Bullet>(e, b.ttl - 1);
        }
    }
}

/// A bullet that reaches an enemy ship costs it a hit point and is gone.
fn hit(w: &World, out: &mut Output) {
    for (b, (bullet, bp)) in w.query::<(&Bullet, &Pos)>() {
        for (s, (ship, sp, _)) in w.query::<(&Ship, &Pos, &Hp)>() {
            if ship.player != bullet.owner && (bp.x - sp.x).abs() < HIT && (bp.y - sp.y).abs() < HIT
            {
                out.write::<Hp>(s, -1);
                out.despawn(b);
                break;
            }
        }
    }
}

/// A ship out of hit points respawns whole at its spawn point; every other player scores
/// (with two players, the one who shot it).
fn respawn(w: &World, out: &mut Output) {
    for (e, (ship, pos, hp)) in w.query::<(&Ship, &Pos, &Hp)>() {
        if hp.0 > 0 {
            continue;
        }
        let (x, y) = spawn_point(ship.player);
        out.write::<Pos>(e, (x - pos.x, y - pos.y));
        out.write::<Hp>(e, MAX_HP - hp.0);
        for (other, (o, _)) in w.query::<(&Ship, &Score)>() {
            if o.player != ship.player {
                out.write::<Score>(other, 1);
            }
        }
    }
}

/// The scripted pad of `player` for frame `frame` (the headless mode's, and the tests'):
/// a direction and the fire button that change every 5 to 20 frames, from a hash, so
/// predictions (that the last input is held) are often right and sometimes wrong.
pub(crate) fn scripted(player: usize, frame: u64) -> Pad {
    // Holds of 5..20 frames: the hold a frame is in comes from a hash of 20-frame
    // windows and the offset within it.
    let window = frame / 20;
    let cut = 5 + mix(window ^ ((player as u64) << 40)) % 15;
    let hold = window * 2 + u64::from(frame % 20 >= cut);
    let h = mix(hold.wrapping_mul(31) ^ ((player as u64 + 1) << 48));
    Pad((h & 0x1f) as u8)
}

/// The input a frame runs with when each of `players` players plays [`scripted`] through
/// a session with `delay` frames of input delay: ggrs gives the default input to the
/// first `delay` frames.
pub(crate) fn scripted_inputs(players: usize, frame: u64, delay: u64) -> PlayerInputs<Pad> {
    PlayerInputs::new(
        (0..players)
            .map(|p| {
                if frame <= delay {
                    Pad::default()
                } else {
                    scripted(p, frame)
                }
            })
            .collect(),
    )
}

/// The checksum after each of frames `1..=frames` of a local two-player run with
/// [`scripted_inputs`]: what every peer's confirmed frames must show. (The tests' name
/// for [`truth_players`] with 2; the binary calls that.)
#[allow(dead_code)]
pub(crate) fn truth(frames: u64, delay: u64) -> Vec<u64> {
    truth_of(build(1), frames, delay)
}

/// [`truth`] of a game of `players` players ([`build_players`], every player scripted).
pub(crate) fn truth_players(players: usize, frames: u64, delay: u64) -> Vec<u64> {
    truth_of(build_players(1, players), frames, delay)
}

/// [`truth`] of another build of the game: every player whose ship is in it plays its
/// script.
pub(crate) fn truth_of(mut rt: Runtime, frames: u64, delay: u64) -> Vec<u64> {
    let players = rt.world().query::<(&Ship,)>().count();
    (1..=frames)
        .map(|f| {
            rt.frame_with(scripted_inputs(players, f, delay));
            rt.world().checksum()
        })
        .collect()
}

/// splitmix64's finaliser.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A ship as drawn: player, x and y in cells, hit points, score.
pub(crate) type ShipView = (u8, i32, i32, i32, u32);

/// Ships and bullets, for drawing: a [`ShipView`] per ship by player, and `(x, y)` per
/// bullet, in cells.
pub(crate) fn scene(w: &World) -> (Vec<ShipView>, Vec<(i32, i32)>) {
    let mut ships: Vec<_> = w
        .query::<(&Ship, &Pos, &Hp, &Score)>()
        .map(|(_, (s, p, hp, score))| (s.player, p.x / UNIT, p.y / UNIT, hp.0, score.0))
        .collect();
    ships.sort_by_key(|s| s.0);
    let bullets = w
        .query::<(&Bullet, &Pos)>()
        .map(|(_, (_, p))| (p.x / UNIT, p.y / UNIT))
        .collect();
    (ships, bullets)
}
