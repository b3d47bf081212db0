//! Opening migrates once, again is harmless, a newer schema is refused, a schema written by
//! version 2 (with events in its outbox and a journal) is upgraded: its events are queued on
//! their lanes and delivered, its journal reads back; and a schema written by version 3 is
//! upgraded to the workflow index: every row (live and archived) gets its status and its root,
//! and later commits keep them. The functions every step runs are not planned at every call.

mod common;

use std::time::Duration;

use orchestrator::memory::{
    Commit, Journal, Materialized, Memory, MemoryExt, Retention, WorkflowState, WriteMeta,
};
use orchestrator::transport::{Delivery, Subscription, Topics, Transport};
use orchestrator_postgres::{OpenError, PgStore, QueueConfig, SCHEMA_VERSION};

use common::{config, database_url, drop_schema, fresh_schema, run_sql};

#[tokio::test]
async fn opening_twice_keeps_the_data() {
    let Some(url) = database_url() else { return };
    let schema = fresh_schema();
    let cfg = config(&url, &schema, Duration::from_secs(5), Retention::Keep);
    let first: PgStore<String> = PgStore::open(cfg.clone()).await.expect("open");
    first.write("wf", &"kept".to_owned(), None, None, &WriteMeta::new("wf", "test")).await.expect("write");
    let second: PgStore<String> = PgStore::open(cfg).await.expect("open again");
    assert_eq!(second.read("wf").await.expect("read").map(|s| s.record), Some("kept".to_owned()));
    drop_schema(&url, &schema).await;
}

#[tokio::test]
async fn concurrent_opens_migrate_once() {
    let Some(url) = database_url() else { return };
    let schema = fresh_schema();
    let cfg = config(&url, &schema, Duration::from_secs(5), Retention::Keep);
    let (a, b) = tokio::join!(PgStore::<String>::open(cfg.clone()), PgStore::<String>::open(cfg));
    a.expect("first open");
    b.expect("second open");
    drop_schema(&url, &schema).await;
}

#[tokio::test]
async fn a_newer_schema_is_refused() {
    let Some(url) = database_url() else { return };
    let schema = fresh_schema();
    let cfg = config(&url, &schema, Duration::from_secs(5), Retention::Keep);
    PgStore::<String>::open(cfg.clone()).await.expect("open");
    run_sql(&url, &format!("UPDATE \"{schema}\".schema_version SET version = {}", SCHEMA_VERSION + 1))
        .await
        .expect("bump the version");
    match PgStore::<String>::open(cfg).await {
        Err(OpenError::NewerSchema { found, supported }) => {
            assert_eq!((found, supported), (SCHEMA_VERSION + 1, SCHEMA_VERSION));
        }
        other => panic!("a newer schema must be refused, got {other:?}"),
    }
    drop_schema(&url, &schema).await;
}

#[tokio::test]
async fn a_version_2_schema_is_upgraded() {
    let Some(url) = database_url() else { return };
    let schema = fresh_schema();
    let quoted = format!("\"{schema}\"");
    let v2 = include_str!("fixtures/schema_v2.sql").replace("{s}", &quoted);
    run_sql(&url, &v2).await.expect("a version 2 schema");
    let event = orchestrator::event::Event::builder()
        .id("left-in-flight")
        .source("com.upgrade.client")
        .r#type("com.upgrade.step")
        .to("com.upgrade.step")
        .subject("upgrade-subject")
        .data_json(serde_json::json!({ "n": 1 }))
        .build()
        .expect("event");
    let json = serde_json::to_string(&event).expect("json").replace('\'', "''");
    run_sql(
        &url,
        &format!(
            "INSERT INTO {quoted}.outbox (event_id, event) VALUES ('left-in-flight', '{json}');
             INSERT INTO {quoted}.journal (wf, version, at_ms, produced, record)
             VALUES ('wf', 1, 0, '[]', '\"state\"'::jsonb);"
        ),
    )
    .await
    .expect("version 2 data");

    let cfg = config(&url, &schema, Duration::from_secs(5), Retention::Keep);
    let store: PgStore<String> = PgStore::open(cfg).await.expect("open upgrades");
    let history = store.history("wf", 0, 10).await.expect("the journal reads back");
    assert_eq!(history.iter().map(|e| e.record.as_str()).collect::<Vec<_>>(), ["state"]);
    let queue = store.queue(QueueConfig::default());
    let mut subscription = queue.subscribe(Topics::All).await.expect("subscribe");
    let delivery = tokio::time::timeout(Duration::from_secs(10), subscription.next())
        .await
        .expect("delivered within 10 s")
        .expect("a delivery");
    assert_eq!(delivery.event(), &event, "the event left in the outbox is queued and delivered");
    delivery.ack(vec![]).await.expect("ack");
    drop(subscription);
    drop_schema(&url, &schema).await;
}

/// `(id, status, root)` of every row of `table`, by id.
async fn index_columns(url: &str, table: &str) -> Vec<(String, String, Option<String>)> {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls).await.expect("connect");
    let task = tokio::spawn(connection);
    let rows =
        client.query(&format!("SELECT id, status, root FROM {table} ORDER BY id"), &[]).await.expect("query");
    drop(client);
    let _ = task.await;
    rows.iter().map(|r| (r.get(0), r.get(1), r.get(2))).collect()
}

fn row(id: &str, status: &str, root: &str) -> (String, String, Option<String>) {
    (id.to_owned(), status.to_owned(), Some(root.to_owned()))
}

