//! The arena runs bit for bit the same at 1, 2 and 8 workers, and the same as recorded in
//! `tests/golden/arena.txt` — in every build, `single-threaded` included. A change to a
//! ready-made system that changes the game shows up here; re-record it with
//! `RUNSYNC_BLESS=1 cargo test -p runsync-tools --test arena_golden` and say why in the
//! CHANGELOG.

use runsync::prelude::*;
use runsync::{Checksummer, Time};
use runsync_tools::scenario::{ArenaConfig, build};

/// [`runsync_tools::digest::digest`] with the world checksum's version 1, which is
/// frozen: the golden file guards the game's state, not the checksum's definition.
fn digest(world: &World) -> u64 {
    let mut h = Checksummer::new();
    h.write_u64(world.checksum_v1());
    h.write_u64(world.get_resource::<Time>().map_or(0, |t| t.frame));
    h.finish()
}

/// The digest of the world every 10 frames over 3 waves of a small arena; on the way,
/// the runtime's checksum (blocks on the workers) equals the world's (one thread).
fn run(workers: usize) -> Vec<u64> {
    let mut rt = build(ArenaConfig {
        agents: 1000,
        seed: 11,
        workers,
    });
    let mut digests = Vec::new();
    for f in 1..=180 {
        rt.frame();
        if f % 10 == 0 {
            digests.push(digest(rt.world()));
            assert_eq!(rt.checksum(), rt.world().checksum(), "frame {f}");
        }
    }
    digests
}

#[test]
fn same_bits_at_1_2_and_8_workers_and_matches_golden() {
    let one = run(1);
    for workers in [2, 8] {
        assert_eq!(run(workers), one, "{workers} workers differ from 1");
    }
    let text: String = one.iter().map(|d| format!("{d:016x}\n")).collect();
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden/arena.txt");
    if std::env::var_os("RUNSYNC_BLESS").is_some() {
        std::fs::write(path, &text).unwrap();
        return;
    }
    let golden = std::fs::read_to_string(path).expect(
        "missing golden file; create it with \
         RUNSYNC_BLESS=1 cargo test -p runsync-tools --test arena_golden",
    );
    for (i, (got, want)) in text.lines().zip(golden.lines()).enumerate() {
        assert_eq!(
            got,
            want,
            "frame {} differs from the golden digest",
            (i + 1) * 10
        );
    }
    assert_eq!(text.lines().count(), golden.lines().count());
}
