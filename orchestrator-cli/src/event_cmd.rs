//! `orchestrator event …`: validate CloudEvents/Arvo events.

use std::fs::File;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};
use orchestrator::FieldError;
use orchestrator::contract::{ArvoContract, VersionedContract};
use orchestrator::dataschema;
use orchestrator::event::{DEFAULT_MAX_EVENT_BYTES, Event, EventError, ParseOptions};
use orchestrator::subject::{Subject, SubjectError};
use orchestrator::violation::Violation;
use serde_json::Value;

use crate::contract_cmd;
use crate::error::CliError;
use crate::output::{self, JsonStyle};
use crate::tool::Tool;

/// The `event` subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum EventCommand {
    /// Validate an event (CloudEvents structured JSON) and print it normalised, or list every
    /// rule it breaks.
    #[command(after_help = VALIDATE_EXAMPLES)]
    Validate(ValidateArgs),
}

const VALIDATE_EXAMPLES: &str = "\
A valid event is printed to stdout as JSON in Arvo's key order (exit status 0). An invalid one
makes the command print every broken rule to stderr, one per line (exit status 1).

Examples:
  orchestrator event validate event.json
  cat event.json | orchestrator event validate
  orchestrator event validate --check-subject --contract com.calc.add - < event.json";

/// Arguments of `event validate`.
#[derive(Debug, Args)]
pub(crate) struct ValidateArgs {
    /// The event file; `-` or nothing reads standard input.
    #[arg(value_name = "FILE")]
    pub(crate) input: Option<PathBuf>,
    /// Largest event accepted, in bytes.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_EVENT_BYTES)]
    pub(crate) max_bytes: usize,
    /// Also check that the event's subject is a valid orchestration subject.
    #[arg(long)]
    pub(crate) check_subject: bool,
    /// Also check a valid event against an example contract, named by accepted type or URI: the
    /// version is the one the event's dataschema names, else the latest.
    #[arg(long, value_name = "TYPE_OR_URI")]
    pub(crate) contract: Option<String>,
    /// Print the valid event on one line.
    #[arg(long)]
    pub(crate) compact: bool,
}

/// Runs an `event` subcommand, reading standard input from `stdin` and writing to `out`.
pub(crate) fn run(
    command: &EventCommand,
    tool: &Tool,
    stdin: &mut dyn Read,
    out: &mut dyn Write,
) -> Result<(), CliError> {
    match command {
        EventCommand::Validate(args) => validate(args, tool, stdin, out),
    }
}

/// `event validate`.
fn validate(
    args: &ValidateArgs,
    tool: &Tool,
    stdin: &mut dyn Read,
    out: &mut dyn Write,
) -> Result<(), CliError> {
    // An unknown contract is a usage error, reported before any input is read.
    let contract = args.contract.as_deref().map(|c| contract_cmd::find_contract(tool, c)).transpose()?;
    let bytes = read_input(args.input.as_deref(), stdin, args.max_bytes)?;
    match ParseOptions::default().max_bytes(args.max_bytes).parse(&bytes) {
        Ok(event) => {
            let mut rules = Vec::new();
            if args.check_subject
                && let Err(err) = event.orchestration_subject()
            {
                rules.extend(subject_rules(&err));
            }
            if let Some(contract) = contract {
                rules.extend(contract_rules(contract, &event));
            }
            if !rules.is_empty() {
                return Err(CliError::Invalid { what: "event".into(), rules });
            }
            output::write_json(out, &event.to_json_value(), JsonStyle::from_compact_flag(args.compact))
        }
        Err(EventError::Invalid(errors)) => {
            let mut rules: Vec<String> = errors.errors.iter().map(ToString::to_string).collect();
            if args.check_subject {
                rules.extend(raw_subject_rules(&bytes));
            }
            Err(CliError::Invalid { what: errors.what.into_owned(), rules })
        }
        Err(other) => Err(CliError::Input(other.to_string())),
    }
}

/// Reads the whole input (a file, or `stdin` for `None` and `-`), keeping at most
/// `max_bytes + 1` bytes in memory; a larger input is a size error giving its real size.
fn read_input(path: Option<&Path>, stdin: &mut dyn Read, max_bytes: usize) -> Result<Vec<u8>, CliError> {
    let (bytes, size) = match path {
        None => read_bounded(stdin, max_bytes),
        Some(path) if path.as_os_str() == "-" => read_bounded(stdin, max_bytes),
        Some(path) => File::open(path).and_then(|mut file| read_bounded(&mut file, max_bytes)),
    }
    .map_err(|source| CliError::Io {
        context: match path {
            Some(path) if path.as_os_str() != "-" => format!("cannot read `{}`", path.display()),
            _ => "cannot read standard input".to_owned(),
        },
        source,
    })?;
    if size > max_bytes {
        return Err(CliError::Input(EventError::TooLarge { size, max: max_bytes }.to_string()));
    }
    Ok(bytes)
}

