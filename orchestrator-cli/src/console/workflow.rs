//! A workflow's page: its summary, statechart with the active states highlighted, pending
//! timers, parent and children, dead letters and timeline (every journal entry: the event it
//! consumed, the state after it, the events it produced, with times).

use orchestrator::event::Event;
use orchestrator::memory::{
    Catalog, Journal, JournalRecord, WorkflowFilter, WorkflowIndex, WorkflowSummary, from_unix_ms,
};
use orchestrator::orchestration::{ExecutionStatus, WorkflowRecord};
use serde_json::Value;

use super::chart;
use super::html::{self, escape};
use super::list::short;
use crate::recorded_chart::choose;
use crate::resolve::Resolved;
use crate::store::Store;
use crate::workflows_cmd::orchestrator_at;

/// The most children a workflow page lists.
const CHILDREN_SHOWN: usize = 100;
/// The most journal entries a workflow page shows (the latest).
const TIMELINE_SHOWN: u64 = 500;

/// Everything a workflow page shows, read from the store.
pub(crate) struct WorkflowView {
    pub(crate) found: Resolved,
    pub(crate) entries: Vec<JournalRecord<WorkflowRecord>>,
    /// Whether earlier entries were left out of `entries`.
    pub(crate) earlier: bool,
    pub(crate) children: Vec<WorkflowSummary>,
    pub(crate) more_children: bool,
    /// The chart's XState JSON, or why there is none.
    pub(crate) chart: Result<Value, String>,
    /// The dead letters of the workflow, or why none can be shown.
    pub(crate) dead_letters: Result<Vec<DeadLetterView>, String>,
}

/// A dead letter as the page shows it.
pub(crate) struct DeadLetterView {
    pub(crate) at: std::time::SystemTime,
    pub(crate) event_type: String,
    pub(crate) reason: String,
    pub(crate) attempt: u32,
    pub(crate) event: String,
}

impl WorkflowView {
    /// Reads the workflow `found` from `store`.
    pub(crate) async fn read(store: &Store, found: Resolved) -> Result<Self, String> {
        // The latest entries: from the version the index knows, else the whole journal.
        let after = found.summary.as_ref().map_or(0, |s| s.version.saturating_sub(TIMELINE_SHOWN));
        let mut entries = Vec::new();
        loop {
            let from = entries.last().map_or(after, |e: &JournalRecord<WorkflowRecord>| e.version);
            let page = store
                .history(&found.id, from, 500)
                .await
                .map_err(|e| format!("cannot read the journal: {e}"))?;
            if page.is_empty() {
                break;
            }
            entries.extend(page);
        }
        let earlier = after > 0 && entries.first().is_none_or(|e| e.version > 1);
        let filter =
            WorkflowFilter { parent: Some(found.id.clone()), limit: CHILDREN_SHOWN, ..WorkflowFilter::new() };
        let page = store.list(&filter).await.map_err(|e| format!("cannot list the children: {e}"))?;
        let mut children = page.items;
        children.reverse();
        let chart = chart_of(store, found.summary.as_ref(), &found.id).await;
        let dead_letters = super::dead_letters::of(store, &found.id).await;
        Ok(Self {
            found,
            entries,
            earlier,
            more_children: page.next.is_some(),
            children,
            chart,
            dead_letters,
        })
    }

    /// The page's body.
    pub(crate) fn body(&self) -> String {
        let id = &self.found.id;
        let last = self.entries.last().map(|e| &e.record);
        let active = last.map(|r| chart::active_paths(&r.state)).unwrap_or_default();
        let version = self.found.summary.as_ref().map_or(self.entries.len() as u64, |s| s.version);
        let mut out = format!(
            "<p class=\"crumbs\"><a href=\"/\">workflows</a> / <code>{}</code></p>\n\
             <h1>Workflow <code id=\"workflow-short-id\">{}</code></h1>\n\
             <div id=\"live\" data-refresh=\"2000\" data-version=\"{version}\">",
            escape(&short(id)),
            escape(&short(id)),
        );
        out.push_str("<div class=\"top\">");
        out.push_str(&self.summary(last, &active));
        out.push_str("<section id=\"chart\"><h2>Statechart</h2>");
        match &self.chart {
            Ok(machine) => out.push_str(&chart::render(machine, &active)),
            Err(why) => out.push_str(&format!("<p class=\"empty\">No chart: {}</p>", escape(why))),
        }
        out.push_str("</section></div>");
        out.push_str(&self.timer(last));
        out.push_str(&self.children());
        out.push_str(&self.dead_letters());
        out.push_str(&self.timeline());
        out.push_str("</div>");
        out
    }

