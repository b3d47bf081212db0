//! The crash test on PostgreSQL: a child process runs averaging workflows (orchestrator → add →
//! divide → client) on a durable node over a `PgStore` and its queue, where each orchestrator
//! step commits the settlement of its event, its state, its journal entry and its products in
//! one transaction, and each service's ack settles its event with its products. The child is
//! killed with SIGKILL at random moments, many times over; each new child opens the store under
//! the same node id, which gives back what the killed one held (leases, claims). At the end
//! every workflow has completed exactly once, with the right result; its journal is gapless and
//! agrees with its state; no event was consumed twice by a workflow; the queue is empty and
//! nothing was dead-lettered.
//!
//! `two_processes_share_the_work` runs two such children at once over one schema (no kills):
//! both handle deliveries, and the same checks hold.
//!
//! The test binary re-invokes itself: `crash_child` (ignored in a normal run) is the child.
//! `CRASH_SEED=<n>` replays a sequence of kill moments.

mod common;

use std::collections::HashSet;
use std::process::Child;
use std::sync::Arc;
use std::time::{Duration, Instant};

use orchestrator::handler::EventHandler;
use orchestrator::memory::{Journal, Memory, NodeId, Retention};
use orchestrator::orchestration::{Orchestrator, WorkflowRecord};
use orchestrator::prelude::*;
use orchestrator::runtime::Node;
use orchestrator::transport::Transport;
use orchestrator_examples::calculator::flows::AverageFlow;
use orchestrator_examples::calculator::{AverageInput, AverageV1, services};
use orchestrator_postgres::{PgConfig, PgStore, QueueConfig};

use common::child::{self, Rng, output};

const CHILD_SCHEMA: &str = "ORCHESTRATOR_PG_CRASH_SCHEMA";
const CHILD_NODE: &str = "ORCHESTRATOR_PG_CRASH_NODE";
const CLIENT: &str = "com.test.client";
const WORKFLOWS: usize = 1_200;
const KILLS: usize = 8;

fn config(url: &str, schema: &str) -> PgConfig {
    let node = std::env::var(CHILD_NODE).unwrap_or_else(|_| "crash-test-node".to_owned());
    PgConfig {
        url: url.to_owned(),
        schema: schema.to_owned(),
        lease_ttl: Duration::from_secs(30),
        retention: Retention::Keep,
        pool_size: 8,
        committers: 1,
        node: NodeId::new(node),
    }
}

/// Workflow `i`: a fixed subject and init id. It averages `i` and `i + 2`: the result is `i + 1`.
fn init_event(i: usize) -> Event {
    let accepts = AverageV1::versioned();
    let subject = Subject::builder(accepts.accepts().event_type(), accepts.version_str(), CLIENT)
        .execution_id(format!("crash-{i:04}"))
        .build()
        .expect("subject");
    let values = vec![i as f64, (i + 2) as f64];
    EventFactory::<AverageV1>::new()
        .init(
            AverageInput { values },
            Event::builder().source(CLIENT).id(format!("init-{i:04}")).orchestration_subject(&subject),
        )
        .expect("init event")
}

/// A connection of its own (the client's effects, the checks).
async fn connect(url: &str) -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls).await.expect("connect");
    tokio::spawn(connection);
    client
}

/// The client: records each completion (a redelivered completion, same id, counts as a
/// delivery, not as a second completion).
#[derive(Clone)]
struct Client {
    db: Arc<tokio_postgres::Client>,
    schema: String,
}

impl EventHandler for Client {
    fn source(&self) -> &str {
        CLIENT
    }

    async fn execute(&self, event: &Event) -> Result<Vec<Event>, Violation> {
        let average = event.data()["average"].as_f64().ok_or_else(|| Violation::contract("no average"))?;
        let sql = format!(
            "INSERT INTO \"{}\".completions (event_id, subject, average, deliveries) VALUES ($1, $2, $3, 1) \
             ON CONFLICT (event_id) DO UPDATE SET deliveries = completions.deliveries + 1",
            self.schema
        );
        self.db
            .execute(&sql, &[&event.id(), &event.subject(), &average])
            .await
            .map_err(|e| Violation::transaction(TransactionCause::WriteFailure, e.to_string()))?;
        Ok(Vec::new())
    }
}

async fn completed(db: &tokio_postgres::Client, schema: &str) -> usize {
    let sql = format!("SELECT count(DISTINCT subject) FROM \"{schema}\".completions");
    db.query_one(&sql, &[]).await.map_or(0, |row| usize::try_from(row.get::<_, i64>(0)).unwrap_or(0))
}

