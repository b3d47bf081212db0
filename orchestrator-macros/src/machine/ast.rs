//! The syntax of a machine declaration, parsed without judging it (see `valid`).
//!
//! ```text
//! #[attrs] VIS machine NAME { KEY: VALUE, ... }
//! ```
//!
//! The machine body and every state body are lists of `key: value` entries; the key decides how
//! the value is parsed. A value that does not parse is recorded as an error and skipped up to the
//! next `,`, so one syntax mistake does not hide the others.

use proc_macro2::{TokenStream, TokenTree};
use quote::ToTokens;
use syn::ext::IdentExt;
use syn::parse::discouraged::Speculative;
use syn::parse::{Parse, ParseStream};
use syn::{
    Attribute, Expr, Ident, LitBool, LitInt, LitStr, Token, Type, Visibility, braced, bracketed,
    parenthesized,
};

/// A whole declaration.
pub(crate) struct MachineDecl {
    pub attrs: Vec<Attribute>,
    pub vis: Visibility,
    pub name: Ident,
    pub body: Body,
    /// Syntax errors recovered from, in source order.
    pub errors: Vec<syn::Error>,
}

/// The `{ key: value, ... }` of the machine or of a state.
pub(crate) struct Body {
    pub entries: Vec<Entry>,
}

/// One `key: value`.
pub(crate) struct Entry {
    pub key: Ident,
    /// `None` for an unknown key or a value that did not parse (already reported).
    pub value: Option<Value>,
}

/// The value forms.
pub(crate) enum Value {
    /// `"text"` (`version`).
    Str(LitStr),
    /// A type (`contract`, `context`).
    Type(Box<Type>),
    /// An expression (`init`, `output`).
    Expr(Box<Expr>),
    /// `{ name: ContractVersion, name: ContractVersion { retry: { ... } }, ... }` (`services`,
    /// `signals`, `notifications`; options only for services).
    Services(Vec<(Ident, Type, Option<super::retry::ServiceOptionsAst>)>),
    /// A word (`type: parallel`, `history: deep`).
    Word(Ident),
    /// One path or `[path, ...]` (`initial`, `target`).
    Paths(PathList),
    /// `{ key: { ... }, ... }`.
    States(Vec<(Ident, Body)>),
    /// One action or `[action, ...]` (`entry`, `exit`, `actions`).
    Actions(Vec<ActionAst>),
    /// `{ trigger => transitions, ... }`.
    On(Vec<(TriggerAst, Vec<TransitionAst>)>),
    /// One transition or `[transition, ...]` (`always`, `on_done`).
    Transitions(Vec<TransitionAst>),
    /// `{ delay => transitions, ... }`.
    After(Vec<(DelayAst, Vec<TransitionAst>)>),
}

/// The delay of an `after` transition.
pub(crate) enum DelayAst {
    /// A whole number of milliseconds.
    Ms(LitInt),
    /// A delay computed when the state is entered: a closure `|ctx| -> Duration`, a function
    /// `fn(&Context) -> Duration`, or a `Duration` / `u64` ms expression, optionally named
    /// (`payment_timeout = |ctx| ...`).
    Computed(CustomAst),
}

/// `a.b.c`: an absolute state path.
pub(crate) struct PathAst {
    pub segments: Vec<Ident>,
}

impl PathAst {
    /// `a.b.c` as text (raw identifiers unescaped).
    pub(crate) fn text(&self) -> String {
        self.segments.iter().map(|s| s.unraw().to_string()).collect::<Vec<_>>().join(".")
    }
}

impl ToTokens for PathAst {
    fn to_tokens(&self, tokens: &mut TokenStream) {
        for (i, s) in self.segments.iter().enumerate() {
            if i > 0 {
                <Token![.]>::default().to_tokens(tokens);
            }
            s.to_tokens(tokens);
        }
    }
}

/// One path, or `[path, ...]`.
pub(crate) struct PathList {
    pub paths: Vec<PathAst>,
    pub bracketed: bool,
    /// The whole value, for errors about it.
    pub tokens: TokenStream,
}

