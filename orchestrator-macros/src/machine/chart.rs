//! The chart of a machine, built at expansion time with the same `ChartBuilder` the generated
//! code uses at run time: one implementation of the statechart rules.
//!
//! [`walk`] performs the builder operations of a [`Model`] in one fixed order on a [`Sink`]:
//! [`validate`] runs them on a real `ChartBuilder` (mapping each `BuildError` back to the span of
//! the offending token), and the generator (`expand`) turns the same operations into code. When
//! the builder reports an error, the offending item is patched out and the chart is built again,
//! so that every structural mistake is reported in one compile, each once.

use std::collections::HashSet;

use orchestrator_chart::{
    ActionId, ActionSpec, BuildError, Chart, ChartBuilder, GuardId, GuardSpec, NodeKind, NodeRef, StateId,
    StateKind, TransitionSpec, TriggerSpec,
};
use proc_macro2::TokenStream;
use quote::ToTokens;

use super::model::{Act, Grd, Kind, Model, Target, Trans, Trig};
use crate::ctxt::Ctxt;
use crate::shared::closest;

/// Receives the chart-building operations, in the order the generated code performs them.
pub(crate) trait Sink {
    type Node: Copy;
    fn root(&mut self) -> Self::Node;
    fn root_parallel(&mut self);
    fn add_state(&mut self, parent: Self::Node, idx: usize, key: &str, kind: Kind) -> Option<Self::Node>;
    fn set_initial(&mut self, node: Self::Node, idx: usize, targets: &[&Target]);
    fn set_history_default(&mut self, node: Self::Node, idx: usize, targets: &[&Target], actions: &[Act]);
    fn add_entry(&mut self, node: Self::Node, idx: usize, action: &Act);
    fn add_exit(&mut self, node: Self::Node, idx: usize, action: &Act);
    fn add_transition(
        &mut self,
        node: Self::Node,
        idx: usize,
        t: usize,
        trans: &Trans,
        targets: &[&Target],
        guard: Option<&Grd>,
    );
}

/// Items left out after an error, so that rebuilding reports the next error, not the same one.
#[derive(Default)]
pub(crate) struct Patches {
    targets: HashSet<(usize, usize, usize)>,
    guards: HashSet<(usize, usize)>,
    transitions: HashSet<(usize, usize)>,
    initial: HashSet<usize>,
    history_default: HashSet<usize>,
    placeholder: HashSet<usize>,
}

enum Patch {
    Target(usize, usize, usize),
    AllTargets(usize, usize),
    Guard(usize, usize),
    Transition(usize, usize),
    Initial(usize),
    HistoryDefault(usize),
    Placeholder(usize),
    /// Stop: nothing sensible can be built.
    Abort,
}

impl Patches {
    fn apply(&mut self, model: &Model, patch: &Patch) -> bool {
        match *patch {
            Patch::Target(n, t, k) => self.targets.insert((n, t, k)),
            Patch::AllTargets(n, t) => {
                for k in 0..model.nodes[n].transitions[t].targets.len() {
                    self.targets.insert((n, t, k));
                }
                true
            }
            Patch::Guard(n, t) => self.guards.insert((n, t)),
            Patch::Transition(n, t) => self.transitions.insert((n, t)),
            Patch::Initial(n) => self.initial.insert(n),
            Patch::HistoryDefault(n) => self.history_default.insert(n),
            Patch::Placeholder(n) => self.placeholder.insert(n),
            Patch::Abort => false,
        }
    }
}

