//! The store passes the conformance suites of `orchestrator` (memory, journal, outbox).

mod common;

use std::time::Duration;

use orchestrator::memory::Retention;
use orchestrator::memory::testing::{self, Settings};
use orchestrator_postgres::PgStore;

use common::{Schemas, database_url};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_conformance() {
    let Some(url) = database_url() else { return };
    let schemas = Schemas::default();
    testing::conformance(|s: Settings| schemas.open::<String>(&url, s.lease_ttl, s.retention)).await;
    schemas.drop_all(&url).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn journal_conformance() {
    let Some(url) = database_url() else { return };
    let schemas = Schemas::default();
    testing::journal(|s: Settings| schemas.open::<String>(&url, s.lease_ttl, s.retention)).await;
    schemas.drop_all(&url).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn outbox_conformance() {
    let Some(url) = database_url() else { return };
    let schemas = Schemas::default();
    orchestrator::outbox::testing::conformance(|| {
        let store: PgStore<String> = schemas.open(&url, Duration::from_secs(60), Retention::Keep);
        store
    })
    .await;
    schemas.drop_all(&url).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workflow_index_conformance() {
    let Some(url) = database_url() else { return };
    let schemas = Schemas::default();
    testing::index(|s: Settings| schemas.open::<String>(&url, s.lease_ttl, s.retention)).await;
    schemas.drop_all(&url).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn catalog_conformance() {
    let Some(url) = database_url() else { return };
    let schemas = Schemas::default();
    testing::catalog(|s: Settings| schemas.open::<String>(&url, s.lease_ttl, s.retention)).await;
    schemas.drop_all(&url).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_conformance() {
    let Some(url) = database_url() else { return };
    let schemas = Schemas::default();
    testing::answers(|s: Settings| schemas.open::<String>(&url, s.lease_ttl, s.retention)).await;
    schemas.drop_all(&url).await;
}
