//! Group commit: the settlements of concurrent steps share transactions, and one that fails
//! does not take the others with it.
//!
//! A first commit is held on a row lock taken by the test, so that the store's one committer is
//! busy while sixty more commits arrive: they wait for it and are committed in groups of up to
//! 32. One of the first group queues a product the database refuses (a 10 kB incompressible
//! subject, over the lane index's limit): the group's transaction is rolled back, its writes run
//! again alone, the faulty one gets its permanent error and every other one is written, once.
//! The database counts one rollback and far fewer commits than writes.

mod common;

use std::time::Duration;

use orchestrator::event::Event;
use orchestrator::memory::{Commit, Memory, MemoryError, OutboxStep, Retention, WriteMeta};
use orchestrator_postgres::PgStore;

use common::{config, database_url, drop_schema, fresh_schema};

const COMMITS: usize = 60;
const BAD: usize = 17;

fn product(i: usize, subject: &str) -> Event {
    Event::builder()
        .id(format!("product-{i}"))
        .source("com.group.orchestrator")
        .r#type("com.group.service")
        .to("com.group.service")
        .subject(subject)
        .data_json(serde_json::json!({ "i": i }))
        .build()
        .expect("event")
}

/// The transactions committed and rolled back in this database so far, as its statistics count
/// them (a backend publishes its counters at most once a second).
async fn transactions(client: &tokio_postgres::Client) -> (i64, i64) {
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    client.execute("SELECT pg_stat_clear_snapshot()", &[]).await.expect("clear the snapshot");
    let row = client
        .query_one(
            "SELECT xact_commit, xact_rollback FROM pg_stat_database WHERE datname = current_database()",
            &[],
        )
        .await
        .expect("pg_stat_database");
    (row.get(0), row.get(1))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_commit_does_not_take_its_group_down() {
    let Some(url) = database_url() else { return };
    let schema = fresh_schema();
    let mut settings = config(&url, &schema, Duration::from_secs(30), Retention::Keep);
    settings.committers = 1;
    let store: PgStore<String> = PgStore::open(settings).await.expect("open");
    let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls).await.expect("connect");
    tokio::spawn(connection);

    let random: String = (0..10_000).map(|_| fastrand::alphanumeric()).collect();
    let ids: Vec<String> = (0..COMMITS).map(|i| format!("wf-{i}")).collect();
    let products: Vec<Vec<Event>> =
        (0..COMMITS).map(|i| vec![product(i, if i == BAD { &random } else { &ids[i] })]).collect();

    // The blocker: written once, then held by the test's lock while its second commit waits.
    let blocker = "wf-blocker";
    let first =
        Commit::new(blocker, "blocker 1".to_owned(), None, WriteMeta::new(blocker, "com.group.orchestrator"));
    assert_eq!(store.commit(first).await.expect("the blocker's first commit"), 1);
    let (mut holder, holding) = tokio_postgres::connect(&url, tokio_postgres::NoTls).await.expect("connect");
    tokio::spawn(holding);
    let lock = holder.transaction().await.expect("begin");
    lock.execute(&format!("SELECT 1 FROM \"{schema}\".workflows WHERE id = $1 FOR UPDATE"), &[&blocker])
        .await
        .expect("lock the blocker's row");

    let (commits_before, rollbacks_before) = transactions(&client).await;
    let held = async {
        let second = Commit::new(
            blocker,
            "blocker 2".to_owned(),
            Some(1),
            WriteMeta::new(blocker, "com.group.orchestrator"),
        );
        store.commit(second).await
    };
    let commits = (0..COMMITS).map(|i| {
        let store = &store;
        let id = ids[i].as_str();
        let produced = products[i].as_slice();
        async move {
            let mut commit =
                Commit::new(id, format!("record {i}"), None, WriteMeta::new(id, "com.group.orchestrator"));
            commit.outbox = Some(OutboxStep { consumed: None, produced });
            store.commit(commit).await
        }
    });
    let release = async {
        // Long enough for the blocker to hold the committer and the others to queue behind it.
        tokio::time::sleep(Duration::from_millis(500)).await;
        lock.rollback().await.expect("release the lock");
    };
    let (held, results, ()) = tokio::join!(held, futures_util::future::join_all(commits), release);
    assert_eq!(held.expect("the blocker's second commit"), 2);
    let (commits_after, rollbacks_after) = transactions(&client).await;

    for (i, result) in results.iter().enumerate() {
        if i == BAD {
            match result {
                Err(e @ MemoryError::Backend { transient: false, .. }) => {
                    println!("the refused commit: {e}");
                }
                other => panic!("the commit with an oversize product must fail for good, got {other:?}"),
            }
        } else {
            assert_eq!(result.as_ref().ok(), Some(&1), "commit {i} is written at version 1");
        }
    }
    for (i, id) in ids.iter().enumerate() {
        let stored = store.read(id).await.expect("read");
        if i == BAD {
            assert!(stored.is_none(), "the refused commit wrote nothing");
        } else {
            assert_eq!(stored.map(|s| s.record), Some(format!("record {i}")), "commit {i}'s record");
        }
    }
    let queued: i64 = client
        .query_one(&format!("SELECT count(*) FROM \"{schema}\".queue"), &[])
        .await
        .expect("count the queue")
        .get(0);
    assert_eq!(queued, i64::try_from(COMMITS - 1).unwrap(), "every other commit queued its product, once");
    // The first group was rolled back (with the refused write's own second try); its writes ran
    // again alone (31 commits); the rest of the sixty shared one transaction; this test's own
    // statements count too. Without groups, sixty commits would count sixty transactions.
    let (spent, rolled_back) = (commits_after - commits_before, rollbacks_after - rollbacks_before);
    println!(
        "{COMMITS} commits after the blocker: {spent} transactions committed, {rolled_back} rolled back"
    );
    assert!(rolled_back >= 1, "the group with the refused write was not rolled back");
    assert!(spent < 45, "the commits were not grouped: {spent} transactions");

    drop_schema(&url, &schema).await;
}
