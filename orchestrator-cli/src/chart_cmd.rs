//! `orchestrator chart …`: run statechart conformance fixtures, simulate a JSON chart, export a
//! chart as XState JSON, Mermaid or Graphviz DOT.

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::{Args, Subcommand, ValueEnum};
use orchestrator_chart::json::{self, JsonChart, JsonHost};
use orchestrator_chart::{Chart, Interpreter, RunError, export, fixture};
use serde_json::{Value, json};

use crate::error::CliError;
use crate::output;

/// The `chart` subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum ChartCommand {
    /// Run conformance fixtures and report PASS / FAIL for each.
    #[command(after_help = CHECK_EXAMPLES)]
    Check(CheckArgs),
    /// Start a JSON chart, send it events (or advance its clock) and print the active states.
    #[command(after_help = SIMULATE_EXAMPLES)]
    Simulate(SimulateArgs),
    /// Print a JSON chart as an XState v5 machine config, a Mermaid state diagram or a Graphviz
    /// digraph.
    #[command(after_help = EXPORT_EXAMPLES)]
    Export(ExportArgs),
}

const CHECK_EXAMPLES: &str = "\
Prints `PASS <file>` or `FAIL <file>: <why>` for each fixture, then `N passed, M failed`.
Exit status: 0 when every fixture passed, 1 otherwise (an unreadable or invalid fixture fails).

Examples:
  orchestrator chart check shared/conformance/statecharts
  orchestrator chart check w3c-test144.json scion-basic-basic1.json";

const SIMULATE_EXAMPLES: &str = "\
CHART is a fixture file (its `machine`, `guards` and `actions` are used) or a bare machine.
Each EVENT is sent in turn; `+<ms>` advances the clock instead. After the start and after each
EVENT one line shows the active atomic states, sorted; `(done)` marks a halted machine.

Examples:
  orchestrator chart simulate w3c-test144.json
  orchestrator chart simulate traffic.json TIMER +1000 TIMER --context";

const EXPORT_EXAMPLES: &str = "\
With --workflow NAME, CHART is a store (a SQLite file or a postgres:// URL) and the chart is the
one a node recorded there for orchestrator NAME (its latest version without --version): a
`machine!`'s chart, without the program that declared it.

Examples:
  orchestrator chart export --format xstate chart.json > machine.json
  orchestrator chart export --format mermaid chart.json
  orchestrator chart export --format dot chart.json | dot -Tsvg > chart.svg
  orchestrator chart export --format mermaid orchestrator-data/quickstart.sqlite --workflow arvo.orc.shop.order";

/// Arguments of `chart check`.
#[derive(Debug, Args)]
pub(crate) struct CheckArgs {
    /// Fixture files, or directories (all their `*.json` files, sorted by name).
    #[arg(value_name = "FIXTURE", required = true)]
    pub(crate) paths: Vec<PathBuf>,
}

/// Arguments of `chart simulate`.
#[derive(Debug, Args)]
pub(crate) struct SimulateArgs {
    /// The chart: a fixture file or a bare machine JSON file.
    #[arg(value_name = "CHART")]
    pub(crate) chart: PathBuf,
    /// Events to send in order; `+<ms>` advances the clock by that many milliseconds.
    #[arg(value_name = "EVENT")]
    pub(crate) events: Vec<String>,
    /// Print the context after every step (by default only at the end, when not empty).
    #[arg(long)]
    pub(crate) context: bool,
}

/// An export format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Format {
    /// XState v5 machine config (pretty JSON).
    Xstate,
    /// Mermaid `stateDiagram-v2`.
    Mermaid,
    /// Graphviz digraph.
    Dot,
}

