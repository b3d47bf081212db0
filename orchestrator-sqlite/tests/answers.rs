//! Recorded answers on a durable SQLite node: a request redelivered after a crash gets its
//! recorded answer without its service running again.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use orchestrator::event::Event;
use orchestrator::handler::EventHandler;
use orchestrator::memory::{AnswerKey, Answers};
use orchestrator::orchestration::WorkflowRecord;
use orchestrator::outbox::Outbox;
use orchestrator::runtime::Node;
use orchestrator::violation::Violation;
use orchestrator_sqlite::{SqliteConfig, SqliteMemory};

const SERVICE: &str = "com.test.charge";
const CLIENT: &str = "com.test.client";

/// Charges: counts its runs, answers with a fresh id each run.
struct Charge {
    runs: Arc<AtomicUsize>,
}

impl EventHandler for Charge {
    fn source(&self) -> &str {
        SERVICE
    }

    async fn execute(&self, event: &Event) -> Result<Vec<Event>, Violation> {
        let run = self.runs.fetch_add(1, Ordering::SeqCst) + 1;
        Ok(vec![receipt(event, run)])
    }
}

/// The client: keeps what it receives.
struct Client {
    received: Arc<Mutex<Vec<Event>>>,
}

impl EventHandler for Client {
    fn source(&self) -> &str {
        CLIENT
    }

    async fn execute(&self, event: &Event) -> Result<Vec<Event>, Violation> {
        self.received.lock().expect("received").push(event.clone());
        Ok(Vec::new())
    }
}

fn request(id: &str) -> Event {
    Event::builder()
        .id(id)
        .source(CLIENT)
        .r#type(SERVICE)
        .to(SERVICE)
        .subject("s-1")
        .data_json(serde_json::json!({}))
        .build()
        .expect("a request")
}

fn receipt(request: &Event, run: usize) -> Event {
    Event::builder()
        .source(SERVICE)
        .r#type("evt.test.charge.success")
        .to(CLIENT)
        .subject(request.subject())
        .parentid(request.id())
        .data_json(serde_json::json!({"run": run}))
        .build()
        .expect("a receipt")
}

async fn node(
    store: &Arc<SqliteMemory<WorkflowRecord>>,
    runs: &Arc<AtomicUsize>,
    received: &Arc<Mutex<Vec<Event>>>,
) -> Node<SqliteMemory<WorkflowRecord>, orchestrator::transport::InProcessTransport> {
    Node::builder(Arc::clone(store))
        .durable()
        .idempotent_service(Charge { runs: Arc::clone(runs) })
        .service(Client { received: Arc::clone(received) })
        .without_timers()
        .build()
        .await
        .expect("a node")
}

async fn wait_for(received: &Arc<Mutex<Vec<Event>>>, n: usize) {
    tokio::time::timeout(Duration::from_secs(20), async {
        while received.lock().expect("received").len() < n {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the answers in time");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_redelivered_after_a_crash_gets_its_recorded_answer() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let store: Arc<SqliteMemory<WorkflowRecord>> =
        Arc::new(SqliteConfig::new(dir.path().join("answers.sqlite")).open().expect("open"));
    let (runs, received) = (Arc::new(AtomicUsize::new(0)), Arc::new(Mutex::new(Vec::new())));

    // A first run charged and recorded its answer, then died before its outbox step: the request
    // is still in the outbox.
    let ask = request("req-1");
    let first = vec![receipt(&ask, 0)];
    store.record_answer(AnswerKey::of(SERVICE, &ask), &first).await.expect("the first run's record");
    store.advance(None, std::slice::from_ref(&ask)).await.expect("the request in flight");

    // The node starts, redelivers the request: it gets the recorded answer, nothing is charged.
    let node = node(&store, &runs, &received).await;
    assert_eq!(node.recovered(), 1, "the request was redelivered");
    wait_for(&received, 1).await;
    assert_eq!(runs.load(Ordering::SeqCst), 0, "not charged again");
    assert_eq!(received.lock().expect("received")[0], first[0], "the first run's receipt, same id");

    // A new request is charged once, however often it is delivered.
    let other = request("req-2");
    store.advance(None, std::slice::from_ref(&other)).await.expect("durably published");
    orchestrator::transport::Transport::publish(&**node.transport(), vec![other.clone()])
        .await
        .expect("publish");
    wait_for(&received, 2).await;
    store.advance(None, std::slice::from_ref(&other)).await.expect("published again");
    orchestrator::transport::Transport::publish(&**node.transport(), vec![other.clone()])
        .await
        .expect("again");
    wait_for(&received, 3).await;
    node.shutdown().await;
    assert_eq!(runs.load(Ordering::SeqCst), 1, "charged once");
    let received = received.lock().expect("received").clone();
    assert_eq!(received[1], received[2], "the same receipt twice, same id");
    assert!(store.pending(0, 10).await.expect("pending").is_empty(), "nothing left in flight");
}
