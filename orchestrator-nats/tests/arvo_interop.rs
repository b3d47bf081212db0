//! Live interop with Arvo TypeScript over NATS JetStream: programs using the real `arvo-core`
//! and `arvo-event-handler` 2.2.13 (`interop/arvo/nats-service.mjs`, `nats-client.mjs`) and a
//! Rust orchestrator share one deployment of the transport.
//!
//! * A Rust workflow calls an Arvo service (`createArvoEventHandler` for a `createArvoContract`
//!   contract, hosted on the topic's durable consumer by Node.js) and completes with its answer;
//!   a runtime error of the Arvo handler reaches the workflow as Arvo's `sys.….error` event.
//! * An Arvo client starts a Rust workflow with `createArvoOrchestratorEventFactory(..).init(..)`
//!   and receives its completion event, validated by arvo-core.
//! * Hostile messages from the Arvo side (data against the schema, a subject that is no
//!   orchestration subject, an event addressed to another topic, malformed JSON, JSON that is
//!   no event, an oversize body) become dead letters with their reason, and a workflow started
//!   after them completes; bad events from the Rust side to the Arvo service become dead letters
//!   too (arvo-event-handler throws a `ContractViolation`, which Arvo leaves to its host), and
//!   the service goes on answering.
//!
//! Needs `NATS_URL` (a server with JetStream), `node` and `interop/arvo/node_modules`
//! (`cd interop/arvo && npm ci`). Without them each test is skipped with the reason, except when
//! `CI` is set: then it fails.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use async_nats::HeaderMap;
use orchestrator::orchestration::{Orchestrator, WorkflowRecord};
use orchestrator::prelude::*;
use orchestrator::runtime::Node;
use orchestrator::transport::Transport;
use orchestrator_nats::subject::{consumer_name, dead_subject, event_subject, message_id};
use orchestrator_nats::{NatsConfig, NatsDeadLetter, NatsTransport};
use orchestrator_sqlite::{SqliteConfig, SqliteMemory};
use serde_json::{Value, json};

use common::{config, delete, nats_url};

const INTEROP_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../interop/arvo");

/// The Arvo service's topic (its contract's type).
const MULTIPLY: &str = "com.interop.multiply";
/// The Rust workflow's topic (its init type).
const WORKFLOW: &str = "arvo.orc.interop.product";
/// Where the Arvo client waits for completions (nats-client.mjs).
const ARVO_CLIENT: &str = "com.interop.client";
/// Where this test's own workflows complete.
const RUST_CLIENT: &str = "com.interop.rust";
/// The largest event the Rust side takes in the hostile test.
const MAX_EVENT_BYTES: usize = 64 * 1024;

// ---------------------------------------------------------------------------------------------
// The contracts: twins of interop/arvo/nats-contracts.mjs.
// ---------------------------------------------------------------------------------------------

/// The multiply service's request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Factors {
    /// Left factor.
    pub a: f64,
    /// Right factor.
    pub b: f64,
}

/// The multiply service's answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Product {
    /// `a * b`.
    pub product: f64,
}

orchestrator::simple_contract! {
    /// The Arvo service: accepts `com.interop.multiply`, emits `evt.interop.multiply.success`.
    pub contract Multiply {
        uri: "#/interop/multiply",
        type: "interop.multiply",
        versions: {
            MultiplyV1 = "1.0.0" { accepts: Factors, emits: Product },
        },
    }
}

/// The workflow's result: the product, or the Arvo service's error message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Outcome {
    /// The product, when the service answered one.
    pub product: Option<f64>,
    /// The service's system error message, when it failed.
    pub error: Option<String>,
}

orchestrator::orchestrator_contract! {
    /// The Rust workflow: `arvo.orc.interop.product` {a, b} → multiply → done.
    pub contract ProductWorkflow {
        uri: "#/orc/interop/product",
        name: "interop.product",
        versions: {
            ProductV1 = "1.0.0" { init: Factors, complete: Outcome },
        },
    }
}

