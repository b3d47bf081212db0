//! OpenTelemetry (`orchestrator::telemetry`): the spans of service handlers, statechart
//! orchestrators and resumables (Arvo's names, kinds and attributes), checked with the SDK's
//! in-memory exporter; the W3C trace context carried by every emitted event and picked up by the
//! next handler, across a whole workflow on the in-process broker; memory operations as child
//! spans; failures and violations; nothing printed without a provider.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::sync::Mutex;

use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::{SpanId, SpanKind, Status, TraceContextExt, TraceId, Tracer, TracerProvider};
use opentelemetry::{Context, global};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracer, SdkTracerProvider, SpanData};
use orchestrator::broker::Broker;
use orchestrator::handler::EventHandler;
use orchestrator::handler::service::{ServiceHandler, ServiceInput};
use orchestrator::memory::{InMemory, InMemoryConfig, Retention};
use orchestrator::orchestration::resumable::{Request, ResumableInput, ResumableOutput};
use orchestrator::orchestration::{Orchestrator, Resumable, WorkflowRecord};
use orchestrator::prelude::*;
use orchestrator::telemetry::{
    EventExtractor, HeadersInjector, TraceContext, TraceHeaders, TraceInheritance,
};
use orchestrator_examples::calculator::{
    Add, AddV1, AverageInput, AverageOutput, AverageV1, Operands, Sum, services,
};

const CLIENT: &str = "com.test.client";
const TRACEPARENT: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
const ORCHESTRATOR_URI: &str = "#/orc/calc/average";

/// Serializes the tests that depend on the global tracer provider.
static GLOBAL: Mutex<()> = Mutex::new(());

/// A provider exporting to memory, and a tracer of it.
fn recording() -> (InMemorySpanExporter, SdkTracerProvider, SdkTracer) {
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder().with_simple_exporter(exporter.clone()).build();
    let tracer = provider.tracer("orchestrator-tests");
    (exporter, provider, tracer)
}

/// The attribute `key` of `span` (each is set once).
fn attr(span: &SpanData, key: &str) -> Option<String> {
    let count = span.attributes.iter().filter(|kv| kv.key.as_str() == key).count();
    assert!(count <= 1, "{key} set {count} times on {}", span.name);
    span.attributes.iter().find(|kv| kv.key.as_str() == key).map(|kv| kv.value.as_str().into_owned())
}

fn attr_of(span: &SpanData, key: &str) -> String {
    attr(span, key)
        .unwrap_or_else(|| panic!("no attribute {key} on span {}: {:?}", span.name, span.attributes))
}

fn named<'a>(spans: &'a [SpanData], name: &str) -> Vec<&'a SpanData> {
    spans.iter().filter(|s| s.name == name).collect()
}

fn children<'a>(spans: &'a [SpanData], parent: &SpanData) -> Vec<&'a SpanData> {
    spans.iter().filter(|s| s.parent_span_id == parent.span_context.span_id()).collect()
}

