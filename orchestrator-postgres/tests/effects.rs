//! Effects once (`orchestrator_postgres::effects`): a transactional handler's writes commit with
//! its recorded answer and its delivery's settlement, or not at all; a redelivered request gets
//! the recorded answer without the handler running again.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use orchestrator::event::Event;
use orchestrator::handler::{Answered, EventHandler};
use orchestrator::memory::{AnswerKey, Answers, Retention};
use orchestrator::orchestration::WorkflowRecord;
use orchestrator::runtime::Node;
use orchestrator::transport::{Delivery, Subscription, Topics, Transport};
use orchestrator::violation::{TransactionCause, Violation};
use orchestrator_postgres::effects::{EffectError, EffectTx};
use orchestrator_postgres::{PgStore, QueueConfig};

use common::{config, database_url, drop_schema, fresh_schema};

const SERVICE: &str = "com.test.deposit";
const CLIENT: &str = "com.test.client";

/// What the handler does on its next run, after its write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Answers.
    Answer,
    /// Another consumer takes the delivery's claim before the step commits.
    StealClaim,
    /// Never returns (the process "dies" before the commit).
    Hang,
    /// Waits a little (for two runs to race).
    Slow,
}

struct Fixture {
    url: String,
    schema: String,
    store: Arc<PgStore<WorkflowRecord>>,
    runs: Arc<AtomicUsize>,
    mode: Arc<Mutex<Mode>>,
}

impl Fixture {
    async fn open(url: &str) -> Self {
        let schema = fresh_schema();
        let store = PgStore::open(config(url, &schema, Duration::from_secs(30), Retention::Keep))
            .await
            .expect("open");
        common::run_sql(
            url,
            &format!(
                "CREATE TABLE \"{schema}\".effects (request text NOT NULL);
                 CREATE TABLE \"{schema}\".counter (id int PRIMARY KEY, n int NOT NULL);
                 INSERT INTO \"{schema}\".counter VALUES (1, 0);"
            ),
        )
        .await
        .expect("the effect tables");
        Self {
            url: url.to_owned(),
            schema,
            store: Arc::new(store),
            runs: Arc::default(),
            mode: Arc::new(Mutex::new(Mode::Answer)),
        }
    }

    fn set(&self, mode: Mode) {
        *self.mode.lock().expect("mode") = mode;
    }

    /// The handler: counts its runs, writes one effect row and bumps the counter in the step's
    /// transaction, then acts by the mode, and answers with a reply with a fresh id.
    fn handler(&self) -> impl EventHandler + use<> {
        let (runs, mode, url, schema) =
            (Arc::clone(&self.runs), Arc::clone(&self.mode), self.url.clone(), self.schema.clone());
        self.store.transactional_fn(SERVICE, move |request: Event, tx: EffectTx| {
            let (runs, mode, url, schema) =
                (Arc::clone(&runs), Arc::clone(&mode), url.clone(), schema.clone());
            async move {
                let run = runs.fetch_add(1, Ordering::SeqCst) + 1;
                let write =
                    |e: EffectError| Violation::transaction(TransactionCause::WriteFailure, e.to_string());
                tx.execute(
                    &format!("INSERT INTO \"{schema}\".effects (request) VALUES ($1)"),
                    &[&request.id()],
                )
                .await
                .map_err(write)?;
                tx.execute(&format!("UPDATE \"{schema}\".counter SET n = n + 1 WHERE id = 1"), &[])
                    .await
                    .map_err(write)?;
                let now = *mode.lock().expect("mode");
                match now {
                    Mode::Answer => {}
                    Mode::StealClaim => {
                        let steal = format!(
                            "UPDATE \"{schema}\".queue SET token = token + 1000000 WHERE event_id = '{}'",
                            request.id().replace('\'', "''")
                        );
                        common::run_sql(&url, &steal).await.expect("steal the claim");
                    }
                    Mode::Hang => std::future::pending::<()>().await,
                    Mode::Slow => tokio::time::sleep(Duration::from_millis(300)).await,
                }
                Ok(vec![reply(&request, run)])
            }
        })
    }

    async fn count(&self, sql: &str) -> i64 {
        let (client, connection) =
            tokio_postgres::connect(&self.url, tokio_postgres::NoTls).await.expect("connect");
        let task = tokio::spawn(connection);
        let sql = sql.replace("{s}", &format!("\"{}\"", self.schema));
        let n: i64 = client.query_one(sql.as_str(), &[]).await.expect("count").get(0);
        drop(client);
        let _ = task.await;
        n
    }

