//! Checks a parsed declaration and lowers it to a [`Model`].
//!
//! The checks here are the ones only the macro can make (keys, services, names, the shape of
//! the state tree as written); the statechart rules proper are checked by running the chart
//! through `orchestrator_chart::ChartBuilder` (see `chart`). Every problem is recorded in the
//! [`Ctxt`], spanned on the offending token, and checking goes on, so that all are reported at
//! once; a mistake that would make later checks report consequences of it (a misspelled key
//! that hides transitions, say) turns the later checks that could cascade off.

use std::collections::{BTreeMap, HashMap, HashSet};

use orchestrator_chart::EventDescriptor;
use proc_macro2::TokenStream;
use quote::ToTokens;
use syn::ext::IdentExt;
use syn::{Ident, LitStr, Type};

use super::ast::{
    ActionAst, Body, CustomAst, DelayAst, GuardAst, MachineDecl, PathList, TransitionAst, TransitionValue,
    TriggerAst, Value,
};
use super::model::{
    Act, Custom, EventVariant, Grd, Init, InitForm, Kind, Model, Node, Service, Target, Trans, Trig,
};
use super::names::{ident, pascal, push_syn_error, token_text};
use super::signals;
use crate::ctxt::Ctxt;
use crate::shared::closest;

const MACHINE_KEYS: &[&str] = &[
    "version",
    "contract",
    "services",
    "signals",
    "notifications",
    "context",
    "init",
    "output",
    "type",
    "initial",
    "states",
    "entry",
    "exit",
    "on",
    "always",
    "after",
];
const STATE_KEYS: &[&str] =
    &["type", "initial", "states", "entry", "exit", "on", "always", "after", "on_done"];
const FINAL_KEYS: &[&str] = &["type", "entry", "exit"];
const HISTORY_KEYS: &[&str] = &["type", "history", "target", "actions"];
const TRANSITION_KEYS: &[&str] = &["target", "guard", "actions", "reenter"];
/// Outbox methods that services cannot be named after.
const RESERVED_SERVICES: &[&str] = &["request", "subject"];

/// The result of checking: the model, and whether the state tree is trustworthy enough for
/// the reachability check (no reported mistake could have hidden a transition or a target).
pub(crate) struct Checked {
    pub model: Model,
    pub tree_reliable: bool,
}

struct Lowerer<'c> {
    cx: &'c mut Ctxt,
    name: Ident,
    nodes: Vec<Node>,
    services: Vec<Service>,
    signals: Vec<Service>,
    notifications: Vec<Service>,
    events: Vec<EventVariant>,
    /// (service or signal index, is a signal, payload text) → event index.
    event_keys: HashMap<(usize, bool, String), usize>,
    guards: Vec<Custom>,
    actions: Vec<Custom>,
    delays: Vec<Custom>,
    tree_reliable: bool,
}

