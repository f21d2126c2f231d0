//! One file read with `syn`: the `mod name;` declarations it makes and every path it
//! names (in `use` trees, in code, inside macro token streams), each with the module it
//! is written in and its line; also the items it defines and the names its `use` items
//! bring in, by module. Attributes and visibilities are not read; test-only code is
//! read only when asked for (the re-export check reads it, the import graph does not).

use std::fmt;

use proc_macro2::TokenStream;
use syn::ext::IdentExt as _;
use syn::punctuated::Punctuated;
use syn::visit::{self, Visit};
use syn::{Attribute, Expr, ForeignItem, ImplItem, Item, Meta, TraitItem, UseTree};

/// A file that `syn` cannot read: a lexical error (an unterminated literal or comment,
/// an unbalanced delimiter) or a syntax error.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    /// The file, relative to the source directory.
    pub path: String,
    /// The line of the offending token (1-based).
    pub line: usize,
    /// What is wrong (`unterminated string literal`, `expected `;``).
    pub message: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.path, self.line, self.message)
    }
}

impl std::error::Error for ParseError {}

/// A path named in a file, before resolution.
#[derive(Clone, Debug)]
pub(super) struct RawRef {
    /// The module the path is written in: the file's module plus inline `mod` names.
    pub(super) scope: Vec<String>,
    /// The segments as written (`super::super::x::Y`; `$crate` is `crate`), never empty.
    pub(super) segs: Vec<String>,
    /// `use path::*`.
    pub(super) glob: bool,
    /// `path!(..)`: the last segment is a macro.
    pub(super) mac: bool,
    /// The line the path starts on (1-based).
    pub(super) line: usize,
}

/// A name a `use` item brings into a module (outside function bodies): `use a::b::C;`
/// brings `C` (`use a::b::C as D;` brings `D`, `use a::b::{self};` brings `b`).
#[derive(Clone, Debug)]
pub(super) struct Import {
    /// The module the `use` is written in.
    pub(super) scope: Vec<String>,
    /// The name it brings in.
    pub(super) name: String,
    /// The path as written, to the item (`a::b::C`; `$crate` is `crate`).
    pub(super) segs: Vec<String>,
}

/// A `mod name;` declaration (a module in its own file); `test` if under `#[cfg(test)]`.
#[derive(Clone, Debug)]
pub(super) struct Decl {
    pub(super) module: Vec<String>,
    pub(super) test: bool,
}

/// What one file declares and names.
#[derive(Debug, Default)]
pub(super) struct Parsed {
    pub(super) decls: Vec<Decl>,
    pub(super) refs: Vec<RawRef>,
    /// An inner `#![cfg(test)]` at the top of the file.
    pub(super) test_only: bool,
    /// Names the crate root gives whole external crates (`use runsync_pool as pool;`).
    pub(super) extern_aliases: Vec<String>,
    /// Items defined outside function bodies (`fn`, types, traits, consts, statics,
    /// modules, `macro_rules!`, `extern crate`), each with the module it is in.
    pub(super) items: Vec<(Vec<String>, String)>,
    /// Names brought in by `use` items outside function bodies.
    pub(super) imports: Vec<Import>,
    /// Modules (in their own file or inline) that only part of the crate may name, each
    /// with the module whose code may: its parent for a private `mod`, the parent's
    /// parent for `pub(super)`.
    pub(super) restricted: Vec<(Vec<String>, Vec<String>)>,
}

/// Reads `text`, the file of module `module` (`[]` for the crate root), test-only code
/// too if `with_tests`. An error gives the line and what is wrong.
pub(super) fn parse(
    text: &str,
    module: &[String],
    with_tests: bool,
) -> Result<Parsed, (usize, String)> {
    let tokens: TokenStream = text.parse().map_err(|e: proc_macro2::LexError| {
        let at = e.span().start();
        (
            at.line,
            format!("unterminated {}", lex_error(text, at.line, at.column)),
        )
    })?;
    let file: syn::File =
        syn::parse2(tokens).map_err(|e| (e.span().start().line, e.to_string()))?;
    let mut c = Collector {
        scope: module.to_vec(),
        out: Parsed::default(),
        with_tests,
        in_body: 0,
    };
    if test_only(&file.attrs) {
        c.out.test_only = true;
        if !with_tests {
            return Ok(c.out);
        }
    }
    c.visit_file(&file);
    // `use other_crate as name;` at the crate root: `crate::name::..` is outside the graph.
    let aliases = file.items.iter().filter_map(|item| match item {
        Item::Use(syn::ItemUse {
            attrs,
            leading_colon: None,
            tree: UseTree::Rename(r),
            ..
        }) if !test_only(attrs) && !["crate", "self", "super"].iter().any(|k| r.ident == k) => {
            Some(r.rename.to_string())
        }
        _ => None,
    });
    if module.is_empty() {
        c.out.extern_aliases.extend(aliases);
    }
    Ok(c.out)
}

