//! `orchestrator history` and `orchestrator replay`: a workflow's journal in a SQLite or
//! PostgreSQL store.

use std::io::Write;

use clap::Args;
use orchestrator::event::time::format_utc;
use orchestrator::memory::{Journal, JournalRecord};
use orchestrator::orchestration::replay::{Replayed, Until};
use orchestrator::orchestration::{WorkflowRecord, history};
use orchestrator::subject::Subject;

use crate::error::CliError;
use crate::resolve::resolve;
use crate::store::Store;
use crate::tool::Tool;

/// `orchestrator history DB SUBJECT`.
#[derive(Debug, Args)]
pub(crate) struct HistoryArgs {
    /// The store: a SQLite file, or a `postgres://` URL.
    db: String,
    /// The PostgreSQL schema holding the tables.
    #[arg(long, default_value = "orchestrator")]
    schema: String,
    /// The workflow: its id (subject), or a short id (a unique prefix of its execution id, at
    /// least 4 characters).
    subject: String,
    /// Print the entries as JSON lines instead of a timeline.
    #[arg(long)]
    json: bool,
}

/// `orchestrator replay DB SUBJECT [--until N | --at TIME] [--from N]`.
#[derive(Debug, Args)]
pub(crate) struct ReplayArgs {
    /// The store: a SQLite file, or a `postgres://` URL.
    db: String,
    /// The PostgreSQL schema holding the tables.
    #[arg(long, default_value = "orchestrator")]
    schema: String,
    /// The workflow: its id (subject), or a short id (a unique prefix of its execution id, at
    /// least 4 characters).
    subject: String,
    /// Stop at this journal position (version, from 1 to the last); default: the end.
    #[arg(long, conflicts_with = "at")]
    until: Option<u64>,
    /// Stop at the last execution that ran at or before this RFC 3339 time (not before the
    /// first execution).
    #[arg(long)]
    at: Option<String>,
    /// Start from the snapshot journaled at this version instead of the beginning.
    #[arg(long)]
    from: Option<u64>,
}

pub(crate) fn runtime() -> Result<tokio::runtime::Runtime, CliError> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::Io { context: "cannot start the async runtime".to_owned(), source: e })
}

pub(crate) async fn read_all(
    memory: &Store,
    subject: &str,
) -> Result<Vec<JournalRecord<WorkflowRecord>>, CliError> {
    let mut all = Vec::new();
    loop {
        let after = all.last().map_or(0, |e: &JournalRecord<WorkflowRecord>| e.version);
        let page = memory
            .history(subject, after, 500)
            .await
            .map_err(|e| CliError::Input(format!("cannot read the journal: {e}")))?;
        if page.is_empty() {
            return Ok(all);
        }
        all.extend(page);
    }
}

/// Prints a workflow's journal.
pub(crate) fn history(args: &HistoryArgs, out: &mut dyn Write) -> Result<(), CliError> {
    let rt = runtime()?;
    let memory = rt.block_on(Store::open(&args.db, &args.schema))?;
    let id = rt.block_on(resolve(&memory, &args.db, &args.subject))?.id;
    let entries = rt.block_on(read_all(&memory, &id))?;
    if entries.is_empty() {
        return Err(CliError::Input(format!("no journal for workflow {id}")));
    }
    if args.json {
        for entry in &entries {
            let line = serde_json::json!({
                "version": entry.version,
                "at": format_utc(entry.at),
                "consumed": entry.consumed,
                "produced": entry.produced,
                "record": entry.record,
            });
            writeln!(out, "{line}").map_err(CliError::output)?;
        }
    } else {
        write!(out, "{}", history::timeline(&entries)).map_err(CliError::output)?;
    }
    Ok(())
}

