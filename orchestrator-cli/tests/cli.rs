//! End-to-end tests of the `orchestrator` binary: each test runs the real executable.

use std::collections::BTreeSet;
use std::io::Write;
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};

mod common;

const SUBJECT_FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../interop/arvo/fixtures/subjects.json");
const EVENT_FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../interop/arvo/fixtures/events.json");

/// Arvo's key order for a serialized event (without custom extensions).
const ARVO_EVENT_KEYS: [&str; 17] = [
    "id",
    "source",
    "specversion",
    "type",
    "subject",
    "datacontenttype",
    "dataschema",
    "data",
    "time",
    "to",
    "accesscontrol",
    "redirectto",
    "executionunits",
    "traceparent",
    "tracestate",
    "parentid",
    "domain",
];

/// Runs the binary with `args`, feeding `stdin` (empty when `None`).
fn run(args: &[&str], stdin: Option<&str>) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_orchestrator"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the orchestrator binary starts");
    {
        let mut pipe = child.stdin.take().expect("stdin is piped");
        if let Some(input) = stdin {
            // A command that fails before reading its input (a usage error) may have exited
            // already: its closed stdin is not a failure of the test.
            match pipe.write_all(input.as_bytes()) {
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
                other => other.expect("write stdin"),
            }
        }
    }
    child.wait_with_output().expect("the orchestrator binary finishes")
}

fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).expect("stdout is UTF-8")
}

fn stderr(output: &Output) -> String {
    String::from_utf8(output.stderr.clone()).expect("stderr is UTF-8")
}

/// Runs the binary, expecting success, and returns its stdout.
fn run_ok(args: &[&str], stdin: Option<&str>) -> String {
    ok(args, &run(args, stdin))
}

/// Runs the tool taught the examples (see `common::run_taught`), expecting success.
fn taught_ok(args: &[&str], stdin: Option<&str>) -> String {
    ok(args, &common::run_taught(args, stdin))
}

/// Runs the tool taught the examples, expecting exit status `code`; its stderr.
fn taught_fails(args: &[&str], stdin: Option<&str>, code: i32) -> String {
    fails(args, &common::run_taught(args, stdin), code)
}

/// `output` is a success's: its stdout.
fn ok(args: &[&str], output: &Output) -> String {
    assert!(output.status.success(), "{args:?} failed: {}", stderr(output));
    assert!(output.stderr.is_empty(), "{args:?} wrote to stderr: {}", stderr(output));
    stdout(output)
}

/// Runs the binary, expecting exit status `code`, and returns its stderr.
fn run_fails(args: &[&str], stdin: Option<&str>, code: i32) -> String {
    fails(args, &run(args, stdin), code)
}

/// `output` is a failure's with exit status `code`: its stderr.
fn fails(args: &[&str], output: &Output, code: i32) -> String {
    assert_eq!(
        output.status.code(),
        Some(code),
        "{args:?}: stdout={} stderr={}",
        stdout(output),
        stderr(output)
    );
    assert!(output.stdout.is_empty(), "{args:?} wrote to stdout on failure: {}", stdout(output));
    let err = stderr(output);
    assert!(err.starts_with("error: "), "{args:?}: {err}");
    err
}

fn json(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

fn fixtures(path: &str) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("cannot read {path}: {e}"));
    match json(&text) {
        Value::Array(items) => items,
        other => panic!("{path} is not an array: {other}"),
    }
}

fn new_subject(extra: &[&str]) -> String {
    let mut args = vec![
        "subject",
        "new",
        "--orchestrator",
        "arvo.orc.calc.average",
        "--version",
        "1.2.3",
        "--initiator",
        "com.test.client",
    ];
    args.extend_from_slice(extra);
    let out = run_ok(&args, None);
    assert!(out.ends_with('\n') && out.lines().count() == 1, "one line: {out:?}");
    out.trim_end().to_owned()
}

