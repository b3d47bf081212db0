//! Per-service options in `services: { … }`: `pay: PayV1 { retry: { attempts: 5, backoff: 200 .. 10_000,
//! jitter: true, on: ["Timeout"] } }`. Parsed leniently here (`parse`), judged by `check`, which
//! reports every mistake on its token; `expand` turns a checked policy into the
//! `orchestrator::machine::RetryPolicy` of the service's `ServiceInfo`.

use std::collections::HashSet;

use proc_macro2::TokenStream;
use proc_macro2::TokenTree;
use quote::quote;
use syn::ext::IdentExt;
use syn::parse::ParseStream;
use syn::{Expr, ExprLit, Ident, Lit, Token, braced};

use crate::ctxt::Ctxt;

/// `{ key: { k: expr, ... }, ... }` after a service's contract version.
pub(crate) struct ServiceOptionsAst {
    pub entries: Vec<(Ident, Vec<(Ident, Expr)>)>,
}

/// A checked retry policy.
pub(crate) struct RetrySpec {
    attempts: u32,
    first: u64,
    cap: u64,
    jitter: bool,
    on: Vec<String>,
}

const OPTION_KEYS: &[&str] = &["retry"];
const RETRY_KEYS: &[&str] = &["attempts", "backoff", "jitter", "on"];

/// Parses the options block, if one follows. A mistake inside it is recorded in `errors` and
/// the rest of the block skipped: the service itself stays declared.
pub(crate) fn parse(
    input: ParseStream<'_>,
    errors: &mut Vec<syn::Error>,
) -> syn::Result<Option<ServiceOptionsAst>> {
    if !input.peek(syn::token::Brace) {
        return Ok(None);
    }
    let content;
    braced!(content in input);
    let mut entries = Vec::new();
    if let Err(e) = parse_entries(&content, &mut entries) {
        errors.push(e);
        while !content.is_empty() && content.parse::<TokenTree>().is_ok() {}
    }
    Ok(Some(ServiceOptionsAst { entries }))
}

fn parse_entries(
    content: ParseStream<'_>,
    entries: &mut Vec<(Ident, Vec<(Ident, Expr)>)>,
) -> syn::Result<()> {
    while !content.is_empty() {
        let key = content.call(Ident::parse_any)?;
        content.parse::<Token![:]>()?;
        let inner;
        braced!(inner in content);
        let mut fields = Vec::new();
        let parsed = (|| {
            while !inner.is_empty() {
                let field = inner.call(Ident::parse_any)?;
                inner.parse::<Token![:]>()?;
                fields.push((field, inner.parse::<Expr>()?));
                if inner.is_empty() {
                    break;
                }
                inner.parse::<Token![,]>()?;
            }
            Ok::<(), syn::Error>(())
        })();
        if let Err(e) = parsed {
            while !inner.is_empty() && inner.parse::<TokenTree>().is_ok() {}
            return Err(e);
        }
        entries.push((key, fields));
        if content.is_empty() {
            break;
        }
        content.parse::<Token![,]>()?;
    }
    Ok(())
}

fn int(cx: &mut Ctxt, expr: &Expr, what: &str) -> Option<u64> {
    if let Expr::Lit(ExprLit { lit: Lit::Int(lit), .. }) = expr
        && let Ok(value) = lit.base10_parse::<u64>()
    {
        return Some(value);
    }
    cx.error_spanned_by(expr, format!("{what} is a whole number literal"));
    None
}

/// Checks the options of service `service`; the retry policy when it is valid.
pub(crate) fn check(cx: &mut Ctxt, service: &Ident, options: &ServiceOptionsAst) -> Option<RetrySpec> {
    let mut spec = None;
    let mut seen = HashSet::new();
    for (key, fields) in &options.entries {
        let text = key.unraw().to_string();
        if !OPTION_KEYS.contains(&text.as_str()) {
            cx.error_spanned_by(
                key,
                format!(
                    "unknown option `{text}` of service `{service}`; expected `retry: {{ attempts: 3, ... }}`"
                ),
            );
            continue;
        }
        if !seen.insert(text.clone()) {
            cx.error_spanned_by(key, format!("duplicate option `{text}`"));
            continue;
        }
        spec = check_retry(cx, key, fields);
    }
    spec
}

