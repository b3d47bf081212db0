//! A chart as an XState v5 machine config (JSON), for Stately's visualizer and for XState.
//!
//! | Chart | XState config |
//! |---|---|
//! | state kinds | `type: "parallel" \| "final" \| "history"` (+ `history: "shallow" \| "deep"`) |
//! | targets | `#<machine id>.<absolute path>` (XState's id syntax; state ids default to the path) |
//! | initial transition | `initial: "<child>"`, or `{ "target": "<child>", "actions": [...] }` |
//! | deep / multi-target initial | XState names one child: the child on the way to the first target; the full target set is kept in `meta.initial` with a `meta.note` |
//! | history default | `target` (left out when it is the implicit default: the parent's initial state(s), or all regions of a parallel parent); its actions, which XState cannot express, are kept in `actions` with a `meta.note` |
//! | `done.state.<own path>` transitions (leading, as the JSON loader places `onDone`) | `onDone` |
//! | other `done.state.<path>` descriptors | `xstate.done.state.<machine id>.<path>` (`done.state.*`: `xstate.done.state.*`), XState's event names |
//! | eventless / `after` | `always` / `after: { "<ms>": ... }`, a computed delay `after: { "<name>": ... }` (XState's named delays) |
//! | `reenter` | `reenter: true` (false is XState's default) |
//! | host guard | its name (a string) |
//! | `In(s)` / `NotIn(s)` | `{ "type": "xstate.stateIn", "params": { "stateValue": "#m.s" } }` / `{ "type": "xstate.not", "params": { "guard": <stateIn> } }` |
//! | constant guard | `{ "type": "const", "params": { "value": true } }` |
//! | host action | its name (a string) |
//! | `raise` | `{ "type": "xstate.raise", "params": { "event": { "type": "e" } } }` |
//! | `send` (to this machine) | `{ "type": "xstate.sendTo", "params": { "event": { "type": "e" }, "delay": 10, "id": "x" } }` (`delay` / `id` when set) |
//! | `cancel` | `{ "type": "xstate.cancel", "params": { "sendId": "x" } }` |
//! | action guard | `params.guard` (a host action with a guard: `{ "type": name, "params": { "guard": ... } }`) |
//!
//! Built-in actions and guards are parameterized `{ type, params }` objects (XState v5's
//! serializable form), so a harness can supply one generic implementation per type (for
//! example `raise((_, p) => p.event)`). A transition with a single target and nothing else is
//! written as the target string. A transition with several event descriptors (possible with
//! [`ChartBuilder`](crate::ChartBuilder), not with the JSON format) is listed under each.
//!
//! The machine's `context` is not part of the [`Chart`]; see [`with_context`].

use serde_json::{Map, Value, json};

use crate::action::{Action, ActionKind, Guard};
use crate::descriptor::EventDescriptor;
use crate::export::{Names, action_name, all_children, guard_name};
use crate::model::{Chart, StateId, StateKind, Transition, Trigger};

/// The XState v5 machine config of `chart` (see the [module docs](self)).
pub fn to_xstate_json(chart: &Chart, names: &dyn Names) -> Value {
    let x = XState { chart, names, id: chart.machine_id() };
    let mut root = Map::new();
    root.insert("id".into(), Value::from(chart.machine_id()));
    x.node(&mut root, StateId::ROOT);
    Value::Object(root)
}

/// Adds `context` to an exported machine config, right after its `id`, unless it is empty.
pub fn with_context(machine: Value, context: &Map<String, Value>) -> Value {
    match machine {
        Value::Object(m) if !context.is_empty() => {
            let mut out = Map::new();
            let mut context = Some(context.clone());
            for (k, v) in m {
                let is_id = k == "id";
                out.insert(k, v);
                if is_id && let Some(c) = context.take() {
                    out.insert("context".into(), Value::Object(c));
                }
            }
            if let Some(c) = context {
                out.insert("context".into(), Value::Object(c));
            }
            Value::Object(out)
        }
        other => other,
    }
}

struct XState<'a> {
    chart: &'a Chart,
    names: &'a dyn Names,
    id: &'a str,
}

/// One value, or an array when there are several.
fn one_or_many(mut items: Vec<Value>) -> Value {
    if items.len() == 1 { items.remove(0) } else { Value::Array(items) }
}

