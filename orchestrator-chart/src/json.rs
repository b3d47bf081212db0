//! Loader for the conformance-fixture JSON chart format (see
//! `shared/conformance/statecharts/README.md`) into a [`Chart`] via [`ChartBuilder`], plus
//! [`JsonHost`], whose context is a JSON object of numbers / `null`.
//!
//! The input is the fixture object (or any object) with `machine`, and optionally `guards` and
//! `actions`:
//!
//! * guards: `{"name", "check"}` with `check` one of `{var, op: eq|ne|lt|le|gt|ge, value}`
//!   (host guard), `{in: path}`, `{not_in: path}` (built-in `In`), `{const: bool}`;
//! * actions: `{"name", "assign": {var, op: set|add|sub|mul|pow, value}}` (host action);
//! * inline actions: `{"type": "raise"|"send"|"cancel", ...}` with an optional `guard`.
//!
//! Key order is document order (the workspace enables `serde_json/preserve_order`). A state's
//! `onDone` transitions are placed before its `on` transitions (see the crate docs).

use std::collections::HashMap;
use std::path::Path;

use serde_json::{Map, Value};
use thiserror::Error;

use crate::action::{ActionId, ActionSpec, DelayId, GuardId, GuardSpec};
use crate::builder::{BuildError, ChartBuilder, NodeKind, NodeRef, TransitionSpec};
use crate::export::NameTable;
use crate::host::{EventRef, Host};
use crate::model::Chart;

/// The context of [`JsonHost`]: variable name to number or `null`.
pub type JsonContext = Map<String, Value>;

/// Why a JSON chart could not be loaded.
#[derive(Debug, Error)]
pub enum JsonError {
    /// Not JSON.
    #[error("invalid JSON: {0}")]
    Syntax(#[from] serde_json::Error),
    /// Reading the file failed.
    #[error("cannot read {path}: {message}")]
    Io {
        /// The file.
        path: String,
        /// The error.
        message: String,
    },
    /// A value of the wrong shape.
    #[error("{at}: {message}")]
    Invalid {
        /// JSON location, e.g. `machine.states.a.on.t[0]`.
        at: String,
        /// What is wrong.
        message: String,
    },
    /// A guard name not in `guards`.
    #[error("{at}: unknown guard {name:?}")]
    UnknownGuard {
        /// Where.
        at: String,
        /// The name.
        name: String,
    },
    /// An action name not in `actions`.
    #[error("{at}: unknown action {name:?}")]
    UnknownAction {
        /// Where.
        at: String,
        /// The name.
        name: String,
    },
    /// The chart is structurally wrong.
    #[error(transparent)]
    Build(#[from] BuildError),
}

fn invalid(at: &str, message: impl Into<String>) -> JsonError {
    JsonError::Invalid { at: at.to_owned(), message: message.into() }
}

/// A comparison of [`JsonHost`] guards.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CmpOp {
    /// `==`
    Eq,
    /// `!=`
    Ne,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
}

/// An arithmetic assignment of [`JsonHost`] actions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AssignOp {
    /// `v = n`
    Set,
    /// `v = v + n`
    Add,
    /// `v = v - n`
    Sub,
    /// `v = v * n`
    Mul,
    /// `v = v ^ n`
    Pow,
}

/// `context[var] <op> value`; false when `context[var]` is not a number.
#[derive(Debug, Clone, PartialEq)]
pub struct VarCheck {
    /// Variable.
    pub var: String,
    /// Comparison.
    pub op: CmpOp,
    /// Right-hand side.
    pub value: f64,
}

/// `context[var] = context[var] <op> value` (`Set`: `= value`, which may be `null`).
#[derive(Debug, Clone, PartialEq)]
pub struct Assign {
    /// Variable.
    pub var: String,
    /// Operation.
    pub op: AssignOp,
    /// Operand; `None` = `null` (only meaningful for `Set`).
    pub value: Option<f64>,
}

