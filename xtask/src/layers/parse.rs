//! One file read with `syn`: the `mod name;` declarations it makes and every path it
//! names (in `use` trees, in code, inside macro token streams), each with the module it
//! is written in. Attributes, visibilities and test-only code are not read.

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
}

/// Reads `text`, the file of module `module` (`[]` for the crate root). An error gives
/// the line and what is wrong.
pub(super) fn parse(text: &str, module: &[String]) -> Result<Parsed, (usize, String)> {
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
    };
    if test_only(&file.attrs) {
        c.out.test_only = true;
        return Ok(c.out);
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
}

impl Collector {
    /// Records a path given by its segments as written.
    pub(super) fn path(&mut self, segs: Vec<String>, glob: bool, mac: bool) {
        if !segs.is_empty() {
            let scope = self.scope.clone();
            self.out.refs.push(RawRef {
                scope,
                segs,
                glob,
                mac,
            });
        }
    }

    /// Records the paths of a `use` tree below `prefix`.
    pub(super) fn use_tree(&mut self, tree: &UseTree, prefix: &mut Vec<String>) {
        let leaf = |c: &mut Self, name: &syn::Ident| {
            let mut segs = prefix.clone();
            segs.extend((name != "self").then(|| name.unraw().to_string()));
            c.path(segs, false, false);
        };
        match tree {
            UseTree::Path(p) => {
                prefix.push(p.ident.unraw().to_string());
                self.use_tree(&p.tree, prefix);
                prefix.pop();
            }
            UseTree::Name(n) => leaf(self, &n.ident),
            UseTree::Rename(r) => leaf(self, &r.ident),
            UseTree::Glob(_) => self.path(prefix.clone(), true, false),
            UseTree::Group(g) => g.items.iter().for_each(|t| self.use_tree(t, prefix)),
        }
    }
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
        if !test_only(attrs) {
            return visit::visit_item(self, item);
        }
        if let Item::Mod(m @ syn::ItemMod { content: None, .. }) = item {
            let mut module = self.scope.clone();
            module.push(m.ident.unraw().to_string());
            self.out.decls.push(Decl { module, test: true });
        }
    }

    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
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
        if !test_only(attrs_of!(item, ImplItem: Const Fn Type Macro)) {
            visit::visit_impl_item(self, item);
        }
    }

    fn visit_trait_item(&mut self, item: &'ast TraitItem) {
        if !test_only(attrs_of!(item, TraitItem: Const Fn Type Macro)) {
            visit::visit_trait_item(self, item);
        }
    }

    fn visit_foreign_item(&mut self, item: &'ast ForeignItem) {
        if !test_only(attrs_of!(item, ForeignItem: Fn Static Type Macro)) {
            visit::visit_foreign_item(self, item);
        }
    }

    fn visit_expr(&mut self, e: &'ast Expr) {
        if !test_only(attrs_of!(e, Expr: Block Unsafe Async Const)) {
            visit::visit_expr(self, e);
        }
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        if let Some(segs) = segments(path) {
            self.path(segs, false, false);
        }
        visit::visit_path(self, path);
    }

    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        if let Some(segs) = segments(&m.path) {
            self.path(segs, false, true);
        }
        self.tokens(m.tokens.clone());
    }
}
