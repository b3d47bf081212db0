//! Exporters: a [`Chart`] as an XState v5 machine config ([`xstate`]), a Mermaid
//! `stateDiagram-v2` ([`mermaid`]) or a Graphviz digraph ([`dot`]).
//!
//! They work from the resolved chart only, so they serve charts from every front end (the
//! `machine!` macro and [`json`](crate::json)). The chart knows host guards and actions only by
//! [`GuardId`] / [`ActionId`]; their display names come from a [`Names`] implementation:
//! [`NameTable`] (filled by the JSON loader: [`JsonChart::names`](crate::json::JsonChart::names)),
//! or [`NoNames`], which shows `guard<N>` / `action<N>`.
//!
//! ```
//! use orchestrator_chart::export::{self, NoNames};
//! use orchestrator_chart::{ChartBuilder, NodeKind, TransitionSpec};
//!
//! let mut b = ChartBuilder::new("m");
//! let root = b.root();
//! let a = b.add_state(root, "a", NodeKind::State).unwrap();
//! b.add_state(root, "b", NodeKind::Final).unwrap();
//! b.add_transition(a, TransitionSpec::on("go").target("b")).unwrap();
//! let chart = b.build().unwrap();
//!
//! assert!(export::to_mermaid(&chart, &NoNames).contains("a --> b : go"));
//! assert!(export::to_dot(&chart, &NoNames).contains("\"a\" -> \"b\" [label=\"go\"]"));
//! assert_eq!(export::to_xstate_json(&chart, &NoNames)["states"]["a"]["on"]["go"], "#m.b");
//! ```
//!
//! # Labels
//!
//! Mermaid and DOT label a transition `<trigger> [<guard>] / <action>, <action>` (see
//! [`transition_label`]): the trigger is the event descriptors separated by spaces, `always` for
//! an eventless transition or `after <ms>ms` (`after <name>` for a computed delay); a built-in guard reads `In(p.a)`, `!In(p.a)`,
//! `true` or `false`; built-in actions read `raise(e)`, `send(e)`, `send(e, 10ms, id=x)` and
//! `cancel(x)`, and a conditional action ends with ` if <guard>`.
//!
//! Names and labels are built as plain text; each exporter escapes them for its format (Mermaid
//! entity codes, DOT string escapes), so a name may hold any character.

use std::borrow::Cow;
use std::collections::BTreeMap;

use crate::action::{Action, ActionId, ActionKind, Guard, GuardId};
use crate::model::{Chart, StateId, Transition, Trigger};

pub mod dot;
pub mod mermaid;
pub mod xstate;

pub use dot::to_dot;
pub use mermaid::to_mermaid;
pub use xstate::to_xstate_json;

/// Display names of a chart's host guards and actions.
pub trait Names {
    /// The name of a host guard, if known.
    fn guard_name(&self, id: GuardId) -> Option<&str>;
    /// The name of a host action, if known.
    fn action_name(&self, id: ActionId) -> Option<&str>;
}

/// No names: host guards and actions are shown as `guard<N>` / `action<N>`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NoNames;

impl Names for NoNames {
    fn guard_name(&self, _: GuardId) -> Option<&str> {
        None
    }
    fn action_name(&self, _: ActionId) -> Option<&str> {
        None
    }
}

/// A table of guard and action names by id.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NameTable {
    guards: BTreeMap<GuardId, String>,
    actions: BTreeMap<ActionId, String>,
}

impl NameTable {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    /// A table naming guard `i` `guards[i]` and action `i` `actions[i]` (the ids a code
    /// generator assigns in declaration order).
    pub fn from_lists(
        guards: impl IntoIterator<Item = impl Into<String>>,
        actions: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        let mut table = Self::new();
        for (i, name) in guards.into_iter().enumerate() {
            table.guards.insert(GuardId(i as u32), name.into());
        }
        for (i, name) in actions.into_iter().enumerate() {
            table.actions.insert(ActionId(i as u32), name.into());
        }
        table
    }

    /// Names a guard (replacing an earlier name).
    pub fn set_guard(&mut self, id: GuardId, name: impl Into<String>) {
        self.guards.insert(id, name.into());
    }

    /// Names an action (replacing an earlier name).
    pub fn set_action(&mut self, id: ActionId, name: impl Into<String>) {
        self.actions.insert(id, name.into());
    }

    /// Names a guard; builder style.
    pub fn with_guard(mut self, id: GuardId, name: impl Into<String>) -> Self {
        self.set_guard(id, name);
        self
    }

    /// Names an action; builder style.
    pub fn with_action(mut self, id: ActionId, name: impl Into<String>) -> Self {
        self.set_action(id, name);
        self
    }

    /// Named guards, by id.
    pub fn guards(&self) -> impl Iterator<Item = (GuardId, &str)> {
        self.guards.iter().map(|(id, n)| (*id, n.as_str()))
    }

    /// Named actions, by id.
    pub fn actions(&self) -> impl Iterator<Item = (ActionId, &str)> {
        self.actions.iter().map(|(id, n)| (*id, n.as_str()))
    }
}

