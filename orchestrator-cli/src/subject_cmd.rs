//! `orchestrator subject …`: decode, create and derive orchestration subjects.

use std::io::Write;

use clap::{Args, Subcommand};
use orchestrator::subject::{Subject, SubjectBuilder};

use crate::error::CliError;
use crate::output::{self, JsonStyle};

/// The `subject` subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum SubjectCommand {
    /// Decode an orchestration subject and print its content as JSON.
    #[command(after_help = PARSE_EXAMPLES)]
    Parse(ParseArgs),
    /// Create a new root orchestration subject and print it.
    #[command(after_help = NEW_EXAMPLES)]
    New(NewArgs),
    /// Derive a child orchestration subject from a parent subject and print it.
    #[command(after_help = CHILD_EXAMPLES)]
    Child(ChildArgs),
}

const PARSE_EXAMPLES: &str = "\
The output has arvo-core's shape:
  {\"orchestrator\":{\"name\",\"version\"},\"execution\":{\"id\",\"initiator\",\"domain\"},\"meta\":{...}}
With --compact it is byte-identical to the JSON arvo-core deflates into the subject.

Examples:
  orchestrator subject parse eJw1jkEKAzEIRe/ieioZ6KLMbcRKKzQJGBsKIXevM53+...
  orchestrator subject parse --compact \"$SUBJECT\"";

const NEW_EXAMPLES: &str = "\
The execution id is a fresh uuid v4 unless --execution-id is given.

Examples:
  orchestrator subject new --orchestrator arvo.orc.calc.average --version 1.0.0 --initiator com.my.client
  orchestrator subject new --orchestrator arvo.orc.calc.average --version 1.0.0 \\
      --initiator com.my.client --domain external.review --meta tenant=acme --meta region=eu-west-1";

const CHILD_EXAMPLES: &str = "\
The child's initiator is the parent's orchestrator name, its domain is the parent's unless
--domain or --no-domain is given, and its meta is the parent's meta overlaid with --meta.

Examples:
  orchestrator subject child \"$PARENT\" --orchestrator arvo.orc.calc.add --version 1.0.0
  orchestrator subject child \"$PARENT\" --orchestrator arvo.orc.calc.add --version 1.0.0 --meta step=2";

/// Arguments of `subject parse`.
#[derive(Debug, Args)]
pub(crate) struct ParseArgs {
    /// The encoded subject (base64 of zlib-deflated JSON), as found in `event.subject`.
    #[arg(value_name = "SUBJECT")]
    pub(crate) subject: String,
    /// Print the JSON on one line, exactly as arvo-core writes it.
    #[arg(long)]
    pub(crate) compact: bool,
}

/// Arguments of `subject new`.
#[derive(Debug, Args)]
pub(crate) struct NewArgs {
    /// Orchestrator name (reverse-DNS), such as `arvo.orc.calc.average`.
    #[arg(long, value_name = "NAME")]
    pub(crate) orchestrator: String,
    /// Orchestrator version (semver MAJOR.MINOR.PATCH; `0.0.0` means any).
    #[arg(long, value_name = "VERSION")]
    pub(crate) version: String,
    /// Who starts the execution (reverse-DNS), such as `com.my.client`.
    #[arg(long, value_name = "NAME")]
    pub(crate) initiator: String,
    #[command(flatten)]
    pub(crate) common: CommonArgs,
}

/// Arguments of `subject child`.
#[derive(Debug, Args)]
pub(crate) struct ChildArgs {
    /// The parent's encoded subject.
    #[arg(value_name = "PARENT")]
    pub(crate) parent: String,
    /// The child orchestrator's name (reverse-DNS).
    #[arg(long, value_name = "NAME")]
    pub(crate) orchestrator: String,
    /// The child orchestrator's version (semver MAJOR.MINOR.PATCH).
    #[arg(long, value_name = "VERSION")]
    pub(crate) version: String,
    /// Do not inherit the parent's execution domain.
    #[arg(long, conflicts_with = "domain")]
    pub(crate) no_domain: bool,
    #[command(flatten)]
    pub(crate) common: CommonArgs,
}

/// Options shared by `subject new` and `subject child`.
#[derive(Debug, Args)]
pub(crate) struct CommonArgs {
    /// Execution domain, such as `external.review`.
    #[arg(long, value_name = "DOMAIN")]
    pub(crate) domain: Option<String>,
    /// A meta entry KEY=VALUE; repeat for several (a later entry overrides an earlier one).
    #[arg(long = "meta", value_name = "KEY=VALUE", value_parser = parse_meta)]
    pub(crate) meta: Vec<(String, String)>,
    /// Use this execution id instead of a fresh uuid v4.
    #[arg(long, value_name = "ID")]
    pub(crate) execution_id: Option<String>,
}

impl CommonArgs {
    /// Applies the domain (when given), the meta entries and the execution id to `builder`.
    fn apply(&self, mut builder: SubjectBuilder) -> SubjectBuilder {
        if let Some(domain) = &self.domain {
            builder = builder.domain(domain.clone());
        }
        for (key, value) in &self.meta {
            builder = builder.meta(key.clone(), value.clone());
        }
        if let Some(id) = &self.execution_id {
            builder = builder.execution_id(id.clone());
        }
        builder
    }
}

/// Parses a `--meta` value: `KEY=VALUE` with a non-empty key (the value may be empty and may
/// contain `=`).
pub(crate) fn parse_meta(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((key, value)) if !key.is_empty() => Ok((key.to_owned(), value.to_owned())),
        Some(_) => Err(format!("the key is empty in `{text}`: expected KEY=VALUE, such as tenant=acme")),
        None => Err(format!("`{text}` has no `=`: expected KEY=VALUE, such as tenant=acme")),
    }
}

