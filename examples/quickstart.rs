//! The main example: an order-fulfilment workflow (a `machine!` statechart calling inventory,
//! payment and shipping services) on the embedded, durable SQLite store, in three acts:
//!
//! 1. **Orders**: a regular order, one out of stock and one the payment provider declines, each
//!    run to completion.
//! 2. **A crash**: a second process (this program again) starts an order and an order whose
//!    payment the provider never answers, and is killed (`SIGKILL`) while both are in flight.
//!    The next run on the same store finishes the first order from where it stopped, and the
//!    second order's 30 s payment timeout, a durable timer written in the killed process, fires
//!    in this one.
//! 3. **History**: the first workflow's journal read back, a replay that re-runs the machine
//!    over it, and the commands to look at the store yourself.
//!
//! The store is `orchestrator-data/quickstart.sqlite` under the working directory (it survives
//! the run: inspect it with the `orchestrator` tool, whose commands are printed at the end).
//!
//! Run with `cargo run --example quickstart` (about 35 s: the timeout is real). With a
//! PostgreSQL server instead:
//! `DATABASE_URL=postgres://postgres@127.0.0.1:5432/test cargo run --example quickstart -- --store postgres`
//! (the same node over `orchestrator_postgres::PgStore`, in the schema `orchestrator`).

use std::future::Future;
use std::io::{BufRead, BufReader, IsTerminal, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use orchestrator::memory::{Journal, Memory, NodeId};
use orchestrator::orchestration::replay::Until;
use orchestrator::orchestration::{Orchestrator, WorkflowRecord, history};
use orchestrator::outbox::Outbox;
use orchestrator::prelude::*;
use orchestrator::runtime::{Node, WorkflowStatus};
use orchestrator::transport::{InProcessConfig, InProcessTransport, Transport};
use orchestrator_examples::orders::{OrderFlow, OrderInput, OrderOutcome, OrderV1, services};
use orchestrator_postgres::{PgConfig, PgStore, QueueConfig};
use orchestrator_sqlite::SqliteConfig;

type BoxError = Box<dyn std::error::Error>;

const CLIENT: &str = "com.example.shop.frontend";
/// The topic of the carrier's service, which the crashing process does not run.
const SHIPPING: &str = "com.shop.shipping.dispatch";
/// What the crashing process prints once both its workflows are in flight.
const IN_FLIGHT: &str = "in flight";

/// Which store the example runs on.
enum Store {
    Sqlite,
    Postgres(String),
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), BoxError> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (store, crash) = match args[..] {
        [] | ["--store", "sqlite"] => (Store::Sqlite, false),
        ["--store", "sqlite", "--crash"] => (Store::Sqlite, true),
        ["--store", "postgres", ..] => {
            let url = std::env::var("DATABASE_URL")
                .map_err(|_| "--store postgres reads the server's URL from DATABASE_URL")?;
            (Store::Postgres(url), args.get(2) == Some(&"--crash"))
        }
        _ => return Err("usage: quickstart [--store sqlite|postgres]".into()),
    };
    match store {
        Store::Sqlite => {
            let path = Path::new("orchestrator-data/quickstart.sqlite");
            std::fs::create_dir_all(path.parent().unwrap_or(Path::new(".")))?;
            let open = || async move {
                // Durable by default: WAL, synchronous=FULL, the state, the journal and the
                // events in flight in one file. The owner name frees the leases a killed
                // previous run held, at once instead of after their TTL (one live process per
                // owner name); on the in-process transport below steps take none.
                let memory = Arc::new(SqliteConfig::new(path).owner("quickstart").open::<WorkflowRecord>()?);
                // Events travel in this process; the store's outbox keeps those in flight.
                let transport = InProcessTransport::new(InProcessConfig::default())?;
                Ok((memory, transport))
            };
            let place = path.display().to_string();
            demo(open, crash, &["--store", "sqlite"], &place, &place).await
        }
        Store::Postgres(url) => {
            let open = || {
                let url = url.clone();
                async move {
                    // State, journal, leases, timers and the event queue in one PostgreSQL
                    // schema: each step commits the settlement of the event it consumed, the
                    // new state, the journal entry and the events it produced in one
                    // transaction. Other processes running a node on the same schema share the
                    // work.
                    let config = PgConfig { node: NodeId::new("quickstart"), ..PgConfig::new(url) };
                    let memory = Arc::new(PgStore::<WorkflowRecord>::open(config).await?);
                    let queue = memory.queue(QueueConfig::default());
                    Ok((memory, queue))
                }
            };
            demo(
                open,
                crash,
                &["--store", "postgres"],
                "PostgreSQL, schema orchestrator",
                "\"$DATABASE_URL\"",
            )
            .await
        }
    }
}