#[test]
fn subject_new_then_parse_round_trips() {
    let subject = new_subject(&[
        "--execution-id",
        "exec-42",
        "--domain",
        "external.review",
        "--meta",
        "tenant=acme",
        "--meta",
        "note=a=b",
    ]);
    let parsed = json(&run_ok(&["subject", "parse", &subject], None));
    assert_eq!(
        parsed,
        json!({
            "orchestrator": {"name": "arvo.orc.calc.average", "version": "1.2.3"},
            "execution": {"id": "exec-42", "initiator": "com.test.client", "domain": "external.review"},
            "meta": {"tenant": "acme", "note": "a=b"},
        })
    );

    // Without --execution-id, each subject gets a fresh uuid v4.
    let a = json(&run_ok(&["subject", "parse", "--compact", &new_subject(&[])], None));
    let b = json(&run_ok(&["subject", "parse", "--compact", &new_subject(&[])], None));
    let id = a["execution"]["id"].as_str().expect("id");
    assert_eq!(id.len(), 36, "{id}");
    assert_ne!(a["execution"]["id"], b["execution"]["id"]);
    assert_eq!(a["execution"]["domain"], Value::Null);
    assert_eq!(a["meta"], json!({}));
}

#[test]
fn subject_new_rejects_a_bad_initiator() {
    let err = run_fails(
        &[
            "subject",
            "new",
            "--orchestrator",
            "arvo.orc.calc.average",
            "--version",
            "1.0.0",
            "--initiator",
            "com.app",
        ],
        None,
        1,
    );
    assert!(err.contains("execution.initiator"), "{err}");
    assert!(err.contains("reverse-DNS"), "{err}");
    assert!(err.contains("com.app"), "{err}");
}

#[test]
fn subject_new_reports_every_broken_rule() {
    let err = run_fails(
        &[
            "subject",
            "new",
            "--orchestrator",
            "bad",
            "--version",
            "1.0",
            "--initiator",
            "com.app",
            "--domain",
            "Bad",
        ],
        None,
        1,
    );
    for field in ["orchestrator.name", "orchestrator.version", "execution.initiator", "execution.domain"] {
        assert!(err.contains(&format!("`{field}`")), "{field} missing from {err}");
    }
}

#[test]
fn meta_must_be_key_value() {
    let base =
        ["subject", "new", "--orchestrator", "arvo.orc.x.y", "--version", "1.0.0", "--initiator", "com.x.y"];
    for bad in ["tenant", "=acme"] {
        let mut args = base.to_vec();
        args.extend(["--meta", bad]);
        let err = run_fails(&args, None, 2);
        assert!(err.contains("KEY=VALUE"), "{err}");
        assert!(err.contains("--meta"), "{err}");
    }
}

#[test]
fn subject_child_inherits_and_overlays() {
    let parent = new_subject(&["--domain", "external.review", "--meta", "a=1", "--meta", "b=2"]);
    let child = run_ok(
        &[
            "subject",
            "child",
            &parent,
            "--orchestrator",
            "arvo.orc.calc.add",
            "--version",
            "2.0.0",
            "--meta",
            "b=3",
            "--meta",
            "c=4",
            "--execution-id",
            "child-1",
        ],
        None,
    );
    let compact = run_ok(&["subject", "parse", "--compact", child.trim_end()], None);
    assert_eq!(
        compact,
        "{\"orchestrator\":{\"name\":\"arvo.orc.calc.add\",\"version\":\"2.0.0\"},\
         \"execution\":{\"id\":\"child-1\",\"initiator\":\"arvo.orc.calc.average\",\"domain\":\"external.review\"},\
         \"meta\":{\"a\":\"1\",\"b\":\"3\",\"c\":\"4\"}}\n"
    );

    // An explicit domain replaces the parent's; --no-domain drops it.
    for (flags, expected) in
        [(&["--domain", "other"][..], json!("other")), (&["--no-domain"][..], Value::Null)]
    {
        let mut args =
            vec!["subject", "child", &parent, "--orchestrator", "arvo.orc.calc.add", "--version", "1.0.0"];
        args.extend_from_slice(flags);
        let child = run_ok(&args, None);
        let content = json(&run_ok(&["subject", "parse", child.trim_end()], None));
        assert_eq!(content["execution"]["domain"], expected, "{flags:?}");
        assert_eq!(content["meta"], json!({"a": "1", "b": "2"}));
    }
}

