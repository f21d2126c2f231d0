//! The glossary of `docs/architecture.md` (section "Glossary") against the tree: every
//! name its "Retired names" table lists is gone from the code of the workspace, except in
//! the files the table lets keep it (a deprecated alias). A retired name that comes back
//! as an identifier fails `cargo test` here, so one word keeps one meaning.
//!
//! Code only: comments are left out (a comment may still say what a name used to be),
//! and so are string literals, which only messages and test labels hold here.

use std::path::{Path, PathBuf};

use xtask::layers::workspace_root;

use proc_macro2::{TokenStream, TokenTree};

/// The heading of the glossary and of its table of retired names.
const GLOSSARY: &str = "## Glossary";
const RETIRED: &str = "### Retired names";

/// This test, which names every retired name to check the checker.
const THIS_FILE: &str = "xtask/tests/glossary.rs";

/// Folders never searched: build outputs and the fuzzer's data.
const SKIPPED: [&str; 5] = [
    "target",
    ".git",
    "fuzz/target",
    "fuzz/corpus",
    "fuzz/artifacts",
];

/// One row of the retired names' table.
#[derive(Debug, PartialEq)]
struct Retired {
    old: String,
    /// Paths (relative to the root) where the old name may stay.
    allowed: Vec<String>,
}

/// The code spans of a table cell.
fn spans(cell: &str) -> Vec<String> {
    cell.split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_owned)
        .collect()
}

/// The retired names listed under `RETIRED` inside `GLOSSARY`; `None` without them.
fn retired(doc: &str) -> Option<Vec<Retired>> {
    let mut lines = doc.lines().skip_while(|l| l.trim_end() != GLOSSARY);
    lines.next()?;
    let section: Vec<&str> = lines.take_while(|l| !l.starts_with("## ")).collect();
    let at = section.iter().position(|l| l.trim_end() == RETIRED)?;
    let rows = section[at + 1..]
        .iter()
        .take_while(|l| !l.starts_with("### "))
        .filter(|l| l.starts_with('|') && !l.starts_with("|---"))
        .skip(1) // the header
        .filter_map(|l| {
            let cells: Vec<&str> = l.trim().trim_matches('|').split('|').collect();
            let old = spans(cells.first()?).into_iter().next()?;
            let allowed = cells.get(2).map(|c| spans(c)).unwrap_or_default();
            Some(Retired { old, allowed })
        })
        .collect();
    Some(rows)
}

/// Each identifier of `src` with its line (1-based), by Rust's own lexer (proc-macro2):
/// comments, string and char literals are not identifiers, and a raw `r#name` is `name`.
fn identifiers(src: &str) -> Result<Vec<(usize, String)>, String> {
    fn walk(tokens: TokenStream, out: &mut Vec<(usize, String)>) {
        for token in tokens {
            match token {
                TokenTree::Ident(i) => {
                    let name = i.to_string();
                    let name = name.strip_prefix("r#").unwrap_or(&name).to_owned();
                    out.push((i.span().start().line, name));
                }
                TokenTree::Group(g) => walk(g.stream(), out),
                TokenTree::Punct(_) | TokenTree::Literal(_) => {}
            }
        }
    }
    let tokens: TokenStream = src
        .parse()
        .map_err(|e: proc_macro2::LexError| e.to_string())?;
    let mut out = Vec::new();
    walk(tokens, &mut out);
    Ok(out)
}

/// Every `.rs` file under `dir`, outside `SKIPPED`, relative to `root`.
fn rust_files(root: &Path, dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let rel = path.strip_prefix(root).unwrap_or(&path).to_path_buf();
        let rel_text = rel.to_string_lossy().replace('\\', "/");
        if SKIPPED.contains(&rel_text.as_str()) || rel_text == THIS_FILE {
            continue;
        }
        if path.is_dir() {
            rust_files(root, &path, out);
        } else if rel_text.ends_with(".rs") {
            out.push(rel);
        }
    }
}

