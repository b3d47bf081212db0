//! Checks a parsed declaration against Arvo's contract rules and lowers it to a [`Model`].
//!
//! Every problem is recorded in the [`Ctxt`], spanned on the offending token; checking goes on
//! after a problem so that all of them are reported at once.

use std::collections::{BTreeMap, HashSet};

use orchestrator_rules::{names, uri, version};
use quote::ToTokens;
use syn::{Attribute, Ident, LitStr, Type, Visibility};

use super::Flavor;
use super::ast::{ContractDecl, FieldValue, VersionDecl, VersionValue};
use crate::ctxt::Ctxt;
use crate::shared::edit_distance;

/// A checked contract, ready to generate.
pub(crate) struct Model {
    pub flavor: Flavor,
    pub attrs: Vec<Attribute>,
    pub vis: Visibility,
    pub name: Ident,
    pub uri: String,
    /// The accepted event type (`com.x.y`, `arvo.orc.x`, …).
    pub accepts_type: String,
    /// The `type` of a simple contract or the `name` of an orchestrator contract.
    pub root_type: String,
    pub domain: Option<String>,
    pub description: Option<String>,
    pub metadata: Vec<(String, syn::Lit)>,
    pub versions: Vec<VersionModel>,
}

/// A checked version.
pub(crate) struct VersionModel {
    pub attrs: Vec<Attribute>,
    pub ident: Ident,
    pub version: String,
    /// The accepted payload (the init payload for orchestrators); `None` only after an error.
    pub accepts: Option<Type>,
    /// Emitted event types and payloads (the completion for orchestrators).
    pub emits: Vec<(String, Type)>,
}

const ORCHESTRATOR_PREFIX: &str = "arvo.orc";

pub(crate) fn check(cx: &mut Ctxt, decl: ContractDecl, flavor: Flavor) -> Model {
    let type_key = if flavor == Flavor::Orchestrator { "name" } else { "type" };
    let allowed = ["uri", type_key, "domain", "description", "metadata", "versions"];
    let mut seen: BTreeMap<String, Ident> = BTreeMap::new();
    let mut strings: BTreeMap<&'static str, LitStr> = BTreeMap::new();
    let mut metadata = Vec::new();
    let mut version_decls = Vec::new();
    let mut versions_key: Option<Ident> = None;
    let mut unknown = Vec::new();

    for field in decl.fields {
        let key = field.key.to_string();
        let Some(&known) = allowed.iter().find(|k| **k == key) else {
            // Reported after the loop, when it is known which keys are missing.
            unknown.push(field.key);
            continue;
        };
        if seen.insert(key.clone(), field.key.clone()).is_some() {
            cx.error_spanned_by(&field.key, format!("duplicate key `{key}`"));
            continue;
        }
        match (known, field.value) {
            ("versions", FieldValue::Versions(v)) => {
                versions_key = Some(field.key.clone());
                version_decls = v;
            }
            ("metadata", FieldValue::Metadata(entries)) => {
                for (k, v) in entries {
                    match &v {
                        syn::Lit::Str(_) | syn::Lit::Int(_) | syn::Lit::Float(_) | syn::Lit::Bool(_) => {
                            metadata.push((k.value(), v));
                        }
                        other => cx.error_spanned_by(
                            other,
                            "metadata values must be string, number or bool literals",
                        ),
                    }
                }
            }
            (_, FieldValue::Str(s)) if !matches!(known, "versions" | "metadata") => {
                strings.insert(known, s);
            }
            (_, _) => cx.error_spanned_by(&field.key, format!("`{key}` has the wrong form of value")),
        }
    }

    // An unknown key that looks like a missing key is reported once, as that key's misspelling.
    let missing: Vec<&str> = allowed.iter().copied().filter(|k| !seen.contains_key(*k)).collect();
    let expected = format!("expected one of: {}", allowed.join(", "));
    let suggested = report_unknown_keys(cx, flavor, &unknown, &missing, flavor.macro_name(), &expected);

    let uri = match strings.get("uri") {
        Some(lit) => {
            let value = lit.value();
            if value.is_empty() || !uri::is_valid_uri(&value) {
                cx.error_spanned_by(
                    lit,
                    format!("contract uri `{value}` must be a non-empty, properly encoded URI"),
                );
            }
            value
        }
        None => {
            if !suggested.contains("uri") {
                cx.error_spanned_by(&decl.name, "missing `uri: \"...\"`");
            }
            String::new()
        }
    };

    let (accepts_type, root_type) = match strings.get(type_key) {
        Some(lit) => check_type(cx, flavor, lit),
        None => {
            if !suggested.contains(type_key) {
                cx.error_spanned_by(&decl.name, format!("missing `{type_key}: \"...\"`"));
            }
            (String::from("invalid.contract.type"), String::new())
        }
    };

    let domain = strings.get("domain").map(|lit| {
        let value = lit.value();
        if !names::is_domain(&value) {
            cx.error_spanned_by(lit, format!("domain `{value}` {}", names::DOMAIN_RULE));
        }
        value
    });

    let description = strings.get("description").map(LitStr::value).or_else(|| doc_text(&decl.attrs));

    if versions_key.is_none() {
        if !suggested.contains("versions") {
            cx.error_spanned_by(&decl.name, "missing `versions: { V1 = \"1.0.0\" { ... } }`");
        }
    } else if version_decls.is_empty() {
        cx.error_spanned_by(
            versions_key.as_ref(),
            format!("An ArvoContract (uri={uri}) must have at least one version"),
        );
    }

    let mut versions = Vec::new();
    let mut seen_versions = HashSet::new();
    let mut seen_idents = HashSet::new();
    for v in version_decls {
        // A clashing type name is reported here and the version is left out of the model, so the
        // fallback expansion does not add rustc's own "defined multiple times" errors.
        let clash = if v.ident == decl.name {
            cx.error_spanned_by(
                &v.ident,
                format!(
                    "version type `{}` has the name of the contract type; name it e.g. `{}V1`",
                    v.ident, v.ident
                ),
            );
            true
        } else if !seen_idents.insert(v.ident.to_string()) {
            cx.error_spanned_by(&v.ident, format!("duplicate version type `{}`", v.ident));
            true
        } else {
            false
        };
        let version = check_version(cx, flavor, &accepts_type, &root_type, &mut seen_versions, v);
        if !clash {
            versions.push(version);
        }
    }

    Model {
        flavor,
        attrs: decl.attrs,
        vis: decl.vis,
        name: decl.name,
        uri,
        accepts_type,
        root_type,
        domain,
        description,
        metadata,
        versions,
    }
}

