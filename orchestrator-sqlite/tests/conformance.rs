//! The backend conformance suites of `orchestrator::memory::testing`, each store on a fresh
//! temporary file.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use orchestrator::memory::DynMemory;
use orchestrator::memory::testing::{self, Settings};
use orchestrator_sqlite::{SqliteConfig, SqliteMemory, Synchronous};

/// The suites check timings of a few hundred milliseconds (a denied lock answered at once, a
/// renewed lease, claims): they run one at a time, so that they do not compete for the CPU.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// A temporary directory for the suites' files: in `/dev/shm` (memory) when there is one. The
/// suites allow a few hundred milliseconds between a lock and a write under it; on a shared
/// machine an fsync to disk can stall that long (another process writing heavily), which would
/// fail them for reasons that are not the store's. The code path is the same (WAL, group commit,
/// `synchronous`); only the medium differs. The other tests use the default temporary directory.
fn temp_dir() -> tempfile::TempDir {
    let shm = std::path::Path::new("/dev/shm");
    if shm.is_dir()
        && let Ok(dir) = tempfile::tempdir_in(shm)
    {
        return dir;
    }
    tempfile::tempdir().expect("temp dir")
}

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
    let _serial = SERIAL.lock().await;
    let dir = temp_dir();
    testing::conformance(factory(&dir, Synchronous::Full)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn its_journal_conforms() {
    let _serial = SERIAL.lock().await;
    let dir = temp_dir();
    testing::journal(factory(&dir, Synchronous::Full)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conforms_with_synchronous_normal() {
    let _serial = SERIAL.lock().await;
    let dir = temp_dir();
    testing::conformance(factory(&dir, Synchronous::Normal)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conforms_without_a_record_cache() {
    let _serial = SERIAL.lock().await;
    let dir = temp_dir();
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
    let _serial = SERIAL.lock().await;
    let dir = temp_dir();
    let make = factory(&dir, Synchronous::Full);
    testing::conformance(|s| {
        let backend: Arc<dyn DynMemory<String>> = Arc::new(make(s));
        backend
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn its_workflow_index_conforms() {
    let _serial = SERIAL.lock().await;
    let dir = temp_dir();
    testing::index(factory(&dir, Synchronous::Full)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn its_catalog_conforms() {
    let _serial = SERIAL.lock().await;
    let dir = temp_dir();
    testing::catalog(factory(&dir, Synchronous::Full)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn its_answers_conform() {
    let _serial = SERIAL.lock().await;
    let dir = temp_dir();
    testing::answers(factory(&dir, Synchronous::Full)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn its_dead_letters_conform() {
    let _serial = SERIAL.lock().await;
    let dir = temp_dir();
    testing::dead_letters(factory(&dir, Synchronous::Full)).await;
}