#[test]
fn subject_child_rejects_an_invalid_parent() {
    let err = run_fails(
        &["subject", "child", "not-a-subject", "--orchestrator", "arvo.orc.x.y", "--version", "1.0.0"],
        None,
        1,
    );
    assert!(err.contains("parent subject"), "{err}");
}

#[test]
fn subject_parse_matches_arvo_core_fixtures() {
    let fixtures = fixtures(SUBJECT_FIXTURES);
    assert!(!fixtures.is_empty());
    let mut byte_identical = 0;
    for fixture in &fixtures {
        let name = fixture["name"].as_str().expect("name");
        let subject = fixture["subject"].as_str().expect("subject");

        // arvo-core 2.x subjects have no `execution.domain`; ours always has one (null here).
        let mut expected = fixture["content"].clone();
        let execution = expected["execution"].as_object_mut().expect("execution");
        let has_domain = execution.contains_key("domain");
        execution.entry("domain").or_insert(Value::Null);

        let pretty = run_ok(&["subject", "parse", subject], None);
        assert!(pretty.lines().count() > 1, "{name}: pretty by default");
        let parsed = json(&pretty);
        assert_eq!(parsed, expected, "{name}");
        // Same keys in the same (arvo-core) order.
        assert_eq!(
            serde_json::to_string(&parsed).expect("json"),
            serde_json::to_string(&expected).expect("json"),
            "{name}"
        );

        let compact = run_ok(&["subject", "parse", "--compact", subject], None);
        assert_eq!(compact.lines().count(), 1, "{name}: one line");
        assert_eq!(json(&compact), expected, "{name}");
        // 3.x-shaped subjects (those whose JSON has `execution.domain`) are byte-identical.
        if name.contains("3x") && has_domain {
            assert_eq!(compact.trim_end(), fixture["json"].as_str().expect("json"), "{name}");
            byte_identical += 1;
        }
    }
    assert!(byte_identical >= 2, "only {byte_identical} 3.x-shaped fixtures compared");
}

#[test]
fn subject_parse_rejects_garbage() {
    let err = run_fails(&["subject", "parse", "not base64!"], None, 1);
    assert!(err.contains("invalid orchestration subject"), "{err}");
}

/// A valid event from arvo-core's fixtures, as compact JSON.
fn fixture_event() -> Value {
    fixtures(EVENT_FIXTURES)[0]["event"].clone()
}

/// The keys of a JSON object, in order.
fn keys(value: &Value) -> Vec<String> {
    value.as_object().expect("an object").keys().cloned().collect()
}

#[test]
fn event_validate_prints_a_valid_event_in_arvo_key_order() {
    let event = fixture_event();
    // Feed the keys in reverse order: the output is normalised to Arvo's order.
    let reversed: serde_json::Map<String, Value> =
        event.as_object().expect("object").iter().rev().map(|(k, v)| (k.clone(), v.clone())).collect();
    let input = serde_json::to_string(&Value::Object(reversed)).expect("json");
    assert_ne!(keys(&json(&input))[0], "id");

    for args in [&["event", "validate"][..], &["event", "validate", "-"][..]] {
        let out = run_ok(args, Some(&input));
        assert!(out.lines().count() > 1, "pretty by default");
        let printed = json(&out);
        assert_eq!(keys(&printed), ARVO_EVENT_KEYS, "{out}");
        for (key, value) in event.as_object().expect("object") {
            assert_eq!(&printed[key], value, "{key}");
        }
    }

    let compact = run_ok(&["event", "validate", "--compact"], Some(&input));
    assert_eq!(compact.lines().count(), 1);
    assert!(compact.starts_with("{\"id\":\"00000000-0000-4000-8000-000000000007\",\"source\":"), "{compact}");
}

