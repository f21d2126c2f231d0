//! Module import graph of a crate's `src/`: which file uses which, the import cycles
//! (strongly connected components), and a check against the layer list written in the
//! crate root's docs. Used by `cargo xtask layers`:
//!
//! ```sh
//! cargo xtask layers [--src DIR] [--max-cycle N] [--edges]
//! ```
//!
//! It reads Rust source as tokens (`proc_macro2`'s lexer, the one `syn` uses; no
//! compiler):
//!
//! - **Nodes** are files: `lib.rs` is the crate root, `world.rs` or `world/mod.rs` the
//!   module `world`, `world/snapshot.rs` the module `world::snapshot`. Only files reached
//!   from `lib.rs` through `mod name;` declarations count; a module declared under
//!   `#[cfg(test)]` (or `#[cfg(all(test, ..))]`), and everything below it, is skipped.
//!   Inline `mod name { .. }` blocks are part of their file.
//! - **Edges**: `A -> B` when file `A` names an item of file `B`: in a `use` (groups,
//!   `self`, renames, globs; paths from `crate`, `super`, `self`, or a child module),
//!   and in paths written inline anywhere in code (`crate::sync::SyncReport::default()`,
//!   `super::FoldCounts`, `crate::profile::zone!(..)`, `$crate::profile::Zone` in
//!   macros). A path resolves to the deepest file module it names
//!   (`crate::outbuf::buffer::Run` is `outbuf/buffer.rs` if that file exists, else
//!   `outbuf/mod.rs`); paths through the crate root's re-exports (`crate::World`,
//!   `crate::prelude`) are edges to `lib.rs`. Declaring `mod child;` is not an edge;
//!   `pub use child::X` is. Self-edges are dropped. A whole external crate that the
//!   root names as a module (`pub(crate) use runsync_pool as pool;` in `lib.rs`) is
//!   outside the graph: `crate::pool::Pool` is no edge, as `runsync_pool::Pool` is none.
//! - **Not code**: comments (doc comments included), string and char literals,
//!   attributes, `pub(in path)` visibilities, and test-only items: a `#[cfg(test)]`
//!   module, function, `impl`, `use` or other item (skipped to the end of its braces or
//!   its `;`).
//!
//! Sources are read with all `cfg`s on at once (both `#[cfg(feature = "tracy")]` and
//! its `not` twin count), except the test-only ones.
//!
#![doc = include_str!("layers_format.md")]

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::{self, Write as _};
use std::io;
use std::path::{Path, PathBuf};

use proc_macro2::{Delimiter, Spacing, TokenStream, TokenTree};

/// The layer list's format, as written in the module docs (for `--help`).
pub const FORMAT: &str = include_str!("layers_format.md");

/// The default limit on an import cycle's size, in files.
pub const DEFAULT_MAX_CYCLE: usize = 5;

/// One source file: its path relative to the source directory (`/`-separated, e.g.
/// `world/mod.rs`) and its text.
#[derive(Clone, Debug)]
pub struct SourceFile {
    /// Path relative to the source directory, with `/` separators.
    pub path: String,
    /// The file's contents.
    pub text: String,
}

impl SourceFile {
    /// A file at `path` (relative, `/`-separated) with contents `text`.
    pub fn new(path: impl Into<String>, text: impl Into<String>) -> SourceFile {
        SourceFile {
            path: path.into(),
            text: text.into(),
        }
    }
}

/// Reads every `*.rs` file under `dir`, recursively, sorted by path.
pub fn load(dir: &Path) -> io::Result<Vec<SourceFile>> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<SourceFile>) -> io::Result<()> {
        for entry in std::fs::read_dir(dir)? {
            let path = entry?.path();
            if path.is_dir() {
                walk(root, &path, out)?;
            } else if path.extension().is_some_and(|e| e == "rs") {
                let rel = path.strip_prefix(root).unwrap_or(&path);
                let rel: Vec<String> = rel
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect();
                let text = std::fs::read_to_string(&path)?;
                out.push(SourceFile::new(rel.join("/"), text));
            }
        }
        Ok(())
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out)?;
    out.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(out)
}

/// The workspace root: `$CARGO_MANIFEST_DIR/..` when run by cargo from the xtask crate,
/// else the nearest directory at or above the current one whose `Cargo.toml` has a
/// `[workspace]` table, else the current directory.
pub fn workspace_root() -> PathBuf {
    if let Some(dir) = std::env::var_os("CARGO_MANIFEST_DIR") {
        let dir = PathBuf::from(dir);
        if let Some(parent) = dir.parent().filter(|p| is_workspace(p)) {
            return parent.to_path_buf();
        }
        if is_workspace(&dir) {
            return dir;
        }
    }
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    cwd.ancestors()
        .find(|d| is_workspace(d))
        .unwrap_or(&cwd)
        .to_path_buf()
}

fn is_workspace(dir: &Path) -> bool {
    std::fs::read_to_string(dir.join("Cargo.toml"))
        .is_ok_and(|t| t.lines().any(|l| l.trim() == "[workspace]"))
}

// ----- Lexer -----

#[derive(Clone, Debug, PartialEq, Eq)]
enum Tok {
    Ident(String),
    /// `::`
    PathSep,
    /// Any other punctuation, one character at a time.
    Punct(char),
    /// A string, char or number literal, or a lifetime: never part of a path.
    Lit,
}

#[derive(Clone, Debug)]
struct Token {
    tok: Tok,
}

/// A file that could not be read as Rust tokens (an unterminated string or comment, an
/// unbalanced delimiter).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LexError {
    /// The file, relative to the source directory.
    pub path: String,
    /// Where the unterminated literal or comment starts (1-based).
    pub line: u32,
    /// What was not terminated.
    pub what: &'static str,
}

impl fmt::Display for LexError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: unterminated {}", self.path, self.line, self.what)
    }
}

impl std::error::Error for LexError {}

fn is_ident_start(c: char) -> bool {
    c == '_' || c.is_alphabetic()
}

