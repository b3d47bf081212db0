//! The service handler (`orchestrator::handler::service`, Arvo's `ArvoEventHandler`): build-time
//! rules, every execution step and error path, output derivation, domains, system errors.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::future::Future;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::task::{Context, Poll, Wake};

use orchestrator::contract::{ContractVersion, SystemErrorPayload};
use orchestrator::domain::Domain;
use orchestrator::emit::{BoxError, NamedError};
use orchestrator::event::ExtensionValue;
use orchestrator::handler::service::{Emissions, Emit, ServiceHandler, ServiceInput};
use orchestrator::handler::{DynEventHandler, EventHandler};
use orchestrator::prelude::*;
use orchestrator_examples::calculator::{
    Add, AddV1, Divide, DivideRequest, DivideRequestV2, DivideV1, DivideV2, MulV1, Operands, Quotient, Sum,
    services,
};
use serde_json::{Value, json};

// ---------------------------------------------------------------------------------------------
// Helpers

/// Runs a future to completion on this thread.
fn block_on<F: Future>(future: F) -> F::Output {
    struct Unpark(std::thread::Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Arc::new(Unpark(std::thread::current())).into();
    let mut cx = Context::from_waker(&waker);
    let mut future = std::pin::pin!(future);
    loop {
        match future.as_mut().poll(&mut cx) {
            Poll::Ready(value) => return value,
            Poll::Pending => std::thread::park(),
        }
    }
}

fn run<H: EventHandler>(handler: &H, event: &Event) -> Result<Vec<Event>, Violation> {
    block_on(handler.execute(event))
}

const TRACEPARENT: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

fn add_handler() -> ServiceHandler<Add> {
    ServiceHandler::<Add>::builder()
        .version(|input: ServiceInput<AddV1>| async move {
            let Operands { a, b } = input.payload;
            Ok(Emit::new(Sum { sum: a + b }))
        })
        .execution_units(1.5)
        .build()
        .unwrap()
}

fn add_request(base: EventBuilder) -> Event {
    EventFactory::<AddV1>::new().accepts(Operands { a: 1.0, b: 2.0 }, base).unwrap()
}

fn client() -> EventBuilder {
    Event::builder().source("com.test.client")
}

/// A `com.calc.divide` event built by hand (so it can break the contract).
fn divide_event(dataschema: Option<&str>, data: Value) -> Event {
    client()
        .r#type("com.calc.divide")
        .subject("divide-subject")
        .dataschema_opt(dataschema)
        .data_json(data)
        .build()
        .unwrap()
}

/// Every produced event re-parses to itself and satisfies its contract version.
fn assert_wire_valid(events: &[Event], vc: &orchestrator::contract::VersionedContract) {
    for e in events {
        let back = Event::from_slice(&e.to_json_vec()).unwrap();
        assert_eq!(&back, e);
        vc.validate_emitted(&back).unwrap();
    }
}

fn violation_kind(result: Result<Vec<Event>, Violation>) -> Violation {
    result.expect_err("expected a violation")
}

// ---------------------------------------------------------------------------------------------
// Build time

#[test]
fn build_requires_a_handler_for_every_version() {
    let err = ServiceHandler::<Divide>::builder().build().unwrap_err();
    assert!(matches!(err, Violation::Config { .. }), "{err:?}");
    assert!(err.message().contains("missing: 1.0.0, 2.0.0"), "{err}");
    assert_eq!(err.to_string().split_once(' ').unwrap().0, "ViolationError<Config>");

    let err = ServiceHandler::<Divide>::builder()
        .version(|_: ServiceInput<DivideV2>| async { Ok(()) })
        .build()
        .unwrap_err();
    assert!(matches!(err, Violation::Config { .. }));
    assert!(err.message().contains("missing: 1.0.0"), "{err}");
    assert!(!err.message().contains("2.0.0"), "{err}");
    let Violation::Config { metadata: Some(metadata), .. } = &err else { panic!("{err:?}") };
    assert_eq!(metadata["missingVersions"], json!(["1.0.0"]));
}

#[test]
fn build_reports_every_configuration_problem() {
    let err = ServiceHandler::<Add>::builder()
        .version(|_: ServiceInput<AddV1>| async { Ok(()) })
        .version(|_: ServiceInput<AddV1>| async { Ok(()) })
        .execution_units(f64::NAN)
        .emit_domains([])
        .system_error_domains([])
        .build()
        .unwrap_err();
    assert!(matches!(err, Violation::Config { .. }));
    for needle in [
        "more than one handler for version(s): 1.0.0",
        "execution units must be a finite number",
        "default emit domains must not be empty",
        "system-error domains must not be empty",
    ] {
        assert!(err.message().contains(needle), "{needle} missing from {err}");
    }
}

#[test]
fn source_is_the_contract_type_and_the_handler_is_object_safe() {
    let add = add_handler();
    assert_eq!(add.source(), "com.calc.add");
    assert_eq!(add.contract().uri(), "#/calc/add");
    assert_eq!(add.executionunits().and_then(serde_json::Number::as_f64), Some(1.5));
    assert_eq!(add.emit_domains(), &[Domain::OrchestrationContext]);
    assert_eq!(add.system_error_domains(), &[Domain::OrchestrationContext]);
    let handlers: Vec<Arc<dyn DynEventHandler>> =
        vec![Arc::new(add.clone()), Arc::new(services::divide().unwrap())];
    assert_eq!(handlers[1].source(), "com.calc.divide");
    let out = run(&handlers[0], &add_request(client())).unwrap();
    assert_eq!(out[0].data()["sum"], 3.0);
}

// ---------------------------------------------------------------------------------------------
// Input checks

#[test]
fn wrong_event_type_is_a_config_violation() {
    let mul = EventFactory::<MulV1>::new().accepts(Operands { a: 1.0, b: 2.0 }, client()).unwrap();
    let err = violation_kind(run(&add_handler(), &mul));
    assert!(matches!(err, Violation::Config { .. }), "{err:?}");
    assert_eq!(err.message(), "Event type mismatch: Received 'com.calc.mul', expected 'com.calc.add'");
}

#[test]
fn dataschema_of_another_contract_is_a_contract_violation() {
    let event = divide_event(Some("#/calc/other/1.0.0"), json!({"numerator": 1.0, "denominator": 2.0}));
    let err = violation_kind(run(&services::divide().unwrap(), &event));
    assert!(matches!(err, Violation::Contract { .. }), "{err:?}");
    assert!(err.message().starts_with("Contract URI mismatch"), "{err}");
    assert!(err.message().contains("#/calc/other"), "{err}");
}

/// `/1.0.0` and `1.0.0` name version 1.0.0 of the contract with the empty URI (arvo-core's
/// `EventDataschemaUtil.parse`): a URI mismatch, not a missing dataschema (which would run the
/// latest version).
#[test]
fn dataschema_with_an_empty_uri_is_a_uri_mismatch() {
    for dataschema in ["/1.0.0", "1.0.0", "/2.0.0"] {
        let event =
            divide_event(Some(dataschema), json!({"numerator": 1.0, "denominator": 2.0, "precision": 1}));
        let err = violation_kind(run(&services::divide().unwrap(), &event));
        assert!(matches!(err, Violation::Contract { .. }), "{dataschema}: {err:?}");
        assert!(err.message().starts_with("Contract URI mismatch"), "{dataschema}: {err}");
    }
}

#[test]
fn dataschema_selects_the_version() {
    let divide = services::divide().unwrap();
    let v1 = EventFactory::<DivideV1>::new()
        .accepts(DivideRequest { numerator: 1.0, denominator: 3.0 }, client())
        .unwrap();
    let out = run(&divide, &v1).unwrap();
    assert_eq!(out[0].dataschema(), Some("#/calc/divide/1.0.0"));
    assert_eq!(out[0].data()["quotient"], 1.0 / 3.0);
    assert_wire_valid(&out, DivideV1::versioned());

    let v2 = EventFactory::<DivideV2>::new()
        .accepts(DivideRequestV2 { numerator: 1.0, denominator: 3.0, precision: 2 }, client())
        .unwrap();
    let out = run(&divide, &v2).unwrap();
    assert_eq!(out[0].dataschema(), Some("#/calc/divide/2.0.0"));
    assert_eq!(out[0].data()["quotient"], 0.33);
    assert_wire_valid(&out, DivideV2::versioned());
}

#[test]
fn missing_or_unparsable_dataschema_uses_the_latest_version() {
    let divide = services::divide().unwrap();
    for dataschema in [None, Some("#/calc/divide/latest"), Some("not-a-dataschema")] {
        let v2_payload = json!({"numerator": 2.0, "denominator": 3.0, "precision": 1});
        let out = run(&divide, &divide_event(dataschema, v2_payload)).unwrap();
        assert_eq!(out[0].dataschema(), Some("#/calc/divide/2.0.0"), "{dataschema:?}");
        assert_eq!(out[0].data()["quotient"], 0.7);
        // A version-1 payload is checked against version 2 and lacks `precision`.
        let v1_payload = json!({"numerator": 2.0, "denominator": 3.0});
        let err = violation_kind(run(&divide, &divide_event(dataschema, v1_payload)));
        assert!(matches!(err, Violation::Contract { .. }), "{err:?}");
        assert!(err.message().contains("precision"), "{err}");
    }
}

#[test]
fn unknown_version_is_a_config_violation() {
    let divide = services::divide().unwrap();
    for version in ["3.0.0", "0.0.0", "1.0.1"] {
        let event = divide_event(
            Some(&format!("#/calc/divide/{version}")),
            json!({"numerator": 1.0, "denominator": 2.0}),
        );
        let err = violation_kind(run(&divide, &event));
        assert!(matches!(err, Violation::Config { .. }), "{err:?}");
        assert!(err.message().starts_with("Invalid contract version"), "{err}");
        assert!(err.message().contains(version), "{err}");
    }
}

#[test]
fn invalid_payload_is_a_contract_violation_with_the_schema_errors() {
    let divide = services::divide().unwrap();
    let cases = [
        ("#/calc/divide/1.0.0", json!({"numerator": 1.0, "denominator": 0}), "/denominator"),
        (
            "#/calc/divide/2.0.0",
            json!({"numerator": 1.0, "denominator": 0.0, "precision": 2}),
            "/denominator",
        ),
        ("#/calc/divide/2.0.0", json!({"numerator": 1.0, "denominator": 2.0, "precision": 13}), "/precision"),
        ("#/calc/divide/1.0.0", json!({"numerator": "one", "denominator": 2.0}), "/numerator"),
    ];
    for (dataschema, data, path) in cases {
        let err = violation_kind(run(&divide, &divide_event(Some(dataschema), data.clone())));
        let Violation::Contract { message, metadata } = &err else { panic!("{err:?}") };
        assert!(message.starts_with("Input event payload validation failed"), "{message}");
        assert!(message.contains(dataschema), "{message}");
        let errors = metadata.as_ref().unwrap()["errors"].as_array().unwrap().clone();
        assert!(errors.iter().any(|e| e["path"] == path), "{path} not in {errors:?} for {data}");
    }
}

#[test]
fn the_function_receives_the_decoded_input_contract_and_domains() {
    let seen = Arc::new(std::sync::Mutex::new(None));
    let record = Arc::clone(&seen);
    let divide = ServiceHandler::<Divide>::builder()
        .version(|_: ServiceInput<DivideV1>| async { Ok(()) })
        .version(move |input: ServiceInput<DivideV2>| {
            let record = Arc::clone(&record);
            async move {
                *record.lock().unwrap() = Some((
                    input.payload.clone(),
                    input.event.id().to_owned(),
                    input.version(),
                    input.contract.dataschema(),
                    input.source,
                    input.self_domain(),
                    input.event_domain().map(str::to_owned),
                ));
                Ok(())
            }
        })
        .build()
        .unwrap();
    let request = EventFactory::<DivideV2>::new()
        .accepts(
            DivideRequestV2 { numerator: 1.0, denominator: 4.0, precision: 3 },
            client().domain("external.review"),
        )
        .unwrap();
    assert_eq!(run(&divide, &request).unwrap(), vec![], "`()` emits nothing");
    let seen = seen.lock().unwrap().clone().unwrap();
    assert_eq!(
        seen,
        (
            DivideRequestV2 { numerator: 1.0, denominator: 4.0, precision: 3 },
            request.id().to_owned(),
            "2.0.0",
            "#/calc/divide/2.0.0",
            "com.calc.divide",
            Some("calc"),
            Some("external.review".to_owned()),
        )
    );
}

// ---------------------------------------------------------------------------------------------
// Output derivation

#[test]
fn outputs_are_derived_from_the_input() {
    let request = add_request(
        client()
            .accesscontrol("role:admin")
            .traceparent(TRACEPARENT)
            .tracestate("vendor=1")
            .extension("tenant", "acme"),
    );
    let out = run(&add_handler(), &request).unwrap();
    assert_eq!(out.len(), 1);
    let e = &out[0];
    assert_eq!(e.r#type(), "evt.calc.add.success");
    assert_eq!(e.source(), "com.calc.add");
    assert_eq!(e.subject(), request.subject());
    assert_eq!(e.parentid(), Some(request.id()));
    assert_eq!(e.to(), Some("com.test.client"), "no redirectto: back to the source");
    assert_eq!(e.redirectto(), None);
    assert_eq!(e.accesscontrol(), Some("role:admin"));
    assert_eq!(e.executionunits(), Some(1.5));
    assert_eq!(e.dataschema(), Some("#/calc/add/1.0.0"));
    assert_eq!(e.domain(), None);
    assert_eq!(e.traceparent(), Some(TRACEPARENT));
    assert_eq!(e.tracestate(), Some("vendor=1"));
    assert_eq!(e.data_value(), &json!({"sum": 3.0}));
    assert!(e.extensions().is_empty(), "input extensions are not copied");
    assert_ne!(e.id(), request.id());
    assert_wire_valid(&out, AddV1::versioned());
}

#[test]
fn input_redirectto_routes_the_response() {
    let request = add_request(client().redirectto("com.redirect.sink"));
    let out = run(&add_handler(), &request).unwrap();
    assert_eq!(out[0].to(), Some("com.redirect.sink"));
    assert_eq!(out[0].redirectto(), None, "redirectto is not inherited");
}

#[test]
fn emit_options_override_the_defaults() {
    let add = ServiceHandler::<Add>::builder()
        .version(|input: ServiceInput<AddV1>| async move {
            let Operands { a, b } = input.payload;
            Ok(Emit::new(Sum { sum: a + b })
                .to("com.explicit.target")
                .redirectto("com.reply.here")
                .id("fixed-id-1")
                .time("2024-06-01T12:30:45.123+05:30")
                .accesscontrol("role:service")
                .executionunits(7.0)
                .extension("tenant", "acme")
                .extension("retry", 2)
                .extension("urgent", true))
        })
        .execution_units(1.0)
        .build()
        .unwrap();
    let request = add_request(client().redirectto("com.redirect.sink").accesscontrol("role:admin"));
    let out = run(&add, &request).unwrap();
    let e = &out[0];
    assert_eq!(e.to(), Some("com.explicit.target"));
    assert_eq!(e.redirectto(), Some("com.reply.here"));
    assert_eq!(e.id(), "fixed-id-1");
    assert_eq!(e.time(), "2024-06-01T12:30:45.123+05:30");
    assert_eq!(e.accesscontrol(), Some("role:service"));
    assert_eq!(e.executionunits(), Some(7.0));
    assert_eq!(e.parentid(), Some(request.id()), "parentid cannot be overridden");
    assert_eq!(e.extensions()["tenant"], ExtensionValue::String("acme".into()));
    assert_eq!(e.extensions()["retry"], ExtensionValue::Number(2.into()));
    assert_eq!(e.extensions()["urgent"], ExtensionValue::Bool(true));
    assert_wire_valid(&out, AddV1::versioned());
}

#[test]
fn multiple_void_and_optional_outputs() {
    let add = ServiceHandler::<Add>::builder()
        .version(|input: ServiceInput<AddV1>| async move {
            let Operands { a, b } = input.payload;
            Ok(match a as i64 {
                0 => Emissions::none(),
                1 => vec![Emit::new(Sum { sum: a + b }), Emit::new(Sum { sum: a - b })].into(),
                2 => [Emit::new(Sum { sum: 1.0 }), Emit::new(Sum { sum: 2.0 }), Emit::new(Sum { sum: 3.0 })]
                    .into(),
                3 => None.into(),
                _ => (0..4).map(|i| Emit::new(Sum { sum: f64::from(i) })).collect(),
            })
        })
        .build()
        .unwrap();
    let count = |a: f64| {
        let request = EventFactory::<AddV1>::new().accepts(Operands { a, b: 1.0 }, client()).unwrap();
        let out = run(&add, &request).unwrap();
        assert_wire_valid(&out, AddV1::versioned());
        out
    };
    assert!(count(0.0).is_empty());
    let two = count(1.0);
    assert_eq!(two.iter().map(|e| e.data()["sum"].as_f64().unwrap()).collect::<Vec<_>>(), [2.0, 0.0]);
    assert_ne!(two[0].id(), two[1].id());
    assert_eq!(count(2.0).len(), 3);
    assert!(count(3.0).is_empty());
    assert_eq!(count(4.0).len(), 4);

    // A plain `Vec<Emit<V>>` and `()` are accepted return types too.
    let vec_handler = ServiceHandler::<Add>::builder()
        .version(|_: ServiceInput<AddV1>| async { Ok(vec![Emit::new(Sum { sum: 0.0 })]) })
        .build()
        .unwrap();
    assert_eq!(run(&vec_handler, &add_request(client())).unwrap().len(), 1);
    let void =
        ServiceHandler::<Add>::builder().version(|_: ServiceInput<AddV1>| async { Ok(()) }).build().unwrap();
    assert!(run(&void, &add_request(client())).unwrap().is_empty());
}

// ---------------------------------------------------------------------------------------------
// Domains

#[test]
fn one_event_per_unique_resolved_domain_sharing_the_given_id() {
    let divide = ServiceHandler::<Divide>::builder()
        .version(|_: ServiceInput<DivideV1>| async { Ok(()) })
        .version(|input: ServiceInput<DivideV2>| async move {
            let DivideRequestV2 { numerator, denominator, .. } = input.payload;
            Ok(vec![
                Emit::new(Quotient { quotient: numerator / denominator }).id("same-id").domains([
                    Domain::named("human.interaction")?,
                    Domain::FromSelfContract,    // calc
                    Domain::FromTriggeringEvent, // calc (duplicate)
                    Domain::FromEventContract,   // calc (duplicate)
                    Domain::Local,
                    Domain::named("calc")?, // duplicate
                ]),
                // Without an id, each copy gets its own.
                Emit::new(Quotient { quotient: 0.0 }).domains([Domain::Local, Domain::FromSelfContract]),
                // An empty list emits nothing (as Arvo).
                Emit::new(Quotient { quotient: -1.0 }).domains([]),
            ])
        })
        .build()
        .unwrap();
    let request = EventFactory::<DivideV2>::new()
        .accepts(DivideRequestV2 { numerator: 1.0, denominator: 2.0, precision: 1 }, client().domain("calc"))
        .unwrap();
    let out = run(&divide, &request).unwrap();
    let summary: Vec<(&str, Option<&str>, f64)> =
        out.iter().map(|e| (e.id(), e.domain(), e.data()["quotient"].as_f64().unwrap())).collect();
    assert_eq!(
        &summary[..3],
        &[
            ("same-id", Some("human.interaction"), 0.5),
            ("same-id", Some("calc"), 0.5),
            ("same-id", None, 0.5)
        ]
    );
    assert_eq!(out.len(), 5);
    assert_eq!((summary[3].1, summary[4].1), (None, Some("calc")));
    assert_ne!(summary[3].0, summary[4].0);
    assert_wire_valid(&out, DivideV2::versioned());
}

#[test]
fn default_domain_is_the_orchestration_context() {
    // The factory's default subject carries the event's domain: same domain → local.
    let out = run(&add_handler(), &add_request(client().domain("external.review"))).unwrap();
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].domain(), None);

    // A cross-domain call (event domain ≠ the orchestration's domain): back to the orchestration's.
    let subject = Subject::builder("arvo.orc.calc.average", "1.0.0", "com.test.client")
        .domain("orchestration.home")
        .build()
        .unwrap();
    let request = add_request(client().orchestration_subject(&subject).domain("calc.remote"));
    let out = run(&add_handler(), &request).unwrap();
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].domain(), Some("orchestration.home"));

    // A local request stays local.
    let request = add_request(client().orchestration_subject(&subject));
    assert_eq!(run(&add_handler(), &request).unwrap()[0].domain(), None);
}