/// The workflow's context.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProductCtx {
    factors: Factors,
    outcome: Outcome,
}

fn request(ctx: &mut ProductCtx, _: &ProductFlowEvent, out: &mut ProductFlowOutbox<'_>) {
    out.multiply(ctx.factors.clone());
}

fn answered(ctx: &mut ProductCtx, event: &ProductFlowEvent, _: &mut ProductFlowOutbox<'_>) {
    match event {
        ProductFlowEvent::MultiplyProduct(p) => ctx.outcome.product = Some(p.product),
        ProductFlowEvent::MultiplyError(e) => ctx.outcome.error = Some(e.error_message.clone()),
        _ => {}
    }
}

orchestrator::machine! {
    /// Calls the Arvo multiply service and completes with its answer (or its error).
    pub machine ProductFlow {
        contract: ProductV1,
        services: { multiply: MultiplyV1 },
        context: ProductCtx,
        init: |input| ProductCtx { factors: input.clone(), outcome: Outcome { product: None, error: None } },
        output: |ctx| ctx.outcome.clone(),
        states: {
            calling: {
                entry: [request],
                on: {
                    multiply::Product => { target: done, actions: [answered] },
                    multiply::error => { target: failed, actions: [answered] },
                },
            },
            done: { type: final },
            failed: { type: final },
        },
    }
}

// ---------------------------------------------------------------------------------------------
// Node.js
// ---------------------------------------------------------------------------------------------

/// `Some(reason)` when the Node.js side cannot run here.
fn missing_node() -> Option<String> {
    match Command::new("node").arg("--version").output() {
        Ok(out) if out.status.success() => {}
        Ok(out) => return Some(format!("`node --version` failed: {}", String::from_utf8_lossy(&out.stderr))),
        Err(e) => return Some(format!("`node` is not on PATH ({e})")),
    }
    for package in ["arvo-core", "arvo-event-handler", "nats"] {
        let manifest = Path::new(INTEROP_DIR).join("node_modules").join(package).join("package.json");
        if !manifest.is_file() {
            return Some(format!("{} is missing: run `cd interop/arvo && npm ci`", manifest.display()));
        }
    }
    None
}

/// The server's URL, when NATS and Node.js are both here; `None` (after saying why) when one is
/// missing outside CI. Under CI a missing prerequisite fails the test.
fn prerequisites() -> Option<String> {
    let url = nats_url()?;
    match missing_node() {
        None => Some(url),
        Some(reason) => {
            assert!(
                std::env::var_os("CI").is_none(),
                "CI is set, so the Arvo NATS interop must run, but {reason}"
            );
            println!("skipping: {reason} (set CI=1 to make this a failure)");
            None
        }
    }
}

/// The Arvo service (nats-service.mjs) as a child process, killed on drop. Its stdout lines
/// (JSON, one per message handled) arrive on `lines`.
struct ArvoService {
    child: Child,
    lines: mpsc::Receiver<Value>,
    seen: Vec<Value>,
}