/// The host of JSON charts: guard `i` is `checks[i]`, action `i` is `assigns[i]`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct JsonHost {
    /// Host guards by [`GuardId`].
    pub checks: Vec<VarCheck>,
    /// Host actions by [`ActionId`].
    pub assigns: Vec<Assign>,
    /// Computed `after` delays by [`DelayId`]: each is the context variable of its name, in ms
    /// (0 when it is not a non-negative number).
    pub delays: Vec<String>,
}

/// A number as JSON: integral values as integers (so `8` prints as `8`), non-finite as `null`.
pub fn number_value(x: f64) -> Value {
    if x.is_finite() && x.fract() == 0.0 && x.abs() < 9.007_199_254_740_992e15 {
        Value::from(x as i64)
    } else {
        serde_json::Number::from_f64(x).map_or(Value::Null, Value::Number)
    }
}

impl Host for JsonHost {
    type Context = JsonContext;

    fn guard(&mut self, guard: GuardId, context: &JsonContext, _: &EventRef<'_>) -> bool {
        let Some(c) = self.checks.get(guard.0 as usize) else { return false };
        let Some(v) = context.get(&c.var).and_then(Value::as_f64) else { return false };
        match c.op {
            CmpOp::Eq => v == c.value,
            CmpOp::Ne => v != c.value,
            CmpOp::Lt => v < c.value,
            CmpOp::Le => v <= c.value,
            CmpOp::Gt => v > c.value,
            CmpOp::Ge => v >= c.value,
        }
    }

    fn delay(&mut self, delay: DelayId, context: &JsonContext) -> u64 {
        let var = self.delays.get(delay.0 as usize);
        var.and_then(|v| context.get(v)).and_then(Value::as_f64).map_or(0, |ms| ms.max(0.0) as u64)
    }

    fn action(&mut self, action: ActionId, context: &mut JsonContext, _: &EventRef<'_>) {
        let Some(a) = self.assigns.get(action.0 as usize) else { return };
        let current = context.get(&a.var).and_then(Value::as_f64);
        let result = match (a.op, current, a.value) {
            (AssignOp::Set, _, v) => v,
            (_, None, _) | (_, _, None) => None,
            (AssignOp::Add, Some(x), Some(n)) => Some(x + n),
            (AssignOp::Sub, Some(x), Some(n)) => Some(x - n),
            (AssignOp::Mul, Some(x), Some(n)) => Some(x * n),
            (AssignOp::Pow, Some(x), Some(n)) => Some(x.powf(n)),
        };
        context.insert(a.var.clone(), result.map_or(Value::Null, number_value));
    }
}

/// A loaded JSON chart: the chart, its host and the initial context.
#[derive(Debug, Clone)]
pub struct JsonChart {
    /// The chart.
    pub chart: Chart,
    /// The host implementing its named guards and actions.
    pub host: JsonHost,
    /// `machine.context` (empty if absent).
    pub context: JsonContext,
    /// Names of the host guards and actions (for [`export`](crate::export)): the `name` of the
    /// `guards` / `actions` entry, or `var op value` for a guard written inline.
    pub names: NameTable,
}

/// Loads a chart from a JSON string.
pub fn load_str(text: &str) -> Result<JsonChart, JsonError> {
    load(&serde_json::from_str::<Value>(text)?)
}

/// Loads a chart from a JSON file.
pub fn load_file(path: &Path) -> Result<JsonChart, JsonError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| JsonError::Io { path: path.display().to_string(), message: e.to_string() })?;
    load_str(&text)
}

