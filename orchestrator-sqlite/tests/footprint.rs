//! The journal's footprint on disk: bytes per two-step workflow (the calculator's averaging
//! machine: init → add → divide → done, three journal entries) with the default retention and
//! the full journal, per table and index; and the journal of one resumable collecting n
//! responses. A measurement, not a check of speed: run it with
//!
//! ```text
//! cargo test -p orchestrator-sqlite --release --test footprint -- --ignored --nocapture
//! ```
//!
//! `FOOTPRINT_WORKFLOWS` sets how many workflows (default 1,000); `FOOTPRINT_DB` names a file to
//! keep the two-step workflows' database in (it must not exist yet). The figures are printed; the
//! assertions only check that the workflows ran and that their journals read back.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::path::Path;
use std::sync::Arc;

use orchestrator::handler::EventHandler;
use orchestrator::memory::Journal;
use orchestrator::orchestration::resumable::{Request, Resumable, ResumableInput, ResumableOutput};
use orchestrator::orchestration::{Orchestrator, WorkflowRecord};
use orchestrator::prelude::*;
use orchestrator_examples::calculator::flows::AverageFlow;
use orchestrator_examples::calculator::{
    AverageInput, AverageOutput, AverageV1, MulV1, Operands, Product, services,
};
use orchestrator_sqlite::{SqliteConfig, SqliteMemory};

const CLIENT: &str = "com.test.client";

type Store = Arc<SqliteMemory<WorkflowRecord>>;

fn average_init(values: Vec<f64>) -> Event {
    EventFactory::<AverageV1>::new().init(AverageInput { values }, Event::builder().source(CLIENT)).unwrap()
}

/// What `dbstat` says of each table and index: (name, pages' bytes, unused bytes, payload bytes).
fn table_sizes(path: &Path) -> Vec<(String, i64, i64, i64)> {
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(())).unwrap();
    conn.prepare(
        "SELECT name, SUM(pgsize), SUM(unused), SUM(payload) FROM dbstat GROUP BY name ORDER BY SUM(pgsize) DESC",
    )
    .unwrap()
    .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
    .unwrap()
    .collect::<Result<_, _>>()
    .unwrap()
}

fn print_sizes(path: &Path, per: usize) {
    let sizes = table_sizes(path);
    let total: i64 = sizes.iter().map(|s| s.1).sum();
    let file = std::fs::metadata(path).unwrap().len();
    println!("file {file} B, pages {total} B, per workflow {:.0} B", total as f64 / per as f64);
    println!("{:<32} {:>12} {:>10} {:>12} {:>10}", "table/index", "bytes", "per wf", "payload", "unused");
    let (empty, nonempty): (Vec<_>, Vec<_>) = sizes.into_iter().partition(|s| s.3 == 0);
    for (name, bytes, unused, payload) in nonempty {
        println!(
            "{name:<32} {bytes:>12} {:>10.0} {payload:>12} {:>9.1}%",
            bytes as f64 / per as f64,
            unused as f64 * 100.0 / bytes.max(1) as f64
        );
    }
    let bytes: i64 = empty.iter().map(|s| s.1).sum();
    println!("({} empty tables and indexes: {bytes} bytes)", empty.len());
}

async fn run_average(orc: &Orchestrator<Store>, i: usize) {
    let add = services::add().unwrap();
    let divide = services::divide().unwrap();
    let init = average_init(vec![i as f64, 2.0]);
    let request = orc.execute(&init).await.unwrap();
    let sum = add.execute(&request[0]).await.unwrap();
    let request = orc.execute(&sum[0]).await.unwrap();
    let quotient = divide.execute(&request[0]).await.unwrap();
    let done = orc.execute(&quotient[0]).await.unwrap();
    assert_eq!(done.first().map(Event::r#type), Some("arvo.orc.calc.average.done"), "{done:?}");
    let history = orc.memory().history(init.subject(), 0, 10).await.unwrap();
    assert_eq!(history.len(), 3, "init, sum, quotient");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement: run with --ignored --nocapture"]
async fn bytes_per_two_step_workflow() {
    let n: usize = std::env::var("FOOTPRINT_WORKFLOWS").ok().and_then(|n| n.parse().ok()).unwrap_or(1000);
    let dir = tempfile::tempdir().unwrap();
    // `FOOTPRINT_DB=<path>` keeps the database there, to look into it afterwards.
    let path = std::env::var_os("FOOTPRINT_DB").map_or_else(|| dir.path().join("footprint.db"), Into::into);
    {
        let store: Store = Arc::new(SqliteConfig::new(&path).open().unwrap());
        let orc = Orchestrator::builder(Arc::clone(&store)).machine::<AverageFlow>().build().unwrap();
        let tasks = 8;
        let mut joins = Vec::new();
        for t in 0..tasks {
            let orc = orc.clone();
            joins.push(tokio::spawn(async move {
                for i in (t..n).step_by(tasks) {
                    run_average(&orc, i).await;
                }
            }));
        }
        for join in joins {
            join.await.unwrap();
        }
    }
    println!("\n{n} two-step workflows (AverageFlow), default retention, full journal:");
    print_sizes(&path, n);
}

/// A resumable averaging `values` with one `mul` (value × 1) per value, collecting every
/// product before it completes.
fn collecting(store: &Store) -> Resumable<Store> {
    Resumable::builder(Arc::clone(store))
        .service::<MulV1>()
        .version(|input: ResumableInput<AverageV1, usize>| async move {
            if let Some(init) = input.init {
                let requests = init.values.iter().map(|v| Request::new::<MulV1>(Operands { a: *v, b: 1.0 }));
                return Ok(ResumableOutput::wait().context(init.values.len()).requests(requests));
            }
            let expected = input.context.ok_or("no context")?;
            let products = input.collected::<MulV1, Product>()?;
            if products.len() < expected {
                return Ok(ResumableOutput::wait());
            }
            let average = products.iter().map(|p| p.product).sum::<f64>() / expected as f64;
            Ok(ResumableOutput::complete(AverageOutput { average }))
        })
        .build()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement: run with --ignored --nocapture"]
async fn journal_of_a_resumable_collecting_responses() {
    for n in [100usize, 1000] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("resumable.db");
        {
            let store: Store = Arc::new(SqliteConfig::new(&path).open().unwrap());
            let resumable = collecting(&store);
            let mul = services::mul().unwrap();
            let init = average_init((0..n).map(|i| i as f64).collect());
            let requests = resumable.execute(&init).await.unwrap();
            assert_eq!(requests.len(), n);
            let mut done = Vec::new();
            for request in &requests {
                let product = mul.execute(request).await.unwrap();
                done = resumable.execute(&product[0]).await.unwrap();
            }
            assert_eq!(done.first().map(Event::r#type), Some("arvo.orc.calc.average.done"), "{done:?}");
            let mut entries = 0;
            let mut after = 0;
            loop {
                let page = store.history(init.subject(), after, 100).await.unwrap();
                let Some(last) = page.last() else { break };
                after = last.version;
                entries += page.len();
            }
            assert_eq!(entries, n + 1, "the init and every response");
        }
        println!("\none resumable collecting n = {n} responses (journal: n + 1 entries):");
        print_sizes(&path, 1);
    }
}
