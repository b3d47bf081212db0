//! Which failures are transient: real PostgreSQL errors by SQLSTATE, and an undecodable record;
//! opening without a server fails.

mod common;

use std::time::Duration;

use orchestrator::memory::{Memory, MemoryError, MemoryExt, Retention, WriteMeta};
use orchestrator_postgres::{PgError, PgStore};

use common::{config, database_url, drop_schema, fresh_schema, run_sql};

/// The error PostgreSQL answers to a statement raising `code`.
async fn raised(url: &str, code: &str) -> tokio_postgres::Error {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls).await.expect("connect");
    let task = tokio::spawn(connection);
    let sql = format!("DO $$ BEGIN RAISE EXCEPTION 'raised' USING ERRCODE = '{code}'; END $$");
    let error = client.batch_execute(&sql).await.expect_err("the statement raises");
    drop(client);
    let _ = task.await;
    error
}

#[tokio::test]
async fn sqlstates_are_classified() {
    let Some(url) = database_url() else { return };
    for (code, transient) in [
        ("40001", true),  // serialization failure
        ("40P01", true),  // deadlock detected
        ("57P01", true),  // admin shutdown
        ("08006", true),  // connection failure
        ("23505", false), // unique violation
        ("22P02", false), // invalid text representation
        ("42P01", false), // undefined table
    ] {
        let error = PgError::from(raised(&url, code).await);
        assert_eq!(error.is_transient(), transient, "SQLSTATE {code}: {error}");
    }
}

#[tokio::test]
async fn an_undecodable_record_is_a_permanent_error() {
    let Some(url) = database_url() else { return };
    let schema = fresh_schema();
    let store: PgStore<String> =
        PgStore::open(config(&url, &schema, Duration::from_secs(5), Retention::Keep)).await.expect("open");
    store.write("bad", &"fine".to_owned(), None, None, &WriteMeta::new("bad", "test")).await.expect("write");
    run_sql(&url, &format!("UPDATE \"{schema}\".workflows SET record = '{{\"not\": \"a string\"}}'"))
        .await
        .expect("corrupt the record");
    match store.read("bad").await {
        Err(e @ MemoryError::Backend { transient: false, .. }) => assert!(!e.is_transient()),
        other => panic!("an undecodable record must be a permanent backend error, got {other:?}"),
    }
    drop_schema(&url, &schema).await;
}

#[tokio::test]
async fn opening_an_unreachable_server_fails() {
    let Some(_) = database_url() else { return };
    // Nothing listens on port 1 of the loopback: connecting fails at once.
    let cfg =
        config("postgres://postgres@127.0.0.1:1/test", "unused", Duration::from_secs(5), Retention::Keep);
    assert!(PgStore::<String>::open(cfg).await.is_err(), "opening needs the server");
}
