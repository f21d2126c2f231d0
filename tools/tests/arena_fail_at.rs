//! `arena --fail-at N`: one system panics in frame N; the run goes on, the report names the
//! failed frame and the exit status is 1. Runs the built `arena` binary.

use std::process::Command;

fn arena(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_arena"))
        .args(["--entities", "200", "--frames", "8", "--workers", "2"])
        .args(args)
        .output()
        .expect("the arena binary runs")
}

#[test]
fn a_failed_frame_is_reported_and_fails_the_run() {
    let out = arena(&["--fail-at", "3"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(1),
        "stdout:\n{stdout}\nstderr:\n{stderr}"
    );
    let failed: Vec<&str> = stdout.lines().filter(|l| l.starts_with("failed")).collect();
    assert_eq!(failed.len(), 1, "exactly one failed frame:\n{stdout}");
    assert!(
        failed[0].contains("frame 3 failed: system `FailAt`")
            && failed[0].contains("arena: --fail-at 3: this frame fails on purpose"),
        "{}",
        failed[0]
    );
    // The panic itself is printed by the panic hook.
    assert!(stderr.contains("this frame fails on purpose"), "{stderr}");
}

#[test]
fn json_lists_the_failure_and_stderr_says_it() {
    let out = arena(&["--fail-at", "1", "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    let failures = json["failures"].as_array().expect("a failures list");
    assert_eq!(failures.len(), 1);
    assert!(
        failures[0]
            .as_str()
            .unwrap()
            .starts_with("frame 1 failed: system `FailAt`")
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("arena: frame 1 failed"), "{stderr}");
}

#[test]
fn without_the_flag_nothing_fails() {
    let out = arena(&[]);
    assert!(out.status.success());
    assert!(!String::from_utf8_lossy(&out.stdout).contains("failed"));
}

#[test]
fn frames_count_from_one() {
    let out = arena(&["--fail-at", "0"]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "clap usage error: there is no frame 0"
    );
}

#[test]
fn fail_at_conflicts_with_the_run_comparisons() {
    let out = arena(&["--fail-at", "1", "--check-determinism"]);
    assert_eq!(out.status.code(), Some(2), "clap usage error");
}
