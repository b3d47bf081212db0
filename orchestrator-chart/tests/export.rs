//! Exporters: every conformance fixture exports to XState JSON, Mermaid and DOT; the outputs are
//! structurally sound and complete; the XState export loads back into an equivalent chart;
//! golden snapshots of a small hand-written chart pin the formats.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeSet, HashSet};
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use orchestrator_chart::export::{self, NameTable, Names};
use orchestrator_chart::json::{self, AssignOp, CmpOp, JsonChart};
use orchestrator_chart::{
    ActionId, ActionSpec, Chart, ChartBuilder, GuardId, GuardSpec, NodeKind, StateKind, TransitionSpec,
    Trigger,
};
use serde_json::{Map, Value, json};

fn fixture_dir() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/conformance/statecharts"))
}

/// Every fixture, loaded; `None` (after printing why) when the fixture directory is missing
/// outside CI.
fn fixtures() -> Option<Vec<(String, JsonChart)>> {
    let dir = fixture_dir();
    if !dir.is_dir() {
        assert!(
            std::env::var_os("CI").is_none(),
            "conformance fixtures missing at {} (required when CI is set)",
            dir.display()
        );
        println!("SKIP export tests over fixtures: {} not found", dir.display());
        return None;
    }
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("read fixture dir")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no fixtures in {}", dir.display());
    Some(
        files
            .iter()
            .map(|p| {
                let name = p.file_name().unwrap().to_string_lossy().into_owned();
                let loaded = json::load_file(p).unwrap_or_else(|e| panic!("{name}: {e}"));
                (name, loaded)
            })
            .collect(),
    )
}

/// Every state path of an XState config, with its `type` (root excluded).
fn xstate_states(node: &Value, prefix: &str, out: &mut Vec<(String, Option<String>)>) {
    if let Some(states) = node.get("states").and_then(Value::as_object) {
        for (key, child) in states {
            let path = if prefix.is_empty() { key.clone() } else { format!("{prefix}.{key}") };
            out.push((path.clone(), child.get("type").and_then(Value::as_str).map(str::to_owned)));
            xstate_states(child, &path, out);
        }
    }
}

/// How many transitions an XState config lists (one per `on` key / `after` delay entry).
fn xstate_transition_count(node: &Value) -> usize {
    let count = |v: Option<&Value>| match v {
        None => 0,
        Some(Value::Array(a)) => a.len(),
        Some(_) => 1,
    };
    let mut n = count(node.get("onDone")) + count(node.get("always"));
    for key in ["on", "after"] {
        if let Some(map) = node.get(key).and_then(Value::as_object) {
            n += map.values().map(|v| count(Some(v))).sum::<usize>();
        }
    }
    if let Some(states) = node.get("states").and_then(Value::as_object) {
        n += states.values().map(xstate_transition_count).sum::<usize>();
    }
    n
}

fn expected_xstate_type(kind: StateKind) -> Option<&'static str> {
    match kind {
        StateKind::Atomic | StateKind::Compound => None,
        StateKind::Parallel => Some("parallel"),
        StateKind::Final => Some("final"),
        StateKind::History { .. } => Some("history"),
    }
}

fn check_xstate(name: &str, chart: &Chart, names: &dyn Names) {
    let x = export::to_xstate_json(chart, names);
    assert_eq!(x["id"], chart.machine_id(), "{name}");
    let mut states = Vec::new();
    xstate_states(&x, "", &mut states);
    let expected: Vec<(String, Option<String>)> = chart.states()[1..]
        .iter()
        .map(|s| (s.path().to_owned(), expected_xstate_type(s.kind()).map(str::to_owned)))
        .collect();
    let mut sorted_states = states.clone();
    sorted_states.sort();
    let mut sorted_expected = expected.clone();
    sorted_expected.sort();
    assert_eq!(sorted_states, sorted_expected, "{name}: XState states");
    let transitions: usize = chart
        .transitions()
        .iter()
        .map(|t| match t.trigger() {
            Trigger::Events(ds) => ds.len(),
            Trigger::Eventless | Trigger::After(_) => 1,
        })
        .sum();
    assert_eq!(xstate_transition_count(&x), transitions, "{name}: XState transitions");
    // Every compound state names its initial child.
    for st in chart.states() {
        if st.kind() == StateKind::Compound {
            let mut node = &x;
            for key in st.path().split('.').filter(|k| !k.is_empty()) {
                node = &node["states"][key];
            }
            let initial = match &node["initial"] {
                Value::String(s) => s.clone(),
                other => other["target"].as_str().unwrap().to_owned(),
            };
            assert!(node["states"].get(&initial).is_some(), "{name}: initial {initial} of {:?}", st.path());
        }
    }
}

/// Mermaid text with its entity codes (`#59;`, `#quot;`, …) decoded; panics if the raw text holds
/// a character that ends a label or statement or would be read as HTML or an entity.
fn mermaid_decode(name: &str, text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(pos) = rest.find(['#', ';', ':', '"', '<', '>', '&', '%', '\\', '\n', '\r']) {
        out.push_str(&rest[..pos]);
        let tail = &rest[pos..];
        assert!(tail.starts_with('#'), "{name}: raw {:?} in Mermaid text {text:?}", tail.chars().next());
        let end = tail.find(';').unwrap_or_else(|| panic!("{name}: bare # in {text:?}"));
        let code = &tail[1..end];
        out.push(match code {
            "quot" => '"',
            "lt" => '<',
            "gt" => '>',
            "amp" => '&',
            n => char::from_u32(n.parse().unwrap_or_else(|_| panic!("{name}: entity {code:?} in {text:?}")))
                .unwrap(),
        });
        rest = &tail[end + 1..];
    }
    out.push_str(rest);
    out
}

