//! Effects once across SIGKILLs: a child process runs a durable node over a `PgStore` and its
//! queue with a transactional handler (`PgStore::transactional_fn`) that writes one effect row
//! per run in its step's transaction; the child is killed at random moments, several times, and
//! some requests are published again once answered. At the end every request's effect was
//! applied exactly once, its answer is recorded once, and every reply the client received for it
//! is the recorded one (the same id).
//!
//! The test binary re-invokes itself: `effects_crash_child` (ignored in a normal run) is the
//! child. `CRASH_SEED=<n>` replays a sequence of kill moments.

mod common;

use std::process::Child;
use std::sync::Arc;
use std::time::{Duration, Instant};

use orchestrator::handler::EventHandler;
use orchestrator::memory::{NodeId, Retention};
use orchestrator::orchestration::WorkflowRecord;
use orchestrator::prelude::*;
use orchestrator::runtime::Node;
use orchestrator::transport::Transport;
use orchestrator_postgres::effects::EffectTx;
use orchestrator_postgres::{PgConfig, PgStore, QueueConfig};

use common::child::{self, Rng, output};

const CHILD_SCHEMA: &str = "ORCHESTRATOR_PG_EFFECTS_SCHEMA";
const SERVICE: &str = "com.test.deposit";
const CLIENT: &str = "com.test.client";
const REQUESTS: usize = 300;
const KILLS: usize = 6;

fn config(url: &str, schema: &str) -> PgConfig {
    PgConfig {
        url: url.to_owned(),
        schema: schema.to_owned(),
        lease_ttl: Duration::from_secs(30),
        retention: Retention::Keep,
        pool_size: 12,
        committers: 1,
        node: NodeId::new("effects-crash-node"),
    }
}

fn request(i: usize) -> Event {
    Event::builder()
        .id(format!("deposit-{i:04}"))
        .source(CLIENT)
        .r#type(SERVICE)
        .to(SERVICE)
        .subject(format!("account-{}", i % 17))
        .data_json(serde_json::json!({"cents": i}))
        .build()
        .expect("a request")
}

async fn connect(url: &str) -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls).await.expect("connect");
    tokio::spawn(connection);
    client
}

/// The client: counts the deliveries of each reply (by its id).
struct Client {
    db: Arc<tokio_postgres::Client>,
    schema: String,
}

impl EventHandler for Client {
    fn source(&self) -> &str {
        CLIENT
    }

    async fn execute(&self, event: &Event) -> Result<Vec<Event>, Violation> {
        let request = event.parentid().unwrap_or_default().to_owned();
        let sql = format!(
            "INSERT INTO \"{}\".replies (event_id, request, deliveries) VALUES ($1, $2, 1) \
             ON CONFLICT (event_id) DO UPDATE SET deliveries = replies.deliveries + 1",
            self.schema
        );
        self.db
            .execute(&sql, &[&event.id(), &request])
            .await
            .map_err(|e| Violation::transaction(TransactionCause::WriteFailure, e.to_string()))?;
        Ok(Vec::new())
    }
}

/// How many requests have a reply at the client.
async fn replied(db: &tokio_postgres::Client, schema: &str) -> usize {
    let sql = format!("SELECT count(DISTINCT request) FROM \"{schema}\".replies");
    db.query_one(&sql, &[]).await.map_or(0, |row| usize::try_from(row.get::<_, i64>(0)).unwrap_or(0))
}

