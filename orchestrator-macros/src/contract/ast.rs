//! The syntax of a contract declaration, parsed without judging it (see `valid`).
//!
//! ```text
//! #[attrs] VIS contract NAME {
//!     KEY: VALUE, ...                       // uri, type | name, domain, description, metadata
//!     versions: { #[attrs] IDENT = "X.Y.Z" { KEY: VALUE, ... }, ... },
//! }
//! ```

use syn::ext::IdentExt;
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::{Attribute, Ident, LitStr, Token, Type, Visibility, braced};

/// A whole declaration.
pub(crate) struct ContractDecl {
    pub attrs: Vec<Attribute>,
    pub vis: Visibility,
    pub name: Ident,
    pub fields: Vec<Field>,
}

/// `key: value` at the contract level.
pub(crate) struct Field {
    pub key: Ident,
    pub value: FieldValue,
}

/// The value forms a key may take.
pub(crate) enum FieldValue {
    /// `"text"`
    Str(LitStr),
    /// `{ "k": "v", ... }` (metadata) – values are string, number or bool literals.
    Metadata(Vec<(LitStr, syn::Lit)>),
    /// `{ V = "1.0.0" { ... }, ... }`
    Versions(Vec<VersionDecl>),
}

/// One version.
pub(crate) struct VersionDecl {
    pub attrs: Vec<Attribute>,
    pub ident: Ident,
    pub version: LitStr,
    pub fields: Vec<VersionField>,
}

/// `key: value` inside a version.
pub(crate) struct VersionField {
    pub key: Ident,
    pub value: VersionValue,
}

/// The value forms inside a version.
pub(crate) enum VersionValue {
    /// `Type`
    Type(Type),
    /// `{ "evt.type" => Type, ... }`
    Emits(Vec<(LitStr, Type)>),
}

impl Parse for ContractDecl {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let attrs = input.call(Attribute::parse_outer)?;
        let vis: Visibility = input.parse()?;
        let kw: Ident = input.call(Ident::parse_any)?;
        if kw != "contract" {
            return Err(syn::Error::new(kw.span(), "expected `contract`, as in `pub contract Name { ... }`"));
        }
        let name: Ident = input.parse()?;
        let body;
        braced!(body in input);
        let mut fields = Vec::new();
        while !body.is_empty() {
            let key: Ident = body.call(Ident::parse_any)?;
            body.parse::<Token![:]>()?;
            let value = if key == "versions" {
                let inner;
                braced!(inner in body);
                let versions = Punctuated::<VersionDecl, Token![,]>::parse_terminated(&inner)?;
                FieldValue::Versions(versions.into_iter().collect())
            } else if key == "metadata" {
                let inner;
                braced!(inner in body);
                let entries = Punctuated::<_, Token![,]>::parse_terminated_with(&inner, |p| {
                    let k: LitStr = p.parse()?;
                    p.parse::<Token![:]>()?;
                    Ok((k, p.parse::<syn::Lit>()?))
                })?;
                FieldValue::Metadata(entries.into_iter().collect())
            } else {
                FieldValue::Str(body.parse()?)
            };
            fields.push(Field { key, value });
            if body.is_empty() {
                break;
            }
            body.parse::<Token![,]>()?;
        }
        Ok(Self { attrs, vis, name, fields })
    }
}

impl Parse for VersionDecl {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let attrs = input.call(Attribute::parse_outer)?;
        let ident: Ident = input.parse()?;
        input.parse::<Token![=]>()?;
        let version: LitStr = input.parse()?;
        let body;
        braced!(body in input);
        let mut fields = Vec::new();
        while !body.is_empty() {
            let key: Ident = body.call(Ident::parse_any)?;
            body.parse::<Token![:]>()?;
            let value = if body.peek(syn::token::Brace) {
                let inner;
                braced!(inner in body);
                let emits = Punctuated::<_, Token![,]>::parse_terminated_with(&inner, |p| {
                    let t: LitStr = p.parse()?;
                    p.parse::<Token![=>]>()?;
                    Ok((t, p.parse::<Type>()?))
                })?;
                VersionValue::Emits(emits.into_iter().collect())
            } else {
                VersionValue::Type(body.parse()?)
            };
            fields.push(VersionField { key, value });
            if body.is_empty() {
                break;
            }
            body.parse::<Token![,]>()?;
        }
        Ok(Self { attrs, ident, version, fields })
    }
}
