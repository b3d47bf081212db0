//! The queue passes the transport conformance suite of `orchestrator` against the server, with
//! per-lane exclusivity (`ordered`) and a depth of 8 (backpressure).

mod common;

use std::time::Duration;

use orchestrator::memory::Retention;
use orchestrator::transport::testing::{Profile, conformance};
use orchestrator_postgres::{PgStore, QueueConfig};

use common::{Schemas, database_url};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn queue_conformance() {
    let Some(url) = database_url() else { return };
    let schemas = Schemas::default();
    let config = QueueConfig {
        depth: 8,
        publish_timeout: Some(Duration::from_secs(30)),
        poll: Duration::from_millis(50),
        ..QueueConfig::default()
    };
    conformance(
        || {
            let store: PgStore<String> = schemas.open(&url, Duration::from_secs(30), Retention::Keep);
            store.queue(config.clone())
        },
        Profile { ordered: true, capacity: 8 },
    )
    .await;
    schemas.drop_all(&url).await;
}