#[test]
fn handler_emit_domains_replace_the_default() {
    let add = ServiceHandler::<Add>::builder()
        .version(|input: ServiceInput<AddV1>| async move {
            Ok(Emit::new(Sum { sum: input.payload.a + input.payload.b }))
        })
        .emit_domains([Domain::FromTriggeringEvent, Domain::named("audit").unwrap()])
        .build()
        .unwrap();
    let out = run(&add, &add_request(client().domain("tenant.a"))).unwrap();
    assert_eq!(out.iter().map(Event::domain).collect::<Vec<_>>(), [Some("tenant.a"), Some("audit")]);
    assert_wire_valid(&out, AddV1::versioned());
}

// ---------------------------------------------------------------------------------------------
// Output build failures

#[test]
fn an_emitted_payload_failing_its_schema_is_a_contract_violation() {
    // `n` must be at least 0 (a NaN is not a schema failure any more: see
    // a_result_json_cannot_represent_is_a_system_error_event).
    let counter = ServiceHandler::<Counter>::builder()
        .version(|_: ServiceInput<CounterV1>| async { Ok(Emit::new(Count { n: -1 })) })
        .build()
        .unwrap();
    let request = EventFactory::<CounterV1>::new().accepts(Operands { a: 1.0, b: 2.0 }, client()).unwrap();
    let err = violation_kind(run(&counter, &request));
    let Violation::Contract { message, metadata } = &err else { panic!("{err:?}") };
    assert!(message.starts_with("Emitted event creation failed: 'evt.test.counter.success'"), "{message}");
    assert_eq!(metadata.as_ref().unwrap()["errors"][0]["path"], "/n");
}

