//! `orchestrator workflows list` on a SQLite store (a real order run to its end, and workflows
//! written with their statuses), and on a PostgreSQL store by URL when `DATABASE_URL` is set.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::process::Output;
use std::time::Duration;

use orchestrator::memory::{Materialized, Memory, MemoryExt, WorkflowState, WriteMeta};
use orchestrator::subject::Subject;
use orchestrator_sqlite::SqliteMemory;
use serde_json::Value;

use common::{database_url, one_order, run, stdout};

fn json_lines(out: &Output) -> Vec<Value> {
    stdout(out).lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

/// Three workflows written with their subjects and statuses, a few milliseconds apart: the
/// subjects, oldest first.
async fn write_three<M: Memory<String>>(store: &M) -> Vec<Subject> {
    let subjects = [
        Subject::builder("arvo.orc.cli.alpha", "1.0.0", "com.test.cli")
            .execution_id("1111aaaa-cli")
            .meta("tenant", "acme")
            .build()
            .unwrap(),
        Subject::builder("arvo.orc.cli.alpha", "2.0.0", "com.test.cli")
            .execution_id("2222bbbb-cli")
            .meta("tenant", "globex")
            .build()
            .unwrap(),
        Subject::builder("arvo.orc.cli.beta", "1.0.0", "com.test.other")
            .execution_id("3333cccc-cli")
            .meta("tenant", "acme")
            .build()
            .unwrap(),
    ];
    let statuses = [WorkflowState::Done, WorkflowState::Failed, WorkflowState::Active];
    for (subject, status) in subjects.iter().zip(statuses) {
        let meta = WriteMeta {
            parent_subject: Materialized::Resolved(None),
            initiator: Materialized::Resolved(subject.initiator()),
            status,
            ..WriteMeta::new(subject.as_str(), subject.orchestrator_name())
        };
        store.write(subject.as_str(), &"x".to_owned(), None, None, &meta).await.unwrap();
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    subjects.to_vec()
}

#[test]
fn lists_filters_and_counts_a_sqlite_store() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("store.sqlite");
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let (order, subjects) = rt.block_on(async {
        let order = one_order(&db).await;
        tokio::time::sleep(Duration::from_millis(5)).await;
        let store = SqliteMemory::<String>::open_path(&db).unwrap();
        (order, write_three(&store).await)
    });
    let db = db.to_str().unwrap();

    // The table: a header, then the workflows newest first.
    let text = stdout(&run(&["workflows", "list", db]));
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 5, "{text}");
    assert!(lines[0].starts_with("ID") && lines[0].contains("ORCHESTRATOR") && lines[0].contains("STATUS"));
    assert!(lines[1].starts_with("3333cccc") && lines[1].contains("arvo.orc.cli.beta@1.0.0"), "{text}");
    assert!(lines[1].contains("active") && lines[1].contains("com.test.other"), "{text}");
    assert!(lines[2].starts_with("2222bbbb") && lines[2].contains("failed"), "{text}");
    assert!(lines[3].starts_with("1111aaaa") && lines[3].contains("done"), "{text}");
    assert!(lines[4].contains("arvo.orc.shop.order@") && lines[4].contains("done"), "the real order: {text}");

    // JSON lines, by status.
    let failed = json_lines(&run(&["workflows", "list", db, "--status", "failed", "--json"]));
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0]["id"], subjects[1].as_str());
    assert_eq!(failed[0]["orchestrator_version"], "2.0.0");
    assert_eq!(failed[0]["meta"]["tenant"], "globex");
    let done = json_lines(&run(&["workflows", "list", db, "--status", "done", "--json"]));
    let ids: Vec<&str> = done.iter().map(|w| w["id"].as_str().unwrap()).collect();
    assert_eq!(ids, [subjects[0].as_str(), order.as_str()]);

    // By orchestrator, meta and time; counts.
    let count = |args: &[&str]| {
        let mut all = vec!["workflows", "list", db, "--count"];
        all.extend(args);
        stdout(&run(&all)).trim().to_owned()
    };
    assert_eq!(count(&[]), "4");
    assert_eq!(count(&["--orchestrator", "arvo.orc.cli.alpha"]), "2");
    assert_eq!(count(&["--orchestrator", "arvo.orc.cli.alpha", "--orchestrator-version", "1.0.0"]), "1");
    assert_eq!(count(&["--meta", "tenant=acme"]), "2");
    assert_eq!(count(&["--meta", "tenant=acme", "--status", "active"]), "1");
    assert_eq!(count(&["--initiator", "com.test.other"]), "1");
    assert_eq!(count(&["--since", "1h"]), "4");
    assert_eq!(count(&["--since", "2999-01-01T00:00:00Z"]), "0");
    assert_eq!(stdout(&run(&["workflows", "list", db, "--count", "--json"])).trim(), r#"{"count":4}"#);
    let acme =
        json_lines(&run(&["workflows", "list", &format!("sqlite:{db}"), "--meta", "tenant=acme", "--json"]));
    let ids: Vec<&str> = acme.iter().map(|w| w["id"].as_str().unwrap()).collect();
    assert_eq!(ids, [subjects[2].as_str(), subjects[0].as_str()], "sqlite:PATH names the same store");

    // Created before, updated since.
    assert_eq!(count(&["--until", "2999-01-01T00:00:00Z"]), "4");
    assert_eq!(count(&["--until", "1h"]), "0");
    assert_eq!(count(&["--updated-since", "1h"]), "4");
    assert_eq!(count(&["--updated-since", "2999-01-01T00:00:00Z"]), "0");

    // A limit says when more match, and how to get the next page.
    let text = stdout(&run(&["workflows", "list", db, "--limit", "1"]));
    assert_eq!(text.lines().count(), 3, "{text}");
    assert!(text.contains("more workflows match: the next page is --after 3333cccc"), "{text}");
    let mut pages = Vec::new();
    let mut after: Option<String> = None;
    loop {
        let mut args = vec!["workflows", "list", db, "--limit", "2", "--json"];
        if let Some(after) = &after {
            args.extend(["--after", after.as_str()]);
        }
        let page = json_lines(&run(&args));
        let Some(last) = page.last() else { break };
        after = Some(last["short_id"].as_str().unwrap().to_owned());
        pages.extend(page.iter().map(|w| w["id"].as_str().unwrap().to_owned()));
        assert!(pages.len() <= 4, "{pages:?}");
    }
    let all: Vec<String> = json_lines(&run(&["workflows", "list", db, "--json"]))
        .iter()
        .map(|w| w["id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(pages, all, "the pages, one after another, are the whole list, newest first");
    let out = run(&["workflows", "list", db, "--after", "ffffffff"]);
    assert_eq!(out.status.code(), Some(1), "an unknown --after is an error: {out:?}");
}

#[test]
fn a_missing_store_or_a_bad_option_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.sqlite");
    for store in [missing.to_str().unwrap().to_owned(), format!("sqlite:{}", missing.display())] {
        let out = run(&["workflows", "list", &store]);
        assert_eq!(out.status.code(), Some(1), "{out:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("does not exist") && stderr.contains("missing.sqlite"), "{stderr}");
        assert!(!missing.exists(), "the store is not created");
    }
    let db = dir.path().join("store.sqlite");
    drop(SqliteMemory::<String>::open_path(&db).unwrap());
    let db = db.to_str().unwrap();
    for bad in [
        &["--status", "running"][..],
        &["--meta", "tenant"],
        &["--since", "yesterday"],
        &["--until", "soon"],
        &["--limit", "0"],
    ] {
        let mut args = vec!["workflows", "list", db];
        args.extend(bad);
        let out = run(&args);
        assert_eq!(out.status.code(), Some(2), "{bad:?}: {out:?}");
    }
}

#[test]
fn lists_a_postgres_store_by_url() {
    let Some(url) = database_url() else { return };
    let schema = format!(
        "cli_wf_{}_{}",
        std::process::id(),
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().subsec_nanos()
    );
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let subjects = rt.block_on(async {
        let config = orchestrator_postgres::PgConfig {
            schema: schema.clone(),
            ..orchestrator_postgres::PgConfig::new(&url)
        };
        let store = orchestrator_postgres::PgStore::<String>::open(config).await.unwrap();
        write_three(&store).await
    });
    let list = |args: &[&str]| {
        let mut all = vec!["workflows", "list", &url, "--schema", &schema];
        all.extend(args);
        run(&all)
    };
    let all = json_lines(&list(&["--json"]));
    let ids: Vec<&str> = all.iter().map(|w| w["id"].as_str().unwrap()).collect();
    assert_eq!(ids, [subjects[2].as_str(), subjects[1].as_str(), subjects[0].as_str()], "newest first");
    assert_eq!(all[0]["short_id"], "3333cccc");
    assert_eq!(stdout(&list(&["--status", "failed", "--count"])).trim(), "1");
    assert_eq!(stdout(&list(&["--orchestrator", "arvo.orc.cli.alpha", "--count"])).trim(), "2");
    assert_eq!(stdout(&list(&["--meta", "tenant=acme", "--count"])).trim(), "2");
    assert_eq!(stdout(&list(&["--updated-since", "1h", "--count"])).trim(), "3");
    assert_eq!(stdout(&list(&["--updated-since", "2999-01-01T00:00:00Z", "--count"])).trim(), "0");
    assert_eq!(stdout(&list(&["--status", "active", "--updated-since", "10m", "--count"])).trim(), "1");
    let page = json_lines(&list(&["--json", "--after", "3333cccc"]));
    assert_eq!(page.len(), 2, "the page after the newest");
    let text = stdout(&list(&[]));
    assert!(text.lines().nth(1).unwrap().contains("arvo.orc.cli.beta@1.0.0"), "{text}");

    rt.block_on(async {
        let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls).await.unwrap();
        let task = tokio::spawn(connection);
        client.batch_execute(&format!("DROP SCHEMA IF EXISTS \"{schema}\" CASCADE")).await.unwrap();
        drop(client);
        let _ = task.await;
    });
}