fn check_retry(cx: &mut Ctxt, retry: &Ident, fields: &[(Ident, Expr)]) -> Option<RetrySpec> {
    let mut ok = true;
    let mut seen = HashSet::new();
    let (mut attempts, mut first, mut cap, mut jitter, mut on) = (None, 1_000, 60_000, false, Vec::new());
    for (field, expr) in fields {
        let text = field.unraw().to_string();
        if !RETRY_KEYS.contains(&text.as_str()) {
            cx.error_spanned_by(
                field,
                format!("unknown key `{text}` in `retry`; expected one of: {}", RETRY_KEYS.join(", ")),
            );
            ok = false;
            continue;
        }
        if !seen.insert(text.clone()) {
            cx.error_spanned_by(field, format!("duplicate key `{text}` in `retry`"));
            ok = false;
            continue;
        }
        match text.as_str() {
            "attempts" => match int(cx, expr, "`attempts`") {
                Some(0) => {
                    cx.error_spanned_by(expr, "`attempts` counts the first try: at least 1");
                    ok = false;
                }
                Some(n) => match u32::try_from(n) {
                    Ok(n) => attempts = Some(n),
                    Err(_) => {
                        cx.error_spanned_by(expr, "`attempts` is at most 4294967295");
                        ok = false;
                    }
                },
                None => ok = false,
            },
            "backoff" => {
                let Expr::Range(range) = expr else {
                    cx.error_spanned_by(expr, "`backoff` is `first .. cap` in ms, as in `200 .. 10_000`");
                    ok = false;
                    continue;
                };
                let (Some(start), Some(end)) = (&range.start, &range.end) else {
                    cx.error_spanned_by(expr, "`backoff` is `first .. cap` in ms, as in `200 .. 10_000`");
                    ok = false;
                    continue;
                };
                match (int(cx, start, "the first delay"), int(cx, end, "the cap")) {
                    (Some(s), Some(e)) if e < s => {
                        cx.error_spanned_by(
                            end,
                            format!("the cap ({e} ms) is below the first delay ({s} ms)"),
                        );
                        ok = false;
                    }
                    (Some(s), Some(e)) => (first, cap) = (s, e),
                    _ => ok = false,
                }
            }
            "jitter" => match expr {
                Expr::Lit(ExprLit { lit: Lit::Bool(b), .. }) => jitter = b.value,
                _ => {
                    cx.error_spanned_by(expr, "`jitter` is `true` or `false`");
                    ok = false;
                }
            },
            _ => {
                let Expr::Array(array) = expr else {
                    cx.error_spanned_by(expr, "`on` is a list of error names, as in `[\"Timeout\"]`");
                    ok = false;
                    continue;
                };
                for element in &array.elems {
                    match element {
                        Expr::Lit(ExprLit { lit: Lit::Str(s), .. }) if !s.value().is_empty() => {
                            if on.contains(&s.value()) {
                                cx.error_spanned_by(s, format!("duplicate error name `{}`", s.value()));
                                ok = false;
                            } else {
                                on.push(s.value());
                            }
                        }
                        other => {
                            cx.error_spanned_by(other, "an error name is a non-empty string literal");
                            ok = false;
                        }
                    }
                }
                if array.elems.is_empty() {
                    cx.error_spanned_by(
                        expr,
                        "`on` lists at least one error name (leave it out to retry every error)",
                    );
                    ok = false;
                }
            }
        }
    }
    if attempts.is_none() && !seen.contains("attempts") {
        cx.error_spanned_by(retry, "`retry` needs `attempts: <n>` (the tries in all, the first included)");
        ok = false;
    }
    let attempts = attempts?;
    ok.then_some(RetrySpec { attempts, first, cap, jitter, on })
}

/// `.with_retry(RetryPolicy::new(..)...)` for `ServiceInfo::of`, or nothing.
pub(crate) fn expand(spec: Option<&RetrySpec>) -> TokenStream {
    let Some(RetrySpec { attempts, first, cap, jitter, on }) = spec else { return TokenStream::new() };
    quote! {
        .with_retry(
            ::orchestrator::machine::RetryPolicy::new(#attempts)
                .backoff(
                    ::std::time::Duration::from_millis(#first),
                    ::std::time::Duration::from_millis(#cap),
                )
                .jitter(#jitter)
                .on::<&'static str>([#(#on),*])
        )
    }
}

#[cfg(test)]
mod tests {
    /// The messages of the `compile_error!`s of a machine whose `svc` service has `options`.
    fn errors(options: &str) -> Vec<String> {
        super::super::tests::errors(&format!(
            "pub machine M {{ contract: C, services: {{ svc: S {options} }}, output: f, states: {{ a: {{ on: {{ svc::error => b }} }}, b: {{ type: final }} }} }}"
        ))
    }

    #[test]
    fn a_valid_policy_has_no_error() {
        assert!(
            errors("{ retry: { attempts: 3, backoff: 10 .. 20, jitter: true, on: [\"A\"] } }").is_empty()
        );
        assert!(errors("{ retry: { attempts: 1 } }").is_empty());
    }

    #[test]
    fn every_mistake_is_reported_in_one_compile() {
        let errs = errors(
            "{ retry: { attempts: 0, backoff: 20 .. 10, tries: 1, jitter: 1, on: [\"A\", \"A\"], on: [] }, other: {} }",
        );
        let expected = [
            "`attempts` counts the first try: at least 1",
            "the cap (10 ms) is below the first delay (20 ms)",
            "unknown key `tries` in `retry`",
            "`jitter` is `true` or `false`",
            "duplicate error name `A`",
            "duplicate key `on` in `retry`",
            "unknown option `other` of service `svc`",
        ];
        for e in expected {
            assert!(errs.iter().any(|m| m.starts_with(e)), "missing {e:?} in {errs:?}");
        }
        assert_eq!(errs.len(), expected.len(), "{errs:?}");
        assert_eq!(
            errors("{ retry: { backoff: 1 .. 2 } }"),
            ["`retry` needs `attempts: <n>` (the tries in all, the first included)"]
        );
        assert_eq!(errors("{ retry: { attempts 3 } }").len(), 1, "a syntax error inside is one error");
    }
}