/// Runs a `subject` subcommand, writing its result to `out`.
pub(crate) fn run(command: &SubjectCommand, out: &mut dyn Write) -> Result<(), CliError> {
    match command {
        SubjectCommand::Parse(args) => parse(args, out),
        SubjectCommand::New(args) => new(args, out),
        SubjectCommand::Child(args) => child(args, out),
    }
}

/// `subject parse`: the subject's content as JSON in arvo-core's shape.
fn parse(args: &ParseArgs, out: &mut dyn Write) -> Result<(), CliError> {
    let subject = Subject::parse(&args.subject)?;
    let json = subject.content().to_arvo_json();
    match JsonStyle::from_compact_flag(args.compact) {
        JsonStyle::Compact => output::write_line(out, &json),
        JsonStyle::Pretty => {
            // Re-reading the exact text keeps arvo-core's key order (serde_json preserves it).
            let value: serde_json::Value = serde_json::from_str(&json)
                .map_err(|e| CliError::Input(format!("cannot re-read the subject's JSON: {e}")))?;
            output::write_pretty(out, &value)
        }
    }
}

/// `subject new`: a new root subject.
fn new(args: &NewArgs, out: &mut dyn Write) -> Result<(), CliError> {
    let builder = Subject::builder(&args.orchestrator, &args.version, &args.initiator);
    let subject = args.common.apply(builder).build()?;
    output::write_line(out, subject.as_str())
}

/// `subject child`: a child of a parent subject.
fn child(args: &ChildArgs, out: &mut dyn Write) -> Result<(), CliError> {
    let parent = Subject::parse(&args.parent).map_err(|e| CliError::Input(format!("parent subject: {e}")))?;
    let mut builder = parent.child(&args.orchestrator, &args.version);
    if args.no_domain {
        builder = builder.domain_opt(None::<String>);
    }
    let subject = args.common.apply(builder).build()?;
    output::write_line(out, subject.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn common(meta: &[(&str, &str)]) -> CommonArgs {
        CommonArgs {
            domain: None,
            meta: meta.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect(),
            execution_id: Some("exec-1".to_owned()),
        }
    }

    fn run_to_string(command: &SubjectCommand) -> Result<String, CliError> {
        let mut out = Vec::new();
        run(command, &mut out)?;
        Ok(String::from_utf8(out).expect("utf-8"))
    }

    #[test]
    fn meta_must_be_key_equals_value() {
        assert_eq!(parse_meta("a=b=c"), Ok(("a".to_owned(), "b=c".to_owned())));
        assert_eq!(parse_meta("a="), Ok(("a".to_owned(), String::new())));
        assert!(parse_meta("ab").expect_err("no =").contains("KEY=VALUE"));
        assert!(parse_meta("=b").expect_err("empty key").contains("key is empty"));
    }

    #[test]
    fn new_then_parse_compact_round_trips() {
        let new = SubjectCommand::New(NewArgs {
            orchestrator: "arvo.orc.test".into(),
            version: "1.0.0".into(),
            initiator: "com.test.client".into(),
            common: common(&[("tenant", "acme")]),
        });
        let subject = run_to_string(&new).expect("new");
        let parse = SubjectCommand::Parse(ParseArgs { subject: subject.trim().into(), compact: true });
        assert_eq!(
            run_to_string(&parse).expect("parse"),
            "{\"orchestrator\":{\"name\":\"arvo.orc.test\",\"version\":\"1.0.0\"},\"execution\":{\"id\":\"exec-1\",\"initiator\":\"com.test.client\",\"domain\":null},\"meta\":{\"tenant\":\"acme\"}}\n"
        );
    }

    #[test]
    fn child_can_drop_the_inherited_domain() {
        let parent = Subject::builder("arvo.orc.parent", "1.0.0", "com.test.client")
            .domain("ext.review")
            .build()
            .expect("parent");
        let child = SubjectCommand::Child(ChildArgs {
            parent: parent.as_str().into(),
            orchestrator: "arvo.orc.child".into(),
            version: "1.0.0".into(),
            no_domain: true,
            common: common(&[]),
        });
        let encoded = run_to_string(&child).expect("child");
        let parsed = Subject::parse(encoded.trim()).expect("valid child");
        assert_eq!(parsed.domain(), None);
        assert_eq!(parsed.initiator(), "arvo.orc.parent");
    }

    #[test]
    fn invalid_subjects_are_errors() {
        let parse = SubjectCommand::Parse(ParseArgs { subject: "not base64!".into(), compact: false });
        let err = run_to_string(&parse).expect_err("invalid");
        assert!(err.to_string().contains("not base64"), "{err}");
    }
}