/// A minimal structural reading of Mermaid `stateDiagram-v2`: balanced blocks, `--` only inside
/// blocks, terminated notes, every id used by an arrow, a description or a note declared. Returns the declared ids with
/// their labels, and the arrow labels.
fn parse_mermaid(name: &str, text: &str) -> (Vec<(String, String)>, Vec<String>) {
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("stateDiagram-v2"), "{name}");
    let mut depth = 0usize;
    let mut declared: Vec<(String, String)> = Vec::new();
    let mut used: Vec<String> = Vec::new();
    let mut labels = Vec::new();
    let mut in_note = false;
    for line in lines {
        let l = line.trim();
        assert!(!l.is_empty(), "{name}: empty line");
        if in_note {
            in_note = !l.eq_ignore_ascii_case("end note");
            assert!(!in_note || !l.to_ascii_lowercase().contains("end note"), "{name}: {l}");
        } else if let Some(id) = l.strip_prefix("note right of ") {
            used.push(id.to_owned());
            in_note = true;
        } else if l == "}" {
            assert!(depth > 0, "{name}: unbalanced }}");
            depth -= 1;
        } else if l == "--" {
            assert!(depth > 0, "{name}: -- outside a block");
        } else if let Some(rest) = l.strip_prefix("state \"") {
            let (label, rest) = rest.split_once("\" as ").unwrap_or_else(|| panic!("{name}: {l}"));
            let label = mermaid_decode(name, label);
            let id = match rest.strip_suffix(" {") {
                Some(id) => {
                    depth += 1;
                    id
                }
                None => rest,
            };
            assert!(
                !id.is_empty() && id.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'),
                "{name}: bad id {id:?}"
            );
            declared.push((id.to_owned(), label));
        } else if let Some((from, rest)) = l.split_once(" --> ") {
            let (to, label) = match rest.split_once(" : ") {
                Some((to, label)) => (to, Some(label)),
                None => (rest, None),
            };
            for end in [from, to] {
                if end != "[*]" {
                    used.push(end.to_owned());
                }
            }
            // Arrows inside a block are only `[*]` arrows (Mermaid moves the states an arrow
            // names into the block the arrow is in).
            assert!(depth == 0 || from == "[*]" || to == "[*]", "{name}: arrow inside a block: {l}");
            if let Some(label) = label {
                labels.push(mermaid_decode(name, label));
            }
        } else if let Some((id, desc)) = l.split_once(" : ") {
            mermaid_decode(name, desc);
            used.push(id.to_owned());
        } else {
            panic!("{name}: unexpected Mermaid line {l:?}");
        }
    }
    assert_eq!(depth, 0, "{name}: unbalanced blocks");
    assert!(!in_note, "{name}: unterminated note");
    let ids: HashSet<&str> = declared.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(ids.len(), declared.len(), "{name}: an id is declared twice");
    for u in &used {
        assert!(ids.contains(u.as_str()), "{name}: {u} is used but not declared");
    }
    (declared, labels)
}

/// Splits DOT text into tokens outside strings, checking braces and brackets balance and
/// returning `(declared nodes, edge endpoints, clusters, lhead/ltail values, labels)`.
struct DotFacts {
    nodes: HashSet<String>,
    clusters: HashSet<String>,
    endpoints: Vec<String>,
    cluster_refs: Vec<String>,
    labels: Vec<String>,
}

fn unquote(s: &str) -> String {
    let inner = s.strip_prefix('"').and_then(|s| s.strip_suffix('"')).unwrap_or_else(|| panic!("{s}"));
    inner.replace("\\\"", "\"").replace("\\\\", "\\")
}

fn parse_dot(name: &str, text: &str) -> DotFacts {
    // Balance outside quoted strings.
    let (mut braces, mut brackets, mut in_str, mut escaped) = (0i32, 0i32, false, false);
    for c in text.chars() {
        if in_str {
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_str = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_str = true,
            '{' => braces += 1,
            '}' => braces -= 1,
            '[' => brackets += 1,
            ']' => brackets -= 1,
            _ => {}
        }
        assert!(braces >= 0 && brackets >= 0, "{name}: unbalanced DOT");
    }
    assert!(!in_str && braces == 0 && brackets == 0, "{name}: unbalanced DOT");
    let mut facts = DotFacts {
        nodes: HashSet::new(),
        clusters: HashSet::new(),
        endpoints: Vec::new(),
        cluster_refs: Vec::new(),
        labels: Vec::new(),
    };
    let quoted = |s: &str| -> (String, usize) {
        // The leading quoted string of `s` and its byte length.
        let mut escaped = false;
        for (i, c) in s.char_indices().skip(1) {
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => return (unquote(&s[..=i]), i + 1),
                _ => {}
            }
        }
        panic!("{name}: unterminated string in {s}");
    };
    for line in text.lines().map(str::trim) {
        if let Some(rest) = line.strip_prefix("subgraph ") {
            facts.clusters.insert(quoted(rest).0);
            continue;
        }
        if !line.starts_with('"') {
            continue;
        }
        let (first, len) = quoted(line);
        let rest = &line[len..];
        let attrs = if let Some(edge) = rest.strip_prefix(" -> ") {
            let (second, len2) = quoted(edge);
            facts.endpoints.push(first);
            facts.endpoints.push(second);
            &edge[len2..]
        } else {
            facts.nodes.insert(first);
            rest
        };
        for key in ["lhead=", "ltail="] {
            if let Some(pos) = attrs.find(key) {
                facts.cluster_refs.push(quoted(&attrs[pos + key.len()..]).0);
            }
        }
        if let Some(pos) = attrs.find("label=") {
            facts.labels.push(quoted(&attrs[pos + "label=".len()..]).0);
        }
    }
    for e in &facts.endpoints {
        assert!(facts.nodes.contains(e), "{name}: edge endpoint {e} is not declared");
    }
    for c in &facts.cluster_refs {
        assert!(facts.clusters.contains(c), "{name}: {c} is not a subgraph");
        assert!(c.starts_with("cluster_"), "{name}: {c}");
    }
    facts
}

