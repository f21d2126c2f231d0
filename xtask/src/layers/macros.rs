//! The tokens of a macro (its body or its arguments), which `syn` leaves unparsed, read
//! as the tokens of items and code: `mod` declarations, `use` trees and paths.

use proc_macro2::{Delimiter, Spacing, TokenStream, TokenTree};
use syn::ext::IdentExt as _;
use syn::parse::Parser as _;
use syn::{Attribute, UseTree};

use super::parse::{Collector, Decl, test_only};

impl Collector {
    /// Records what a macro's tokens declare and name, read as the tokens of items
    /// and code: `mod name;`, inline `mod name { .. }`, `use` trees, and runs of
    /// `a::b::c` (`$crate::x` is `crate::x`) not following `::`, `.` or another `$`.
    /// Attributes and `pub(..)` are skipped, and so is an item (or block) after a
    /// test-only attribute.
    pub(super) fn tokens(&mut self, tokens: TokenStream) {
        let tts: Vec<TokenTree> = tokens.into_iter().collect();
        let punct =
            |k: usize, c| matches!(tts.get(k), Some(TokenTree::Punct(p)) if p.as_char() == c);
        let joint = |k: usize| matches!(tts.get(k), Some(TokenTree::Punct(p)) if p.spacing() == Spacing::Joint);
        let sep = |k: usize| punct(k, ':') && joint(k) && punct(k + 1, ':');
        let group =
            |k: usize, d| matches!(tts.get(k), Some(TokenTree::Group(g)) if g.delimiter() == d);
        let ident = |k: usize| match tts.get(k) {
            Some(TokenTree::Ident(id)) => Some(id.unraw().to_string()),
            _ => None,
        };
        // The index of the `;` or `{ .. }` that ends the item at `k`.
        let item_end =
            |k: usize| (k..tts.len()).find(|&e| punct(e, ';') || group(e, Delimiter::Brace));
        let mut test = false; // a test-only attribute stands before the item at `i`
        let mut i = 0;
        while i < tts.len() {
            let after_sep = i >= 2 && sep(i - 2);
            let open = i + 1 + usize::from(punct(i + 1, '!'));
            if punct(i, '#') && group(open, Delimiter::Bracket) {
                let attr: TokenStream = tts[i..=open].iter().cloned().collect();
                let outer = Attribute::parse_outer.parse2(attr);
                test |= !self.with_tests && outer.is_ok_and(|a| test_only(&a));
                i = open + 1;
                continue;
            }
            if ident(i).as_deref() == Some("pub") {
                i += 1 + usize::from(group(i + 1, Delimiter::Parenthesis));
                continue;
            }
            let item_test = std::mem::take(&mut test);
            match (&tts[i], ident(i).as_deref()) {
                (TokenTree::Group(g), _) if !(item_test && g.delimiter() == Delimiter::Brace) => {
                    self.tokens(g.stream());
                }
                (_, Some("mod")) if !after_sep && ident(i + 1).is_some() => {
                    let name = ident(i + 1).unwrap_or_default();
                    if punct(i + 2, ';') {
                        let module = [&self.scope[..], &[name]].concat();
                        self.out.decls.push(Decl {
                            module,
                            test: item_test,
                        });
                    } else if let (Some(TokenTree::Group(g)), false) = (tts.get(i + 2), item_test) {
                        self.scope.push(name);
                        self.tokens(g.stream());
                        self.scope.pop();
                    }
                    i += 2;
                }
                (_, Some(k)) if item_test && ITEM_KEYWORDS.split(' ').any(|w| w == k) => {
                    i = item_end(i).unwrap_or(tts.len());
                }
                (_, Some("use")) if !after_sep => {
                    let end = (i..tts.len()).find(|&k| punct(k, ';')).unwrap_or(tts.len());
                    let tree: TokenStream = (i + 1..end)
                        .filter(|&k| !(punct(k, '$') && ident(k + 1).as_deref() == Some("crate")))
                        .map(|k| tts[k].clone())
                        .collect();
                    if let Ok(tree) = syn::parse2::<UseTree>(tree) {
                        self.use_tree(&tree, &mut Vec::new());
                    }
                    i = end;
                }
                (_, Some(first))
                    if sep(i + 1)
                        && !after_sep
                        && !punct(i.wrapping_sub(1), '.')
                        && (!punct(i.wrapping_sub(1), '$') || first == "crate") =>
                {
                    let line = tts[i].span().start().line;
                    let mut segs = vec![first.to_owned()];
                    while let Some(s) = ident(i + 3).filter(|_| sep(i + 1)) {
                        segs.push(s);
                        i += 3;
                    }
                    let mac = punct(i + 1, '!') && !punct(i + 2, '=');
                    self.path(segs, false, mac, line);
                }
                _ => {}
            }
            i += 1;
        }
    }
}

/// Item keywords after which a test-only attribute in a macro's tokens skips the item.
const ITEM_KEYWORDS: &str =
    "fn impl use struct enum union const static type trait unsafe async extern macro_rules";
