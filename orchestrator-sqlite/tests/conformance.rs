//! The backend conformance suites of `orchestrator::memory::testing`, each store on a fresh
//! temporary file.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use orchestrator::memory::DynMemory;
use orchestrator::memory::testing::{self, Settings};
use orchestrator_sqlite::{SqliteConfig, SqliteMemory, Synchronous};

/// Fresh stores in `dir`: a new file for each call.
fn factory(
    dir: &tempfile::TempDir,
    synchronous: Synchronous,
) -> impl Fn(Settings) -> SqliteMemory<String> + '_ {
    let n = AtomicUsize::new(0);
    move |s: Settings| {
        let path = dir.path().join(format!("db-{}.sqlite", n.fetch_add(1, Ordering::Relaxed)));
        SqliteConfig::new(path)
            .lease_ttl(s.lease_ttl)
            .retention(s.retention)
            .synchronous(synchronous)
            .open()
            .expect("open")
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conforms() {
    let dir = tempfile::tempdir().expect("temp dir");
    testing::conformance(factory(&dir, Synchronous::Full)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn its_journal_conforms() {
    let dir = tempfile::tempdir().expect("temp dir");
    testing::journal(factory(&dir, Synchronous::Full)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conforms_with_synchronous_normal() {
    let dir = tempfile::tempdir().expect("temp dir");
    testing::conformance(factory(&dir, Synchronous::Normal)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conforms_without_a_record_cache() {
    let dir = tempfile::tempdir().expect("temp dir");
    let n = AtomicUsize::new(0);
    testing::conformance(|s: Settings| {
        let path = dir.path().join(format!("db-{}.sqlite", n.fetch_add(1, Ordering::Relaxed)));
        SqliteConfig::new(path)
            .lease_ttl(s.lease_ttl)
            .retention(s.retention)
            .record_cache(0)
            .open::<String>()
            .expect("open")
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conforms_when_chosen_at_run_time() {
    let dir = tempfile::tempdir().expect("temp dir");
    let make = factory(&dir, Synchronous::Full);
    testing::conformance(|s| {
        let backend: Arc<dyn DynMemory<String>> = Arc::new(make(s));
        backend
    })
    .await;
}
