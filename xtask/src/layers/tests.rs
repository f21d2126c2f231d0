//! The checker on small fake crates: edges, cycles, test-only code, layer problems and
//! report lines.

use super::graph::{module_name, module_of};
use super::*;

fn tree(files: &[(&str, &str)]) -> Vec<SourceFile> {
    files.iter().map(|(p, t)| SourceFile::new(*p, *t)).collect()
}

fn names(a: &Analysis, from: &str, to: &str) -> Vec<String> {
    a.edge(from, to)
        .unwrap_or_else(|| panic!("no edge {from} -> {to}: {:#?}", a.edges))
        .names
        .clone()
}

fn modules(a: &Analysis, files: &[usize]) -> Vec<String> {
    files.iter().map(|&f| a.files[f].module.clone()).collect()
}

#[test]
fn three_file_cycle() {
    let a = analyze(&tree(&[
        ("lib.rs", "mod a; mod b; mod c; mod d;"),
        ("a.rs", "use crate::b::B; pub struct A;"),
        ("b.rs", "use crate::c::C; pub struct B;"),
        ("c.rs", "use super::a::A; pub struct C;"),
        ("d.rs", "use crate::a::A;"),
    ]))
    .unwrap();
    assert_eq!(a.files.len(), 5);
    assert_eq!(a.cycles.len(), 1);
    assert_eq!(modules(&a, &a.cycles[0]), ["a", "b", "c"]);
    assert_eq!(a.largest_cycle(), 3);
    assert_eq!(names(&a, "c", "a"), ["A"]);
    assert_eq!(a.edges_within(&a.cycles[0]).len(), 3);
    assert!(a.edge("d", "a").is_some());
    // Declaring modules is not an edge.
    assert!(a.edge("crate", "a").is_none());
}

#[test]
fn use_groups_nesting_self_rename_glob() {
    let a = analyze(&tree(&[
        ("lib.rs", "mod a; mod b; mod x; mod g;"),
        ("a.rs", "pub struct A1;"),
        ("b/mod.rs", "pub mod c; pub struct B;"),
        ("b/c.rs", "pub struct C;"),
        (
            "x.rs",
            "use crate::{a::{self, A1 as Renamed}, b::{c::{C, self as cc}, B}};\n\
             pub(crate) use self::super::b::c::C as C2;",
        ),
        ("g.rs", "use crate::a::*;\nuse crate::b::{c::*};"),
    ]))
    .unwrap();
    assert_eq!(names(&a, "x", "a"), ["A1", "a"]);
    assert_eq!(names(&a, "x", "b"), ["B"]);
    assert_eq!(names(&a, "x", "b::c"), ["C", "c"]);
    assert_eq!(names(&a, "g", "a"), ["*"]);
    assert_eq!(names(&a, "g", "b::c"), ["*"]);
    assert!(a.edge("g", "b").is_none());
    assert!(a.cycles.is_empty());
}

#[test]
fn mod_rs_re_exports_are_edges_declarations_are_not() {
    let a = analyze(&tree(&[
        ("lib.rs", "mod s;"),
        (
            "s/mod.rs",
            "mod t;\nmod u;\npub(crate) use t::{T, f};\npub struct S;",
        ),
        ("s/t.rs", "use super::S;\npub struct T;\npub fn f() {}"),
        ("s/u.rs", "pub struct U;"),
    ]))
    .unwrap();
    assert_eq!(names(&a, "s", "s::t"), ["T", "f"]);
    assert_eq!(names(&a, "s::t", "s"), ["S"]);
    assert!(a.edge("s", "s::u").is_none());
    assert!(a.edge("s::u", "s").is_none());
    assert_eq!(modules(&a, &a.cycles[0]), ["s", "s::t"]);
}