    async fn effects(&self) -> i64 {
        self.count("SELECT count(*) FROM {s}.effects").await
    }

    async fn counter(&self) -> i64 {
        self.count("SELECT n::bigint FROM {s}.counter WHERE id = 1").await
    }

    async fn answers(&self) -> i64 {
        self.count("SELECT count(*) FROM {s}.answers").await
    }

    async fn queued(&self, event_id: &str) -> i64 {
        let id = event_id.replace('\'', "''");
        self.count(&format!("SELECT count(*) FROM {{s}}.queue WHERE event_id = '{id}'")).await
    }

    async fn remove(self) {
        let Self { url, schema, store, .. } = self;
        drop(store);
        drop_schema(&url, &schema).await;
    }
}

fn request(id: &str) -> Event {
    Event::builder()
        .id(id)
        .source(CLIENT)
        .r#type(SERVICE)
        .to(SERVICE)
        .subject("s-1")
        .data_json(serde_json::json!({"cents": 5}))
        .build()
        .expect("a request")
}

/// A reply with a fresh id: a second run would answer with another id.
fn reply(request: &Event, run: usize) -> Event {
    Event::builder()
        .source(SERVICE)
        .r#type("evt.test.deposit.success")
        .to(request.source())
        .subject(request.subject())
        .parentid(request.id())
        .data_json(serde_json::json!({"run": run}))
        .build()
        .expect("a reply")
}

fn queue_config() -> QueueConfig {
    QueueConfig { poll: Duration::from_millis(50), batch: 1, ..QueueConfig::default() }
}

