//! `orchestrator contract …`: list the example contracts and print their JSON documents.

use std::io::Write;

use clap::{Args, Subcommand};
use orchestrator::contract::ArvoContract;
use serde_json::{Value, json};

use crate::error::CliError;
use crate::output::{self, JsonStyle};

/// The `contract` subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum ContractCommand {
    /// List the example contracts: accepted type, URI and versions.
    #[command(after_help = LIST_EXAMPLES)]
    List(ListArgs),
    /// Print a contract's JSON document (Arvo's `toJsonSchema()`), or one version's.
    #[command(after_help = SCHEMA_EXAMPLES)]
    Schema(SchemaArgs),
}

const LIST_EXAMPLES: &str = "\
Examples:
  orchestrator contract list
  orchestrator contract list --json";

const SCHEMA_EXAMPLES: &str = "\
Without --version the document lists every version, lowest first (ArvoContract.toJsonSchema());
with --version it describes that version (VersionedArvoContract.toJsonSchema()).

Examples:
  orchestrator contract schema com.calc.add
  orchestrator contract schema '#/calc/divide' --version latest
  orchestrator contract schema arvo.orc.calc.average --version 1.0.0";

/// Arguments of `contract list`.
#[derive(Debug, Args)]
pub(crate) struct ListArgs {
    /// Print the list as a JSON array instead of a table.
    #[arg(long)]
    pub(crate) json: bool,
}

/// Arguments of `contract schema`.
#[derive(Debug, Args)]
pub(crate) struct SchemaArgs {
    /// The contract's accepted event type (such as `com.calc.add`) or its URI (`#/calc/add`).
    #[arg(value_name = "TYPE_OR_URI")]
    pub(crate) contract: String,
    /// Print only this version: `X.Y.Z`, `latest` or `oldest`.
    #[arg(long, value_name = "VERSION")]
    pub(crate) version: Option<String>,
    /// Print the JSON on one line.
    #[arg(long)]
    pub(crate) compact: bool,
}

/// Runs a `contract` subcommand, writing its result to `out`.
pub(crate) fn run(command: &ContractCommand, out: &mut dyn Write) -> Result<(), CliError> {
    match command {
        ContractCommand::List(args) => list(args, out),
        ContractCommand::Schema(args) => schema(args, out),
    }
}

/// The example contracts known to the tool.
fn known_contracts() -> Vec<&'static ArvoContract> {
    orchestrator_examples::all_contracts()
}

/// Finds an example contract by accepted event type or URI; a usage error lists the known ones.
pub(crate) fn find_contract(type_or_uri: &str) -> Result<&'static ArvoContract, CliError> {
    let contracts = known_contracts();
    contracts.iter().copied().find(|c| c.r#type() == type_or_uri || c.uri() == type_or_uri).ok_or_else(|| {
        let known = contracts.iter().map(|c| format!("{} ({})", c.r#type(), c.uri())).collect::<Vec<_>>();
        CliError::Usage(format!("unknown contract `{type_or_uri}`; known contracts: {}", known.join(", ")))
    })
}

/// The version numbers of a contract, lowest first.
fn version_list(contract: &ArvoContract) -> Vec<String> {
    contract.versions().map(|v| v.version_str().to_owned()).collect()
}

/// `contract list`.
fn list(args: &ListArgs, out: &mut dyn Write) -> Result<(), CliError> {
    let contracts = known_contracts();
    if args.json {
        let value: Value = contracts
            .iter()
            .map(|c| {
                json!({
                    "type": c.r#type(),
                    "uri": c.uri(),
                    "versions": version_list(c),
                    "description": c.description(),
                })
            })
            .collect();
        return output::write_pretty(out, &value);
    }
    let rows: Vec<[String; 3]> = contracts
        .iter()
        .map(|c| [c.r#type().to_owned(), c.uri().to_owned(), version_list(c).join(", ")])
        .collect();
    let header = ["TYPE".to_owned(), "URI".to_owned(), "VERSIONS".to_owned()];
    let type_width = rows.iter().chain([&header]).map(|r| r[0].len()).max().unwrap_or(0);
    let uri_width = rows.iter().chain([&header]).map(|r| r[1].len()).max().unwrap_or(0);
    for [ty, uri, versions] in [&header].into_iter().chain(&rows) {
        output::write_line(out, &format!("{ty:<type_width$}  {uri:<uri_width$}  {versions}"))?;
    }
    Ok(())
}

/// `contract schema`.
fn schema(args: &SchemaArgs, out: &mut dyn Write) -> Result<(), CliError> {
    let contract = find_contract(&args.contract)?;
    let document = match &args.version {
        None => contract.to_json_schema(),
        Some(version) => contract
            .version_str(version)
            .map_err(|violation| CliError::Usage(violation.message().to_owned()))?
            .to_json_schema(),
    };
    output::write_json(out, &document, JsonStyle::from_compact_flag(args.compact))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run_to_string(command: &ContractCommand) -> Result<String, CliError> {
        let mut out = Vec::new();
        run(command, &mut out)?;
        Ok(String::from_utf8(out).expect("utf-8"))
    }

    #[test]
    fn finds_contracts_by_type_or_uri() {
        assert_eq!(find_contract("com.calc.add").expect("by type").uri(), "#/calc/add");
        assert_eq!(find_contract("#/calc/divide").expect("by uri").r#type(), "com.calc.divide");
        let err = find_contract("com.nope").expect_err("unknown");
        assert!(matches!(err, CliError::Usage(_)));
        assert!(err.to_string().contains("com.calc.add (#/calc/add)"), "{err}");
    }

    #[test]
    fn lists_a_table_with_every_version() {
        let text = run_to_string(&ContractCommand::List(ListArgs { json: false })).expect("list");
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].starts_with("TYPE"), "{text}");
        assert!(
            lines.iter().any(|l| l.starts_with("com.calc.divide") && l.ends_with("1.0.0, 2.0.0")),
            "{text}"
        );
        assert_eq!(lines.len(), 1 + known_contracts().len());
    }

    #[test]
    fn unknown_versions_are_usage_errors() {
        let args =
            SchemaArgs { contract: "com.calc.add".into(), version: Some("9.9.9".into()), compact: true };
        let err = run_to_string(&ContractCommand::Schema(args)).expect_err("no such version");
        assert!(matches!(err, CliError::Usage(_)), "{err}");
        assert!(err.to_string().contains("9.9.9"), "{err}");
    }

    #[test]
    fn oldest_and_latest_select_versions() {
        for (selector, expected) in [("oldest", "1.0.0"), ("latest", "2.0.0")] {
            let args = SchemaArgs {
                contract: "com.calc.divide".into(),
                version: Some(selector.into()),
                compact: true,
            };
            let text = run_to_string(&ContractCommand::Schema(args)).expect("schema");
            let doc: Value = serde_json::from_str(&text).expect("json");
            assert_eq!(doc["version"], expected);
        }
    }
}