fn check_mermaid(name: &str, chart: &Chart, names: &dyn Names) {
    let text = export::to_mermaid(chart, names);
    let (declared, labels) = parse_mermaid(name, &text);
    let declared_labels: BTreeSet<&str> = declared.iter().map(|(_, l)| l.as_str()).collect();
    for st in &chart.states()[1..] {
        let label = match st.kind() {
            StateKind::History { deep: true } => "H*",
            StateKind::History { deep: false } => "H",
            _ => st.key(),
        };
        assert!(declared_labels.contains(label), "{name}: state {} missing in\n{text}", st.path());
    }
    let arrows = chart.transitions().iter().map(|t| t.targets().len().max(1)).sum::<usize>();
    let label_set: BTreeSet<&str> = labels.iter().map(String::as_str).collect();
    for t in chart.transitions() {
        let label = export::transition_label(chart, names, t);
        assert!(label_set.contains(label.as_str()), "{name}: transition label {label:?} missing in\n{text}");
    }
    assert!(
        labels.len() >= arrows,
        "{name}: {} labelled arrows for {arrows} transition arrows",
        labels.len()
    );
}

fn check_dot(name: &str, chart: &Chart, names: &dyn Names) -> String {
    let text = export::to_dot(chart, names);
    assert!(text.starts_with(&format!("digraph \"{}\" {{\n", chart.machine_id())), "{name}");
    assert!(text.contains("compound=true;"), "{name}");
    let facts = parse_dot(name, &text);
    for st in &chart.states()[1..] {
        match st.kind() {
            StateKind::Compound | StateKind::Parallel => {
                let cluster = format!("cluster_{}", st.path());
                assert!(facts.clusters.contains(&cluster), "{name}: {cluster} missing");
            }
            _ => assert!(facts.nodes.contains(st.path()), "{name}: node {} missing", st.path()),
        }
    }
    let labels: BTreeSet<&str> = facts.labels.iter().map(String::as_str).collect();
    for t in chart.transitions() {
        let label = export::transition_label(chart, names, t);
        assert!(labels.contains(label.as_str()), "{name}: transition label {label:?} missing in\n{text}");
    }
    text
}

/// Runs `dot -Tsvg` on `text` if Graphviz is installed; `None` if it is not.
fn graphviz(text: &str) -> Option<Result<(), String>> {
    let mut child = match Command::new("dot")
        .arg("-Tsvg")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
    {
        Ok(child) => child,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
        Err(e) => return Some(Err(e.to_string())),
    };
    child.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    // Graphviz reports some mistakes (an unknown `lhead` cluster, a bad attribute) as warnings
    // and still exits with 0: any output on stderr is a failure.
    Some(if out.status.success() && out.stderr.is_empty() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    })
}

#[test]
fn every_fixture_exports_completely_and_soundly() {
    let Some(fixtures) = fixtures() else { return };
    let mut graphviz_missing = false;
    for (name, loaded) in &fixtures {
        check_xstate(name, &loaded.chart, &loaded.names);
        check_mermaid(name, &loaded.chart, &loaded.names);
        let dot = check_dot(name, &loaded.chart, &loaded.names);
        if !graphviz_missing {
            match graphviz(&dot) {
                None => graphviz_missing = true,
                Some(Ok(())) => {}
                Some(Err(e)) => panic!("{name}: dot -Tsvg failed: {e}\n{dot}"),
            }
        }
    }
    if graphviz_missing {
        println!("SKIP dot -Tsvg: Graphviz `dot` is not installed");
    }
}

// ---------------------------------------------------------------------------------------------
// Round trip: XState export -> fixture JSON -> chart.

/// `#<id>.<path>` -> `<path>`.
fn strip_hash(v: &Value, id: &str) -> Value {
    let s = v.as_str().unwrap();
    Value::from(s.strip_prefix(&format!("#{id}.")).unwrap_or(s))
}

fn back_guard(g: &Value, id: &str) -> Value {
    match g {
        Value::String(_) => g.clone(),
        Value::Object(o) => match o["type"].as_str().unwrap() {
            "xstate.stateIn" => json!({ "in": strip_hash(&o["params"]["stateValue"], id) }),
            "xstate.not" => {
                json!({ "not_in": strip_hash(&o["params"]["guard"]["params"]["stateValue"], id) })
            }
            "const" => json!({ "const": o["params"]["value"] }),
            other => panic!("unknown guard type {other}"),
        },
        _ => panic!("bad guard {g}"),
    }
}

fn back_action(a: &Value, id: &str) -> Value {
    let Value::Object(o) = a else { return a.clone() };
    let p = &o["params"];
    let mut out = match o["type"].as_str().unwrap() {
        "xstate.raise" => json!({ "type": "raise", "event": p["event"]["type"] }),
        "xstate.sendTo" => {
            let mut s = json!({ "type": "send", "event": p["event"]["type"] });
            if let Some(d) = p.get("delay") {
                s["delay_ms"] = d.clone();
            }
            if let Some(i) = p.get("id") {
                s["id"] = i.clone();
            }
            s
        }
        "xstate.cancel" => json!({ "type": "cancel", "id": p["sendId"] }),
        custom => json!({ "type": custom }),
    };
    if let Some(g) = p.get("guard") {
        out["guard"] = back_guard(g, id);
    }
    out
}