impl XState<'_> {
    fn target(&self, s: StateId) -> String {
        format!("#{}.{}", self.id, self.chart.path(s))
    }

    fn targets(&self, ids: &[StateId]) -> Value {
        one_or_many(ids.iter().map(|s| Value::from(self.target(*s))).collect())
    }

    /// The key of the child of `parent` on the way to `descendant`.
    fn child_toward(&self, parent: StateId, descendant: StateId) -> &str {
        let mut s = descendant;
        while let Some(p) = self.chart.state(s).parent() {
            if p == parent {
                break;
            }
            s = p;
        }
        self.chart.state(s).key()
    }

    fn node(&self, obj: &mut Map<String, Value>, s: StateId) {
        let st = self.chart.state(s);
        let mut meta = Map::new();
        match st.kind() {
            StateKind::Atomic | StateKind::Compound => {}
            StateKind::Parallel => {
                obj.insert("type".into(), "parallel".into());
            }
            StateKind::Final => {
                obj.insert("type".into(), "final".into());
            }
            StateKind::History { deep } => {
                obj.insert("type".into(), "history".into());
                obj.insert("history".into(), if deep { "deep" } else { "shallow" }.into());
                if let Some(default) = st.history_default() {
                    let parent = self.chart.state(st.parent().unwrap_or(StateId::ROOT));
                    let implicit: &[StateId] = match parent.kind() {
                        StateKind::Parallel => parent.children(),
                        _ => parent.initial().map_or(&[], |i| i.targets()),
                    };
                    if default.targets() != implicit {
                        obj.insert("target".into(), self.targets(default.targets()));
                    }
                    if !default.actions().is_empty() {
                        obj.insert("actions".into(), self.actions(default.actions()));
                        meta.insert(
                            "note".into(),
                            "XState history states have no default-transition actions; they are kept in \
                             `actions`"
                                .into(),
                        );
                    }
                }
                if !meta.is_empty() {
                    obj.insert("meta".into(), Value::Object(meta));
                }
                return;
            }
        }
        if let Some(init) = st.initial()
            && let Some(first) = init.targets().first()
        {
            let key = self.child_toward(s, *first);
            let value = if init.actions().is_empty() {
                Value::from(key)
            } else {
                json!({ "target": key, "actions": self.actions(init.actions()) })
            };
            obj.insert("initial".into(), value);
            if init.targets().len() != 1 || self.chart.state(*first).parent() != Some(s) {
                meta.insert(
                    "initial".into(),
                    init.targets().iter().map(|t| Value::from(self.target(*t))).collect(),
                );
                meta.insert(
                    "note".into(),
                    "XState's `initial` names one child; the deep / multi-target initial \
                         configuration is `meta.initial`"
                        .into(),
                );
            }
        }
        if !st.entry().is_empty() {
            obj.insert("entry".into(), self.actions(st.entry()));
        }
        if !st.exit().is_empty() {
            obj.insert("exit".into(), self.actions(st.exit()));
        }
        self.transitions(obj, s);
        let children = all_children(self.chart, s);
        if !children.is_empty() {
            let mut states = Map::new();
            for c in children {
                let mut child = Map::new();
                self.node(&mut child, c);
                states.insert(self.chart.state(c).key().to_owned(), Value::Object(child));
            }
            obj.insert("states".into(), Value::Object(states));
        }
        if !meta.is_empty() {
            obj.insert("meta".into(), Value::Object(meta));
        }
    }

    fn transitions(&self, obj: &mut Map<String, Value>, s: StateId) {
        let st = self.chart.state(s);
        let mut on_done = Vec::new();
        let mut on: Vec<(String, Vec<Value>)> = Vec::new();
        let mut always = Vec::new();
        let mut after: Vec<(String, Vec<Value>)> = Vec::new();
        let mut leading = true;
        for t in self.chart.transitions_of(s) {
            let value = self.transition(t);
            match t.trigger() {
                Trigger::Events(ds)
                    if leading
                        && ds.len() == 1
                        && matches!(&ds[0], EventDescriptor::Exact(e) if Some(&**e) == st.done_event()) =>
                {
                    on_done.push(value);
                }
                Trigger::Events(ds) => {
                    leading = false;
                    for d in ds {
                        let key = self.event_key(d);
                        match on.iter_mut().find(|(k, _)| *k == key) {
                            Some((_, list)) => list.push(value.clone()),
                            None => on.push((key, vec![value.clone()])),
                        }
                    }
                }
                Trigger::Eventless => {
                    leading = false;
                    always.push(value);
                }
                Trigger::After(i) => {
                    leading = false;
                    // A computed delay is keyed by its name (XState's named delays).
                    let key = st.after().get(usize::from(*i)).map_or_else(
                        || "0".to_owned(),
                        |a| {
                            a.computed().map_or_else(|| a.delay_ms().to_string(), |(_, name)| name.to_owned())
                        },
                    );
                    match after.iter_mut().find(|(d, _)| *d == key) {
                        Some((_, list)) => list.push(value),
                        None => after.push((key, vec![value])),
                    }
                }
            }
        }
        if !on_done.is_empty() {
            obj.insert("onDone".into(), one_or_many(on_done));
        }
        if !on.is_empty() {
            let map = on.into_iter().map(|(k, v)| (k, one_or_many(v))).collect();
            obj.insert("on".into(), Value::Object(map));
        }
        if !always.is_empty() {
            obj.insert("always".into(), one_or_many(always));
        }
        if !after.is_empty() {
            let map = after.into_iter().map(|(key, v)| (key, one_or_many(v))).collect();
            obj.insert("after".into(), Value::Object(map));
        }
    }

    /// An `on` key: the descriptor, with `done.state.<path>` in XState's spelling.
    fn event_key(&self, d: &EventDescriptor) -> String {
        let text = d.to_string();
        if text == "done.state.*" {
            return "xstate.done.state.*".to_owned();
        }
        match text.strip_prefix("done.state.") {
            Some(rest) => format!("xstate.done.state.{}.{rest}", self.id),
            None => text,
        }
    }

    fn transition(&self, t: &Transition) -> Value {
        if t.guard().is_none() && t.actions().is_empty() && !t.reenter() && t.targets().len() == 1 {
            return Value::from(self.target(t.targets()[0]));
        }
        let mut obj = Map::new();
        if !t.targets().is_empty() {
            obj.insert("target".into(), self.targets(t.targets()));
        }
        if let Some(g) = t.guard() {
            obj.insert("guard".into(), self.guard(g));
        }
        if !t.actions().is_empty() {
            obj.insert("actions".into(), self.actions(t.actions()));
        }
        if t.reenter() {
            obj.insert("reenter".into(), Value::Bool(true));
        }
        Value::Object(obj)
    }

    fn guard(&self, g: &Guard) -> Value {
        match g {
            Guard::Custom(id) => Value::from(guard_name(self.names, *id).into_owned()),
            Guard::In(s) => self.state_in(*s),
            Guard::NotIn(s) => json!({ "type": "xstate.not", "params": { "guard": self.state_in(*s) } }),
            Guard::Const(b) => json!({ "type": "const", "params": { "value": b } }),
        }
    }

    fn state_in(&self, s: StateId) -> Value {
        json!({ "type": "xstate.stateIn", "params": { "stateValue": self.target(s) } })
    }

    fn actions(&self, actions: &[Action]) -> Value {
        Value::Array(actions.iter().map(|a| self.action(a)).collect())
    }

    fn action(&self, a: &Action) -> Value {
        let (kind, mut params) = match &a.kind {
            ActionKind::Custom(id) => {
                let name = action_name(self.names, *id).into_owned();
                match &a.guard {
                    None => return Value::from(name),
                    Some(_) => (name, Map::new()),
                }
            }
            ActionKind::Raise(e) => {
                let mut p = Map::new();
                p.insert("event".into(), json!({ "type": &**e }));
                ("xstate.raise".to_owned(), p)
            }
            ActionKind::Send { event, delay_ms, id } => {
                let mut p = Map::new();
                p.insert("event".into(), json!({ "type": &**event }));
                if let Some(ms) = delay_ms {
                    p.insert("delay".into(), Value::from(*ms));
                }
                if let Some(id) = id {
                    p.insert("id".into(), Value::from(&**id));
                }
                ("xstate.sendTo".to_owned(), p)
            }
            ActionKind::Cancel(id) => {
                let mut p = Map::new();
                p.insert("sendId".into(), Value::from(&**id));
                ("xstate.cancel".to_owned(), p)
            }
        };
        if let Some(g) = &a.guard {
            params.insert("guard".into(), self.guard(g));
        }
        json!({ "type": kind, "params": params })
    }
}