/// Reads up to `max_bytes + 1` bytes into memory and counts (without keeping) the rest.
fn read_bounded(reader: &mut dyn Read, max_bytes: usize) -> io::Result<(Vec<u8>, usize)> {
    let limit = u64::try_from(max_bytes).unwrap_or(u64::MAX).saturating_add(1);
    let mut bytes = Vec::new();
    reader.take(limit).read_to_end(&mut bytes)?;
    let mut size = bytes.len();
    if size > max_bytes {
        let rest = io::copy(reader, &mut io::sink())?;
        size = size.saturating_add(usize::try_from(rest).unwrap_or(usize::MAX));
    }
    Ok((bytes, size))
}

/// The rules an event's subject breaks as an orchestration subject, with fields under `subject.`.
fn subject_rules(err: &SubjectError) -> Vec<String> {
    match err {
        SubjectError::Invalid(errors) => errors
            .errors
            .iter()
            .map(|e| {
                FieldError {
                    field: format!("subject.{}", e.field).into(),
                    rule: e.rule.clone(),
                    value: e.value.clone(),
                }
                .to_string()
            })
            .collect(),
        other => {
            let text = other.to_string();
            let reason = text.strip_prefix("invalid orchestration subject: ").unwrap_or(&text);
            vec![
                FieldError::new("subject", format!("must be an orchestration subject: {reason}"), None)
                    .to_string(),
            ]
        }
    }
}

/// For an event whose envelope is invalid: the rules its `subject` string (when there is one)
/// breaks as an orchestration subject.
fn raw_subject_rules(bytes: &[u8]) -> Vec<String> {
    let Ok(value) = serde_json::from_slice::<Value>(bytes) else { return Vec::new() };
    match value.get("subject").and_then(Value::as_str) {
        // A missing or empty subject is already reported by the envelope's rules.
        Some(subject) if !subject.is_empty() => match Subject::parse(subject) {
            Ok(_) => Vec::new(),
            Err(err) => subject_rules(&err),
        },
        _ => Vec::new(),
    }
}

/// The rules a valid event breaks against `contract`. The version is the one its dataschema
/// names (the latest when it names none, or names the wildcard `0.0.0`); an event of the accepted
/// type is checked with [`VersionedContract::validate_accepts`], any other with
/// [`VersionedContract::validate_emitted`].
fn contract_rules(contract: &ArvoContract, event: &Event) -> Vec<String> {
    let mut rules = Vec::new();
    let mut check_envelope = true;
    let version = match event.dataschema().map(|ds| (ds, dataschema::parse(ds))) {
        None => contract.version_str("latest"),
        Some((_, Some(named))) if named.uri == contract.uri() => {
            if named.is_wildcard() {
                contract.version_str("latest")
            } else {
                contract.version_str(&named.version.to_string())
            }
        }
        Some((ds, _)) => {
            // Reported here for every event type; the data is still checked against the latest version.
            let rule = format!("must name a version of contract {0}: '{0}/<X.Y.Z>'", contract.uri());
            rules.push(FieldError::new("dataschema", rule, Some(ds)).to_string());
            check_envelope = false;
            contract.version_str("latest")
        }
    };
    let version = match version {
        Ok(version) => version,
        Err(violation) => {
            rules.push(violation.to_string());
            return rules;
        }
    };
    let checked = if check_envelope && event.r#type() == contract.r#type() {
        version.validate_accepts(event)
    } else {
        version.validate_emitted(event)
    };
    if let Err(violation) = checked {
        rules.extend(violation_rules(&violation, version, event));
    }
    rules
}