#[test]
fn event_validate_reads_a_file() {
    let path = std::env::temp_dir().join(format!("orchestrator-cli-test-{}.json", std::process::id()));
    std::fs::write(&path, fixture_event().to_string()).expect("write temp file");
    let out = run_ok(&["event", "validate", path.to_str().expect("UTF-8 path")], None);
    std::fs::remove_file(&path).ok();
    assert_eq!(json(&out)["id"], "00000000-0000-4000-8000-000000000007");

    let err = run_fails(&["event", "validate", "/definitely/not/here.json"], None, 1);
    assert!(err.contains("cannot read"), "{err}");
}

#[test]
fn event_validate_lists_every_broken_rule() {
    let input = json!({
        "id": "",
        "source": "bad source",
        "specversion": "0.3",
        "type": "NotReverseDns",
        "subject": "s",
        "data": [1, 2],
        "time": "yesterday",
        "domain": "Not A Domain",
    });
    let err = run_fails(&["event", "validate"], Some(&input.to_string()), 1);
    let fields: BTreeSet<&str> = err
        .lines()
        .filter_map(|line| line.strip_prefix("  - `"))
        .filter_map(|rest| rest.split_once('`').map(|(field, _)| field))
        .collect();
    for field in ["id", "source", "specversion", "type", "data", "time", "to", "domain"] {
        assert!(fields.contains(field), "`{field}` missing from {err}");
    }
    assert!(fields.len() >= 4, "{err}");
    assert!(err.starts_with(&format!("error: event breaks {} rule(s):\n", err.lines().count() - 1)), "{err}");
}

#[test]
fn event_validate_rejects_non_json_input() {
    let err = run_fails(&["event", "validate"], Some("this is not json"), 1);
    assert!(err.contains("not valid JSON"), "{err}");
    let err = run_fails(&["event", "validate"], Some("[1, 2]"), 1);
    assert!(err.contains("must be a JSON object"), "{err}");
}

#[test]
fn event_validate_enforces_max_bytes() {
    let input = fixture_event().to_string();
    let err = run_fails(&["event", "validate", "--max-bytes", "10"], Some(&input), 1);
    assert!(err.contains(&format!("event is {} bytes", input.len())), "{err}");
    assert!(err.contains("larger than the maximum of 10 bytes"), "{err}");
    run_fails(&["event", "validate", "--max-bytes", "ten"], Some(&input), 2);
}

#[test]
fn event_validate_checks_the_subject_on_request() {
    let mut event = fixture_event();
    // The fixture's subject is not an orchestration subject: fine unless asked.
    run_ok(&["event", "validate"], Some(&event.to_string()));
    let err = run_fails(&["event", "validate", "--check-subject"], Some(&event.to_string()), 1);
    assert!(err.contains("`subject` must be an orchestration subject"), "{err}");

    event["subject"] = json!(new_subject(&[]));
    run_ok(&["event", "validate", "--check-subject"], Some(&event.to_string()));
}

#[test]
fn event_validate_checks_data_against_a_contract() {
    let mut event = fixture_event();
    event["type"] = json!("com.calc.add");
    event["to"] = json!("com.calc.add");
    event["dataschema"] = json!("#/calc/add/1.0.0");
    event["data"] = json!({"a": 1, "b": 2});
    taught_ok(&["event", "validate", "--contract", "com.calc.add"], Some(&event.to_string()));
    taught_ok(&["event", "validate", "--contract", "#/calc/add"], Some(&event.to_string()));

    event["data"] = json!({"a": "one"});
    let err = taught_fails(&["event", "validate", "--contract", "com.calc.add"], Some(&event.to_string()), 1);
    assert!(err.contains("`data/a`"), "{err}");
    assert!(err.contains("\"b\" is a required property"), "{err}");

    // The event type belongs to another contract.
    let err = taught_fails(&["event", "validate", "--contract", "com.calc.mul"], Some(&event.to_string()), 1);
    assert!(err.contains("ViolationError"), "{err}");

    let err = taught_fails(&["event", "validate", "--contract", "com.nope"], Some(&event.to_string()), 2);
    assert!(err.contains("com.calc.add"), "{err}");
}