/// Returns (accepted type, root type) for the `type` / `name` literal.
fn check_type(cx: &mut Ctxt, flavor: Flavor, lit: &LitStr) -> (String, String) {
    let value = lit.value();
    match flavor {
        Flavor::Plain => {
            if !names::is_reverse_dns(&value) {
                cx.error_spanned_by(lit, format!("contract type `{value}` {}", names::REVERSE_DNS_RULE));
            } else if value.starts_with(ORCHESTRATOR_PREFIX) {
                cx.error_spanned_by(
                    lit,
                    format!("contract type `{value}` uses the reserved prefix 'arvo.orc'; declare it with orchestrator_contract!"),
                );
            }
            (value.clone(), value)
        }
        Flavor::Simple => {
            let accepts = format!("com.{value}");
            if !names::is_reverse_dns(&accepts) || !names::is_reverse_dns(&format!("evt.{value}.success")) {
                cx.error_spanned_by(
                    lit,
                    format!("simple contract type `{value}` must be lowercase alphanumeric segments separated by dots (it becomes `com.{value}`)"),
                );
            }
            (accepts, value)
        }
        Flavor::Orchestrator => {
            let accepts = format!("{ORCHESTRATOR_PREFIX}.{value}");
            if !names::is_orchestrator_name(&value) || !names::is_reverse_dns(&accepts) {
                cx.error_spanned_by(
                    lit,
                    format!("Invalid 'name' = '{value}'. The 'name' must only contain alphanumeric characters. e.g. test.orchestrator"),
                );
            }
            (accepts, value)
        }
    }
}