pub(crate) fn check(cx: &mut Ctxt, decl: MachineDecl) -> Checked {
    let MachineDecl { attrs, vis, name, body, errors } = decl;
    let syntax_errors = !errors.is_empty();
    for e in errors {
        push_syn_error(cx, e);
    }
    let mut lw = Lowerer {
        cx,
        name: name.clone(),
        nodes: Vec::new(),
        services: Vec::new(),
        signals: Vec::new(),
        notifications: Vec::new(),
        events: Vec::new(),
        event_keys: HashMap::new(),
        guards: Vec::new(),
        delays: Vec::new(),
        actions: Vec::new(),
        tree_reliable: !syntax_errors,
    };

    // Machine-level keys first; the services must be known before the states use them.
    let mut version = None;
    let mut contract = None;
    let mut context = None;
    let mut init = None;
    let mut output = None;
    let mut state_entries = Vec::new();
    let mut seen = HashSet::new();
    let mut services_span = name.span();
    let (mut signal_list, mut notification_list) = (Vec::new(), Vec::new());
    for entry in body.entries {
        let key = entry.key.unraw().to_string();
        if MACHINE_KEYS.contains(&key.as_str()) && !seen.insert(key.clone()) {
            lw.cx.error_spanned_by(&entry.key, format!("duplicate key `{key}`"));
            continue;
        }
        if !matches!(
            key.as_str(),
            "version" | "contract" | "context" | "init" | "output" | "services" | "signals" | "notifications"
        ) {
            state_entries.push(entry);
            continue;
        }
        match (key.as_str(), entry.value) {
            ("version", Some(Value::Str(lit))) => {
                if orchestrator_rules::version::parse(&lit.value()).is_none() {
                    lw.cx.error_spanned_by(
                        &lit,
                        format!("version `{}` {}", lit.value(), orchestrator_rules::version::RULE),
                    );
                } else {
                    version = Some(lit);
                }
            }
            ("contract", Some(Value::Type(ty))) => contract = Some(*ty),
            ("context", Some(Value::Type(ty))) => context = Some(*ty),
            ("init", Some(Value::Expr(e))) => init = Some(lw.init(*e)),
            ("output", Some(Value::Expr(e))) => output = Some(*e),
            ("services", Some(Value::Services(list))) => {
                services_span = entry.key.span();
                lw.services(list);
            }
            ("signals", Some(Value::Services(list))) => signal_list = without_options(lw.cx, "signal", list),
            ("notifications", Some(Value::Services(list))) => {
                notification_list = without_options(lw.cx, "notification", list);
            }
            _ => {}
        }
    }
    // After the services, whose keys they may not reuse; before the states, which use them.
    lw.signals = signals::declare(lw.cx, signals::Kind::Signal, signal_list, &[("service", &lw.services)]);
    lw.notifications = signals::declare(
        lw.cx,
        signals::Kind::Notification,
        notification_list,
        &[("service", &lw.services), ("signal", &lw.signals)],
    );
    for (key, what) in [("contract", contract.is_some()), ("output", output.is_some())] {
        if !what && !seen.contains(key) {
            let example = if key == "contract" { "contract: MyWorkflowV1" } else { "output: make_output" };
            lw.cx.error_spanned_by(&name, format!("machine `{name}` is missing `{example}`"));
        }
    }
    if !seen.contains("states") && !state_entries.iter().any(|e| e.key == "states") {
        lw.cx.error_spanned_by(&name, format!("machine `{name}` is missing `states: {{ ... }}`"));
    }

    lw.state(None, None, String::new(), Body { entries: state_entries });
    lw.name_types();

    let Lowerer {
        nodes,
        services,
        signals,
        notifications,
        events,
        guards,
        actions,
        delays,
        tree_reliable,
        ..
    } = lw;
    Checked {
        model: Model {
            attrs,
            vis,
            name,
            version,
            contract,
            services,
            signals,
            notifications,
            services_span,
            context,
            init,
            output,
            nodes,
            events,
            guards,
            delays,
            actions,
            fingerprint: None,
        },
        tree_reliable,
    }
}

/// Reports an unknown key of `place`, with a suggestion when it looks like a misspelling.
fn unknown_key(cx: &mut Ctxt, key: &Ident, allowed: &[&str], place: &str) {
    let text = key.unraw().to_string();
    let message = match closest(&text, allowed.iter().copied()) {
        Some(guess) => format!("unknown key `{text}` in {place}; did you mean `{guess}`?"),
        None => format!("unknown key `{text}` in {place}; expected one of: {}", allowed.join(", ")),
    };
    cx.error_spanned_by(key, message);
}

fn describe(path: &str) -> String {
    if path.is_empty() { "the machine".to_owned() } else { format!("state `{path}`") }
}