fn back_actions(v: &Value, id: &str) -> Value {
    Value::Array(v.as_array().unwrap().iter().map(|a| back_action(a, id)).collect())
}

fn back_transitions(v: &Value, id: &str) -> Value {
    let one = |t: &Value| match t {
        Value::Object(o) => {
            let mut o = o.clone();
            if let Some(g) = o.get("guard") {
                o["guard"] = back_guard(g, id);
            }
            if let Some(a) = o.get("actions") {
                o["actions"] = back_actions(a, id);
            }
            Value::Object(o)
        }
        other => other.clone(),
    };
    match v {
        Value::Array(list) => Value::Array(list.iter().map(one).collect()),
        single => one(single),
    }
}

/// Maps an exported XState node back to the fixture format: XState's done event names,
/// parameterized built-in guards / actions and `meta.initial` back to the fixture spelling
/// (`#m.` targets are accepted by the loader as they are).
fn back_node(node: &mut Map<String, Value>, id: &str) {
    if let Some(deep) = node.get("meta").and_then(|m| m.get("initial")).cloned() {
        match node.get_mut("initial") {
            Some(Value::Object(init)) => {
                init.insert("target".into(), deep);
            }
            _ => {
                node.insert("initial".into(), deep);
            }
        }
    }
    if let Some(Value::Object(init)) = node.get_mut("initial")
        && let Some(a) = init.get("actions")
    {
        let a = back_actions(a, id);
        init.insert("actions".into(), a);
    }
    for key in ["entry", "exit", "actions"] {
        if let Some(a) = node.get(key) {
            let a = back_actions(a, id);
            node.insert(key.into(), a);
        }
    }
    for key in ["onDone", "always"] {
        if let Some(t) = node.get(key) {
            let t = back_transitions(t, id);
            node.insert(key.into(), t);
        }
    }
    let done_prefix = format!("xstate.done.state.{id}.");
    if let Some(Value::Object(on)) = node.get("on") {
        let mapped: Map<String, Value> = on
            .iter()
            .map(|(k, v)| {
                let key = if k == "xstate.done.state.*" {
                    "done.state.*".to_owned()
                } else if let Some(rest) = k.strip_prefix(&done_prefix) {
                    format!("done.state.{rest}")
                } else {
                    k.clone()
                };
                (key, back_transitions(v, id))
            })
            .collect();
        node.insert("on".into(), Value::Object(mapped));
    }
    if let Some(Value::Object(after)) = node.get("after") {
        let mapped: Map<String, Value> =
            after.iter().map(|(k, v)| (k.clone(), back_transitions(v, id))).collect();
        node.insert("after".into(), Value::Object(mapped));
    }
    if let Some(Value::Object(states)) = node.get_mut("states") {
        for child in states.values_mut() {
            back_node(child.as_object_mut().unwrap(), id);
        }
    }
}

/// The fixture-format document for an exported chart: the machine mapped back, plus `guards`
/// and `actions` entries rebuilt from the host and the names (in id order, so ids match).
fn reload_document(loaded: &JsonChart, exported: &Value) -> Value {
    let mut machine = exported.as_object().unwrap().clone();
    let id = loaded.chart.machine_id().to_owned();
    back_node(&mut machine, &id);
    let guards: Vec<Value> = loaded
        .host
        .checks
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let op = match c.op {
                CmpOp::Eq => "eq",
                CmpOp::Ne => "ne",
                CmpOp::Lt => "lt",
                CmpOp::Le => "le",
                CmpOp::Gt => "gt",
                CmpOp::Ge => "ge",
            };
            let name = export::guard_name(&loaded.names, GuardId(i as u32));
            json!({ "name": name, "check": { "var": c.var, "op": op, "value": c.value } })
        })
        .collect();
    let actions: Vec<Value> = loaded
        .host
        .assigns
        .iter()
        .enumerate()
        .map(|(i, a)| {
            let op = match a.op {
                AssignOp::Set => "set",
                AssignOp::Add => "add",
                AssignOp::Sub => "sub",
                AssignOp::Mul => "mul",
                AssignOp::Pow => "pow",
            };
            let name = export::action_name(&loaded.names, ActionId(i as u32));
            json!({ "name": name, "assign": { "var": a.var, "op": op, "value": a.value } })
        })
        .collect();
    json!({ "guards": guards, "actions": actions, "machine": Value::Object(machine) })
}

fn assert_equivalent(name: &str, a: &Chart, b: &Chart) {
    assert_eq!(a.machine_id(), b.machine_id(), "{name}");
    assert_eq!(a.len(), b.len(), "{name}: state count");
    for (x, y) in a.states().iter().zip(b.states()) {
        assert_eq!(format!("{x:?}"), format!("{y:?}"), "{name}: state {:?}", x.path());
    }
    assert_eq!(a.transitions().len(), b.transitions().len(), "{name}: transition count");
    for (x, y) in a.transitions().iter().zip(b.transitions()) {
        assert_eq!(format!("{x:?}"), format!("{y:?}"), "{name}: transition of {:?}", a.path(x.source()));
    }
    assert_eq!(a.fingerprint(), b.fingerprint(), "{name}");
}

