//! `orchestrator contract …`: list contracts and print their JSON documents, from a store's
//! catalog (what its nodes recorded) or from the contracts the [`Tool`] was taught.

use std::io::Write;

use clap::{Args, Subcommand};
use orchestrator::contract::ArvoContract;
use orchestrator::memory::{Catalog, DefinitionKind, Recorded};
use orchestrator::semver::SemVer;
use serde_json::{Value, json};

use crate::error::CliError;
use crate::output::{self, JsonStyle};
use crate::store::Store;
use crate::tool::Tool;

/// The `contract` subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum ContractCommand {
    /// List contracts: accepted type, URI and versions.
    #[command(after_help = LIST_EXAMPLES)]
    List(ListArgs),
    /// Print a contract's JSON document (Arvo's `toJsonSchema()`), or one version's.
    #[command(after_help = SCHEMA_EXAMPLES)]
    Schema(SchemaArgs),
}

const LIST_EXAMPLES: &str = "\
With STORE, the contracts the store's nodes recorded when they started (the contracts of their
orchestrators and of the services these call); without, the contracts this tool was taught (none
for the plain `orchestrator` binary: see the orchestrator-cli library's `Tool`).

Examples:
  orchestrator contract list orchestrator-data/quickstart.sqlite
  orchestrator contract list postgres://postgres@127.0.0.1:5432/test --json";

const SCHEMA_EXAMPLES: &str = "\
From a STORE, a contract's recorded version (the latest without --version). From the contracts
the tool was taught: without --version the document lists every version, lowest first
(ArvoContract.toJsonSchema()); with --version it describes that version
(VersionedArvoContract.toJsonSchema()).

Examples:
  orchestrator contract schema orchestrator-data/quickstart.sqlite com.shop.payment
  orchestrator contract schema orchestrator-data/quickstart.sqlite '#/shop/payment' --version 1.0.0";

/// Arguments of `contract list`.
#[derive(Debug, Args)]
pub(crate) struct ListArgs {
    /// The store: a SQLite file (`sqlite:PATH` or a path), or a `postgres://` URL.
    #[arg(value_name = "STORE")]
    pub(crate) store: Option<String>,
    /// The PostgreSQL schema holding the tables.
    #[arg(long, default_value = "orchestrator")]
    pub(crate) schema: String,
    /// Print the list as a JSON array instead of a table.
    #[arg(long)]
    pub(crate) json: bool,
}

/// Arguments of `contract schema`.
#[derive(Debug, Args)]
pub(crate) struct SchemaArgs {
    /// `[STORE] TYPE_OR_URI`: the store (optional) and the contract's accepted event type (such
    /// as `com.calc.add`) or its URI (`#/calc/add`).
    #[arg(value_name = "STORE_OR_CONTRACT", num_args = 1..=2, required = true)]
    pub(crate) args: Vec<String>,
    /// The PostgreSQL schema holding the tables.
    #[arg(long, default_value = "orchestrator")]
    pub(crate) schema: String,
    /// Print only this version: `X.Y.Z`, `latest` or `oldest`.
    #[arg(long, value_name = "VERSION")]
    pub(crate) version: Option<String>,
    /// Print the JSON on one line.
    #[arg(long)]
    pub(crate) compact: bool,
}

/// Runs a `contract` subcommand, writing its result to `out`.
pub(crate) fn run(command: &ContractCommand, tool: &Tool, out: &mut dyn Write) -> Result<(), CliError> {
    match command {
        ContractCommand::List(args) => match &args.store {
            Some(store) => list_recorded(&recorded(store, &args.schema)?, args.json, out),
            None => list_known(tool, args.json, out),
        },
        ContractCommand::Schema(args) => match args.args.as_slice() {
            [store, contract] => schema_recorded(&recorded(store, &args.schema)?, contract, args, out),
            [contract] => schema_known(tool, contract, args, out),
            _ => Err(CliError::Usage("give a contract, or a store and a contract".to_owned())),
        },
    }
}

/// Finds a contract the tool was taught by accepted event type or URI; a usage error lists the
/// known ones.
pub(crate) fn find_contract(tool: &Tool, type_or_uri: &str) -> Result<&'static ArvoContract, CliError> {
    let contracts = tool.known_contracts();
    contracts.iter().copied().find(|c| c.r#type() == type_or_uri || c.uri() == type_or_uri).ok_or_else(|| {
        if contracts.is_empty() {
            return CliError::Usage(format!(
                "unknown contract `{type_or_uri}`: this tool was taught no contracts (read them from a \
                 store with `contract list STORE`, or build a tool with your contracts: the \
                 orchestrator-cli library's `Tool::contract`)"
            ));
        }
        let known = contracts.iter().map(|c| format!("{} ({})", c.r#type(), c.uri())).collect::<Vec<_>>();
        CliError::Usage(format!("unknown contract `{type_or_uri}`; known contracts: {}", known.join(", ")))
    })
}

/// The version numbers of a contract, lowest first.
fn version_list(contract: &ArvoContract) -> Vec<String> {
    contract.versions().map(|v| v.version_str().to_owned()).collect()
}

/// Writes `rows` (type, URI, versions) as a table, or as JSON with `descriptions`.
fn write_list(
    rows: &[[String; 3]],
    descriptions: &[Value],
    json: bool,
    out: &mut dyn Write,
) -> Result<(), CliError> {
    if json {
        let value: Value = rows
            .iter()
            .zip(descriptions)
            .map(|([ty, uri, versions], description)| {
                json!({
                    "type": ty,
                    "uri": uri,
                    "versions": versions.split(", ").filter(|v| !v.is_empty()).collect::<Vec<_>>(),
                    "description": description,
                })
            })
            .collect();
        return output::write_pretty(out, &value);
    }
    let header = ["TYPE".to_owned(), "URI".to_owned(), "VERSIONS".to_owned()];
    let type_width = rows.iter().chain([&header]).map(|r| r[0].len()).max().unwrap_or(0);
    let uri_width = rows.iter().chain([&header]).map(|r| r[1].len()).max().unwrap_or(0);
    for [ty, uri, versions] in [&header].into_iter().chain(rows) {
        output::write_line(out, &format!("{ty:<type_width$}  {uri:<uri_width$}  {versions}"))?;
    }
    Ok(())
}

/// `contract list` of the contracts the tool was taught.
fn list_known(tool: &Tool, json: bool, out: &mut dyn Write) -> Result<(), CliError> {
    let contracts = tool.known_contracts();
    if contracts.is_empty() && !json {
        return Err(CliError::Usage(
            "this tool was taught no contracts: give a STORE to list the contracts its nodes recorded"
                .to_owned(),
        ));
    }
    let rows: Vec<[String; 3]> = contracts
        .iter()
        .map(|c| [c.r#type().to_owned(), c.uri().to_owned(), version_list(c).join(", ")])
        .collect();
    let descriptions: Vec<Value> = contracts.iter().map(|c| json!(c.description())).collect();
    write_list(&rows, &descriptions, json, out)
}

/// `contract schema` of a contract the tool was taught.
fn schema_known(tool: &Tool, contract: &str, args: &SchemaArgs, out: &mut dyn Write) -> Result<(), CliError> {
    let contract = find_contract(tool, contract)?;
    let document = match &args.version {
        None => contract.to_json_schema(),
        Some(version) => contract
            .version_str(version)
            .map_err(|violation| CliError::Usage(violation.message().to_owned()))?
            .to_json_schema(),
    };
    output::write_json(out, &document, JsonStyle::from_compact_flag(args.compact))
}

/// The contract definitions recorded in `store`'s catalog.
fn recorded(store: &str, schema: &str) -> Result<Vec<Recorded>, CliError> {
    let rt = crate::journal_cmd::runtime()?;
    let opened = rt.block_on(Store::open(store, schema))?;
    let all = rt
        .block_on(opened.definitions())
        .map_err(|e| CliError::Input(format!("cannot read the catalog of {store}: {e}")))?;
    Ok(all.into_iter().filter(|r| r.definition.kind == DefinitionKind::Contract).collect())
}

/// A recorded contract's versions, grouped by accepted type, each with its URI; lowest version
/// first.
fn by_contract(recorded: &[Recorded]) -> Vec<(String, String, Vec<&Recorded>)> {
    let mut contracts: Vec<(String, String, Vec<&Recorded>)> = Vec::new();
    for r in recorded {
        let uri = r.definition.document["uri"].as_str().unwrap_or_default().to_owned();
        match contracts.iter_mut().find(|(ty, _, _)| *ty == r.definition.name) {
            Some((_, _, versions)) => versions.push(r),
            None => contracts.push((r.definition.name.clone(), uri, vec![r])),
        }
    }
    for (_, _, versions) in &mut contracts {
        versions.sort_by_key(|r| r.definition.version.parse::<SemVer>().ok());
    }
    contracts
}

/// `contract list STORE`.
fn list_recorded(recorded: &[Recorded], json: bool, out: &mut dyn Write) -> Result<(), CliError> {
    let contracts = by_contract(recorded);
    let rows: Vec<[String; 3]> = contracts
        .iter()
        .map(|(ty, uri, versions)| {
            let versions: Vec<&str> = versions.iter().map(|r| r.definition.version.as_str()).collect();
            [ty.clone(), uri.clone(), versions.join(", ")]
        })
        .collect();
    let descriptions: Vec<Value> = contracts
        .iter()
        .map(|(_, _, versions)| {
            versions.last().map_or(Value::Null, |r| r.definition.document["description"].clone())
        })
        .collect();
    write_list(&rows, &descriptions, json, out)
}

/// `contract schema STORE TYPE_OR_URI`.
fn schema_recorded(
    recorded: &[Recorded],
    contract: &str,
    args: &SchemaArgs,
    out: &mut dyn Write,
) -> Result<(), CliError> {
    let contracts = by_contract(recorded);
    let Some((ty, _, versions)) = contracts.iter().find(|(ty, uri, _)| ty == contract || uri == contract)
    else {
        let known: Vec<String> = contracts.iter().map(|(ty, uri, _)| format!("{ty} ({uri})")).collect();
        return Err(CliError::Usage(if known.is_empty() {
            format!(
                "unknown contract `{contract}`: the store's catalog holds none (no node recorded its workflows there yet)"
            )
        } else {
            format!("unknown contract `{contract}`; contracts in the store: {}", known.join(", "))
        }));
    };
    let chosen = match args.version.as_deref() {
        None | Some("latest") => versions.last(),
        Some("oldest") => versions.first(),
        Some(version) => versions.iter().find(|r| r.definition.version == version),
    };
    let Some(chosen) = chosen else {
        let listed: Vec<&str> = versions.iter().map(|r| r.definition.version.as_str()).collect();
        return Err(CliError::Usage(format!(
            "contract {ty} has no recorded version {}; recorded: {}",
            args.version.as_deref().unwrap_or_default(),
            listed.join(", ")
        )));
    };
    output::write_json(out, &chosen.definition.document, JsonStyle::from_compact_flag(args.compact))
}