    fn summary(&self, last: Option<&WorkflowRecord>, active: &[String]) -> String {
        let mut rows = Vec::new();
        let mut row = |name: &str, value: String| {
            rows.push(format!("<tr><th>{}</th><td>{value}</td></tr>", escape(name)));
        };
        row("id", format!("<code id=\"workflow-id\">{}</code>", escape(&self.found.id)));
        let link = |id: &str| {
            format!("<a href=\"{}\"><code>{}</code></a>", html::workflow_href(id), escape(&short(id)))
        };
        match &self.found.summary {
            Some(s) => {
                row("orchestrator", escape(&orchestrator_at(s)));
                row(
                    "status",
                    format!("<span id=\"workflow-status\">{}</span>", html::status(s.status.as_str())),
                );
                row("initiator", escape(s.initiator.as_deref().unwrap_or("-")));
                let parent = s.parent.as_deref().or(last.and_then(|r| r.parent_subject.as_deref()));
                row(
                    "parent",
                    parent.map_or_else(
                        || "-".to_owned(),
                        |p| format!("<span id=\"parent\">{}</span>", link(p)),
                    ),
                );
                row("root", s.root.as_deref().map_or_else(|| "-".to_owned(), link));
                let meta: Vec<String> = s.meta.iter().map(|(k, v)| escape(&format!("{k}={v}"))).collect();
                row("meta", if meta.is_empty() { "-".to_owned() } else { meta.join(", ") });
                row("created", html::time(s.created_at));
                row("updated", html::time(s.updated_at));
                row("version", s.version.to_string());
            }
            None => row("status", "not listed by the workflow index (removed or archived)".to_owned()),
        }
        row(
            "active states",
            if active.is_empty() {
                "-".to_owned()
            } else {
                active
                    .iter()
                    .map(|a| format!("<code class=\"active-state\">{}</code>", escape(a)))
                    .collect::<Vec<_>>()
                    .join(" ")
            },
        );
        if let Some(ExecutionStatus::Failure { error }) = last.map(|r| &r.execution_status) {
            let text = serde_json::to_string_pretty(error).unwrap_or_default();
            row("failure", format!("<pre class=\"failure\">{}</pre>", escape(&text)));
        }
        if let Some(ExecutionStatus::Cancelled { reason }) = last.map(|r| &r.execution_status) {
            let reason = reason.as_deref().unwrap_or("no reason given");
            row("cancelled", format!("<span class=\"cancelled\">{}</span>", escape(reason)));
        }
        format!(
            "<section id=\"summary\"><h2>Summary</h2><table class=\"summary\">{}</table></section>",
            rows.concat()
        )
    }

    fn timer(&self, last: Option<&WorkflowRecord>) -> String {
        let running = last.is_some_and(|r| !r.done && !r.is_failed() && !r.is_cancelled());
        let mut items = Vec::new();
        if let Some(record) = last.filter(|_| running) {
            let paths = self.chart.as_ref().map(chart::state_paths).unwrap_or_default();
            items.extend(machine_timers(&record.state, &paths));
        }
        let durable = match last.and_then(|r| r.wake_at_ms) {
            Some(ms) if running => format!(
                "<p id=\"timer\">The workflow's next durable timer is due at {} (Unix ms {ms}).</p>",
                html::time(from_unix_ms(ms))
            ),
            _ => "<p class=\"empty\" id=\"timer\">No pending timer.</p>".to_owned(),
        };
        let list = if items.is_empty() {
            String::new()
        } else {
            format!("<ul class=\"timers\">{}</ul>", items.concat())
        };
        format!("<section id=\"timers\"><h2>Pending timers</h2>{durable}{list}</section>")
    }

    fn children(&self) -> String {
        let mut out = format!("<section id=\"children\"><h2>Children ({})</h2>", self.children.len());
        if self.children.is_empty() {
            out.push_str("<p class=\"empty\">None.</p></section>");
            return out;
        }
        out.push_str("<ul class=\"children\">");
        for c in &self.children {
            out.push_str(&format!(
                "<li><a class=\"child\" href=\"{}\"><code>{}</code></a> {} {} <span class=\"muted\">created {}</span></li>",
                html::workflow_href(&c.id),
                escape(c.short_id()),
                escape(&orchestrator_at(c)),
                html::status(c.status.as_str()),
                html::time(c.created_at),
            ));
        }
        out.push_str("</ul>");
        if self.more_children {
            out.push_str(&format!(
                "<p class=\"more\">Only the newest {CHILDREN_SHOWN} children are shown: <code>orchestrator workflows list STORE --parent ID</code> lists them all.</p>"
            ));
        }
        out.push_str("</section>");
        out
    }