fn is_ident_continue(c: char) -> bool {
    c == '_' || c.is_alphanumeric()
}

/// Splits `text` into tokens with `proc_macro2`'s lexer (the one `syn` uses), dropping
/// comments and whitespace and flattening groups into their delimiters; literals and
/// lifetimes become [`Tok::Lit`]; doc comments become the `#[doc = ".."]` attributes they
/// are, which the parser skips. An error names the line of the token that could not be
/// read, and what it is (an unterminated literal or comment, or an unbalanced delimiter).
fn lex(text: &str) -> Result<Vec<Token>, (u32, &'static str)> {
    let stream: TokenStream = text.parse().map_err(|e: proc_macro2::LexError| {
        let at = e.span().start();
        let line = text.lines().nth(at.line.saturating_sub(1)).unwrap_or("");
        let rest: String = line.chars().skip(at.column).collect();
        let what = if rest.starts_with("/*") {
            "block comment"
        } else if rest.starts_with('"') || rest.starts_with("b\"") || rest.starts_with("c\"") {
            "string literal"
        } else if ["r\"", "r#", "br", "cr"]
            .iter()
            .any(|p| rest.starts_with(p))
        {
            "raw string literal"
        } else if rest.starts_with('\'') || rest.starts_with("b'") {
            "char literal"
        } else {
            "delimiter or token"
        };
        (at.line as u32, what)
    })?;
    let mut out = Vec::new();
    flatten(stream, &mut out);
    Ok(out)
}

/// Appends the tokens of `stream` to `out`, each group as its open delimiter, its tokens
/// and its close delimiter; `::` becomes one [`Tok::PathSep`], `'a` one [`Tok::Lit`].
fn flatten(stream: TokenStream, out: &mut Vec<Token>) {
    let mut joint_colon = false;
    let mut lifetime = false;
    for tree in stream {
        let tok = match tree {
            TokenTree::Group(g) => {
                let (open, close) = match g.delimiter() {
                    Delimiter::Parenthesis => (Some('('), Some(')')),
                    Delimiter::Brace => (Some('{'), Some('}')),
                    Delimiter::Bracket => (Some('['), Some(']')),
                    Delimiter::None => (None, None),
                };
                out.extend(open.map(|c| Token { tok: Tok::Punct(c) }));
                flatten(g.stream(), out);
                out.extend(close.map(|c| Token { tok: Tok::Punct(c) }));
                joint_colon = false;
                lifetime = false;
                continue;
            }
            TokenTree::Ident(_) if std::mem::take(&mut lifetime) => {
                out.pop(); // the `'`
                Tok::Lit
            }
            TokenTree::Ident(id) => {
                let name = id.to_string();
                Tok::Ident(name.strip_prefix("r#").map_or(name.clone(), str::to_owned))
            }
            TokenTree::Literal(_) => Tok::Lit,
            TokenTree::Punct(p) => {
                let c = p.as_char();
                let joint = p.spacing() == Spacing::Joint;
                if c == ':' && std::mem::take(&mut joint_colon) {
                    out.pop(); // the first `:`
                    out.push(Token { tok: Tok::PathSep });
                    continue;
                }
                joint_colon = c == ':' && joint;
                lifetime = c == '\'' && joint;
                Tok::Punct(c)
            }
        };
        if !matches!(tok, Tok::Punct(_)) {
            joint_colon = false;
            lifetime = false;
        }
        out.push(Token { tok });
    }
}

// ----- Parser: declarations and path references of one file -----

/// Where a path starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Anchor {
    /// `crate::` or `$crate::`.
    Crate,
    /// `super::` repeated this many times (after an optional `self::`).
    Super(usize),
    /// `self::`.
    SelfMod,
    /// An identifier: a child module of the current module, if one exists by that name
    /// (else an external crate, a type, a local name: not an edge).
    Relative,
}

/// A path named in a file, before resolution.
#[derive(Clone, Debug)]
struct RawRef {
    anchor: Anchor,
    /// The module the path is written in: the file's module plus inline `mod` names.
    scope: Vec<String>,
    /// Segments after the anchor (for [`Anchor::Relative`], including the first).
    segs: Vec<String>,
    /// `use path::*`.
    glob: bool,
    /// `path!(..)`: the last segment is a macro.
    mac: bool,
}

/// A `mod name;` declaration (a module in its own file).
#[derive(Clone, Debug)]
struct Decl {
    module: Vec<String>,
    test: bool,
}

#[derive(Debug, Default)]
struct Parsed {
    decls: Vec<Decl>,
    refs: Vec<RawRef>,
    /// An inner `#![cfg(test)]` at the top of the file.
    test_only: bool,
    /// Names the crate root gives whole external crates (`use runsync_pool as pool;`).
    extern_aliases: Vec<String>,
}

fn ident(t: Option<&Token>) -> Option<&str> {
    match t {
        Some(Token {
            tok: Tok::Ident(s), ..
        }) => Some(s),
        _ => None,
    }
}

fn is_punct(t: Option<&Token>, c: char) -> bool {
    matches!(t, Some(Token { tok: Tok::Punct(p), .. }) if *p == c)
}

fn is_sep(t: Option<&Token>) -> bool {
    matches!(
        t,
        Some(Token {
            tok: Tok::PathSep,
            ..
        })
    )
}

/// The index just past the bracket group opened at `open` (`(`, `[` or `{`), matching
/// only that bracket kind's nesting (the lexer already removed strings and comments).
fn close_of(toks: &[Token], open: usize) -> usize {
    let (o, c) = match toks[open].tok {
        Tok::Punct('(') => ('(', ')'),
        Tok::Punct('[') => ('[', ']'),
        _ => ('{', '}'),
    };
    let mut depth = 0usize;
    for (k, t) in toks.iter().enumerate().skip(open) {
        if let Tok::Punct(p) = t.tok {
            if p == o {
                depth += 1;
            } else if p == c {
                depth -= 1;
                if depth == 0 {
                    return k + 1;
                }
            }
        }
    }
    toks.len()
}

