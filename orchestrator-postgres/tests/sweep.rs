//! The sweeper deletes lapsed leases (fencing still holds) and workflows past their removal delay.

mod common;

use std::time::Duration;

use orchestrator::memory::{Commit, Memory, MemoryError, MemoryExt, Retention, WriteMeta};
use orchestrator_postgres::PgStore;

use common::{config, database_url, drop_schema, fresh_schema};

#[tokio::test]
async fn sweep_reaps_lapsed_leases_and_due_removals() {
    let Some(url) = database_url() else { return };
    let schema = fresh_schema();
    let retention = Retention::RemoveAfter(Duration::from_millis(200));
    let store: PgStore<String> =
        PgStore::open(config(&url, &schema, Duration::from_millis(200), retention)).await.expect("open");
    let lapsing = store.lock("lapsing").await.expect("lock").expect("free");
    let done = store.lock("done").await.expect("lock").expect("free");
    let finish = Commit {
        release: true,
        finished: true,
        ..Commit::new("done", "end".to_owned(), None, WriteMeta::new("done", "test")).lease(Some(&done))
    };
    store.commit(finish).await.expect("finish");
    assert_eq!(store.sweep().await.expect("sweep"), (0, 0), "nothing has lapsed yet");
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(store.sweep().await.expect("sweep"), (1, 1), "one lapsed lease, one removal due");
    assert!(store.read("done").await.expect("read").is_none());
    match store
        .write("lapsing", &"late".to_owned(), None, Some(&lapsing), &WriteMeta::new("lapsing", "t"))
        .await
    {
        Err(MemoryError::StaleLease { .. }) => {}
        other => panic!("a reaped lease still fences, got {other:?}"),
    }
    let next = store.lock("lapsing").await.expect("lock").expect("free");
    assert!(next.token > lapsing.token, "tokens keep growing after a reap");
    drop_schema(&url, &schema).await;
}
