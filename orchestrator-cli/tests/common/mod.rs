//! What the CLI's tests share: running the binary, a real order run into a SQLite store, and the
//! PostgreSQL server's URL.

#![allow(dead_code, unreachable_pub, clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::{Command, Output};
use std::sync::Arc;

use orchestrator::broker::Broker;
use orchestrator::event::Event;
use orchestrator::factory::EventFactory;
use orchestrator::orchestration::{Orchestrator, WorkflowRecord};
use orchestrator_examples::orders::{OrderFlow, OrderInput, OrderV1, services};
use orchestrator_sqlite::SqliteMemory;

/// Runs the `orchestrator` binary with `args`.
pub fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_orchestrator")).args(args).output().expect("the binary runs")
}

/// Runs, in this process, the tool a user's program makes with the library: taught the example
/// contracts and the order workflow's machine (`orchestrator_cli::Tool`), with `args` and
/// `stdin` (empty when `None`). On a thread of its own: the commands run their own Tokio
/// runtime, which cannot start inside a test's.
pub fn run_taught(args: &[&str], stdin: Option<&str>) -> Output {
    use std::os::unix::process::ExitStatusExt;
    let args: Vec<String> =
        std::iter::once("orchestrator").chain(args.iter().copied()).map(str::to_owned).collect();
    let input = stdin.unwrap_or_default().as_bytes().to_vec();
    std::thread::spawn(move || {
        let tool = orchestrator_cli::Tool::new()
            .contracts(orchestrator_examples::all_contracts())
            .machine::<OrderFlow>();
        let mut out = Vec::new();
        let (code, err) = tool.run_args(args, &mut input.as_slice(), &mut out);
        Output {
            status: std::process::ExitStatus::from_raw(i32::from(code) << 8),
            stdout: out,
            stderr: err.into_bytes(),
        }
    })
    .join()
    .expect("the tool runs")
}

/// Starts a durable node over a SQLite store at `db` with the order workflow and its services,
/// which records them in the store's catalog, runs one order, and stops; returns its subject.
pub async fn recorded_order(db: &Path) -> String {
    use orchestrator::runtime::Node;
    let store = Arc::new(SqliteMemory::<WorkflowRecord>::open_path(db).unwrap());
    let node = Node::builder(Arc::clone(&store))
        .durable()
        .client("com.test.cli")
        .orchestrator(Orchestrator::builder(Arc::clone(&store)).machine::<OrderFlow>())
        .service(services::inventory().unwrap())
        .service(services::payment().unwrap())
        .service(services::shipping().unwrap())
        .without_timers()
        .build()
        .await
        .unwrap();
    let input = OrderInput { order_id: "o-1".into(), sku: "sku-1".into(), quantity: 1, amount_cents: 100 };
    let init = EventFactory::<OrderV1>::new().init(input, Event::builder().source("com.test.cli")).unwrap();
    let done = node.run(init.clone()).await.unwrap();
    assert_eq!(done.data()["status"], "shipped");
    node.shutdown().await;
    init.subject().to_owned()
}

/// The standard output of a command that must succeed.
pub fn stdout(out: &Output) -> String {
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stdout.clone()).unwrap()
}

/// Runs one order (shipped) to completion in a SQLite store at `db`; returns its subject.
pub async fn one_order(db: &Path) -> String {
    let memory = Arc::new(SqliteMemory::<WorkflowRecord>::open_path(db).unwrap());
    let broker = Broker::builder()
        .handler(Orchestrator::builder(Arc::clone(&memory)).machine::<OrderFlow>().build().unwrap())
        .handler(services::inventory().unwrap())
        .handler(services::payment().unwrap())
        .handler(services::shipping().unwrap())
        .build()
        .unwrap();
    let input = OrderInput { order_id: "o-1".into(), sku: "sku-1".into(), quantity: 1, amount_cents: 100 };
    let init = EventFactory::<OrderV1>::new().init(input, Event::builder().source("com.test.cli")).unwrap();
    let done = broker.resolve(init.clone()).await.unwrap().expect("completion");
    assert_eq!(done.data()["status"], "shipped");
    broker.shutdown().await;
    init.subject().to_owned()
}

/// The URL of the PostgreSQL server (`DATABASE_URL`), or `None` after saying why; under CI a
/// missing URL fails the test.
pub fn database_url() -> Option<String> {
    match std::env::var("DATABASE_URL") {
        Ok(url) if !url.is_empty() => Some(url),
        _ => {
            assert!(
                std::env::var_os("CI").is_none(),
                "DATABASE_URL is not set, and CI makes the PostgreSQL tests mandatory"
            );
            println!("skipping: DATABASE_URL is not set");
            None
        }
    }
}