#[test]
fn contract_list_shows_every_example_contract() {
    let out = taught_ok(&["contract", "list"], None);
    for ty in [
        "com.calc.add",
        "com.calc.mul",
        "com.calc.divide",
        "arvo.orc.calc.average",
        "com.shop.inventory.reserve",
        "com.shop.payment.charge",
        "com.shop.shipping.dispatch",
        "arvo.orc.shop.order",
    ] {
        assert!(out.lines().any(|line| line.starts_with(ty)), "{ty} missing from {out}");
    }
    assert!(out.contains("1.0.0, 2.0.0"), "{out}");

    let listed = json(&taught_ok(&["contract", "list", "--json"], None));
    assert_eq!(listed.as_array().expect("array").len(), 8);
    assert_eq!(listed[2]["versions"], json!(["1.0.0", "2.0.0"]));
}

#[test]
fn contract_schema_prints_the_whole_contract() {
    let doc = json(&taught_ok(&["contract", "schema", "com.calc.add"], None));
    assert_eq!(doc["uri"], "#/calc/add");
    assert_eq!(doc["versions"][0]["accepts"]["type"], "com.calc.add");
    assert_eq!(doc["versions"][0]["emits"][0]["type"], "evt.calc.add.success");
    assert_eq!(doc["versions"][0]["systemError"]["type"], "sys.com.calc.add.error");

    let by_uri = json(&taught_ok(&["contract", "schema", "#/calc/add"], None));
    assert_eq!(by_uri, doc);
}

#[test]
fn contract_schema_prints_one_version() {
    let doc = json(&taught_ok(&["contract", "schema", "arvo.orc.calc.average", "--version", "1.0.0"], None));
    assert_eq!(doc["version"], "1.0.0");
    assert_eq!(doc["accepts"]["type"], "arvo.orc.calc.average");
    let required = doc["accepts"]["schema"]["required"].as_array().expect("required");
    assert!(required.contains(&json!("parentSubject$$")), "{required:?}");

    for (selector, expected) in [("latest", "2.0.0"), ("oldest", "1.0.0")] {
        let doc = json(&taught_ok(&["contract", "schema", "com.calc.divide", "--version", selector], None));
        assert_eq!(doc["version"], expected, "{selector}");
    }
    let err = taught_fails(&["contract", "schema", "com.calc.divide", "--version", "3.0.0"], None, 2);
    assert!(err.contains("1.0.0, 2.0.0"), "{err}");
}

#[test]
fn contract_schema_rejects_unknown_contracts() {
    let err = taught_fails(&["contract", "schema", "com.calc.nope"], None, 2);
    assert!(err.contains("com.calc.nope"), "{err}");
    for known in ["com.calc.add", "com.calc.mul", "com.calc.divide", "arvo.orc.calc.average"] {
        assert!(err.contains(known), "{known} missing from {err}");
    }
}

#[test]
fn help_describes_every_command() {
    let help = run_ok(&["--help"], None);
    for command in ["subject", "event", "contract"] {
        assert!(help.contains(command), "{command} missing from {help}");
    }
    assert!(help.contains("Examples:"), "{help}");

    for (group, subcommands) in [
        ("subject", &["parse", "new", "child"][..]),
        ("event", &["validate"]),
        ("contract", &["list", "schema"]),
        ("workflows", &["list", "show", "tree"]),
    ] {
        let help = run_ok(&[group, "--help"], None);
        for sub in subcommands {
            assert!(help.contains(sub), "{sub} missing from `{group} --help`: {help}");
            let sub_help = run_ok(&[group, sub, "--help"], None);
            assert!(sub_help.contains("Usage: orchestrator"), "{group} {sub}: {sub_help}");
            assert!(sub_help.contains("Examples:"), "{group} {sub}: {sub_help}");
        }
    }
}

#[test]
fn usage_errors_exit_with_2() {
    let output = run(&["subject", "frobnicate"], None);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).starts_with("error: "), "{}", stderr(&output));

    let output = run(&[], None);
    assert_eq!(output.status.code(), Some(2));
}