/// Arguments of `chart export`.
#[derive(Debug, Args)]
pub(crate) struct ExportArgs {
    /// The output format.
    #[arg(long, value_enum)]
    pub(crate) format: Format,
    /// The chart: a fixture file or a bare machine JSON file; with `--workflow`, a store.
    #[arg(value_name = "CHART")]
    pub(crate) chart: PathBuf,
    /// Export the chart a node recorded in the store CHART for this orchestrator (its
    /// contract's accepted type, such as `arvo.orc.shop.order`).
    #[arg(long, value_name = "NAME")]
    pub(crate) workflow: Option<String>,
    /// With `--workflow`: the orchestrator's version (default: the latest recorded).
    #[arg(long, value_name = "VERSION", requires = "workflow")]
    pub(crate) version: Option<String>,
    /// With `--workflow` on PostgreSQL: the schema holding the tables.
    #[arg(long, default_value = "orchestrator")]
    pub(crate) schema: String,
}

/// Runs a `chart` subcommand, writing its result to `out`.
pub(crate) fn run(command: &ChartCommand, out: &mut dyn Write) -> Result<(), CliError> {
    match command {
        ChartCommand::Check(args) => check(args, out),
        ChartCommand::Simulate(args) => simulate(args, out),
        ChartCommand::Export(args) => export_chart(args, out),
    }
}

/// The fixture files named by `paths`: files as given, directories expanded to their `*.json`
/// files sorted by name. An unreadable directory is an entry with its error.
fn fixture_files(paths: &[PathBuf]) -> Vec<Result<PathBuf, (PathBuf, String)>> {
    let mut files = Vec::new();
    for path in paths {
        if !path.is_dir() {
            files.push(Ok(path.clone()));
            continue;
        }
        let entries = match std::fs::read_dir(path) {
            Ok(entries) => entries,
            Err(e) => {
                files.push(Err((path.clone(), format!("cannot read directory: {e}"))));
                continue;
            }
        };
        let mut found: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.is_file() && p.extension().is_some_and(|x| x == "json"))
            .collect();
        found.sort();
        files.extend(found.into_iter().map(Ok));
    }
    files
}

/// One fixture's line and whether it passed.
fn check_one(path: &Path) -> (String, bool) {
    let shown = path.display().to_string();
    match fixture::run_file(path) {
        Ok(mut report) => {
            report.file = shown;
            (report.summary(), report.passed())
        }
        Err(e) => {
            // The error names the file by its file name; show the path instead.
            let text = e.to_string();
            let name = path.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default();
            let why = text.strip_prefix(&format!("{name}: ")).unwrap_or(&text);
            (format!("FAIL {shown}: {why}"), false)
        }
    }
}

/// `chart check`.
fn check(args: &CheckArgs, out: &mut dyn Write) -> Result<(), CliError> {
    let files = fixture_files(&args.paths);
    if files.is_empty() {
        return Err(CliError::Usage("no fixture files found (a directory is searched for *.json)".into()));
    }
    let (mut passed, mut failed) = (0usize, 0usize);
    for file in &files {
        let (line, ok) = match file {
            Ok(path) => check_one(path),
            Err((path, why)) => (format!("FAIL {}: {why}", path.display()), false),
        };
        if ok {
            passed += 1;
        } else {
            failed += 1;
        }
        output::write_line(out, &line)?;
    }
    output::write_line(out, &format!("{passed} passed, {failed} failed"))?;
    if failed > 0 {
        out.flush().map_err(CliError::output)?;
        return Err(CliError::Input(format!("{failed} of {} fixtures failed", passed + failed)));
    }
    Ok(())
}

/// Loads a chart from a fixture file (`machine`, `guards`, `actions`) or a bare machine file.
fn load_chart(path: &Path) -> Result<JsonChart, CliError> {
    let shown = path.display();
    let text =
        std::fs::read_to_string(path).map_err(|e| CliError::Input(format!("cannot read {shown}: {e}")))?;
    let doc: Value =
        serde_json::from_str(&text).map_err(|e| CliError::Input(format!("{shown}: invalid JSON: {e}")))?;
    let doc = if doc.get("machine").is_some() { doc } else { json!({ "machine": doc }) };
    json::load(&doc).map_err(|e| CliError::Input(format!("{shown}: {e}")))
}