impl Lowerer<'_> {
    /// `init`: a closure's parameters say whether it also takes the start's meta.
    fn init(&mut self, expr: syn::Expr) -> Init {
        let form = match &expr {
            syn::Expr::Closure(c) => match c.inputs.len() {
                1 => InitForm::Input,
                2 => InitForm::InputMeta,
                n => {
                    let message = "`init` takes the init payload and, optionally, where the workflow starts \
                         from: `|input| …` or `|input, meta| …` (`meta: &orchestrator::machine::InitMeta`)";
                    if n == 0 {
                        let (or1, or2) = (&c.or1_token, &c.or2_token);
                        self.cx.error_spanned_by(quote::quote!(#or1 #or2), message);
                    } else {
                        let extra: Vec<_> = c.inputs.iter().skip(2).collect();
                        self.cx.error_spanned_by(quote::quote!(#(#extra)*), message);
                    }
                    InitForm::Invalid
                }
            },
            _ => InitForm::Input,
        };
        Init { expr, form }
    }

    fn services(&mut self, list: Vec<(Ident, Type, Option<super::retry::ServiceOptionsAst>)>) {
        let mut keys: HashMap<String, Ident> = HashMap::new();
        let mut types: HashMap<String, Ident> = HashMap::new();
        for (key, ty, options) in list {
            let retry = options.and_then(|options| super::retry::check(self.cx, &key, &options));
            let text = key.unraw().to_string();
            if let Some(first) = keys.get(&text) {
                self.cx.error_spanned_by(
                    &key,
                    format!("duplicate service `{text}` (first declared as `{first}`)"),
                );
                continue;
            }
            if RESERVED_SERVICES.contains(&text.as_str()) {
                self.cx.error_spanned_by(
                    &key,
                    format!("`{text}` is a method of every outbox and cannot name a service; rename it"),
                );
                continue;
            }
            let ty_text = token_text(&ty);
            if let Some(first) = types.get(&ty_text) {
                self.cx.error_spanned_by(
                    &ty,
                    format!("duplicate service: `{ty_text}` is already declared as service `{first}`"),
                );
                continue;
            }
            keys.insert(text.clone(), key.clone());
            types.insert(ty_text, key.clone());
            let pascal = pascal(&text);
            let error_variant = ident(&format!("{pascal}Error"), key.span());
            self.services.push(Service { key, ty, pascal, error_variant, retry });
        }
    }

    fn service_index(&mut self, service: &Ident) -> Option<usize> {
        let text = service.unraw().to_string();
        if let Some(i) = self.services.iter().position(|s| s.key.unraw() == text) {
            return Some(i);
        }
        if signals::find(&self.notifications, service).is_some() {
            self.cx.error_spanned_by(
                service,
                format!("`{text}` is a notification: it expects no reply, so no event of it can trigger a transition"),
            );
            return None;
        }
        let names: Vec<String> =
            self.services.iter().chain(&self.signals).map(|s| s.key.unraw().to_string()).collect();
        if !self.signals.is_empty() {
            let message = match closest(&text, names.iter().map(String::as_str)) {
                Some(guess) => format!("unknown service or signal `{text}`; did you mean `{guess}`?"),
                None => format!("unknown service or signal `{text}`; declared: {}", names.join(", ")),
            };
            self.cx.error_spanned_by(service, message);
            return None;
        }
        let message = match closest(&text, names.iter().map(String::as_str)) {
            Some(guess) => format!("unknown service `{text}`; did you mean `{guess}`?"),
            None if names.is_empty() => {
                format!("unknown service `{text}`; the machine declares no `services: {{ ... }}`")
            }
            None => format!("unknown service `{text}`; declared services: {}", names.join(", ")),
        };
        self.cx.error_spanned_by(service, message);
        None
    }

    /// Lowers one state (the root when `key` is `None`) and its subtree; returns its index.
    fn state(&mut self, parent: Option<usize>, key: Option<Ident>, path: String, body: Body) -> usize {
        let is_root = key.is_none();
        let place = describe(&path);

        // The kind decides which keys are allowed.
        let mut kind = Kind::State;
        let mut kind_seen = false;
        for entry in &body.entries {
            if entry.key != "type" || kind_seen {
                continue;
            }
            kind_seen = true;
            let Some(Value::Word(word)) = &entry.value else { continue };
            let w = word.to_string();
            kind = match (w.as_str(), is_root) {
                ("parallel", _) => Kind::Parallel,
                ("compound" | "atomic", _) => Kind::State,
                ("final", false) => Kind::Final,
                ("history", false) => Kind::History { deep: false },
                ("final" | "history", true) => {
                    self.cx.error_spanned_by(word, format!("the machine itself cannot be of type `{w}`"));
                    Kind::State
                }
                _ => {
                    let kinds = ["parallel", "final", "history", "compound", "atomic"];
                    let message = match closest(&w, kinds) {
                        Some(g) => format!("unknown state type `{w}`; did you mean `{g}`?"),
                        None => format!("unknown state type `{w}`; expected one of: {}", kinds.join(", ")),
                    };
                    self.cx.error_spanned_by(word, message);
                    self.tree_reliable = false;
                    Kind::State
                }
            };
        }
        let allowed: &[&str] = match kind {
            _ if is_root => MACHINE_KEYS,
            Kind::Final => FINAL_KEYS,
            Kind::History { .. } => HISTORY_KEYS,
            Kind::State | Kind::Parallel => STATE_KEYS,
        };

        let mut seen = HashSet::new();
        let mut values: BTreeMap<&'static str, (Ident, Value)> = BTreeMap::new();
        for entry in body.entries {
            let text = entry.key.unraw().to_string();
            let Some(known) = STATE_KEYS.iter().chain(HISTORY_KEYS).find(|k| **k == text).copied() else {
                if !(is_root && MACHINE_KEYS.contains(&text.as_str())) {
                    unknown_key(self.cx, &entry.key, allowed, &place);
                    self.tree_reliable = false;
                }
                continue;
            };
            if !seen.insert(text.clone()) {
                self.cx.error_spanned_by(&entry.key, format!("duplicate key `{text}`"));
                self.tree_reliable = false;
                continue;
            }
            if known == "states" && matches!(kind, Kind::Final | Kind::History { .. }) {
                let what = if kind == Kind::Final { "a final state" } else { "a history state" };
                self.cx.error_spanned_by(&entry.key, format!("{what} cannot have child states ({place})"));
                // Keep the children, so that targets naming them do not add errors.
                kind = Kind::State;
            } else if !allowed.contains(&known) {
                let message = match known {
                    "history" | "target" | "actions" => {
                        format!("`{known}` is only allowed on history states (`type: history`)")
                    }
                    "on_done" if is_root => {
                        "`on_done` is not allowed on the machine: reaching a final state of the machine completes it"
                            .to_owned()
                    }
                    _ if kind == Kind::Final => format!("`{known}` is not allowed on a final state ({place})"),
                    _ if matches!(kind, Kind::History { .. }) => {
                        format!("`{known}` is not allowed on a history state ({place})")
                    }
                    _ => format!("`{known}` is not allowed on {place}"),
                };
                self.cx.error_spanned_by(&entry.key, message);
                self.tree_reliable = false;
                continue;
            }
            if let Some(value) = entry.value {
                values.insert(known, (entry.key, value));
            } else {
                self.tree_reliable = false;
            }
        }

        if let Some((_, Value::Word(word))) = values.get("history") {
            match word.to_string().as_str() {
                "deep" => kind = Kind::History { deep: true },
                "shallow" => kind = Kind::History { deep: false },
                other => self.cx.error_spanned_by(
                    word,
                    format!("unknown history type `{other}`; expected `shallow` or `deep`"),
                ),
            }
        }
        if matches!(kind, Kind::History { .. }) && parent == Some(0) {
            if let Some(key) = &key {
                self.cx.error_spanned_by(
                    key,
                    format!(
                        "history state `{path}` is outside any compound state: a history state remembers \
                         the active children of its parent, so it must be declared inside a compound or \
                         parallel state"
                    ),
                );
            }
            kind = Kind::State;
        }

        let idx = self.nodes.len();
        self.nodes.push(Node {
            key: key.clone(),
            path: path.clone(),
            parent,
            kind,
            children: Vec::new(),
            initial: None,
            initial_tokens: None,
            history_default: None,
            history_tokens: None,
            entry: Vec::new(),
            exit: Vec::new(),
            transitions: Vec::new(),
            variant: None,
            ty: None,
        });

        // Children first, so that `initial` can be checked against them.
        if let Some((states_key, Value::States(states))) = values.remove("states") {
            if states.is_empty() {
                self.cx.error_spanned_by(
                    &states_key,
                    format!(
                        "{place} has an empty `states` block: a compound state needs a child state to start \
                         in (remove `states` for an atomic state)"
                    ),
                );
            }
            let mut keys: HashSet<String> = HashSet::new();
            for (child_key, child_body) in states {
                let text = child_key.unraw().to_string();
                if !keys.insert(text.clone()) {
                    self.cx.error_spanned_by(
                        &child_key,
                        format!("duplicate state `{text}` in {place}: sibling states need distinct keys"),
                    );
                    self.tree_reliable = false;
                    continue;
                }
                let child_path = if path.is_empty() { text } else { format!("{path}.{text}") };
                let child = self.state(Some(idx), Some(child_key), child_path, child_body);
                self.nodes[idx].children.push(child);
            }
        }

        if let Some((_, Value::Paths(list))) = values.remove("initial") {
            self.initial(idx, list);
        }
        if let Some((_, Value::Actions(list))) = values.remove("entry") {
            let acts = self.lower_actions(list);
            self.nodes[idx].entry = acts;
        }
        if let Some((_, Value::Actions(list))) = values.remove("exit") {
            let acts = self.lower_actions(list);
            self.nodes[idx].exit = acts;
        }
        if matches!(kind, Kind::History { .. }) {
            let target = values.remove("target");
            let actions = values.remove("actions");
            if target.is_some() || actions.is_some() {
                let (targets, tokens) = match target {
                    Some((_, Value::Paths(list))) => (self.targets(&list), Some(list.tokens)),
                    _ => (Vec::new(), None),
                };
                let acts = match actions {
                    Some((_, Value::Actions(list))) => self.lower_actions(list),
                    _ => Vec::new(),
                };
                self.nodes[idx].history_default = Some((targets, acts));
                self.nodes[idx].history_tokens = tokens;
            }
        }
        if let Some((done_key, Value::Transitions(list))) = values.remove("on_done") {
            if !self.nodes[idx].has_real_children(&self.nodes) {
                self.cx.error_spanned_by(
                    &done_key,
                    format!(
                        "`on_done` is only meaningful on a compound or parallel state; {place} has no child \
                         states, so it is never done"
                    ),
                );
            }
            for t in list {
                self.transition(idx, Trig::Done, done_key.to_token_stream(), t);
            }
        }
        if let Some((_, Value::On(list))) = values.remove("on") {
            for (trigger, transitions) in list {
                let tokens = trigger.tokens();
                let trig = self.trigger(trigger);
                for t in transitions {
                    self.transition(idx, trig.clone(), tokens.clone(), t);
                }
            }
        }
        if let Some((always_key, Value::Transitions(list))) = values.remove("always") {
            for t in list {
                self.transition(idx, Trig::Always, always_key.to_token_stream(), t);
            }
        }
        if let Some((_, Value::After(list))) = values.remove("after") {
            let mut delay_names = HashSet::new();
            for (delay, transitions) in list {
                let (trig, tokens) = match delay {
                    DelayAst::Ms(ms_lit) => match ms_lit.base10_parse::<u64>() {
                        Ok(ms) => (Trig::After(ms), ms_lit.to_token_stream()),
                        Err(_) => {
                            self.cx.error_spanned_by(
                                &ms_lit,
                                "an `after` delay is a whole number of milliseconds, or computed: \
                                 `name = |ctx| Duration::from_millis(ctx.timeout_ms)`",
                            );
                            continue;
                        }
                    },
                    DelayAst::Computed(CustomAst { name, expr, bad_name }) => {
                        if let Some(e) = bad_name {
                            push_syn_error(self.cx, e);
                        }
                        let tokens = match &name {
                            Some(name) => name.to_token_stream(),
                            None => expr.to_token_stream(),
                        };
                        let delay = Custom { expr: *expr, name };
                        let text = delay.delay_name(self.delays.len());
                        if !delay_names.insert(text.clone()) {
                            self.cx.error_spanned_by(
                                &tokens,
                                format!(
                                    "duplicate delay `{text}` in this state: list the transitions it takes, as in `{text} = ... => [a, b]`"
                                ),
                            );
                            continue;
                        }
                        self.delays.push(delay);
                        (Trig::AfterComputed(self.delays.len() - 1), tokens)
                    }
                };
                for t in transitions {
                    self.transition(idx, trig.clone(), tokens.clone(), t);
                }
            }
        }
        idx
    }

    fn initial(&mut self, idx: usize, list: PathList) {
        let node = &self.nodes[idx];
        let compound = node.kind == Kind::State && node.has_real_children(&self.nodes);
        let short = !list.bracketed && list.paths.len() == 1 && list.paths[0].segments.len() == 1;
        let targets = if short && compound {
            // `initial: child`: a key among the children.
            let child = &list.paths[0].segments[0];
            let text = child.unraw().to_string();
            let children: Vec<String> = node
                .children
                .iter()
                .map(|c| self.nodes[*c].key.as_ref().map(|k| k.unraw().to_string()).unwrap_or_default())
                .collect();
            if !children.contains(&text) {
                let message = match closest(&text, children.iter().map(String::as_str)) {
                    Some(g) => format!(
                        "unknown initial state `{text}` of {}; did you mean `{g}`?",
                        describe(&node.path)
                    ),
                    None => format!(
                        "unknown initial state `{text}`: {} has no child state `{text}`; its children are: {}",
                        describe(&node.path),
                        children.join(", ")
                    ),
                };
                self.cx.error_spanned_by(child, message);
                self.tree_reliable = false;
                return;
            }
            let path = if node.path.is_empty() { text } else { format!("{}.{text}", node.path) };
            vec![Target { path, tokens: list.tokens.clone() }]
        } else {
            self.targets(&list)
        };
        self.nodes[idx].initial = Some(targets);
        self.nodes[idx].initial_tokens = Some(list.tokens);
    }

    fn targets(&mut self, list: &PathList) -> Vec<Target> {
        list.paths.iter().map(|p| Target { path: p.text(), tokens: p.to_token_stream() }).collect()
    }

    fn trigger(&mut self, trigger: TriggerAst) -> Trig {
        match trigger {
            TriggerAst::Named(lit) => Trig::Named(lit),
            TriggerAst::ServiceError { service, .. } if signals::find(&self.signals, &service).is_some() => {
                self.cx.error_spanned_by(
                    &service,
                    format!(
                        "`{}` is a signal: it has no system error; only services answer with `service::error`",
                        service.unraw()
                    ),
                );
                Trig::Invalid
            }
            TriggerAst::ServiceError { service, .. } => match self.service_index(&service) {
                Some(i) => Trig::ServiceError(i),
                None => Trig::Invalid,
            },
            TriggerAst::Service { service, payload, .. } => {
                let (s, signal) = match signals::find(&self.signals, &service) {
                    Some(i) => (i, true),
                    None => match self.service_index(&service) {
                        Some(s) => (s, false),
                        None => return Trig::Invalid,
                    },
                };
                let key = (s, signal, token_text(&payload));
                if let Some(i) = self.event_keys.get(&key) {
                    return Trig::Service(*i);
                }
                let Some(last) = last_segment(&payload) else {
                    self.cx.error_spanned_by(
                        &payload,
                        "name the payload type by a path (`service::Payload` or `service::<path::Payload>`)",
                    );
                    return Trig::Invalid;
                };
                let prefix = if signal { &self.signals[s].pascal } else { &self.services[s].pascal };
                let name = event_variant(prefix, &last.unraw().to_string());
                let variant = ident(&name, last.span());
                let clash = self.services.iter().any(|sv| sv.error_variant == name)
                    || self.events.iter().any(|e| e.variant == name)
                    || name == "Init"
                    || name == "Internal";
                if clash {
                    self.cx.error_spanned_by(
                        &payload,
                        format!(
                            "the event variant `{name}` for `{}` clashes with another variant of the event enum; \
                             rename the payload type or the {}",
                            token_text(&payload),
                            if signal { "signal" } else { "service" }
                        ),
                    );
                    return Trig::Invalid;
                }
                self.event_keys.insert(key, self.events.len());
                self.events.push(EventVariant { service: s, signal, payload: *payload, variant });
                Trig::Service(self.events.len() - 1)
            }
        }
    }

    fn transition(&mut self, idx: usize, trig: Trig, trig_tokens: TokenStream, t: TransitionAst) {
        let mut trans = Trans {
            trig,
            trig_tokens,
            targets: Vec::new(),
            targets_tokens: None,
            guard: None,
            actions: Vec::new(),
            reenter: false,
        };
        match t {
            TransitionAst::Target(list) => {
                trans.targets = self.targets(&list);
                trans.targets_tokens = Some(list.tokens);
            }
            TransitionAst::Object { entries, .. } => {
                let mut seen = HashSet::new();
                for entry in entries {
                    let text = entry.key.unraw().to_string();
                    if !TRANSITION_KEYS.contains(&text.as_str()) {
                        unknown_key(self.cx, &entry.key, TRANSITION_KEYS, "a transition");
                        self.tree_reliable = false;
                        continue;
                    }
                    if !seen.insert(text.clone()) {
                        self.cx.error_spanned_by(&entry.key, format!("duplicate key `{text}`"));
                        self.tree_reliable = false;
                        continue;
                    }
                    match entry.value {
                        Some(TransitionValue::Targets(list)) => {
                            trans.targets = self.targets(&list);
                            trans.targets_tokens = Some(list.tokens);
                        }
                        Some(TransitionValue::Guard(g)) => trans.guard = Some(self.guard(g)),
                        Some(TransitionValue::Actions(list)) => trans.actions = self.lower_actions(list),
                        Some(TransitionValue::Bool(b)) => trans.reenter = b.value,
                        None => self.tree_reliable = false,
                    }
                }
            }
        }
        self.nodes[idx].transitions.push(trans);
    }

    fn guard(&mut self, g: GuardAst) -> Grd {
        match g {
            GuardAst::In { path, .. } => {
                Grd::In(Target { path: path.text(), tokens: path.to_token_stream() })
            }
            GuardAst::NotIn { path, .. } => {
                Grd::NotIn(Target { path: path.text(), tokens: path.to_token_stream() })
            }
            GuardAst::Custom(CustomAst { name, expr, bad_name }) => {
                if let Some(e) = bad_name {
                    push_syn_error(self.cx, e);
                }
                self.guards.push(Custom { expr: *expr, name });
                Grd::Custom(self.guards.len() - 1)
            }
        }
    }

    fn lower_actions(&mut self, list: Vec<ActionAst>) -> Vec<Act> {
        list.into_iter().filter_map(|a| self.action(a)).collect()
    }

    fn action(&mut self, a: ActionAst) -> Option<Act> {
        match a {
            ActionAst::Raise { event, .. } => self.event_name(&event, "raise").then_some(Act::Raise(event)),
            ActionAst::Send { event, delay, id, .. } => {
                let ok = self.event_name(&event, "send");
                let delay = match delay {
                    None => None,
                    Some(lit) => match lit.base10_parse::<u64>() {
                        Ok(ms) => Some(ms),
                        Err(_) => {
                            self.cx
                                .error_spanned_by(&lit, "a `send` delay is a whole number of milliseconds");
                            return None;
                        }
                    },
                };
                if let Some(id) = &id
                    && id.value().is_empty()
                {
                    self.cx.error_spanned_by(id, "a `send` id cannot be empty");
                    return None;
                }
                ok.then_some(Act::Send { event, delay, id })
            }
            ActionAst::Cancel { id, .. } => {
                if id.value().is_empty() {
                    self.cx.error_spanned_by(&id, "a `cancel` id cannot be empty");
                    return None;
                }
                Some(Act::Cancel(id))
            }
            ActionAst::Custom(CustomAst { name, expr, bad_name }) => {
                if let Some(e) = bad_name {
                    push_syn_error(self.cx, e);
                }
                self.actions.push(Custom { expr: *expr, name });
                Some(Act::Custom(self.actions.len() - 1))
            }
        }
    }

    /// An event name of `raise` / `send`: an exact name, as event descriptors spell it.
    fn event_name(&mut self, lit: &LitStr, what: &str) -> bool {
        match EventDescriptor::parse(&lit.value()) {
            Ok(EventDescriptor::Exact(_)) => true,
            Ok(_) => {
                self.cx.error_spanned_by(lit, format!("`{what}` needs an event name, not a wildcard"));
                false
            }
            Err(e) => {
                self.cx.error_spanned_by(lit, format!("`{what}`: {e}"));
                false
            }
        }
    }

    /// Names the generated state types and variants; reports names that would clash.
    fn name_types(&mut self) {
        let machine = self.name.to_string();
        let mut taken: HashMap<String, String> = HashMap::new();
        for (suffix, what) in
            [("", "the machine type"), ("Event", "the event enum"), ("Outbox", "the outbox")]
        {
            taken.insert(format!("{machine}{suffix}"), what.to_owned());
        }
        let root_ty = format!("{machine}State");
        taken.insert(root_ty.clone(), "the state type".to_owned());
        self.nodes[0].ty = Some(ident(&root_ty, self.name.span()));
        for i in 1..self.nodes.len() {
            let node = &self.nodes[i];
            let Some(key) = node.key.clone() else { continue };
            if matches!(node.kind, Kind::History { .. }) {
                continue;
            }
            let parent = node.parent.unwrap_or(0);
            let variant = pascal(&key.unraw().to_string());
            let segments: String = node.path.split('.').map(pascal).collect();
            let needs_type = node.has_real_children(&self.nodes) || self.nodes[parent].kind == Kind::Parallel;
            // Sibling variants (of a compound parent) must differ.
            let clash = self.nodes[parent].children[..]
                .iter()
                .take_while(|c| **c != i)
                .filter(|c| !matches!(self.nodes[**c].kind, Kind::History { .. }))
                .find(|c| self.nodes[**c].variant.as_ref().is_some_and(|v| *v == variant));
            if let Some(c) = clash {
                let other = self.nodes[*c].path.clone();
                self.cx.error_spanned_by(
                    &key,
                    format!(
                        "state `{}` and state `{other}` would both be the variant `{variant}`; rename one",
                        node.path
                    ),
                );
                continue;
            }
            self.nodes[i].variant = Some(ident(&variant, key.span()));
            if needs_type {
                let ty = format!("{machine}{segments}");
                if let Some(what) = taken.get(&ty) {
                    self.cx.error_spanned_by(
                        &key,
                        format!("state `{}` would generate the type `{ty}`, which is already {what}; rename the state", self.nodes[i].path),
                    );
                    continue;
                }
                taken.insert(ty.clone(), format!("the type of state `{}`", self.nodes[i].path));
                self.nodes[i].ty = Some(ident(&ty, key.span()));
            }
        }
    }
}

/// The event enum's variant for payload type `payload` of the service whose key is `service`
/// (in PascalCase): the two joined (`add` + `Sum` = `AddSum`), without saying the service twice
/// when the payload's name already starts with it (`credit` + `CreditScore` = `CreditScore`,
/// `review` + `Review` = `Review`).
fn event_variant(service: &str, payload: &str) -> String {
    match payload.strip_prefix(service) {
        Some(rest) if rest.chars().next().is_none_or(char::is_uppercase) => payload.to_owned(),
        _ => format!("{service}{payload}"),
    }
}

fn last_segment(ty: &Type) -> Option<&Ident> {
    match ty {
        Type::Path(p) if p.qself.is_none() => p.path.segments.last().map(|s| &s.ident),
        Type::Group(g) => last_segment(&g.elem),
        Type::Paren(p) => last_segment(&p.elem),
        _ => None,
    }
}

/// The keys and contracts of `signals` or `notifications`: options (`{ retry: … }`) are for
/// the services a machine calls, an error on the key otherwise.
fn without_options(
    cx: &mut Ctxt,
    what: &str,
    list: Vec<(Ident, Type, Option<super::retry::ServiceOptionsAst>)>,
) -> Vec<(Ident, Type)> {
    list.into_iter()
        .map(|(key, ty, options)| {
            if options.is_some() {
                cx.error_spanned_by(
                    &key,
                    format!(
                        "a {what} takes no options: `{{ retry: … }}` is for the services a machine calls"
                    ),
                );
            }
            (key, ty)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::event_variant;

    #[test]
    fn event_variants_do_not_say_the_service_twice() {
        assert_eq!(event_variant("Add", "Sum"), "AddSum");
        assert_eq!(event_variant("Credit", "CreditScore"), "CreditScore");
        assert_eq!(event_variant("Review", "ReviewDecision"), "ReviewDecision");
        assert_eq!(event_variant("Review", "Review"), "Review");
        // A prefix that is not a whole word keeps the service.
        assert_eq!(event_variant("Add", "Address"), "AddAddress");
        assert_eq!(event_variant("Average", "AverageOutput"), "AverageOutput");
    }
}