/// Whether a `cfg` predicate holds only in test builds: `test`, or `all(..)` with such an
/// argument, or `any(..)` whose arguments all are.
fn test_only_pred(toks: &[Token]) -> bool {
    fn pred(toks: &[Token], i: &mut usize) -> bool {
        let Some(name) = ident(toks.get(*i)) else {
            *i += 1;
            return false;
        };
        *i += 1;
        if is_punct(toks.get(*i), '=') {
            *i += 2;
            return false;
        }
        if !is_punct(toks.get(*i), '(') {
            return name == "test";
        }
        *i += 1;
        let mut args = Vec::new();
        while *i < toks.len() && !is_punct(toks.get(*i), ')') {
            if is_punct(toks.get(*i), ',') {
                *i += 1;
                continue;
            }
            args.push(pred(toks, i));
        }
        *i += 1;
        match name {
            "all" => args.iter().any(|&a| a),
            "any" => !args.is_empty() && args.iter().all(|&a| a),
            _ => false,
        }
    }
    let mut i = 0;
    pred(toks, &mut i)
}

/// Item keywords after which a test-only attribute makes the tool skip the item.
const ITEM_KEYWORDS: [&str; 14] = [
    "fn",
    "impl",
    "use",
    "struct",
    "enum",
    "union",
    "const",
    "static",
    "type",
    "trait",
    "unsafe",
    "async",
    "extern",
    "macro_rules",
];

/// The index just past the item starting at `i`: past its first top-level `{ .. }`, or
/// its `;`, whichever comes first.
fn item_end(toks: &[Token], mut i: usize) -> usize {
    let mut depth = 0usize;
    while i < toks.len() {
        match toks[i].tok {
            Tok::Punct('(' | '[') => depth += 1,
            Tok::Punct(')' | ']') => depth = depth.saturating_sub(1),
            Tok::Punct(';') if depth == 0 => return i + 1,
            Tok::Punct('{') if depth == 0 => return close_of(toks, i),
            _ => {}
        }
        i += 1;
    }
    toks.len()
}

/// Parses a `use` tree starting at `i`, pushing every full path it imports as
/// `(segments, glob)` onto `out`; returns the index just past the tree.
fn use_tree(
    toks: &[Token],
    mut i: usize,
    prefix: &[String],
    out: &mut Vec<(Vec<String>, bool)>,
) -> usize {
    if is_punct(toks.get(i), '{') {
        i += 1;
        while i < toks.len() && !is_punct(toks.get(i), '}') {
            if is_punct(toks.get(i), ',') {
                i += 1;
                continue;
            }
            let next = use_tree(toks, i, prefix, out);
            i = if next == i { i + 1 } else { next };
        }
        return i + 1;
    }
    if is_punct(toks.get(i), '*') {
        out.push((prefix.to_vec(), true));
        return i + 1;
    }
    let mut path = prefix.to_vec();
    if is_punct(toks.get(i), '$') && ident(toks.get(i + 1)) == Some("crate") {
        path.push("$crate".to_owned());
        i += 2;
    } else if is_sep(toks.get(i)) {
        // `use ::name`: an external crate.
        path.push("::".to_owned());
        i += 1;
        if let Some(s) = ident(toks.get(i)) {
            path.push(s.to_owned());
            i += 1;
        }
    } else if let Some(s) = ident(toks.get(i)) {
        path.push(s.to_owned());
        i += 1;
    } else {
        return i;
    }
    while is_sep(toks.get(i)) {
        i += 1;
        if let Some(s) = ident(toks.get(i)) {
            path.push(s.to_owned());
            i += 1;
        } else if is_punct(toks.get(i), '{') || is_punct(toks.get(i), '*') {
            return use_tree(toks, i, &path, out);
        } else {
            break;
        }
    }
    if ident(toks.get(i)) == Some("as") {
        i += 2; // `as name` or `as _`
    }
    if path.last().is_some_and(|s| s == "self") {
        path.pop();
    }
    out.push((path, false));
    i
}

/// Turns a path's segments (as written, e.g. `super::super::x::Y`) into a [`RawRef`].
fn raw_ref(scope: &[String], segs: &[String], glob: bool, mac: bool) -> Option<RawRef> {
    let first = segs.first()?;
    let (anchor, rest) = match first.as_str() {
        "crate" | "$crate" => (Anchor::Crate, &segs[1..]),
        "::" => return None,
        "self" => {
            let supers = segs[1..].iter().take_while(|s| *s == "super").count();
            if supers > 0 {
                (Anchor::Super(supers), &segs[1 + supers..])
            } else {
                (Anchor::SelfMod, &segs[1..])
            }
        }
        "super" => {
            let supers = segs.iter().take_while(|s| *s == "super").count();
            (Anchor::Super(supers), &segs[supers..])
        }
        _ => (Anchor::Relative, segs),
    };
    Some(RawRef {
        anchor,
        scope: scope.to_vec(),
        segs: rest.to_vec(),
        glob,
        mac,
    })
}