/// Rebuilds a workflow's state by re-running its orchestrator when this tool knows it (the
/// example workflows), else shows the journaled snapshot.
pub(crate) fn replay(args: &ReplayArgs, tool: &Tool, out: &mut dyn Write) -> Result<(), CliError> {
    let until = match (&args.until, &args.at) {
        (Some(v), _) => Until::Version(*v),
        (None, Some(at)) => Until::Time(
            chrono::DateTime::parse_from_rfc3339(at)
                .map_err(|e| CliError::Usage(format!("--at {at:?} is not an RFC 3339 time: {e}")))?
                .into(),
        ),
        (None, None) => Until::End,
    };
    let rt = runtime()?;
    let memory = rt.block_on(Store::open(&args.db, &args.schema))?;
    let id = rt.block_on(resolve(&memory, &args.db, &args.subject))?.id;
    let subject = Subject::parse(&id)?;
    let entries = rt.block_on(read_all(&memory, &id))?;
    let target = target(&id, &entries, until, args.at.as_deref().unwrap_or_default())?;
    if let Some(from) = args.from
        && from > target.version
    {
        return Err(CliError::Usage(format!(
            "--from {from} is after the position replayed to (version {}): the snapshot to start \
             from must come before it",
            target.version
        )));
    }
    let known = tool.orchestrator(subject.orchestrator_name()).transpose()?;
    let rerun = known.is_some();
    let replayed: Replayed = match known {
        Some(orchestrator) => rt
            .block_on(orchestrator.lifecycle().replay(&memory, &id, until, args.from))
            .map_err(|e| CliError::Input(e.to_string()))?,
        None => Replayed {
            version: target.version,
            at: Some(target.at),
            state: target.record.state.clone(),
            done: target.record.done,
            failed: target.record.is_failed(),
            cancelled: target.record.is_cancelled(),
            steps: 0,
        },
    };
    let how = if rerun {
        format!("re-ran {} execution(s); every step matched the journal", replayed.steps)
    } else {
        format!(
            "journaled snapshot: this tool was not taught orchestrator {}'s machines, so nothing was \
             re-run (a program re-runs its own with the orchestrator-cli library's `Tool::machine`{})",
            subject.orchestrator_name(),
            match tool.orchestrator_names().collect::<Vec<_>>() {
                known if known.is_empty() => String::new(),
                known => format!("; this tool knows {}", known.join(", ")),
            }
        )
    };
    let doc = serde_json::json!({
        "subject": id,
        "version": replayed.version,
        "at": replayed.at.map(format_utc),
        "done": replayed.done,
        "failed": replayed.failed,
        "cancelled": replayed.cancelled,
        "replay": how,
        "state": replayed.state,
    });
    let text = serde_json::to_string_pretty(&doc).map_err(|e| CliError::Input(e.to_string()))?;
    writeln!(out, "{text}").map_err(CliError::output)
}

/// The journal entry a replay of `id` stops at, or a clear error when `until` lies outside the
/// journal (`at` is the `--at` text, for messages): an empty journal, a version past the last
/// one (or 0), a time before the first execution.
fn target<'e>(
    id: &str,
    entries: &'e [JournalRecord<WorkflowRecord>],
    until: Until,
    at: &str,
) -> Result<&'e JournalRecord<WorkflowRecord>, CliError> {
    let (Some(first), Some(last)) = (entries.first(), entries.last()) else {
        return Err(CliError::Input(format!("no journal for workflow {id}")));
    };
    let range = format!("versions {} to {}", first.version, last.version);
    match until {
        Until::Version(v) if v > last.version => {
            return Err(CliError::Usage(format!(
                "--until {v} is past the last version of workflow {id}: its journal holds {range}"
            )));
        }
        Until::Version(v) if v < first.version => {
            return Err(CliError::Usage(format!(
                "--until {v} is before the first version of workflow {id}: its journal holds {range}"
            )));
        }
        Until::Time(t) if t < first.at => {
            return Err(CliError::Usage(format!(
                "--at {at} is before the first execution of workflow {id} (at {})",
                format_utc(first.at)
            )));
        }
        _ => {}
    }
    entries
        .iter()
        .rfind(|e| until.includes(e))
        .ok_or_else(|| CliError::Input(format!("no journal entry of workflow {id} in that range")))
}