/// Loads a chart from a parsed document with `machine` (and optional `guards`, `actions`).
pub fn load(doc: &Value) -> Result<JsonChart, JsonError> {
    let doc = doc.as_object().ok_or_else(|| invalid("$", "expected an object"))?;
    let mut loader = Loader {
        guards: HashMap::new(),
        actions: HashMap::new(),
        host: JsonHost::default(),
        names: NameTable::new(),
    };
    loader.read_guards(doc.get("guards"))?;
    loader.read_actions(doc.get("actions"))?;
    let machine = doc.get("machine").ok_or_else(|| invalid("$", "missing \"machine\""))?;
    let machine = machine.as_object().ok_or_else(|| invalid("machine", "expected an object"))?;
    let id = match machine.get("id") {
        None => "m",
        Some(v) => v.as_str().ok_or_else(|| invalid("machine.id", "expected a string"))?,
    };
    let context = match machine.get("context") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(m)) => m.clone(),
        Some(_) => return Err(invalid("machine.context", "expected an object")),
    };
    let mut b = ChartBuilder::new(id);
    match machine.get("type").and_then(Value::as_str) {
        Some("parallel") => b.set_root_parallel(),
        None | Some("compound") => {}
        Some(other) => return Err(invalid("machine.type", format!("root cannot be of type {other:?}"))),
    }
    let root = b.root();
    loader.node(&mut b, root, "", machine, "machine", true, id)?;
    let chart = b.build()?;
    Ok(JsonChart { chart, host: loader.host, context, names: loader.names })
}

struct Loader {
    guards: HashMap<String, GuardSpec>,
    actions: HashMap<String, ActionSpec>,
    host: JsonHost,
    names: NameTable,
}

const NODE_KEYS: &[&str] = &[
    "type",
    "states",
    "initial",
    "entry",
    "exit",
    "on",
    "always",
    "after",
    "onDone",
    "history",
    "target",
    "actions",
    "description",
    "meta",
    "tags",
];
const ROOT_KEYS: &[&str] = &["id", "context"];
const TRANSITION_KEYS: &[&str] = &["target", "guard", "actions", "reenter", "description", "meta"];

fn as_f64(v: &Value, at: &str) -> Result<f64, JsonError> {
    v.as_f64().ok_or_else(|| invalid(at, "expected a number"))
}

fn str_field<'a>(obj: &'a Map<String, Value>, key: &str, at: &str) -> Result<&'a str, JsonError> {
    obj.get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| invalid(at, format!("missing or non-string \"{key}\"")))
}

impl Loader {
    fn read_guards(&mut self, guards: Option<&Value>) -> Result<(), JsonError> {
        let Some(guards) = guards else { return Ok(()) };
        let list = guards.as_array().ok_or_else(|| invalid("guards", "expected an array"))?;
        for (i, g) in list.iter().enumerate() {
            let at = format!("guards[{i}]");
            let g = g.as_object().ok_or_else(|| invalid(&at, "expected an object"))?;
            let name = str_field(g, "name", &at)?;
            let check = g.get("check").ok_or_else(|| invalid(&at, "missing \"check\""))?;
            let spec = self.check(check, &format!("{at}.check"))?;
            if let GuardSpec::Custom(id) = spec {
                self.names.set_guard(id, name);
            }
            self.guards.insert(name.to_owned(), spec);
        }
        Ok(())
    }

    fn check(&mut self, check: &Value, at: &str) -> Result<GuardSpec, JsonError> {
        let c = check.as_object().ok_or_else(|| invalid(at, "expected an object"))?;
        if let Some(p) = c.get("in") {
            return Ok(GuardSpec::In(
                p.as_str().ok_or_else(|| invalid(at, "\"in\" must be a path"))?.to_owned(),
            ));
        }
        if let Some(p) = c.get("not_in") {
            return Ok(GuardSpec::NotIn(
                p.as_str().ok_or_else(|| invalid(at, "\"not_in\" must be a path"))?.to_owned(),
            ));
        }
        if let Some(v) = c.get("const") {
            return Ok(GuardSpec::Const(
                v.as_bool().ok_or_else(|| invalid(at, "\"const\" must be a boolean"))?,
            ));
        }
        let var = str_field(c, "var", at)?.to_owned();
        let (op, symbol) = match str_field(c, "op", at)? {
            "eq" => (CmpOp::Eq, "=="),
            "ne" => (CmpOp::Ne, "!="),
            "lt" => (CmpOp::Lt, "<"),
            "le" => (CmpOp::Le, "<="),
            "gt" => (CmpOp::Gt, ">"),
            "ge" => (CmpOp::Ge, ">="),
            other => return Err(invalid(at, format!("unknown comparison {other:?}"))),
        };
        let value = as_f64(c.get("value").unwrap_or(&Value::Null), &format!("{at}.value"))?;
        let id = GuardId(self.host.checks.len() as u32);
        self.names.set_guard(id, format!("{var} {symbol} {}", number_value(value)));
        self.host.checks.push(VarCheck { var, op, value });
        Ok(GuardSpec::Custom(id))
    }