impl ArvoService {
    /// Starts the service on `transport`'s deployment and waits until it is bound (20 s at most).
    fn start(url: &str, transport: &NatsTransport) -> Self {
        let config = transport.config();
        let mut child = Command::new("node")
            .arg("nats-service.mjs")
            .arg(&config.stream)
            .arg(&config.subject_prefix)
            .current_dir(INTEROP_DIR)
            .env("NATS_URL", url)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("node runs nats-service.mjs");
        let stdout = child.stdout.take().expect("its stdout");
        let (send, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                match serde_json::from_str::<Value>(&line) {
                    Ok(value) => {
                        if send.send(value).is_err() {
                            break;
                        }
                    }
                    Err(_) => eprintln!("[service stdout, not JSON] {line}"),
                }
            }
        });
        let mut service = Self { child, lines, seen: Vec::new() };
        let ready = service.wait_for(Duration::from_secs(20), |line| line["ready"] == true);
        assert_eq!(ready["topic"], MULTIPLY, "{ready}");
        assert_eq!(ready["subject"], event_subject(&config.subject_prefix, MULTIPLY), "{ready}");
        assert_eq!(ready["consumer"], consumer_name(Some(MULTIPLY)), "{ready}");
        service
    }

    /// The first line (seen or to come, within `within`) that `matches`.
    fn wait_for(&mut self, within: Duration, matches: impl Fn(&Value) -> bool) -> Value {
        if let Some(line) = self.seen.iter().find(|l| matches(l)) {
            return line.clone();
        }
        let deadline = Instant::now() + within;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            // Blocking: out of the runtime's way (the tests run on a multi-thread runtime).
            match tokio::task::block_in_place(|| self.lines.recv_timeout(left)) {
                Ok(line) => {
                    self.seen.push(line.clone());
                    if matches(&line) {
                        return line;
                    }
                }
                Err(e) => panic!(
                    "the Arvo service reported nothing matching within {within:?} ({e}); exited: {:?}; seen: {:?}",
                    self.child.try_wait(),
                    self.seen
                ),
            }
        }
    }

    /// Whether the process is still running.
    fn running(&mut self) -> bool {
        self.child.try_wait().expect("the service's status").is_none()
    }

    /// SIGTERM, and its exit code (it must exit within 10 s).
    fn stop(mut self) -> Option<i32> {
        let pid = self.child.id().to_string();
        let sent = Command::new("kill").args(["-TERM", &pid]).status().expect("kill runs");
        assert!(sent.success(), "SIGTERM sent to the service");
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Some(status) = self.child.try_wait().expect("the service's status") {
                return status.code();
            }
            tokio::task::block_in_place(|| std::thread::sleep(Duration::from_millis(50)));
        }
        panic!("the Arvo service did not exit within 10 s of SIGTERM");
    }
}