/// Finds the module declarations and path references of a file whose module is `module`.
fn parse(toks: &[Token], module: &[String]) -> Parsed {
    let mut p = Parsed::default();
    // Open braces: `Some(name)` for an inline module, `None` for any other block.
    let mut braces: Vec<Option<String>> = Vec::new();
    let scope = |braces: &[Option<String>]| -> Vec<String> {
        let mut s = module.to_vec();
        s.extend(braces.iter().flatten().cloned());
        s
    };
    let mut i = 0;
    let mut seen_item = false;
    while i < toks.len() {
        // Attributes: note whether any is a test-only `cfg`, then look at the item.
        if is_punct(toks.get(i), '#') {
            let inner = is_punct(toks.get(i + 1), '!');
            let open = if inner { i + 2 } else { i + 1 };
            if is_punct(toks.get(open), '[') {
                let end = close_of(toks, open);
                let body = &toks[open + 1..end.saturating_sub(1)];
                let test = ident(body.first()) == Some("cfg")
                    && is_punct(body.get(1), '(')
                    && test_only_pred(&body[2..]);
                i = end;
                if inner {
                    if test {
                        if braces.is_empty() && !seen_item {
                            p.test_only = true;
                            p.refs.clear();
                            p.decls.clear();
                            return p;
                        }
                        // A test-only inline module: skip the rest of its block.
                        let mut depth = 0usize;
                        while i < toks.len() {
                            match toks[i].tok {
                                Tok::Punct('{') => depth += 1,
                                Tok::Punct('}') if depth == 0 => break,
                                Tok::Punct('}') => depth -= 1,
                                _ => {}
                            }
                            i += 1;
                        }
                    }
                    continue;
                }
                if test {
                    // Skip further attributes and a visibility, then the item.
                    let mut j = i;
                    loop {
                        if is_punct(toks.get(j), '#') && is_punct(toks.get(j + 1), '[') {
                            j = close_of(toks, j + 1);
                        } else {
                            break;
                        }
                    }
                    if ident(toks.get(j)) == Some("pub") {
                        j += 1;
                        if is_punct(toks.get(j), '(') {
                            j = close_of(toks, j);
                        }
                    }
                    match ident(toks.get(j)) {
                        Some("mod") => {
                            let name = ident(toks.get(j + 1));
                            if let Some(name) = name.filter(|_| is_punct(toks.get(j + 2), ';')) {
                                let mut m = scope(&braces);
                                m.push(name.to_owned());
                                p.decls.push(Decl {
                                    module: m,
                                    test: true,
                                });
                            }
                            i = item_end(toks, j);
                        }
                        Some(k) if ITEM_KEYWORDS.contains(&k) => i = item_end(toks, j),
                        None if is_punct(toks.get(j), '{') => i = close_of(toks, j),
                        _ => {}
                    }
                }
                continue;
            }
        }
        let t = &toks[i];
        match &t.tok {
            Tok::Punct('{') => {
                braces.push(None);
                i += 1;
                continue;
            }
            Tok::Punct('}') => {
                braces.pop();
                i += 1;
                continue;
            }
            _ => {}
        }
        seen_item = true;
        let prev = if i > 0 { Some(&toks[i - 1]) } else { None };
        match ident(Some(t)) {
            // `pub(crate)`, `pub(in crate::a)`: a visibility, not a reference.
            Some("pub") if is_punct(toks.get(i + 1), '(') => {
                i = close_of(toks, i + 1);
            }
            Some("mod") if !is_sep(prev) => {
                let name = ident(toks.get(i + 1)).map(str::to_owned);
                match (name, toks.get(i + 2).map(|t| &t.tok)) {
                    (Some(name), Some(Tok::Punct(';'))) => {
                        let mut m = scope(&braces);
                        m.push(name);
                        p.decls.push(Decl {
                            module: m,
                            test: false,
                        });
                        i += 3;
                    }
                    (Some(name), Some(Tok::Punct('{'))) => {
                        braces.push(Some(name));
                        i += 3;
                    }
                    _ => i += 1,
                }
            }
            Some("use") if !is_sep(prev) => {
                // `use other_crate as name;` at the crate root: `crate::name::..` is
                // outside the graph.
                if module.is_empty() && braces.is_empty() {
                    let krate = ident(toks.get(i + 1))
                        .filter(|k| !["crate", "self", "super"].contains(k))
                        .filter(|_| !is_punct(prev, '$'));
                    let alias = ident(toks.get(i + 3))
                        .filter(|_| ident(toks.get(i + 2)) == Some("as"))
                        .filter(|_| is_punct(toks.get(i + 4), ';'));
                    if let (Some(_), Some(alias)) = (krate, alias) {
                        p.extern_aliases.push(alias.to_owned());
                    }
                }
                let mut paths = Vec::new();
                let end = use_tree(toks, i + 1, &[], &mut paths);
                let sc = scope(&braces);
                for (segs, glob) in paths {
                    p.refs.extend(raw_ref(&sc, &segs, glob, false));
                }
                // Continue at the `;` (or wherever the tree stopped, if malformed).
                i = end.max(i + 1);
            }
            Some(first)
                if is_sep(toks.get(i + 1))
                    && !is_sep(prev)
                    && !is_punct(prev, '.')
                    && (!is_punct(prev, '$') || first == "crate") =>
            {
                let mut segs = vec![if is_punct(prev, '$') {
                    "$crate".to_owned()
                } else {
                    first.to_owned()
                }];
                let mut j = i + 1;
                while let Some(s) = ident(toks.get(j + 1)).filter(|_| is_sep(toks.get(j))) {
                    segs.push(s.to_owned());
                    j += 2;
                }
                let mac = is_punct(toks.get(j), '!') && !is_punct(toks.get(j + 1), '=');
                p.refs.extend(raw_ref(&scope(&braces), &segs, false, mac));
                i = j;
            }
            _ => i += 1,
        }
    }
    p
}

// ----- The graph -----

/// A file of the crate: a node of the import graph.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileNode {
    /// Path relative to the source directory (`world/mod.rs`).
    pub path: String,
    /// Module path from the crate root (`world::snapshot`; `crate` for `lib.rs`).
    pub module: String,
}

/// A source file that is not a node, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Skipped {
    /// Path relative to the source directory.
    pub path: String,
    /// Why it is not part of the graph.
    pub why: &'static str,
}

/// An edge `from -> to` between two files, with the names that create it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Edge {
    /// Index of the importing file in [`Analysis::files`].
    pub from: usize,
    /// Index of the imported file.
    pub to: usize,
    /// The names `from` takes from `to` (the first segment after the module's path; a
    /// macro ends in `!`, a glob is `*`, the module itself is its own name), sorted.
    pub names: Vec<String>,
}

/// The import graph of a crate's source directory.
#[derive(Clone, Debug)]
pub struct Analysis {
    /// Every file reached from `lib.rs` through non-test `mod` declarations, by path.
    pub files: Vec<FileNode>,
    /// Source files left out of the graph.
    pub skipped: Vec<Skipped>,
    /// Every edge, sorted by `(from, to)`.
    pub edges: Vec<Edge>,
    /// Strongly connected components of two or more files (import cycles): file indices,
    /// sorted; the components largest first (ties by first file).
    pub cycles: Vec<Vec<usize>>,
}

