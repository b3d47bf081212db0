//! The backend conformance suite of `orchestrator::memory::testing`, on temporary files.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use orchestrator::memory::DynMemory;
use orchestrator_sqlite::{Retention, SqliteConfig, Synchronous};

async fn run(retention: Retention, synchronous: Synchronous) {
    let dir = tempfile::tempdir().expect("temp dir");
    let n = AtomicUsize::new(0);
    orchestrator::memory::testing::conformance(|ttl| {
        let path = dir.path().join(format!("db-{}.sqlite", n.fetch_add(1, Ordering::Relaxed)));
        SqliteConfig::new(path)
            .lease_ttl(ttl)
            .lock_retries(2, Duration::from_millis(5), 1.5)
            .retention(retention)
            .synchronous(synchronous)
            .open::<String>()
            .expect("open")
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conforms_with_every_retention() {
    for retention in [
        Retention::Keep,
        Retention::Remove,
        Retention::RemoveAfter(Duration::from_millis(10)),
        Retention::Archive,
    ] {
        run(retention, Synchronous::Full).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conforms_with_synchronous_normal() {
    run(Retention::Remove, Synchronous::Normal).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conforms_when_chosen_at_run_time() {
    let dir = tempfile::tempdir().expect("temp dir");
    let n = AtomicUsize::new(0);
    orchestrator::memory::testing::conformance(|ttl| {
        let path = dir.path().join(format!("db-{}.sqlite", n.fetch_add(1, Ordering::Relaxed)));
        let store = common::store(&path, ttl, Retention::Remove);
        let backend: Arc<dyn DynMemory<String>> = Arc::new(store);
        backend
    })
    .await;
}
