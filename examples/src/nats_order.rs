//! The main example's order workflow ([`crate::orders`]) across processes over NATS JetStream:
//! `cargo run --example nats_order` runs each role below in a process of its own.
//!
//! * [`services`]: a node with the inventory, payment and shipping handlers only;
//! * [`orchestrator`]: a node with the order orchestrator ([`OrderFlow`]) on its own durable
//!   SQLite store, its services declared remote;
//! * [`client`]: a node that starts orders and waits for their completion events.
//!
//! The processes share nothing but the NATS deployment ([`connect`]: a stream per deployment
//! name), so each role can run on another machine.

use std::future::Future;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use orchestrator::handler::EventHandler;
use orchestrator::memory::InMemory;
use orchestrator::orchestration::{Orchestrator, WorkflowRecord};
use orchestrator::prelude::*;
use orchestrator::runtime::Node;
use orchestrator::transport::Transport;
use orchestrator_nats::{NatsConfig, NatsTransport};
use orchestrator_sqlite::SqliteConfig;

use crate::orders::{OrderFlow, OrderInput, OrderOutcome, OrderV1, services as shop};

/// The errors of a role.
pub type Error = Box<dyn std::error::Error + Send + Sync>;

/// The client topic: where the completions of the orders the client starts arrive.
pub const CLIENT: &str = "com.example.shop.frontend";

/// The URL in `NATS_URL`, or `nats://127.0.0.1:4222`.
pub fn nats_url() -> String {
    std::env::var("NATS_URL")
        .ok()
        .filter(|url| !url.is_empty())
        .unwrap_or_else(|| "nats://127.0.0.1:4222".into())
}

/// Connects to the deployment `deployment` (stream `<deployment>`, dead letters
/// `<deployment>_DEAD`, subjects `<deployment in lower case>.…`) on the server at `url`, with a
/// message that says what to do when the server cannot be reached.
pub async fn connect(url: &str, deployment: &str) -> Result<NatsTransport, Error> {
    let config =
        NatsConfig { poll: Duration::from_millis(20), ..NatsConfig::new(url).deployment(deployment) };
    let unreachable = |why: String| -> Error {
        format!(
            "cannot use the NATS server at {url}: {why}\n\
             start one with JetStream enabled (`nats-server -js`, or \
             `docker run -p 4222:4222 nats -js`) or point NATS_URL at one"
        )
        .into()
    };
    match tokio::time::timeout(Duration::from_secs(10), NatsTransport::connect(config)).await {
        Ok(Ok(transport)) => Ok(transport),
        Ok(Err(e)) => Err(unreachable(root_cause(&e))),
        Err(_) => Err(unreachable("no answer within 10 s".into())),
    }
}

/// The innermost cause of `e` (the socket's error rather than the layers above it).
fn root_cause(e: &dyn std::error::Error) -> String {
    let mut cause = e;
    while let Some(source) = cause.source() {
        cause = source;
    }
    cause.to_string()
}

/// The topics of the order's services (inventory, payment, shipping).
pub fn service_topics() -> Result<Vec<String>, Error> {
    Ok(vec![
        shop::inventory()?.source().to_owned(),
        shop::payment()?.source().to_owned(),
        shop::shipping()?.source().to_owned(),
    ])
}

/// The order orchestrator's topic.
pub fn order_topic() -> &'static str {
    OrderV1::versioned().accepts().event_type()
}

/// Shuts `node` down, waiting at most 20 s for the events in hand.
async fn shutdown<M, T>(role: &str, node: &Node<M, T>)
where
    M: orchestrator::memory::Memory<WorkflowRecord> + 'static,
    T: Transport,
{
    if tokio::time::timeout(Duration::from_secs(20), node.shutdown()).await.is_err() {
        println!("[{role}] gave up waiting for the events in hand after 20 s");
    }
    println!("[{role}] stopped after handling {} events", node.dispatcher().stats().delivered);
}

/// The services role: a node with the inventory, payment and shipping handlers, on `transport`,
/// until `stop` completes.
pub async fn services(transport: NatsTransport, stop: impl Future<Output = ()>) -> Result<(), Error> {
    let deployment = transport.config().stream.clone();
    let store = Arc::new(InMemory::<WorkflowRecord>::default());
    let node = Node::builder(store)
        .transport(transport)
        .service(shop::inventory()?)
        .service(shop::payment()?)
        .service(shop::shipping()?)
        .without_timers()
        .build()
        .await?;
    println!("[services] deployment {deployment}: handling {}", service_topics()?.join(", "));
    stop.await;
    shutdown("services", &node).await;
    Ok(())
}

