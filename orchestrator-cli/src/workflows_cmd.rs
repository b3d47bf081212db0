//! `orchestrator workflows list|show|tree`: a store's workflows, by the workflow index.

use std::io::Write;
use std::time::{Duration, SystemTime};

use clap::{Args, Subcommand};
use orchestrator::event::time::format_utc;
use orchestrator::memory::{WorkflowFilter, WorkflowIndex, WorkflowState, WorkflowSummary};

use crate::error::CliError;
use crate::journal_cmd::{read_all, runtime};
use crate::resolve::resolve;
use crate::store::Store;
use crate::subject_cmd::parse_meta;

/// `orchestrator workflows …`.
#[derive(Debug, Subcommand)]
pub(crate) enum WorkflowsCommand {
    /// List a store's workflows, newest first (or count them).
    #[command(after_help = LIST_EXAMPLES)]
    List(ListArgs),
    /// Show one workflow: what the index says of it, its last state and its journal's length.
    #[command(after_help = SHOW_EXAMPLES)]
    Show(OneArgs),
    /// Show a workflow and its descendants (its children, theirs…) as a tree.
    #[command(after_help = TREE_EXAMPLES)]
    Tree(OneArgs),
}

const LIST_EXAMPLES: &str = "\
Examples:
  orchestrator workflows list orchestrator-data/quickstart.sqlite --status failed
  orchestrator workflows list postgres://postgres@127.0.0.1:5432/test --meta tenant=acme --count";

const SHOW_EXAMPLES: &str = "\
Examples:
  orchestrator workflows show orchestrator-data/quickstart.sqlite 3f2a9c1e
  orchestrator workflows show sqlite:store.db \"$SUBJECT\" --json

A short id is a unique prefix (4 characters or more) of the workflow's execution id; an
ambiguous one lists the workflows it matches.";

const TREE_EXAMPLES: &str = "\
Examples:
  orchestrator workflows tree orchestrator-data/quickstart.sqlite 3f2a9c1e
  orchestrator workflows tree postgres://postgres@127.0.0.1:5432/test \"$SUBJECT\" --json

Children are found by their parent, oldest first, at most 32 levels deep and 1,000 workflows.";