#[test]
fn xstate_export_round_trips_every_fixture() {
    let Some(fixtures) = fixtures() else { return };
    for (name, loaded) in &fixtures {
        let exported = export::to_xstate_json(&loaded.chart, &loaded.names);
        let doc = reload_document(loaded, &exported);
        let text = serde_json::to_string(&doc).unwrap();
        let back = json::load_str(&text).unwrap_or_else(|e| panic!("{name}: {e}\n{text}"));
        assert_equivalent(name, &loaded.chart, &back.chart);
        // Names survive too.
        let again = export::to_xstate_json(&back.chart, &back.names);
        assert_eq!(exported, again, "{name}: second export differs");
    }
}

#[test]
fn round_trip_keeps_what_xstate_cannot_express() {
    // Deep / multi-region initial with actions, history default actions, conditional and
    // delayed actions, inline guards, done events of other states, wildcards.
    let doc = json!({
        "guards": [{"name": "big", "check": {"var": "x", "op": "gt", "value": 2}}],
        "actions": [{"name": "inc", "assign": {"var": "x", "op": "add", "value": 1}}],
        "machine": {"id": "m", "initial": "a", "context": {"x": 0}, "states": {
            "a": {"initial": {"target": ["a.p.r1.y", "a.p.r2"], "actions": ["inc"]}, "states": {
                "h": {"type": "history", "history": "deep", "target": "a.p.r1.x",
                      "actions": [{"type": "raise", "event": "restored"}]},
                "p": {"type": "parallel", "states": {
                    "r1": {"states": {"x": {}, "y": {"type": "final"}}},
                    "r2": {"states": {"v": {"on": {"w": "a.p.r2.w"}}, "w": {"type": "final"}}}}}},
                "on": {"done.state.a.p": {"actions": ["inc"]}, "foo.*": {"target": "b", "reenter": true}}},
            "b": {"entry": [{"type": "send", "event": "s", "delay_ms": 5, "id": "t1"},
                            {"type": "send", "event": "n"},
                            {"type": "cancel", "id": "t1", "guard": "big"},
                            {"type": "inc", "guard": {"var": "x", "op": "le", "value": 1}}],
                  "onDone": "a", "after": {"100": [{"target": "a.h", "guard": {"const": false}}, "a"]},
                  "always": {"guard": {"not_in": "a"}, "actions": ["inc"]},
                  "initial": "b1", "states": {"b1": {"on": {"*": "b.b2"}}, "b2": {"type": "final"}}}}}
    });
    let loaded = json::load(&doc).unwrap();
    assert_eq!(export::guard_name(&loaded.names, GuardId(1)), "x <= 1");
    let exported = export::to_xstate_json(&loaded.chart, &loaded.names);
    let a = &exported["states"]["a"];
    assert_eq!(a["initial"], json!({"target": "p", "actions": ["inc"]}));
    assert_eq!(a["meta"]["initial"], json!(["#m.a.p.r1.y", "#m.a.p.r2"]));
    assert_eq!(a["on"]["xstate.done.state.m.a.p"], json!({"actions": ["inc"]}));
    assert_eq!(a["states"]["h"]["actions"][0]["type"], "xstate.raise");
    let b = &exported["states"]["b"];
    assert_eq!(b["onDone"], "#m.a");
    assert_eq!(b["entry"][2], json!({"type": "xstate.cancel", "params": {"sendId": "t1", "guard": "big"}}));
    let back = json::load_str(&serde_json::to_string(&reload_document(&loaded, &exported)).unwrap()).unwrap();
    assert_equivalent("hand-written", &loaded.chart, &back.chart);
}

// ---------------------------------------------------------------------------------------------
// Golden snapshots.

/// A small chart with a guard, actions, a targetless transition, `after`, `always`, a history
/// state, a parallel state and a final state.
fn door() -> (Chart, NameTable) {
    let mut b = ChartBuilder::new("door");
    let root = b.root();
    let closed = b.add_state(root, "closed", NodeKind::State).unwrap();
    let opened = b.add_state(root, "opened", NodeKind::State).unwrap();
    let ajar = b.add_state(opened, "ajar", NodeKind::State).unwrap();
    b.add_state(opened, "wide", NodeKind::State).unwrap();
    b.add_state(opened, "h", NodeKind::History { deep: false }).unwrap();
    let alarm = b.add_state(root, "alarm", NodeKind::Parallel).unwrap();
    b.add_state(alarm, "light", NodeKind::State).unwrap();
    let siren = b.add_state(alarm, "siren", NodeKind::State).unwrap();
    let off = b.add_state(siren, "off", NodeKind::State).unwrap();
    b.add_state(siren, "on", NodeKind::Final).unwrap();
    b.add_state(root, "gone", NodeKind::Final).unwrap();
    b.add_transition(
        closed,
        TransitionSpec::on("open")
            .guard(GuardSpec::Custom(GuardId(0)))
            .target("opened")
            .action(ActionSpec::custom(ActionId(0))),
    )
    .unwrap();
    b.add_transition(closed, TransitionSpec::on("knock").action(ActionSpec::raise("knocked"))).unwrap();
    b.add_entry(opened, ActionSpec::send_delayed("tick", 100, Some("t"))).unwrap();
    b.add_exit(opened, ActionSpec::cancel("t")).unwrap();
    b.add_transition(ajar, TransitionSpec::on("push").target("opened.wide")).unwrap();
    b.add_transition(opened, TransitionSpec::after(5000).target("closed")).unwrap();
    b.add_transition(opened, TransitionSpec::on("break").target("alarm").reenter(true)).unwrap();
    b.add_transition(
        off,
        TransitionSpec::always().guard(GuardSpec::In("alarm.light".into())).target("alarm.siren.on"),
    )
    .unwrap();
    b.add_transition(alarm, TransitionSpec::on_done().target("gone")).unwrap();
    b.add_transition(alarm, TransitionSpec::on("reset").target("opened.h")).unwrap();
    let names = NameTable::new().with_guard(GuardId(0), "isAdmin").with_action(ActionId(0), "log");
    (b.build().unwrap(), names)
}