#[test]
fn test_only_code_is_ignored() {
    let a = analyze(&tree(&[
        (
            "lib.rs",
            "mod a; mod b; mod c;\n\
             #[cfg(test)]\nmod helper;\n\
             #[cfg(all(test, not(loom)))]\n#[allow(dead_code)]\npub(crate) mod more;",
        ),
        ("a.rs", "pub struct A;"),
        ("c.rs", "pub struct C;"),
        (
            "b.rs",
            "pub fn b() { let s = \"}\"; let c = '}'; }\n\
             #[cfg(test)]\nmod tests {\n    use crate::a::A;\n    fn f() { let _ = \"{\"; crate::c::C; }\n}\n\
             #[cfg(test)]\npub(crate) fn only_in_tests() -> crate::a::A { crate::a::A }\n\
             #[cfg(test)]\nuse crate::c::C;\n\
             #[cfg(any(test, all(test, loom)))]\nfn gone() { crate::a::A; }\n\
             #[cfg(any(test, feature = \"x\"))]\nfn kept() { crate::c::C; }",
        ),
        ("helper.rs", "use crate::a::A;"),
        ("more.rs", "use crate::a::A;"),
        ("orphan.rs", "use crate::a::A;"),
    ]))
    .unwrap();
    let mods: Vec<&str> = a.files.iter().map(|f| f.module.as_str()).collect();
    assert_eq!(mods, ["a", "b", "c", "crate"]);
    assert!(a.edge("b", "a").is_none(), "{:#?}", a.edges);
    assert_eq!(names(&a, "b", "c"), ["C"]);
    let skipped: Vec<(&str, &str)> = a.skipped.iter().map(|s| (s.path.as_str(), s.why)).collect();
    assert_eq!(
        skipped,
        [
            ("helper.rs", "test-only (#[cfg(test)])"),
            ("more.rs", "test-only (#[cfg(test)])"),
            ("orphan.rs", "not declared by any module"),
        ]
    );
}

#[test]
fn an_external_crate_renamed_at_the_root_is_no_edge() {
    let a = analyze(&tree(&[
        (
            "lib.rs",
            "mod a; mod b;\npub(crate) use other_crate as pool;\npub use a::A;",
        ),
        (
            "a.rs",
            "use crate::pool::Pool;\nuse super::pool::Cost;\npub struct A;",
        ),
        (
            "b.rs",
            "fn f() { crate::pool::helped(); crate::a::A; }\n\
             mod inner { use crate::pool as p; }",
        ),
    ]))
    .unwrap();
    assert!(a.edge("a", "crate").is_none(), "{:#?}", a.edges);
    assert!(a.edge("b", "crate").is_none(), "{:#?}", a.edges);
    assert_eq!(names(&a, "b", "a"), ["A"]);
    assert_eq!(names(&a, "crate", "a"), ["A"]);
    // An alias only counts at the root, and only for a whole crate: the same line in
    // a module, or `crate::x as y`, keeps its edges.
    let a = analyze(&tree(&[
        (
            "lib.rs",
            "mod a; mod b; mod c;\nuse crate::a as pool;\npub struct R;",
        ),
        ("a.rs", "pub struct A;"),
        ("b.rs", "use other_crate as q;\nuse crate::R;"),
        ("c.rs", "use crate::q::X;\nuse crate::pool::A;"),
    ]))
    .unwrap();
    assert_eq!(names(&a, "b", "crate"), ["R"]);
    assert_eq!(names(&a, "c", "crate"), ["pool", "q"]);
}

