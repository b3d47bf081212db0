//! The command line: its commands, their help, and the dispatch to each command's module.

use std::io::{Read, Write};

use clap::{Parser, Subcommand};

use crate::chart_cmd::{self, ChartCommand};
use crate::contract_cmd::{self, ContractCommand};
use crate::error::CliError;
use crate::event_cmd::{self, EventCommand};
use crate::subject_cmd::{self, SubjectCommand};
use crate::tool::Tool;
use crate::{journal_cmd, workflows_cmd};

/// Inspect Arvo orchestration subjects, events and contracts.
#[derive(Debug, Parser)]
#[command(name = "orchestrator", version, after_help = MAIN_EXAMPLES)]
pub(crate) struct Cli {
    /// What to do.
    #[command(subcommand)]
    command: Command,
}

const MAIN_EXAMPLES: &str = "\
Exit status: 0 on success, 1 for invalid input, 2 for usage errors.

Examples:
  orchestrator subject new --orchestrator arvo.orc.calc.average --version 1.0.0 --initiator com.my.client
  orchestrator subject parse \"$SUBJECT\"
  orchestrator event validate event.json
  orchestrator contract schema com.calc.add";

/// The top-level commands.
#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Decode, create and derive orchestration subjects.
    #[command(subcommand, after_help = SUBJECT_EXAMPLES)]
    Subject(SubjectCommand),
    /// Validate events.
    #[command(subcommand, after_help = EVENT_EXAMPLES)]
    Event(EventCommand),
    /// List the example contracts and print their JSON documents.
    #[command(subcommand, after_help = CONTRACT_EXAMPLES)]
    Contract(ContractCommand),
    /// Run statechart fixtures, simulate a JSON chart, export a chart.
    #[command(subcommand, after_help = CHART_EXAMPLES)]
    Chart(ChartCommand),
    /// Print a workflow's journal (its history) from a SQLite or PostgreSQL store.
    #[command(after_help = JOURNAL_EXAMPLES)]
    History(journal_cmd::HistoryArgs),
    /// Rebuild a workflow's state at a journal position or time from a SQLite or PostgreSQL store.
    #[command(after_help = JOURNAL_EXAMPLES)]
    Replay(journal_cmd::ReplayArgs),
    /// List, count, show a store's workflows (SQLite or PostgreSQL), and their trees.
    #[command(subcommand, after_help = WORKFLOWS_EXAMPLES)]
    Workflows(workflows_cmd::WorkflowsCommand),
    /// Serve a local, read-only web console over a store's workflows.
    #[command(after_help = SERVE_EXAMPLES)]
    Serve(crate::console::ServeArgs),
}

const SERVE_EXAMPLES: &str = "\
Examples:
  orchestrator serve orchestrator-data/quickstart.sqlite
  orchestrator serve postgres://postgres@127.0.0.1:5432/test --bind 127.0.0.1:9000

The console listens on 127.0.0.1:8080 by default and prints its URL. It only reads the store. A
non-loopback --bind is refused unless --allow-remote is given (the console has no
authentication).";

const WORKFLOWS_EXAMPLES: &str = "\
Examples:
  orchestrator workflows list orchestrator-data/quickstart.sqlite --status failed
  orchestrator workflows list sqlite:store.db --orchestrator arvo.orc.shop.order --since 1h --json
  orchestrator workflows list postgres://postgres@127.0.0.1:5432/test --meta tenant=acme --count
  orchestrator workflows list sqlite:store.db --updated-since 10m --limit 20 --after 3f2a9c1e
  orchestrator workflows show orchestrator-data/quickstart.sqlite 3f2a9c1e
  orchestrator workflows show sqlite:store.db \"$SUBJECT\" --json
  orchestrator workflows tree orchestrator-data/quickstart.sqlite 3f2a9c1e

ID is a workflow's full id (its subject) or a short id: a unique prefix (4 characters or more)
of its execution id, as `workflows list` shows it.";

const JOURNAL_EXAMPLES: &str = "\
Examples:
  orchestrator history orchestrator-data/quickstart.sqlite \"$SUBJECT\"
  orchestrator history orchestrator-data/quickstart.sqlite 3f2a9c1e
  orchestrator replay orchestrator-data/quickstart.sqlite \"$SUBJECT\" --until 2
  orchestrator replay orchestrator-data/quickstart.sqlite 3f2a9c1e --at 2025-01-31T12:00:00Z

The workflow is its full id (its subject) or a short id: a unique prefix (4 characters or more)
of its execution id. --until past the last version and --at before the first execution are
errors.";

const SUBJECT_EXAMPLES: &str = "\
Examples:
  orchestrator subject new --orchestrator arvo.orc.calc.average --version 1.0.0 --initiator com.my.client
  orchestrator subject parse \"$SUBJECT\"
  orchestrator subject child \"$SUBJECT\" --orchestrator arvo.orc.calc.add --version 1.0.0";

const EVENT_EXAMPLES: &str = "\
Examples:
  orchestrator event validate event.json
  orchestrator event validate --check-subject < event.json";

const CONTRACT_EXAMPLES: &str = "\
Examples:
  orchestrator contract list
  orchestrator contract schema com.calc.add --version latest";

const CHART_EXAMPLES: &str = "\
Examples:
  orchestrator chart check shared/conformance/statecharts
  orchestrator chart simulate chart.json go +1000 stop
  orchestrator chart export --format mermaid chart.json";

/// Runs a parsed command line with what `tool` was taught, reading standard input from `stdin`
/// and writing results to `out`.
pub(crate) fn run(tool: &Tool, cli: &Cli, stdin: &mut dyn Read, out: &mut dyn Write) -> Result<(), CliError> {
    match &cli.command {
        Command::Subject(command) => subject_cmd::run(command, out)?,
        Command::Event(command) => event_cmd::run(command, tool, stdin, out)?,
        Command::Contract(command) => contract_cmd::run(command, tool, out)?,
        Command::Chart(command) => chart_cmd::run(command, out)?,
        Command::History(args) => journal_cmd::history(args, out)?,
        Command::Replay(args) => journal_cmd::replay(args, tool, out)?,
        Command::Workflows(command) => workflows_cmd::run(command, out)?,
        Command::Serve(args) => crate::console::serve(args, out)?,
    }
    out.flush().map_err(CliError::output)
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::*;

    #[test]
    fn command_line_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn meta_values_must_be_key_value_pairs() {
        let err = Cli::try_parse_from([
            "orchestrator",
            "subject",
            "new",
            "--orchestrator",
            "arvo.orc.x",
            "--version",
            "1.0.0",
            "--initiator",
            "com.x.y",
            "--meta",
            "oops",
        ])
        .expect_err("not KEY=VALUE");
        assert_eq!(err.exit_code(), 2);
        assert!(err.to_string().contains("KEY=VALUE"), "{err}");
    }
}
