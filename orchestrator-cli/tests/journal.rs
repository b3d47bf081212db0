//! `orchestrator history` and `orchestrator replay` on a SQLite store written by a real workflow.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;
use std::sync::Arc;

use orchestrator::event::Event;
use orchestrator::factory::EventFactory;
use orchestrator::orchestration::{Orchestrator, WorkflowRecord};
use orchestrator_examples::orders::{OrderFlow, OrderInput, OrderV1, services};
use serde_json::Value;

use common::{database_url, run, run_taught};

/// Runs one order to completion in a store at `db`; returns its subject.
fn one_order(db: &Path) -> String {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    rt.block_on(common::one_order(db))
}

#[test]
fn history_prints_the_timeline_and_replay_rebuilds_each_position() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("store.sqlite");
    let subject = one_order(&db);
    let db = db.to_str().unwrap();

    let out = run(&["history", db, &subject]);
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().filter(|l| l.starts_with('v')).collect();
    assert_eq!(lines.len(), 4, "{text}");
    assert!(lines[0].contains("arvo.orc.shop.order"), "{text}");
    assert!(text.contains("state   shipped  (done)"), "{text}");
    assert!(text.contains("emits   arvo.orc.shop.order.done -> com.test.cli"), "{text}");

    let json = run(&["history", db, &subject, "--json"]);
    let entries: Vec<Value> =
        String::from_utf8(json.stdout).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(entries.iter().map(|e| e["version"].as_u64().unwrap()).collect::<Vec<_>>(), [1, 2, 3, 4]);

    for (until, active) in [("1", "reserving"), ("2", "charging"), ("3", "shipping"), ("4", "shipped")] {
        let out = run_taught(&["replay", db, &subject, "--until", until], None);
        assert!(out.status.success(), "{out:?}");
        let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(doc["version"].as_u64(), until.parse().ok());
        assert_eq!(doc["state"]["value"][0], active);
        assert!(doc["replay"].as_str().unwrap().contains("every step matched the journal"), "{doc}");
    }
    let from = run_taught(&["replay", db, &subject, "--from", "3"], None);
    let doc: Value = serde_json::from_slice(&from.stdout).unwrap();
    assert_eq!(doc["replay"], "re-ran 1 execution(s); every step matched the journal");
    assert_eq!(doc["done"], true);

    // The plain binary was taught no machine: the journaled snapshot, and it says why.
    let out = run(&["replay", db, &subject, "--until", "2"]);
    assert!(out.status.success(), "{out:?}");
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["state"]["value"][0], "charging");
    let how = doc["replay"].as_str().unwrap();
    assert!(
        how.contains("was not taught orchestrator arvo.orc.shop.order") && how.contains("Tool::machine"),
        "{how}"
    );
}

#[test]
fn bad_stores_and_subjects_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.sqlite");
    let out = run(&["history", missing.to_str().unwrap(), "eJwz"]);
    assert_eq!(out.status.code(), Some(1));

    let db = dir.path().join("store.sqlite");
    let subject = one_order(&db);
    let db = db.to_str().unwrap();
    let out = run(&["history", db, "not-a-subject"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");

    let other = subject.replace('A', "B");
    let out = run(&["history", db, &other]);
    assert_ne!(out.status.code(), Some(0), "{out:?}");

    let out = run(&["replay", db, &subject, "--at", "yesterday"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("RFC 3339"), "{out:?}");

    let not_sqlite = dir.path().join("text.sqlite");
    std::fs::write(&not_sqlite, "hello").unwrap();
    let out = run(&["history", not_sqlite.to_str().unwrap(), &subject]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot open"), "{out:?}");
}

#[test]
fn history_and_replay_read_a_postgres_store_by_url() {
    let Some(url) = database_url() else { return };
    let schema = format!(
        "cli_{}_{}",
        std::process::id(),
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().subsec_nanos()
    );
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let subject = rt.block_on(async {
        let config = orchestrator_postgres::PgConfig {
            schema: schema.clone(),
            ..orchestrator_postgres::PgConfig::new(&url)
        };
        let store = Arc::new(orchestrator_postgres::PgStore::<WorkflowRecord>::open(config).await.unwrap());
        let node = orchestrator::runtime::Node::builder(Arc::clone(&store))
            .durable()
            .service(services::inventory().unwrap())
            .service(services::payment().unwrap())
            .service(services::shipping().unwrap())
            .orchestrator(Orchestrator::builder(Arc::clone(&store)).machine::<OrderFlow>())
            .client("com.test.cli")
            .build()
            .await
            .unwrap();
        let input =
            OrderInput { order_id: "o-1".into(), sku: "sku-1".into(), quantity: 1, amount_cents: 100 };
        let init =
            EventFactory::<OrderV1>::new().init(input, Event::builder().source("com.test.cli")).unwrap();
        let done = node.run(init.clone()).await.unwrap();
        assert_eq!(done.data()["status"], "shipped");
        node.shutdown().await;
        init.subject().to_owned()
    });

    let out = run(&["history", &url, &subject, "--schema", &schema]);
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(text.lines().filter(|l| l.starts_with('v')).count(), 4, "{text}");
    assert!(text.contains("state   shipped  (done)"), "{text}");
    let out = run_taught(&["replay", &url, &subject, "--schema", &schema, "--until", "2"], None);
    assert!(out.status.success(), "{out:?}");
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["state"]["value"][0], "charging");
    assert!(doc["replay"].as_str().unwrap().contains("every step matched the journal"), "{doc}");
    // Another schema has no such workflow: a clear error, not a crash.
    let out = run(&["history", &url, &subject, "--schema", &format!("{schema}_empty")]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no workflow with id or short id"), "{out:?}");
    // A short id (a prefix of the execution id) names the workflow too.
    let execution = orchestrator::subject::Subject::parse(&subject).unwrap().execution_id().to_owned();
    let out = run(&["history", &url, &execution[..8], "--schema", &schema]);
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(text.lines().filter(|l| l.starts_with('v')).count(), 4, "{text}");
    let out = run(&["replay", &url, &execution[..8], "--schema", &schema, "--until", "9"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("past the last version"), "{out:?}");

    rt.block_on(async {
        let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls).await.unwrap();
        let task = tokio::spawn(connection);
        for s in [schema.clone(), format!("{schema}_empty")] {
            client.batch_execute(&format!("DROP SCHEMA IF EXISTS \"{s}\" CASCADE")).await.unwrap();
        }
        drop(client);
        let _ = task.await;
    });
}
