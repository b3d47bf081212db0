//! Names: generated identifiers and "did you mean" suggestions.

use proc_macro2::{Span, TokenStream};
use quote::ToTokens;

use crate::ctxt::Ctxt;

/// `snake_case` / `camelCase` key → `PascalCase`.
pub(crate) fn pascal(key: &str) -> String {
    let mut out = String::with_capacity(key.len());
    for part in key.split('_').filter(|p| !p.is_empty()) {
        let mut chars = part.chars();
        if let Some(first) = chars.next() {
            out.extend(first.to_uppercase());
            out.push_str(chars.as_str());
        }
    }
    if out.is_empty() { "X".to_owned() } else { out }
}

/// A generated identifier spanned on the user's token.
pub(crate) fn ident(text: &str, span: Span) -> syn::Ident {
    syn::Ident::new(text, span)
}

/// Re-records a parse error (possibly several combined) in `cx`, keeping its spans.
pub(crate) fn push_syn_error(cx: &mut Ctxt, error: syn::Error) {
    for e in error {
        let tokens: TokenStream = e.to_compile_error();
        cx.error_spanned_by(tokens, e.to_string());
    }
}

/// `tokens` as a compact string (for comparing types written twice).
pub(crate) fn token_text(tokens: &impl ToTokens) -> String {
    tokens.to_token_stream().to_string().replace(' ', "")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pascal_case() {
        assert_eq!(pascal("dividing"), "Dividing");
        assert_eq!(pascal("busy_left"), "BusyLeft");
        assert_eq!(pascal("a"), "A");
        assert_eq!(pascal("myState"), "MyState");
        assert_eq!(pascal("s1"), "S1");
    }
}