/// Performs the builder operations of `model` on `sink`.
pub(crate) fn walk<S: Sink>(model: &Model, patches: &Patches, sink: &mut S) {
    let root = sink.root();
    if model.nodes[0].kind == Kind::Parallel {
        sink.root_parallel();
    }
    let mut refs: Vec<Option<S::Node>> = vec![None; model.nodes.len()];
    refs[0] = Some(root);
    for (i, node) in model.nodes.iter().enumerate().skip(1) {
        let (Some(parent), Some(key)) = (node.parent.and_then(|p| refs[p]), &node.key) else { continue };
        refs[i] = sink.add_state(parent, i, &syn::ext::IdentExt::unraw(key).to_string(), node.kind);
    }
    for n in &patches.placeholder {
        if let Some(r) = refs[*n] {
            sink.add_state(r, *n, "__placeholder", Kind::State);
        }
    }
    for (i, node) in model.nodes.iter().enumerate() {
        let Some(r) = refs[i] else { continue };
        if let Some(targets) = &node.initial
            && !patches.initial.contains(&i)
        {
            sink.set_initial(r, i, &targets.iter().collect::<Vec<_>>());
        }
        if let Some((targets, actions)) = &node.history_default
            && !patches.history_default.contains(&i)
        {
            sink.set_history_default(r, i, &targets.iter().collect::<Vec<_>>(), actions);
        }
        for a in &node.entry {
            sink.add_entry(r, i, a);
        }
        for a in &node.exit {
            sink.add_exit(r, i, a);
        }
        for (t, trans) in node.transitions.iter().enumerate() {
            if patches.transitions.contains(&(i, t)) {
                continue;
            }
            let targets: Vec<&Target> = trans
                .targets
                .iter()
                .enumerate()
                .filter(|(k, _)| !patches.targets.contains(&(i, t, *k)))
                .map(|(_, target)| target)
                .collect();
            let guard = trans.guard.as_ref().filter(|_| !patches.guards.contains(&(i, t)));
            sink.add_transition(r, i, t, trans, &targets, guard);
        }
    }
}

/// The builder's view of an action.
pub(crate) fn action_spec(a: &Act) -> ActionSpec {
    match a {
        Act::Raise(event) => ActionSpec::raise(&event.value()),
        Act::Send { event, delay: None, id: None } => ActionSpec::send(&event.value()),
        Act::Send { event, delay, id } => ActionSpec::send_delayed(
            &event.value(),
            delay.unwrap_or(0),
            id.as_ref().map(|i| i.value()).as_deref(),
        ),
        Act::Cancel(id) => ActionSpec::cancel(&id.value()),
        Act::Custom(i) => ActionSpec::custom(ActionId(*i as u32)),
    }
}

fn guard_spec(g: &Grd) -> GuardSpec {
    match g {
        Grd::In(t) => GuardSpec::In(t.path.clone()),
        Grd::NotIn(t) => GuardSpec::NotIn(t.path.clone()),
        Grd::Custom(i) => GuardSpec::Custom(GuardId(*i as u32)),
    }
}

fn node_kind(kind: Kind) -> NodeKind {
    match kind {
        Kind::State => NodeKind::State,
        Kind::Parallel => NodeKind::Parallel,
        Kind::Final => NodeKind::Final,
        Kind::History { deep } => NodeKind::History { deep },
    }
}

/// Runs the operations on a `ChartBuilder`; event names of services (consts only known to the
/// compiler) are stood in for by placeholder names.
struct BuilderSink<'m> {
    b: ChartBuilder,
    model: &'m Model,
    errors: Vec<(TokenStream, String, Patch)>,
}

impl BuilderSink<'_> {
    fn key_tokens(&self, idx: usize) -> TokenStream {
        match &self.model.nodes[idx].key {
            Some(key) => key.to_token_stream(),
            None => self.model.name.to_token_stream(),
        }
    }

    fn other_error(&mut self, idx: usize, e: BuildError) {
        let tokens = self.key_tokens(idx);
        self.errors.push((tokens, format!("invalid statechart: {e}"), Patch::Abort));
    }
}

