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