/// What a transition in `on` reacts to.
pub(crate) enum TriggerAst {
    /// `"name"`, `"prefix.*"`, `"*"`: events by name.
    Named(LitStr),
    /// `service::Payload` or `service::<Type>`: an event the service emits.
    Service { service: Ident, payload: Box<Type>, tokens: TokenStream },
    /// `service::error`: the service's system error.
    ServiceError { service: Ident, tokens: TokenStream },
}

impl TriggerAst {
    pub(crate) fn tokens(&self) -> TokenStream {
        match self {
            Self::Named(lit) => lit.to_token_stream(),
            Self::Service { tokens, .. } | Self::ServiceError { tokens, .. } => tokens.clone(),
        }
    }
}

/// A transition: a bare target path, or `{ target, guard, actions, reenter }`.
pub(crate) enum TransitionAst {
    Target(PathList),
    Object { entries: Vec<TransitionEntry> },
}

/// One `key: value` of a transition object.
pub(crate) struct TransitionEntry {
    pub key: Ident,
    pub value: Option<TransitionValue>,
}

/// The value forms inside a transition object.
pub(crate) enum TransitionValue {
    Targets(PathList),
    Guard(GuardAst),
    Actions(Vec<ActionAst>),
    Bool(LitBool),
}

/// A guard.
pub(crate) enum GuardAst {
    /// `in(path)`: the state is active.
    In { path: PathAst },
    /// `not_in(path)`: the state is not active.
    NotIn { path: PathAst },
    /// A function or closure `fn(&Context, &Event) -> bool`, optionally named
    /// (`name = |ctx, event| ...`).
    Custom(CustomAst),
}

/// An action.
pub(crate) enum ActionAst {
    /// `raise("event")`.
    Raise { event: LitStr },
    /// `send("event")`, `send("event", delay = 1000, id = "t1")`.
    Send { event: LitStr, delay: Option<LitInt>, id: Option<LitStr> },
    /// `cancel("id")`.
    Cancel { id: LitStr },
    /// A function or closure `fn(&mut Context, &Event, &mut Outbox<'_>)`, optionally named
    /// (`name = |ctx, event, out| ...`).
    Custom(CustomAst),
}

/// A custom guard or action: `expr` or `name = expr`.
pub(crate) struct CustomAst {
    /// The name given with `name = ...` (shown by the chart exporters).
    pub name: Option<Ident>,
    pub expr: Box<Expr>,
    /// A name that is not an identifier: reported when the machine is checked (not as a syntax
    /// error, which would skip to the next `,`, inside the closure).
    pub bad_name: Option<syn::Error>,
}

/// Parses a custom guard or action (`what`: `"guard"` / `"action"`): an expression, or
/// `name = expr`, which names it for the chart exporters.
fn parse_custom(input: ParseStream<'_>, what: &str) -> syn::Result<CustomAst> {
    match input.parse::<Expr>()? {
        Expr::Assign(assign) => {
            let name = match &*assign.left {
                Expr::Path(p) if p.qself.is_none() && p.attrs.is_empty() => p.path.get_ident().cloned(),
                _ => None,
            };
            let Some(name) = name else {
                let error = syn::Error::new_spanned(
                    &assign.left,
                    format!(
                        "the name of {} {what} is an identifier, as in `{}`",
                        if what == "action" { "an" } else { "a" },
                        match what {
                            "guard" => "in_stock = |ctx, _| ctx.stock > 0",
                            "delay" => "payment_timeout = |ctx| Duration::from_millis(ctx.timeout_ms)",
                            _ => "reserve = |ctx, _, out| ...",
                        }
                    ),
                );
                return Ok(CustomAst { name: None, expr: assign.right, bad_name: Some(error) });
            };
            if let Expr::Call(call) = &*assign.right
                && let Expr::Path(f) = &*call.func
                && f.path.get_ident().is_some_and(|i| BUILT_INS.contains(&i.to_string().as_str()))
            {
                return Err(syn::Error::new_spanned(
                    &name,
                    format!(
                        "built-in guards and actions (`{}`) are shown as written and cannot be named",
                        f.path.to_token_stream()
                    ),
                ));
            }
            Ok(CustomAst { name: Some(name), expr: assign.right, bad_name: None })
        }
        expr => Ok(CustomAst { name: None, expr: Box::new(expr), bad_name: None }),
    }
}

/// The built-in guards and actions.
const BUILT_INS: &[&str] = &["raise", "send", "cancel", "not_in"];