/// A count, at least 0.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Count {
    /// The count.
    #[schemars(range(min = 0))]
    pub n: i64,
}

orchestrator::simple_contract! {
    /// Counts: its emit has a constraint serde does not enforce.
    pub contract Counter {
        uri: "#/test/counter",
        type: "test.counter",
        versions: { CounterV1 = "1.0.0" { accepts: Operands, emits: Count } },
    }
}

#[test]
fn other_emitted_event_build_failures_are_contract_violations() {
    type MakeEmit = fn() -> Emit<AddV1>;
    let cases: [(&str, MakeEmit); 5] = [
        ("extension", || Emit::new(Sum { sum: 1.0 }).extension("Bad-Key", "x")),
        ("attribute", || Emit::new(Sum { sum: 1.0 }).extension("subject", "x")),
        ("executionunits", || Emit::new(Sum { sum: 1.0 }).executionunits(f64::INFINITY)),
        ("time", || Emit::new(Sum { sum: 1.0 }).time("yesterday")),
        ("domain", || Emit::new(Sum { sum: 1.0 }).domains([Domain::Named("Not Valid".into())])),
    ];
    for (what, make) in cases {
        let add = ServiceHandler::<Add>::builder()
            .version(move |_: ServiceInput<AddV1>| async move { Ok(make()) })
            .build()
            .unwrap();
        let err = violation_kind(run(&add, &add_request(client())));
        assert!(matches!(err, Violation::Contract { .. }), "{what}: {err:?}");
    }
}