const DOOR_XSTATE: &str = r##"{
  "id": "door",
  "initial": "closed",
  "states": {
    "closed": {
      "on": {
        "open": {
          "target": "#door.opened",
          "guard": "isAdmin",
          "actions": [
            "log"
          ]
        },
        "knock": {
          "actions": [
            {
              "type": "xstate.raise",
              "params": {
                "event": {
                  "type": "knocked"
                }
              }
            }
          ]
        }
      }
    },
    "opened": {
      "initial": "ajar",
      "entry": [
        {
          "type": "xstate.sendTo",
          "params": {
            "event": {
              "type": "tick"
            },
            "delay": 100,
            "id": "t"
          }
        }
      ],
      "exit": [
        {
          "type": "xstate.cancel",
          "params": {
            "sendId": "t"
          }
        }
      ],
      "on": {
        "break": {
          "target": "#door.alarm",
          "reenter": true
        }
      },
      "after": {
        "5000": "#door.closed"
      },
      "states": {
        "ajar": {
          "on": {
            "push": "#door.opened.wide"
          }
        },
        "wide": {},
        "h": {
          "type": "history",
          "history": "shallow"
        }
      }
    },
    "alarm": {
      "type": "parallel",
      "onDone": "#door.gone",
      "on": {
        "reset": "#door.opened.h"
      },
      "states": {
        "light": {},
        "siren": {
          "initial": "off",
          "states": {
            "off": {
              "always": {
                "target": "#door.alarm.siren.on",
                "guard": {
                  "type": "xstate.stateIn",
                  "params": {
                    "stateValue": "#door.alarm.light"
                  }
                }
              }
            },
            "on": {
              "type": "final"
            }
          }
        }
      }
    },
    "gone": {
      "type": "final"
    }
  }
}"##;

const DOOR_MERMAID: &str = r##"stateDiagram-v2
    [*] --> closed
    state "closed" as closed
    state "opened" as opened {
        [*] --> opened_ajar
        state "ajar" as opened_ajar
        state "wide" as opened_wide
        state "H" as opened_h
    }
    note right of opened
        entry / send(tick, 100ms, id=t)
        exit / cancel(t)
    end note
    state "alarm" as alarm {
        state "light" as alarm_light
        --
        state "siren" as alarm_siren {
            [*] --> alarm_siren_off
            state "off" as alarm_siren_off
            state "on" as alarm_siren_on
            alarm_siren_on --> [*]
        }
    }
    state "gone" as gone
    gone --> [*]
    closed --> opened : open [isAdmin] / log
    closed --> closed : knock / raise(knocked)
    opened --> closed : after 5000ms
    opened --> alarm : break
    opened_ajar --> opened_wide : push
    opened_h --> opened_ajar
    alarm --> gone : done.state.alarm
    alarm --> opened_h : reset
    alarm_siren_off --> alarm_siren_on : always [In(alarm.light)]
"##;

const DOOR_DOT: &str = r##"digraph "door" {
    compound=true;
    rankdir=LR;
    node [shape=box, style=rounded];
    "#initial" [shape=point, width=0.15];
    "closed" [label="closed"];
    subgraph "cluster_opened" {
        label="opened\nentry / send(tick, 100ms, id=t)\nexit / cancel(t)";
        style="rounded";
        "opened#initial" [shape=point, width=0.15];
        "opened.ajar" [label="ajar"];
        "opened.wide" [label="wide"];
        "opened.h" [shape=circle, label="H"];
    }
    subgraph "cluster_alarm" {
        label="alarm";
        style="rounded,bold";
        "alarm.light" [label="light"];
        subgraph "cluster_alarm.siren" {
            label="siren";
            style="rounded,dashed";
            "alarm.siren#initial" [shape=point, width=0.15];
            "alarm.siren.off" [label="off"];
            "alarm.siren.on" [label="on", peripheries=2];
        }
    }
    "gone" [label="gone", peripheries=2];
    "#initial" -> "closed";
    "closed" -> "opened#initial" [label="open [isAdmin] / log", lhead="cluster_opened"];
    "closed" -> "closed" [label="knock / raise(knocked)"];
    "opened#initial" -> "opened.ajar";
    "opened#initial" -> "closed" [label="after 5000ms", ltail="cluster_opened"];
    "opened#initial" -> "alarm.light" [label="break", lhead="cluster_alarm", ltail="cluster_opened"];
    "opened.ajar" -> "opened.wide" [label="push"];
    "opened.h" -> "opened.ajar" [style=dashed];
    "alarm.light" -> "gone" [label="done.state.alarm", ltail="cluster_alarm"];
    "alarm.light" -> "opened.h" [label="reset", ltail="cluster_alarm"];
    "alarm.siren#initial" -> "alarm.siren.off";
    "alarm.siren.off" -> "alarm.siren.on" [label="always [In(alarm.light)]"];
}
"##;

#[test]
fn golden_xstate() {
    let (chart, names) = door();
    let text = serde_json::to_string_pretty(&export::to_xstate_json(&chart, &names)).unwrap();
    assert_eq!(text, DOOR_XSTATE, "actual:\n{text}");
}

#[test]
fn golden_mermaid() {
    let (chart, names) = door();
    let text = export::to_mermaid(&chart, &names);
    assert_eq!(text, DOOR_MERMAID, "actual:\n{text}");
    parse_mermaid("door", &text);
}

