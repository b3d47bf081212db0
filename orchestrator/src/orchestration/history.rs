//! A workflow's journal as a readable timeline (what `orchestrator history` and the main example
//! print).

use serde_json::Value;
use std::fmt::Write as _;

use super::WorkflowRecord;
use crate::event::Event;
use crate::event::time::format_utc;
use crate::memory::JournalRecord;

/// Formats journal entries, one block per execution:
///
/// ```text
/// v2  2026-11-21T08:30:00.125Z  evt.shop.inventory.reserve.success  from com.shop.inventory.reserve  {"reserved":true,"left":8}
///       state   charging
///       emits   com.shop.payment.charge -> com.shop.payment.charge  {"order_id":"o-1","amount_cents":2500}
/// ```
///
/// The state line shows a machine's active states (its snapshot's `value`) and, at the end,
/// `done` or `FAILED: <error>`.
pub fn timeline(entries: &[JournalRecord<WorkflowRecord>]) -> String {
    let mut out = String::new();
    for entry in entries {
        let at = format_utc(entry.at);
        match &entry.consumed {
            Some(event) => {
                let _ = writeln!(
                    out,
                    "v{:<3} {at}  {}  from {}  {}",
                    entry.version,
                    event.r#type(),
                    event.source(),
                    compact(event.data_value())
                );
            }
            None => {
                let _ = writeln!(out, "v{:<3} {at}  (timer)", entry.version);
            }
        }
        let _ = writeln!(out, "      state   {}", state_line(&entry.record));
        for event in &entry.produced {
            let _ = writeln!(out, "      emits   {}", emitted(event));
        }
    }
    out
}

fn compact(data: &Value) -> String {
    let text = data.to_string();
    if text.chars().count() > 160 {
        format!("{}…", text.chars().take(160).collect::<String>())
    } else {
        text
    }
}

fn state_line(record: &WorkflowRecord) -> String {
    let mut line = match record.state.get("value").and_then(Value::as_array) {
        Some(paths) if !paths.is_empty() => {
            paths.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(", ")
        }
        _ => "-".to_owned(),
    };
    if record.done {
        line.push_str("  (done)");
    }
    if let super::ExecutionStatus::Failure { error } = &record.execution_status {
        let _ = write!(line, "  FAILED: {}: {}", error.error_name, error.error_message);
    }
    if let super::ExecutionStatus::Cancelled { reason } = &record.execution_status {
        line.push_str("  CANCELLED");
        if let Some(reason) = reason {
            let _ = write!(line, ": {reason}");
        }
    }
    line
}

fn emitted(event: &Event) -> String {
    let mut line = format!("{} -> {}", event.r#type(), event.to().unwrap_or("-"));
    if let Some(domain) = event.domain() {
        let _ = write!(line, " [domain {domain}]");
    }
    let _ = write!(line, "  {}", compact(event.data_value()));
    line
}
