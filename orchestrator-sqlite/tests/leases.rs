//! Leases in one process: immediate denial, renewal, fencing, and the indexes the hot queries use.

mod common;

use std::time::{Duration, Instant};

use common::store;
use orchestrator::memory::{Lease, Memory, MemoryError, MemoryExt, WriteMeta};
use orchestrator_sqlite::{Retention, SqliteConfig};

#[tokio::test]
async fn a_held_lease_is_denied_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let m = SqliteConfig::new(dir.path().join("l.db")).open::<String>().unwrap();
    let held = m.lock("x").await.unwrap().unwrap();
    let before = m.stats().operations;
    let started = Instant::now();
    assert!(m.lock("x").await.unwrap().is_none(), "denied is Ok(None)");
    let key = common::key("e");
    assert!(m.acquire("x", key, true).await.unwrap().is_none(), "acquire is denied too");
    let elapsed = started.elapsed();
    // One attempt each (one writer operation), no waiting: the caller retries.
    assert_eq!(m.stats().operations - before, 2, "one writer operation per attempt");
    assert!(elapsed < Duration::from_millis(500), "{elapsed:?}");
    assert!(m.unlock(&held).await.unwrap());
}

#[tokio::test]
async fn a_renewed_lease_outlives_its_first_ttl_and_a_lapsed_one_cannot_be_renewed() {
    let dir = tempfile::tempdir().unwrap();
    let m = store(&dir.path().join("renew.db"), Duration::from_millis(600), Retention::Keep);
    let lease = m.lock("wf").await.unwrap().unwrap();
    tokio::time::sleep(Duration::from_millis(400)).await;
    let renewed = m.renew(&lease).await.unwrap();
    assert_eq!(renewed.token, lease.token);
    assert!(renewed.expires_at > lease.expires_at);
    // 800 ms after locking with a 600 ms TTL: held only thanks to the renewal.
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert!(m.lock("wf").await.unwrap().is_none(), "still held thanks to the renewal");
    m.write("wf", &"x".into(), None, Some(&renewed), &WriteMeta::new("wf", "s")).await.unwrap();
    let wrong = Lease { token: lease.token + 1, ..renewed.clone() };
    assert!(matches!(m.renew(&wrong).await, Err(MemoryError::StaleLease { .. })), "another token");
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert!(matches!(m.renew(&renewed).await, Err(MemoryError::StaleLease { .. })), "lapsed");
}

#[tokio::test]
async fn tokens_are_fenced_per_workflow_and_grow_globally() {
    let dir = tempfile::tempdir().unwrap();
    let m = store(&dir.path().join("t.db"), Duration::from_secs(60), Retention::Remove);
    let mut last = 0;
    for id in ["a", "b", "a", "c", "b"] {
        let lease = m.lock(id).await.unwrap().unwrap();
        assert!(lease.token > last, "{} after {last}", lease.token);
        last = lease.token;
        m.unlock(&lease).await.unwrap();
    }
    // A lease of another workflow cannot write this one.
    let a = m.lock("a").await.unwrap().unwrap();
    let b = m.lock("b").await.unwrap().unwrap();
    let wrong = Lease { id: "b".to_owned(), ..a.clone() };
    assert!(matches!(
        m.write("a", &"x".into(), None, Some(&wrong), &WriteMeta::new("a", "s")).await,
        Err(MemoryError::StaleLease { .. })
    ));
    assert!(matches!(
        m.write("a", &"x".into(), None, Some(&b), &WriteMeta::new("a", "s")).await,
        Err(MemoryError::StaleLease { .. })
    ));
    m.write("a", &"x".into(), None, Some(&a), &WriteMeta::new("a", "s")).await.unwrap();
}

#[tokio::test]
async fn an_expired_lease_cannot_write_even_if_nobody_took_it() {
    let dir = tempfile::tempdir().unwrap();
    let m = store(&dir.path().join("e.db"), Duration::from_millis(50), Retention::Keep);
    let lease = m.lock("wf").await.unwrap().unwrap();
    tokio::time::sleep(Duration::from_millis(80)).await;
    assert!(matches!(
        m.write("wf", &"late".into(), None, Some(&lease), &WriteMeta::new("wf", "s")).await,
        Err(MemoryError::StaleLease { .. })
    ));
    assert!(!m.unlock(&lease).await.unwrap(), "releasing an expired lease reports false");
}