impl Analysis {
    /// The size of the largest import cycle in files, 0 if there is none.
    pub fn largest_cycle(&self) -> usize {
        self.cycles.first().map_or(0, Vec::len)
    }

    /// The edges between files of `component`, sorted.
    pub fn edges_within(&self, component: &[usize]) -> Vec<&Edge> {
        self.edges
            .iter()
            .filter(|e| component.contains(&e.from) && component.contains(&e.to))
            .collect()
    }

    /// The index of the file with module path `module` (`crate` for the root).
    pub fn file_of(&self, module: &str) -> Option<usize> {
        self.files.iter().position(|f| f.module == module)
    }

    /// The edge `from -> to` between two modules, if any.
    pub fn edge(&self, from: &str, to: &str) -> Option<&Edge> {
        let (from, to) = (self.file_of(from)?, self.file_of(to)?);
        self.edges.iter().find(|e| e.from == from && e.to == to)
    }
}

/// The module path of a source file: `lib.rs` is `[]`, `a/mod.rs` and `a.rs` are `[a]`,
/// `a/b.rs` is `[a, b]`; `None` for `main.rs` and files under `bin/`.
fn module_of(path: &str) -> Option<Vec<String>> {
    if path == "lib.rs" {
        return Some(Vec::new());
    }
    if path == "main.rs" || path.starts_with("bin/") {
        return None;
    }
    let stem = path.strip_suffix(".rs")?;
    let mut segs: Vec<String> = stem.split('/').map(str::to_owned).collect();
    if segs.last().is_some_and(|s| s == "mod") {
        segs.pop();
    }
    (!segs.is_empty()).then_some(segs)
}

fn module_name(m: &[String]) -> String {
    if m.is_empty() {
        "crate".to_owned()
    } else {
        m.join("::")
    }
}

/// Builds the import graph of the files of one crate's source directory (paths relative
/// to it; `lib.rs` is the root).
pub fn analyze(sources: &[SourceFile]) -> Result<Analysis, LexError> {
    // Lex and parse every file, test files included (so a broken one is reported).
    let mut by_module: HashMap<Vec<String>, usize> = HashMap::new();
    let mut parsed: Vec<Option<Parsed>> = Vec::with_capacity(sources.len());
    let mut skipped = Vec::new();
    for (k, src) in sources.iter().enumerate() {
        let toks = lex(&src.text).map_err(|(line, what)| LexError {
            path: src.path.clone(),
            line,
            what,
        })?;
        match module_of(&src.path) {
            Some(m) => {
                if by_module.contains_key(&m) {
                    skipped.push(Skipped {
                        path: src.path.clone(),
                        why: "a second file for the same module",
                    });
                    parsed.push(None);
                    continue;
                }
                parsed.push(Some(parse(&toks, &m)));
                by_module.insert(m, k);
            }
            None => {
                skipped.push(Skipped {
                    path: src.path.clone(),
                    why: "not a library module",
                });
                parsed.push(None);
            }
        }
    }

    // Reach files from the root through `mod` declarations.
    let mut included: BTreeSet<usize> = BTreeSet::new();
    let mut test_files: BTreeSet<usize> = BTreeSet::new();
    if let Some(&root) = by_module.get(&Vec::new()) {
        let mut stack = vec![(root, false)];
        while let Some((k, test)) = stack.pop() {
            let file_test = test || parsed[k].as_ref().is_some_and(|p| p.test_only);
            let set = if file_test {
                &mut test_files
            } else {
                &mut included
            };
            if !set.insert(k) {
                continue;
            }
            for d in parsed[k].iter().flat_map(|p| &p.decls) {
                if let Some(&child) = by_module.get(&d.module) {
                    stack.push((child, file_test || d.test));
                }
            }
        }
    }
    for (k, src) in sources.iter().enumerate() {
        if parsed[k].is_none() || included.contains(&k) {
            continue;
        }
        skipped.push(Skipped {
            path: src.path.clone(),
            why: if test_files.contains(&k) {
                "test-only (#[cfg(test)])"
            } else {
                "not declared by any module"
            },
        });
    }
    skipped.sort_by(|a, b| a.path.cmp(&b.path));

    // Nodes, sorted by path.
    let mut order: Vec<usize> = included.iter().copied().collect();
    order.sort_by(|&a, &b| sources[a].path.cmp(&sources[b].path));
    let node_of: HashMap<usize, usize> = order.iter().enumerate().map(|(n, &k)| (k, n)).collect();
    let files: Vec<FileNode> = order
        .iter()
        .map(|&k| FileNode {
            path: sources[k].path.clone(),
            module: module_name(&module_of(&sources[k].path).unwrap_or_default()),
        })
        .collect();
    let node_by_module: HashMap<Vec<String>, usize> = by_module
        .iter()
        .filter_map(|(m, k)| node_of.get(k).map(|&n| (m.clone(), n)))
        .collect();

    // Whole external crates the root names as modules (not file modules of its own).
    let extern_aliases: BTreeSet<&str> = by_module
        .get(&Vec::new())
        .and_then(|&root| parsed[root].as_ref())
        .into_iter()
        .flat_map(|p| &p.extern_aliases)
        .map(String::as_str)
        .filter(|a| !node_by_module.contains_key(&vec![(*a).to_owned()]))
        .collect();

    // Resolve references to edges.
    let mut edges: BTreeMap<(usize, usize), BTreeSet<String>> = BTreeMap::new();
    for (n, &k) in order.iter().enumerate() {
        for r in parsed[k].iter().flat_map(|p| &p.refs) {
            let mut abs = match r.anchor {
                Anchor::Crate => Vec::new(),
                Anchor::SelfMod => r.scope.clone(),
                Anchor::Super(up) => match r.scope.len().checked_sub(up) {
                    Some(len) => r.scope[..len].to_vec(),
                    None => continue,
                },
                Anchor::Relative => {
                    let mut child = r.scope.clone();
                    child.extend(r.segs.first().cloned());
                    if r.segs.is_empty() || !node_by_module.contains_key(&child) {
                        continue;
                    }
                    r.scope.clone()
                }
            };
            abs.extend(r.segs.iter().cloned());
            if abs
                .first()
                .is_some_and(|m| extern_aliases.contains(m.as_str()))
            {
                continue; // another crate's item, reached through the root's alias
            }
            // Walk down while a file module exists.
            let mut depth = 0;
            while depth < abs.len() && node_by_module.contains_key(&abs[..depth + 1]) {
                depth += 1;
            }
            let Some(&to) = node_by_module.get(&abs[..depth]) else {
                continue;
            };
            if to == n {
                continue;
            }
            let rest = &abs[depth..];
            let name = match rest.first() {
                Some(first) if r.mac && rest.len() == 1 => format!("{first}!"),
                Some(first) => first.clone(),
                None if r.glob => "*".to_owned(),
                None => abs.last().cloned().unwrap_or_else(|| "crate".to_owned()),
            };
            edges.entry((n, to)).or_default().insert(name);
        }
    }
    let edges: Vec<Edge> = edges
        .into_iter()
        .map(|((from, to), names)| Edge {
            from,
            to,
            names: names.into_iter().collect(),
        })
        .collect();

    let mut cycles: Vec<Vec<usize>> = tarjan(files.len(), &edges)
        .into_iter()
        .filter(|c| c.len() >= 2)
        .map(|mut c| {
            c.sort_unstable();
            c
        })
        .collect();
    cycles.sort_by(|a, b| b.len().cmp(&a.len()).then(a.cmp(b)));

    Ok(Analysis {
        files,
        skipped,
        edges,
        cycles,
    })
}

