//! `arena --canonical`: the arena in canonical order (`World::set_canonical_order`) is
//! deterministic across worker counts like the default order (the determinism check's
//! reference run is in canonical order too), gives other bits than the default order once
//! deaths and waves take rows out of creation order, and refuses replays (which start in
//! creation order).

use std::process::Command;

fn arena(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_arena"))
        .args(["--entities", "400", "--frames", "30", "--workers", "2"])
        .args(args)
        .output()
        .expect("the arena runs")
}

#[test]
fn canonical_order_is_deterministic_across_workers() {
    let out = arena(&["--canonical", "--check-determinism"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // "on 2 workers and on 1 worker" (the `single-threaded` build runs on 1).
    assert!(
        text.contains("ok: 30 frames bitwise identical on"),
        "{text}"
    );
}

#[test]
fn canonical_order_changes_the_bits() {
    // What `--canonical` does to the runtime, through the library: another iteration
    // order, so other values. Compared by a digest of every entity that does not depend
    // on storage order (`World::checksum` walks tables in the order in force).
    let run = |canonical: bool| {
        let mut rt = runsync_tools::scenario::build(runsync_tools::scenario::ArenaConfig {
            agents: 2_000,
            seed: 1,
            workers: 2,
        });
        rt.world_mut().set_canonical_order(canonical);
        (0..150)
            .map(|_| {
                rt.frame();
                let w = rt.world();
                (w.query::<()>())
                    .filter_map(|(e, ())| w.entity_checksum(e))
                    .fold(0u64, u64::wrapping_add)
            })
            .collect::<Vec<_>>()
    };
    assert_ne!(run(true), run(false));
}

#[test]
fn canonical_order_refuses_replays() {
    let out = arena(&[
        "--canonical",
        "--record",
        "/nonexistent/never-written.replay",
    ]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("cannot be used with"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