#[test]
fn the_hot_queries_use_their_indexes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("q.db");
    drop(SqliteConfig::new(&path).open::<String>().unwrap());
    let raw = rusqlite::Connection::open(&path).unwrap();
    let plan = |sql: &str| -> String {
        let mut stmt = raw.prepare(&format!("EXPLAIN QUERY PLAN {sql}")).unwrap();
        let rows: Vec<String> =
            stmt.query_map([], |r| r.get::<_, String>(3)).unwrap().map(Result::unwrap).collect();
        rows.join("; ")
    };
    let due = plan(
        "SELECT id, wake_at_ms FROM workflows WHERE wake_at_ms IS NOT NULL AND wake_at_ms <= 5 \
         ORDER BY wake_at_ms, id LIMIT 10",
    );
    assert!(due.contains("workflows_wake") && !due.contains("TEMP B-TREE"), "{due}");
    let claims = plan(
        "SELECT seq, id, wake_at_ms FROM workflows WHERE wake_at_ms IS NOT NULL AND wake_at_ms <= 5 \
         AND (claimed_until_ms IS NULL OR claimed_until_ms <= 5) ORDER BY wake_at_ms, id LIMIT 10",
    );
    assert!(claims.contains("workflows_wake") && !claims.contains("TEMP B-TREE"), "{claims}");
    let produced = plan(
        "SELECT j.version, j.events FROM journal j INDEXED BY journal_consumed WHERE j.wf = \
         (SELECT seq FROM workflows WHERE substr(id, -16) = substr('a', -16) AND id = 'a') \
         AND j.consumed_key = 7 ORDER BY j.version",
    );
    assert!(produced.contains("journal_consumed") && !produced.contains("TEMP B-TREE"), "{produced}");
    let history = plan(
        "SELECT j.version, j.at_ms, j.events, j.record FROM journal j WHERE j.wf = \
         (SELECT seq FROM workflows WHERE substr(id, -16) = substr('a', -16) AND id = 'a') \
         AND j.version > 3 ORDER BY j.version LIMIT 10",
    );
    assert!(history.contains("journal_version") && !history.contains("TEMP B-TREE"), "{history}");
    // Rebuilding a record: back from a version to the snapshot before it.
    let chain = plan(
        "SELECT j.version, j.record FROM journal j WHERE j.wf = \
         (SELECT seq FROM workflows WHERE substr(id, -16) = substr('a', -16) AND id = 'a') \
         AND j.version <= 3 ORDER BY j.version DESC",
    );
    assert!(chain.contains("journal_version") && !chain.contains("TEMP B-TREE"), "{chain}");
    // A workflow is found by the end of its id (schema 16), in every one of these.
    let record =
        plan("SELECT version, record FROM workflows WHERE substr(id, -16) = substr('a', -16) AND id = 'a'");
    for plan in [&record, &produced, &history, &chain] {
        assert!(plan.contains("USING INDEX workflows_id"), "{plan}");
    }
    let children = plan("SELECT id FROM workflows WHERE parent_subject = 'p' ORDER BY seq");
    assert!(children.contains("workflows_parent") && !children.contains("TEMP B-TREE"), "{children}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_under_the_same_owner_frees_what_its_crashed_run_held() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("owner.db");
    let open = |owner: Option<&str>| {
        let config = SqliteConfig::new(&path).lease_ttl(Duration::from_secs(60));
        match owner {
            Some(owner) => config.owner(owner),
            None => config,
        }
        .open::<String>()
        .unwrap()
    };
    {
        let crashed = open(Some("node-a"));
        assert!(crashed.lock("wf").await.unwrap().is_some());
        assert!(crashed.lock("other").await.unwrap().is_some());
        // Dropped without unlocking, as a killed process would leave it.
    }
    assert!(
        open(None).lock("wf").await.unwrap().is_none(),
        "without an owner, the lease holds until its TTL"
    );
    assert!(open(Some("node-b")).lock("wf").await.unwrap().is_none(), "another owner's lease holds");
    let restarted = open(Some("node-a"));
    let lease = restarted.lock("wf").await.unwrap().expect("node-a's own stale lease was released on open");
    assert!(restarted.lock("other").await.unwrap().is_some());
    // The new run's leases are its own: another open under node-b still cannot take them.
    assert!(open(Some("node-b")).lock("wf").await.unwrap().is_none());
    assert!(restarted.unlock(&lease).await.unwrap());
}