    fn read_actions(&mut self, actions: Option<&Value>) -> Result<(), JsonError> {
        let Some(actions) = actions else { return Ok(()) };
        let list = actions.as_array().ok_or_else(|| invalid("actions", "expected an array"))?;
        for (i, a) in list.iter().enumerate() {
            let at = format!("actions[{i}]");
            let a = a.as_object().ok_or_else(|| invalid(&at, "expected an object"))?;
            let name = str_field(a, "name", &at)?;
            let spec = if let Some(assign) = a.get("assign") {
                let at = format!("{at}.assign");
                let asg = assign.as_object().ok_or_else(|| invalid(&at, "expected an object"))?;
                let var = str_field(asg, "var", &at)?.to_owned();
                let op = match str_field(asg, "op", &at)? {
                    "set" => AssignOp::Set,
                    "add" => AssignOp::Add,
                    "sub" => AssignOp::Sub,
                    "mul" => AssignOp::Mul,
                    "pow" => AssignOp::Pow,
                    other => return Err(invalid(&at, format!("unknown assignment {other:?}"))),
                };
                let value = match asg.get("value") {
                    None | Some(Value::Null) => None,
                    Some(v) => Some(as_f64(v, &format!("{at}.value"))?),
                };
                let id = ActionId(self.host.assigns.len() as u32);
                self.names.set_action(id, name);
                self.host.assigns.push(Assign { var, op, value });
                ActionSpec::custom(id)
            } else if a.contains_key("type") {
                // A named built-in action (raise/send/cancel), allowed for convenience.
                self.inline_action(a, &at)?
            } else {
                return Err(invalid(&at, "an action needs \"assign\" or \"type\""));
            };
            self.actions.insert(name.to_owned(), spec);
        }
        Ok(())
    }

    fn guard_ref(&mut self, v: &Value, at: &str) -> Result<GuardSpec, JsonError> {
        match v {
            Value::String(name) => self
                .guards
                .get(name)
                .cloned()
                .ok_or_else(|| JsonError::UnknownGuard { at: at.to_owned(), name: name.clone() }),
            Value::Object(_) => self.check(v, at),
            _ => Err(invalid(at, "a guard is a name")),
        }
    }

    fn inline_action(&mut self, a: &Map<String, Value>, at: &str) -> Result<ActionSpec, JsonError> {
        for key in a.keys() {
            if !["type", "event", "delay_ms", "id", "guard"].contains(&key.as_str()) {
                return Err(invalid(at, format!("unknown action key {key:?}")));
            }
        }
        let kind = str_field(a, "type", at)?;
        let mut spec = match kind {
            "raise" => ActionSpec::raise(str_field(a, "event", at)?),
            "send" => {
                let event = str_field(a, "event", at)?;
                let id = match a.get("id") {
                    None | Some(Value::Null) => None,
                    Some(v) => Some(v.as_str().ok_or_else(|| invalid(at, "\"id\" must be a string"))?),
                };
                match a.get("delay_ms") {
                    None | Some(Value::Null) => {
                        let mut s = ActionSpec::send(event);
                        if let Some(id) = id {
                            s = ActionSpec::send_delayed(event, 0, Some(id));
                        }
                        s
                    }
                    Some(d) => {
                        let ms = d
                            .as_u64()
                            .ok_or_else(|| invalid(at, "\"delay_ms\" must be a non-negative integer"))?;
                        ActionSpec::send_delayed(event, ms, id)
                    }
                }
            }
            "cancel" => ActionSpec::cancel(str_field(a, "id", at)?),
            other => match self.actions.get(other) {
                Some(named) if !a.contains_key("event") => named.clone(),
                _ => return Err(invalid(at, format!("unknown action type {other:?}"))),
            },
        };
        if let Some(g) = a.get("guard") {
            spec = spec.when(self.guard_ref(g, &format!("{at}.guard"))?);
        }
        Ok(spec)
    }