impl Names for NameTable {
    fn guard_name(&self, id: GuardId) -> Option<&str> {
        self.guards.get(&id).map(String::as_str)
    }
    fn action_name(&self, id: ActionId) -> Option<&str> {
        self.actions.get(&id).map(String::as_str)
    }
}

/// The display name of a host guard: its name, or `guard<N>`.
pub fn guard_name(names: &dyn Names, id: GuardId) -> Cow<'_, str> {
    names.guard_name(id).map_or_else(|| Cow::Owned(format!("guard{}", id.0)), Cow::Borrowed)
}

/// The display name of a host action: its name, or `action<N>`.
pub fn action_name(names: &dyn Names, id: ActionId) -> Cow<'_, str> {
    names.action_name(id).map_or_else(|| Cow::Owned(format!("action{}", id.0)), Cow::Borrowed)
}

/// A guard as a label: the host guard's name, `In(<path>)`, `!In(<path>)`, `true`, `false`.
pub fn guard_label(chart: &Chart, names: &dyn Names, guard: &Guard) -> String {
    match guard {
        Guard::Custom(id) => guard_name(names, *id).into_owned(),
        Guard::In(s) => format!("In({})", chart.path(*s)),
        Guard::NotIn(s) => format!("!In({})", chart.path(*s)),
        Guard::Const(b) => b.to_string(),
    }
}

/// An action as a label: the host action's name, `raise(e)`, `send(e)`, `send(e, 10ms, id=x)`,
/// `cancel(x)`; a conditional action ends with ` if <guard>`.
pub fn action_label(chart: &Chart, names: &dyn Names, action: &Action) -> String {
    let mut text = match &action.kind {
        ActionKind::Custom(id) => action_name(names, *id).into_owned(),
        ActionKind::Raise(e) => format!("raise({e})"),
        ActionKind::Send { event, delay_ms, id } => {
            let mut s = format!("send({event}");
            if let Some(ms) = delay_ms.filter(|ms| *ms > 0) {
                s.push_str(&format!(", {ms}ms"));
            }
            if let Some(id) = id {
                s.push_str(&format!(", id={id}"));
            }
            s.push(')');
            s
        }
        ActionKind::Cancel(id) => format!("cancel({id})"),
    };
    if let Some(g) = &action.guard {
        text.push_str(" if ");
        text.push_str(&guard_label(chart, names, g));
    }
    text
}

/// Actions as a comma-separated label.
pub fn actions_label(chart: &Chart, names: &dyn Names, actions: &[Action]) -> String {
    actions.iter().map(|a| action_label(chart, names, a)).collect::<Vec<_>>().join(", ")
}

/// What a transition reacts to: its descriptors separated by spaces, `always`, `after <ms>ms`,
/// `after <name>` for a computed delay.
pub fn trigger_label(chart: &Chart, t: &Transition) -> String {
    match t.trigger() {
        Trigger::Events(ds) => ds.iter().map(ToString::to_string).collect::<Vec<_>>().join(" "),
        Trigger::Eventless => "always".to_owned(),
        Trigger::After(i) => match chart.state(t.source()).after().get(usize::from(*i)) {
            Some(a) => match a.computed() {
                Some((_, name)) => format!("after {name}"),
                None => format!("after {}ms", a.delay_ms()),
            },
            None => "after 0ms".to_owned(),
        },
    }
}

/// The label of a transition in Mermaid and DOT: `<trigger> [<guard>] / <actions>`.
pub fn transition_label(chart: &Chart, names: &dyn Names, t: &Transition) -> String {
    let mut label = trigger_label(chart, t);
    if let Some(g) = t.guard() {
        label.push_str(&format!(" [{}]", guard_label(chart, names, g)));
    }
    if !t.actions().is_empty() {
        label.push_str(" / ");
        label.push_str(&actions_label(chart, names, t.actions()));
    }
    label
}

/// Entry and exit actions as label lines (`entry / a, b`, `exit / c`), if any.
pub(crate) fn entry_exit_lines(chart: &Chart, names: &dyn Names, s: StateId) -> Vec<String> {
    let st = chart.state(s);
    let mut lines = Vec::new();
    if !st.entry().is_empty() {
        lines.push(format!("entry / {}", actions_label(chart, names, st.entry())));
    }
    if !st.exit().is_empty() {
        lines.push(format!("exit / {}", actions_label(chart, names, st.exit())));
    }
    lines
}

/// Child states including history states, in document order.
pub(crate) fn all_children(chart: &Chart, s: StateId) -> Vec<StateId> {
    let st = chart.state(s);
    let mut out: Vec<StateId> = st.children().iter().chain(st.history_children()).copied().collect();
    out.sort_unstable();
    out
}

/// Whether the root gets a box of its own: when it is parallel or has transitions or entry /
/// exit actions (otherwise there is nothing to attach them to).
pub(crate) fn root_needs_box(chart: &Chart) -> bool {
    let root = chart.state(StateId::ROOT);
    root.kind() == crate::model::StateKind::Parallel
        || !chart.transitions_of(StateId::ROOT).is_empty()
        || !root.entry().is_empty()
        || !root.exit().is_empty()
}
