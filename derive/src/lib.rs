//! `#[derive(Component)]` for [runsync](https://docs.rs/runsync): use it through
//! `runsync::Component` (the derive and the trait share the name, as serde's do).
//!
//! ```text
//! #[derive(Component, Clone, Copy)]
//! #[component(merge = runsync::merge::last)]          // Output = Self
//! struct Pos(f32, f32);
//!
//! #[derive(Component)]
//! #[component(output = i32, merge = |h: &mut Health, d: &[i32]| h.0 += d.iter().sum::<i32>())]
//! struct Health(i32);
//!
//! #[derive(Component, Clone, Copy)]
//! #[component(merge = runsync::merge::last, requires(Pos, Health = Health(100)))]
//! struct Ship;
//! ```
//!
//! - `output = Type` sets `Component::Output` (default: `Self`).
//! - `merge = expr` (optional) makes the type `runsync::DefaultMerge`, so
//!   `world.register_default::<Pos>()` registers it with that merge.
//! - `requires(A, B = expr, ..)` (optional, may repeat): an entity that gains this type
//!   and lacks `A` gets `A::default()`, and `expr` for `B` (a constant expression: it
//!   becomes a `fn() -> B`); declared when the type is registered, as
//!   `World::require_with` does. Each entry is a type path (no generic arguments).
//! - flags, with `merge`: `snapshot`, `checksum`, `debug`, `save`, `save_pod` —
//!   `register_default` then also calls `world.snapshotting::<T>()`,
//!   `checksumming::<T>()`, `debugging::<T>()`, `saving::<T>()`, `saving_pod::<T>()`
//!   (`save` or `save_pod`, not both).
//!
//! `#[derive(Checksum)]` implements `runsync::Checksum` by writing every field in
//! declaration order (an enum writes its variant index first).

use proc_macro::TokenStream;
use quote::quote;
use syn::{Data, DeriveInput, Expr, Fields, Index, Type, parse_macro_input, parse_quote};

/// Implements `runsync::Component` (and `runsync::DefaultMerge` when a merge is given).
/// See the crate docs for the `#[component(..)]` attribute.
#[proc_macro_derive(Component, attributes(component))]
pub fn derive_component(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    match expand(&input) {
        Ok(tokens) => tokens.into(),
        Err(e) => e.to_compile_error().into(),
    }
}

/// The opt-in flags of `#[component(..)]`, in the order `register_default` applies them.
const FLAGS: [(&str, &str); 5] = [
    ("snapshot", "snapshotting"),
    ("checksum", "checksumming"),
    ("debug", "debugging"),
    ("save", "saving"),
    ("save_pod", "saving_pod"),
];

fn expand(input: &DeriveInput) -> syn::Result<proc_macro2::TokenStream> {
    let mut output: Option<Type> = None;
    let mut merge: Option<Expr> = None;
    let mut flags: Vec<syn::Ident> = Vec::new();
    let mut first_flag: Option<proc_macro2::Span> = None;
    // Each required type, with its constructor expression if one is given.
    let mut requires: Vec<(syn::Path, Option<Expr>)> = Vec::new();
    for attr in input
        .attrs
        .iter()
        .filter(|a| a.path().is_ident("component"))
    {
        attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("output") {
                output = Some(meta.value()?.parse()?);
                Ok(())
            } else if meta.path.is_ident("merge") {
                merge = Some(meta.value()?.parse()?);
                Ok(())
            } else if meta.path.is_ident("requires") {
                meta.parse_nested_meta(|req| {
                    let make = if req.input.peek(syn::Token![=]) {
                        Some(req.value()?.parse()?)
                    } else if req.input.is_empty() || req.input.peek(syn::Token![,]) {
                        None
                    } else {
                        return Err(req.error(
                            "expected a required type, or `Type = expr` with its constructor",
                        ));
                    };
                    requires.push((req.path.clone(), make));
                    Ok(())
                })
            } else if let Some((_, call)) = FLAGS.iter().find(|(f, _)| meta.path.is_ident(f)) {
                first_flag.get_or_insert(meta.path.segments[0].ident.span());
                let call = syn::Ident::new(call, meta.path.segments[0].ident.span());
                if !flags.contains(&call) {
                    flags.push(call);
                }
                Ok(())
            } else {
                Err(meta.error(
                    "unknown `component` attribute: expected `output = Type`, `merge = expr`, \
                     `requires(Type, Type = expr, ..)`, or a flag: `snapshot`, `checksum`, \
                     `debug`, `save`, `save_pod`",
                ))
            }
        })?;
    }
    let is = |f: &str| flags.iter().any(|i| i == f);
    if is("saving") && is("saving_pod") {
        return Err(syn::Error::new(
            first_flag.expect("flags were given"),
            "`save` and `save_pod` are two ways to opt a type into save files (serde values, \
             plain bytes): give one of them",
        ));
    }
    let name = &input.ident;
    let (impl_generics, ty_generics, where_clause) = input.generics.split_for_impl();
    let output = match output {
        Some(t) => quote!(#t),
        None => quote!(Self),
    };
    let required = requires.iter().map(|(ty, make)| match make {
        Some(e) => quote! {
            sink.require::<#ty>((|| -> #ty { #e }) as fn() -> #ty);
        },
        None => quote! {
            sink.require::<#ty>(<#ty as ::core::default::Default>::default);
        },
    });
    let register_required = (!requires.is_empty()).then(|| {
        quote! {
            fn register_required<S: ::runsync::RequireSink>(sink: &mut S) {
                #(#required)*
            }
        }
    });
    let component = quote! {
        impl #impl_generics ::runsync::Component for #name #ty_generics #where_clause {
            type Output = #output;
            #register_required
        }
    };
    if let (None, Some(span)) = (&merge, first_flag) {
        return Err(syn::Error::new(
            span,
            "`component` flags are applied by `World::register_default`, which needs the \
             type's merge: add `merge = ..` (e.g. `merge = runsync::merge::last`), or call \
             `world.snapshotting::<T>()` / `checksumming` / `debugging` / `saving` after \
             `register`",
        ));
    }
    let opt_in = (!flags.is_empty()).then(|| {
        quote! {
            fn opt_in(world: &mut ::runsync::World) {
                world #(.#flags::<Self>())*;
            }
        }
    });
    let default_merge = merge.map(|m| {
        quote! {
            impl #impl_generics ::runsync::DefaultMerge for #name #ty_generics #where_clause {
                fn default_merge() -> impl ::runsync::Merge<Self> {
                    #m
                }
                #opt_in
            }
        }
    });
    Ok(quote! {
        #component
        #default_merge
    })
}