#[test]
fn emitted_uris_are_encoded_once() {
    let add = ServiceHandler::<Add>::builder()
        .version(|_: ServiceInput<AddV1>| async {
            Ok(Emit::new(Sum { sum: 1.0 }).to("com.my target").redirectto("com.reply%20here"))
        })
        .build()
        .unwrap();
    let out = run(&add, &add_request(client())).unwrap();
    assert_eq!(out[0].to(), Some("com.my%20target"));
    assert_eq!(out[0].redirectto(), Some("com.reply%20here"));
}

// ---------------------------------------------------------------------------------------------
// Errors of user code

fn failing_add<F>(fail: F) -> ServiceHandler<Add>
where
    F: Fn() -> BoxError + Send + Sync + 'static,
{
    let fail = Arc::new(fail);
    ServiceHandler::<Add>::builder()
        .version(move |_: ServiceInput<AddV1>| {
            let fail = Arc::clone(&fail);
            async move { Err::<(), _>(fail()) }
        })
        .execution_units(2.0)
        .build()
        .unwrap()
}

#[test]
fn an_ordinary_error_becomes_a_system_error_event() {
    let add = failing_add(|| "the adder is broken".into());
    let request = add_request(
        client()
            .redirectto("com.redirect.sink")
            .accesscontrol("role:admin")
            .traceparent(TRACEPARENT)
            .domain("tenant.a"),
    );
    let out = run(&add, &request).unwrap();
    assert_eq!(out.len(), 1);
    let e = &out[0];
    assert_eq!(e.r#type(), "sys.com.calc.add.error");
    assert_eq!(e.source(), "com.calc.add");
    assert_eq!(e.subject(), request.subject());
    assert_eq!(e.to(), Some("com.test.client"), "system errors go to the source, ignoring redirectto");
    assert_eq!(e.parentid(), Some(request.id()));
    assert_eq!(e.dataschema(), Some("#/calc/add/0.0.0"));
    assert_eq!(
        e.data_value(),
        &json!({"errorName": "Error", "errorMessage": "the adder is broken", "errorStack": null})
    );
    assert_eq!(e.accesscontrol(), Some("role:admin"));
    assert_eq!(e.executionunits(), Some(2.0));
    assert_eq!(e.redirectto(), None);
    assert_eq!(e.traceparent(), Some(TRACEPARENT));
    // The factory's subject carries the event's domain: ORCHESTRATION_CONTEXT resolves to local.
    assert_eq!(e.domain(), None);
    assert!(e.extensions().is_empty());
    assert_wire_valid(&out, AddV1::versioned());
    let payload: SystemErrorPayload = serde_json::from_value(e.data_value().clone()).unwrap();
    assert_eq!(payload.error_message, "the adder is broken");
}

#[test]
fn the_error_chain_and_name_reach_the_payload() {
    let add = failing_add(|| {
        NamedError::new("InsufficientFunds", "balance too low")
            .with_source(
                NamedError::new("Ledger", "ledger offline").with_source(std::io::Error::other("EOF")),
            )
            .into()
    });
    let out = run(&add, &add_request(client())).unwrap();
    assert_eq!(
        out[0].data_value(),
        &json!({
            "errorName": "InsufficientFunds",
            "errorMessage": "balance too low",
            "errorStack": "caused by: ledger offline\ncaused by: EOF"
        })
    );

    // `?` on any error type inside the function.
    let parse = ServiceHandler::<Add>::builder()
        .version(|_: ServiceInput<AddV1>| async {
            let n: i32 = "forty-two".parse()?;
            Ok(Emit::new(Sum { sum: f64::from(n) }))
        })
        .build()
        .unwrap();
    let out = run(&parse, &add_request(client())).unwrap();
    assert_eq!(out[0].r#type(), "sys.com.calc.add.error");
    assert_eq!(out[0].data()["errorMessage"], "invalid digit found in string");
}

#[test]
fn system_error_domains_are_resolved_and_deduplicated() {
    let divide = ServiceHandler::<Divide>::builder()
        .version(|_: ServiceInput<DivideV1>| async { Err::<(), BoxError>("v1 down".into()) })
        .version(|_: ServiceInput<DivideV2>| async { Err::<(), BoxError>("v2 down".into()) })
        .system_error_domains([
            Domain::FromSelfContract,
            Domain::named("ops.alerts").unwrap(),
            Domain::FromEventContract,
            Domain::Local,
        ])
        .build()
        .unwrap();
    let request = EventFactory::<DivideV1>::new()
        .accepts(DivideRequest { numerator: 1.0, denominator: 2.0 }, client())
        .unwrap();
    let out = run(&divide, &request).unwrap();
    assert_eq!(out.iter().map(Event::domain).collect::<Vec<_>>(), [Some("calc"), Some("ops.alerts"), None]);
    for e in &out {
        assert_eq!(e.r#type(), "sys.com.calc.divide.error");
        assert_eq!(e.dataschema(), Some("#/calc/divide/0.0.0"));
        assert_eq!(e.data()["errorMessage"], "v1 down");
        assert_eq!(e.executionunits(), None, "no handler execution units configured");
    }
    assert_ne!(out[0].id(), out[1].id());
    assert_wire_valid(&out, DivideV1::versioned());
}

#[test]
fn a_violation_from_user_code_is_returned_as_a_violation() {
    let add = failing_add(|| {
        Violation::execution("downstream unavailable").with_metadata(json!({"retry": true})).into()
    });
    let err = violation_kind(run(&add, &add_request(client())));
    assert_eq!(err, Violation::execution("downstream unavailable").with_metadata(json!({"retry": true})));

    let add = failing_add(|| Violation::transaction(TransactionCause::LockUnacquired, "busy").into());
    let err = violation_kind(run(&add, &add_request(client())));
    assert_eq!(err.transaction_cause(), Some(TransactionCause::LockUnacquired));
}

#[test]
fn a_panic_in_user_code_becomes_a_system_error_event() {
    let sync_panic = ServiceHandler::<Add>::builder()
        .version(|input: ServiceInput<AddV1>| {
            assert!(input.payload.a > 100.0, "a is too small");
            async { Ok(()) }
        })
        .build()
        .unwrap();
    let async_panic = ServiceHandler::<Add>::builder()
        .version(|input: ServiceInput<AddV1>| async move {
            if input.payload.a < 100.0 {
                panic!("async failure {}", input.payload.a);
            }
            Ok(())
        })
        .build()
        .unwrap();
    let request = add_request(client());
    let out = run(&sync_panic, &request).unwrap();
    assert_eq!(out[0].r#type(), "sys.com.calc.add.error");
    assert_eq!(out[0].data()["errorName"], "Panic");
    assert_eq!(out[0].data()["errorMessage"], "a is too small");
    let out = run(&async_panic, &request).unwrap();
    assert_eq!(out[0].data()["errorMessage"], "async failure 1");
    // The handler keeps working after a panic.
    assert_eq!(run(&add_handler(), &request).unwrap()[0].data()["sum"], 3.0);
}

// ---------------------------------------------------------------------------------------------
// arvo-core accepts what the handler produces (optional: needs node and interop/arvo/node_modules)

const INTEROP_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../interop/arvo");

fn node_available() -> bool {
    let node = Command::new("node").arg("--version").output().is_ok_and(|o| o.status.success());
    let arvo = Path::new(INTEROP_DIR).join("node_modules/arvo-core/package.json").is_file();
    match (node && arvo, std::env::var_os("CI").is_some()) {
        (true, _) => true,
        (false, true) => {
            panic!("CI is set, so the arvo-core interop check must run, but node or arvo-core is missing")
        }
        (false, false) => {
            eprintln!("SKIPPED: node or interop/arvo/node_modules is missing (cd interop/arvo && npm ci)");
            false
        }
    }
}

#[test]
fn arvo_core_accepts_the_produced_events() {
    if !node_available() {
        return;
    }
    let mut events = Vec::new();
    events.extend(run(&add_handler(), &add_request(client().accesscontrol("role:admin"))).unwrap());
    let divide = ServiceHandler::<Divide>::builder()
        .version(|_: ServiceInput<DivideV1>| async { Ok(()) })
        .version(|_: ServiceInput<DivideV2>| async {
            Ok(Emit::new(Quotient { quotient: 0.5 })
                .id("shared-id")
                .redirectto("com.reply.here")
                .extension("tenant", "acme")
                .domains([Domain::FromSelfContract, Domain::Local]))
        })
        .build()
        .unwrap();
    let v2 = EventFactory::<DivideV2>::new()
        .accepts(DivideRequestV2 { numerator: 1.0, denominator: 2.0, precision: 1 }, client())
        .unwrap();
    events.extend(run(&divide, &v2).unwrap());
    events.extend(
        run(&failing_add(|| "broken".into()), &add_request(client().traceparent(TRACEPARENT))).unwrap(),
    );
    assert_eq!(events.len(), 4);

    let doc = json!({ "events": events.iter().map(Event::to_json_value).collect::<Vec<_>>() });
    let file = std::env::temp_dir().join(format!("orchestrator-service-handler-{}.json", std::process::id()));
    std::fs::write(&file, serde_json::to_vec_pretty(&doc).unwrap()).unwrap();
    let output = Command::new("node")
        .arg(Path::new(INTEROP_DIR).join("verify.mjs"))
        .arg(&file)
        .current_dir(INTEROP_DIR)
        .output()
        .unwrap();
    let _ = std::fs::remove_file(&file);
    let report: Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!("verify.mjs printed no JSON ({e}): {}", String::from_utf8_lossy(&output.stderr))
    });
    assert_eq!(report["ok"], true, "arvo-core rejected handler output: {report:#}");
    assert_eq!(report["checked"]["events"], 4);
}

/// A result JSON cannot represent (a non-finite number) is a failure of the service's function,
/// not of the contract: the caller gets a `sys.<type>.error` event naming the field, so a waiting
/// workflow hears of it (a violation would be dead-lettered and the workflow would wait forever).
#[test]
fn a_result_json_cannot_represent_is_a_system_error_event() {
    let nan = ServiceHandler::<Add>::builder()
        .version(|input: ServiceInput<AddV1>| async move {
            let Operands { a, b } = input.payload;
            Ok(Emit::new(Sum { sum: (a - a) / (b - b) }))
        })
        .build()
        .unwrap();
    let request = add_request(client());
    let out = run(&nan, &request).expect("a system error event, not a violation");
    assert_eq!(out.len(), 1, "{out:?}");
    assert_eq!(out[0].r#type(), "sys.com.calc.add.error");
    assert_eq!(out[0].parentid(), Some(request.id()));
    let message = out[0].data()["errorMessage"].as_str().unwrap();
    assert!(message.contains("`sum` is NaN"), "{message}");
    assert!(message.contains("evt.calc.add.success"), "{message}");
}

/// An answer larger than the handler's limit (1 MiB by default, the parsers' limit) is the
/// function's failure: the workflow gets a system error naming the event, its size and the
/// limit, instead of an answer no one can parse.
#[test]
fn an_answer_larger_than_the_limit_is_a_system_error_event() {
    let add = ServiceHandler::<Add>::builder()
        .version(|input: ServiceInput<AddV1>| async move {
            let Operands { a, b } = input.payload;
            Ok(Emit::new(Sum { sum: a + b }))
        })
        .max_event_bytes(100)
        .build()
        .unwrap();
    let request = add_request(client());
    let out = run(&add, &request).expect("a system error event, not a violation");
    assert_eq!(out.len(), 1, "{out:?}");
    assert_eq!(out[0].r#type(), "sys.com.calc.add.error");
    assert_eq!(out[0].data()["errorName"], "EventTooLarge");
    let message = out[0].data()["errorMessage"].as_str().unwrap();
    assert!(message.contains("(type `evt.calc.add.success`)"), "{message}");
    assert!(message.contains("larger than the limit of 100 bytes"), "{message}");
}

/// A failure whose message would make the system error event larger than the limit still
/// reaches the workflow: the stack is left out and the message cut to fit, marked as cut.
/// Before, the system error itself was too large and was dead-lettered.
#[test]
fn a_system_error_is_cut_to_fit_the_limit() {
    let limit = 2_000;
    let add = ServiceHandler::<Add>::builder()
        .version(|_: ServiceInput<AddV1>| async move {
            let error: BoxError = NamedError::new("Overflow", "é".repeat(3_000))
                .with_source(std::io::Error::other("deep"))
                .into();
            Err::<(), _>(error)
        })
        .max_event_bytes(limit)
        .build()
        .unwrap();
    let request = add_request(client());
    let out = run(&add, &request).expect("a system error event, not a violation");
    assert_eq!(out.len(), 1, "{out:?}");
    assert_eq!(out[0].r#type(), "sys.com.calc.add.error");
    assert!(out[0].encoded_len() <= limit, "{} bytes", out[0].encoded_len());
    assert!(out[0].encoded_len() > limit - 100, "as much of the message as fits: {}", out[0].encoded_len());
    assert_eq!(out[0].data()["errorName"], "Overflow");
    assert_eq!(out[0].data()["errorStack"], Value::Null, "the stack left out first");
    let message = out[0].data()["errorMessage"].as_str().unwrap();
    assert!(message.starts_with("éé") && message.ends_with(orchestrator::emit::TRUNCATED), "{message}");
}