impl Sink for BuilderSink<'_> {
    type Node = NodeRef;

    fn root(&mut self) -> NodeRef {
        self.b.root()
    }

    fn root_parallel(&mut self) {
        self.b.set_root_parallel();
    }

    fn add_state(&mut self, parent: NodeRef, idx: usize, key: &str, kind: Kind) -> Option<NodeRef> {
        match self.b.add_state(parent, key, node_kind(kind)) {
            Ok(r) => Some(r),
            Err(e) => {
                self.other_error(idx, e);
                None
            }
        }
    }

    fn set_initial(&mut self, node: NodeRef, idx: usize, targets: &[&Target]) {
        if let Err(e) = self.b.set_initial(node, targets.iter().map(|t| t.path.clone()), Vec::new()) {
            self.other_error(idx, e);
        }
    }

    fn set_history_default(&mut self, node: NodeRef, idx: usize, targets: &[&Target], actions: &[Act]) {
        let actions = actions.iter().map(action_spec).collect();
        if let Err(e) = self.b.set_history_default(node, targets.iter().map(|t| t.path.clone()), actions) {
            self.other_error(idx, e);
        }
    }

    fn add_entry(&mut self, node: NodeRef, idx: usize, action: &Act) {
        if let Err(e) = self.b.add_entry(node, action_spec(action)) {
            self.other_error(idx, e);
        }
    }

    fn add_exit(&mut self, node: NodeRef, idx: usize, action: &Act) {
        if let Err(e) = self.b.add_exit(node, action_spec(action)) {
            self.other_error(idx, e);
        }
    }

    fn add_transition(
        &mut self,
        node: NodeRef,
        idx: usize,
        t: usize,
        trans: &Trans,
        targets: &[&Target],
        guard: Option<&Grd>,
    ) {
        let trigger = match &trans.trig {
            Trig::Named(lit) => TriggerSpec::Events(vec![lit.value()]),
            Trig::Service(i) => TriggerSpec::Events(vec![format!("machine.service.event{i}")]),
            Trig::ServiceError(i) => TriggerSpec::Events(vec![format!("machine.service.error{i}")]),
            Trig::Invalid => TriggerSpec::Events(vec!["machine.invalid".to_owned()]),
            Trig::Done => TriggerSpec::Done,
            Trig::Always => TriggerSpec::Always,
            Trig::After(ms) => TriggerSpec::After(*ms),
            Trig::AfterComputed(i) => TriggerSpec::AfterComputed {
                id: orchestrator_chart::DelayId(u32::try_from(*i).unwrap_or(u32::MAX)),
                name: self.model.delays[*i].delay_name(*i),
            },
        };
        let spec = TransitionSpec {
            trigger,
            targets: targets.iter().map(|t| t.path.clone()).collect(),
            guard: guard.map(guard_spec),
            actions: trans.actions.iter().map(action_spec).collect(),
            reenter: trans.reenter,
        };
        match self.b.add_transition(node, spec) {
            Ok(()) => {}
            Err(BuildError::Descriptor { error, .. }) => self.errors.push((
                trans.trig_tokens.clone(),
                format!("invalid event name {:?}: {}", error.descriptor, error.reason),
                Patch::Transition(idx, t),
            )),
            Err(e) => self.other_error(idx, e),
        }
    }
}

/// Builds the chart, reporting every structural error on its token. Returns the fingerprint of
/// the chart when it built without error. Runs the reachability check when `tree_reliable`.
pub(crate) fn validate(cx: &mut Ctxt, model: &Model, tree_reliable: bool) -> Option<u64> {
    let mut patches = Patches::default();
    let mut clean = true;
    // Each round patches one item out; there are fewer items than this.
    let rounds = 16 + model.nodes.iter().map(|n| 4 + n.transitions.len() * 4).sum::<usize>();
    for _ in 0..rounds {
        let mut sink =
            BuilderSink { b: ChartBuilder::new(model.name.to_string()), model, errors: Vec::new() };
        walk(model, &patches, &mut sink);
        let BuilderSink { b, errors, .. } = sink;
        let mut abort = false;
        for (tokens, message, patch) in errors {
            cx.error_spanned_by(tokens, message);
            clean = false;
            abort |= !patches.apply(model, &patch);
        }
        if abort {
            return None;
        }
        match b.build() {
            Ok(chart) => {
                if clean && tree_reliable {
                    reachability(cx, model, &chart);
                }
                return clean.then(|| chart.fingerprint());
            }
            Err(e) => {
                clean = false;
                match map_error(model, &patches, &e) {
                    Some((tokens, message, patch)) => {
                        if let Some(message) = message {
                            cx.error_spanned_by(tokens, message);
                        }
                        if !patches.apply(model, &patch) {
                            return None;
                        }
                    }
                    None => {
                        cx.error_spanned_by(&model.name, format!("invalid statechart: {e}"));
                        return None;
                    }
                }
            }
        }
    }
    None
}

fn node_by_path(model: &Model, path: &str) -> Option<usize> {
    model.nodes.iter().position(|n| n.path == path)
}

fn state_name(path: &str) -> String {
    if path.is_empty() { "the machine".to_owned() } else { format!("state `{path}`") }
}