    fn action_list(&mut self, v: Option<&Value>, at: &str) -> Result<Vec<ActionSpec>, JsonError> {
        let items: Vec<&Value> = match v {
            None | Some(Value::Null) => return Ok(Vec::new()),
            Some(Value::Array(list)) => list.iter().collect(),
            Some(single) => vec![single],
        };
        let mut out = Vec::with_capacity(items.len());
        for (i, item) in items.into_iter().enumerate() {
            let at = format!("{at}[{i}]");
            out.push(match item {
                Value::String(name) => self
                    .actions
                    .get(name)
                    .cloned()
                    .ok_or_else(|| JsonError::UnknownAction { at: at.clone(), name: name.clone() })?,
                Value::Object(obj) => self.inline_action(obj, &at)?,
                _ => return Err(invalid(&at, "an action is a name or an object")),
            });
        }
        Ok(out)
    }

    /// Target path(s): absolute, optionally written `#<machine id>.<path>`.
    fn targets(v: Option<&Value>, machine_id: &str, at: &str) -> Result<Vec<String>, JsonError> {
        let fix = |s: &str| -> String {
            let hashed = format!("#{machine_id}.");
            match s.strip_prefix(&hashed) {
                Some(rest) => rest.to_owned(),
                None => s.to_owned(),
            }
        };
        match v {
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(Value::String(s)) => Ok(vec![fix(s)]),
            Some(Value::Array(list)) => list
                .iter()
                .map(|t| t.as_str().map(fix).ok_or_else(|| invalid(at, "targets are path strings")))
                .collect(),
            Some(_) => Err(invalid(at, "a target is a path or an array of paths")),
        }
    }

