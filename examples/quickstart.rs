//! The main example: an order-fulfilment workflow (a `machine!` statechart calling inventory,
//! payment and shipping services) on the embedded, durable SQLite store, then each finished
//! workflow's history read back from the journal, and a replay that re-runs the machine over it.
//!
//! One [`Node`] runs everything. It is durable: the events in flight are kept in the same file,
//! so a run killed mid-workflow loses none of them; the next run redelivers them first.
//!
//! The store is `orchestrator-data/quickstart.sqlite` under the working directory (it survives
//! the run: inspect it with `orchestrator history` / `orchestrator replay`, printed at the end).
//!
//! Run with `cargo run --example quickstart`. With a PostgreSQL server instead:
//! `DATABASE_URL=postgres://postgres@127.0.0.1:5432/test cargo run --example quickstart -- --store postgres`
//! (the same node over `orchestrator_postgres::PgStore`, in the schema `orchestrator`).

use std::path::Path;
use std::sync::Arc;

use orchestrator::memory::{Journal, Memory, NodeId};
use orchestrator::orchestration::replay::Until;
use orchestrator::orchestration::{Orchestrator, WorkflowRecord, history};
use orchestrator::outbox::Outbox;
use orchestrator::prelude::*;
use orchestrator::runtime::Node;
use orchestrator::transport::{InProcessConfig, InProcessTransport, Transport};
use orchestrator_examples::orders::{OrderFlow, OrderInput, OrderOutcome, OrderV1, services};
use orchestrator_postgres::{PgConfig, PgStore, QueueConfig};
use orchestrator_sqlite::SqliteConfig;

const CLIENT: &str = "com.example.shop.frontend";

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        [] | ["--store", "sqlite"] => {
            let path = Path::new("orchestrator-data/quickstart.sqlite");
            std::fs::create_dir_all(path.parent().unwrap_or(Path::new(".")))?;
            // Durable by default: WAL, synchronous=FULL, leases and the journal in one file.
            // The owner name frees the leases a killed previous run held, at once instead of
            // after their TTL (one live process per owner name).
            let memory = Arc::new(SqliteConfig::new(path).owner("quickstart").open::<WorkflowRecord>()?);
            let place = path.display().to_string();
            // Events travel in this process; the store's outbox keeps those in flight.
            let transport = InProcessTransport::new(InProcessConfig::default())?;
            let inspect = format!("cargo run -q -p orchestrator-cli -- history {place}");
            run(memory, transport, &place, &inspect).await
        }
        ["--store", "postgres"] => {
            // State, journal, leases, timers and the event queue in one PostgreSQL schema: each
            // step commits the settlement of the event it consumed, the new state, the journal
            // entry and the events it produced in one transaction. Other processes running a
            // node on the same schema share the work.
            let url = std::env::var("DATABASE_URL")
                .map_err(|_| "--store postgres reads the server's URL from DATABASE_URL")?;
            let config = PgConfig { node: NodeId::new("quickstart"), ..PgConfig::new(url) };
            let memory = Arc::new(PgStore::<WorkflowRecord>::open(config).await?);
            let queue = memory.queue(QueueConfig::default());
            let inspect = "cargo run -q -p orchestrator-cli -- history \"$DATABASE_URL\"";
            run(memory, queue, "PostgreSQL, schema orchestrator", inspect).await
        }
        _ => Err("usage: quickstart [--store sqlite|postgres]".into()),
    }
}

/// Runs the orders on a durable node over `memory` and `transport`, then reads the first one's history back and
/// replays it.
async fn run<M, T>(
    memory: Arc<M>,
    transport: T,
    place: &str,
    inspect: &str,
) -> Result<(), Box<dyn std::error::Error>>
where
    M: Memory<WorkflowRecord> + Outbox + Journal<WorkflowRecord> + 'static,
    T: Transport,
{
    let node = Node::builder(Arc::clone(&memory))
        .durable()
        .transport(transport)
        .service(services::inventory()?)
        .service(services::payment()?)
        .service(services::shipping()?)
        .orchestrator(Orchestrator::builder(Arc::clone(&memory)).machine::<OrderFlow>())
        .client(CLIENT)
        .build()
        .await?;
    if node.recovered() > 0 {
        println!("redelivered {} events a previous run left in flight", node.recovered());
    }

    let run = std::process::id();
    let orders_in = [
        ("sku-7", 2, 2_500, "a regular order"),
        ("sku-0", 1, 900, "an article out of stock"),
        ("sku-3", 1, 250_000, "a payment the provider declines"),
    ];
    let mut subjects = Vec::new();
    println!("orders (store: {place})");
    for (i, (sku, quantity, amount_cents, what)) in orders_in.into_iter().enumerate() {
        let input = OrderInput { order_id: format!("o-{run}-{i}"), sku: sku.into(), quantity, amount_cents };
        let init = EventFactory::<OrderV1>::new().init(input, Event::builder().source(CLIENT))?;
        // Starts the workflow (durably) and waits for its completion event.
        let done = node.run(init.clone()).await?;
        let outcome: OrderOutcome = serde_json::from_value(done.data_value().clone())?;
        println!(
            "  {:<34} {:<9} {:<10} {}",
            what,
            outcome.status,
            node.status(init.subject()).await?.ok_or("no record")?.to_string(),
            outcome.tracking.or(outcome.reason).unwrap_or_default()
        );
        subjects.push(init.subject().to_owned());
    }
    node.shutdown().await;

    // The history of the first workflow, from the journal (one entry per execution: the event
    // consumed, the state reached, the events emitted).
    let subject = &subjects[0];
    let entries = memory.history(subject, 0, 100).await?;
    println!("\nhistory of the regular order ({} executions)", entries.len());
    print!("{}", history::timeline(&entries));

    // Replay: re-run the machine over the journaled events and check every step against it.
    let orders = Orchestrator::builder(Arc::clone(&memory)).machine::<OrderFlow>().build()?;
    let replayed = orders.lifecycle().replay(&*memory, subject, Until::End, None).await?;
    println!(
        "\nreplay: re-ran {} executions, every state matched the journal; done = {}",
        replayed.steps, replayed.done
    );
    let middle = orders.lifecycle().replay(&*memory, subject, Until::Version(2), None).await?;
    println!("time travel to version 2: active states {}", middle.state["value"]);

    if inspect.starts_with("cargo") {
        // A short id: a unique prefix of the workflow's execution id names it in every command.
        let execution = orchestrator::subject::Subject::parse(subject)?.execution_id().to_owned();
        let short = &execution[..8.min(execution.len())];
        let store = inspect.trim_start_matches("cargo run -q -p orchestrator-cli -- history ");
        let tool = "cargo run -q -p orchestrator-cli --";
        println!("\ninspect it yourself:");
        println!("  {tool} workflows list {store}");
        println!("  {inspect} {short}");
        println!("  {tool} replay {store} {short} --until 2");
        println!("  {tool} chart export --format mermaid {store} --workflow arvo.orc.shop.order");
    }
    Ok(())
}
