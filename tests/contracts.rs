//! Contract rules and typed contract behaviour.
//!
//! - Declaration rules of the runtime builder (`ArvoContract::builder/simple/orchestrator` with
//!   `VersionBuilder`), each with a passing and a failing case and Arvo's message texts;
//! - version selection in numeric order, system-error and orchestrator event types, dataschemas;
//! - `EventFactory` (accepts, emits, system error, init, init of a child workflow, complete) and
//!   the subjects it generates;
//! - `parse_accepts` / `Emits::parse_emitted` enforcing the generated schemas (ranges, lengths,
//!   patterns, types, required fields), dataschema checks, and the required `parentSubject$$`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use orchestrator::contract::{
    ArvoContract, ContractError, ContractKind, Emits, OrchestratorInit, VersionBuilder, VersionSelector,
};
use orchestrator::factory::FactoryError;
use orchestrator::prelude::*;
use orchestrator::semver::SemVer;
use orchestrator::subject::SubjectError;
use orchestrator_examples::calculator::{
    AddV1, AverageInput, AverageOutput, AverageV1, DivideRequest, DivideRequestV2, DivideV1, DivideV2,
    Operands, Quotient, Sum,
};
use serde_json::{Value, json};

// ---------------------------------------------------------------------------------------------
// Test payloads and a contract with constrained fields
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
struct Empty {}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
struct Constrained {
    #[schemars(range(min = 1, max = 10))]
    count: u32,
    #[schemars(length(min = 1, max = 5))]
    tags: Vec<String>,
    #[schemars(regex(pattern = r"^[a-z]+$"))]
    code: String,
    #[schemars(length(min = 1))]
    name: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
struct Scored {
    #[schemars(range(min = 0.0, max = 100.0))]
    score: f64,
}

orchestrator::contract! {
    /// A contract whose payloads carry schema constraints.
    contract Checked {
        uri: "#/test/checked",
        type: "com.test.checked",
        versions: {
            CheckedV1 = "1.0.0" {
                accepts: Constrained,
                emits: { "evt.test.checked.done" => Scored },
            },
        },
    }
}

fn valid_constrained() -> Value {
    json!({"count": 5, "tags": ["a", "b"], "code": "abc", "name": "n"})
}

/// An event of `event_type` with the given data and dataschema, built without any contract check.
fn raw_event(event_type: &str, dataschema: Option<&str>, data: Value) -> Event {
    Event::builder()
        .source("com.test.client")
        .r#type(event_type)
        .subject("subject-test")
        .dataschema_opt(dataschema)
        .data_json(data)
        .build()
        .unwrap()
}

fn contract_error(result: Result<ArvoContract, ContractError>) -> (Vec<String>, String) {
    let err = result.expect_err("the contract must be rejected");
    (err.errors.iter().map(|e| e.field.to_string()).collect(), err.to_string())
}

fn version(v: &str) -> VersionBuilder {
    VersionBuilder::new(v).accepts::<Empty>()
}

fn plain(uri: &str, r#type: &str) -> orchestrator::contract::ContractBuilder {
    ArvoContract::builder(uri, r#type)
}

#[track_caller]
fn contract_violation(result: Result<impl std::fmt::Debug, Violation>, needles: &[&str]) -> String {
    match result {
        Err(v @ Violation::Contract { .. }) => {
            let message = v.to_string();
            for needle in needles {
                assert!(message.contains(needle), "{message} lacks {needle:?}");
            }
            assert_eq!(v.kind(), "Contract");
            message
        }
        other => panic!("expected a contract violation mentioning {needles:?}, got {other:?}"),
    }
}

#[track_caller]
fn config_violation(result: Result<impl std::fmt::Debug, Violation>, needles: &[&str]) -> String {
    match result {
        Err(v @ Violation::Config { .. }) => {
            let message = v.to_string();
            for needle in needles {
                assert!(message.contains(needle), "{message} lacks {needle:?}");
            }
            message
        }
        other => panic!("expected a config violation mentioning {needles:?}, got {other:?}"),
    }
}

// ---------------------------------------------------------------------------------------------
// Declaration rules
// ---------------------------------------------------------------------------------------------

#[test]
fn a_contract_needs_at_least_one_version() {
    let (fields, message) = contract_error(plain("#/test/x", "com.test.x").build());
    assert_eq!(fields, ["versions"]);
    assert!(message.contains("An ArvoContract (uri=#/test/x) must have at least one version"), "{message}");
    let c = plain("#/test/x", "com.test.x").version(version("1.0.0")).build().unwrap();
    assert_eq!(c.version_numbers(), [SemVer::new(1, 0, 0)]);
}

#[test]
fn version_0_0_0_is_reserved() {
    let (fields, message) = contract_error(plain("#/test/x", "com.test.x").version(version("0.0.0")).build());
    assert_eq!(fields, ["versions.0.0.0"]);
    assert!(message.contains("the version cannot be '0.0.0'. It is a reserved version type."), "{message}");
    assert!(message.contains("uri=#/test/x"), "{message}");
    assert!(plain("#/test/x", "com.test.x").version(version("0.0.1")).build().is_ok());
}

#[test]
fn versions_must_be_semantic_versions() {
    for bad in ["1.0", "v1.0.0", "1.0.0-beta", "1.0.0.0", "", "a.b.c", " 1.0.0"] {
        let (fields, message) = contract_error(plain("#/test/x", "com.test.x").version(version(bad)).build());
        assert_eq!(fields, [format!("versions.{bad}")], "{bad:?}");
        assert!(message.contains("invalid semantic version"), "{bad:?}: {message}");
    }
    for good in ["1.0.0", "10.20.30", "01.2.3"] {
        assert!(plain("#/test/x", "com.test.x").version(version(good)).build().is_ok(), "{good}");
    }
}

#[test]
fn a_version_is_declared_once() {
    let (fields, message) = contract_error(
        plain("#/test/x", "com.test.x").version(version("1.0.0")).version(version("1.0.0")).build(),
    );
    assert_eq!(fields, ["versions.1.0.0"]);
    assert!(message.contains("declared twice"), "{message}");
    // Numerically equal versions are the same version.
    let (fields, _) = contract_error(
        plain("#/test/x", "com.test.x").version(version("1.0.0")).version(version("01.0.0")).build(),
    );
    assert_eq!(fields, ["versions.01.0.0"]);
    assert!(
        plain("#/test/x", "com.test.x").version(version("1.0.0")).version(version("1.0.1")).build().is_ok()
    );
}

#[test]
fn the_arvo_orc_prefix_is_reserved_for_orchestrators() {
    let (fields, message) =
        contract_error(plain("#/test/x", "arvo.orc.x.y").version(version("1.0.0")).build());
    assert_eq!(fields, ["type"]);
    assert!(
        message.contains("reserved prefix 'arvo.orc'") && message.contains("\"arvo.orc.x.y\""),
        "{message}"
    );
    let (fields, message) = contract_error(
        plain("#/test/x", "com.x.y").version(version("1.0.0").emits::<Empty>("arvo.orc.x.done")).build(),
    );
    assert_eq!(fields, ["versions.1.0.0.emits"]);
    assert!(message.contains("arvo.orc.x.done"), "{message}");
    // Passing: an ordinary emit, and the orchestrator flavour, which owns the prefix.
    assert!(
        plain("#/test/x", "com.x.y").version(version("1.0.0").emits::<Empty>("evt.x.y.done")).build().is_ok()
    );
    let orc = ArvoContract::orchestrator("#/test/x", "x.y")
        .version(version("1.0.0").emits::<Empty>("done"))
        .build();
    assert_eq!(orc.unwrap().r#type(), "arvo.orc.x.y");
}

#[test]
fn accepted_and_emitted_types_must_be_reverse_dns() {
    for bad in ["com.x", "Com.x.y", "com.x-y.z", "com_x.y.z", "com..x", ""] {
        let (fields, message) = contract_error(plain("#/test/x", bad).version(version("1.0.0")).build());
        assert_eq!(fields, ["type"], "{bad:?}");
        assert!(message.contains("reverse-DNS"), "{message}");
    }
    for bad in ["evt_bad.x.y", "evt.x", "Evt.x.y"] {
        let (fields, message) = contract_error(
            plain("#/test/x", "com.x.y").version(version("1.0.0").emits::<Empty>(bad)).build(),
        );
        assert_eq!(fields, ["versions.1.0.0.emits"], "{bad:?}");
        assert!(message.contains(bad), "{message}");
    }
    // An emit equal to the accepted type, or declared twice, is a mistake.
    let (fields, _) = contract_error(
        plain("#/test/x", "com.x.y")
            .version(version("1.0.0").emits::<Empty>("evt.x.y.a").emits::<Empty>("evt.x.y.a"))
            .build(),
    );
    assert_eq!(fields, ["versions.1.0.0.emits"]);
    // Simple contracts derive `com.<root>`: a one-segment root gives a two-segment type.
    let (fields, _) = contract_error(
        ArvoContract::simple("#/test/x", "x").version(version("1.0.0").emits::<Empty>("")).build(),
    );
    assert_eq!(fields, ["type"]);
}

#[test]
fn the_uri_must_be_a_non_empty_valid_uri() {
    for bad in ["", "#/a b", "100%"] {
        let (fields, _) = contract_error(plain(bad, "com.x.y").version(version("1.0.0")).build());
        assert_eq!(fields, ["uri"], "{bad:?}");
    }
    for good in ["#/test/x", "https://example.com/contracts/x", "#/a%20b"] {
        assert!(plain(good, "com.x.y").version(version("1.0.0")).build().is_ok(), "{good}");
    }
}

#[test]
fn the_domain_must_follow_the_domain_rule() {
    for bad in ["Bad Domain", "", "a_b", "Calc"] {
        let (fields, message) =
            contract_error(plain("#/test/x", "com.x.y").domain(bad).version(version("1.0.0")).build());
        assert_eq!(fields, ["domain"], "{bad:?}");
        assert!(message.contains("^[a-z0-9.]+$"), "{message}");
    }
    for good in ["calc", "human.interaction", "external.review.1"] {
        let c = plain("#/test/x", "com.x.y").domain(good).version(version("1.0.0")).build().unwrap();
        assert_eq!(c.domain(), Some(good));
        assert_eq!(c.version(VersionSelector::Latest).unwrap().domain(), Some(good));
        assert_eq!(c.to_json_schema()["domain"], good);
    }
    let c = plain("#/test/x", "com.x.y").version(version("1.0.0")).build().unwrap();
    assert_eq!(c.domain(), None);
    assert_eq!(c.to_json_schema()["domain"], Value::Null);
}

#[test]
fn orchestrator_names_follow_the_name_rule() {
    let orc = |name: &str| {
        ArvoContract::orchestrator("#/test/orc", name)
            .version(version("1.0.0").emits::<Empty>("ignored"))
            .build()
    };
    for bad in ["Bad-Name", "has space", "", "Upper.case", "a_b"] {
        let (fields, message) = contract_error(orc(bad));
        assert_eq!(fields, ["name"], "{bad:?}");
        assert!(message.contains("e.g. test.orchestrator"), "{message}");
        assert!(message.contains(&format!("{bad:?}")), "{message}");
    }
    // A single segment is allowed.
    let wf = orc("wf").unwrap();
    assert_eq!(wf.r#type(), "arvo.orc.wf");
    assert_eq!(wf.system_error_type(), "sys.arvo.orc.wf.error");
    let v = wf.version(VersionSelector::Latest).unwrap();
    assert_eq!(v.emits().keys().collect::<Vec<_>>(), ["arvo.orc.wf.done"]);
    assert!(orc("calc.average").is_ok());
    assert!(orc("my.flow.2").is_ok());
}

#[test]
fn every_declaration_mistake_is_reported_at_once() {
    let (mut fields, _) = contract_error(plain("", "com.x").domain("Bad").build());
    fields.sort();
    assert_eq!(fields, ["domain", "type", "uri", "versions"]);
    let (fields, _) = contract_error(
        plain("#/test/x", "com.x.y")
            .version(version("0.0.0"))
            .version(version("1.0"))
            .version(VersionBuilder::new("2.0.0"))
            .build(),
    );
    assert_eq!(fields, ["versions.0.0.0", "versions.1.0", "versions.2.0.0"]);
}

#[test]
fn simple_contracts_derive_their_types() {
    let c = ArvoContract::simple("#/test/greet", "greet.user")
        .metadata("team", "frontdesk")
        .version(VersionBuilder::new("1.0.0").accepts::<Empty>().emits::<Scored>("ignored"))
        .build()
        .unwrap();
    assert_eq!(c.r#type(), "com.greet.user");
    assert_eq!(c.kind(), &ContractKind::Simple { root_type: "greet.user".into() });
    assert_eq!(c.metadata()["contractType"], "SimpleArvoContract");
    assert_eq!(c.metadata()["rootType"], "greet.user");
    assert_eq!(c.metadata()["team"], "frontdesk");
    let v = c.version(VersionSelector::Latest).unwrap();
    assert_eq!(v.emits().keys().collect::<Vec<_>>(), ["evt.greet.user.success"]);
    assert_eq!(v.system_error().event_type(), "sys.com.greet.user.error");
    // Exactly one success payload.
    let (fields, message) = contract_error(
        ArvoContract::simple("#/test/greet", "greet.user")
            .version(VersionBuilder::new("1.0.0").accepts::<Empty>().emits::<Empty>("a").emits::<Empty>("b"))
            .build(),
    );
    assert_eq!(fields, ["versions.1.0.0"]);
    assert!(message.contains("exactly one"), "{message}");
}

#[test]
fn orchestrator_contracts_have_arvo_types_and_metadata() {
    let c = ArvoContract::orchestrator("#/orc/my/flow", "my.flow")
        .metadata("contractType", "overridden by Arvo's own key")
        .version(VersionBuilder::new("1.0.0").accepts::<Scored>().emits::<Empty>("ignored"))
        .build()
        .unwrap();
    assert_eq!(c.r#type(), "arvo.orc.my.flow");
    assert_eq!(c.system_error_type(), "sys.arvo.orc.my.flow.error");
    assert_eq!(
        c.kind(),
        &ContractKind::Orchestrator {
            root_type: "my.flow".into(),
            init_type: "arvo.orc.my.flow".into(),
            complete_type: "arvo.orc.my.flow.done".into(),
        }
    );
    let m = c.metadata();
    assert_eq!(m["contractType"], "ArvoOrchestratorContract");
    assert_eq!(m["rootType"], "my.flow");
    assert_eq!(m["initEventType"], "arvo.orc.my.flow");
    assert_eq!(m["completeEventType"], "arvo.orc.my.flow.done");
    let v = c.version(VersionSelector::Latest).unwrap();
    assert_eq!(v.accepts().event_type(), "arvo.orc.my.flow");
    assert_eq!(v.emits().keys().collect::<Vec<_>>(), ["arvo.orc.my.flow.done"]);
    assert_eq!(v.system_error().event_type(), "sys.arvo.orc.my.flow.error");
    // The init schema gets the nullable parentSubject$$, first and required.
    let schema = v.accepts().schema();
    let props: Vec<&String> = schema["properties"].as_object().unwrap().keys().collect();
    assert_eq!(props, ["parentSubject$$", "score"]);
    assert_eq!(schema["required"], json!(["parentSubject$$", "score"]));
    // Exactly one completion payload.
    let (fields, _) = contract_error(
        ArvoContract::orchestrator("#/orc/my/flow", "my.flow")
            .version(VersionBuilder::new("1.0.0").accepts::<Empty>())
            .build(),
    );
    assert_eq!(fields, ["versions.1.0.0"]);
}

// ---------------------------------------------------------------------------------------------
// Versions, system errors, dataschemas
// ---------------------------------------------------------------------------------------------

#[test]
fn version_selection_uses_numeric_order() {
    let c = plain("#/test/x", "com.x.y")
        .version(version("1.9.0"))
        .version(version("1.10.0"))
        .version(version("1.2.0"))
        .build()
        .unwrap();
    let numbers: Vec<String> = c.version_numbers().iter().map(ToString::to_string).collect();
    assert_eq!(numbers, ["1.2.0", "1.9.0", "1.10.0"]);
    assert_eq!(c.versions().map(|v| v.version_str()).collect::<Vec<_>>(), ["1.2.0", "1.9.0", "1.10.0"]);
    assert_eq!(c.version(VersionSelector::Latest).unwrap().version_str(), "1.10.0");
    assert_eq!(c.version(VersionSelector::Oldest).unwrap().version_str(), "1.2.0");
    assert_eq!(
        c.version(VersionSelector::Exact(SemVer::new(1, 9, 0))).unwrap().version(),
        SemVer::new(1, 9, 0)
    );
    assert!(c.version(VersionSelector::Exact(SemVer::new(1, 9, 1))).is_none());
    assert_eq!(c.version_str("latest").unwrap().version_str(), "1.10.0");
    assert_eq!(c.version_str("any").unwrap().version_str(), "1.10.0");
    assert_eq!(c.version_str("oldest").unwrap().version_str(), "1.2.0");
    assert_eq!(c.version_str("1.9.0").unwrap().dataschema(), "#/test/x/1.9.0");
    config_violation(c.version_str("9.9.9"), &["9.9.9", "[1.2.0, 1.9.0, 1.10.0]", "uri=#/test/x"]);
    config_violation(c.version_str("1.0"), &["1.0"]);
    config_violation(c.version_str("newest"), &["newest"]);
    // Documents list versions lowest first (arvo-core lists them in declaration order).
    let document = c.to_json_schema();
    let versions: Vec<&Value> =
        document["versions"].as_array().unwrap().iter().map(|v| &v["version"]).collect();
    assert_eq!(versions, [&json!("1.2.0"), &json!("1.9.0"), &json!("1.10.0")]);
}

#[test]
fn system_errors_and_dataschemas() {
    let c = plain("#/test/x", "com.test.x")
        .version(version("1.2.3").emits::<Scored>("evt.test.x.done"))
        .build()
        .unwrap();
    assert_eq!(c.system_error_type(), "sys.com.test.x.error");
    assert_eq!(orchestrator::contract::system_error_type("com.test.x"), "sys.com.test.x.error");
    let v = c.version_str("1.2.3").unwrap();
    assert_eq!(v.dataschema(), "#/test/x/1.2.3");
    assert_eq!(v.system_error_dataschema(), "#/test/x/0.0.0");
    assert_eq!(v.system_error().event_type(), "sys.com.test.x.error");
    assert_eq!(v.system_error().schema()["required"], json!(["errorName", "errorMessage", "errorStack"]));
    assert_eq!(v.schema_for_type("com.test.x").unwrap().event_type(), "com.test.x");
    assert_eq!(v.schema_for_type("evt.test.x.done").unwrap().event_type(), "evt.test.x.done");
    assert_eq!(v.schema_for_type("sys.com.test.x.error").unwrap().event_type(), "sys.com.test.x.error");
    assert!(v.schema_for_type("evt.test.x.other").is_none());
    // A system error validates against its schema: errorStack may be null but must be present.
    let ok = raw_event(
        "sys.com.test.x.error",
        Some("#/test/x/0.0.0"),
        json!({"errorName": "E", "errorMessage": "m", "errorStack": null}),
    );
    v.validate_emitted(&ok).unwrap();
    let missing = raw_event("sys.com.test.x.error", None, json!({"errorName": "E", "errorMessage": "m"}));
    contract_violation(v.validate_emitted(&missing), &["errorStack"]);
}

// ---------------------------------------------------------------------------------------------
// Factories
// ---------------------------------------------------------------------------------------------

fn client() -> orchestrator::event::EventBuilder {
    Event::builder().source("com.test.client")
}

#[test]
fn factory_accepts_builds_the_accepted_event_with_a_default_subject() {
    let e = EventFactory::<AddV1>::new().accepts(Operands { a: 1.0, b: 2.0 }, client()).unwrap();
    assert_eq!(e.r#type(), "com.calc.add");
    assert_eq!(e.dataschema(), Some("#/calc/add/1.0.0"));
    assert_eq!(Value::Object(e.data().clone()), json!({"a": 1.0, "b": 2.0}));
    assert_eq!(e.to(), Some("com.calc.add"));
    assert_eq!(e.datacontenttype(), orchestrator::event::ARVO_CONTENT_TYPE);
    assert_eq!(e.domain(), None, "domain is passed through, null by default");
    let s = e.orchestration_subject().unwrap();
    assert_eq!(s.orchestrator_name(), "com.calc.add", "orchestrator = the event type");
    assert_eq!(s.orchestrator_version(), "1.0.0");
    assert_eq!(s.initiator(), "com.test.client", "initiator = the source");
    assert_eq!(s.domain(), None);
    assert!(s.content().meta.is_empty());
    assert_eq!(uuid::Uuid::parse_str(s.execution_id()).unwrap().get_version_num(), 4);
    assert_eq!(AddV1::parse_accepts(&e).unwrap(), Operands { a: 1.0, b: 2.0 });

    // redirectto goes to meta.redirectto; domain to the event and the subject.
    let e = EventFactory::<AddV1>::new()
        .accepts(Operands { a: 1.0, b: 2.0 }, client().redirectto("com.redirect.sink").domain("calc"))
        .unwrap();
    let s = e.orchestration_subject().unwrap();
    assert_eq!(s.meta("redirectto"), Some("com.redirect.sink"));
    assert_eq!(s.domain(), Some("calc"));
    assert_eq!(e.domain(), Some("calc"));
    assert_eq!(e.redirectto(), Some("com.redirect.sink"));
}

#[test]
fn factory_emits_and_system_error() {
    let add = EventFactory::<AddV1>::new();
    let e =
        add.emits(Sum { sum: 3.0 }, Event::builder().source("com.calc.add").to("com.test.client")).unwrap();
    assert_eq!(e.r#type(), "evt.calc.add.success");
    assert_eq!(e.dataschema(), Some("#/calc/add/1.0.0"));
    assert_eq!(e.to(), Some("com.test.client"));
    assert_eq!(e.orchestration_subject().unwrap().orchestrator_name(), "evt.calc.add.success");
    assert_eq!(<AddV1 as Emits<Sum>>::parse_emitted(&e).unwrap(), Sum { sum: 3.0 });
    assert_eq!(<AddV1 as Emits<Sum>>::EVENT_TYPE, "evt.calc.add.success");

    let e = add
        .system_error(
            SystemErrorPayload::new("Error", "Division by zero"),
            Event::builder().source("com.calc.add"),
        )
        .unwrap();
    assert_eq!(e.r#type(), "sys.com.calc.add.error");
    assert_eq!(e.dataschema(), Some("#/calc/add/0.0.0"));
    assert_eq!(
        Value::Object(e.data().clone()),
        json!({"errorName": "Error", "errorMessage": "Division by zero", "errorStack": null})
    );
    AddV1::versioned().validate_emitted(&e).unwrap();
    assert_eq!(e.orchestration_subject().unwrap().orchestrator_name(), "sys.com.calc.add.error");

    // A Rust error with causes: the causes become the stack.
    let io = std::io::Error::other(Outer(std::io::Error::other("inner cause")));
    let payload = SystemErrorPayload::from_error(&io);
    assert_eq!(payload.error_message, "outer failure");
    assert_eq!(payload.error_stack.as_deref(), Some("caused by: inner cause"));
    let e = add.system_error(payload, Event::builder().source("com.calc.add")).unwrap();
    AddV1::versioned().validate_emitted(&e).unwrap();
}

/// `outer failure`, caused by another error.
#[derive(Debug)]
struct Outer(std::io::Error);

impl std::fmt::Display for Outer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("outer failure")
    }
}

impl std::error::Error for Outer {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.0)
    }
}

#[test]
fn factory_init_of_a_root_workflow() {
    let avg = EventFactory::<AverageV1>::new();
    let e = avg.init(AverageInput { values: vec![1.0, 2.0] }, client()).unwrap();
    assert_eq!(e.r#type(), "arvo.orc.calc.average");
    assert_eq!(e.dataschema(), Some("#/orc/calc/average/1.0.0"));
    let keys: Vec<&String> = e.data().keys().collect();
    assert_eq!(keys, ["parentSubject$$", "values"], "parentSubject$$ first, as arvo-core writes it");
    assert_eq!(e.data()["parentSubject$$"], Value::Null);
    let s = e.orchestration_subject().unwrap();
    assert_eq!(s.orchestrator_name(), "arvo.orc.calc.average");
    assert_eq!(s.orchestrator_version(), "1.0.0");
    assert_eq!(s.initiator(), "com.test.client");
    assert_eq!(s.meta("redirectto"), None);
    let init = AverageV1::parse_accepts(&e).unwrap();
    assert_eq!(init, OrchestratorInit::root(AverageInput { values: vec![1.0, 2.0] }));

    let e = avg.init(AverageInput { values: vec![1.0] }, client().redirectto("com.final.sink")).unwrap();
    assert_eq!(e.orchestration_subject().unwrap().meta("redirectto"), Some("com.final.sink"));
}

#[test]
fn factory_init_of_a_child_workflow() {
    let avg = EventFactory::<AverageV1>::new();
    let parent = Subject::builder("arvo.orc.parent.flow", "1.2.3", "com.test.client")
        .domain("external.review")
        .meta("tenant", "acme")
        .meta("redirectto", "com.parent.redirect")
        .build()
        .unwrap();
    let e = avg
        .init_child(
            AverageInput { values: vec![10.0] },
            &parent,
            Event::builder().source("arvo.orc.parent.flow"),
        )
        .unwrap();
    let child = e.orchestration_subject().unwrap();
    assert_eq!(child.orchestrator_name(), "arvo.orc.calc.average");
    assert_eq!(child.orchestrator_version(), "1.0.0");
    assert_eq!(child.initiator(), "arvo.orc.parent.flow", "initiator = the parent orchestrator");
    assert_eq!(child.meta("redirectto"), Some("com.test.client"), "redirectto = the parent's initiator");
    assert_eq!(child.meta("tenant"), Some("acme"), "the parent's meta is kept");
    assert_eq!(child.domain(), Some("external.review"), "the parent's domain is inherited");
    assert_ne!(child.execution_id(), parent.execution_id());
    assert_eq!(e.data()["parentSubject$$"], parent.as_str());
    let init = AverageV1::parse_accepts(&e).unwrap();
    assert_eq!(init.parent_subject.as_deref(), Some(parent.as_str()));

    // The event's redirectto and domain win over the parent's.
    let e = avg
        .init_child(
            AverageInput { values: vec![10.0] },
            &parent,
            Event::builder()
                .source("arvo.orc.parent.flow")
                .redirectto("com.custom.redirect")
                .domain("other.domain"),
        )
        .unwrap();
    let child = e.orchestration_subject().unwrap();
    assert_eq!(child.meta("redirectto"), Some("com.custom.redirect"));
    assert_eq!(child.domain(), Some("other.domain"));
    assert_eq!(e.domain(), Some("other.domain"));
    assert_eq!(e.redirectto(), Some("com.custom.redirect"));

    // A parent without a domain gives a child without one.
    let plain_parent = Subject::builder("arvo.orc.parent.flow", "1.0.0", "com.test.client").build().unwrap();
    let e = avg
        .init_child(
            AverageInput { values: vec![1.0] },
            &plain_parent,
            Event::builder().source("arvo.orc.parent.flow"),
        )
        .unwrap();
    assert_eq!(e.orchestration_subject().unwrap().domain(), None);
}

#[test]
fn factory_complete() {
    let e = EventFactory::<AverageV1>::new()
        .complete(AverageOutput { average: 2.0 }, Event::builder().source("arvo.orc.calc.average"))
        .unwrap();
    assert_eq!(e.r#type(), "arvo.orc.calc.average.done");
    assert_eq!(e.dataschema(), Some("#/orc/calc/average/1.0.0"));
    assert_eq!(
        <AverageV1 as Emits<AverageOutput>>::parse_emitted(&e).unwrap(),
        AverageOutput { average: 2.0 }
    );
}

#[test]
fn an_explicit_subject_is_kept() {
    let subject = Subject::builder("arvo.orc.review.flow", "1.0.0", "com.test.client")
        .domain("external.review")
        .build()
        .unwrap();
    let e = EventFactory::<AddV1>::new()
        .accepts(
            Operands { a: 1.0, b: 1.0 },
            client().orchestration_subject(&subject).domain("external.review.1"),
        )
        .unwrap();
    assert_eq!(e.subject(), subject.as_str());
    assert_eq!(
        e.orchestration_subject().unwrap().domain(),
        Some("external.review"),
        "the subject's domain stays"
    );
    assert_eq!(e.domain(), Some("external.review.1"), "only the event's domain changes");
    // Any subject string is accepted when given.
    let e =
        EventFactory::<AddV1>::new().accepts(Operands { a: 1.0, b: 1.0 }, client().subject("plain")).unwrap();
    assert_eq!(e.subject(), "plain");
}

#[test]
fn the_default_subject_needs_a_reverse_dns_source() {
    let err = EventFactory::<AddV1>::new()
        .accepts(Operands { a: 1.0, b: 2.0 }, Event::builder().source("com.app"))
        .unwrap_err();
    match &err {
        FactoryError::Subject { event_type, source: SubjectError::Invalid(errors) } => {
            assert_eq!(event_type, "com.calc.add");
            assert!(errors.has_field("execution.initiator"), "{err}");
        }
        other => panic!("expected a subject error, got {other}"),
    }
    let message = err.to_string();
    assert!(message.contains("execution.initiator") && message.contains("com.app"), "{message}");
    // With a subject given, `com.app` is a fine source.
    let e = EventFactory::<AddV1>::new()
        .accepts(Operands { a: 1.0, b: 2.0 }, Event::builder().source("com.app").subject("s"))
        .unwrap();
    assert_eq!(e.source(), "com.app");
}

#[test]
fn factories_validate_payloads() {
    let data_error = |r: Result<Event, FactoryError>| match r {
        Err(FactoryError::Data { kind, event_type, errors }) => {
            (kind, event_type, errors.errors.iter().map(|e| e.path.clone()).collect::<Vec<_>>())
        }
        other => panic!("expected a data error, got {other:?}"),
    };
    let (kind, t, paths) = data_error(
        EventFactory::<DivideV1>::new().accepts(DivideRequest { numerator: 1.0, denominator: 0.0 }, client()),
    );
    assert_eq!((kind, t.as_str(), paths), ("Accept", "com.calc.divide", vec!["/denominator".to_owned()]));
    let (_, _, paths) = data_error(
        EventFactory::<DivideV2>::new()
            .accepts(DivideRequestV2 { numerator: 1.0, denominator: 2.0, precision: 13 }, client()),
    );
    assert_eq!(paths, ["/precision"]);
    // Negative zero is zero too.
    let (_, _, paths) = data_error(
        EventFactory::<DivideV1>::new()
            .accepts(DivideRequest { numerator: 1.0, denominator: -0.0 }, client()),
    );
    assert_eq!(paths, ["/denominator"]);
    let (kind, t, paths) =
        data_error(EventFactory::<AverageV1>::new().init(AverageInput { values: vec![] }, client()));
    assert_eq!((kind, t.as_str(), paths), ("Init", "arvo.orc.calc.average", vec!["/values".to_owned()]));
    let err = EventFactory::<AverageV1>::new().init(AverageInput { values: vec![] }, client()).unwrap_err();
    assert!(
        err.to_string().starts_with("Init event data validation failed for 'arvo.orc.calc.average'"),
        "{err}"
    );
    // Valid payloads pass, and the typed decoding gives them back.
    let e = EventFactory::<DivideV2>::new()
        .accepts(DivideRequestV2 { numerator: 1.0, denominator: 2.0, precision: 12 }, client())
        .unwrap();
    assert_eq!(DivideV2::parse_accepts(&e).unwrap().precision, 12);
    let e = EventFactory::<DivideV1>::new().emits(Quotient { quotient: 0.5 }, client()).unwrap();
    assert_eq!(e.dataschema(), Some("#/calc/divide/1.0.0"));
}

// ---------------------------------------------------------------------------------------------
// Parsing typed payloads
// ---------------------------------------------------------------------------------------------

#[test]
fn parse_accepts_enforces_schema_constraints() {
    let ok = raw_event("com.test.checked", Some("#/test/checked/1.0.0"), valid_constrained());
    let parsed = CheckedV1::parse_accepts(&ok).unwrap();
    assert_eq!(
        parsed,
        Constrained { count: 5, tags: vec!["a".into(), "b".into()], code: "abc".into(), name: "n".into() }
    );
    // Boundaries are inclusive.
    let mut edge = valid_constrained();
    edge["count"] = json!(10);
    edge["tags"] = json!(["a", "b", "c", "d", "e"]);
    assert!(CheckedV1::parse_accepts(&raw_event("com.test.checked", None, edge)).is_ok());

    let cases: [(&str, Value, &str); 9] = [
        ("count", json!(0), "/count"),
        ("count", json!(11), "/count"),
        ("count", json!("x"), "/count"),
        ("count", json!(1.5), "/count"),
        ("tags", json!([]), "/tags"),
        ("tags", json!(["a", "b", "c", "d", "e", "f"]), "/tags"),
        ("code", json!("ABC"), "/code"),
        ("code", json!(""), "/code"),
        ("name", json!(""), "/name"),
    ];
    for (field, value, path) in cases {
        let mut data = valid_constrained();
        data[field] = value.clone();
        let e = raw_event("com.test.checked", Some("#/test/checked/1.0.0"), data);
        let message = contract_violation(CheckedV1::parse_accepts(&e), &[path, "#/test/checked/1.0.0"]);
        assert!(message.contains(e.id()), "{field}={value}: the message names the event: {message}");
        // The structured details list the path too.
        let Err(Violation::Contract { metadata: Some(meta), .. }) = CheckedV1::parse_accepts(&e) else {
            unreachable!()
        };
        assert!(meta["errors"].as_array().unwrap().iter().any(|x| x["path"] == path), "{meta}");
    }
    // A missing field.
    let mut data = valid_constrained();
    data.as_object_mut().unwrap().remove("name");
    contract_violation(
        CheckedV1::parse_accepts(&raw_event("com.test.checked", None, data)),
        &["\"name\"", "required"],
    );
    // Several errors at once.
    let e = raw_event("com.test.checked", None, json!({"count": 0, "tags": [], "code": "X", "name": "n"}));
    contract_violation(CheckedV1::parse_accepts(&e), &["/count", "/tags", "/code"]);
}

#[test]
fn parse_emitted_enforces_schema_constraints() {
    let ok = raw_event("evt.test.checked.done", Some("#/test/checked/1.0.0"), json!({"score": 99.5}));
    assert_eq!(<CheckedV1 as Emits<Scored>>::parse_emitted(&ok).unwrap(), Scored { score: 99.5 });
    for bad in [json!(100.5), json!(-1), json!("high")] {
        let e = raw_event("evt.test.checked.done", None, json!({"score": bad}));
        contract_violation(<CheckedV1 as Emits<Scored>>::parse_emitted(&e), &["/score"]);
    }
    // The wrong event type is a configuration fault.
    let e = raw_event("com.test.checked", None, json!({"score": 1}));
    config_violation(
        <CheckedV1 as Emits<Scored>>::parse_emitted(&e),
        &["com.test.checked", "evt.test.checked.done"],
    );
    // validate_emitted of a type the version does not have is a contract fault.
    let e = raw_event("evt.test.checked.other", None, json!({}));
    contract_violation(CheckedV1::versioned().validate_emitted(&e), &["evt.test.checked.other"]);
}

#[test]
fn dataschema_and_event_type_are_checked() {
    let data = valid_constrained();
    let with_schema = |ds: Option<&str>| raw_event("com.test.checked", ds, data.clone());
    assert!(CheckedV1::parse_accepts(&with_schema(None)).is_ok(), "no dataschema: not checked");
    assert!(CheckedV1::parse_accepts(&with_schema(Some("#/test/checked/0.0.0"))).is_ok(), "wildcard version");
    contract_violation(
        CheckedV1::parse_accepts(&with_schema(Some("#/other/contract/1.0.0"))),
        &["#/other/contract", "#/test/checked"],
    );
    config_violation(
        CheckedV1::parse_accepts(&with_schema(Some("#/test/checked/9.9.9"))),
        &["9.9.9", "1.0.0"],
    );
    contract_violation(
        CheckedV1::parse_accepts(&with_schema(Some("#/test/checked/latest"))),
        &["#/test/checked/latest"],
    );
    // The wrong event type.
    let e = raw_event("com.test.other", Some("#/test/checked/1.0.0"), data.clone());
    config_violation(CheckedV1::parse_accepts(&e), &["com.test.other", "com.test.checked"]);
    // A version-1 event is not a version-2 event.
    let v1 = EventFactory::<DivideV1>::new()
        .accepts(DivideRequest { numerator: 1.0, denominator: 2.0 }, client())
        .unwrap();
    assert!(DivideV1::parse_accepts(&v1).is_ok());
    config_violation(DivideV2::parse_accepts(&v1), &["1.0.0", "2.0.0"]);
}

#[test]
fn an_init_event_needs_parent_subject() {
    let init = |data: Value| raw_event("arvo.orc.calc.average", Some("#/orc/calc/average/1.0.0"), data);
    // arvo-core requires the key: an init event without it is rejected.
    contract_violation(AverageV1::parse_accepts(&init(json!({"values": [1.0]}))), &["parentSubject$$"]);
    // null = a root workflow.
    let root = AverageV1::parse_accepts(&init(json!({"parentSubject$$": null, "values": [1.0]}))).unwrap();
    assert_eq!(root.parent_subject, None);
    assert_eq!(root.data.values, [1.0]);
    // A string = a child workflow.
    let child =
        AverageV1::parse_accepts(&init(json!({"parentSubject$$": "eJyrVg==", "values": [1.0]}))).unwrap();
    assert_eq!(child.parent_subject.as_deref(), Some("eJyrVg=="));
    // Not empty, not another type.
    for bad in [json!(""), json!(5), json!({"a": 1})] {
        contract_violation(
            AverageV1::parse_accepts(&init(json!({"parentSubject$$": bad, "values": [1.0]}))),
            &["parentSubject$$"],
        );
    }
    // The init payload's own constraints still apply.
    contract_violation(
        AverageV1::parse_accepts(&init(json!({"parentSubject$$": null, "values": []}))),
        &["/values"],
    );
}

/// arvo-core's orchestrator `init` uses `event.subject ?? (parentSubject$$ ? from(parent) : new())`:
/// an explicit subject wins even for a child workflow, and `EventFactory::init_child` keeps it.
#[test]
fn init_child_keeps_an_explicit_subject() {
    let parent = Subject::builder("arvo.orc.parent.flow", "1.0.0", "com.test.client").build().unwrap();
    let explicit = Subject::builder("arvo.orc.calc.average", "1.0.0", "arvo.orc.parent.flow")
        .execution_id("chosen-by-caller")
        .build()
        .unwrap();
    let e = EventFactory::<AverageV1>::new()
        .init_child(
            AverageInput { values: vec![1.0] },
            &parent,
            Event::builder().source("arvo.orc.parent.flow").orchestration_subject(&explicit),
        )
        .unwrap();
    assert_eq!(e.subject(), explicit.as_str());
    assert_eq!(e.data()["parentSubject$$"], parent.as_str());
}
