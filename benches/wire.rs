//! Wire-level benchmarks: events (parse, serialize, build), orchestration subjects (encode,
//! decode, cached access), contracts (schema validation, typed decoding, typed factories) and
//! the journal's values (a step's events and a record, deflated as the stores keep them).
//!
//! Run with `cargo bench -p orchestrator-benches --bench wire`; see `BENCHMARKS.md` at the root of
//! the workspace for the figures and how they compare with Arvo's.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use orchestrator::prelude::*;
use orchestrator_examples::calculator::{AddV1, AverageInput, AverageV1, Operands};
use serde_json::json;

/// The workflow whose step the benchmarked events belong to.
const ORCHESTRATOR: &str = "arvo.orc.calc.average";
/// A fixed execution id, so that every encoded subject is the same.
const EXECUTION_ID: &str = "8f4c2b9e-3d1a-4f6b-9c7e-2a5d8e1f0b34";
const TRACEPARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

/// The subject of an averaging workflow started by a client.
fn workflow_subject() -> Subject {
    Subject::builder(ORCHESTRATOR, "1.0.0", "com.calc.client")
        .execution_id(EXECUTION_ID)
        .meta("redirectto", "com.calc.client")
        .build()
        .expect("valid subject")
}

/// A realistic `com.calc.add` request sent by the averaging workflow to the add service: typed
/// payload, orchestration subject, dataschema, tracing and routing fields.
fn add_request(subject: &Subject) -> Event {
    EventFactory::<AddV1>::new()
        .accepts(
            Operands { a: 1.5, b: 2.25 },
            Event::builder()
                .source(ORCHESTRATOR)
                .orchestration_subject(subject)
                .redirectto(ORCHESTRATOR)
                .parentid("1c6f0a5e-8a47-4b0e-9d55-7f3b2c1e9a60")
                .traceparent(TRACEPARENT)
                .accesscontrol("tenant=acme")
                .executionunits(1),
        )
        .expect("valid add request")
}

fn event(c: &mut Criterion) {
    let subject = workflow_subject();
    let request = add_request(&subject);
    let bytes = request.to_json_vec();
    let mut group = c.benchmark_group("event");
    group.bench_function("parse", |b| {
        b.iter(|| Event::from_slice(black_box(&bytes)).expect("valid event"));
    });
    group.bench_function("serialize", |b| b.iter(|| black_box(&request).to_json_vec()));
    let subject_text = subject.as_str().to_owned();
    group.bench_function("build", |b| {
        b.iter(|| {
            Event::builder()
                .source(ORCHESTRATOR)
                .r#type("com.calc.add")
                .subject(black_box(subject_text.as_str()))
                .dataschema("#/calc/add/1.0.0")
                .data_json(json!({ "a": 1.5, "b": 2.25 }))
                .redirectto(ORCHESTRATOR)
                .traceparent(TRACEPARENT)
                .executionunits(1)
                .build()
                .expect("valid event")
        });
    });
    group.finish();
}

fn subject(c: &mut Criterion) {
    let encoded = workflow_subject();
    let mut group = c.benchmark_group("subject");
    group.bench_function("encode", |b| {
        b.iter(|| {
            Subject::builder(black_box(ORCHESTRATOR), "1.0.0", "com.calc.client")
                .execution_id(EXECUTION_ID)
                .meta("redirectto", "com.calc.client")
                .build()
                .expect("valid subject")
        });
    });
    group.bench_function("decode", |b| {
        b.iter(|| Subject::parse(black_box(encoded.as_str())).expect("valid subject"));
    });
    // An event parsed from bytes, whose subject is decoded by the first call and then cached.
    let parsed = Event::from_slice(&add_request(&encoded).to_json_vec()).expect("valid event");
    parsed.orchestration_subject().expect("valid subject");
    group.bench_function("cached", |b| {
        b.iter(|| black_box(&parsed).orchestration_subject().expect("valid subject").execution_id().len());
    });
    group.finish();
}

fn contract(c: &mut Criterion) {
    let subject = workflow_subject();
    let request = Event::from_slice(&add_request(&subject).to_json_vec()).expect("valid event");
    let mut group = c.benchmark_group("contract");
    group.bench_function("validate_accepts", |b| {
        b.iter(|| AddV1::versioned().validate_accepts(black_box(&request)).expect("valid request"));
    });
    group.bench_function("parse_accepts", |b| {
        b.iter(|| AddV1::parse_accepts(black_box(&request)).expect("valid request"));
    });
    group.bench_function("factory_accepts", |b| {
        b.iter(|| {
            EventFactory::<AddV1>::new()
                .accepts(
                    black_box(Operands { a: 1.5, b: 2.25 }),
                    Event::builder().source(ORCHESTRATOR).orchestration_subject(&subject),
                )
                .expect("valid request")
        });
    });
    group.bench_function("factory_init_default_subject", |b| {
        b.iter(|| {
            EventFactory::<AverageV1>::new()
                .init(
                    black_box(AverageInput { values: vec![1.0, 2.0, 3.0] }),
                    Event::builder().source("com.calc.client"),
                )
                .expect("valid init")
        });
    });
    group.finish();
}

/// A journal row's values for one orchestrator step: the consumed event and the produced one
/// (deflated with the workflow's preset dictionary), and a record snapshot.
fn journal(c: &mut Criterion) {
    use orchestrator::memory::journal_codec;
    let subject = workflow_subject();
    let request = Event::from_slice(&add_request(&subject).to_json_vec()).expect("valid event");
    let reply = Event::builder()
        .source("com.calc.add")
        .r#type("evt.calc.add.success")
        .to(ORCHESTRATOR)
        .orchestration_subject(&subject)
        .parentid(request.id())
        .dataschema("#/calc/add/1.0.0")
        .data_json(json!({ "result": 3.75 }))
        .traceparent(TRACEPARENT)
        .executionunits(1)
        .build()
        .expect("valid event");
    let id = subject.as_str();
    let encoded = journal_codec::encode_events(Some(&request), std::slice::from_ref(&reply), id)
        .expect("encodable events");
    let record = json!({
        "execution_status": "normal", "subject": id, "init_event_id": request.id(), "done": false,
        "state": { "value": { "adding": null }, "context": { "values": [1.0, 2.0, 3.0], "sum": 0 } },
        "last_event_id": request.id(), "last_event_source": ORCHESTRATOR,
    })
    .to_string();
    let mut group = c.benchmark_group("journal");
    group.bench_function("encode_events", |b| {
        b.iter(|| journal_codec::encode_events(Some(black_box(&request)), std::slice::from_ref(&reply), id))
    });
    group.bench_function("decode_events", |b| {
        b.iter(|| journal_codec::decode_events(black_box(&encoded), id).expect("decodable events"))
    });
    group.bench_function("encode_snapshot", |b| {
        b.iter(|| journal_codec::encode_snapshot(black_box(&record), id))
    });
    group.finish();
}

criterion_group!(benches, event, subject, contract, journal);
criterion_main!(benches);