/// `file:line: text` for each line of code under `root` that names a retired name where
/// the table does not allow it.
fn comebacks(root: &Path, retired: &[Retired]) -> Vec<String> {
    let mut files = Vec::new();
    rust_files(root, root, &mut files);
    files.sort();
    let mut found = Vec::new();
    for file in files {
        let rel = file.to_string_lossy().replace('\\', "/");
        let Ok(text) = std::fs::read_to_string(root.join(&file)) else {
            continue;
        };
        let lines: Vec<&str> = text.lines().collect();
        let idents = match identifiers(&text) {
            Ok(idents) => idents,
            Err(e) => {
                found.push(format!("{rel}: does not lex: {e}"));
                continue;
            }
        };
        for (line, ident) in idents {
            for r in retired {
                if ident == r.old && !r.allowed.contains(&rel) {
                    let text = lines.get(line - 1).map_or("", |l| l.trim());
                    found.push(format!("{rel}:{line}: `{}`: {text}", r.old));
                }
            }
        }
    }
    found
}

#[test]
fn retired_names_do_not_come_back() {
    let path = workspace_root().join("docs/architecture.md");
    let doc = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let retired = retired(&doc).unwrap_or_else(|| {
        panic!("docs/architecture.md has no `{RETIRED}` table under `{GLOSSARY}`")
    });
    assert!(
        retired.len() >= 10,
        "the retired names' table lists {} names; expected the renames it records",
        retired.len()
    );
    let found = comebacks(&workspace_root(), &retired);
    assert!(
        found.is_empty(),
        "names the glossary retired are back in the code (use the new name, or, for a \
         deprecated alias, list its file in docs/architecture.md's `{RETIRED}` table):\n  {}",
        found.join("\n  ")
    );
}

#[test]
fn the_checker_reads_the_table_and_finds_only_code() {
    let doc = "# Doc\n\n## Glossary\n\n| term | meaning |\n|---|---|\n| `Slot` | no |\n\n\
               ### Retired names\n\n| old | new | may remain in |\n|---|---|---|\n\
               | `Slot` | `RowWrite` | `src/lib.rs` |\n| `slot_of` | `column_row_of` | |\n\n\
               ## Next\n| `Gone` | `New` | |\n";
    let r = retired(doc).expect("the table is found");
    assert_eq!(
        r,
        [
            Retired {
                old: "Slot".into(),
                allowed: vec!["src/lib.rs".into()]
            },
            Retired {
                old: "slot_of".into(),
                allowed: vec![]
            },
        ]
    );
    assert!(retired("# Doc\n\n## Glossary\n\nno table\n").is_none());
    // Identifiers, not parts of longer ones; never in comments, strings or chars.
    let one = |src: &str, name: &str| {
        identifiers(src)
            .expect("lexes")
            .iter()
            .any(|(_, i)| i == name)
    };
    assert!(one("let x: Slot<'_, u8> = y;", "Slot"));
    assert!(one("storage.slot_of(e, id)", "slot_of"));
    assert!(!one("entity::Slots::new()", "Slot"));
    assert!(!one("let s = SlotBase::none();", "Slot"));
    assert!(!one("x(); // the old Slot", "Slot"));
    assert!(!one("/* Slot\n Slot */ x();", "Slot"));
    assert!(!one(r#"panic!("a \"Slot\" here")"#, "Slot"));
    assert!(!one("f(\"a\n  Slot\");", "Slot"));
    assert!(!one(r##"f(r#"a "Slot" b"#);"##, "Slot"));
    assert!(!one("let q = '\"'; let s = \"Slot\";", "Slot"));
    assert!(!one(r#"let q = '\''; let s = "Slot";"#, "Slot"));
    assert!(!one(r#"let q = '\u{22}'; let s = "Slot";"#, "Slot"));
    assert!(one("fn f<'a>(x: &'a Slot) {}", "Slot"));
    assert!(one(r#"f("Slot", Slot)"#, "Slot"));
    // Line numbers count the lines of what is left out.
    assert_eq!(
        identifiers("a\n\"x\ny\"\nSlot").expect("lexes").last(),
        Some(&(4, "Slot".to_owned()))
    );
}
