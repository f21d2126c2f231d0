//! The layer checker over the real `src/` of the runsync crate: every file parses, the
//! layer list in `lib.rs` matches the code (every file placed, no upward import) and no
//! import cycle has more than two files. This is how CI keeps the layers true.

use std::path::Path;

use xtask::layers::{self, Options};

#[test]
fn analyses_the_real_source_tree() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../src");
    let sources = layers::load(&src).expect("read src/");
    assert!(sources.iter().any(|s| s.path == "lib.rs"), "no src/lib.rs");
    let analysis = layers::analyze(&sources).expect("every file parses");
    assert!(
        analysis.files.len() > 1,
        "found {} modules",
        analysis.files.len()
    );
    assert_eq!(
        analysis
            .files
            .iter()
            .filter(|f| f.module == "crate")
            .count(),
        1
    );
    // Every file is either a node or accounted for as skipped.
    assert_eq!(analysis.files.len() + analysis.skipped.len(), sources.len());
    assert!(!analysis.edges.is_empty());
    // The layer list, if lib.rs has one, is well-formed, and the report runs.
    let lib = sources.iter().find(|s| s.path == "lib.rs").unwrap();
    layers::parse_layers(&lib.text).expect("a well-formed layer list");
    let report = layers::report(&sources, &Options::default()).expect("report");
    assert!(report.text.contains("largest import cycle: "));
    assert!(report.has_layers, "src/lib.rs lost its layer list");
    assert!(
        report.ok && report.violations == 0 && report.largest_cycle <= 2,
        "the layers of src/ do not hold (largest cycle {}, {} violations); \
         run `cargo xtask layers` for the details:\n{}",
        report.largest_cycle,
        report.violations,
        report.text
    );
}