/// One `simulate` step.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Step<'a> {
    /// Send this event.
    Send(&'a str),
    /// Advance the clock by this many ms.
    Advance(u64),
}

fn parse_step(arg: &str) -> Result<Step<'_>, CliError> {
    match arg.strip_prefix('+') {
        None => Ok(Step::Send(arg)),
        Some(ms) => ms
            .parse()
            .map(Step::Advance)
            .map_err(|_| CliError::Usage(format!("`{arg}`: a clock advance is `+<ms>`, such as +1000"))),
    }
}

/// `<label>: [a, b.c]`, with ` (done)` once the machine halted.
fn state_line(machine: &Interpreter<JsonHost, &Chart>, label: &str) -> String {
    let mut active = machine.active_atomic_paths();
    active.sort_unstable();
    let done = if machine.is_done() { " (done)" } else { "" };
    format!("{label}: [{}]{done}", active.join(", "))
}

fn context_line(machine: &Interpreter<JsonHost, &Chart>) -> String {
    format!("context: {}", Value::Object(machine.context().clone()))
}

/// `chart simulate`.
fn simulate(args: &SimulateArgs, out: &mut dyn Write) -> Result<(), CliError> {
    let steps = args.events.iter().map(|e| parse_step(e)).collect::<Result<Vec<_>, _>>()?;
    let loaded = load_chart(&args.chart)?;
    let mut machine = Interpreter::new(&loaded.chart, loaded.host.clone(), loaded.context.clone());
    let fail = |label: &str, e: RunError| CliError::Input(format!("{label}: {e}"));
    machine.start().map_err(|e| fail("start", e))?;
    output::write_line(out, &state_line(&machine, "start"))?;
    if args.context {
        output::write_line(out, &context_line(&machine))?;
    }
    for (arg, step) in args.events.iter().zip(steps) {
        match step {
            Step::Send(event) => machine.send(event),
            Step::Advance(ms) => machine.advance(ms),
        }
        .map_err(|e| fail(arg, e))?;
        output::write_line(out, &state_line(&machine, arg))?;
        if args.context {
            output::write_line(out, &context_line(&machine))?;
        }
    }
    if !args.context && !machine.context().is_empty() {
        output::write_line(out, &context_line(&machine))?;
    }
    Ok(())
}

/// `chart export`.
fn export_chart(args: &ExportArgs, out: &mut dyn Write) -> Result<(), CliError> {
    if let Some(workflow) = &args.workflow {
        return crate::recorded_chart::export(args, workflow, out);
    }
    let loaded = load_chart(&args.chart)?;
    match args.format {
        Format::Xstate => {
            let machine = export::to_xstate_json(&loaded.chart, &loaded.names);
            output::write_pretty(out, &export::xstate::with_context(machine, &loaded.context))
        }
        Format::Mermaid => out
            .write_all(export::to_mermaid(&loaded.chart, &loaded.names).as_bytes())
            .map_err(CliError::output),
        Format::Dot => {
            out.write_all(export::to_dot(&loaded.chart, &loaded.names).as_bytes()).map_err(CliError::output)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_are_events_or_clock_advances() {
        assert_eq!(parse_step("go").expect("event"), Step::Send("go"));
        assert_eq!(parse_step("+250").expect("advance"), Step::Advance(250));
        let err = parse_step("+soon").expect_err("not a number");
        assert!(matches!(err, CliError::Usage(_)), "{err}");
    }

    #[test]
    fn missing_directories_and_files_become_failures() {
        let missing = PathBuf::from("/nonexistent/chart.json");
        let files = fixture_files(std::slice::from_ref(&missing));
        assert_eq!(files.len(), 1);
        let (line, ok) = check_one(files[0].as_ref().expect("a file path"));
        assert!(!ok);
        assert!(line.starts_with("FAIL /nonexistent/chart.json: cannot read"), "{line}");
    }
}