#[tokio::test]
async fn a_version_3_schema_is_upgraded_to_the_workflow_index() {
    let Some(url) = database_url() else { return };
    let schema = fresh_schema();
    let quoted = format!("\"{schema}\"");
    let v3 = include_str!("fixtures/schema_v3.sql").replace("{s}", &quoted);
    run_sql(&url, &v3).await.expect("a version 3 schema");
    let record = |done: bool, failed: bool| {
        let status = if failed {
            r#""executionStatus":"failure","error":{"errorName":"Boom","errorMessage":"m","errorStack":null}"#
        } else {
            r#""executionStatus":"normal""#
        };
        format!(
            r#"'{{{status},"subject":"s","parentSubject":null,"initEventId":"i","done":{done},"state":null,"lastEventId":null}}'"#
        )
    };
    let (normal, done, failed) = (record(false, false), record(true, false), record(false, true));
    // r ← c ← g (live), r ← a (archived) ← x (live), o ← (its parent `gone` has no row), f and
    // t alone; t's record is not a workflow record (a store of strings).
    run_sql(
        &url,
        &format!(
            "INSERT INTO {quoted}.workflows (id, record, version, parent, initiator, source, wake_at) VALUES
                 ('r', {normal}, 1, NULL, 'client', 'orc.top', NULL),
                 ('c', {normal}, 1, 'r', 'orc.top', 'orc.mid', now() + interval '1 hour'),
                 ('g', {done}, 3, 'c', 'orc.mid', 'orc.leaf', NULL),
                 ('x', {normal}, 1, 'a', 'orc.mid', 'orc.leaf', NULL),
                 ('o', {normal}, 1, 'gone', 'orc.top', 'orc.mid', NULL),
                 ('f', {failed}, 2, NULL, 'client', 'orc.top', NULL),
                 ('t', '\"text\"', 1, NULL, NULL, 'me', NULL);
             INSERT INTO {quoted}.archive_workflows
                 (id, seq, record, version, parent, initiator, source, finished_at, created_at, updated_at)
             VALUES ('a', 100, {done}, 2, 'r', 'orc.top', 'orc.mid', now(), now(), now());"
        ),
    )
    .await
    .expect("version 3 data");

    let cfg = config(&url, &schema, Duration::from_secs(5), Retention::Archive);
    let store: PgStore<String> = PgStore::open(cfg).await.expect("open upgrades");
    assert_eq!(
        index_columns(&url, &format!("{quoted}.workflows")).await,
        [
            row("c", "waiting", "r"),
            row("f", "failed", "f"),
            row("g", "done", "r"),
            row("o", "active", "gone"),
            row("r", "active", "r"),
            row("t", "active", "t"),
            row("x", "active", "r"),
        ],
        "the live rows are backfilled"
    );
    assert_eq!(
        index_columns(&url, &format!("{quoted}.archive_workflows")).await,
        [row("a", "done", "r")],
        "the archived rows are backfilled"
    );

    // Commits after the upgrade: a new child of `g` takes r as its root and the status written;
    // an update writes its status; a finished workflow is archived with both columns.
    let child = WriteMeta {
        parent_subject: Materialized::Resolved(Some("g")),
        status: WorkflowState::Waiting,
        ..WriteMeta::new("n", "orc.leaf")
    };
    store.write("n", &"one".to_owned(), None, None, &child).await.expect("a new child");
    let update = WriteMeta { status: WorkflowState::Failed, ..WriteMeta::new("t", "me") };
    store.write("t", &"two".to_owned(), Some(1), None, &update).await.expect("an update");
    let done = WriteMeta { status: WorkflowState::Done, ..WriteMeta::new("n", "orc.leaf") };
    store
        .commit(Commit { finished: true, ..Commit::new("n", "three".to_owned(), Some(1), done) })
        .await
        .expect("finished");
    let live = index_columns(&url, &format!("{quoted}.workflows")).await;
    assert!(live.contains(&row("t", "failed", "t")), "{live:?}");
    assert!(!live.iter().any(|(id, ..)| id == "n"), "n is archived: {live:?}");
    assert_eq!(
        index_columns(&url, &format!("{quoted}.archive_workflows")).await,
        [row("a", "done", "r"), row("n", "done", "r")],
        "the archive keeps the status and the root"
    );
    drop_schema(&url, &schema).await;
}

/// The statements of the functions every step runs are planned once per connection, not at
/// every call: `commit_step` and `claim` use generic plans, and `minute_of` (which gives the
/// `touched_minute` of every workflow write) is inlined, not run as a function.
#[tokio::test]
async fn the_hot_functions_are_not_planned_at_every_call() {
    let Some(url) = database_url() else { return };
    let schema = fresh_schema();
    let store: PgStore<String> =
        PgStore::open(config(&url, &schema, Duration::from_secs(5), Retention::Keep)).await.expect("open");
    let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls).await.expect("connect");
    tokio::spawn(connection);
    for function in ["commit_step", "claim"] {
        let row = client
            .query_one(
                "SELECT p.proconfig FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace \
                 WHERE n.nspname = $1 AND p.proname = $2",
                &[&schema, &function],
            )
            .await
            .expect("the function");
        let settings: Option<Vec<String>> = row.get(0);
        assert!(
            settings.unwrap_or_default().iter().any(|s| s == "plan_cache_mode=force_generic_plan"),
            "{function} runs on generic plans"
        );
    }
    let plan = client
        .query(&format!("EXPLAIN VERBOSE SELECT \"{schema}\".minute_of(now())"), &[])
        .await
        .expect("explain");
    let plan: Vec<String> = plan.iter().map(|r| r.get(0)).collect();
    assert!(plan.iter().all(|line| !line.contains("minute_of")), "minute_of is inlined: {plan:#?}");
    assert!(plan.iter().any(|line| line.contains("floor")), "minute_of is inlined: {plan:#?}");
    drop(store);
    drop_schema(&url, &schema).await;
}
