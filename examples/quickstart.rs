//! The main example: an order-fulfilment workflow (a `machine!` statechart calling inventory,
//! payment and shipping services) on the embedded, durable SQLite store, then each finished
//! workflow's history read back from the journal, and a replay that re-runs the machine over it.
//!
//! Every handler is wrapped in [`Outboxed`]: the events in flight are kept in the same file, so a
//! run killed mid-workflow loses none of them; the next run redelivers them first.
//!
//! The store is `orchestrator-data/quickstart.sqlite` under the working directory (it survives
//! the run: inspect it with `orchestrator history` / `orchestrator replay`, printed at the end).
//!
//! Run with `cargo run --example quickstart`.

use std::path::Path;
use std::sync::Arc;

use orchestrator::broker::Broker;
use orchestrator::memory::Journal;
use orchestrator::orchestration::replay::Until;
use orchestrator::orchestration::timers::Timers;
use orchestrator::orchestration::{Orchestrator, WorkflowRecord, history};
use orchestrator::outbox::{Outbox, Outboxed, redeliver};
use orchestrator::prelude::*;
use orchestrator_examples::orders::{OrderFlow, OrderInput, OrderOutcome, OrderV1, services};
use orchestrator_sqlite::SqliteConfig;

const CLIENT: &str = "com.example.shop.frontend";

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = Path::new("orchestrator-data/quickstart.sqlite");
    std::fs::create_dir_all(path.parent().unwrap_or(Path::new(".")))?;
    // Durable by default: WAL, synchronous=FULL, leases and the journal in one file.
    // The owner name frees the leases a killed previous run held, at once instead of after
    // their TTL (one live process per owner name).
    let memory = Arc::new(SqliteConfig::new(path).owner("quickstart").open::<WorkflowRecord>()?);

    let orders = Orchestrator::builder(Arc::clone(&memory)).machine::<OrderFlow>().build()?;
    // Each handler moves its event forward in the outbox (consumed out, produced in) before the
    // broker sees what it produced.
    let broker = Broker::builder()
        .handler(Outboxed::new(orders.clone(), Arc::clone(&memory)))
        .handler(Outboxed::new(services::inventory()?, Arc::clone(&memory)))
        .handler(Outboxed::new(services::payment()?, Arc::clone(&memory)))
        .handler(Outboxed::new(services::shipping()?, Arc::clone(&memory)))
        .workers(4)
        .build()?;
    // What a previous run left in flight (none unless it was killed) goes out first.
    let recovered = redeliver(&*memory, &broker.handle(), 256).await?;
    if recovered > 0 {
        println!("redelivered {recovered} events a previous run left in flight");
    }
    // Durable timers (the payment's 30 s timeout) are delivered by this task.
    let timers =
        Timers::new(Arc::clone(&memory)).spawn(broker.handle(), |e| eprintln!("timer pass failed: {e}"));

    let run = std::process::id();
    let orders_in = [
        ("sku-7", 2, 2_500, "a regular order"),
        ("sku-0", 1, 900, "an article out of stock"),
        ("sku-3", 1, 250_000, "a payment the provider declines"),
    ];
    let mut subjects = Vec::new();
    println!("orders (store: {})", path.display());
    for (i, (sku, quantity, amount_cents, what)) in orders_in.into_iter().enumerate() {
        let input = OrderInput { order_id: format!("o-{run}-{i}"), sku: sku.into(), quantity, amount_cents };
        let init = EventFactory::<OrderV1>::new().init(input, Event::builder().source(CLIENT))?;
        memory.advance(None, std::slice::from_ref(&init)).await?; // in flight, durably
        let done = broker.resolve(init.clone()).await?.ok_or("the workflow did not complete")?;
        memory.advance(Some(done.id()), &[]).await?; // the completion reached its client
        let outcome: OrderOutcome = serde_json::from_value(done.data_value().clone())?;
        println!(
            "  {:<34} {:<9} {}",
            what,
            outcome.status,
            outcome.tracking.or(outcome.reason).unwrap_or_default()
        );
        subjects.push(init.subject().to_owned());
    }
    timers.stop().await;
    broker.shutdown().await;

    // The history of the first workflow, from the journal (one entry per execution: the event
    // consumed, the state reached, the events emitted).
    let subject = &subjects[0];
    let entries = memory.history(subject, 0, 100).await?;
    println!("\nhistory of the regular order ({} executions)", entries.len());
    print!("{}", history::timeline(&entries));

    // Replay: re-run the machine over the journaled events and check every step against it.
    let replayed = orders.lifecycle().replay(&*memory, subject, Until::End, None).await?;
    println!(
        "\nreplay: re-ran {} executions, every state matched the journal; done = {}",
        replayed.steps, replayed.done
    );
    let middle = orders.lifecycle().replay(&*memory, subject, Until::Version(2), None).await?;
    println!("time travel to version 2: active states {}", middle.state["value"]);

    println!("\ninspect it yourself:");
    println!("  cargo run -q -p orchestrator-cli -- history {} '{subject}'", path.display());
    println!("  cargo run -q -p orchestrator-cli -- replay {} '{subject}' --until 2", path.display());
    Ok(())
}