impl Parse for MachineDecl {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let attrs = input.call(Attribute::parse_outer)?;
        let vis: Visibility = input.parse()?;
        let kw: Ident = input.call(Ident::parse_any)?;
        if kw != "machine" {
            return Err(syn::Error::new(kw.span(), "expected `machine`, as in `pub machine Name { ... }`"));
        }
        let name: Ident = input.parse()?;
        let content;
        braced!(content in input);
        let mut errors = Vec::new();
        let body = parse_body(&content, &mut errors);
        if !input.is_empty() {
            errors.push(input.error("unexpected tokens after the machine declaration"));
        }
        Ok(Self { attrs, vis, name, body, errors })
    }
}

/// Skips to the next top-level `,` (not consumed).
fn skip_to_comma(input: ParseStream<'_>) {
    while !input.is_empty() && !input.peek(Token![,]) {
        if input.parse::<TokenTree>().is_err() {
            break;
        }
    }
}

/// Parses `item, item, ...` with recovery: an item that does not parse is reported and skipped.
fn parse_list<T>(
    input: ParseStream<'_>,
    errors: &mut Vec<syn::Error>,
    mut item: impl FnMut(ParseStream<'_>, &mut Vec<syn::Error>) -> syn::Result<T>,
) -> Vec<T> {
    let mut out = Vec::new();
    while !input.is_empty() {
        let fork = input.fork();
        match item(&fork, errors) {
            Ok(value) if fork.is_empty() || fork.peek(Token![,]) => {
                input.advance_to(&fork);
                out.push(value);
            }
            Ok(_) => {
                input.advance_to(&fork);
                errors.push(input.error("expected `,`"));
                skip_to_comma(input);
            }
            Err(e) => {
                errors.push(e);
                skip_to_comma(input);
            }
        }
        if input.is_empty() {
            break;
        }
        if input.parse::<Token![,]>().is_err() {
            break;
        }
    }
    out
}

/// `key: value` entries; `value` parses the value of a known key (`Ok(None)` for an unknown one).
fn parse_entries<T>(
    input: ParseStream<'_>,
    errors: &mut Vec<syn::Error>,
    mut value: impl FnMut(&str, ParseStream<'_>, &mut Vec<syn::Error>) -> syn::Result<Option<T>>,
) -> Vec<(Ident, Option<T>)> {
    let mut out = Vec::new();
    while !input.is_empty() {
        let key = match input.call(Ident::parse_any) {
            Ok(key) => key,
            Err(e) => {
                errors.push(e);
                skip_to_comma(input);
                if input.parse::<Token![,]>().is_err() {
                    break;
                }
                continue;
            }
        };
        if let Err(e) = input.parse::<Token![:]>() {
            errors.push(e);
            skip_to_comma(input);
            out.push((key, None));
            if input.parse::<Token![,]>().is_err() {
                break;
            }
            continue;
        }
        let fork = input.fork();
        let key_text = key.unraw().to_string();
        match value(&key_text, &fork, errors) {
            Ok(v) if fork.is_empty() || fork.peek(Token![,]) => {
                input.advance_to(&fork);
                out.push((key, v));
            }
            Ok(_) => {
                input.advance_to(&fork);
                errors.push(input.error("expected `,` after the value"));
                skip_to_comma(input);
                out.push((key, None));
            }
            Err(e) => {
                errors.push(e);
                skip_to_comma(input);
                out.push((key, None));
            }
        }
        if input.is_empty() {
            break;
        }
        if let Err(e) = input.parse::<Token![,]>() {
            errors.push(e);
            break;
        }
    }
    out
}

fn skip_value(input: ParseStream<'_>) {
    skip_to_comma(input);
}

pub(crate) fn parse_body(input: ParseStream<'_>, errors: &mut Vec<syn::Error>) -> Body {
    let entries = parse_entries(input, errors, |key, input, errors| {
        Ok(Some(match key {
            "version" => Value::Str(input.parse()?),
            "contract" | "context" => Value::Type(Box::new(input.parse()?)),
            "init" | "output" => Value::Expr(Box::new(input.parse()?)),
            "services" | "signals" | "notifications" => {
                let content;
                braced!(content in input);
                Value::Services(parse_list(&content, errors, |input, errors| {
                    let name: Ident = input.parse()?;
                    input.parse::<Token![:]>()?;
                    let ty: Type = input.parse()?;
                    let options = super::retry::parse(input, errors)?;
                    Ok((name, ty, options))
                }))
            }
            "type" | "history" => Value::Word(input.call(Ident::parse_any)?),
            "initial" | "target" => Value::Paths(parse_paths(input)?),
            "states" => {
                let content;
                braced!(content in input);
                Value::States(parse_list(&content, errors, |input, errors| {
                    let key: Ident = input.parse()?;
                    input.parse::<Token![:]>()?;
                    let body;
                    braced!(body in input);
                    Ok((key, parse_body(&body, errors)))
                }))
            }
            "entry" | "exit" | "actions" => Value::Actions(parse_actions(input)?),
            "on" => {
                let content;
                braced!(content in input);
                Value::On(parse_list(&content, errors, |input, errors| {
                    let trigger = parse_trigger(input)?;
                    input.parse::<Token![=>]>()?;
                    Ok((trigger, parse_transitions(input, errors)?))
                }))
            }
            "always" | "on_done" => Value::Transitions(parse_transitions(input, errors)?),
            "after" => {
                let content;
                braced!(content in input);
                Value::After(parse_list(&content, errors, |input, errors| {
                    let ms = if input.peek(LitInt) && input.peek2(Token![=>]) {
                        DelayAst::Ms(input.parse()?)
                    } else {
                        DelayAst::Computed(parse_custom(input, "delay")?)
                    };
                    input.parse::<Token![=>]>()?;
                    Ok((ms, parse_transitions(input, errors)?))
                }))
            }
            _ => {
                skip_value(input);
                return Ok(None);
            }
        }))
    });
    Body { entries: entries.into_iter().map(|(key, value)| Entry { key, value }).collect() }
}

fn parse_path(input: ParseStream<'_>) -> syn::Result<PathAst> {
    let mut segments = vec![input.parse::<Ident>()?];
    while input.peek(Token![.]) {
        input.parse::<Token![.]>()?;
        segments.push(input.parse()?);
    }
    Ok(PathAst { segments })
}

fn parse_paths(input: ParseStream<'_>) -> syn::Result<PathList> {
    let start = input.fork();
    let (paths, bracketed) = if input.peek(syn::token::Bracket) {
        let content;
        bracketed!(content in input);
        let paths = content.parse_terminated(parse_path, Token![,])?;
        (paths.into_iter().collect(), true)
    } else {
        (vec![parse_path(input)?], false)
    };
    let tokens = tokens_between(&start, input);
    Ok(PathList { paths, bracketed, tokens })
}

/// The tokens `start` has and `end` no longer has.
fn tokens_between(start: ParseStream<'_>, end: ParseStream<'_>) -> TokenStream {
    let mut out = TokenStream::new();
    let remaining = end.cursor().token_stream().into_iter().count();
    let all: Vec<TokenTree> = start.cursor().token_stream().into_iter().collect();
    let take = all.len().saturating_sub(remaining);
    out.extend(all.into_iter().take(take));
    out
}

fn parse_trigger(input: ParseStream<'_>) -> syn::Result<TriggerAst> {
    if input.peek(LitStr) {
        return Ok(TriggerAst::Named(input.parse()?));
    }
    let start = input.fork();
    let service: Ident = input.parse().map_err(|e| {
        syn::Error::new(
            e.span(),
            "expected an event: `service::Payload`, `service::error` or an event name `\"name\"`",
        )
    })?;
    input.parse::<Token![::]>()?;
    if input.peek(Token![<]) {
        input.parse::<Token![<]>()?;
        let payload: Type = input.parse()?;
        input.parse::<Token![>]>()?;
        let tokens = tokens_between(&start, input);
        return Ok(TriggerAst::Service { service, payload: Box::new(payload), tokens });
    }
    let name: Ident = input.call(Ident::parse_any)?;
    let tokens = tokens_between(&start, input);
    if name == "error" {
        Ok(TriggerAst::ServiceError { service, tokens })
    } else {
        let payload: Type = syn::parse2(name.to_token_stream())?;
        Ok(TriggerAst::Service { service, payload: Box::new(payload), tokens })
    }
}

fn parse_transitions(
    input: ParseStream<'_>,
    errors: &mut Vec<syn::Error>,
) -> syn::Result<Vec<TransitionAst>> {
    if input.peek(syn::token::Bracket) {
        let content;
        bracketed!(content in input);
        Ok(parse_list(&content, errors, parse_transition))
    } else {
        Ok(vec![parse_transition(input, errors)?])
    }
}

fn parse_transition(input: ParseStream<'_>, errors: &mut Vec<syn::Error>) -> syn::Result<TransitionAst> {
    if !input.peek(syn::token::Brace) {
        return Ok(TransitionAst::Target(parse_paths(input)?));
    }
    let content;
    braced!(content in input);
    let entries = parse_entries(&content, errors, |key, input, _| {
        Ok(Some(match key {
            "target" => TransitionValue::Targets(parse_paths(input)?),
            "guard" => TransitionValue::Guard(parse_guard(input)?),
            "actions" => TransitionValue::Actions(parse_actions(input)?),
            "reenter" => TransitionValue::Bool(input.parse()?),
            _ => {
                skip_value(input);
                return Ok(None);
            }
        }))
    });
    let entries = entries.into_iter().map(|(key, value)| TransitionEntry { key, value }).collect();
    Ok(TransitionAst::Object { entries })
}

fn parse_guard(input: ParseStream<'_>) -> syn::Result<GuardAst> {
    if input.peek(Token![in]) && input.peek2(syn::token::Paren) {
        input.parse::<Token![in]>()?;
        let content;
        parenthesized!(content in input);
        let path = parse_path(&content)?;
        if !content.is_empty() {
            return Err(content.error("`in(...)` takes one state path"));
        }
        return Ok(GuardAst::In { path });
    }
    if input.peek(Ident) && input.peek2(syn::token::Paren) {
        let fork = input.fork();
        let ident: Ident = fork.parse()?;
        if ident == "not_in" {
            input.advance_to(&fork);
            let content;
            parenthesized!(content in input);
            let path = parse_path(&content)?;
            if !content.is_empty() {
                return Err(content.error("`not_in(...)` takes one state path"));
            }
            return Ok(GuardAst::NotIn { path });
        }
    }
    Ok(GuardAst::Custom(parse_custom(input, "guard")?))
}

fn parse_actions(input: ParseStream<'_>) -> syn::Result<Vec<ActionAst>> {
    if input.peek(syn::token::Bracket) {
        let content;
        bracketed!(content in input);
        Ok(content.parse_terminated(parse_action, Token![,])?.into_iter().collect())
    } else {
        Ok(vec![parse_action(input)?])
    }
}

fn parse_action(input: ParseStream<'_>) -> syn::Result<ActionAst> {
    if input.peek(Ident) && input.peek2(syn::token::Paren) {
        let fork = input.fork();
        let kw: Ident = fork.parse()?;
        if kw == "raise" || kw == "send" || kw == "cancel" {
            input.advance_to(&fork);
            let content;
            parenthesized!(content in input);
            let first: LitStr = content.parse()?;
            let mut delay = None;
            let mut id = None;
            while !content.is_empty() {
                content.parse::<Token![,]>()?;
                if content.is_empty() {
                    break;
                }
                if kw != "send" {
                    return Err(content.error(format!("`{kw}(...)` takes one string literal")));
                }
                let key: Ident = content.parse()?;
                content.parse::<Token![=]>()?;
                match key.to_string().as_str() {
                    "delay" if delay.is_none() => delay = Some(content.parse()?),
                    "id" if id.is_none() => id = Some(content.parse()?),
                    "delay" | "id" => return Err(syn::Error::new(key.span(), format!("duplicate `{key}`"))),
                    _ => {
                        return Err(syn::Error::new(
                            key.span(),
                            format!(
                                "unknown `send` option `{key}`; expected `delay = <ms>` or `id = \"...\"`"
                            ),
                        ));
                    }
                }
            }
            return Ok(match kw.to_string().as_str() {
                "raise" => ActionAst::Raise { event: first },
                "send" => ActionAst::Send { event: first, delay, id },
                _ => ActionAst::Cancel { id: first },
            });
        }
    }
    Ok(ActionAst::Custom(parse_custom(input, "action")?))
}
