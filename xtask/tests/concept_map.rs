//! The concept map of `docs/architecture.md` (section "Concept map") against the tree:
//! every path it names exists, relative to the repository root, and it keeps a table for
//! each concept a newcomer looks for. A moved or renamed file fails `cargo test` here
//! until the map follows it.

use std::path::Path;

use xtask::layers::workspace_root;

/// The heading of the section checked.
const HEADING: &str = "## Concept map";

/// The concepts the map must keep, each a `###` heading of the section.
const CONCEPTS: [&str; 13] = [
    "Saves",
    "Snapshots and checksums",
    "Hierarchy",
    "Messages",
    "Resources",
    "Stages",
    "Change marks",
    "Edits and replays",
    "Rollback",
    "Inspector",
    "Shards",
    "Trace files",
    "The worker pool",
];

/// The text of the section under `HEADING`, up to the next `## ` heading; `None` without
/// one.
fn section(doc: &str) -> Option<String> {
    let mut lines = doc.lines().skip_while(|l| l.trim_end() != HEADING);
    lines.next()?;
    let body: Vec<&str> = lines.take_while(|l| !l.starts_with("## ")).collect();
    Some(body.join("\n"))
}

/// The paths a text names: every code span (between backticks) with no space that holds a
/// `/` or ends in a file extension the repository uses.
fn paths(text: &str) -> Vec<&str> {
    text.split('`')
        .skip(1)
        .step_by(2)
        .filter(|span| !span.is_empty() && !span.contains(char::is_whitespace))
        .filter(|span| {
            span.contains('/')
                || [".rs", ".md", ".toml", ".sh", ".html"]
                    .iter()
                    .any(|ext| span.ends_with(ext))
        })
        .collect()
}

/// The paths of `named` that do not exist under `root`.
fn missing<'a>(root: &Path, named: &[&'a str]) -> Vec<&'a str> {
    named
        .iter()
        .copied()
        .filter(|p| !root.join(p).exists())
        .collect()
}

#[test]
fn every_path_the_concept_map_names_exists() {
    let path = workspace_root().join("docs/architecture.md");
    let doc = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let map = section(&doc).unwrap_or_else(|| {
        panic!("docs/architecture.md has no `{HEADING}` section: the map of where each concept's files are")
    });
    let named = paths(&map);
    assert!(
        named.len() >= 20,
        "the concept map names {} paths; a table of files per concept is expected",
        named.len()
    );
    let gone = missing(&workspace_root(), &named);
    assert!(
        gone.is_empty(),
        "docs/architecture.md's concept map names {} paths that do not exist (moved or \
         renamed? update the map):\n  {}",
        gone.len(),
        gone.join("\n  ")
    );
}

#[test]
fn the_concept_map_keeps_a_table_for_each_concept() {
    let doc = std::fs::read_to_string(workspace_root().join("docs/architecture.md")).expect("read");
    let map = section(&doc).expect("a concept map");
    let absent: Vec<&str> = CONCEPTS
        .iter()
        .copied()
        .filter(|c| !map.lines().any(|l| l.trim_end() == format!("### {c}")))
        .collect();
    assert!(
        absent.is_empty(),
        "the concept map has no `### ` heading for: {}",
        absent.join(", ")
    );
    // Each concept's heading is followed by at least one path before the next heading.
    for part in map.split("\n### ").skip(1) {
        let title = part.lines().next().unwrap_or_default();
        assert!(
            !paths(part).is_empty(),
            "the concept map's `{title}` names no file"
        );
    }
}

#[test]
fn the_checker_reports_every_missing_path_and_ignores_other_code() {
    let doc = "# Doc\n\n## Concept map\n\n| `src/lib.rs` | `World::save` | \
               `no/such/file.rs` |\n`Changed<C>` `a b/c` `nowhere.md`\n\n## Next\n`src/gone.rs`\n";
    let map = section(doc).expect("the section is found");
    let named = paths(&map);
    assert_eq!(named, ["src/lib.rs", "no/such/file.rs", "nowhere.md"]);
    assert_eq!(
        missing(&workspace_root(), &named),
        ["no/such/file.rs", "nowhere.md"],
        "both missing paths are reported, the existing one is not"
    );
    assert!(section("# Doc\n\n## Concepts\n").is_none());
    assert!(paths(&section("## Concept map\nno code here\n").unwrap()).is_empty());
}