#[test]
fn inline_paths_macros_and_dollar_crate() {
    let a = analyze(&tree(&[
        (
            "lib.rs",
            "pub mod prelude { pub use crate::x::Q; }\nmod x; mod p; mod user;",
        ),
        ("x/mod.rs", "pub mod y;\npub struct Q;"),
        ("x/y.rs", "pub struct Z;"),
        (
            "p.rs",
            "pub struct Zone;\n\
             macro_rules! zone { () => { $crate::p::Zone }; }\n\
             mod imp { pub fn g() { self::h(); super::super::x::Q; } fn h() {} }",
        ),
        (
            "user.rs",
            "fn f() -> crate::x::Q {\n\
                 let _z = crate::x::y::Z::new();\n\
                 let _ = crate::p::zone!();\n\
                 let _ = <crate::x::y::Z as Default>::default();\n\
                 let _v: Vec<u8> = std::vec::Vec::new();\n\
                 crate::x::Q\n\
             }\n\
             impl crate::prelude::Thing for u8 {}\n\
             pub(in crate::x) fn vis() {}",
        ),
    ]))
    .unwrap();
    assert_eq!(names(&a, "user", "x"), ["Q"]);
    assert_eq!(names(&a, "user", "x::y"), ["Z"]);
    assert_eq!(names(&a, "user", "p"), ["zone!"]);
    assert_eq!(names(&a, "user", "crate"), ["prelude"]);
    assert_eq!(names(&a, "crate", "x"), ["Q"]);
    assert_eq!(names(&a, "p", "x"), ["Q"]);
    // `$crate::p::Zone` inside p and `self::h` in an inline module are self-edges.
    assert!(a.edges.iter().all(|e| e.from != e.to));
    assert_eq!(
        a.edges
            .iter()
            .filter(|e| a.files[e.from].module == "p")
            .count(),
        1
    );
}

#[test]
fn macro_tokens_declare_modules_and_name_paths() {
    let a = analyze(&tree(&[
        (
            "lib.rs",
            "mod a; mod m;\n\
             cfg_if::cfg_if! { if #[cfg(unix)] { mod u; } else { mod w; } }\n\
             macro_rules! both { () => {\n\
                 use $crate::a::{A, B};\n\
                 pub(in crate::m) fn f() -> a::A { $crate::m::made!(); crate::m::M }\n\
             }; }\n\
             things! { #[cfg(test)] mod t; #[cfg(test)] fn g() { crate::m::Hidden; } }",
        ),
        (
            "a.rs",
            "pub struct A; pub struct B;\n\
             impl A {\n    #[cfg(test)]\n    fn h() { crate::m::M; }\n}\n\
             fn f() { #[cfg(test)] { crate::m::M; } }",
        ),
        ("m.rs", "pub struct M;"),
        ("u.rs", "use crate::a::A;"),
        ("w.rs", ""),
        ("t.rs", ""),
    ]))
    .unwrap();
    let mods: Vec<&str> = a.files.iter().map(|f| f.module.as_str()).collect();
    assert_eq!(mods, ["a", "crate", "m", "u", "w"]);
    assert_eq!(names(&a, "crate", "a"), ["A", "B"]);
    assert_eq!(names(&a, "crate", "m"), ["M", "made!"]);
    assert_eq!(names(&a, "u", "a"), ["A"]);
    // A test-only associated function or block is not code.
    assert!(a.edge("a", "m").is_none(), "{:#?}", a.edges);
    assert_eq!(a.skipped[0].path, "t.rs");
    assert_eq!(a.skipped[0].why, "test-only (#[cfg(test)])");
}

#[test]
fn comments_and_literals_are_not_code() {
    let a = analyze(&tree(&[
        ("lib.rs", "mod a; mod b; mod c;"),
        ("b.rs", "pub struct B;"),
        ("c.rs", "pub struct C;"),
        (
            "a.rs",
            r####"//! Module docs naming [`crate::b::B`].
/// See `crate::b::B`.
// use crate::b::B;
/* crate::b::B /* nested: crate::b::B */ still a comment: crate::b::B */
fn f<'a>(x: &'a str) -> char {
    let s = "crate::b::B \" crate::b::B";
    let r = r#"crate::b::B " still raw crate::b::B"#;
    let bytes = b"crate::b::B";
    let q = '"';
    let e = '\'';
    let u = '\u{1F600}';
    'outer: loop { break 'outer; }
    let _ = crate::c::C;
    q
}
#[crate::b::marker]
#[cfg_attr(feature = "x", path = "crate::b::B")]
fn g() {}
"####,
        ),
    ]))
    .unwrap();
    assert!(a.edge("a", "b").is_none(), "{:#?}", a.edges);
    assert_eq!(names(&a, "a", "c"), ["C"]);
}