/// The child: runs the node until every workflow has completed.
#[test]
#[ignore = "the child process of `every_workflow_completes_exactly_once_across_kills`"]
fn crash_child() {
    let url = std::env::var("DATABASE_URL").expect("run by the crash test");
    let schema = std::env::var(CHILD_SCHEMA).expect("run by the crash test");
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    rt.block_on(async {
        let store: Arc<PgStore<WorkflowRecord>> =
            Arc::new(PgStore::open(config(&url, &schema)).await.unwrap());
        let db = Arc::new(connect(&url).await);
        let node = Node::builder(Arc::clone(&store))
            .durable()
            .transport(store.queue(QueueConfig { poll: Duration::from_millis(50), ..QueueConfig::default() }))
            .service(services::add().unwrap())
            .service(services::divide().unwrap())
            .service(Client { db: Arc::clone(&db), schema: schema.clone() })
            .orchestrator(Orchestrator::builder(Arc::clone(&store)).machine::<AverageFlow>())
            .on_dead_letter(|dead| println!("DEAD {}: {}", dead.event.id(), dead.reason))
            .build()
            .await
            .unwrap();
        println!("RUN");
        while completed(&db, &schema).await < WORKFLOWS {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        node.shutdown().await;
        println!("DELIVERED {}", node.dispatcher().stats().delivered);
        println!("ALL DONE");
    });
}

fn spawn_child(schema: &str) -> Child {
    spawn_child_as(schema, "crash-test-node")
}

fn spawn_child_as(schema: &str, node: &str) -> Child {
    child::spawn_test("crash_child", &[(CHILD_SCHEMA, schema), (CHILD_NODE, node)])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_workflow_completes_exactly_once_across_kills() {
    let Some(url) = common::database_url() else { return };
    let schema = common::fresh_schema();
    let seed = child::seed();
    let mut rng = Rng(seed);
    let db = prepare(&url, &schema).await;

    let mut killed = 0;
    let mut runs = Vec::new();
    for round in 0..KILLS {
        let before = completed(&db, &schema).await;
        let mut child = spawn_child(&schema);
        // Killed early (start-up, recovery) or once some of the remaining workflows completed.
        let early = round > 0 && rng.below(3) == 0;
        let wait_ms = 50 + rng.below(400);
        let target = before + 1 + rng.below(((WORKFLOWS - before) / 8).max(1) as u64) as usize;
        let started = Instant::now();
        let exited = loop {
            if child.try_wait().expect("the child's status").is_some() {
                break true;
            }
            let due = if early {
                started.elapsed() >= Duration::from_millis(wait_ms)
            } else {
                completed(&db, &schema).await >= target
            };
            if due || started.elapsed() > Duration::from_secs(60) {
                break false;
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        };
        if !exited {
            // SIGKILL: no destructor runs, whatever was in flight in memory is gone.
            child.kill().expect("kill the child");
            killed += 1;
        }
        let status = child.wait().expect("the child's exit");
        let out = output(&mut child);
        assert!(!out.contains("DEAD "), "a dead letter (seed {seed}):\n{out}");
        runs.push(format!("completed {} -> {}", before, completed(&db, &schema).await));
        if status.success() {
            break;
        }
    }
    // A last run, not killed, until every workflow has completed.
    let mut child = spawn_child(&schema);
    let deadline = Instant::now() + Duration::from_secs(180);
    let status = loop {
        if let Some(status) = child.try_wait().expect("the child's status") {
            break status;
        }
        if Instant::now() > deadline {
            child.kill().expect("kill the child");
            panic!("the last run did not finish (seed {seed}):\n{}", output(&mut child));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let out = output(&mut child);
    assert!(status.success() && out.contains("ALL DONE"), "the last run failed (seed {seed}):\n{out}");
    assert!(!out.contains("DEAD "), "a dead letter (seed {seed}):\n{out}");
    println!("{killed} kills; runs:\n  {}", runs.join("\n  "));
    assert!(killed >= 3, "the test must actually kill the child mid-run (seed {seed}): {killed} kills");

    check(&url, &schema, &db, seed).await;
    common::drop_schema(&url, &schema).await;
}

/// Starts every workflow durably up front (the queue holds the inits) and makes the table of
/// completions; returns a connection.
async fn prepare(url: &str, schema: &str) -> tokio_postgres::Client {
    {
        let store: PgStore<WorkflowRecord> = PgStore::open(config(url, schema)).await.expect("open");
        let queue = store.queue(QueueConfig::default());
        let inits: Vec<Event> = (0..WORKFLOWS).map(init_event).collect();
        queue.publish(inits).await.expect("start the workflows");
    }
    let db = connect(url).await;
    db.batch_execute(&format!(
        "CREATE TABLE \"{schema}\".completions (event_id TEXT PRIMARY KEY, subject TEXT NOT NULL, \
         average DOUBLE PRECISION NOT NULL, deliveries INTEGER NOT NULL)"
    ))
    .await
    .expect("the completions table");
    db
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_processes_share_the_work() {
    let Some(url) = common::database_url() else { return };
    let schema = common::fresh_schema();
    let db = prepare(&url, &schema).await;
    let mut children = [spawn_child_as(&schema, "worker-a"), spawn_child_as(&schema, "worker-b")];
    let deadline = Instant::now() + Duration::from_secs(180);
    let mut delivered = Vec::new();
    for child in &mut children {
        let status = loop {
            if let Some(status) = child.try_wait().expect("the child's status") {
                break status;
            }
            assert!(Instant::now() < deadline, "the workers did not finish:\n{}", output(child));
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        let out = output(child);
        assert!(status.success() && out.contains("ALL DONE"), "a worker failed:\n{out}");
        assert!(!out.contains("DEAD "), "a dead letter:\n{out}");
        let count = out
            .lines()
            .find_map(|l| l.find("DELIVERED ").map(|at| l[at + 10..].trim().to_owned()))
            .and_then(|n| n.split_whitespace().next().and_then(|n| n.parse::<u64>().ok()))
            .unwrap_or_else(|| panic!("the worker's count:\n{out}"));
        delivered.push(count);
    }
    let total: u64 = delivered.iter().sum();
    println!("deliveries handled by each process: {delivered:?} (of {total})");
    // Six deliveries per workflow (init, add, sum, divide, quotient, completion), plus the
    // few a worker handles again when another one's claim is given back.
    assert!(total >= 6 * WORKFLOWS as u64, "every delivery handled: {total}");
    for (i, n) in delivered.iter().enumerate() {
        assert!(*n * 10 >= total, "process {i} handled {n} of {total}: the work was not shared");
    }
    check(&url, &schema, &db, 0).await;
    common::drop_schema(&url, &schema).await;
}

/// Every workflow completed once with the right result; journal and state agree; nothing left.
async fn check(url: &str, schema: &str, db: &tokio_postgres::Client, seed: u64) {
    let store: PgStore<WorkflowRecord> = PgStore::open(config(url, schema)).await.expect("open");
    let queue = store.queue(QueueConfig::default());
    assert_eq!(queue.depth(10).await.expect("depth"), 0, "nothing left in the queue (seed {seed})");
    let left = db
        .query_one(&format!("SELECT count(*) FROM \"{schema}\".queue"), &[])
        .await
        .expect("count the queue")
        .get::<_, i64>(0);
    assert_eq!(left, 0, "no row left in the queue, claimed or not (seed {seed})");
    assert!(
        queue.dead_letters(0, 10).await.expect("dead letters").is_empty(),
        "no dead letter (seed {seed})"
    );
    let rows = db
        .query(&format!("SELECT subject, average, deliveries FROM \"{schema}\".completions"), &[])
        .await
        .expect("the completions");
    let redelivered = rows.iter().filter(|r| r.get::<_, i32>(2) > 1).count();
    println!("completions delivered more than once (same event id): {redelivered}");
    for i in 0..WORKFLOWS {
        let init = init_event(i);
        let subject = init.subject();
        let mine: Vec<f64> =
            rows.iter().filter(|r| r.get::<_, String>(0) == subject).map(|r| r.get::<_, f64>(1)).collect();
        assert_eq!(mine, [(i + 1) as f64], "workflow {i}: one completion, with the result (seed {seed})");
        let stored = store.read(subject).await.expect("read").expect("the workflow's state");
        assert!(stored.record.done, "workflow {i} is done");
        let journal = store.history(subject, 0, 100).await.expect("journal");
        let versions: Vec<u64> = journal.iter().map(|e| e.version).collect();
        assert_eq!(versions, (1..=stored.version).collect::<Vec<_>>(), "workflow {i}: gapless (seed {seed})");
        assert_eq!(journal.last().map(|e| &e.record), Some(&stored.record), "workflow {i}: journal = state");
        let consumed: Vec<&str> = journal.iter().filter_map(|e| e.consumed.as_ref().map(Event::id)).collect();
        let unique: HashSet<&str> = consumed.iter().copied().collect();
        assert_eq!(unique.len(), consumed.len(), "workflow {i}: an event consumed twice: {consumed:?}");
        let completions = journal.iter().flat_map(|e| &e.produced).filter(|e| e.to() == Some(CLIENT)).count();
        assert_eq!(completions, 1, "workflow {i}: completion events produced (seed {seed})");
    }
}
