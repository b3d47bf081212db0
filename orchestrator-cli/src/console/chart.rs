//! A statechart as nested HTML boxes, from its XState JSON export (as a node records it in the
//! store's catalog), with the active states highlighted: no JavaScript, no library.

use serde_json::Value;

use super::html::escape;

/// The chart of `machine` (an XState machine config) as HTML, with the states of `active`
/// (paths of active atomic states, `charging` or `computing.adding.waiting`) and their
/// ancestors marked: every state is a `<div class="state" data-state="PATH">`; an active one has
/// the class `active`, an active atomic one `current` too.
pub(crate) fn render(machine: &Value, active: &[String]) -> String {
    let mut out = String::from("<div class=\"chart\">");
    let id = machine["id"].as_str().unwrap_or("machine");
    out.push_str(&format!("<div class=\"chart-id\">{}</div>", escape(id)));
    states(machine, "", id, active, &mut out);
    out.push_str("</div>");
    out
}

/// The children of `node` (at `path`; "" for the machine), in their declared order.
fn states(node: &Value, path: &str, machine_id: &str, active: &[String], out: &mut String) {
    let Some(children) = node["states"].as_object() else { return };
    let parallel = node["type"] == "parallel";
    let initial = node["initial"].as_str().or_else(|| node["initial"]["target"].as_str());
    out.push_str(if parallel { "<div class=\"regions\">" } else { "<div class=\"substates\">" });
    for (name, child) in children {
        let child_path = if path.is_empty() { name.clone() } else { format!("{path}.{name}") };
        let is_current = active.contains(&child_path);
        let is_active = is_current || active.iter().any(|a| a.starts_with(&format!("{child_path}.")));
        let mut class = String::from("state");
        for (kind, on) in [
            ("parallel", child["type"] == "parallel"),
            ("final", child["type"] == "final"),
            ("history", child["type"] == "history"),
            ("initial", initial == Some(name.as_str()) && !parallel),
            ("active", is_active),
            ("current", is_current),
        ] {
            if on {
                class.push(' ');
                class.push_str(kind);
            }
        }
        out.push_str(&format!(
            "<div class=\"{class}\" data-state=\"{}\"><div class=\"state-name\">{}</div>",
            escape(&child_path),
            escape(name)
        ));
        transitions(child, machine_id, out);
        states(child, &child_path, machine_id, active, out);
        out.push_str("</div>");
    }
    out.push_str("</div>");
}

/// The transitions leaving `node`: `EVENT → target` (eventless ones as `always`, delayed ones
/// as `after 30000 ms`), with a guard's name when it has one.
fn transitions(node: &Value, machine_id: &str, out: &mut String) {
    let mut lines = Vec::new();
    let mut add = |label: String, transition: &Value| {
        let list: Vec<&Value> = match transition {
            Value::Array(items) => items.iter().collect(),
            other => vec![other],
        };
        for t in list {
            let target = match t {
                Value::String(target) => Some(target.clone()),
                Value::Object(o) => match &o.get("target") {
                    Some(Value::String(target)) => Some(target.clone()),
                    Some(Value::Array(targets)) => {
                        Some(targets.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(", "))
                    }
                    _ => None,
                },
                _ => None,
            };
            let guard = match &t["guard"] {
                Value::String(name) => format!(" [{name}]"),
                Value::Object(g) => {
                    g.get("type").and_then(Value::as_str).map(|n| format!(" [{n}]")).unwrap_or_default()
                }
                _ => String::new(),
            };
            let prefix = format!("#{machine_id}.");
            let target = target.map(|t| t.strip_prefix(&prefix).map(str::to_owned).unwrap_or(t));
            let target =
                target.map_or_else(|| "(internal)".to_owned(), |t| t.trim_start_matches('.').to_owned());
            lines.push(format!(
                "<li><span class=\"event\">{}</span>{} → <span class=\"target\">{}</span></li>",
                escape(&label),
                escape(&guard),
                escape(&target)
            ));
        }
    };
    if let Some(on) = node["on"].as_object() {
        for (event, t) in on {
            add(event.clone(), t);
        }
    }
    if let Some(after) = node["after"].as_object() {
        for (delay, t) in after {
            add(format!("after {delay} ms"), t);
        }
    }
    if !node["always"].is_null() {
        add("always".to_owned(), &node["always"]);
    }
    if !node["onDone"].is_null() {
        add("done".to_owned(), &node["onDone"]);
    }
    if !lines.is_empty() {
        out.push_str("<ul class=\"transitions\">");
        out.push_str(&lines.concat());
        out.push_str("</ul>");
    }
}

