//! `chart export STORE --workflow NAME`: the chart a node recorded in a store's catalog.

use std::io::Write;

use orchestrator::memory::{Catalog, DefinitionKind, Recorded};
use orchestrator::semver::SemVer;

use crate::chart_cmd::{ExportArgs, Format};
use crate::error::CliError;
use crate::output;
use crate::store::Store;

/// Writes the recorded chart of orchestrator `workflow` in `args.format`.
pub(crate) fn export(args: &ExportArgs, workflow: &str, out: &mut dyn Write) -> Result<(), CliError> {
    let location = args.chart.to_string_lossy();
    let rt = crate::journal_cmd::runtime()?;
    let store = rt.block_on(Store::open(&location, &args.schema))?;
    let recorded = rt
        .block_on(store.definitions())
        .map_err(|e| CliError::Input(format!("cannot read the catalog of {location}: {e}")))?;
    let chosen = choose(&recorded, workflow, args.version.as_deref())?;
    let document = &chosen.definition.document;
    let chart = &document["chart"];
    if chart.is_null() {
        return Err(CliError::Input(format!(
            "orchestrator {workflow} {} is a resumable: it has no chart",
            chosen.definition.version
        )));
    }
    let text = |key: &str| {
        chart[key]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| CliError::Input(format!("the recorded chart of {workflow} has no `{key}` export")))
    };
    match args.format {
        Format::Xstate => output::write_pretty(out, &chart["xstate"]),
        Format::Mermaid => out.write_all(text("mermaid")?.as_bytes()).map_err(CliError::output),
        Format::Dot => out.write_all(text("dot")?.as_bytes()).map_err(CliError::output),
    }
}

/// The recorded orchestrator `name` at `version` (the latest when `None`).
pub(crate) fn choose<'a>(
    recorded: &'a [Recorded],
    name: &str,
    version: Option<&str>,
) -> Result<&'a Recorded, CliError> {
    let mut versions: Vec<&Recorded> = recorded
        .iter()
        .filter(|r| r.definition.kind == DefinitionKind::Orchestrator && r.definition.name == name)
        .collect();
    if versions.is_empty() {
        let known: Vec<&str> = recorded
            .iter()
            .filter(|r| r.definition.kind == DefinitionKind::Orchestrator)
            .map(|r| r.definition.name.as_str())
            .collect();
        return Err(CliError::Usage(if known.is_empty() {
            format!(
                "unknown workflow `{name}`: the store's catalog holds none (no node recorded its workflows there yet)"
            )
        } else {
            format!("unknown workflow `{name}`; workflows in the store: {}", known.join(", "))
        }));
    }
    versions.sort_by_key(|r| r.definition.version.parse::<SemVer>().ok());
    match version {
        None | Some("latest") => Ok(versions[versions.len() - 1]),
        Some(version) => {
            versions.iter().copied().find(|r| r.definition.version == version).ok_or_else(|| {
                let listed: Vec<&str> = versions.iter().map(|r| r.definition.version.as_str()).collect();
                CliError::Usage(format!(
                    "workflow {name} has no recorded version {version}; recorded: {}",
                    listed.join(", ")
                ))
            })
        }
    }
}