/// What a lexical error at `line`:`column` (1-based, 0-based) did not terminate.
fn lex_error(text: &str, line: usize, column: usize) -> &'static str {
    let line = text.lines().nth(line.saturating_sub(1)).unwrap_or("");
    let rest: String = line.chars().skip(column).collect();
    let starts = |ps: &[&str]| ps.iter().any(|p| rest.starts_with(p));
    if starts(&["/*"]) {
        "block comment"
    } else if starts(&["\"", "b\"", "c\""]) {
        "string literal"
    } else if starts(&["r\"", "r#", "br", "cr"]) {
        "raw string literal"
    } else if starts(&["'", "b'"]) {
        "char literal"
    } else {
        "delimiter or token"
    }
}

/// Whether `attrs` hold a `cfg` true only in test builds: `test`, `all(..)` with such
/// an argument, or `any(..)` whose arguments all are.
pub(super) fn test_only(attrs: &[Attribute]) -> bool {
    fn pred(m: &Meta) -> bool {
        let Meta::List(list) = m else {
            return m.path().is_ident("test");
        };
        let args: Vec<bool> = list
            .parse_args_with(Punctuated::<Meta, syn::Token![,]>::parse_terminated)
            .map_or_else(|_| Vec::new(), |a| a.iter().map(pred).collect());
        if list.path.is_ident("all") {
            args.contains(&true)
        } else {
            list.path.is_ident("any") && !args.is_empty() && !args.contains(&false)
        }
    }
    attrs
        .iter()
        .any(|a| a.path().is_ident("cfg") && a.parse_args::<Meta>().is_ok_and(|m| pred(&m)))
}

/// The attributes of an enum's variants that carry them.
macro_rules! attrs_of {
    ($node:expr, $ty:ident: $($v:ident)*) => {
        match $node {
            $($ty::$v(x) => &x.attrs[..],)*
            _ => &[],
        }
    };
}

/// Walks one file's syntax tree, collecting declarations and paths into `out`.
pub(super) struct Collector {
    /// The module being read: the file's module plus inline `mod` names.
    pub(super) scope: Vec<String>,
    pub(super) out: Parsed,
    /// Read test-only code too.
    pub(super) with_tests: bool,
    /// How many function bodies (blocks) enclose the code being read.
    pub(super) in_body: usize,
}

impl Collector {
    /// Records a path given by its segments as written, starting on `line`.
    pub(super) fn path(&mut self, segs: Vec<String>, glob: bool, mac: bool, line: usize) {
        if !segs.is_empty() {
            let scope = self.scope.clone();
            self.out.refs.push(RawRef {
                scope,
                segs,
                glob,
                mac,
                line,
            });
        }
    }

    /// Whether code under `attrs` is left out: test-only, and tests are not read.
    pub(super) fn skips(&self, attrs: &[Attribute]) -> bool {
        !self.with_tests && test_only(attrs)
    }

    /// Records the paths of a `use` tree below `prefix`, and the names it brings in.
    pub(super) fn use_tree(&mut self, tree: &UseTree, prefix: &mut Vec<String>) {
        let leaf = |c: &mut Self, name: &syn::Ident, brought: &syn::Ident| {
            let mut segs = prefix.clone();
            segs.extend((name != "self").then(|| name.unraw().to_string()));
            let name = match (brought == "self", segs.last()) {
                (true, Some(last)) => last.clone(),
                _ => brought.unraw().to_string(),
            };
            if c.in_body == 0 && !segs.is_empty() {
                let (scope, segs) = (c.scope.clone(), segs.clone());
                c.out.imports.push(Import { scope, name, segs });
            }
            c.path(segs, false, false, brought.span().start().line);
        };
        match tree {
            UseTree::Path(p) => {
                prefix.push(p.ident.unraw().to_string());
                self.use_tree(&p.tree, prefix);
                prefix.pop();
            }
            UseTree::Name(n) => leaf(self, &n.ident, &n.ident),
            UseTree::Rename(r) => leaf(self, &r.ident, &r.rename),
            UseTree::Glob(g) => {
                self.path(prefix.clone(), true, false, g.star_token.span.start().line)
            }
            UseTree::Group(g) => g.items.iter().for_each(|t| self.use_tree(t, prefix)),
        }
    }