#[test]
fn golden_dot() {
    let (chart, names) = door();
    let text = export::to_dot(&chart, &names);
    assert_eq!(text, DOOR_DOT, "actual:\n{text}");
    parse_dot("door", &text);
    match graphviz(&text) {
        None => println!("SKIP dot -Tsvg: Graphviz `dot` is not installed"),
        Some(result) => result.unwrap(),
    }
}

#[test]
fn root_with_transitions_or_parallel_root_gets_a_box() {
    let doc = json!({"machine": {"id": "m-1", "type": "parallel",
        "entry": [{"type": "raise", "event": "go"}],
        "on": {"stop": {"actions": [{"type": "raise", "event": "x"}]}, "reset": "a.a2"},
        "states": {"a": {"states": {"a1": {}, "a2": {}}}, "default": {}}}});
    let loaded = json::load(&doc).unwrap();
    let mermaid = export::to_mermaid(&loaded.chart, &loaded.names);
    parse_mermaid("parallel root", &mermaid);
    assert!(
        mermaid.starts_with("stateDiagram-v2\n    [*] --> m_1\n    state \"m-1\" as m_1 {\n"),
        "{mermaid}"
    );
    assert!(mermaid.contains("state \"default\" as s_default\n"), "{mermaid}");
    assert!(
        mermaid.contains("\n    note right of m_1\n        entry / raise(go)\n    end note\n"),
        "{mermaid}"
    );
    assert!(mermaid.contains("\n    m_1 --> m_1 : stop / raise(x)\n    m_1 --> a_a2 : reset\n"), "{mermaid}");
    let dot = export::to_dot(&loaded.chart, &loaded.names);
    parse_dot("parallel root", &dot);
    assert!(
        dot.contains("subgraph \"cluster_#root\" {\n        label=\"m-1\\nentry / raise(go)\";"),
        "{dot}"
    );
    assert!(dot.contains("\"a#initial\" -> \"a#initial\" [label=\"stop / raise(x)\"];"), "{dot}");
    assert!(dot.contains("\"a#initial\" -> \"a.a2\" [label=\"reset\"];"), "{dot}");
    let x = export::to_xstate_json(&loaded.chart, &loaded.names);
    assert_eq!(x["type"], "parallel");
    assert_eq!(x["on"]["reset"], "#m-1.a.a2");
}

#[test]
fn labels_are_escaped() {
    let mut b = ChartBuilder::new("q\"m");
    let root = b.root();
    let a = b.add_state(root, "a:b", NodeKind::State).unwrap();
    b.add_state(root, "a;b", NodeKind::State).unwrap();
    let note = b.add_state(root, "note", NodeKind::State).unwrap();
    b.add_state(note, "start", NodeKind::State).unwrap();
    b.add_state(root, "<b>\"x\"</b>", NodeKind::Final).unwrap();
    b.add_entry(root, ActionSpec::custom(ActionId(1))).unwrap();
    b.add_transition(a, TransitionSpec::on("ev:1").target("a;b").action(ActionSpec::custom(ActionId(0))))
        .unwrap();
    b.add_transition(
        a,
        TransitionSpec::on("go")
            .guard(GuardSpec::Custom(GuardId(0)))
            .target("<b>\"x\"</b>")
            .action(ActionSpec::custom(ActionId(2))),
    )
    .unwrap();
    b.add_transition(a, TransitionSpec::on("in").target("note")).unwrap();
    let chart = b.build().unwrap();
    // What closure source text used to look like: several lines, `|`, quotes, `<>`, `#`, `;`.
    let closure = "|ctx, _, out|\n{\n    out.say(\"a|b\"); // Vec<u8> #1 & 50%\n}\r\n\\N";
    let names = NameTable::from_lists([closure], ["say \"hi\"; #1", "send END note", closure]);
    let mermaid = export::to_mermaid(&chart, &names);
    parse_mermaid("escaped", &mermaid);
    assert!(mermaid.contains("state \"q#quot;m\" as q_m {"), "{mermaid}");
    assert!(mermaid.contains("state \"note\" as s_note {"), "{mermaid}");
    assert!(mermaid.contains("state \"start\" as note_start_s\n"), "{mermaid}");
    assert!(mermaid.contains("state \"#lt;b#gt;#quot;x#quot;#lt;/b#gt;\" as _b__x___b_\n"), "{mermaid}");
    assert!(
        mermaid.contains("note right of q_m\n        entry / send END\u{a0}note\n    end note"),
        "{mermaid}"
    );
    assert!(mermaid.contains("a_b --> a_b_2 : ev#58;1 / say #quot;hi#quot;#59; #35;1\n"), "{mermaid}");
    let escaped_closure =
        "|ctx, _, out| {     out.say(#quot;a|b#quot;)#59; // Vec#lt;u8#gt; #35;1 #amp; 50#37; }  #92;N";
    assert!(
        mermaid.contains(&format!("a_b --> _b__x___b_ : go [{escaped_closure}] / {escaped_closure}\n")),
        "{mermaid}"
    );
    for line in mermaid.lines() {
        assert!(!line.contains(['\r', '\u{b}']), "{line:?}");
    }
    let dot = export::to_dot(&chart, &names);
    parse_dot("escaped", &dot);
    assert!(dot.starts_with("digraph \"q\\\"m\" {"), "{dot}");
    assert!(dot.contains("[label=\"ev:1 / say \\\"hi\\\"; #1\"]"), "{dot}");
    assert!(dot.contains("\"<b>\\\"x\\\"</b>\" [label=\"<b>\\\"x\\\"</b>\", peripheries=2];"), "{dot}");
    let dot_closure = "|ctx, _, out| {     out.say(\\\"a|b\\\"); // Vec<u8> #1 & 50% }  \\\\N";
    assert!(dot.contains(&format!("[label=\"go [{dot_closure}] / {dot_closure}\"")), "{dot}");
    assert_eq!(dot.lines().count(), dot.matches('\n').count());
    assert!(!dot.contains('\r'), "{dot}");
    if let Some(result) = graphviz(&dot) {
        result.unwrap();
    }
    assert_eq!(export::guard_name(&export::NoNames, GuardId(3)), "guard3");
}