async fn next<S: Subscription>(subscription: &mut S) -> S::Delivery {
    tokio::time::timeout(Duration::from_secs(10), subscription.next())
        .await
        .expect("a delivery in time")
        .expect("the queue is open")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_whose_claim_was_lost_applies_nothing_and_its_redelivery_applies_once() {
    let Some(url) = database_url() else { return };
    let f = Fixture::open(&url).await;
    let handler = f.handler();
    let queue = f.store.queue(queue_config());
    let mut subscription = queue.subscribe(Topics::Only(vec![SERVICE.to_owned()])).await.expect("subscribe");
    let ask = request("req-1");
    queue.publish(vec![ask.clone()]).await.expect("publish");

    // Another consumer takes the claim while the handler runs: nothing of the step commits.
    let delivery = next(&mut subscription).await;
    f.set(Mode::StealClaim);
    let lost = handler.execute(delivery.event()).await.expect_err("the claim was lost");
    assert!(lost.transaction_cause().is_some(), "transient, retried: {lost}");
    assert_eq!((f.effects().await, f.counter().await, f.answers().await), (0, 0, 0), "nothing applied");
    assert_eq!(f.queued(ask.id()).await, 1, "the request is still queued");
    drop(delivery);
    // The thief gives it back.
    common::run_sql(
        &url,
        &format!(
            "UPDATE \"{}\".queue SET claimed_by = NULL, token = NULL, claimed_until = NULL, visible_at = now()",
            f.schema
        ),
    )
    .await
    .expect("give the claim back");

    // Redelivered: applied once, with the answer and the settlement, in one transaction.
    f.set(Mode::Answer);
    let delivery = next(&mut subscription).await;
    let produced = handler.execute(delivery.event()).await.expect("answered");
    assert_eq!(f.queued(ask.id()).await, 0, "the step settled the delivery itself");
    assert_eq!(f.queued(produced[0].id()).await, 1, "and queued its products");
    delivery.ack(produced.clone()).await.expect("the ack has nothing left to do");
    assert_eq!((f.effects().await, f.counter().await, f.answers().await), (1, 1, 1));

    // Published again (a publisher's retry): the recorded answer, the handler does not run.
    let runs = f.runs.load(Ordering::SeqCst);
    queue.publish(vec![ask.clone()]).await.expect("publish again");
    let delivery = next(&mut subscription).await;
    let again = handler.execute(delivery.event()).await.expect("the recorded answer");
    assert_eq!(again, produced, "the same events, with the same ids");
    assert_eq!(f.runs.load(Ordering::SeqCst), runs, "the handler did not run again");
    delivery.ack(again).await.expect("ack");
    assert_eq!((f.effects().await, f.counter().await, f.answers().await), (1, 1, 1), "applied once");
    let recorded = f.store.answer(AnswerKey::of(SERVICE, &ask)).await.expect("read").expect("recorded");
    assert_eq!(recorded, produced, "the answer table holds the products as first emitted");
    queue.close();
    drop(subscription);
    f.remove().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_that_dies_before_its_commit_leaves_nothing() {
    let Some(url) = database_url() else { return };
    let f = Fixture::open(&url).await;
    let handler = f.handler();
    let queue = f.store.queue(queue_config());
    let mut subscription = queue.subscribe(Topics::Only(vec![SERVICE.to_owned()])).await.expect("subscribe");
    let ask = request("req-dies");
    queue.publish(vec![ask.clone()]).await.expect("publish");

    let delivery = next(&mut subscription).await;
    f.set(Mode::Hang);
    // The step is cut off after its writes (as a killed process would be).
    let cut = tokio::time::timeout(Duration::from_millis(500), handler.execute(delivery.event())).await;
    assert!(cut.is_err(), "the step hung");
    assert_eq!((f.effects().await, f.answers().await), (0, 0), "nothing committed");
    drop(delivery); // given back

    // If the cut-off transaction were still open, its lock on the counter would block this run.
    f.set(Mode::Answer);
    let delivery = next(&mut subscription).await;
    let produced = tokio::time::timeout(Duration::from_secs(10), handler.execute(delivery.event()))
        .await
        .expect("the dead step's transaction was rolled back, its locks released")
        .expect("answered");
    delivery.ack(produced).await.expect("ack");
    assert_eq!((f.effects().await, f.counter().await, f.answers().await), (1, 1, 1), "applied once");
    queue.close();
    drop(subscription);
    f.remove().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn racing_runs_of_one_request_apply_once_and_answer_alike() {
    let Some(url) = database_url() else { return };
    let f = Fixture::open(&url).await;
    let handler = Arc::new(f.handler());
    f.set(Mode::Slow);
    let ask = request("req-race");
    // Not deliveries of the queue: the answer's key alone keeps the effect once.
    let runs: Vec<_> = (0..3)
        .map(|_| {
            let (handler, ask) = (Arc::clone(&handler), ask.clone());
            tokio::spawn(async move { handler.execute(&ask).await })
        })
        .collect();
    let mut answers = Vec::new();
    for run in runs {
        answers.push(run.await.expect("a run").expect("answered"));
    }
    assert!(answers.windows(2).all(|w| w[0] == w[1]), "every run answers with the recorded answer");
    assert_eq!((f.effects().await, f.counter().await, f.answers().await), (1, 1, 1), "applied once");
    f.remove().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_is_refused_without_panics_and_without_effects() {
    let Some(url) = database_url() else { return };
    let f = Fixture::open(&url).await;
    let handler = f.handler();
    // An id too long for the answers' primary key (an incompressible 4 kB).
    let long: String = (0..4_000).map(|_| fastrand::alphanumeric()).collect();
    let refused = handler.execute(&request(&long)).await.expect_err("refused");
    assert!(refused.transaction_cause().is_none(), "for good: {refused}");
    assert_eq!((f.effects().await, f.answers().await), (0, 0), "its writes rolled back");
    // The same through the store's answers.
    let key = AnswerKey { service: SERVICE, source: CLIENT, id: &long };
    let error = f.store.record_answer(key, &[]).await.expect_err("refused");
    assert!(!error.is_transient(), "for good: {error}");
    // Ids with quotes and unicode are keys like any other.
    let odd = request("it's \"odd\" ✓ \\");
    let first = handler.execute(&odd).await.expect("answered");
    assert_eq!(handler.execute(&odd).await.expect("again"), first);
    assert_eq!(f.effects().await, 1);
    // Outside a transactional handler there is no transaction.
    assert!(matches!(EffectTx::current(), Err(EffectError::Outside)));
    f.remove().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn on_a_node_redelivered_requests_get_the_recorded_answers() {
    let Some(url) = database_url() else { return };
    let f = Fixture::open(&url).await;
    // A plain idempotent service next to the transactional one.
    let plain_runs = Arc::new(AtomicUsize::new(0));
    let plain = {
        let runs = Arc::clone(&plain_runs);
        Plain { runs }
    };
    let received: Arc<Mutex<Vec<Event>>> = Arc::default();
    let node = Node::builder(Arc::clone(&f.store))
        .durable()
        .transport(f.store.queue(queue_config()))
        .service(f.handler())
        .idempotent_service(plain)
        .service(Recorder { received: Arc::clone(&received) })
        .workers(8)
        .without_timers()
        .build()
        .await
        .expect("a node");
    let asks: Vec<Event> = (0..10).map(|n| request(&format!("node-{n}"))).collect();
    let plain_asks: Vec<Event> = (0..10).map(|n| plain_request(&format!("plain-{n}"))).collect();
    let wait_for = |n: usize| {
        let received = Arc::clone(&received);
        async move {
            tokio::time::timeout(Duration::from_secs(30), async {
                while received.lock().expect("received").len() < n {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            })
            .await
            .expect("every answer in time");
        }
    };
    let all: Vec<Event> = asks.iter().chain(&plain_asks).cloned().collect();
    node.transport().publish(all.clone()).await.expect("publish");
    wait_for(20).await;
    // Every request again, once handled: each gets its recorded answer.
    node.transport().publish(all).await.expect("publish again");
    wait_for(40).await;
    node.shutdown().await;

    assert_eq!(f.runs.load(Ordering::SeqCst), 10, "the transactional handler ran once per request");
    assert_eq!(plain_runs.load(Ordering::SeqCst), 10, "the idempotent service ran once per request");
    assert_eq!((f.effects().await, f.counter().await, f.answers().await), (10, 10, 20));
    let received = received.lock().expect("received").clone();
    for ask in asks.iter().chain(&plain_asks) {
        let replies: Vec<&Event> = received.iter().filter(|e| e.parentid() == Some(ask.id())).collect();
        assert_eq!(replies.len(), 2, "two answers to {}", ask.id());
        assert_eq!(replies[0], replies[1], "identical, same id, for {}", ask.id());
    }
    drop(node);
    f.remove().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idempotent_services_record_settles_its_delivery_in_the_same_statement() {
    let Some(url) = database_url() else { return };
    let f = Fixture::open(&url).await;
    let runs = Arc::new(AtomicUsize::new(0));
    let plain = Answered::new(Plain { runs: Arc::clone(&runs) }, Arc::clone(&f.store));
    let queue = f.store.queue(queue_config());
    let mut subscription = queue.subscribe(Topics::Only(vec![PLAIN.to_owned()])).await.expect("subscribe");

    let ask = plain_request("plain-1");
    queue.publish(vec![ask.clone()]).await.expect("publish");
    let delivery = next(&mut subscription).await;
    let produced = plain.execute(delivery.event()).await.expect("answered");
    assert_eq!(f.queued(ask.id()).await, 0, "the record settled the delivery");
    assert_eq!(f.queued(produced[0].id()).await, 1, "with its products");
    delivery.ack(produced.clone()).await.expect("the ack has nothing left to do");
    assert_eq!(f.answers().await, 1);

    // A record whose claim was lost meanwhile is kept, and settles nothing.
    let other = plain_request("plain-2");
    queue.publish(vec![other.clone()]).await.expect("publish");
    let delivery = next(&mut subscription).await;
    let steal =
        format!("UPDATE \"{}\".queue SET token = token + 1000000 WHERE event_id = 'plain-2'", f.schema);
    common::run_sql(&url, &steal).await.expect("steal the claim");
    let answer = plain.execute(delivery.event()).await.expect("recorded");
    assert_eq!(f.queued(other.id()).await, 1, "the thief's delivery is left alone");
    assert_eq!(f.queued(answer[0].id()).await, 0, "nothing enqueued");
    assert_eq!(f.answers().await, 2, "the answer is recorded: the thief's run will return it");
    assert_eq!(plain.execute(&other).await.expect("the thief's run"), answer);
    assert_eq!(runs.load(Ordering::SeqCst), 2, "each request ran once");
    drop(delivery);
    queue.close();
    drop(subscription);
    f.remove().await;
}

const PLAIN: &str = "com.test.plain";

fn plain_request(id: &str) -> Event {
    Event::builder()
        .id(id)
        .source(CLIENT)
        .r#type(PLAIN)
        .to(PLAIN)
        .subject("s-2")
        .data_json(serde_json::json!({}))
        .build()
        .expect("a request")
}

/// An idempotent service without a transaction: counts its runs, answers with a fresh id.
struct Plain {
    runs: Arc<AtomicUsize>,
}

impl EventHandler for Plain {
    fn source(&self) -> &str {
        PLAIN
    }

    async fn execute(&self, event: &Event) -> Result<Vec<Event>, Violation> {
        let run = self.runs.fetch_add(1, Ordering::SeqCst) + 1;
        Ok(vec![reply(event, run)])
    }
}

/// The client: keeps every answer it receives.
struct Recorder {
    received: Arc<Mutex<Vec<Event>>>,
}

impl EventHandler for Recorder {
    fn source(&self) -> &str {
        CLIENT
    }

    async fn execute(&self, event: &Event) -> Result<Vec<Event>, Violation> {
        self.received.lock().expect("received").push(event.clone());
        Ok(Vec::new())
    }
}
