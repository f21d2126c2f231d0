//! The past finds of the fuzz target `request` (`fuzz/regressions/request/`), replayed
//! through the same harness on every `cargo test` (no nightly toolchain needed): each is
//! answered with a status the API documents, never a panic, and the game runs on.

mod common;

use std::path::Path;

use runsync_inspect::fuzzing::{Harness, decode};

#[test]
fn the_request_fuzzers_finds_stay_fixed() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/regressions/request");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no regressions in {}", dir.display());
    for path in files {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let data = std::fs::read(&path).unwrap();
        let Some((raw, remote)) = decode(&data) else {
            continue;
        };
        let mut rt = common::runtime(1);
        let mut inspector = Harness::new(4, 8);
        for _ in 0..6 {
            inspector.frame(&mut rt).unwrap();
        }
        let (status, body) = inspector.request(&mut rt, &raw, remote);
        let text = String::from_utf8_lossy(&body);
        assert!(
            [200, 400, 401, 403, 404, 405, 408, 409, 411, 413, 431].contains(&status),
            "{name}: {status} {text}"
        );
        if name == "timeline-since-u64-max" {
            assert_eq!(status, 400, "{name}: {text}");
            assert!(text.contains("`since` is 18446744073709551615"), "{text}");
        }
        inspector.frame(&mut rt).unwrap();
    }
}