/// `orchestrator workflows show|tree STORE ID [--json]`.
#[derive(Debug, Args)]
pub(crate) struct OneArgs {
    /// The store: a SQLite file (`sqlite:PATH` or a plain path; it must exist), or a
    /// `postgres://` URL.
    store: String,
    /// The workflow: its id (subject), or a short id (a unique prefix of its execution id, at
    /// least 4 characters).
    id: String,
    /// The PostgreSQL schema holding the tables.
    #[arg(long, default_value = "orchestrator")]
    schema: String,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

/// `orchestrator workflows list STORE [--status S] [--orchestrator N] [--meta k=v]… [--since T]`.
#[derive(Debug, Args)]
pub(crate) struct ListArgs {
    /// The store: a SQLite file (`sqlite:PATH` or a plain path; it must exist), or a
    /// `postgres://` URL.
    store: String,
    /// The PostgreSQL schema holding the tables.
    #[arg(long, default_value = "orchestrator")]
    schema: String,
    /// Only workflows in this state: active, waiting (on a timer), done, failed or cancelled.
    #[arg(long, value_parser = parse_status)]
    status: Option<WorkflowState>,
    /// Only workflows of this orchestrator (its name, such as arvo.orc.shop.order).
    #[arg(long, value_name = "NAME")]
    orchestrator: Option<String>,
    /// Only workflows of this orchestrator version.
    #[arg(long = "orchestrator-version", value_name = "VERSION")]
    orchestrator_version: Option<String>,
    /// Only workflows started by this initiator.
    #[arg(long)]
    initiator: Option<String>,
    /// Only the children of this workflow (its subject).
    #[arg(long, value_name = "SUBJECT")]
    parent: Option<String>,
    /// Only the workflows of this tree (its root's subject).
    #[arg(long, value_name = "SUBJECT")]
    root: Option<String>,
    /// Only workflows whose subject's meta has KEY=VALUE; repeat for several (all must match).
    #[arg(long = "meta", value_name = "KEY=VALUE", value_parser = parse_meta)]
    meta: Vec<(String, String)>,
    /// Only workflows created at or after this time: RFC 3339 (2025-01-31T12:00:00Z) or an age
    /// such as 90s, 30m, 12h or 7d.
    #[arg(long, value_name = "TIME", value_parser = parse_since)]
    since: Option<SystemTime>,
    /// Only workflows created before this time (RFC 3339, or an age such as 12h).
    #[arg(long, value_name = "TIME", value_parser = parse_since)]
    until: Option<SystemTime>,
    /// Only workflows updated (a step, a timer) at or after this time (RFC 3339, or an age).
    #[arg(long = "updated-since", value_name = "TIME", value_parser = parse_since)]
    updated_since: Option<SystemTime>,
    /// The next page: the workflows listed after this one (its short id or subject: the last of
    /// the previous page).
    #[arg(long, value_name = "ID")]
    after: Option<String>,
    /// The most workflows to list.
    #[arg(long, default_value_t = 50)]
    limit: usize,
    /// Print JSON lines instead of a table.
    #[arg(long)]
    json: bool,
    /// Print only how many workflows match.
    #[arg(long)]
    count: bool,
}

impl ListArgs {
    fn filter(&self) -> WorkflowFilter {
        let mut filter = WorkflowFilter {
            orchestrator: self.orchestrator.clone(),
            orchestrator_version: self.orchestrator_version.clone(),
            status: self.status,
            initiator: self.initiator.clone(),
            parent: self.parent.clone(),
            root: self.root.clone(),
            meta: self.meta.clone(),
            limit: self.limit,
            ..WorkflowFilter::new()
        };
        filter.created.since = self.since;
        filter.created.until = self.until;
        filter.updated.since = self.updated_since;
        filter
    }
}

/// Parses `--status`.
fn parse_status(text: &str) -> Result<WorkflowState, String> {
    WorkflowState::parse(text).ok_or_else(|| {
        format!("`{text}` is not a status: expected active, waiting, done, failed or cancelled")
    })
}

/// Parses `--since`: an RFC 3339 time, or an age (`90s`, `30m`, `12h`, `7d`) before now.
pub(crate) fn parse_since(text: &str) -> Result<SystemTime, String> {
    if let Ok(at) = chrono::DateTime::parse_from_rfc3339(text) {
        return Ok(at.into());
    }
    let unit = text.chars().last().map_or(0, |c| match c {
        's' => 1,
        'm' => 60,
        'h' => 3_600,
        'd' => 86_400,
        _ => 0,
    });
    let amount: Option<u64> = text.get(..text.len().saturating_sub(1)).and_then(|n| n.parse().ok());
    match amount {
        Some(amount) if unit > 0 => SystemTime::now()
            .checked_sub(Duration::from_secs(amount.saturating_mul(unit)))
            .ok_or_else(|| format!("`{text}` reaches before the epoch")),
        _ => Err(format!("`{text}` is neither an RFC 3339 time nor an age such as 30m, 12h or 7d")),
    }
}

/// Runs a `workflows` subcommand.
pub(crate) fn run(command: &WorkflowsCommand, out: &mut dyn Write) -> Result<(), CliError> {
    match command {
        WorkflowsCommand::List(args) => list(args, out),
        WorkflowsCommand::Show(args) => show(args, out),
        WorkflowsCommand::Tree(args) => tree(args, out),
    }
}

/// The deepest level of descendants `workflows tree` follows.
const TREE_DEPTH: usize = 32;
/// The most workflows `workflows tree` shows.
const TREE_NODES: usize = 1_000;

fn show(args: &OneArgs, out: &mut dyn Write) -> Result<(), CliError> {
    let rt = runtime()?;
    let store = rt.block_on(Store::open(&args.store, &args.schema))?;
    let found = rt.block_on(resolve(&store, &args.store, &args.id))?;
    let entries = rt.block_on(read_all(&store, &found.id))?;
    let last = entries.last();
    let record = last
        .map(|e| serde_json::to_value(&e.record))
        .transpose()
        .map_err(|e| CliError::Input(format!("cannot show the record of {}: {e}", found.id)))?;
    if args.json {
        let mut doc = match &found.summary {
            Some(summary) => json(summary),
            None => serde_json::json!({ "id": found.id, "listed": false }),
        };
        doc["history_length"] = entries.len().into();
        doc["last_entry_at"] = last.map(|e| format_utc(e.at)).into();
        doc["record"] = record.unwrap_or_default();
        return writeln!(out, "{doc}").map_err(CliError::output);
    }
    let mut text = String::new();
    let mut field = |name: &str, value: &str| text.push_str(&format!("{name:<13}{value}\n"));
    field("id", &found.id);
    match &found.summary {
        Some(s) => {
            field("short id", s.short_id());
            field("orchestrator", &orchestrator_at(s));
            field("status", s.status.as_str());
            field("initiator", s.initiator.as_deref().unwrap_or("-"));
            field("parent", s.parent.as_deref().unwrap_or("-"));
            field("root", s.root.as_deref().unwrap_or("-"));
            let meta: Vec<String> = s.meta.iter().map(|(k, v)| format!("{k}={v}")).collect();
            let meta = if meta.is_empty() { "-".to_owned() } else { meta.join(", ") };
            field("meta", &meta);
            field("created", &format_utc(s.created_at));
            field("updated", &format_utc(s.updated_at));
            field("version", &s.version.to_string());
        }
        None => field("status", "not listed by the workflow index (removed or archived)"),
    }
    field("history", &format!("{} journal entries", entries.len()));
    match &record {
        Some(record) => {
            let pretty = serde_json::to_string_pretty(record).map_err(|e| CliError::Input(e.to_string()))?;
            text.push_str("state\n");
            for line in pretty.lines() {
                text.push_str("  ");
                text.push_str(line);
                text.push('\n');
            }
        }
        None => field("state", "- (no journal entry)"),
    }
    write!(out, "{text}").map_err(CliError::output)
}

/// A workflow of a tree and its descendants.
struct Node {
    summary: WorkflowSummary,
    children: Vec<Node>,
}

/// Builds the tree under `summary`, depth first, children oldest first; `budget` counts the
/// workflows still allowed, `cut` becomes true when a bound left workflows out.
async fn subtree(
    store: &Store,
    summary: WorkflowSummary,
    depth: usize,
    budget: &mut usize,
    cut: &mut bool,
) -> Result<Node, CliError> {
    let mut children = Vec::new();
    if depth >= TREE_DEPTH {
        let probe = WorkflowFilter { parent: Some(summary.id.clone()), limit: 1, ..WorkflowFilter::new() };
        let more = store.list(&probe).await.map_err(list_failed)?;
        *cut |= !more.items.is_empty();
        return Ok(Node { summary, children });
    }
    let mut filter = WorkflowFilter { parent: Some(summary.id.clone()), ..WorkflowFilter::new() };
    let mut found = Vec::new();
    loop {
        filter.limit = (*budget).clamp(1, 100);
        let page = store.list(&filter).await.map_err(list_failed)?;
        for child in page.items {
            if *budget == 0 {
                *cut = true;
                break;
            }
            *budget -= 1;
            found.push(child);
        }
        match page.next {
            Some(next) if *budget > 0 => filter = filter.after(Some(next)),
            Some(_) => {
                *cut = true;
                break;
            }
            None => break,
        }
    }
    found.reverse();
    for child in found {
        children.push(Box::pin(subtree(store, child, depth + 1, budget, cut)).await?);
    }
    Ok(Node { summary, children })
}

fn list_failed(e: orchestrator::memory::MemoryError) -> CliError {
    CliError::Input(format!("cannot list the workflows: {e}"))
}

fn tree(args: &OneArgs, out: &mut dyn Write) -> Result<(), CliError> {
    let rt = runtime()?;
    let store = rt.block_on(Store::open(&args.store, &args.schema))?;
    let found = rt.block_on(resolve(&store, &args.store, &args.id))?;
    let Some(summary) = found.summary else {
        return Err(CliError::Input(format!(
            "workflow {} is not listed by the workflow index (removed or archived): it has no tree",
            found.id
        )));
    };
    let mut budget = TREE_NODES - 1;
    let mut cut = false;
    let root = rt.block_on(subtree(&store, summary, 0, &mut budget, &mut cut))?;
    if args.json {
        let mut doc = tree_json(&root);
        if cut {
            doc["truncated"] = true.into();
        }
        return writeln!(out, "{doc}").map_err(CliError::output);
    }
    let mut text = String::new();
    tree_text(&root, 0, &mut text);
    if cut {
        text.push_str(&format!(
            "(more descendants: the tree shows at most {TREE_NODES} workflows, {TREE_DEPTH} levels deep)\n"
        ));
    }
    write!(out, "{text}").map_err(CliError::output)
}

fn tree_text(node: &Node, depth: usize, text: &mut String) {
    let s = &node.summary;
    text.push_str(&format!(
        "{:indent$}{}  {}  {}\n",
        "",
        s.short_id(),
        orchestrator_at(s),
        s.status.as_str(),
        indent = depth * 2
    ));
    for child in &node.children {
        tree_text(child, depth + 1, text);
    }
}

fn tree_json(node: &Node) -> serde_json::Value {
    let mut doc = json(&node.summary);
    doc["children"] = node.children.iter().map(tree_json).collect::<Vec<_>>().into();
    doc
}

/// `orchestrator@version`, or the orchestrator alone when the version is unknown.
pub(crate) fn orchestrator_at(s: &WorkflowSummary) -> String {
    match &s.orchestrator_version {
        Some(version) => format!("{}@{version}", s.orchestrator),
        None => s.orchestrator.clone(),
    }
}

fn list(args: &ListArgs, out: &mut dyn Write) -> Result<(), CliError> {
    if args.limit == 0 {
        return Err(CliError::Usage("--limit must be at least 1".to_owned()));
    }
    let rt = runtime()?;
    let store = rt.block_on(Store::open(&args.store, &args.schema))?;
    let mut filter = args.filter();
    if let Some(after) = &args.after {
        let found = rt.block_on(resolve(&store, &args.store, after))?;
        let summary = found.summary.ok_or_else(|| {
            CliError::Input(format!("--after {after}: workflow {} is not in the workflow index", found.id))
        })?;
        filter.after = Some(summary.cursor());
    }
    let failed = |e| CliError::Input(format!("cannot list the workflows: {e}"));
    if args.count {
        let count = rt.block_on(store.count(&filter)).map_err(failed)?;
        let line =
            if args.json { serde_json::json!({ "count": count }).to_string() } else { count.to_string() };
        return writeln!(out, "{line}").map_err(CliError::output);
    }
    let page = rt.block_on(store.list(&filter)).map_err(failed)?;
    if args.json {
        for summary in &page.items {
            writeln!(out, "{}", json(summary)).map_err(CliError::output)?;
        }
        return Ok(());
    }
    write!(out, "{}", table(&page.items)).map_err(CliError::output)?;
    if let (Some(_), Some(last)) = (&page.next, page.items.last()) {
        writeln!(out, "(more workflows match: the next page is --after {})", last.short_id())
            .map_err(CliError::output)?;
    }
    Ok(())
}

/// A workflow as a JSON line.
pub(crate) fn json(s: &WorkflowSummary) -> serde_json::Value {
    serde_json::json!({
        "id": s.id,
        "short_id": s.short_id(),
        "execution_id": s.execution_id,
        "orchestrator": s.orchestrator,
        "orchestrator_version": s.orchestrator_version,
        "status": s.status.as_str(),
        "initiator": s.initiator,
        "parent": s.parent,
        "root": s.root,
        "meta": s.meta,
        "created_at": format_utc(s.created_at),
        "updated_at": format_utc(s.updated_at),
        "version": s.version,
    })
}

/// The workflows as a table: short id, orchestrator@version, status, created, updated, initiator.
fn table(items: &[WorkflowSummary]) -> String {
    let header = ["ID", "ORCHESTRATOR", "STATUS", "CREATED", "UPDATED", "INITIATOR"].map(str::to_owned);
    let rows: Vec<[String; 6]> = items
        .iter()
        .map(|s| {
            [
                s.short_id().to_owned(),
                orchestrator_at(s),
                s.status.as_str().to_owned(),
                format_utc(s.created_at),
                format_utc(s.updated_at),
                s.initiator.clone().unwrap_or_else(|| "-".to_owned()),
            ]
        })
        .collect();
    let mut widths = header.clone().map(|h| h.chars().count());
    for row in &rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let mut text = String::new();
    for row in std::iter::once(&header).chain(&rows) {
        let cells: Vec<String> =
            row.iter().zip(widths).map(|(cell, width)| format!("{cell:<width$}")).collect();
        text.push_str(cells.join("  ").trim_end());
        text.push('\n');
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn since_takes_times_and_ages() {
        let at = parse_since("2025-01-31T12:00:00Z").unwrap();
        assert_eq!(format_utc(at), "2025-01-31T12:00:00.000Z");
        let hour_ago = parse_since("1h").unwrap();
        let elapsed = SystemTime::now().duration_since(hour_ago).unwrap();
        assert!((3_599..=3_601).contains(&elapsed.as_secs()), "{elapsed:?}");
        assert!(parse_since("7d").is_ok() && parse_since("90s").is_ok() && parse_since("30m").is_ok());
        assert!(parse_since("yesterday").unwrap_err().contains("RFC 3339"));
        assert!(parse_since("h").is_err() && parse_since("").is_err());
    }

    #[test]
    fn statuses_are_named() {
        assert_eq!(parse_status("waiting"), Ok(WorkflowState::Waiting));
        assert!(parse_status("running").unwrap_err().contains("active, waiting, done, failed or cancelled"));
        assert_eq!(parse_status("cancelled"), Ok(WorkflowState::Cancelled));
    }
}
