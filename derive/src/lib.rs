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

use proc_macro::TokenStream;
use quote::quote;
use syn::{DeriveInput, Expr, Type, parse_macro_input};

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

fn expand(input: &DeriveInput) -> syn::Result<proc_macro2::TokenStream> {
    let mut output: Option<Type> = None;
    let mut merge: Option<Expr> = None;
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
            } else {
                Err(meta.error(
                    "unknown `component` attribute: expected `output = Type`, `merge = expr` \
                     or `requires(Type, Type = expr, ..)`",
                ))
            }
        })?;
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
    let default_merge = merge.map(|m| {
        quote! {
            impl #impl_generics ::runsync::DefaultMerge for #name #ty_generics #where_clause {
                fn default_merge() -> impl ::runsync::Merge<Self> {
                    #m
                }
            }
        }
    });
    Ok(quote! {
        #component
        #default_merge
    })
}