#[test]
fn unterminated_literals_are_errors() {
    let err = analyze(&tree(&[("lib.rs", "fn f() {\n let s = \"open;\n}")])).unwrap_err();
    assert_eq!(
        (err.line, err.message.as_str()),
        (2, "unterminated string literal")
    );
    let err = analyze(&tree(&[("lib.rs", "/* /* */")])).unwrap_err();
    assert_eq!(err.message, "unterminated block comment");
    let err = analyze(&tree(&[(
        "lib.rs",
        "fn f() {}\n\nconst R: &str = r#\"open\"; ",
    )]))
    .unwrap_err();
    assert_eq!(
        (err.line, err.message.as_str()),
        (3, "unterminated raw string literal")
    );
    let err = analyze(&tree(&[("lib.rs", "mod a;\nfn f() { g(; }")])).unwrap_err();
    assert_eq!(err.line, 2, "{err}");
}

#[test]
fn syntax_errors_name_the_file_and_line() {
    // A test-only file is still read, so a broken one is reported.
    let err = analyze(&tree(&[
        ("lib.rs", "#[cfg(test)]\nmod t;"),
        ("t.rs", "pub struct A;\n\nstruct S { x: u8 y: u8 }"),
    ]))
    .unwrap_err();
    assert_eq!((err.path.as_str(), err.line), ("t.rs", 3), "{err}");
    assert_eq!(err.to_string(), "t.rs:3: expected `,`");
}

const LAYERED_LIB: &str = "\
//! Crate docs.
//!
//! <!-- layers: checked by the layers tool -->
//! ```text
//! 0 leaves: a b
//! # a comment line
//!
//! 1 mid:    {m n} o s
//! 2 top:    t
//! ```
mod a; mod b; mod m; mod n; mod o; mod s; mod t; mod stray;
";

#[test]
fn parses_the_layer_block() {
    let l = parse_layers(LAYERED_LIB).unwrap().unwrap();
    let ranks: Vec<(u32, &str)> = l
        .layers
        .iter()
        .map(|l| (l.rank, l.label.as_str()))
        .collect();
    assert_eq!(ranks, [(0, "leaves"), (1, "mid"), (2, "top")]);
    assert_eq!(l.layers[1].modules, ["m", "n", "o", "s"]);
    assert_eq!(l.layers[1].faces, [vec!["m".to_owned(), "n".to_owned()]]);
    assert_eq!(parse_layers("//! no marker\nmod a;").unwrap(), None);
    let bad = "//! <!-- layers -->\n//! ```\n//! leaves: a\n//! ```";
    assert_eq!(parse_layers(bad).unwrap_err().line, 3);
    let unclosed = "//! <!-- layers -->\n//! ```\n//! 0 x: {a b\n//! ```";
    assert!(
        parse_layers(unclosed)
            .unwrap_err()
            .message
            .contains("unclosed")
    );
}

#[test]
fn layer_violations() {
    let sources = tree(&[
        ("lib.rs", LAYERED_LIB),
        // Upward: a leaf imports a higher layer.
        ("a.rs", "use crate::o::O; pub struct A;"),
        ("b.rs", "use crate::a::A;"),
        // A face group may form a cycle.
        ("m.rs", "use crate::n::N; pub struct M;"),
        ("n.rs", "use crate::m::M; pub struct N;"),
        // A same-layer cycle outside a face group.
        ("o.rs", "use crate::s::S; use crate::a::A; pub struct O;"),
        // Within one entry a cycle is allowed.
        (
            "s/mod.rs",
            "mod inner; pub use inner::I; pub struct S; fn f() { crate::o::O; }",
        ),
        ("s/inner.rs", "use super::S; pub struct I;"),
        // The root is above everything: importing it is upward.
        ("t.rs", "use crate::m::M; fn f() { crate::Root; }"),
        ("stray.rs", ""),
    ]);
    let a = analyze(&sources).unwrap();
    let layers = parse_layers(LAYERED_LIB).unwrap().unwrap();
    let problems = check_layers(&a, &layers);
    let mut found: Vec<String> = problems
        .iter()
        .map(|p| match p {
            LayerProblem::Upward {
                edge,
                from_rank,
                to_rank,
            } => format!(
                "up {} -> {} ({from_rank} -> {to_rank})",
                a.files[edge.from].module, a.files[edge.to].module
            ),
            LayerProblem::SameLayerCycle { edge, rank } => format!(
                "side {} -> {} ({rank})",
                a.files[edge.from].module, a.files[edge.to].module
            ),
            LayerProblem::Unplaced { file } => format!("unplaced {}", a.files[*file].module),
            LayerProblem::UnknownModule { module } => format!("unknown {module}"),
            LayerProblem::Duplicate { module } => format!("dup {module}"),
        })
        .collect();
    found.sort();
    assert_eq!(
        found,
        [
            "side o -> s (1)",
            "side s -> o (1)",
            "unplaced stray",
            "up a -> o (0 -> 1)",
            "up t -> crate (2 -> 3)",
        ]
    );

    let report = report(&sources, &Options::default()).unwrap();
    assert!(!report.ok);
    assert_eq!(report.violations, 5);
    assert!(
        report
            .text
            .contains("upward (0 leaves -> 1 mid): src/a.rs -> src/o.rs: O")
    );
    assert!(
        report
            .text
            .contains("not in any layer: src/stray.rs (stray)")
    );
    assert!(
        report.text.contains("layer violations: 5"),
        "{}",
        report.text
    );
}

