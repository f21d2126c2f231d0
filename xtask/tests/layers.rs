//! The layer checker over the real `src/` of the runsync crate: every file parses, the
//! layer list in `lib.rs` matches the code (every file placed, no upward import), no
//! import cycle has more than two files, and no module takes a name through `lib.rs`'s
//! re-exports. The last also holds in every other crate of the workspace. This is how CI
//! keeps the layers true.

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
        "the layers of src/ do not hold (largest cycle {}, {} violations, {} imports through \
         lib.rs's re-exports); run `cargo xtask layers` for the details:\n{}",
        report.largest_cycle,
        report.violations,
        report.reexport_uses,
        report.text
    );
}

/// The workspace's members, from the `members = [..]` list of its `Cargo.toml`.
fn workspace_members(root: &Path) -> Vec<String> {
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).expect("read Cargo.toml");
    let list = manifest
        .split_once("members = [")
        .and_then(|(_, rest)| rest.split_once(']'))
        .expect("a `members = [..]` list")
        .0;
    list.split(',')
        .map(|m| m.trim().trim_matches('"').to_owned())
        .filter(|m| !m.is_empty())
        .collect()
}

/// Internal code names the module that defines an item, not the name the crate root
/// re-exports it under (`crate::entity::Entity`, not `crate::Entity`), in every library
/// of the workspace: each such path is named with its file, line and defining module.
#[test]
fn no_module_imports_through_its_crate_roots_reexports() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let members = workspace_members(&root);
    assert!(members.len() > 1, "members: {members:?}");
    let mut checked = Vec::new();
    let mut found = Vec::new();
    for member in &members {
        let src = root.join(member).join("src");
        if !src.join("lib.rs").exists() {
            continue;
        }
        let sources = layers::load(&src).expect("read the crate's src/");
        let shown = if member == "." {
            "src".to_owned()
        } else {
            format!("{member}/src")
        };
        for r in layers::root_reexports(&sources).expect("every file parses") {
            found.push(format!("{shown}/{r}"));
        }
        checked.push(shown);
    }
    assert!(checked.contains(&"src".to_owned()), "checked: {checked:?}");
    assert!(
        found.is_empty(),
        "{} paths take a name through their crate root's re-exports; name the defining \
         module instead:\n{}",
        found.len(),
        found.join("\n")
    );
}