/// The three acts, or (with `crash`) the process that is killed in the second.
async fn demo<M, T, F, Fut>(
    open: F,
    crash: bool,
    store_args: &[&str],
    place: &str,
    cli_store: &str,
) -> Result<(), BoxError>
where
    M: Memory<WorkflowRecord> + Outbox + Journal<WorkflowRecord> + 'static,
    T: Transport,
    F: Fn() -> Fut,
    Fut: Future<Output = Result<(Arc<M>, T), BoxError>>,
{
    let run = std::process::id();
    if crash {
        let (memory, transport) = open().await?;
        return doomed(memory, transport).await;
    }

    // Act 1: three orders, each run to completion.
    let (memory, transport) = open().await?;
    let node = shop_node(&memory, transport, true).await?;
    if node.recovered() > 0 {
        println!("redelivered {} event(s) a previous run left in flight", node.recovered());
    }
    let orders_in = [
        ("sku-7", 2, 2_500, "a regular order"),
        ("sku-0", 1, 900, "an article out of stock"),
        ("sku-3", 1, 250_000, "a payment the provider declines"),
    ];
    let (mut subjects, mut statuses) = (Vec::new(), Vec::new());
    println!("orders (store: {place})");
    for (i, (sku, quantity, amount_cents, what)) in orders_in.into_iter().enumerate() {
        let init = order(format!("o-{run}-{i}"), sku, quantity, amount_cents)?;
        // Starts the workflow (durably) and waits for its completion event.
        let done = node.run(init.clone()).await?;
        statuses.push(report(&node, what, &done, init.subject()).await?);
        subjects.push(init.subject().to_owned());
    }
    node.shutdown().await;
    drop(node);
    drop(memory);

    // Act 2: a process killed with two workflows in flight, and this one taking over.
    println!("\na crash: another process starts two orders and is killed (SIGKILL) while they run");
    let exe = std::env::current_exe()?;
    let mut child = Command::new(exe).args(store_args).arg("--crash").stdout(Stdio::piped()).spawn()?;
    let mut lines = BufReader::new(child.stdout.take().ok_or("no stdout")?).lines();
    let mut in_flight = Vec::new();
    for line in lines.by_ref() {
        let line = line?;
        match line.strip_prefix(IN_FLIGHT) {
            Some(rest) => {
                in_flight.extend(rest.split_whitespace().map(str::to_owned));
                break;
            }
            None => println!("  | {line}"),
        }
    }
    child.kill()?;
    let killed = child.wait()?;
    let [regular, lost] =
        <[String; 2]>::try_from(in_flight).map_err(|_| "the crashing process ended early")?;
    println!("  killed it ({killed}); a new node on the same store takes over");

    let (memory, transport) = open().await?;
    let node = shop_node(&memory, transport, true).await?;
    if node.recovered() > 0 {
        println!("  redelivered {} event(s) the killed process left in its outbox", node.recovered());
    }
    let done = node.wait(&regular).await;
    statuses.push(report(&node, "the order in flight at the crash", &done, &regular).await?);
    // The timer was written by the killed process, with the workflow's state.
    if let Some(WorkflowStatus::Waiting { until }) = node.status(&lost).await? {
        countdown(until).await;
    }
    let done = node.wait(&lost).await;
    statuses.push(report(&node, "the payment nobody answered", &done, &lost).await?);
    node.shutdown().await;
    if statuses != ["shipped", "rejected", "rejected", "shipped", "rejected"] {
        return Err(format!("unexpected outcomes: {statuses:?}").into());
    }

    // Act 3: the first workflow's history, from the journal (one entry per execution: the event
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

    // A short id: a unique prefix of the workflow's execution id names it in every command.
    let execution = orchestrator::subject::Subject::parse(subject)?.execution_id().to_owned();
    let short = &execution[..8.min(execution.len())];
    let tool = "cargo run -q -p orchestrator-cli --";
    println!("\ninspect it yourself:");
    println!("  {tool} workflows list {cli_store}");
    println!("  {tool} history {cli_store} {short}");
    println!("  {tool} replay {cli_store} {short} --until 2");
    println!("  {tool} chart export --format mermaid {cli_store} --workflow arvo.orc.shop.order");
    println!("  {tool} serve {cli_store}");
    Ok(())
}

