//! Helpers shared by the integration tests.
#![allow(dead_code, unreachable_pub, missing_docs)]

use std::path::Path;
use std::time::Duration;

use orchestrator::event::Event;
use orchestrator::memory::EventKey;
use orchestrator_sqlite::{Retention, SqliteConfig, SqliteMemory};

/// A store on `path`.
pub fn store(path: &Path, ttl: Duration, retention: Retention) -> SqliteMemory<String> {
    SqliteConfig::new(path).lease_ttl(ttl).retention(retention).open().expect("open the store")
}

/// The identity of the event [`event`] makes with this id.
pub fn key(id: &str) -> EventKey<'_> {
    EventKey { source: SOURCE, id }
}

/// The source of the events [`event`] makes.
pub const SOURCE: &str = "com.test.client";

/// A valid Arvo event with this id.
pub fn event(id: &str, subject: &str) -> Event {
    Event::builder()
        .id(id)
        .source(SOURCE)
        .r#type("com.test.event")
        .subject(subject)
        .data_json(serde_json::json!({ "n": id }))
        .build()
        .expect("a valid event")
}

/// A workflow store shared by the orchestrators of a test.
pub type WorkflowStore = std::sync::Arc<SqliteMemory<orchestrator::orchestration::WorkflowRecord>>;

/// A workflow store on `path`, with the default settings.
pub fn workflow_store(path: &Path) -> WorkflowStore {
    std::sync::Arc::new(SqliteConfig::new(path).open().expect("open"))
}

/// An orchestrator of machine `M` over `store`.
pub fn orchestrator_of<M: orchestrator::machine::Machine>(
    store: &WorkflowStore,
) -> orchestrator::orchestration::Orchestrator<WorkflowStore> {
    orchestrator::orchestration::Orchestrator::builder(std::sync::Arc::clone(store))
        .machine::<M>()
        .build()
        .expect("an orchestrator")
}

/// The wall clock in ms since the Unix epoch.
pub fn now_ms() -> u64 {
    let since = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).expect("after 1970");
    u64::try_from(since.as_millis()).expect("in range")
}
