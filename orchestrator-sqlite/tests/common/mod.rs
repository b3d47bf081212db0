//! Helpers shared by the integration tests.
#![allow(dead_code, unreachable_pub, missing_docs)]

use std::path::Path;
use std::time::Duration;

use orchestrator::event::Event;
use orchestrator_sqlite::{Retention, SqliteConfig, SqliteMemory};

/// A store on `path` with short lock retries.
pub fn store(path: &Path, ttl: Duration, retention: Retention) -> SqliteMemory<String> {
    SqliteConfig::new(path)
        .lease_ttl(ttl)
        .lock_retries(2, Duration::from_millis(5), 1.5)
        .retention(retention)
        .open()
        .expect("open the store")
}

/// A valid Arvo event with this id.
pub fn event(id: &str, subject: &str) -> Event {
    Event::builder()
        .id(id)
        .source("com.test.client")
        .r#type("com.test.event")
        .subject(subject)
        .data_json(serde_json::json!({ "n": id }))
        .build()
        .expect("a valid event")
}