    /// One transition value (string / object) or an array of them, appended with `base`'s trigger.
    fn transitions(
        &mut self,
        b: &mut ChartBuilder,
        node: NodeRef,
        base: &TransitionSpec,
        v: &Value,
        at: &str,
        machine_id: &str,
    ) -> Result<(), JsonError> {
        let items: Vec<&Value> = match v {
            Value::Array(list) => list.iter().collect(),
            Value::Null => Vec::new(),
            single => vec![single],
        };
        for (i, item) in items.into_iter().enumerate() {
            let at = format!("{at}[{i}]");
            let mut spec = base.clone();
            match item {
                Value::String(_) => spec.targets = Self::targets(Some(item), machine_id, &at)?,
                Value::Object(t) => {
                    for key in t.keys() {
                        if !TRANSITION_KEYS.contains(&key.as_str()) {
                            return Err(invalid(&at, format!("unknown transition key {key:?}")));
                        }
                    }
                    spec.targets = Self::targets(t.get("target"), machine_id, &format!("{at}.target"))?;
                    if let Some(g) = t.get("guard") {
                        spec.guard = Some(self.guard_ref(g, &format!("{at}.guard"))?);
                    }
                    spec.actions = self.action_list(t.get("actions"), &format!("{at}.actions"))?;
                    spec.reenter = match t.get("reenter") {
                        None | Some(Value::Null) => false,
                        Some(v) => {
                            v.as_bool().ok_or_else(|| invalid(&at, "\"reenter\" must be a boolean"))?
                        }
                    };
                }
                _ => return Err(invalid(&at, "a transition is a target path or an object")),
            }
            b.add_transition(node, spec)?;
        }
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn node(
        &mut self,
        b: &mut ChartBuilder,
        node: NodeRef,
        path: &str,
        obj: &Map<String, Value>,
        at: &str,
        is_root: bool,
        machine_id: &str,
    ) -> Result<(), JsonError> {
        for key in obj.keys() {
            let allowed = NODE_KEYS.contains(&key.as_str()) || (is_root && ROOT_KEYS.contains(&key.as_str()));
            if !allowed {
                return Err(invalid(at, format!("unknown key {key:?}")));
            }
        }
        let is_history = obj.get("type").and_then(Value::as_str) == Some("history");
        // Children first (document order), so `initial` can name them.
        if let Some(states) = obj.get("states") {
            let states = states.as_object().ok_or_else(|| invalid(at, "\"states\" must be an object"))?;
            for (key, child) in states {
                let cat = format!("{at}.states.{key}");
                let child = child.as_object().ok_or_else(|| invalid(&cat, "a state is an object"))?;
                let kind = match child.get("type").map(|t| t.as_str()) {
                    None | Some(Some("compound" | "atomic")) => NodeKind::State,
                    Some(Some("parallel")) => NodeKind::Parallel,
                    Some(Some("final")) => NodeKind::Final,
                    Some(Some("history")) => match child.get("history") {
                        None | Some(Value::Null) => NodeKind::History { deep: false },
                        Some(Value::String(s)) if s == "shallow" => NodeKind::History { deep: false },
                        Some(Value::String(s)) if s == "deep" => NodeKind::History { deep: true },
                        Some(_) => return Err(invalid(&cat, "\"history\" is \"shallow\" or \"deep\"")),
                    },
                    Some(other) => return Err(invalid(&cat, format!("unknown state type {other:?}"))),
                };
                let child_ref = b.add_state(node, key, kind)?;
                let child_path = if path.is_empty() { key.clone() } else { format!("{path}.{key}") };
                self.node(b, child_ref, &child_path, child, &cat, false, machine_id)?;
            }
        }
        if is_history {
            for key in obj.keys() {
                if !["type", "history", "target", "actions", "description", "meta"].contains(&key.as_str()) {
                    return Err(invalid(at, format!("key {key:?} is not allowed on a history state")));
                }
            }
            let targets = Self::targets(obj.get("target"), machine_id, &format!("{at}.target"))?;
            let actions = self.action_list(obj.get("actions"), &format!("{at}.actions"))?;
            if !targets.is_empty() || !actions.is_empty() {
                b.set_history_default(node, targets, actions)?;
            }
            return Ok(());
        }
        if obj.contains_key("target") || obj.contains_key("actions") || obj.contains_key("history") {
            return Err(invalid(
                at,
                "\"target\", \"actions\" and \"history\" are only allowed on history states",
            ));
        }
        // initial: child key, {target, actions}, or an array of absolute paths.
        let child_path = |key: &str| -> String {
            let rel = if path.is_empty() { key.to_owned() } else { format!("{path}.{key}") };
            if b.node(&rel).is_some() { rel } else { key.to_owned() }
        };
        match obj.get("initial") {
            None | Some(Value::Null) => {}
            Some(Value::String(key)) => b.set_initial(node, [child_path(key)], Vec::new())?,
            Some(Value::Array(list)) => {
                let targets =
                    Self::targets(Some(&Value::Array(list.clone())), machine_id, &format!("{at}.initial"))?;
                b.set_initial(node, targets, Vec::new())?;
            }
            Some(Value::Object(init)) => {
                let iat = format!("{at}.initial");
                let targets = match init.get("target") {
                    Some(Value::String(key)) => vec![child_path(key)],
                    other => Self::targets(other, machine_id, &iat)?,
                };
                let actions = self.action_list(init.get("actions"), &format!("{iat}.actions"))?;
                b.set_initial(node, targets, actions)?;
            }
            Some(_) => return Err(invalid(at, "\"initial\" is a key, an object or an array of paths")),
        }
        let entry = self.action_list(obj.get("entry"), &format!("{at}.entry"))?;
        for a in entry {
            b.add_entry(node, a)?;
        }
        let exit = self.action_list(obj.get("exit"), &format!("{at}.exit"))?;
        for a in exit {
            b.add_exit(node, a)?;
        }
        if let Some(v) = obj.get("onDone") {
            self.transitions(b, node, &TransitionSpec::on_done(), v, &format!("{at}.onDone"), machine_id)?;
        }
        if let Some(on) = obj.get("on") {
            let on = on.as_object().ok_or_else(|| invalid(at, "\"on\" must be an object"))?;
            for (descriptor, v) in on {
                let tat = format!("{at}.on.{descriptor}");
                self.transitions(b, node, &TransitionSpec::on(descriptor.clone()), v, &tat, machine_id)?;
            }
        }
        if let Some(v) = obj.get("always") {
            self.transitions(b, node, &TransitionSpec::always(), v, &format!("{at}.always"), machine_id)?;
        }
        if let Some(after) = obj.get("after") {
            let after = after.as_object().ok_or_else(|| invalid(at, "\"after\" must be an object"))?;
            for (key, v) in after {
                let tat = format!("{at}.after.{key}");
                let spec = match key.parse::<u64>() {
                    Ok(ms) => TransitionSpec::after(ms),
                    // A named delay: the context variable of that name, in ms, at entry.
                    Err(_) if key.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') => {
                        let delays = &mut self.host.delays;
                        let id = u32::try_from(delays.len())
                            .map_err(|_| invalid(&tat, "too many computed delays"))?;
                        delays.push(key.clone());
                        TransitionSpec::after_computed(DelayId(id), key.clone())
                    }
                    Err(_) => return Err(invalid(&tat, "an after key is a delay in ms or a delay's name")),
                };
                self.transitions(b, node, &spec, v, &tat, machine_id)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Interpreter;

    #[test]
    fn host_assign_and_check() {
        let mut host = JsonHost {
            checks: vec![VarCheck { var: "i".into(), op: CmpOp::Eq, value: 8.0 }],
            assigns: vec![
                Assign { var: "i".into(), op: AssignOp::Pow, value: Some(3.0) },
                Assign { var: "j".into(), op: AssignOp::Add, value: Some(1.0) },
            ],
            delays: Vec::new(),
        };
        let mut ctx = JsonContext::new();
        ctx.insert("i".into(), Value::from(2));
        ctx.insert("j".into(), Value::Null);
        let ev = EventRef::new("x");
        assert!(!host.guard(GuardId(0), &ctx, &ev));
        host.action(ActionId(0), &mut ctx, &ev);
        assert_eq!(ctx["i"], Value::from(8));
        assert!(host.guard(GuardId(0), &ctx, &ev));
        host.action(ActionId(1), &mut ctx, &ev);
        assert_eq!(ctx["j"], Value::Null, "arithmetic on null stays null");
    }

    #[test]
    fn loads_initial_forms_and_runs() {
        let doc = serde_json::json!({
            "actions": [{"name": "inc", "assign": {"var": "x", "op": "add", "value": 1}}],
            "machine": {"id": "m", "initial": {"target": "a", "actions": ["inc"]}, "context": {"x": 0},
              "states": {
                "a": {"initial": ["a.p.r1.y", "a.p.r2"], "states": {
                    "p": {"type": "parallel", "states": {
                        "r1": {"states": {"x": {}, "y": {}}},
                        "r2": {"initial": "w", "states": {"v": {}, "w": {}}}}}}},
                "b": {}}}
        });
        let loaded = load(&doc).unwrap();
        let mut m = Interpreter::new(&loaded.chart, loaded.host.clone(), loaded.context.clone());
        m.start().unwrap();
        assert_eq!(m.active_atomic_paths(), ["a.p.r1.y", "a.p.r2.w"]);
        assert_eq!(m.context()["x"], Value::from(1));
    }

    #[test]
    fn rejects_unknown_keys_and_names() {
        let bad_key = serde_json::json!({"machine": {"states": {"a": {"onn": {}}}}});
        assert!(matches!(load(&bad_key), Err(JsonError::Invalid { .. })));
        let bad_guard =
            serde_json::json!({"machine": {"states": {"a": {"on": {"t": {"target": "a", "guard": "g"}}}}}});
        assert!(matches!(load(&bad_guard), Err(JsonError::UnknownGuard { .. })));
        let bad_target = serde_json::json!({"machine": {"states": {"a": {"on": {"t": "zz"}}}}});
        assert!(matches!(load(&bad_target), Err(JsonError::Build(BuildError::UnknownTarget { .. }))));
    }
}
