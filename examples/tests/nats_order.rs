//! The roles of `cargo run --example nats_order` over the real NATS server: the services and
//! the orchestrator each on a thread with a runtime, a connection and a store of its own, the
//! client on the test's runtime; every order completes once, with the status it should have, each
//! workflow's journal holds one entry per step, and nothing is left in the stream.
//!
//! Needs `NATS_URL` (skipped without it, mandatory under CI).

use std::future::Future;
use std::path::{Path, PathBuf};
use std::thread::JoinHandle;
use std::time::Duration;

use orchestrator::memory::{Journal, Memory};
use orchestrator::orchestration::WorkflowRecord;
use orchestrator::outbox::Outbox;
use orchestrator_examples::nats_order::{self, order};
use orchestrator_nats::NatsTransport;
use orchestrator_sqlite::SqliteConfig;
use tokio::sync::oneshot;

/// The URL in `NATS_URL`; `None` (after saying why) when unset outside CI.
fn nats_url() -> Option<String> {
    match std::env::var("NATS_URL") {
        Ok(url) if !url.is_empty() => Some(url),
        _ => {
            assert!(
                std::env::var_os("CI").is_none(),
                "NATS_URL is not set, and CI makes the NATS tests mandatory"
            );
            println!("skipping: NATS_URL is not set");
            None
        }
    }
}

/// Runs a role on a thread of its own, with its own runtime and connection, until `stop` fires.
fn role<F, Fut>(url: &str, deployment: &str, run: F) -> (oneshot::Sender<()>, JoinHandle<()>)
where
    F: FnOnce(NatsTransport, oneshot::Receiver<()>) -> Fut + Send + 'static,
    Fut: Future<Output = Result<(), nats_order::Error>>,
{
    let (stop, stopped) = oneshot::channel();
    let (url, deployment) = (url.to_owned(), deployment.to_owned());
    let thread = std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("a runtime");
        runtime.block_on(async move {
            let transport = nats_order::connect(&url, &deployment).await.expect("connect");
            run(transport, stopped).await.expect("the role ran");
        });
    });
    (stop, thread)
}

fn stop_and_join((stop, thread): (oneshot::Sender<()>, JoinHandle<()>)) {
    let _ = stop.send(());
    thread.join().expect("the role's thread ended well");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_order_roles_complete_every_order_once_over_nats() {
    let Some(url) = nats_url() else { return };
    let n = 30;
    let nanos =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.subsec_nanos());
    let deployment = format!("ORDERS_TEST_{:08X}_{nanos:08X}", std::process::id());
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path: PathBuf = dir.path().join("orchestrator").join("orders.sqlite");

    let services = role(&url, &deployment, |transport, stop| async move {
        nats_order::services(transport, async move { drop(stop.await) }).await
    });
    let orchestrator_path = path.clone();
    let orchestrator = role(&url, &deployment, move |transport, stop| async move {
        nats_order::orchestrator(transport, &orchestrator_path, async move { drop(stop.await) }).await
    });

    let transport = nats_order::connect(&url, &deployment).await.expect("connect");
    let report = nats_order::client(transport.clone(), n, Duration::from_secs(60), "test")
        .await
        .expect("the client ran");
    stop_and_join(orchestrator);
    stop_and_join(services);

    assert!(report.missing.is_empty(), "orders without a completion: {:?}", report.missing);
    assert_eq!(report.completed.len(), n);
    for (i, outcome) in report.completed.iter().enumerate() {
        let (input, expected) = order("test", i);
        assert_eq!(outcome.order_id, input.order_id, "the completions come in the order of the starts");
        assert_eq!(outcome.status, expected, "order {i}: {outcome:?}");
    }
    assert_eq!((report.count("shipped"), report.count("rejected")), (10, 20));
    check_store(&path, &report.subjects).await;
    assert_eq!(transport.waiting().await.expect("waiting"), 0, "nothing left in the stream");
    assert!(transport.dead_letters(0, 10).await.expect("dead letters").is_empty(), "no dead letters");
    transport.delete_streams().await.expect("the streams deleted");
}

/// Each order's workflow is done, with one journal entry per step (init, then one per service
/// answer: a step run twice would show), and the orchestrator's outbox is empty.
async fn check_store(path: &Path, subjects: &[String]) {
    let store = SqliteConfig::new(path).owner("the-test").open::<WorkflowRecord>().expect("the store");
    for (i, subject) in subjects.iter().enumerate() {
        let stored = store.read(subject).await.expect("read").expect("the workflow's state");
        assert!(stored.record.done, "order {i} is done");
        let steps = match i % 3 {
            0 => 4, // init, reserved, charged, shipped
            1 => 2, // init, out of stock
            _ => 3, // init, reserved, declined
        };
        let history = store.history(subject, 0, 100).await.expect("the journal");
        assert_eq!(history.len(), steps, "order {i}: one journal entry per step");
        assert_eq!(stored.version, steps as u64, "order {i}: one write per step");
    }
    let pending = store.pending(0, 1_000).await.expect("the outbox").len();
    assert_eq!(pending, 0, "nothing left in the orchestrator's outbox");
}