fn unknown_target(model: &Model, target: &str) -> String {
    let paths: Vec<&str> = model.nodes.iter().skip(1).map(|n| n.path.as_str()).collect();
    let last = target.rsplit('.').next().unwrap_or(target);
    let guess = closest(target, paths.iter().copied()).or_else(|| {
        // A relative path: a state whose key is the target's last segment.
        let mut matching = model.nodes.iter().skip(1).filter(|n| n.path.rsplit('.').next() == Some(last));
        match (matching.next(), matching.next()) {
            (Some(n), None) => Some(n.path.as_str()),
            _ => None,
        }
    });
    match guess {
        Some(g) => format!("unknown target `{target}`: no state has this path; did you mean `{g}`?"),
        None => format!(
            "unknown target `{target}`: no state has this path (targets are absolute paths from the machine root, like `parent.child`)"
        ),
    }
}

type Mapped = (TokenStream, Option<String>, Patch);

/// The token and message of a `BuildError`, and the patch that removes its cause.
fn map_error(model: &Model, patches: &Patches, e: &BuildError) -> Option<Mapped> {
    let key_tokens = |n: usize| match &model.nodes[n].key {
        Some(key) => key.to_token_stream(),
        None => model.name.to_token_stream(),
    };
    Some(match e {
        BuildError::UnknownTarget { source_state, context, target } => {
            let n = node_by_path(model, source_state)?;
            let node = &model.nodes[n];
            let message = Some(unknown_target(model, target));
            match *context {
                "transition" => {
                    let (t, k, tok) = node.transitions.iter().enumerate().find_map(|(t, tr)| {
                        if patches.transitions.contains(&(n, t)) {
                            return None;
                        }
                        tr.targets.iter().enumerate().find_map(|(k, x)| {
                            (x.path == *target && !patches.targets.contains(&(n, t, k)))
                                .then(|| (t, k, x.tokens.clone()))
                        })
                    })?;
                    (tok, message, Patch::Target(n, t, k))
                }
                "initial" => {
                    let tok = node.initial.as_ref()?.iter().find(|x| x.path == *target)?.tokens.clone();
                    (tok, message, Patch::Initial(n))
                }
                _ => {
                    let tok =
                        node.history_default.as_ref()?.0.iter().find(|x| x.path == *target)?.tokens.clone();
                    (tok, message, Patch::HistoryDefault(n))
                }
            }
        }
        BuildError::UnknownGuardState { source_state, target } => {
            let n = node_by_path(model, source_state)?;
            let (t, tok) =
                model.nodes[n].transitions.iter().enumerate().find_map(|(t, tr)| match &tr.guard {
                    Some(Grd::In(x) | Grd::NotIn(x))
                        if x.path == *target
                            && !patches.guards.contains(&(n, t))
                            && !patches.transitions.contains(&(n, t)) =>
                    {
                        Some((t, x.tokens.clone()))
                    }
                    _ => None,
                })?;
            (
                tok,
                Some(format!("unknown state `{target}` in a guard: no state has this path")),
                Patch::Guard(n, t),
            )
        }
        BuildError::InitialNotDescendant { path, target } => {
            let n = node_by_path(model, path)?;
            let node = &model.nodes[n];
            let tok = node
                .initial
                .as_ref()?
                .iter()
                .find(|x| x.path == *target)
                .map(|x| x.tokens.clone())
                .or_else(|| node.initial_tokens.clone())?;
            let message =
                format!("the initial state `{target}` of {} is not one of its descendants", state_name(path));
            (tok, Some(message), Patch::Initial(n))
        }
        BuildError::HistoryDefaultOutsideParent { path, target } => {
            let n = node_by_path(model, path)?;
            let tok =
                model.nodes[n].history_default.as_ref()?.0.iter().find(|x| x.path == *target)?.tokens.clone();
            let parent = path.rsplit_once('.').map_or("", |(p, _)| p);
            let message = format!(
                "the default target `{target}` of history state `{path}` is outside its parent {}",
                state_name(parent)
            );
            (tok, Some(message), Patch::HistoryDefault(n))
        }
        BuildError::MissingHistoryDefault { path } => {
            let n = node_by_path(model, path)?;
            let parent = model.nodes[n].parent?;
            let message = format!(
                "history state `{path}` needs a default `target`: its parent starts in it, so there is no other state to fall back to"
            );
            (key_tokens(n), Some(message), Patch::Initial(parent))
        }
        BuildError::IllegalTargetSet { source_state, context, targets } => {
            let n = node_by_path(model, source_state)?;
            let node = &model.nodes[n];
            let message = format!(
                "targets {} cannot be active together: several targets must be in different regions of a parallel state",
                targets.iter().map(|t| format!("`{t}`")).collect::<Vec<_>>().join(", ")
            );
            match *context {
                "transition" => {
                    let t = node.transitions.iter().enumerate().position(|(t, tr)| {
                        !patches.transitions.contains(&(n, t))
                            && tr
                                .targets
                                .iter()
                                .enumerate()
                                .filter(|(k, _)| !patches.targets.contains(&(n, t, *k)))
                                .map(|(_, x)| x.path.as_str())
                                .eq(targets.iter().map(String::as_str))
                    })?;
                    let tr = &node.transitions[t];
                    let tok = tr.targets_tokens.clone().unwrap_or_else(|| tr.trig_tokens.clone());
                    (tok, Some(message), Patch::AllTargets(n, t))
                }
                "initial" => (node.initial_tokens.clone()?, Some(message), Patch::Initial(n)),
                _ => (node.history_tokens.clone()?, Some(message), Patch::HistoryDefault(n)),
            }
        }
        BuildError::MissingInitial { path } => {
            let n = node_by_path(model, path)?;
            let message = if model.nodes[n].kind == Kind::Parallel {
                format!(
                    "parallel {} has no regions: declare its child states in `states: {{ ... }}`",
                    state_name(path)
                )
            } else {
                format!(
                    "compound {} has no initial state: its only children are history states; declare a child state to start in",
                    state_name(path)
                )
            };
            (key_tokens(n), Some(message), Patch::Placeholder(n))
        }
        BuildError::NotAllowed { path, kind, what: "an initial state" } => {
            let n = node_by_path(model, path)?;
            let tok = model.nodes[n].initial_tokens.clone()?;
            let message = format!(
                "`initial` is not allowed on {kind} {}: only a compound state (one with `states`) starts in an initial child",
                state_name(path)
            );
            (tok, Some(message), Patch::Initial(n))
        }
        // Reported by the macro's own checks (no `states` at all, or an empty `states` block).
        BuildError::EmptyChart => (model.name.to_token_stream(), None, Patch::Abort),
        _ => return None,
    })
}