/// Strongly connected components of a graph of `n` nodes (Tarjan's algorithm, without
/// recursion).
fn tarjan(n: usize, edges: &[Edge]) -> Vec<Vec<usize>> {
    let mut adj = vec![Vec::new(); n];
    for e in edges {
        adj[e.from].push(e.to);
    }
    const NONE: usize = usize::MAX;
    let mut index = vec![NONE; n];
    let mut low = vec![0; n];
    let mut on_stack = vec![false; n];
    let mut stack = Vec::new();
    let mut next = 0;
    let mut out = Vec::new();
    for start in 0..n {
        if index[start] != NONE {
            continue;
        }
        // (node, next neighbour to look at)
        let mut call = vec![(start, 0usize)];
        index[start] = next;
        low[start] = next;
        next += 1;
        stack.push(start);
        on_stack[start] = true;
        while let Some(&mut (v, ref mut k)) = call.last_mut() {
            if let Some(&w) = adj[v].get(*k) {
                *k += 1;
                if index[w] == NONE {
                    index[w] = next;
                    low[w] = next;
                    next += 1;
                    stack.push(w);
                    on_stack[w] = true;
                    call.push((w, 0));
                } else if on_stack[w] {
                    low[v] = low[v].min(index[w]);
                }
                continue;
            }
            call.pop();
            if let Some(&(u, _)) = call.last() {
                low[u] = low[u].min(low[v]);
            }
            if low[v] == index[v] {
                let mut comp = Vec::new();
                loop {
                    let w = stack.pop().expect("v is on the stack");
                    on_stack[w] = false;
                    comp.push(w);
                    if w == v {
                        break;
                    }
                }
                out.push(comp);
            }
        }
    }
    out
}

// ----- The layer list -----

/// One line of the layer list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layer {
    /// Its rank: 0 is the bottom.
    pub rank: u32,
    /// Its label, possibly empty.
    pub label: String,
    /// Module paths placed on it (`crate` for the root).
    pub modules: Vec<String>,
    /// Face groups: sets of its modules that may import each other.
    pub faces: Vec<Vec<String>>,
}

/// The layer list read from the crate root's docs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Layers {
    /// The layers, lowest first.
    pub layers: Vec<Layer>,
}

/// A malformed layer list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LayerSyntaxError {
    /// 1-based line of `lib.rs`.
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for LayerSyntaxError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "lib.rs:{}: {}", self.line, self.message)
    }
}

impl std::error::Error for LayerSyntaxError {}

/// Reads the layer list from the `//!` lines of `lib_rs` (see the module docs for the
/// format): `Ok(None)` if there is no `<!-- layers` marker.
pub fn parse_layers(lib_rs: &str) -> Result<Option<Layers>, LayerSyntaxError> {
    let docs: Vec<(usize, &str)> = lib_rs
        .lines()
        .enumerate()
        .filter_map(|(n, l)| {
            let l = l.trim_start().strip_prefix("//!")?;
            Some((n + 1, l.strip_prefix(' ').unwrap_or(l)))
        })
        .collect();
    let Some(marker) = docs
        .iter()
        .position(|(_, l)| l.trim_start().starts_with("<!-- layers"))
    else {
        return Ok(None);
    };
    let err = |line, message: String| LayerSyntaxError { line, message };
    let marker_line = docs[marker].0;
    let Some(open) = docs[marker + 1..]
        .iter()
        .position(|(_, l)| l.trim_start().starts_with("```"))
        .map(|p| marker + 1 + p)
    else {
        return Err(err(
            marker_line,
            "no fenced block after the layers marker".to_owned(),
        ));
    };
    let mut layers: Vec<Layer> = Vec::new();
    let mut closed = false;
    for &(line, text) in &docs[open + 1..] {
        let text = text.trim();
        if text.starts_with("```") {
            closed = true;
            break;
        }
        if text.is_empty() || text.starts_with('#') {
            continue;
        }
        let Some((head, body)) = text.split_once(':') else {
            return Err(err(
                line,
                format!("expected `<rank> <label>: <modules>`, got `{text}`"),
            ));
        };
        let mut head = head.split_whitespace();
        let rank: u32 = head
            .next()
            .and_then(|r| r.parse().ok())
            .ok_or_else(|| err(line, format!("a layer line starts with its rank: `{text}`")))?;
        let label = head.collect::<Vec<_>>().join(" ");
        if layers.iter().any(|l| l.rank == rank) {
            return Err(err(line, format!("layer {rank} is listed twice")));
        }
        let mut layer = Layer {
            rank,
            label,
            modules: Vec::new(),
            faces: Vec::new(),
        };
        let spaced = body.replace('{', " { ").replace('}', " } ");
        let mut face: Option<Vec<String>> = None;
        for word in spaced.split_whitespace() {
            match word {
                "{" if face.is_none() => face = Some(Vec::new()),
                "}" => match face.take() {
                    Some(f) if f.len() >= 2 => layer.faces.push(f),
                    Some(_) => {
                        return Err(err(line, "a face group needs two modules or more".into()));
                    }
                    None => return Err(err(line, "`}` without `{`".to_owned())),
                },
                "{" => return Err(err(line, "face groups do not nest".to_owned())),
                m => {
                    let valid = m.split("::").all(|s| {
                        s.chars().next().is_some_and(is_ident_start)
                            && s.chars().all(is_ident_continue)
                    });
                    if !valid {
                        return Err(err(line, format!("`{m}` is not a module path")));
                    }
                    layer.modules.push(m.to_owned());
                    if let Some(f) = &mut face {
                        f.push(m.to_owned());
                    }
                }
            }
        }
        if face.is_some() {
            return Err(err(line, "unclosed `{`".to_owned()));
        }
        layers.push(layer);
    }
    if !closed {
        return Err(err(
            docs[open].0,
            "the layers block is not closed".to_owned(),
        ));
    }
    layers.sort_by_key(|l| l.rank);
    Ok(Some(Layers { layers }))
}