impl Drop for ArvoService {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs `node nats-client.mjs <args>` on `transport`'s deployment (killed after `within`) and
/// returns its JSON report and exit code.
async fn arvo_client(
    url: &str,
    transport: &NatsTransport,
    args: &[&str],
    within: Duration,
) -> (Value, Option<i32>) {
    let config = transport.config();
    let what = args.join(" ");
    let mut command = Command::new("node");
    command
        .arg("nats-client.mjs")
        .arg(args[0])
        .arg(&config.stream)
        .arg(&config.subject_prefix)
        .args(&args[1..])
        .current_dir(INTEROP_DIR)
        .env("NATS_URL", url)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    tokio::task::spawn_blocking(move || {
        let mut child = command.spawn().expect("node runs nats-client.mjs");
        let mut stdout = child.stdout.take().expect("its stdout");
        let reader = std::thread::spawn(move || {
            let mut text = String::new();
            let _ = stdout.read_to_string(&mut text);
            text
        });
        let deadline = Instant::now() + within;
        let status = loop {
            if let Some(status) = child.try_wait().expect("the client's status") {
                break status;
            }
            if Instant::now() >= deadline {
                let _ = child.kill();
                let _ = child.wait();
                panic!("nats-client.mjs {what} did not finish within {within:?}");
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let text = reader.join().expect("the stdout reader");
        let report: Value = serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("nats-client.mjs {what} printed no JSON report ({e}): {text}"));
        (report, status.code())
    })
    .await
    .expect("the client task")
}

// ---------------------------------------------------------------------------------------------
// The Rust side
// ---------------------------------------------------------------------------------------------

type Store = SqliteMemory<WorkflowRecord>;

/// A node running the workflow (its store in `dir`), the multiply service remote, with a client
/// topic of its own.
async fn rust_node(dir: &Path, transport: NatsTransport) -> Node<Store, NatsTransport> {
    let store = Arc::new(
        SqliteConfig::new(dir.join("workflows.db"))
            .owner("arvo-interop")
            .open::<WorkflowRecord>()
            .expect("open SQLite"),
    );
    Node::builder(Arc::clone(&store))
        .transport(transport)
        .orchestrator(Orchestrator::builder(store).machine::<ProductFlow>())
        .remote(MULTIPLY)
        .client(RUST_CLIENT)
        .without_timers()
        .build()
        .await
        .expect("the node starts")
}

/// Runs the workflow for `a × b` from Rust and returns its completion event (30 s at most).
async fn run(node: &Node<Store, NatsTransport>, a: f64, b: f64) -> Event {
    let init = EventFactory::<ProductV1>::new()
        .init(Factors { a, b }, Event::builder().source(RUST_CLIENT))
        .expect("an init event");
    tokio::time::timeout(Duration::from_secs(30), node.run(init))
        .await
        .unwrap_or_else(|_| panic!("the workflow {a}x{b} did not complete within 30 s"))
        .expect("the workflow runs")
}

/// Waits (20 s at most) until the dead letters include one for each of `seqs` (sequences in the
/// event stream) and returns those.
async fn dead_letters_for(transport: &NatsTransport, seqs: &[u64]) -> Vec<NatsDeadLetter> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let letters = transport.dead_letters(0, 1_000).await.expect("dead letters");
        let found: Vec<NatsDeadLetter> =
            letters.into_iter().filter(|l| seqs.contains(&l.original_seq)).collect();
        if found.len() >= seqs.len() || Instant::now() >= deadline {
            let got: Vec<u64> = found.iter().map(|l| l.original_seq).collect();
            assert!(
                found.len() >= seqs.len(),
                "dead letters for {seqs:?} after 20 s: only {got:?}: {found:#?}"
            );
            return found;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Shuts the node down (20 s at most) and deletes the deployment.
async fn finish(node: Node<Store, NatsTransport>, transport: &NatsTransport) {
    tokio::time::timeout(Duration::from_secs(20), node.shutdown()).await.expect("the node shuts down");
    delete(transport).await;
}

// ---------------------------------------------------------------------------------------------
// The tests
// ---------------------------------------------------------------------------------------------

#[test]
fn the_node_side_computes_the_layout_as_rust_does() {
    if let Some(reason) = missing_node() {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI is set, so the Arvo NATS interop must run, but {reason}"
        );
        println!("skipping: {reason} (set CI=1 to make this a failure)");
        return;
    }
    let prefix = "acme.orc";
    let topics = [
        MULTIPLY,
        WORKFLOW,
        "a b",
        "com..hostile.",
        "",
        ".",
        "~20",
        "é.ü*>",
        "$JS.API.x",
        "urn:a/b?c=d&e#f",
        "tab\there",
        "a-very-long-topic-name-with-more-than-thirty-two-bytes.x",
    ];
    let cases: Vec<Value> = topics
        .iter()
        .enumerate()
        .map(|(i, topic)| json!([topic, format!("com.source.{i}\u{1f}"), format!("id {i} é\r\n")]))
        .collect();
    let output = Command::new("node")
        .arg("nats-layout.mjs")
        .arg(prefix)
        .arg(Value::Array(cases.clone()).to_string())
        .current_dir(INTEROP_DIR)
        .output()
        .expect("node runs nats-layout.mjs");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let layout: Vec<Value> = serde_json::from_slice(&output.stdout).expect("a JSON array");
    assert_eq!(layout.len(), topics.len());
    for ((topic, case), got) in topics.iter().zip(&cases).zip(&layout) {
        let (source, id) = (case[1].as_str().expect("a source"), case[2].as_str().expect("an id"));
        assert_eq!(got["subject"], event_subject(prefix, topic), "{topic:?}");
        assert_eq!(got["dead"], dead_subject(prefix, topic), "{topic:?}");
        assert_eq!(got["consumer"], consumer_name(Some(topic)), "{topic:?}");
        assert_eq!(got["msgId"], message_id(source, id), "{topic:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rust_workflow_calls_an_arvo_service_over_nats() {
    let Some(url) = prerequisites() else { return };
    let transport = NatsTransport::connect(config(&url)).await.expect("connect");
    let mut service = ArvoService::start(&url, &transport);
    let dir = tempfile::tempdir().expect("a temporary directory");
    let node = rust_node(dir.path(), transport.clone()).await;

    let done = run(&node, 6.0, 7.0).await;
    assert_eq!(done.r#type(), "arvo.orc.interop.product.done");
    assert_eq!(done.data_value(), &json!({ "product": 42.0, "error": null }), "the Arvo service's answer");
    // The Arvo handler saw the Rust request and answered it.
    let handled = service.wait_for(Duration::from_secs(5), |l| l["outcome"] == "handled");
    assert_eq!(handled["emitted"][0]["type"], "evt.interop.multiply.success", "{handled}");
    assert_eq!(handled["emitted"][0]["to"], WORKFLOW, "the answer goes back to the workflow");
    assert_eq!(handled["emitted"][0]["data"], json!({ "product": 42 }));
    let (source, id) = (handled["emitted"][0]["source"].as_str(), handled["emitted"][0]["id"].as_str());
    assert_eq!(handled["emitted"][0]["msgId"], message_id(source.expect("a source"), id.expect("an id")));
    // One durable consumer per topic, shared: the service bound the one Rust names for its topic.
    let stream = async_nats::jetstream::new(transport.client().clone())
        .get_stream(&transport.config().stream)
        .await
        .expect("the stream");
    let mut names = Vec::new();
    let mut consumers = stream.consumer_names();
    while let Some(name) = futures_util::StreamExt::next(&mut consumers).await {
        names.push(name.expect("a consumer name"));
    }
    names.sort();
    let mut expected =
        vec![consumer_name(Some(MULTIPLY)), consumer_name(Some(WORKFLOW)), consumer_name(Some(RUST_CLIENT))];
    expected.sort();
    assert_eq!(names, expected, "the Rust node's consumers and the Arvo service's");

    // A runtime error of the Arvo handler: Arvo's system error event, which the workflow takes.
    let failed = run(&node, 1e200, 1e200).await;
    assert_eq!(failed.data()["product"], Value::Null, "{failed:?}");
    let error = failed.data()["error"].as_str().expect("the service's error message");
    assert!(error.contains("not a finite number"), "{error}");
    let sys = service
        .wait_for(Duration::from_secs(5), |l| l["emitted"][0]["type"] == "sys.com.interop.multiply.error");
    assert_eq!(sys["emitted"][0]["to"], WORKFLOW, "{sys}");

    assert!(node.take_dead_letters().is_empty(), "nothing dead-lettered by the node");
    assert!(transport.dead_letters(0, 10).await.expect("dead letters").is_empty(), "no dead letters");
    assert_eq!(service.stop(), Some(0), "the service exits cleanly on SIGTERM");
    finish(node, &transport).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_arvo_client_starts_a_rust_workflow_over_nats() {
    let Some(url) = prerequisites() else { return };
    let transport = NatsTransport::connect(config(&url)).await.expect("connect");
    let service = ArvoService::start(&url, &transport);
    let dir = tempfile::tempdir().expect("a temporary directory");
    let node = rust_node(dir.path(), transport.clone()).await;

    let (report, code) =
        arvo_client(&url, &transport, &["start", "--pairs", "3x5,1e200x1e200"], Duration::from_secs(60))
            .await;
    assert_eq!(report["ok"], true, "arvo-core validated every completion: {report:#}");
    assert_eq!(code, Some(0));
    assert_eq!(report["arvoCore"], "2.2.13");
    let workflows = report["workflows"].as_array().expect("workflows");
    assert_eq!(workflows.len(), 2);
    let product = &workflows[0];
    assert_eq!(product["valid"], true);
    assert_eq!(product["data"], json!({ "product": 15, "error": null }), "{product:#}");
    assert_eq!(product["completion"]["type"], "arvo.orc.interop.product.done");
    assert_eq!(product["completion"]["source"], WORKFLOW);
    assert_eq!(product["completion"]["to"], ARVO_CLIENT);
    assert_eq!(
        product["completion"]["subject"], product["init"]["subject"],
        "the workflow's subject, made by arvo-core"
    );
    assert_eq!(product["completion"]["parentid"], product["init"]["id"], "caused by the init event");
    assert_eq!(product["subject"]["execution"]["initiator"], ARVO_CLIENT);
    assert_eq!(product["contentType"], "application/cloudevents+json");
    assert_eq!(product["natsMsgId"], product["expectedMsgId"], "Nats-Msg-Id as subject::message_id makes it");
    let error = &workflows[1];
    assert_eq!(error["valid"], true);
    assert_eq!(error["data"]["product"], Value::Null, "{error:#}");
    assert!(error["data"]["error"].as_str().is_some_and(|e| e.contains("not a finite number")), "{error:#}");

    // The workflow's record is the Rust store's, under arvo-core's subject.
    let subject = product["init"]["subject"].as_str().expect("a subject");
    assert_eq!(
        node.status(subject).await.expect("a status"),
        Some(orchestrator::runtime::WorkflowStatus::Done),
        "the workflow is done in the Rust store"
    );
    assert!(node.take_dead_letters().is_empty(), "nothing dead-lettered by the node");
    assert!(transport.dead_letters(0, 10).await.expect("dead letters").is_empty(), "no dead letters");
    assert_eq!(service.stop(), Some(0), "the service exits cleanly on SIGTERM");
    finish(node, &transport).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_events_become_dead_letters_with_their_reason_and_nothing_else_is_lost() {
    let Some(url) = prerequisites() else { return };
    let transport = NatsTransport::connect(NatsConfig { max_event_bytes: MAX_EVENT_BYTES, ..config(&url) })
        .await
        .expect("connect");
    let mut service = ArvoService::start(&url, &transport);
    let dir = tempfile::tempdir().expect("a temporary directory");
    let node = rust_node(dir.path(), transport.clone()).await;

    // From the Arvo side to the Rust workflow's topic.
    let oversize = (MAX_EVENT_BYTES * 3).to_string();
    let (report, code) =
        arvo_client(&url, &transport, &["hostile", "--oversize", &oversize], Duration::from_secs(30)).await;
    assert_eq!(code, Some(0), "{report:#}");
    assert_eq!(report["subject"], event_subject(&transport.config().subject_prefix, WORKFLOW));
    let published: Vec<(String, u64)> = report["published"]
        .as_array()
        .expect("published")
        .iter()
        .map(|p| (p["name"].as_str().expect("a name").to_owned(), p["seq"].as_u64().expect("a sequence")))
        .collect();
    assert_eq!(published.len(), 6, "{report:#}");
    let seqs: Vec<u64> = published.iter().map(|(_, seq)| *seq).collect();
    let letters = dead_letters_for(&transport, &seqs).await;
    let reason_of = |name: &str| {
        let seq = published.iter().find(|(n, _)| n == name).expect("published").1;
        let letter = letters.iter().find(|l| l.original_seq == seq).expect("its dead letter");
        assert_eq!(letter.topic.as_deref(), Some(WORKFLOW), "{letter:?}");
        assert_eq!(letter.attempt, 1, "{letter:?}");
        letter.reason.clone()
    };
    let expectations: [(&str, &[&str]); 6] = [
        ("wrong-schema", &["violation", r#""six" is not of type "number""#, r#""b" is a required property"#]),
        ("bad-subject", &["violation", "subject", "not-an-orchestration-subject"]),
        (
            "wrong-topic",
            &["addressed to `com.interop.elsewhere`", "came on topic `arvo.orc.interop.product`"],
        ),
        ("malformed-json", &["not a valid event", "not valid JSON"]),
        ("not-an-event", &["not a valid event", "`id` is required"]),
        ("oversize", &["not a valid event", "larger than the maximum of 65536 bytes"]),
    ];
    for (name, words) in expectations {
        let reason = reason_of(name);
        println!("{name}: {reason}");
        for word in words {
            assert!(reason.contains(word), "the dead letter of {name} names what is wrong: {reason}");
        }
    }
    // The node saw the two that reached its orchestrator (the transport stopped the others).
    let dead = node.take_dead_letters();
    assert_eq!(dead.len(), 2, "{dead:#?}");

    // A workflow started after them completes, from the Arvo client and from Rust.
    let (report, code) =
        arvo_client(&url, &transport, &["start", "--pairs", "4x5"], Duration::from_secs(60)).await;
    assert_eq!((report["ok"].clone(), code), (json!(true), Some(0)), "{report:#}");
    assert_eq!(report["workflows"][0]["data"]["product"], 20);

    // From the Rust side to the Arvo service: data against its contract, malformed JSON.
    let bad = Event::builder()
        .source("com.interop.rogue")
        .r#type(MULTIPLY)
        .to(MULTIPLY)
        .subject("rogue")
        .dataschema("#/interop/multiply/1.0.0")
        .data_json(json!({ "a": "six" }))
        .build()
        .expect("an event");
    transport.publish(vec![bad.clone()]).await.expect("publish");
    let js = async_nats::jetstream::new(transport.client().clone());
    let mut headers = HeaderMap::new();
    headers.insert("Content-Type", "application/cloudevents+json");
    let subject = event_subject(&transport.config().subject_prefix, MULTIPLY);
    let malformed = js
        .publish_with_headers(subject, headers, "{ nope".into())
        .await
        .expect("publish")
        .await
        .expect("stored");
    let violation = service.wait_for(Duration::from_secs(10), |l| l["id"] == bad.id());
    assert_eq!(violation["outcome"], "dead-letter", "{violation}");
    assert_eq!(
        violation["violation"], "ViolationError<Contract>",
        "arvo-event-handler threw a ContractViolation"
    );
    let not_json = service.wait_for(Duration::from_secs(10), |l| l["seq"] == malformed.sequence);
    assert_eq!(not_json["outcome"], "dead-letter", "{not_json}");
    let letters = transport.dead_letters(0, 1_000).await.expect("dead letters");
    let from_service: Vec<&NatsDeadLetter> =
        letters.iter().filter(|l| l.topic.as_deref() == Some(MULTIPLY)).collect();
    assert_eq!(from_service.len(), 2, "{from_service:#?}");
    let schema =
        from_service.iter().find(|l| l.decode().is_ok_and(|e| e.id() == bad.id())).expect("the bad event");
    assert!(schema.reason.contains("Input event payload validation failed"), "{}", schema.reason);
    assert!(schema.reason.contains("\"a\""), "the reason names the field: {}", schema.reason);
    let json_letter =
        from_service.iter().find(|l| l.original_seq == malformed.sequence).expect("the malformed one");
    assert!(json_letter.reason.contains("malformed JSON"), "{}", json_letter.reason);

    // The service is still there, and still answers.
    assert!(service.running(), "the Arvo service did not crash");
    let done = run(&node, 2.5, 4.0).await;
    assert_eq!(done.data()["product"], 10.0);
    assert!(node.take_dead_letters().is_empty(), "nothing more dead-lettered by the node");
    assert_eq!(service.stop(), Some(0), "the service exits cleanly on SIGTERM");
    finish(node, &transport).await;
}
