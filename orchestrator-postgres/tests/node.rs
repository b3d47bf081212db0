//! Opening frees the leases a previous run of the same node left; other nodes' stay held.

mod common;

use std::time::Duration;

use orchestrator::memory::{Memory, NodeId, Retention};
use orchestrator_postgres::PgStore;

use common::{config, database_url, drop_schema, fresh_schema};

#[tokio::test]
async fn a_restarted_node_gets_its_leases_back() {
    let Some(url) = database_url() else { return };
    let schema = fresh_schema();
    let node = |name: &str| {
        let mut cfg = config(&url, &schema, Duration::from_secs(60), Retention::Keep);
        cfg.node = NodeId::new(name);
        cfg
    };
    let first: PgStore<String> = PgStore::open(node("node-a")).await.expect("open");
    let held = first.lock("wf-a").await.expect("lock").expect("free");
    let other: PgStore<String> = PgStore::open(node("node-b")).await.expect("open");
    let other_lease = other.lock("wf-b").await.expect("lock").expect("free");
    assert!(other.lock("wf-a").await.expect("lock").is_none(), "node-a's lease is held");
    drop(first); // node-a "crashes" without releasing.
    let restarted: PgStore<String> = PgStore::open(node("node-a")).await.expect("reopen");
    let again = restarted.lock("wf-a").await.expect("lock").expect("a restarted node's old leases are freed");
    assert!(again.token > held.token);
    assert!(restarted.lock("wf-b").await.expect("lock").is_none(), "another node's lease stays held");
    assert!(other.unlock(&other_lease).await.expect("unlock"));
    drop_schema(&url, &schema).await;
}