/// What is wrong between the layer list and the code.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LayerProblem {
    /// An edge to a higher layer.
    Upward {
        /// The edge (indices into [`Analysis::files`], and names).
        edge: Edge,
        /// Rank of the importing file's layer.
        from_rank: u32,
        /// Rank of the imported file's layer.
        to_rank: u32,
    },
    /// An edge of an import cycle between two entries of one layer that are not in one
    /// face group.
    SameLayerCycle {
        /// The edge.
        edge: Edge,
        /// The layer's rank.
        rank: u32,
    },
    /// A file module no entry covers.
    Unplaced {
        /// Index into [`Analysis::files`].
        file: usize,
    },
    /// An entry that names no file module of the crate.
    UnknownModule {
        /// The entry as written.
        module: String,
    },
    /// An entry listed more than once.
    Duplicate {
        /// The entry as written.
        module: String,
    },
}

/// Where a file sits: its layer's rank and the entry that covers it.
fn placement<'a>(layers: &'a Layers, module: &str) -> Option<(u32, &'a str)> {
    let mut best: Option<(u32, &str)> = None;
    for l in &layers.layers {
        for m in &l.modules {
            let covers = if m == "crate" {
                module == "crate"
            } else {
                module == m
                    || module
                        .strip_prefix(m.as_str())
                        .is_some_and(|r| r.starts_with("::"))
            };
            if covers && best.is_none_or(|(_, b)| m.len() > b.len()) {
                best = Some((l.rank, m));
            }
        }
    }
    best
}

/// Checks the graph against the layer list: upward edges, same-layer cycles outside face
/// groups, file modules no entry covers, entries naming no file module, duplicates.
pub fn check_layers(analysis: &Analysis, layers: &Layers) -> Vec<LayerProblem> {
    let mut problems = Vec::new();
    let mut seen = BTreeSet::new();
    for l in &layers.layers {
        for m in &l.modules {
            if !seen.insert(m.as_str()) {
                problems.push(LayerProblem::Duplicate { module: m.clone() });
            }
            if analysis.file_of(m).is_none() {
                problems.push(LayerProblem::UnknownModule { module: m.clone() });
            }
        }
    }
    // The root is above everything unless listed.
    let top = layers.layers.last().map_or(0, |l| l.rank + 1);
    let place: Vec<Option<(u32, &str)>> = analysis
        .files
        .iter()
        .map(|f| placement(layers, &f.module).or((f.module == "crate").then_some((top, "crate"))))
        .collect();
    for (k, p) in place.iter().enumerate() {
        if p.is_none() {
            problems.push(LayerProblem::Unplaced { file: k });
        }
    }
    let same_face = |rank: u32, a: &str, b: &str| {
        layers.layers.iter().any(|l| {
            l.rank == rank
                && l.faces
                    .iter()
                    .any(|f| f.iter().any(|m| m == a) && f.iter().any(|m| m == b))
        })
    };
    let cycle_of: HashMap<usize, usize> = analysis
        .cycles
        .iter()
        .enumerate()
        .flat_map(|(c, files)| files.iter().map(move |&f| (f, c)))
        .collect();
    for e in &analysis.edges {
        let (Some((fr, fe)), Some((tr, te))) = (place[e.from], place[e.to]) else {
            continue;
        };
        if fr < tr {
            problems.push(LayerProblem::Upward {
                edge: e.clone(),
                from_rank: fr,
                to_rank: tr,
            });
        } else if fr == tr
            && fe != te
            && cycle_of
                .get(&e.from)
                .is_some_and(|c| cycle_of.get(&e.to) == Some(c))
            && !same_face(fr, fe, te)
        {
            problems.push(LayerProblem::SameLayerCycle {
                edge: e.clone(),
                rank: fr,
            });
        }
    }
    problems
}

// ----- The report -----

/// Everything the `layers` binary prints, and whether the check passed.
#[derive(Clone, Debug)]
pub struct Report {
    /// The text to print.
    pub text: String,
    /// The largest import cycle, in files.
    pub largest_cycle: usize,
    /// Layer problems found (0 without a layer list).
    pub violations: usize,
    /// Whether a layer list was found.
    pub has_layers: bool,
    /// Whether everything is within limits: no cycle over the limit, no layer problem.
    pub ok: bool,
}