fn check_version(
    cx: &mut Ctxt,
    flavor: Flavor,
    accepts_type: &str,
    root_type: &str,
    seen_versions: &mut HashSet<(u64, u64, u64)>,
    decl: VersionDecl,
) -> VersionModel {
    let text = decl.version.value();
    match version::parse(&text) {
        None => cx.error_spanned_by(&decl.version, format!("version `{text}` {}", version::RULE)),
        Some((0, 0, 0)) => cx
            .error_spanned_by(&decl.version, "the version cannot be '0.0.0'. It is a reserved version type."),
        Some(parsed) => {
            if !seen_versions.insert(parsed) {
                cx.error_spanned_by(&decl.version, format!("version {text} is declared twice"));
            }
        }
    }

    let (accepts_key, emits_key) = match flavor {
        Flavor::Plain | Flavor::Simple => ("accepts", "emits"),
        Flavor::Orchestrator => ("init", "complete"),
    };
    let mut accepts = None;
    let mut emits = Vec::new();
    let mut seen_keys = HashSet::new();
    let mut emits_given = false;
    let mut unknown = Vec::new();
    for field in decl.fields {
        let key = field.key.to_string();
        if !seen_keys.insert(key.clone()) {
            cx.error_spanned_by(&field.key, format!("duplicate key `{key}`"));
            continue;
        }
        match (key.as_str(), field.value) {
            (k, VersionValue::Type(ty)) if k == accepts_key => accepts = Some(ty),
            (k, VersionValue::Type(ty)) if k == emits_key && flavor != Flavor::Plain => {
                emits_given = true;
                let event_type = match flavor {
                    Flavor::Simple => format!("evt.{root_type}.success"),
                    _ => format!("{accepts_type}.done"),
                };
                emits.push((event_type, ty));
            }
            (k, VersionValue::Emits(list)) if k == emits_key && flavor == Flavor::Plain => {
                emits_given = true;
                let mut seen_types = HashSet::new();
                let mut seen_payloads = HashSet::new();
                for (lit, ty) in list {
                    let t = lit.value();
                    if !names::is_reverse_dns(&t) {
                        cx.error_spanned_by(&lit, format!("emitted event type `{t}` {}", names::REVERSE_DNS_RULE));
                    } else if t.starts_with(ORCHESTRATOR_PREFIX) {
                        cx.error_spanned_by(&lit, format!("emitted event type `{t}` uses the reserved prefix 'arvo.orc'"));
                    } else if t == accepts_type || !seen_types.insert(t.clone()) {
                        cx.error_spanned_by(&lit, format!("event type `{t}` is declared twice"));
                    }
                    let payload = ty.to_token_stream().to_string();
                    if !seen_payloads.insert(payload.clone()) {
                        cx.error_spanned_by(
                            &ty,
                            format!("payload type `{payload}` is emitted twice by this version; each emitted event type needs its own payload type (wrap it in a newtype)"),
                        );
                    }
                    emits.push((t, ty));
                }
            }
            (k, _) if k == accepts_key => cx.error_spanned_by(&field.key, format!("`{k}` takes a payload type, e.g. `{k}: MyPayload`")),
            (k, _) if k == emits_key => cx.error_spanned_by(
                &field.key,
                if flavor == Flavor::Plain {
                    "`emits` takes a map of event types to payload types, e.g. `emits: { \"evt.x.y\" => Payload }`".to_owned()
                } else {
                    format!("`{k}` takes a payload type, e.g. `{k}: MyPayload`")
                },
            ),
            // Reported below, when it is known which keys are missing.
            (_, _) => unknown.push(field.key),
        }
    }
    let missing: Vec<&str> =
        [accepts_key, emits_key].into_iter().filter(|k| !seen_keys.contains(*k)).collect();
    let place = format!("a version of {}", flavor.macro_name());
    let expected = format!("expected `{accepts_key}` and `{emits_key}`");
    let suggested = report_unknown_keys(cx, flavor, &unknown, &missing, &place, &expected);
    if accepts.is_none() && !suggested.contains(accepts_key) {
        cx.error_spanned_by(
            &decl.ident,
            format!("version `{}` is missing `{accepts_key}: PayloadType`", decl.ident),
        );
    }
    if !emits_given && flavor != Flavor::Plain && !suggested.contains(emits_key) {
        cx.error_spanned_by(
            &decl.ident,
            format!("version `{}` is missing `{emits_key}: PayloadType`", decl.ident),
        );
    }
    VersionModel { attrs: decl.attrs, ident: decl.ident, version: text, accepts, emits }
}

/// Reports each unknown key (found in `place`). One that probably stands for a missing key (a
/// misspelling, or another contract macro's name for it, such as `type` for `name`) is reported
/// as "did you mean", and that key is returned, so that the caller does not report it missing too.
fn report_unknown_keys<'k>(
    cx: &mut Ctxt,
    flavor: Flavor,
    unknown: &[Ident],
    missing: &[&'k str],
    place: &str,
    expected: &str,
) -> HashSet<&'k str> {
    let mut suggested = HashSet::new();
    for ident in unknown {
        let key = ident.to_string();
        let guess = missing
            .iter()
            .copied()
            .filter(|m| !suggested.contains(m))
            .find(|m| other_macro_name(flavor, &key) == Some(*m) || edit_distance(&key, m) <= 2);
        match guess {
            Some(m) => {
                suggested.insert(m);
                cx.error_spanned_by(ident, format!("unknown key `{key}` in {place}; did you mean `{m}`?"));
            }
            None => cx.error_spanned_by(ident, format!("unknown key `{key}` in {place}; {expected}")),
        }
    }
    suggested
}

/// What this macro calls a key another contract macro names `key`.
fn other_macro_name(flavor: Flavor, key: &str) -> Option<&'static str> {
    match (flavor, key) {
        (Flavor::Orchestrator, "type") => Some("name"),
        (Flavor::Orchestrator, "accepts") => Some("init"),
        (Flavor::Orchestrator, "emits") => Some("complete"),
        (Flavor::Plain | Flavor::Simple, "name") => Some("type"),
        (Flavor::Plain | Flavor::Simple, "init") => Some("accepts"),
        (Flavor::Plain | Flavor::Simple, "complete") => Some("emits"),
        _ => None,
    }
}

/// The text of `///` doc comments, lines joined with newlines.
fn doc_text(attrs: &[Attribute]) -> Option<String> {
    let lines: Vec<String> = attrs
        .iter()
        .filter(|a| a.path().is_ident("doc"))
        .filter_map(|a| match &a.meta {
            syn::Meta::NameValue(nv) => match &nv.value {
                syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(s), .. }) => {
                    Some(s.value().trim().to_owned())
                }
                _ => None,
            },
            _ => None,
        })
        .collect();
    let text = lines.join("\n").trim().to_owned();
    (!text.is_empty()).then_some(text)
}
