//! `orchestrator workflows show|tree`, short ids (for `history` and `replay` too) and the
//! errors of `replay`'s bounds, on a SQLite store (a real order run to its end next to a tree of
//! workflows written with their parents), and on a PostgreSQL store by URL when `DATABASE_URL`
//! is set (mandatory under CI).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::process::Output;
use std::time::Duration;

use orchestrator::memory::{Materialized, Memory, MemoryExt, WorkflowState, WriteMeta};
use orchestrator::subject::Subject;
use orchestrator_sqlite::SqliteMemory;
use serde_json::Value;

use common::{database_url, one_order, run, stdout};

/// The exit code and stderr of a command that must fail.
fn failure(out: &Output) -> (i32, String) {
    assert!(!out.status.success(), "{out:?}");
    (out.status.code().unwrap(), String::from_utf8_lossy(&out.stderr).into_owned())
}

/// A tree written with parents, a few milliseconds apart: a parent (`5555aaaa…`), two children
/// whose execution ids share the prefix `6666aaa` (`6666aaaa…` then `6666aaab…`), a grandchild
/// under the first (`7777aaaa…`) and an unrelated root (`8888aaaa…`). Returns the parent's
/// subject.
async fn write_tree<M: Memory<String>>(store: &M) -> String {
    let subject = |orchestrator: &str, execution: &str| {
        Subject::builder(orchestrator, "1.0.0", "com.test.tree").execution_id(execution).build().unwrap()
    };
    let parent = subject("arvo.orc.cli.parent", "5555aaaa-tree");
    let first = subject("arvo.orc.cli.child", "6666aaaa-tree");
    let second = subject("arvo.orc.cli.child", "6666aaab-tree");
    let grandchild = subject("arvo.orc.cli.leaf", "7777aaaa-tree");
    let other = subject("arvo.orc.cli.other", "8888aaaa-tree");
    let rows = [
        (&parent, None, WorkflowState::Active),
        (&first, Some(&parent), WorkflowState::Done),
        (&second, Some(&parent), WorkflowState::Waiting),
        (&grandchild, Some(&first), WorkflowState::Failed),
        (&other, None, WorkflowState::Done),
    ];
    for (subject, parent, status) in rows {
        let meta = WriteMeta {
            parent_subject: Materialized::Resolved(parent.map(Subject::as_str)),
            initiator: Materialized::Resolved(subject.initiator()),
            status,
            ..WriteMeta::new(subject.as_str(), subject.orchestrator_name())
        };
        store.write(subject.as_str(), &"x".to_owned(), None, None, &meta).await.unwrap();
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    parent.as_str().to_owned()
}

/// Checks `show` and `tree` over the rows of [`write_tree`] in `store` (`extra`: `--schema …`).
fn check_tree(store: &str, extra: &[&str], parent: &str) {
    let cmd = |args: &[&str]| {
        let mut all = args.to_vec();
        all.extend(extra);
        run(&all)
    };

    // The tree, by short id and by full id: the same.
    let text = stdout(&cmd(&["workflows", "tree", store, "5555"]));
    assert_eq!(
        text,
        "5555aaaa  arvo.orc.cli.parent@1.0.0  active\n  6666aaaa  arvo.orc.cli.child@1.0.0  done\n    \
         7777aaaa  arvo.orc.cli.leaf@1.0.0  failed\n  6666aaab  arvo.orc.cli.child@1.0.0  waiting\n"
    );
    assert_eq!(stdout(&cmd(&["workflows", "tree", store, parent])), text);
    let doc: Value =
        serde_json::from_str(&stdout(&cmd(&["workflows", "tree", store, "5555aa", "--json"]))).unwrap();
    assert_eq!(doc["id"], parent);
    assert_eq!(doc["short_id"], "5555aaaa");
    let children = doc["children"].as_array().unwrap();
    assert_eq!(children.len(), 2, "{doc}");
    assert_eq!(children[0]["short_id"], "6666aaaa");
    assert_eq!(children[0]["parent"], parent);
    assert_eq!(children[0]["children"][0]["short_id"], "7777aaaa");
    assert_eq!(children[0]["children"][0]["root"], parent);
    assert_eq!(children[1]["short_id"], "6666aaab");
    assert_eq!(children[1]["children"], serde_json::json!([]));
    // A leaf is a tree of one.
    assert_eq!(
        stdout(&cmd(&["workflows", "tree", store, "7777"])),
        "7777aaaa  arvo.orc.cli.leaf@1.0.0  failed\n"
    );

    // Show a workflow without a journal: its summary, no state.
    let text = stdout(&cmd(&["workflows", "show", store, "6666aaab"]));
    assert!(text.contains("short id     6666aaab\n"), "{text}");
    assert!(text.contains("orchestrator arvo.orc.cli.child@1.0.0\n"), "{text}");
    assert!(text.contains("status       waiting\n"), "{text}");
    assert!(text.contains(&format!("parent       {parent}\n")), "{text}");
    assert!(text.contains("history      0 journal entries\n"), "{text}");

    // Ambiguous, unknown and too short ids.
    let (code, err) = failure(&cmd(&["workflows", "show", store, "6666"]));
    assert_eq!(code, 1);
    assert!(err.contains("short id 6666 is ambiguous"), "{err}");
    assert!(err.contains("6666aaaa  arvo.orc.cli.child@1.0.0  done"), "{err}");
    assert!(err.contains("6666aaab  arvo.orc.cli.child@1.0.0  waiting"), "{err}");
    let (code, err) = failure(&cmd(&["workflows", "tree", store, "9999zzzz"]));
    assert_eq!(code, 1);
    assert!(err.contains(&format!("no workflow with id or short id 9999zzzz in {store}")), "{err}");
    let (code, err) = failure(&cmd(&["workflows", "show", store, "555"]));
    assert_eq!(code, 2);
    assert!(err.contains("at least 4 characters"), "{err}");
    // A wildcard is not a prefix.
    let (_, err) = failure(&cmd(&["workflows", "show", store, "5555%"]));
    assert!(err.contains("no workflow with id or short id"), "{err}");
    // A subject that is not in the store.
    let absent = Subject::builder("arvo.orc.cli.parent", "1.0.0", "com.test.tree")
        .execution_id("5555aaaa-absent")
        .build()
        .unwrap();
    let (code, err) = failure(&cmd(&["workflows", "show", store, absent.as_str()]));
    assert_eq!(code, 1);
    assert!(err.contains("no workflow with id or short id"), "{err}");
}

#[test]
fn show_tree_and_short_ids_on_a_sqlite_store() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.sqlite");
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let (order, parent) = rt.block_on(async {
        let order = one_order(&path).await;
        let store = SqliteMemory::<String>::open_path(&path).unwrap();
        (order, write_tree(&store).await)
    });
    let db = path.to_str().unwrap();
    check_tree(db, &[], &parent);

    // Show the real order, by full id and by short id.
    let execution = Subject::parse(&order).unwrap().execution_id().to_owned();
    let short = &execution[..6];
    let text = stdout(&run(&["workflows", "show", db, &order]));
    assert!(text.starts_with(&format!("id           {order}\nshort id     {}\n", &execution[..8])), "{text}");
    assert!(text.contains("orchestrator arvo.orc.shop.order@"), "{text}");
    assert!(text.contains("status       done\n"), "{text}");
    assert!(text.contains("initiator    com.test.cli\n"), "{text}");
    assert!(text.contains("parent       -\n"), "{text}");
    assert!(text.contains("history      4 journal entries\n"), "{text}");
    assert!(text.contains("state\n  {"), "the record follows: {text}");
    assert!(text.contains("shipped"), "{text}");
    let doc: Value =
        serde_json::from_str(&stdout(&run(&["workflows", "show", db, short, "--json"]))).unwrap();
    assert_eq!(doc["id"], order.as_str());
    assert_eq!(doc["short_id"], &execution[..8]);
    assert_eq!(doc["status"], "done");
    assert_eq!(doc["history_length"], 4);
    assert_eq!(doc["version"], 4);
    assert_eq!(doc["record"]["subject"], order.as_str());
    assert!(doc["record"]["state"].to_string().contains("shipped"), "{doc}");

    // history and replay by short id.
    let text = stdout(&run(&["history", db, short]));
    assert_eq!(text.lines().filter(|l| l.starts_with('v')).count(), 4, "{text}");
    let doc: Value = serde_json::from_str(&stdout(&run(&["replay", db, short, "--until", "2"]))).unwrap();
    assert_eq!(doc["subject"], order.as_str());
    assert_eq!(doc["state"]["value"][0], "charging");
    let (code, err) = failure(&run(&["history", db, "6666"]));
    assert_eq!(code, 1);
    assert!(err.contains("ambiguous"), "{err}");

    // replay's bounds: past the last version, before the first, before the first execution.
    let (code, err) = failure(&run(&["replay", db, short, "--until", "5"]));
    assert_eq!(code, 2);
    assert!(err.contains("--until 5 is past the last version") && err.contains("versions 1 to 4"), "{err}");
    let (code, err) = failure(&run(&["replay", db, short, "--until", "0"]));
    assert_eq!(code, 2);
    assert!(err.contains("--until 0 is before the first version"), "{err}");
    let (code, err) = failure(&run(&["replay", db, short, "--at", "2000-01-01T00:00:00Z"]));
    assert_eq!(code, 2);
    assert!(err.contains("is before the first execution of workflow"), "{err}");
    let (code, err) = failure(&run(&["replay", db, short, "--from", "3", "--until", "2"]));
    assert_eq!(code, 2);
    assert!(err.contains("--from 3 is after the position replayed to (version 2)"), "{err}");
    // A time after the last execution is the end.
    let doc: Value =
        serde_json::from_str(&stdout(&run(&["replay", db, short, "--at", "2999-01-01T00:00:00Z"]))).unwrap();
    assert_eq!(doc["version"], 4);
    assert_eq!(doc["done"], true);
    // The tree's rows have no journal: replaying them says so.
    let (_, err) = failure(&run(&["replay", db, "6666aaab"]));
    assert!(err.contains("no journal for workflow"), "{err}");
}