    fn dead_letters(&self) -> String {
        let body = match &self.dead_letters {
            Err(why) => format!("<p class=\"empty\">None recorded: {}</p>", escape(why)),
            Ok(letters) if letters.is_empty() => "<p class=\"empty\">None recorded.</p>".to_owned(),
            Ok(letters) => {
                let items: String = letters
                    .iter()
                    .map(|d| {
                        format!(
                            "<li class=\"dead-letter\">{} <span class=\"etype\">{}</span> after {} deliveries: {}\
                             <details><summary>event</summary><pre>{}</pre></details></li>",
                            html::time(d.at),
                            escape(&d.event_type),
                            d.attempt,
                            escape(&d.reason),
                            escape(&d.event)
                        )
                    })
                    .collect();
                format!("<ul class=\"dead-letters\">{items}</ul>")
            }
        };
        format!("<section id=\"dead-letters\"><h2>Dead letters</h2>{body}</section>")
    }

    fn timeline(&self) -> String {
        let mut out = format!(
            "<section id=\"timeline\"><h2>Timeline ({} execution{})</h2>",
            self.entries.len(),
            if self.entries.len() == 1 { "" } else { "s" }
        );
        if self.earlier {
            out.push_str(&format!(
                "<p class=\"more\">Only the latest {TIMELINE_SHOWN} executions are shown: \
                 <code>orchestrator history STORE ID</code> prints them all.</p>"
            ));
        }
        out.push_str("<ol class=\"timeline\">");
        for entry in &self.entries {
            let record = &entry.record;
            let paths = chart::active_paths(&record.state);
            let consumed = entry.consumed.as_ref().map_or_else(
                || {
                    "<div class=\"consumed\"><span class=\"muted\">no consumed event recorded</span></div>"
                        .to_owned()
                },
                |e| {
                    format!(
                        "<div class=\"consumed\"><span class=\"label\">consumed</span> {}</div>",
                        event(e)
                    )
                },
            );
            let produced = if entry.produced.is_empty() {
                "<div class=\"produced\"><span class=\"label\">produced</span> <span class=\"muted\">nothing</span></div>".to_owned()
            } else {
                let items: String = entry.produced.iter().map(|e| format!("<li>{}</li>", event(e))).collect();
                format!("<div class=\"produced\"><span class=\"label\">produced</span><ul>{items}</ul></div>")
            };
            let mut state =
                paths.iter().map(|p| format!("<code>{}</code>", escape(p))).collect::<Vec<_>>().join(" ");
            if let Some(ms) =
                record.wake_at_ms.filter(|_| !record.done && !record.is_failed() && !record.is_cancelled())
            {
                state.push_str(&format!(
                    " <span class=\"muted\">timer due at {}</span>",
                    html::time(from_unix_ms(ms))
                ));
            }
            out.push_str(&format!(
                "<li class=\"entry\" data-version=\"{}\"><div class=\"when\"><b>#{}</b> {}</div>{consumed}\
                 <div class=\"state-after\"><span class=\"label\">state</span> {} {state}</div>{produced}</li>",
                entry.version,
                entry.version,
                html::time(entry.at),
                html::status(record.workflow_state().as_str()),
            ));
        }
        out.push_str("</ol></section>");
        out
    }
}

/// The timers pending in a machine's stored state (its snapshot: `state.timers`, due on the
/// machine's clock, whose 0 is `epochMs`), as list items; `paths` names the chart's states
/// ([`chart::state_paths`]).
fn machine_timers(snapshot: &Value, paths: &[String]) -> Vec<String> {
    let Some(timers) = snapshot["state"]["timers"].as_array() else { return Vec::new() };
    let epoch = snapshot["epochMs"].as_u64();
    timers
        .iter()
        .map(|t| {
            let due = t["due_ms"].as_u64().unwrap_or_default();
            let what = match t["kind"].as_str() {
                Some("after") => {
                    let id = t["state"].as_u64().unwrap_or_default();
                    match chart::state_path(paths, snapshot, id) {
                        Some(path) => format!(
                            "a delayed transition (<code>after</code>) of state <code>{}</code>",
                            escape(&path)
                        ),
                        None => format!("a delayed transition (<code>after</code>) of state #{id}"),
                    }
                }
                Some("send") => format!(
                    "the delayed event <code>{}</code>{}",
                    escape(t["event"].as_str().unwrap_or("?")),
                    t["id"]
                        .as_str()
                        .map(|id| format!(" (id <code>{}</code>)", escape(id)))
                        .unwrap_or_default()
                ),
                _ => "a timer".to_owned(),
            };
            let when = match epoch {
                Some(epoch) => format!("due at {}", html::time(from_unix_ms(epoch.saturating_add(due)))),
                None => format!("due at {due} ms on the machine's clock"),
            };
            format!("<li class=\"machine-timer\">{what}, {when}</li>")
        })
        .collect()
}