/// A violation as broken rules: one per schema error when the violation carries them (as
/// `metadata.errors[].{path, message}`), else the violation itself.
fn violation_rules(violation: &Violation, version: &VersionedContract, event: &Event) -> Vec<String> {
    let schema_errors = match violation {
        Violation::Contract { metadata: Some(metadata), .. } => {
            metadata.get("errors").and_then(Value::as_array).map(|errors| {
                errors
                    .iter()
                    .filter_map(|e| Some((e.get("path")?.as_str()?, e.get("message")?.as_str()?)))
                    .collect::<Vec<_>>()
            })
        }
        _ => None,
    };
    match schema_errors {
        Some(errors) if !errors.is_empty() => errors
            .into_iter()
            .map(|(path, message)| {
                format!(
                    "`data{path}` {message} (schema of {} in contract {})",
                    event.r#type(),
                    version.dataschema()
                )
            })
            .collect(),
        _ => vec![violation.to_string()],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn validate_str(args: &ValidateArgs, input: &str) -> Result<String, CliError> {
        let mut out = Vec::new();
        let tool = Tool::new().contracts(orchestrator_examples::all_contracts());
        validate(args, &tool, &mut input.as_bytes(), &mut out)?;
        Ok(String::from_utf8(out).expect("utf-8"))
    }

    fn args() -> ValidateArgs {
        ValidateArgs {
            input: None,
            max_bytes: DEFAULT_MAX_EVENT_BYTES,
            check_subject: false,
            contract: None,
            compact: true,
        }
    }

    fn event(r#type: &str, dataschema: Option<&str>, data: Value) -> String {
        let mut builder =
            Event::builder().source("com.test.client").r#type(r#type).subject("s").data_json(data);
        if let Some(ds) = dataschema {
            builder = builder.dataschema(ds);
        }
        builder.build().expect("valid event").to_json_string()
    }

    fn broken_rules(result: Result<String, CliError>) -> Vec<String> {
        match result {
            Err(CliError::Invalid { rules, .. }) => rules,
            other => panic!("expected broken rules, got {other:?}"),
        }
    }

    #[test]
    fn reads_bounded_but_reports_the_real_size() {
        let (bytes, size) = read_bounded(&mut &[7u8; 100][..], 10).expect("read");
        assert_eq!((bytes.len(), size), (11, 100));
        let err =
            validate_str(&ValidateArgs { max_bytes: 10, ..args() }, &"x".repeat(100)).expect_err("too large");
        assert_eq!(err.to_string(), "event is 100 bytes, larger than the maximum of 10 bytes");
    }

    #[test]
    fn valid_events_are_printed() {
        let input = event("com.calc.add", None, serde_json::json!({"a": 1, "b": 2}));
        assert_eq!(validate_str(&args(), &input).expect("valid").trim_end(), input);
    }

    #[test]
    fn checks_the_subject_even_when_the_envelope_is_invalid() {
        let rules = broken_rules(validate_str(
            &ValidateArgs { check_subject: true, ..args() },
            r#"{"subject":"nope"}"#,
        ));
        assert!(
            rules.iter().any(|r| r.starts_with("`subject` must be an orchestration subject")),
            "{rules:?}"
        );
        assert!(rules.iter().any(|r| r.starts_with("`id` is required")), "{rules:?}");
    }

    #[test]
    fn names_broken_subject_fields() {
        let subject = orchestrator::subject::SubjectContent {
            orchestrator: orchestrator::subject::SubjectOrchestrator {
                name: "bad".into(),
                version: "1.0.0".into(),
            },
            execution: orchestrator::subject::SubjectExecution {
                id: "x".into(),
                initiator: "com.test.client".into(),
                domain: None,
            },
            meta: Default::default(),
        };
        let err = Subject::create(subject).expect_err("invalid");
        assert!(subject_rules(&err)[0].starts_with("`subject.orchestrator.name` must be a reverse-DNS name"));
    }

    #[test]
    fn checks_data_against_the_contract() {
        let with_contract = ValidateArgs { contract: Some("com.calc.divide".into()), ..args() };
        let good = event(
            "com.calc.divide",
            Some("#/calc/divide/2.0.0"),
            serde_json::json!({"numerator": 1, "denominator": 2, "precision": 3}),
        );
        validate_str(&with_contract, &good).expect("valid against 2.0.0");

        // Version 1.0.0 has no `precision`, but a 0 denominator and a missing numerator break it.
        let bad =
            event("com.calc.divide", Some("#/calc/divide/1.0.0"), serde_json::json!({"denominator": 0}));
        let rules = broken_rules(validate_str(&with_contract, &bad));
        assert_eq!(rules.len(), 2, "{rules:?}");
        assert!(rules.iter().all(|r| r.contains("#/calc/divide/1.0.0")), "{rules:?}");

        let unknown_version = event("com.calc.divide", Some("#/calc/divide/9.0.0"), serde_json::json!({}));
        let rules = broken_rules(validate_str(&with_contract, &unknown_version));
        assert!(rules[0].contains("9.0.0"), "{rules:?}");

        let emitted = event("evt.calc.divide.success", None, serde_json::json!({"quotient": "x"}));
        let rules = broken_rules(validate_str(&with_contract, &emitted));
        assert!(rules[0].starts_with("`data/quotient`"), "{rules:?}");

        let wrong_uri = event("com.calc.divide", Some("#/calc/add/1.0.0"), serde_json::json!({}));
        let rules = broken_rules(validate_str(&with_contract, &wrong_uri));
        assert!(
            rules[0].starts_with("`dataschema` must name a version of contract #/calc/divide"),
            "{rules:?}"
        );
        assert!(rules.len() > 1, "the data is still checked: {rules:?}");
    }

    #[test]
    fn unknown_contracts_are_usage_errors() {
        let err = validate_str(&ValidateArgs { contract: Some("com.nope".into()), ..args() }, "{}")
            .expect_err("unknown");
        assert!(matches!(err, CliError::Usage(_)), "{err}");
    }
}