/// The process killed in act 2: without the carrier's service (its requests wait in the
/// store), it starts a regular order and one whose payment is never answered, says when both
/// are in flight, and waits for its end.
async fn doomed<M, T>(memory: Arc<M>, transport: T) -> Result<(), BoxError>
where
    M: Memory<WorkflowRecord> + Outbox + Journal<WorkflowRecord> + 'static,
    T: Transport,
{
    let node = shop_node(&memory, transport, false).await?;
    let run = std::process::id();
    let regular = node.start(order(format!("o-{run}-crash"), "sku-5", 1, 4_200)?).await?;
    let lost = node.start(order(format!("lost-{run}"), "sku-5", 1, 990)?).await?;
    println!("started an order and an order whose payment the provider will never answer");
    // In flight: the order waits for the carrier (reserved, charged: three executions), the
    // other for the payment provider, with its timeout set.
    loop {
        let shipping = memory.history(&regular, 0, 10).await?.len() >= 3;
        let timer = matches!(node.status(&lost).await?, Some(WorkflowStatus::Waiting { .. }));
        if shipping && timer {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    println!("the order was charged and waits for the carrier; the other waits for its payment");
    println!("{IN_FLIGHT} {regular} {lost}");
    std::io::stdout().flush()?;
    std::future::pending::<()>().await;
    Ok(())
}

/// A durable node running the order workflow and its services (without the carrier's when
/// `shipping` is false: its requests then wait in the store for a node that has it).
async fn shop_node<M, T>(memory: &Arc<M>, transport: T, shipping: bool) -> Result<Node<M, T>, BoxError>
where
    M: Memory<WorkflowRecord> + Outbox + Journal<WorkflowRecord> + 'static,
    T: Transport,
{
    let builder = Node::builder(Arc::clone(memory))
        .durable()
        .transport(transport)
        .service(services::inventory()?)
        .service(services::payment()?)
        .orchestrator(Orchestrator::builder(Arc::clone(memory)).machine::<OrderFlow>())
        .client(CLIENT);
    let builder = if shipping { builder.service(services::shipping()?) } else { builder.remote(SHIPPING) };
    Ok(builder.build().await?)
}

/// The init event of an order.
fn order(order_id: String, sku: &str, quantity: u32, amount_cents: u64) -> Result<Event, BoxError> {
    let input = OrderInput { order_id, sku: sku.into(), quantity, amount_cents };
    Ok(EventFactory::<OrderV1>::new().init(input, Event::builder().source(CLIENT))?)
}

/// Prints one finished order: what it was, its outcome, its status in the store, and why.
async fn report<M, T>(node: &Node<M, T>, what: &str, done: &Event, subject: &str) -> Result<String, BoxError>
where
    M: Memory<WorkflowRecord> + 'static,
    T: Transport,
{
    let outcome: OrderOutcome = serde_json::from_value(done.data_value().clone())?;
    println!(
        "  {:<34} {:<9} {:<10} {}",
        what,
        outcome.status,
        node.status(subject).await?.ok_or("no record")?.to_string(),
        outcome.tracking.or(outcome.reason).unwrap_or_default()
    );
    Ok(outcome.status)
}

/// Shows the seconds left until `until`, on one line of a terminal, until then.
async fn countdown(until: SystemTime) {
    if !std::io::stdout().is_terminal() {
        let left = until.duration_since(SystemTime::now()).unwrap_or_default();
        println!("  waiting {} s for the payment timeout", left.as_secs_f64().ceil());
        tokio::time::sleep(left).await;
        return;
    }
    loop {
        let left = until.duration_since(SystemTime::now()).unwrap_or_default();
        print!(
            "\r  the payment timeout fires in {:>2} s ",
            left.as_secs() + u64::from(left.subsec_nanos() > 0)
        );
        let _ = std::io::stdout().flush();
        if left.is_zero() {
            break;
        }
        tokio::time::sleep(left.min(Duration::from_secs(1))).await;
    }
    print!("\r{:48}\r", "");
}