/// Implements `runsync::Checksum`: every field in declaration order, each with its own
/// `Checksum` impl; an enum first writes its variant's index (declaration order, from 0).
/// Type parameters get a `runsync::Checksum` bound.
#[proc_macro_derive(Checksum)]
pub fn derive_checksum(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    match expand_checksum(input) {
        Ok(tokens) => tokens.into(),
        Err(e) => e.to_compile_error().into(),
    }
}

/// `(pattern, statements)` that bind and checksum `fields`; `prefix` names the bindings.
fn checksum_fields(fields: &Fields) -> (proc_macro2::TokenStream, Vec<proc_macro2::TokenStream>) {
    match fields {
        Fields::Named(named) => {
            let names: Vec<_> = named.named.iter().map(|f| f.ident.clone()).collect();
            let sums = names
                .iter()
                .map(|n| quote!(::runsync::Checksum::checksum(#n, __h);))
                .collect();
            (quote!({ #(#names),* }), sums)
        }
        Fields::Unnamed(unnamed) => {
            let names: Vec<_> = (0..unnamed.unnamed.len())
                .map(|i| quote::format_ident!("__f{i}"))
                .collect();
            let sums = names
                .iter()
                .map(|n| quote!(::runsync::Checksum::checksum(#n, __h);))
                .collect();
            (quote!(( #(#names),* )), sums)
        }
        Fields::Unit => (quote!(), Vec::new()),
    }
}

fn expand_checksum(mut input: DeriveInput) -> syn::Result<proc_macro2::TokenStream> {
    for p in input.generics.type_params_mut() {
        p.bounds.push(parse_quote!(::runsync::Checksum));
    }
    let name = &input.ident;
    let (impl_generics, ty_generics, where_clause) = input.generics.split_for_impl();
    let body = match &input.data {
        Data::Struct(s) => {
            let sums = s.fields.iter().enumerate().map(|(i, f)| match &f.ident {
                Some(id) => quote!(::runsync::Checksum::checksum(&self.#id, __h);),
                None => {
                    let i = Index::from(i);
                    quote!(::runsync::Checksum::checksum(&self.#i, __h);)
                }
            });
            quote!(#(#sums)*)
        }
        Data::Enum(e) => {
            let arms = e.variants.iter().enumerate().map(|(i, v)| {
                let ident = &v.ident;
                let (pattern, sums) = checksum_fields(&v.fields);
                let i = i as u64;
                quote! {
                    Self::#ident #pattern => {
                        __h.write_u64(#i);
                        #(#sums)*
                    }
                }
            });
            if e.variants.is_empty() {
                quote!(match *self {})
            } else {
                quote!(match self { #(#arms)* })
            }
        }
        Data::Union(u) => {
            return Err(syn::Error::new(
                u.union_token.span,
                "`Checksum` cannot be derived for a union: which field holds the value is \
                 not known; implement `runsync::Checksum` by hand",
            ));
        }
    };
    Ok(quote! {
        impl #impl_generics ::runsync::Checksum for #name #ty_generics #where_clause {
            #[allow(unused_variables)]
            fn checksum(&self, __h: &mut ::runsync::Checksummer) {
                #body
            }
        }
    })
}