/// Options of [`report`].
#[derive(Clone, Debug)]
pub struct Options {
    /// How file paths are shown: this prefix, `/`, the path (e.g. `src`).
    pub display_dir: String,
    /// The largest import cycle allowed, in files.
    pub max_cycle: usize,
    /// Also list every edge of the graph.
    pub all_edges: bool,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            display_dir: "src".to_owned(),
            max_cycle: DEFAULT_MAX_CYCLE,
            all_edges: false,
        }
    }
}

/// Analyses `sources` (a crate's source directory) and writes the report: cycles with
/// the edges inside them, the layer check, and a summary line.
pub fn report(
    sources: &[SourceFile],
    opts: &Options,
) -> Result<Report, Box<dyn std::error::Error>> {
    let analysis = analyze(sources)?;
    let lib = sources.iter().find(|s| s.path == "lib.rs");
    let layers = match lib {
        Some(lib) => parse_layers(&lib.text)?,
        None => None,
    };
    let show = |k: usize| format!("{}/{}", opts.display_dir, analysis.files[k].path);
    let show_edge =
        |e: &Edge| format!("{} -> {}: {}", show(e.from), show(e.to), e.names.join(", "));
    let mut t = String::new();
    let _ = writeln!(
        t,
        "{} files, {} edges under {}/",
        analysis.files.len(),
        analysis.edges.len(),
        opts.display_dir
    );
    for s in &analysis.skipped {
        let _ = writeln!(t, "skipped {}/{}: {}", opts.display_dir, s.path, s.why);
    }
    if opts.all_edges {
        let _ = writeln!(t, "\nedges:");
        for e in &analysis.edges {
            let _ = writeln!(t, "  {}", show_edge(e));
        }
    }
    if analysis.cycles.is_empty() {
        let _ = writeln!(t, "\nno import cycles");
    } else {
        let _ = writeln!(
            t,
            "\nimport cycles (strongly connected components), largest first:"
        );
    }
    for (c, files) in analysis.cycles.iter().enumerate() {
        let _ = writeln!(t, "\ncycle {}: {} files", c + 1, files.len());
        for &f in files {
            let _ = writeln!(t, "  {}", show(f));
        }
        let _ = writeln!(t, "  edges inside:");
        for e in analysis.edges_within(files) {
            let _ = writeln!(t, "    {}", show_edge(e));
        }
    }
    let mut violations = 0;
    match &layers {
        None => {
            let _ = writeln!(
                t,
                "\nno layer list found in {}/lib.rs (see `layers --help` for the format)",
                opts.display_dir
            );
        }
        Some(layers) => {
            let mut problems = check_layers(&analysis, layers);
            problems.sort_by_key(|p| match p {
                LayerProblem::Upward { .. } => 0,
                LayerProblem::SameLayerCycle { .. } => 1,
                LayerProblem::Unplaced { .. } => 2,
                LayerProblem::UnknownModule { .. } | LayerProblem::Duplicate { .. } => 3,
            });
            violations = problems.len();
            let label = |rank: u32| {
                layers.layers.iter().find(|l| l.rank == rank).map_or_else(
                    || format!("{rank} (crate root)"),
                    |l| {
                        if l.label.is_empty() {
                            rank.to_string()
                        } else {
                            format!("{rank} {}", l.label)
                        }
                    },
                )
            };
            let _ = writeln!(t, "\nlayer list: {} layers", layers.layers.len());
            if problems.is_empty() {
                let _ = writeln!(
                    t,
                    "  every file placed, no upward edge, no cycle across entries"
                );
            }
            for p in &problems {
                let _ = match p {
                    LayerProblem::Upward {
                        edge,
                        from_rank,
                        to_rank,
                    } => writeln!(
                        t,
                        "  upward ({} -> {}): {}",
                        label(*from_rank),
                        label(*to_rank),
                        show_edge(edge)
                    ),
                    LayerProblem::SameLayerCycle { edge, rank } => writeln!(
                        t,
                        "  cycle within layer {} outside a face group: {}",
                        label(*rank),
                        show_edge(edge)
                    ),
                    LayerProblem::Unplaced { file } => {
                        writeln!(
                            t,
                            "  not in any layer: {} ({})",
                            show(*file),
                            analysis.files[*file].module
                        )
                    }
                    LayerProblem::UnknownModule { module } => {
                        writeln!(t, "  listed but no such file module: {module}")
                    }
                    LayerProblem::Duplicate { module } => writeln!(t, "  listed twice: {module}"),
                };
            }
        }
    }
    let largest = analysis.largest_cycle();
    let _ = writeln!(
        t,
        "\nlargest import cycle: {largest} files (limit {}); layer violations: {violations}{}",
        opts.max_cycle,
        if layers.is_none() {
            " (no layer list)"
        } else {
            ""
        }
    );
    Ok(Report {
        text: t,
        largest_cycle: largest,
        violations,
        has_layers: layers.is_some(),
        ok: largest <= opts.max_cycle && violations == 0,
    })
}

#[cfg(test)]
mod tests {
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
        let skipped: Vec<(&str, &str)> =
            a.skipped.iter().map(|s| (s.path.as_str(), s.why)).collect();
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
        assert_eq!((err.line, err.what), (2, "string literal"));
        let err = analyze(&tree(&[("lib.rs", "/* /* */")])).unwrap_err();
        assert_eq!(err.what, "block comment");
        let err = analyze(&tree(&[(
            "lib.rs",
            "fn f() {}\n\nconst R: &str = r#\"open\"; ",
        )]))
        .unwrap_err();
        assert_eq!((err.line, err.what), (3, "raw string literal"));
        let err = analyze(&tree(&[("lib.rs", "mod a;\nfn f() { g(; }")])).unwrap_err();
        assert_eq!(err.line, 2, "{err}");
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
        let lib = "//! <!-- layers -->\n//! ```text\n//! 0 x: a ghost\n//! 1 y: a::deep a\n//! ```\nmod a;";
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
            "largest import cycle: 2 files (limit 1); layer violations: 0 (no layer list)\n"
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
}
