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

/// Levenshtein distance between two short names.
pub(crate) fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substitution = diagonal + usize::from(ca != *cb);
            diagonal = row[j + 1];
            row[j + 1] = substitution.min(row[j] + 1).min(diagonal + 1);
        }
    }
    row[b.len()]
}

/// The candidate closest to `name`, if close enough to be a likely misspelling.
pub(crate) fn closest<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let limit = (name.chars().count() / 3).clamp(1, 3);
    candidates
        .into_iter()
        .map(|c| (edit_distance(name, c), c))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
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

    #[test]
    fn suggestions() {
        assert_eq!(closest("dividng", ["adding", "dividing", "done"]), Some("dividing"));
        assert_eq!(closest("zzz", ["adding", "dividing"]), None);
        assert_eq!(closest("onn", ["on", "entry"]), Some("on"));
    }
}