/// The active atomic states' paths in a workflow's stored state: a machine's snapshot keeps
/// them in `value` (also looked for one level down, under `snapshot` or `machine`).
pub(crate) fn active_paths(state: &Value) -> Vec<String> {
    let pick = |v: &Value| -> Option<Vec<String>> {
        let items = v.get("value")?.as_array()?;
        Some(items.iter().filter_map(Value::as_str).map(str::to_owned).collect())
    };
    pick(state)
        .or_else(|| state.as_object()?.values().find_map(|v| if v.is_object() { pick(v) } else { None }))
        .unwrap_or_default()
}

/// The paths of the chart's states in document order, depth first, the machine itself first
/// (as ""): the numbering a machine's stored state uses for its states, when it matches (see
/// [`state_path`]).
pub(crate) fn state_paths(machine: &Value) -> Vec<String> {
    fn walk(node: &Value, path: &str, out: &mut Vec<String>) {
        out.push(path.to_owned());
        if let Some(children) = node["states"].as_object() {
            for (name, child) in children {
                let child_path = if path.is_empty() { name.clone() } else { format!("{path}.{name}") };
                walk(child, &child_path, out);
            }
        }
    }
    let mut out = Vec::new();
    walk(machine, "", &mut out);
    out
}

/// The path of state number `id` of a machine's stored `state` (its snapshot), named with the
/// chart's `paths` ([`state_paths`]) only when that numbering names its active states as the
/// snapshot's `value` does (else `None`: the numbering is not known to match).
pub(crate) fn state_path(paths: &[String], snapshot: &Value, id: u64) -> Option<String> {
    let active: Vec<&str> = snapshot["state"]["active"]
        .as_array()?
        .iter()
        .map(|n| n.as_u64().and_then(|n| paths.get(usize::try_from(n).ok()?)).map(String::as_str))
        .collect::<Option<_>>()?;
    let value = active_paths(snapshot);
    let matches = !value.is_empty() && value.iter().all(|v| active.contains(&v.as_str()));
    if !matches {
        return None;
    }
    paths.get(usize::try_from(id).ok()?).filter(|p| !p.is_empty()).cloned()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn machine() -> Value {
        json!({
            "id": "order",
            "initial": "reserving",
            "states": {
                "reserving": { "on": { "com.inventory": [
                    { "target": "#order.charging", "guard": "reserved" },
                    "#order.<rejected>"
                ] } },
                "charging": { "initial": "a", "states": { "a": {}, "b": {} }, "after": { "30000": "#order.<rejected>" } },
                "<rejected>": { "type": "final" }
            }
        })
    }

    #[test]
    fn the_active_state_and_its_ancestors_are_marked() {
        let html = render(&machine(), &["charging.b".to_owned()]);
        assert!(html.contains("<div class=\"state active\" data-state=\"charging\">"), "{html}");
        assert!(html.contains("<div class=\"state active current\" data-state=\"charging.b\">"), "{html}");
        assert!(html.contains("<div class=\"state initial\" data-state=\"charging.a\">"), "{html}");
        assert!(html.contains("<div class=\"state initial\" data-state=\"reserving\">"), "{html}");
    }

    #[test]
    fn names_and_transitions_are_escaped() {
        let html = render(&machine(), &[]);
        assert!(html.contains("data-state=\"&lt;rejected&gt;\""), "{html}");
        assert!(!html.contains("<rejected>"), "{html}");
        assert!(html.contains("<span class=\"event\">com.inventory</span> [reserved] → <span class=\"target\">charging</span>"), "{html}");
        assert!(html.contains("after 30000 ms"), "{html}");
    }

    #[test]
    fn state_numbers_are_named_when_the_numbering_matches() {
        let paths = state_paths(&machine());
        assert_eq!(paths, ["", "reserving", "charging", "charging.a", "charging.b", "<rejected>"]);
        let snapshot = json!({ "state": { "active": [0, 2, 4] }, "value": ["charging.b"] });
        assert_eq!(state_path(&paths, &snapshot, 2).as_deref(), Some("charging"));
        let other = json!({ "state": { "active": [0, 1] }, "value": ["charging.b"] });
        assert_eq!(state_path(&paths, &other, 2), None);
    }

    #[test]
    fn active_paths_are_read_from_the_snapshot() {
        assert_eq!(active_paths(&json!({ "value": ["a.b", "c"] })), ["a.b", "c"]);
        assert_eq!(active_paths(&json!({ "snapshot": { "value": ["x"] } })), ["x"]);
        assert!(active_paths(&Value::Null).is_empty());
    }
}