#[test]
fn a_missing_store_is_a_clear_error_for_show_and_tree() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.sqlite");
    for command in ["show", "tree"] {
        let (code, err) = failure(&run(&["workflows", command, missing.to_str().unwrap(), "abcd"]));
        assert_eq!(code, 1);
        assert!(err.contains("does not exist") && err.contains("missing.sqlite"), "{err}");
    }
    assert!(!missing.exists(), "the store is not created");
}

#[test]
fn show_and_tree_on_a_postgres_store_by_url() {
    let Some(url) = database_url() else { return };
    let schema = format!(
        "cli_tree_{}_{}",
        std::process::id(),
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().subsec_nanos()
    );
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let parent = rt.block_on(async {
        let config = orchestrator_postgres::PgConfig {
            schema: schema.clone(),
            ..orchestrator_postgres::PgConfig::new(&url)
        };
        let store = orchestrator_postgres::PgStore::<String>::open(config).await.unwrap();
        write_tree(&store).await
    });
    check_tree(&url, &["--schema", &schema], &parent);

    rt.block_on(async {
        let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls).await.unwrap();
        let task = tokio::spawn(connection);
        client.batch_execute(&format!("DROP SCHEMA IF EXISTS \"{schema}\" CASCADE")).await.unwrap();
        drop(client);
        let _ = task.await;
    });
}