/// Reports every state that cannot be entered from the initial configuration through initial
/// states, parallel regions, history defaults and transition targets.
fn reachability(cx: &mut Ctxt, model: &Model, chart: &Chart) {
    let n = chart.len();
    let mut entered = vec![false; n];
    let mut work = Vec::new();
    let enter = |s: StateId, entered: &mut Vec<bool>, work: &mut Vec<StateId>| {
        let mut cur = Some(s);
        while let Some(x) = cur {
            if entered[x.index()] {
                break;
            }
            entered[x.index()] = true;
            work.push(x);
            cur = chart.state(x).parent();
        }
    };
    enter(StateId::ROOT, &mut entered, &mut work);
    while let Some(s) = work.pop() {
        let st = chart.state(s);
        let mut next: Vec<StateId> = Vec::new();
        match st.kind() {
            StateKind::Compound => {
                next.extend(st.initial().map(|i| i.targets().to_vec()).unwrap_or_default())
            }
            StateKind::Parallel => next.extend(st.children()),
            StateKind::History { .. } => {
                next.extend(st.history_default().map(|d| d.targets().to_vec()).unwrap_or_default())
            }
            StateKind::Atomic | StateKind::Final => {}
        }
        for t in chart.transitions_of(s) {
            next.extend(t.targets());
        }
        for x in next {
            enter(x, &mut entered, &mut work);
        }
    }
    for (i, node) in model.nodes.iter().enumerate().skip(1) {
        if entered[i] || matches!(node.kind, Kind::History { .. }) {
            continue;
        }
        // Report the topmost unreachable state only.
        if node.parent.is_some_and(|p| !entered[p]) {
            continue;
        }
        if let Some(key) = &node.key {
            cx.error_spanned_by(
                key,
                format!(
                    "state `{}` is unreachable: no initial state, transition target or history default leads to it",
                    node.path
                ),
            );
        }
    }
}