    /// Records an item named `name` defined in the current module.
    fn item(&mut self, name: &syn::Ident) {
        if self.in_body == 0 {
            let scope = self.scope.clone();
            self.out.items.push((scope, name.unraw().to_string()));
        }
    }
}

/// The line a path starts on.
fn line_of(path: &syn::Path) -> usize {
    path.segments
        .first()
        .map_or(0, |s| s.ident.span().start().line)
}

/// The segments of a path written with at least one `::` and no leading `::`.
fn segments(path: &syn::Path) -> Option<Vec<String>> {
    (path.leading_colon.is_none() && path.segments.len() >= 2).then(|| {
        path.segments
            .iter()
            .map(|s| s.ident.unraw().to_string())
            .collect()
    })
}

impl<'ast> Visit<'ast> for Collector {
    fn visit_attribute(&mut self, _: &'ast Attribute) {}

    fn visit_visibility(&mut self, _: &'ast syn::Visibility) {}

    fn visit_item(&mut self, item: &'ast Item) {
        let attrs = attrs_of!(item, Item: Const Enum ExternCrate Fn ForeignMod Impl Macro
            Mod Static Struct Trait TraitAlias Type Union Use);
        let test = test_only(attrs);
        if let (true, Item::Mod(m @ syn::ItemMod { content: None, .. })) = (test, item) {
            let mut module = self.scope.clone();
            module.push(m.ident.unraw().to_string());
            self.out.decls.push(Decl { module, test: true });
            return;
        }
        if test && !self.with_tests {
            return;
        }
        let name = match item {
            Item::Const(i) => Some(&i.ident),
            Item::Enum(i) => Some(&i.ident),
            Item::ExternCrate(i) => Some(i.rename.as_ref().map_or(&i.ident, |(_, r)| r)),
            Item::Fn(i) => Some(&i.sig.ident),
            Item::Macro(i) => i.ident.as_ref(),
            Item::Mod(i) => Some(&i.ident),
            Item::Static(i) => Some(&i.ident),
            Item::Struct(i) => Some(&i.ident),
            Item::Trait(i) => Some(&i.ident),
            Item::TraitAlias(i) => Some(&i.ident),
            Item::Type(i) => Some(&i.ident),
            Item::Union(i) => Some(&i.ident),
            _ => None,
        };
        if let Some(name) = name {
            self.item(name);
        }
        visit::visit_item(self, item);
    }

    fn visit_block(&mut self, b: &'ast syn::Block) {
        self.in_body += 1;
        visit::visit_block(self, b);
        self.in_body -= 1;
    }

    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        let up = match &m.vis {
            syn::Visibility::Inherited => Some(0),
            syn::Visibility::Restricted(r) if r.path.is_ident("self") => Some(0),
            syn::Visibility::Restricted(r) if r.path.is_ident("super") => Some(1),
            _ => None,
        };
        if let Some(within) = up.and_then(|up| self.scope.len().checked_sub(up)) {
            let module = [&self.scope[..], &[m.ident.unraw().to_string()]].concat();
            let within = self.scope[..within].to_vec();
            self.out.restricted.push((module, within));
        }
        self.scope.push(m.ident.unraw().to_string());
        match &m.content {
            None => {
                let module = self.scope.clone();
                self.out.decls.push(Decl {
                    module,
                    test: false,
                });
            }
            Some((_, items)) => items.iter().for_each(|i| self.visit_item(i)),
        }
        self.scope.pop();
    }

    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        if u.leading_colon.is_none() {
            self.use_tree(&u.tree, &mut Vec::new());
        }
    }

    fn visit_impl_item(&mut self, item: &'ast ImplItem) {
        if !self.skips(attrs_of!(item, ImplItem: Const Fn Type Macro)) {
            visit::visit_impl_item(self, item);
        }
    }

    fn visit_trait_item(&mut self, item: &'ast TraitItem) {
        if !self.skips(attrs_of!(item, TraitItem: Const Fn Type Macro)) {
            visit::visit_trait_item(self, item);
        }
    }

    fn visit_foreign_item(&mut self, item: &'ast ForeignItem) {
        if !self.skips(attrs_of!(item, ForeignItem: Fn Static Type Macro)) {
            visit::visit_foreign_item(self, item);
        }
    }

    fn visit_expr(&mut self, e: &'ast Expr) {
        if !self.skips(attrs_of!(e, Expr: Block Unsafe Async Const)) {
            visit::visit_expr(self, e);
        }
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        if let Some(segs) = segments(path) {
            self.path(segs, false, false, line_of(path));
        }
        visit::visit_path(self, path);
    }

    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        if let Some(segs) = segments(&m.path) {
            self.path(segs, false, true, line_of(&m.path));
        }
        self.tokens(m.tokens.clone());
    }
}