#[test]
fn unknown_and_duplicate_entries() {
    let lib =
        "//! <!-- layers -->\n//! ```text\n//! 0 x: a ghost\n//! 1 y: a::deep a\n//! ```\nmod a;";
    let sources = tree(&[("lib.rs", lib), ("a.rs", "")]);
    let a = analyze(&sources).unwrap();
    let problems = check_layers(&a, &parse_layers(lib).unwrap().unwrap());
    assert_eq!(
        problems,
        [
            LayerProblem::UnknownModule {
                module: "ghost".to_owned()
            },
            LayerProblem::UnknownModule {
                module: "a::deep".to_owned()
            },
            LayerProblem::Duplicate {
                module: "a".to_owned()
            },
        ]
    );
}

#[test]
fn report_summary_and_limits() {
    let sources = tree(&[
        ("lib.rs", "mod a; mod b;"),
        ("a.rs", "use crate::b::B; pub struct A;"),
        ("b.rs", "use crate::a::A; pub struct B;"),
    ]);
    let opts = Options {
        max_cycle: 1,
        ..Options::default()
    };
    let r = report(&sources, &opts).unwrap();
    assert!(!r.ok);
    assert!(!r.has_layers);
    assert!(r.text.contains("no layer list found in src/lib.rs"));
    assert!(r.text.contains("    src/a.rs -> src/b.rs: B\n"));
    assert!(r.text.ends_with(
        "largest import cycle: 2 files (limit 1); layer violations: 0 (no layer list); \
         imports through lib.rs's re-exports: 0\n"
    ));
    let r = report(
        &sources,
        &Options {
            max_cycle: 2,
            ..Options::default()
        },
    )
    .unwrap();
    assert!(r.ok);
    assert_eq!(r.largest_cycle, 2);
}

#[test]
fn module_paths_of_files() {
    let m = |p: &str| module_of(p).map(|m| module_name(&m));
    assert_eq!(m("lib.rs").as_deref(), Some("crate"));
    assert_eq!(m("world.rs").as_deref(), Some("world"));
    assert_eq!(m("world/mod.rs").as_deref(), Some("world"));
    assert_eq!(m("world/snapshot.rs").as_deref(), Some("world::snapshot"));
    assert_eq!(m("main.rs"), None);
    assert_eq!(m("bin/tool.rs"), None);
}

/// What `root_reexports` finds in `files`, as `file:line: written -> defined` lines.
fn through_root(files: &[(&str, &str)]) -> Vec<String> {
    root_reexports(&tree(files))
        .unwrap()
        .iter()
        .map(|r| format!("{}:{}: {} -> {}", r.path, r.line, r.written, r.defined))
        .collect()
}