/// The span whose id is in the event's traceparent.
fn emitter<'a>(spans: &'a [SpanData], event: &Event) -> &'a SpanData {
    let sc = TraceContext::span_context(event.traceparent(), event.tracestate())
        .unwrap_or_else(|| panic!("event {} has no valid traceparent", event.r#type()));
    spans
        .iter()
        .find(|s| s.span_context.span_id() == sc.span_id() && s.span_context.trace_id() == sc.trace_id())
        .unwrap_or_else(|| panic!("no span emitted {}", event.r#type()))
}

fn traceparent_of(span: &SpanData) -> String {
    format!("00-{}-{}-01", span.span_context.trace_id(), span.span_context.span_id())
}

fn add_request(builder: EventBuilder) -> Event {
    EventFactory::<AddV1>::new().accepts(Operands { a: 1.0, b: 2.0 }, builder.source(CLIENT)).unwrap()
}

fn current_thread() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap()
}

// ---------------------------------------------------------------------------------------------
// A workflow: add the two first values, then complete with the sum divided by the count.

/// The context of [`SumFlow`].
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Halving {
    values: Vec<f64>,
    average: f64,
}

fn request_add(ctx: &mut Halving, _: &SumFlowEvent, out: &mut SumFlowOutbox<'_>) {
    out.add(Operands { a: ctx.values[0], b: ctx.values.get(1).copied().unwrap_or(0.0) });
}

fn record(ctx: &mut Halving, event: &SumFlowEvent, _: &mut SumFlowOutbox<'_>) {
    if let SumFlowEvent::AddSum(s) = event {
        ctx.average = s.sum / ctx.values.len() as f64;
    }
}

orchestrator::machine! {
    /// add(values[0], values[1]) → done with the sum over the count.
    pub machine SumFlow {
        contract: AverageV1,
        services: { add: AddV1 },
        context: Halving,
        init: |input| Halving { values: input.values.clone(), ..Halving::default() },
        output: |ctx| AverageOutput { average: ctx.average },
        states: {
            adding: {
                entry: [request_add],
                on: {
                    add::Sum => { target: done, actions: [record] },
                    add::error => failed,
                },
            },
            done: { type: final },
            failed: { type: final },
        },
    }
}

fn memory() -> InMemory<WorkflowRecord> {
    InMemory::new(InMemoryConfig { retention: Retention::Keep, ..InMemoryConfig::default() })
}

fn init_event(builder: EventBuilder) -> Event {
    EventFactory::<AverageV1>::new()
        .init(AverageInput { values: vec![3.0, 5.0] }, builder.source(CLIENT))
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_workflow_is_one_trace_across_the_broker() {
    let (exporter, _provider, tracer) = recording();
    let workflow =
        Orchestrator::builder(memory()).machine::<SumFlow>().tracer(tracer.clone()).build().unwrap();
    let add = ServiceHandler::<Add>::builder()
        .version(|input: ServiceInput<AddV1>| async move {
            let Operands { a, b } = input.payload;
            // The handler function runs with the execution span as the current context.
            assert!(Context::current().span().span_context().is_valid());
            assert!(input.span_headers.traceparent.is_some());
            Ok(orchestrator::handler::Emit::new(Sum { sum: a + b }))
        })
        .tracer(tracer.clone())
        .build()
        .unwrap();
    let broker = Broker::builder().handler(workflow).handler(add).log(true).build().unwrap();

    // The init event carries no trace context: the workflow starts a new trace.
    let init = init_event(Event::builder());
    assert_eq!(init.traceparent(), None);
    let done = broker.resolve(init.clone()).await.unwrap().expect("the workflow completes");
    assert_eq!(done.data()["average"], 4.0);
    let log = broker.take_log();
    broker.shutdown().await;
    let spans = exporter.get_finished_spans().unwrap();

    let start_name = format!("Orchestrator<{ORCHESTRATOR_URI}>@<arvo.orc.calc.average>");
    let resume_name = format!("Orchestrator<{ORCHESTRATOR_URI}>@<evt.calc.add.success>");
    let [start] = named(&spans, &start_name)[..] else { panic!("one init span: {spans:#?}") };
    let [handler] = named(&spans, "Handler<#/calc/add>")[..] else { panic!("one handler span") };
    let [resume] = named(&spans, &resume_name)[..] else { panic!("one completion span") };

    // One trace: init orchestrator span (root) → add handler span → orchestrator span.
    let trace_id = start.span_context.trace_id();
    assert!(spans.iter().all(|s| s.span_context.trace_id() == trace_id), "one trace");
    assert_eq!(start.parent_span_id, SpanId::INVALID, "an event without traceparent starts a trace");
    assert_eq!(handler.parent_span_id, start.span_context.span_id());
    assert!(handler.parent_span_is_remote, "the parent comes from the event");
    assert_eq!(resume.parent_span_id, handler.span_context.span_id());

    // Kinds and attributes.
    assert_eq!(start.span_kind, SpanKind::Producer);
    assert_eq!(resume.span_kind, SpanKind::Producer);
    assert_eq!(handler.span_kind, SpanKind::Consumer);
    for span in [start, resume] {
        assert_eq!(attr_of(span, "arvo.span.kind"), "handler.orchestrator.statemachine");
        assert_eq!(attr_of(span, "openinference.span.kind"), "CHAIN");
        assert_eq!(attr_of(span, "arvo.handler.source"), "arvo.orc.calc.average");
        assert_eq!(attr_of(span, "arvo.contract.uri"), ORCHESTRATOR_URI);
        assert_eq!(attr_of(span, "arvo.handler.execution.type"), "orchestrator");
        assert_eq!(attr_of(span, "arvo.handler.execution.status"), "normal");
        assert_eq!(attr_of(span, "arvo.parsed.subject.orchestrator.name"), "arvo.orc.calc.average");
        assert_eq!(attr_of(span, "arvo.parsed.subject.orchestrator.version"), "1.0.0");
        assert_eq!(span.status, Status::Unset);
    }
    assert_eq!(attr_of(start, "arvo.orchestration.status"), "active");
    assert_eq!(attr_of(resume, "arvo.orchestration.status"), "done");
    assert_eq!(attr_of(start, "consumable.0.cloudevents.event_id"), init.id());
    assert_eq!(attr_of(start, "consumable.0.cloudevents.event_type"), "arvo.orc.calc.average");
    assert_eq!(attr_of(start, "consumable.0.cloudevents.arvo.event_parentid"), "N/A");
    assert_eq!(attr_of(start, "emittables.0.cloudevents.event_type"), "com.calc.add");
    assert_eq!(attr_of(start, "emittables.0.cloudevents.arvo.event_to"), "com.calc.add");
    assert_eq!(attr(start, "emittables.1.cloudevents.event_type"), None);
    assert_eq!(attr_of(resume, "emittables.0.cloudevents.event_type"), "arvo.orc.calc.average.done");
    assert_eq!(attr_of(handler, "arvo.span.kind"), "handler.simple");
    assert_eq!(attr_of(handler, "arvo.handler.execution.type"), "handler");
    assert_eq!(attr_of(handler, "arvo.handler.source"), "com.calc.add");
    assert_eq!(attr_of(handler, "arvo.contract.uri"), "#/calc/add");
    assert_eq!(attr_of(handler, "consumable.0.cloudevents.event_type"), "com.calc.add");
    assert_eq!(attr_of(handler, "emittables.0.cloudevents.event_type"), "evt.calc.add.success");

    // Every emitted event carries its emitting span's headers.
    let request = log.iter().find(|e| e.r#type() == "com.calc.add").unwrap();
    let response = log.iter().find(|e| e.r#type() == "evt.calc.add.success").unwrap();
    assert_eq!(request.traceparent(), Some(traceparent_of(start).as_str()));
    assert_eq!(response.traceparent(), Some(traceparent_of(handler).as_str()));
    assert_eq!(done.traceparent(), Some(traceparent_of(resume).as_str()));
    assert_eq!(emitter(&spans, &done).name, resume_name);

    // Memory operations and machine steps are children of the orchestrator spans.
    let subject = init.subject();
    for span in [start, resume] {
        let kids = children(&spans, span);
        let names: Vec<&str> = kids.iter().map(|s| &*s.name).collect();
        for expected in
            ["Acquire Simple Memory", "Resolve Machine", "Execute Machine", "Commit Simple Memory"]
        {
            assert!(names.contains(&expected), "{expected} under {}: {names:?}", span.name);
        }
        for kid in kids.iter().filter(|s| s.name.ends_with("Simple Memory")) {
            assert_eq!(attr_of(kid, "arvo.memory.id"), subject);
            assert_eq!(kid.span_kind, SpanKind::Internal);
            assert_eq!(kid.span_context.trace_id(), trace_id);
        }
        let write = kids.iter().find(|s| s.name == "Commit Simple Memory").unwrap();
        assert!(attr_of(write, "arvo.memory.record.bytes").parse::<usize>().unwrap() > 0);
        let execute = kids.iter().find(|s| s.name == "Execute Machine").unwrap();
        assert_eq!(attr_of(execute, "arvo.machine.type"), "SumFlow");
        assert_eq!(attr_of(execute, "arvo.machine.version"), "1.0.0");
    }
    // A step costs two store calls: acquire and commit (which also releases the lease).
    for span in [start, resume] {
        let memory_ops =
            children(&spans, span).into_iter().filter(|s| s.name.ends_with("Simple Memory")).count();
        assert_eq!(memory_ops, 2, "one acquire and one commit under {}", span.name);
    }
    let reads = children(&spans, resume).into_iter().filter(|s| s.name == "Acquire Simple Memory");
    assert!(reads.into_iter().all(|s| attr(s, "arvo.memory.record.bytes").is_some()));
}

#[test]
fn an_incoming_traceparent_is_the_parent_unless_told_otherwise() {
    let (exporter, _provider, tracer) = recording();
    let rt = current_thread();
    let request = add_request(Event::builder().traceparent(TRACEPARENT).tracestate("vendor=1"));

    let add = ServiceHandler::<Add>::builder()
        .version(|input: ServiceInput<AddV1>| async move {
            Ok(orchestrator::handler::Emit::new(Sum { sum: input.payload.a + input.payload.b }))
        })
        .tracer(tracer.clone())
        .build()
        .unwrap();
    let out = rt.block_on(add.execute(&request)).unwrap();
    let spans = exporter.get_finished_spans().unwrap();
    let [span] = &spans[..] else { panic!("one span") };
    assert_eq!(span.span_context.trace_id(), TraceId::from_hex("0af7651916cd43dd8448eb211c80319c").unwrap());
    assert_eq!(span.parent_span_id, SpanId::from_hex("b7ad6b7169203331").unwrap());
    assert_eq!(out[0].traceparent(), Some(traceparent_of(span).as_str()));
    assert_eq!(out[0].tracestate(), Some("vendor=1"), "the trace state is carried on");

    // A new root instead.
    exporter.reset();
    let add = ServiceHandler::<Add>::builder()
        .version(|input: ServiceInput<AddV1>| async move {
            Ok(orchestrator::handler::Emit::new(Sum { sum: input.payload.a + input.payload.b }))
        })
        .tracer(tracer)
        .trace_inheritance(TraceInheritance::Root)
        .build()
        .unwrap();
    let out = rt.block_on(add.execute(&request)).unwrap();
    let spans = exporter.get_finished_spans().unwrap();
    let [span] = &spans[..] else { panic!("one span") };
    assert_eq!(span.parent_span_id, SpanId::INVALID);
    assert_ne!(span.span_context.trace_id(), TraceId::from_hex("0af7651916cd43dd8448eb211c80319c").unwrap());
    assert_eq!(out[0].traceparent(), Some(traceparent_of(span).as_str()));
}

#[test]
fn a_failing_handler_records_the_exception_and_its_system_error_continues_the_trace() {
    let (exporter, _provider, tracer) = recording();
    let add = ServiceHandler::<Add>::builder()
        .version(|_: ServiceInput<AddV1>| async move {
            Err::<orchestrator::handler::Emit<AddV1>, _>("the adder is broken".into())
        })
        .tracer(tracer)
        .build()
        .unwrap();
    let request = add_request(Event::builder().traceparent(TRACEPARENT));
    let out = current_thread().block_on(add.execute(&request)).unwrap();
    assert_eq!(out[0].r#type(), "sys.com.calc.add.error");
    let spans = exporter.get_finished_spans().unwrap();
    let [span] = &spans[..] else { panic!("one span") };
    assert_eq!(attr_of(span, "arvo.handler.execution.status"), "failure");
    assert_eq!(attr_of(span, "exception.type"), "Error");
    assert_eq!(attr_of(span, "exception.message"), "the adder is broken");
    assert_eq!(span.status, Status::error("the adder is broken"));
    let exception = span.events.iter().find(|e| e.name == "exception").expect("an exception event");
    assert!(exception.attributes.iter().any(|kv| kv.key.as_str() == "exception.message"));
    assert_eq!(out[0].traceparent(), Some(traceparent_of(span).as_str()));
    assert_eq!(attr_of(span, "emittables.0.cloudevents.event_type"), "sys.com.calc.add.error");
}

#[test]
fn a_violation_sets_the_error_status() {
    let (exporter, _provider, tracer) = recording();
    let add = ServiceHandler::<Add>::builder()
        .version(|input: ServiceInput<AddV1>| async move {
            Ok(orchestrator::handler::Emit::new(Sum { sum: input.payload.a }))
        })
        .tracer(tracer)
        .build()
        .unwrap();
    let wrong = Event::builder()
        .source(CLIENT)
        .r#type("com.calc.other")
        .subject("s")
        .data_json(serde_json::json!({}))
        .build()
        .unwrap();
    let err = current_thread().block_on(add.execute(&wrong)).unwrap_err();
    assert_eq!(err.kind(), "Config");
    let spans = exporter.get_finished_spans().unwrap();
    let [span] = &spans[..] else { panic!("one span") };
    assert!(matches!(span.status, Status::Error { .. }));
    assert_eq!(attr_of(span, "exception.type"), "ViolationError<Config>");
    assert_eq!(attr_of(span, "arvo.handler.execution.status"), "failure");
}

/// add(values[0], values[1]), then fails on the response.
fn failing_resumable(tracer: SdkTracer) -> Resumable<InMemory<WorkflowRecord>> {
    Resumable::builder(memory())
        .service::<AddV1>()
        .version(|input: ResumableInput<AverageV1, ()>| async move {
            if let Some(init) = input.init {
                return Ok(ResumableOutput::wait()
                    .context(())
                    .request(Request::new::<AddV1>(Operands { a: init.values[0], b: init.values[1] })));
            }
            Err("the resumable gives up".into())
        })
        .tracer(tracer)
        .build()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resumable_span_and_its_failure() {
    let (exporter, _provider, tracer) = recording();
    let broker = Broker::builder()
        .handler(failing_resumable(tracer.clone()))
        .handler(services::add().unwrap())
        .log(true)
        .build()
        .unwrap();
    let root = tracer.start("client");
    let cx = Context::new().with_span(root);
    let mut headers = TraceHeaders::default();
    TraceContextPropagator::new().inject_context(&cx, &mut HeadersInjector(&mut headers));
    let init = init_event(
        Event::builder().traceparent(headers.traceparent().unwrap()).tracestate_opt(headers.tracestate()),
    );
    let error = broker.resolve(init).await.unwrap().expect("a system error");
    assert_eq!(error.r#type(), "sys.arvo.orc.calc.average.error");
    broker.shutdown().await;
    let client = cx.span().span_context().clone();
    drop(cx);
    let spans = exporter.get_finished_spans().unwrap();

    let start_name = format!("Resumable<{ORCHESTRATOR_URI}>@<arvo.orc.calc.average>");
    let resume_name = format!("Resumable<{ORCHESTRATOR_URI}>@<evt.calc.add.success>");
    let [start] = named(&spans, &start_name)[..] else { panic!("one init span: {spans:#?}") };
    let [resume] = named(&spans, &resume_name)[..] else { panic!("one resume span") };
    assert_eq!(start.parent_span_id, client.span_id(), "the client's span is the parent");
    assert_eq!(start.span_context.trace_id(), client.trace_id());
    assert_eq!(
        resume.span_context.trace_id(),
        client.trace_id(),
        "the add handler (global noop) kept the trace"
    );
    assert_eq!(start.span_kind, SpanKind::Producer);
    assert_eq!(attr_of(start, "arvo.span.kind"), "handler.orchestrator.imperative");
    assert_eq!(attr_of(start, "arvo.handler.execution.type"), "resumable");
    assert_eq!(attr_of(start, "arvo.parsed.subject.resumable.name"), "arvo.orc.calc.average");
    assert_eq!(attr_of(start, "arvo.parsed.subject.resumable.version"), "1.0.0");
    assert_eq!(attr_of(start, "arvo.orchestration.status"), "active");
    assert_eq!(attr_of(resume, "arvo.orchestration.status"), "failure");
    assert_eq!(attr_of(resume, "arvo.handler.execution.status"), "failure");
    assert_eq!(attr_of(resume, "exception.message"), "the resumable gives up");
    assert!(matches!(resume.status, Status::Error { .. }));
    assert_eq!(error.traceparent(), Some(traceparent_of(resume).as_str()));
    let kids = children(&spans, resume);
    assert!(kids.iter().any(|s| s.name == "Commit Simple Memory"), "the failure latch is written");
}

#[test]
fn the_propagator_agrees_with_the_sdk() {
    let sdk = TraceContextPropagator::new();
    let event = add_request(Event::builder().traceparent(TRACEPARENT).tracestate("a=1,b=2"));
    let ours = TraceContext.extract(&EventExtractor(&event));
    let theirs = sdk.extract(&EventExtractor(&event));
    assert_eq!(ours.span().span_context(), theirs.span().span_context());

    let mut ours_out = TraceHeaders::default();
    TraceContext.inject_context(&ours, &mut HeadersInjector(&mut ours_out));
    let mut theirs_out = HashMap::new();
    sdk.inject_context(&theirs, &mut theirs_out);
    assert_eq!(ours_out.traceparent(), theirs_out.get("traceparent").map(String::as_str));
    assert_eq!(ours_out.tracestate(), theirs_out.get("tracestate").map(String::as_str));
    assert_eq!(ours_out.traceparent(), Some(TRACEPARENT));
}

#[test]
fn without_a_provider_the_context_flows_through_unchanged() {
    let _global = GLOBAL.lock().unwrap();
    let add = services::add().unwrap();
    let rt = current_thread();
    let out = rt.block_on(add.execute(&add_request(Event::builder().traceparent(TRACEPARENT)))).unwrap();
    assert_eq!(out[0].traceparent(), Some(TRACEPARENT));
    let out = rt.block_on(add.execute(&add_request(Event::builder()))).unwrap();
    assert_eq!(out[0].traceparent(), None);
    assert_eq!(out[0].tracestate(), None);
}

#[test]
fn the_global_provider_is_used_by_default() {
    let _global = GLOBAL.lock().unwrap();
    let (exporter, provider, _) = recording();
    global::set_tracer_provider(provider.clone());
    let add = services::add().unwrap();
    let request = add_request(Event::builder().traceparent(TRACEPARENT));
    let out = current_thread().block_on(add.execute(&request));
    global::set_tracer_provider(opentelemetry::trace::noop::NoopTracerProvider::new());
    let out = out.unwrap();
    let spans = exporter.get_finished_spans().unwrap();
    drop(provider);
    let span = emitter(&spans, &out[0]);
    assert_eq!(span.name, "Handler<#/calc/add>");
    assert_eq!(span.instrumentation_scope.name(), "orchestrator");
}

/// Run by `nothing_is_printed_without_a_provider` in a child process.
#[test]
#[ignore = "run in a child process"]
fn child_runs_a_workflow_without_a_provider() {
    current_thread().block_on(async {
        let workflow = Orchestrator::builder(memory()).machine::<SumFlow>().build().unwrap();
        let broker = Broker::builder().handler(workflow).handler(services::add().unwrap()).build().unwrap();
        let done = broker.resolve(init_event(Event::builder().traceparent(TRACEPARENT))).await.unwrap();
        assert_eq!(done.unwrap().traceparent(), Some(TRACEPARENT));
        broker.shutdown().await;
    });
}

#[test]
fn nothing_is_printed_without_a_provider() {
    let output = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "child_runs_a_workflow_without_a_provider", "--ignored", "--nocapture"])
        .args(["--test-threads", "1", "--quiet"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    assert!(stdout.contains("1 passed"), "{stdout}");
    let printed: Vec<&str> = stdout
        .lines()
        .filter(|l| !l.trim().is_empty())
        .filter(|l| !l.starts_with("running ") && !l.starts_with("test result:") && l.trim() != ".")
        .collect();
    assert!(printed.is_empty(), "printed: {printed:?}");
    assert!(output.stderr.is_empty(), "stderr: {}", String::from_utf8_lossy(&output.stderr));
}