/// An event in a timeline: its type, source, `to`, and its data (pretty JSON) folded.
fn event(e: &Event) -> String {
    let data = serde_json::to_string_pretty(e.data()).unwrap_or_default();
    let to = e.to().map(|to| format!(" → <span class=\"to\">{}</span>", escape(to))).unwrap_or_default();
    format!(
        "<span class=\"etype\">{}</span> <span class=\"muted\">from {}</span>{to} <span class=\"muted\">at {}</span>\
         <details><summary>data</summary><pre class=\"data\">{}</pre></details>",
        escape(e.r#type()),
        escape(e.source()),
        escape(e.time()),
        escape(&data),
    )
}

/// The recorded chart (XState JSON) of the workflow's orchestrator version, or why there is none.
async fn chart_of(store: &Store, summary: Option<&WorkflowSummary>, id: &str) -> Result<Value, String> {
    let columns = orchestrator::memory::SubjectColumns::parse(id);
    let (name, version) = match summary {
        Some(s) => (s.orchestrator.clone(), s.orchestrator_version.clone()),
        None => match orchestrator::subject::Subject::parse(id) {
            Ok(subject) => (subject.orchestrator_name().to_owned(), columns.map(|c| c.orchestrator_version)),
            Err(_) => return Err("the workflow's orchestrator is unknown".to_owned()),
        },
    };
    let recorded = store.definitions().await.map_err(|e| format!("cannot read the catalog: {e}"))?;
    let chosen = choose(&recorded, &name, version.as_deref()).map_err(|e| e.to_string())?;
    let chart = &chosen.definition.document["chart"]["xstate"];
    if chart.is_object() {
        Ok(chart.clone())
    } else {
        Err(format!("orchestrator {name} has no recorded chart (a resumable has none)"))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::time::SystemTime;

    use serde_json::json;

    use super::*;

    fn record(wake_at_ms: Option<u64>) -> WorkflowRecord {
        WorkflowRecord {
            execution_status: ExecutionStatus::Normal,
            subject: "s".to_owned(),
            parent_subject: None,
            init_event_id: "e".to_owned(),
            done: false,
            state: json!({
                "state": { "active": [0, 2], "timers": [{ "due_ms": 30015, "seq": 0, "kind": "after", "state": 2, "index": 0 }] },
                "epochMs": 1_700_000_000_000_u64,
                "value": ["charging"],
            }),
            last_event_id: None,
            last_event_source: None,
            wake_at_ms,
        }
    }

    fn view(wake_at_ms: Option<u64>, earlier: bool) -> WorkflowView {
        WorkflowView {
            found: Resolved { id: "<id>".to_owned(), summary: None },
            entries: vec![JournalRecord {
                version: 7,
                at: SystemTime::UNIX_EPOCH,
                consumed: None,
                produced: Vec::new(),
                record: record(wake_at_ms),
            }],
            earlier,
            children: Vec::new(),
            more_children: false,
            chart: if earlier {
                Err("none <recorded>".to_owned())
            } else {
                Ok(
                    json!({ "id": "m", "states": { "reserving": {}, "charging": {}, "done": { "type": "final" } } }),
                )
            },
            dead_letters: Ok(Vec::new()),
        }
    }

    #[test]
    fn a_pending_timer_is_shown_with_its_time() {
        let html = view(Some(1_700_000_000_000), false).body();
        assert!(
            html.contains(
                "The workflow's next durable timer is due at <time datetime=\"2023-11-14T22:13:20.000Z\">"
            ),
            "{html}"
        );
        assert!(html.contains("timer due at"), "{html}");
        assert!(html.contains("<code class=\"active-state\">charging</code>"), "{html}");
        assert!(
            html.contains("a delayed transition (<code>after</code>) of state <code>charging</code>, due at <time datetime=\"2023-11-14T22:13:50.015Z\">"),
            "{html}"
        );
        assert!(html.contains("data-state=\"charging\""), "{html}");
        assert!(html.contains("<code id=\"workflow-id\">&lt;id&gt;</code>"), "{html}");
        assert!(!html.contains("Only the latest"), "{html}");
        let html = view(None, true).body();
        assert!(html.contains("No pending timer."), "{html}");
        assert!(html.contains("No chart: none &lt;recorded&gt;"), "{html}");
        assert!(html.contains("Only the latest 500 executions are shown"), "{html}");
    }
}