#[test]
fn a_path_through_a_root_reexport_is_reported_with_its_defining_module() {
    let found = through_root(&[
        (
            "lib.rs",
            "mod entity;\nmod world;\npub use entity::Entity;\npub use world::World;",
        ),
        ("entity.rs", "pub struct Entity;"),
        (
            "world.rs",
            "use crate::{Entity, entity};\n\
             pub struct World;\n\
             fn f() -> Option<crate::World> { super::Entity; None }",
        ),
    ]);
    assert_eq!(
        found,
        [
            "world.rs:1: crate::Entity -> crate::entity::Entity",
            "world.rs:3: crate::World -> crate::world::World",
            "world.rs:3: super::Entity -> crate::entity::Entity",
        ]
    );
}

#[test]
fn naming_the_defining_module_is_not_reported() {
    let files = [
        (
            "lib.rs",
            "mod entity;\nmod world;\npub use entity::Entity;\npub use world::World;\n\
             pub(crate) use runsync_pool as pool;\n\
             pub mod prelude { pub use crate::{Entity, World}; }\n\
             pub struct Root;\npub fn helper() {}\nmacro_rules! m { () => {} }\n\
             fn g() -> Entity { crate::Entity }",
        ),
        ("entity.rs", "pub struct Entity;"),
        (
            "world.rs",
            "use crate::entity::Entity;\nuse crate::prelude::*;\n\
             fn f() { crate::Root; crate::helper(); crate::pool::Pool::new(); crate::m!(); \
             crate::exported!(); }",
        ),
    ];
    assert_eq!(through_root(&files), Vec::<String>::new());
    // And the report says so.
    let r = report(&tree(&files), &Options::default()).unwrap();
    assert!(
        r.text
            .contains("\nno imports through lib.rs's re-exports\n"),
        "{}",
        r.text
    );
    assert_eq!(r.reexport_uses, 0);
}

#[test]
fn reexports_are_followed_to_the_defining_module_and_test_code_counts() {
    let found = through_root(&[
        (
            "lib.rs",
            "mod a;\nmod b;\npub use a::{Deep, Secret};\npub use a::Renamed as Other;\n\
             pub use runsync_derive::Component;",
        ),
        (
            "a/mod.rs",
            "pub(crate) mod inner;\nmod hidden;\npub use inner::Deep;\n\
             pub use inner::Orig as Renamed;\npub use hidden::Secret;",
        ),
        (
            "a/inner.rs",
            "pub struct Deep;\npub struct Orig;\nfn f() { crate::Secret; }",
        ),
        ("a/hidden.rs", "pub struct Secret;"),
        (
            "b.rs",
            "#[cfg(test)]\nmod tests {\n    use crate::{Deep, Other, Secret};\n    \
             struct S;\n    impl crate::Component for S {}\n}",
        ),
    ]);
    assert_eq!(
        found,
        [
            // Inside `a`, its private `hidden` can be named; elsewhere `a`'s re-export.
            "a/inner.rs:3: crate::Secret -> crate::a::hidden::Secret",
            "b.rs:3: crate::Deep -> crate::a::inner::Deep",
            "b.rs:3: crate::Other -> crate::a::inner::Orig",
            "b.rs:3: crate::Secret -> crate::a::Secret",
            "b.rs:5: crate::Component -> runsync_derive::Component",
        ]
    );
}

#[test]
fn the_report_fails_on_a_path_through_a_root_reexport() {
    let sources = tree(&[
        ("lib.rs", "mod a;\nmod b;\npub use a::A;"),
        ("a.rs", "pub struct A;"),
        ("b.rs", "use crate::A;"),
    ]);
    let r = report(&sources, &Options::default()).unwrap();
    assert!(!r.ok);
    assert_eq!(r.reexport_uses, 1);
    assert!(
        r.text.contains(
            "imports through lib.rs's re-exports (name the defining module instead):\n  \
             src/b.rs:1: `crate::A` goes through lib.rs's re-export of `A`; name the defining \
             module: `crate::a::A`\n"
        ),
        "{}",
        r.text
    );
    assert!(r.text.ends_with("imports through lib.rs's re-exports: 1\n"));
}
