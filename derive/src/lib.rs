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
//! ```
//!
//! - `output = Type` sets `Component::Output` (default: `Self`).
//! - `merge = expr` (optional) makes the type `runsync::DefaultMerge`, so
//!   `world.register_default::<Pos>()` registers it with that merge.

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
            } else {
                Err(meta.error(
                    "unknown `component` attribute: expected `output = Type` or `merge = expr`",
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
    let component = quote! {
        impl #impl_generics ::runsync::Component for #name #ty_generics #where_clause {
            type Output = #output;
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