#[test]
fn mermaid_avoids_what_mermaid_cannot_draw() {
    // `r1` is a region holding the compound `c`, which arrows start and end at: Mermaid 11's
    // layout crashes on that inside a `--` region, so `p`'s regions are drawn without `--`;
    // `q` has no such arrow and keeps them. `a` has a deep, multi-region initial.
    let doc = json!({"machine": {"id": "m", "initial": "a", "states": {
        "a": {"initial": {"target": ["a.p.r1.c.x", "a.p.r2"]}, "states": {
            "p": {"type": "parallel", "states": {
                "r1": {"initial": "c", "states": {
                    "c": {"states": {"x": {}, "y": {}}, "on": {"out": "a.p.r1.z"}},
                    "z": {"on": {"back": "a.p.r1.c"}}}},
                "r2": {}}}}},
        "q": {"type": "parallel", "states": {"r3": {"states": {"u": {"on": {"v": "q.r3.w"}}, "w": {}}}, "r4": {}}}}}});
    let loaded = json::load(&doc).unwrap();
    let mermaid = export::to_mermaid(&loaded.chart, &loaded.names);
    parse_mermaid("regions", &mermaid);
    // The lines of a state's block, up to its closing brace (at the indent of its declaration).
    let block = |id: &str| -> String {
        let mut lines = mermaid.lines().skip_while(|l| !l.ends_with(&format!(" as {id} {{")));
        let head = lines.next().unwrap();
        let close = format!("{}}}", &head[..head.len() - head.trim_start().len()]);
        lines.take_while(|l| *l != close).collect::<Vec<_>>().join("\n")
    };
    assert!(!block("a_p").lines().any(|l| l.trim() == "--"), "{mermaid}");
    assert!(block("q").lines().any(|l| l.trim() == "--"), "{mermaid}");
    assert!(block("a_p").contains("state \"c\" as a_p_r1_c {"), "{mermaid}");
    assert!(
        mermaid.contains("    state \"a\" as a {\n        [*] --> a_p : a.p.r1.c.x, a.p.r2\n"),
        "{mermaid}"
    );
    assert!(
        mermaid.contains("\n    a_p_r1_c --> a_p_r1_z : out\n    a_p_r1_z --> a_p_r1_c : back\n"),
        "{mermaid}"
    );
}

#[test]
fn computed_delays_are_named_evaluated_at_entry_and_round_trip() {
    use orchestrator_chart::{Interpreter, MachineState};
    let doc = json!({
        "actions": [{"name": "longer", "assign": {"var": "wait", "op": "add", "value": 10}}],
        "machine": {"id": "m", "initial": "a", "context": {"wait": 30}, "states": {
            "a": {"entry": ["longer"], "after": {"wait": "b", "5": {"target": "c", "guard": {"const": false}}}},
            "b": {"after": {"wait": "a"}},
            "c": {}}}
    });
    let loaded = json::load(&doc).unwrap();
    let chart = &loaded.chart;
    let a = chart.state(chart.lookup("a").unwrap());
    assert_eq!(a.after()[0].computed().map(|(_, n)| n), Some("wait"));
    assert_eq!(a.after()[1].computed(), None);

    // Exports show the name.
    let mermaid = export::to_mermaid(chart, &loaded.names);
    assert!(mermaid.contains("a --> b : after wait"), "{mermaid}");
    assert!(export::to_dot(chart, &loaded.names).contains("after wait"));
    let exported = export::to_xstate_json(chart, &loaded.names);
    assert_eq!(exported["states"]["a"]["after"]["wait"], json!("#m.b"));
    let back = json::load_str(&serde_json::to_string(&reload_document(&loaded, &exported)).unwrap()).unwrap();
    assert_equivalent("computed", chart, &back.chart);
    assert_eq!(export::to_xstate_json(&back.chart, &back.names), exported);

    // The delay is computed after the entry actions, when the state is entered, and its due time
    // is stored with the state: a restored machine fires it at the same time.
    let mut m = Interpreter::new(&loaded.chart, loaded.host.clone(), loaded.context.clone());
    m.start().unwrap();
    m.advance(39).unwrap();
    assert!(m.is_in("a"));
    let bytes = m.state().to_bytes();
    let state = MachineState::from_bytes(&loaded.chart, &bytes).unwrap();
    let mut r = Interpreter::restore(&loaded.chart, loaded.host.clone(), m.context().clone(), state).unwrap();
    r.advance(1).unwrap();
    assert!(r.is_in("b"));
    r.advance(39).unwrap();
    assert!(r.is_in("b"), "b waits for `wait` = 40 ms");
    r.advance(1).unwrap();
    assert!(r.is_in("a"));
}

#[test]
fn computed_delay_names_are_identifiers() {
    let mut b = ChartBuilder::new("m");
    let a = b.add_state(b.root(), "a", NodeKind::State).unwrap();
    b.add_transition(a, TransitionSpec::after_computed(orchestrator_chart::DelayId(0), "1x").target("a"))
        .unwrap();
    assert!(matches!(b.build(), Err(orchestrator_chart::BuildError::InvalidDelayName { .. })));
}