/// The orchestrator role: a node running the order workflow ([`OrderFlow`]) on the durable
/// SQLite store at `path` (created with its directory), its services remote, on `transport`,
/// until `stop` completes.
pub async fn orchestrator(
    transport: NatsTransport,
    path: &Path,
    stop: impl Future<Output = ()>,
) -> Result<(), Error> {
    let deployment = transport.config().stream.clone();
    if let Some(dir) = path.parent().filter(|dir| !dir.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    // The owner name frees the leases a killed previous run held, at once (one live process
    // per owner name and file).
    let store = Arc::new(SqliteConfig::new(path).owner("nats-order-orchestrator").open::<WorkflowRecord>()?);
    // Durable: what a step commits goes to the outbox in the same SQLite transaction, and leaves
    // it once JetStream stored it, so a crash between the commit and the publish loses nothing
    // (the next start publishes it). The workflows, their journal and their timers are in the
    // SQLite file; a step's event delivered again gets the events it produced the first time
    // from the journal.
    let mut builder = Node::builder(Arc::clone(&store))
        .transport(transport)
        .durable()
        .orchestrator(Orchestrator::builder(Arc::clone(&store)).machine::<OrderFlow>());
    let remote = service_topics()?;
    for topic in &remote {
        builder = builder.remote(topic.clone());
    }
    let node = builder.build().await?;
    println!(
        "[orchestrator] deployment {deployment}: handling {} (store {}), calling {} remotely",
        order_topic(),
        path.display(),
        remote.join(", ")
    );
    stop.await;
    shutdown("orchestrator", &node).await;
    Ok(())
}

/// What the client saw.
#[derive(Debug, Clone, Default)]
pub struct ClientReport {
    /// The outcome of each order that completed, in the order they were started.
    pub completed: Vec<OrderOutcome>,
    /// The ids of the orders that did not complete in time.
    pub missing: Vec<String>,
    /// The workflow subject of each order started, in order.
    pub subjects: Vec<String>,
    /// From the first start to the last completion.
    pub elapsed: Duration,
}

impl ClientReport {
    /// How many completed orders ended with `status`.
    pub fn count(&self, status: &str) -> usize {
        self.completed.iter().filter(|o| o.status == status).count()
    }
}

/// The `i`-th order of a run tagged `tag`: a regular order, an article out of stock and a
/// payment the provider declines, in turn (the quickstart's three orders), with the status it
/// should end with.
pub fn order(tag: &str, i: usize) -> (OrderInput, &'static str) {
    let (sku, quantity, amount_cents, expected) = match i % 3 {
        0 => ("sku-7", 2, 2_500, "shipped"),
        1 => ("sku-0", 1, 900, "rejected"),
        _ => ("sku-3", 1, 250_000, "rejected"),
    };
    (OrderInput { order_id: format!("o-{tag}-{i}"), sku: sku.into(), quantity, amount_cents }, expected)
}

/// The client role: starts `orders` orders on `transport` and waits for their completion events,
/// at most `within` in all; prints each result and a summary. `tag` makes the order ids unique.
pub async fn client(
    transport: NatsTransport,
    orders: usize,
    within: Duration,
    tag: &str,
) -> Result<ClientReport, Error> {
    let deployment = transport.config().stream.clone();
    let store = Arc::new(InMemory::<WorkflowRecord>::default());
    let node = Node::builder(store).transport(transport).client(CLIENT).without_timers().build().await?;
    println!("[client] deployment {deployment}: starting {orders} orders, completions on {CLIENT}");
    let started = Instant::now();
    let deadline = tokio::time::Instant::now() + within;
    let mut subjects = Vec::with_capacity(orders);
    for i in 0..orders {
        let (input, _) = order(tag, i);
        let id = input.order_id.clone();
        let init = EventFactory::<OrderV1>::new().init(input, Event::builder().source(CLIENT))?;
        subjects.push((id, node.start(init).await?));
    }
    let mut report = ClientReport {
        subjects: subjects.iter().map(|(_, s)| s.clone()).collect(),
        ..ClientReport::default()
    };
    for (id, subject) in subjects {
        match tokio::time::timeout_at(deadline, node.wait(&subject)).await {
            Ok(done) => {
                let outcome: OrderOutcome = serde_json::from_value(done.data_value().clone())?;
                println!(
                    "[client]   {:<24} {:<9} {}",
                    outcome.order_id,
                    outcome.status,
                    outcome.tracking.clone().or_else(|| outcome.reason.clone()).unwrap_or_default()
                );
                report.completed.push(outcome);
            }
            Err(_) => {
                println!("[client]   {id:<24} no completion within {within:?}");
                report.missing.push(id);
            }
        }
    }
    report.elapsed = started.elapsed();
    println!(
        "[client] {} of {orders} orders completed in {:.2?}: {} shipped, {} rejected, {} failed{}",
        report.completed.len(),
        report.elapsed,
        report.count("shipped"),
        report.count("rejected"),
        report.count("failed"),
        if report.missing.is_empty() { String::new() } else { format!(", {} missing", report.missing.len()) }
    );
    shutdown("client", &node).await;
    Ok(report)
}

/// Completes on SIGINT (Ctrl-C) or SIGTERM. The handlers are installed when this is called, so
/// call it before starting the work it stops.
pub fn stop_signal() -> Result<impl Future<Output = &'static str>, Error> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let mut interrupt = signal(SignalKind::interrupt())?;
        let mut terminate = signal(SignalKind::terminate())?;
        Ok(async move {
            tokio::select! {
                _ = interrupt.recv() => "SIGINT",
                _ = terminate.recv() => "SIGTERM",
            }
        })
    }
    #[cfg(not(unix))]
    {
        Ok(async {
            let _ = tokio::signal::ctrl_c().await;
            "Ctrl-C"
        })
    }
}
