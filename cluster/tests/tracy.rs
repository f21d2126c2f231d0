//! What Tracy sees of a sharded run (`--features tracy`): one frame mark per frame (not one
//! per shard), and each shard's values in plots of their own (`runsync entities [shard
//! 1]`, `cluster ghosts sent [shard 1]`), not alternating in one. Run with
//! `cargo test -p runsync-cluster --features tracy --test tracy`. One test in this binary:
//! the frame marks are counted process-wide.
#![cfg(feature = "tracy")]

use runsync_cluster::model;
use runsync_cluster::{Cluster, timely};

#[test]
fn a_sharded_run_marks_each_frame_once_and_plots_each_shard_apart() {
    let before = runsync::__tracy::frame_marks();
    let report = Cluster::new(model::bands(), model::world, model::systems)
        .frames(12)
        .run(timely::Config::process(2))
        .expect("the run succeeds")
        .expect("shard 0 is here");
    assert_eq!(report.frames.len(), 12);
    assert_eq!(
        runsync::__tracy::frame_marks() - before,
        12,
        "one frame mark per frame, whatever the shard count"
    );
    let plots = runsync::__tracy::plot_names();
    for shard in 0..2 {
        for name in [
            "runsync entities",
            "runsync merged",
            "runsync component bytes",
            "cluster ghosts sent",
            "cluster migrations",
            "cluster bytes sent",
        ] {
            let want = format!("{name} [shard {shard}]");
            assert!(plots.contains(&want), "no plot {want:?} in {plots:?}");
        }
    }
    assert!(
        !plots.iter().any(|p| p == "runsync entities"),
        "no shard plots into the unlabelled plot: {plots:?}"
    );
}