/// The child: runs the node until every request has a reply and the queue is empty.
#[test]
#[ignore = "the child process of `effects_apply_once_across_kills`"]
fn effects_crash_child() {
    let url = std::env::var("DATABASE_URL").expect("run by the crash test");
    let schema = std::env::var(CHILD_SCHEMA).expect("run by the crash test");
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    rt.block_on(async {
        let store: Arc<PgStore<WorkflowRecord>> =
            Arc::new(PgStore::open(config(&url, &schema)).await.unwrap());
        let db = Arc::new(connect(&url).await);
        let effects = format!("INSERT INTO \"{schema}\".effects (request, cents) VALUES ($1, $2)");
        let deposit = store.transactional_fn(SERVICE, move |request: Event, tx: EffectTx| {
            let effects = effects.clone();
            async move {
                let write = |e: orchestrator_postgres::effects::EffectError| {
                    Violation::transaction(TransactionCause::WriteFailure, e.to_string())
                };
                let cents = request.data()["cents"].as_i64().unwrap_or(0);
                tx.execute(&effects, &[&request.id(), &cents]).await.map_err(write)?;
                // Some time between the write and the commit, for a kill to fall into.
                tokio::time::sleep(Duration::from_millis(fastrand::u64(0..4))).await;
                let reply = Event::builder()
                    .source(SERVICE)
                    .r#type("evt.test.deposit.success")
                    .to(request.source())
                    .subject(request.subject())
                    .parentid(request.id())
                    .data_json(serde_json::json!({"cents": cents}))
                    .build()
                    .map_err(|e| Violation::execution(e.to_string()))?;
                Ok(vec![reply])
            }
        });
        let node = Node::builder(Arc::clone(&store))
            .durable()
            .transport(store.queue(QueueConfig { poll: Duration::from_millis(50), ..QueueConfig::default() }))
            .service(deposit)
            .service(Client { db: Arc::clone(&db), schema: schema.clone() })
            .workers(16)
            .without_timers()
            .on_dead_letter(|dead| println!("DEAD {}: {}", dead.event.id(), dead.reason))
            .build()
            .await
            .unwrap();
        println!("RUN");
        let queued = format!("SELECT count(*) FROM \"{schema}\".queue");
        loop {
            let empty = db.query_one(&queued, &[]).await.is_ok_and(|row| row.get::<_, i64>(0) == 0);
            if empty && replied(&db, &schema).await >= REQUESTS {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        node.shutdown().await;
        println!("ALL DONE");
    });
}

fn spawn_child(schema: &str) -> Child {
    child::spawn_test("effects_crash_child", &[(CHILD_SCHEMA, schema)])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn effects_apply_once_across_kills() {
    let Some(url) = common::database_url() else { return };
    let schema = common::fresh_schema();
    let seed = child::seed();
    let mut rng = Rng(seed);
    let store: PgStore<WorkflowRecord> = PgStore::open(config(&url, &schema)).await.expect("open");
    let queue = store.queue(QueueConfig::default());
    let db = connect(&url).await;
    db.batch_execute(&format!(
        "CREATE TABLE \"{schema}\".effects (request TEXT NOT NULL, cents BIGINT NOT NULL);
         CREATE TABLE \"{schema}\".replies (event_id TEXT PRIMARY KEY, request TEXT NOT NULL,
                                            deliveries INTEGER NOT NULL);"
    ))
    .await
    .expect("the tables");
    queue.publish((0..REQUESTS).map(request).collect()).await.expect("the requests");

    let mut killed = 0;
    let mut mid_run = 0;
    let mut progress = Vec::new();
    for round in 0..KILLS {
        let before = replied(&db, &schema).await;
        let mut child = spawn_child(&schema);
        // Killed early (start-up, recovery) or once some of the remaining requests have their
        // reply: a moment judged by progress, not by the clock, so a fast machine cannot finish
        // every request before the first kill.
        // The first kill always falls mid-run.
        let early = round > 0 && rng.below(3) == 0;
        let wait = Duration::from_millis(50 + rng.below(300));
        let remaining = REQUESTS.saturating_sub(before);
        let target = before + 1 + usize::try_from(rng.below((remaining / 8).max(1) as u64)).unwrap_or(0);
        let started = Instant::now();
        let exited = loop {
            if child.try_wait().expect("the child's status").is_some() {
                break true;
            }
            let due = if early { started.elapsed() >= wait } else { replied(&db, &schema).await >= target };
            if due || started.elapsed() > Duration::from_secs(60) {
                break false;
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        };
        if !exited {
            // SIGKILL: the open transactions die with their connections.
            child.kill().expect("kill the child");
            killed += 1;
            let done = replied(&db, &schema).await;
            progress.push(done);
            if done > 0 && done < REQUESTS {
                mid_run += 1;
            }
        }
        let status = child.wait().expect("the child's exit");
        let out = output(&mut child);
        assert!(!out.contains("DEAD "), "a dead letter (seed {seed}):\n{out}");
        if round == 1 {
            // A publisher's retry: every request again (those still queued are skipped).
            queue.publish((0..REQUESTS).map(request).collect()).await.expect("the requests again");
        }
        if status.success() {
            break;
        }
    }
    // A last run, not killed.
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
    println!("{killed} kills; requests answered at each kill: {progress:?}");
    assert!(mid_run >= 1, "the test must kill the child mid-run (seed {seed}): {progress:?}");

    let s = format!("\"{schema}\"");
    let one = |sql: String| {
        let db = &db;
        async move { db.query_one(sql.as_str(), &[]).await.expect("a check").get::<_, i64>(0) }
    };
    let requests = i64::try_from(REQUESTS).unwrap_or(i64::MAX);
    assert_eq!(
        one(format!("SELECT count(DISTINCT request) FROM {s}.effects")).await,
        requests,
        "every effect"
    );
    assert_eq!(
        one(format!(
            "SELECT count(*) FROM (SELECT request FROM {s}.effects GROUP BY request HAVING count(*) > 1) d"
        ))
        .await,
        0,
        "every recorded effect applied once per request (seed {seed})"
    );
    assert_eq!(one(format!("SELECT count(*) FROM {s}.answers WHERE service = '{SERVICE}'")).await, requests);
    assert_eq!(
        one(format!(
            "SELECT count(*) FROM {s}.effects e LEFT JOIN {s}.answers a \
             ON a.service = '{SERVICE}' AND a.source = '{CLIENT}' AND a.id = e.request WHERE a.id IS NULL"
        ))
        .await,
        0,
        "every effect has its answer"
    );
    assert_eq!(
        one(format!(
            "SELECT count(*) FROM {s}.replies r JOIN {s}.answers a ON a.id = r.request \
             WHERE r.event_id <> (a.produced::jsonb -> 0 ->> 'id')"
        ))
        .await,
        0,
        "every reply the client received is the recorded answer (seed {seed})"
    );
    assert_eq!(one(format!("SELECT count(*) FROM {s}.queue")).await, 0, "nothing left queued");
    assert_eq!(one(format!("SELECT count(*) FROM {s}.dead_letters")).await, 0, "no dead letters");
    drop(queue);
    drop(store);
    common::drop_schema(&url, &schema).await;
}
