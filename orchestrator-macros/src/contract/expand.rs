//! Generates the contract type, one type per version, and their trait impls.

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;

use super::Flavor;
use super::valid::{Model, VersionModel};
use crate::shared::respan;

pub(crate) fn expand(model: &Model) -> TokenStream {
    let mut out = declarations(model);
    out.extend(contract_impl(model));
    for version in &model.versions {
        out.extend(version_impl(model, version));
    }
    out
}

/// What is generated when the declaration has errors: the types alone, so that code using them
/// does not add errors of its own.
pub(crate) fn fallback(model: &Model) -> TokenStream {
    declarations(model)
}

fn declarations(model: &Model) -> TokenStream {
    let Model { attrs, vis, name, uri, accepts_type, .. } = model;
    let doc_types = format!(" Contract `{uri}` (accepts `{accepts_type}`). Versions:");
    let version_docs = model.versions.iter().map(|v| {
        let ident = &v.ident;
        let line = format!(" - [`{ident}`]: version {}", v.version);
        quote!(#[doc = #line])
    });
    // Each struct is spanned on its name, so that diagnostics about it (such as "doesn't satisfy
    // `AddV1: OrchestratorVersion`") point at the name rather than at the whole macro call.
    let contract_vis = respan(vis, name.span());
    let mut out = quote_spanned! {name.span()=>
        #(#attrs)*
        #[doc = ""]
        #[doc = #doc_types]
        #(#version_docs)*
        #[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
        #contract_vis struct #name;
    };
    for v in &model.versions {
        let VersionModel { attrs, ident, version, .. } = v;
        let doc = format!(" Version {version} of [`{name}`] (`{uri}/{version}`).");
        let vis = respan(vis, ident.span());
        out.extend(quote_spanned! {ident.span()=>
            #(#attrs)*
            #[doc = #doc]
            #[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
            #vis struct #ident;
        });
    }
    out
}

fn contract_impl(model: &Model) -> TokenStream {
    let Model { name, uri, accepts_type, root_type, .. } = model;
    let constructor = match model.flavor {
        Flavor::Plain => quote!(::orchestrator::contract::ArvoContract::builder(#uri, #accepts_type)),
        Flavor::Simple => quote!(::orchestrator::contract::ArvoContract::simple(#uri, #root_type)),
        Flavor::Orchestrator => {
            quote!(::orchestrator::contract::ArvoContract::orchestrator(#uri, #root_type))
        }
    };
    let domain = model.domain.as_ref().map(|d| quote!(.domain(#d)));
    let description = model.description.as_ref().map(|d| quote!(.description(#d)));
    let metadata = model.metadata.iter().map(|(k, v)| quote!(.metadata(#k, #v)));
    // The accepted (init) and completion payloads are named through the version's associated
    // types, inside generic helpers where their `Payload` bound is implied: a payload type missing
    // a trait is then reported once, at the version's impl, rather than once more here.
    let versions = model.versions.iter().map(|v| {
        let version = &v.version;
        let ident = &v.ident;
        let builder = quote!(::orchestrator::contract::VersionBuilder::new(#version));
        match model.flavor {
            Flavor::Orchestrator => quote!(.version(__payloads::<#ident>(#builder))),
            Flavor::Plain | Flavor::Simple => {
                let emits = v.emits.iter().map(|(t, ty)| quote_spanned!(ty.span()=> .emits::<#ty>(#t)));
                quote!(.version(__payloads::<#ident>(#builder) #(#emits)*))
            }
        }
    });
    let payloads_helper = match model.flavor {
        Flavor::Orchestrator => quote! {
            fn __payloads<V: ::orchestrator::contract::OrchestratorVersion>(
                builder: ::orchestrator::contract::VersionBuilder,
            ) -> ::orchestrator::contract::VersionBuilder {
                builder.accepts::<V::Init>().emits::<V::Complete>(
                    <V as ::orchestrator::contract::Emits<V::Complete>>::EVENT_TYPE,
                )
            }
        },
        Flavor::Plain | Flavor::Simple => quote! {
            fn __payloads<V: ::orchestrator::contract::ContractVersion>(
                builder: ::orchestrator::contract::VersionBuilder,
            ) -> ::orchestrator::contract::VersionBuilder {
                builder.accepts::<V::Accepts>()
            }
        },
    };
    let name_text = name.to_string();
    quote! {
        impl ::orchestrator::contract::Contract for #name {
            fn contract() -> &'static ::orchestrator::contract::ArvoContract {
                #payloads_helper
                static CONTRACT: ::std::sync::OnceLock<::orchestrator::contract::ArvoContract> =
                    ::std::sync::OnceLock::new();
                CONTRACT.get_or_init(|| {
                    #constructor #domain #description #(#metadata)* #(#versions)*
                        .build()
                        .unwrap_or_else(|e| {
                            // The macro checked every rule at compile time; reaching this means a
                            // payload's generated schema is unusable.
                            panic!("contract `{}` cannot be built: {}", #name_text, e)
                        })
                })
            }
        }
    }
}

fn version_impl(model: &Model, v: &VersionModel) -> TokenStream {
    let name = &model.name;
    let ident = &v.ident;
    let Some(accepts) = &v.accepts else { return TokenStream::new() };
    let uri = &model.uri;
    let accepts_type = &model.accepts_type;
    let version = &v.version;
    let parsed = orchestrator_rules::version::parse(version).unwrap_or_default();
    let (major, minor, patch) = parsed;
    let accepts_ty = match model.flavor {
        Flavor::Orchestrator => {
            quote_spanned!(accepts.span()=> ::orchestrator::contract::OrchestratorInit<#accepts>)
        }
        _ => quote_spanned!(accepts.span()=> #accepts),
    };
    let versioned_static = format_ident!("VERSIONED");
    let mut out = quote! {
        impl ::orchestrator::contract::ContractVersion for #ident {
            type Contract = #name;
            type Accepts = #accepts_ty;
            const URI: &'static str = #uri;
            const TYPE: &'static str = #accepts_type;
            const VERSION: &'static str = #version;

            fn versioned() -> &'static ::orchestrator::contract::VersionedContract {
                static #versioned_static: ::std::sync::OnceLock<::orchestrator::contract::VersionedContract> =
                    ::std::sync::OnceLock::new();
                #versioned_static.get_or_init(|| {
                    let selector = ::orchestrator::contract::VersionSelector::Exact(
                        ::orchestrator::semver::SemVer::new(#major, #minor, #patch),
                    );
                    match <#name as ::orchestrator::contract::Contract>::contract().version(selector) {
                        ::std::option::Option::Some(v) => v.clone(),
                        ::std::option::Option::None => unreachable!("version declared by the macro"),
                    }
                })
            }
        }
    };
    for (event_type, ty) in &v.emits {
        out.extend(quote_spanned! {ty.span()=>
            impl ::orchestrator::contract::Emits<#ty> for #ident {
                const EVENT_TYPE: &'static str = #event_type;
            }
        });
    }
    if model.flavor != Flavor::Orchestrator && v.emits.is_empty() {
        out.extend(quote! {
            impl ::orchestrator::contract::NoReply for #ident {}
        });
    }
    if model.flavor == Flavor::Orchestrator
        && let Some((_, complete)) = v.emits.first()
    {
        out.extend(quote! {
            impl ::orchestrator::contract::OrchestratorVersion for #ident {
                type Init = #accepts;
                type Complete = #complete;
            }
        });
    }
    out
}
