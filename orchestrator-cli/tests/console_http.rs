//! `orchestrator serve` (the binary) over HTTP: what it refuses, its pages over a SQLite store
//! (with a dead letter a node buried there), and a workflow's dead letters over a PostgreSQL store (the queue's `dead_letters` table) when
//! `DATABASE_URL` is set (mandatory under CI).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;

use orchestrator::broker::Broker;
use orchestrator::event::Event;
use orchestrator::factory::EventFactory;
use orchestrator::orchestration::{Orchestrator, WorkflowRecord};
use orchestrator::subject::Subject;
use orchestrator_examples::orders::{OrderFlow, OrderInput, OrderV1, services};
use orchestrator_postgres::{PgConfig, PgStore};

use common::{database_url, recorded_order, run};

/// `orchestrator serve` running, killed when dropped.
struct Served {
    child: Child,
    addr: String,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve(args: &[&str]) -> Served {
    let mut child = Command::new(env!("CARGO_BIN_EXE_orchestrator"))
        .arg("serve")
        .args(args)
        .args(["--bind", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let url =
        line.split_whitespace().find(|w| w.starts_with("http://")).unwrap_or_else(|| panic!("{line:?}"));
    let addr = url.trim_start_matches("http://").trim_end_matches('/').to_owned();
    Served { child, addr }
}

/// A request's status code and body.
fn request(served: &Served, method: &str, path: &str) -> (u16, String) {
    let mut stream = TcpStream::connect(&served.addr).unwrap();
    write!(stream, "{method} {path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n", served.addr).unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let status = response.split_whitespace().nth(1).unwrap().parse().unwrap();
    let body = response.split_once("\r\n\r\n").map(|(_, b)| b.to_owned()).unwrap_or_default();
    (status, body)
}

fn short(subject: &str) -> String {
    Subject::parse(subject).unwrap().execution_id().chars().take(8).collect()
}

#[test]
fn serve_refuses_a_public_address_and_a_missing_store() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("store.sqlite");
    std::fs::write(&db, b"").unwrap();
    let out = run(&["serve", db.to_str().unwrap(), "--bind", "0.0.0.0:0"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("not a loopback address") && err.contains("--allow-remote"), "{err}");

    let missing = dir.path().join("missing.sqlite");
    let out = run(&["serve", missing.to_str().unwrap(), "--bind", "127.0.0.1:0"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("does not exist"));
    assert!(!missing.exists());
}

#[tokio::test(flavor = "multi_thread")]
async fn serve_answers_gets_only_over_a_sqlite_store() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("store.sqlite");
    let subject = recorded_order(&db).await;
    // A dead letter a node buried in the store (an event of the workflow nobody could handle).
    {
        use orchestrator::memory::DeadLetterStore;
        let store = orchestrator_sqlite::SqliteMemory::<WorkflowRecord>::open_path(&db).unwrap();
        let lost = Event::builder()
            .source("com.shop.client")
            .r#type("com.shop.nobody")
            .subject(&subject)
            .to("com.shop.nobody")
            .data_json(serde_json::json!({ "note": "<script>alert(1)</script>" }))
            .build()
            .unwrap();
        store.bury(&lost, "no handler registered for `to` = `com.shop.nobody`", 1).await.unwrap();
    }
    let served = serve(&[db.to_str().unwrap()]);

    let (status, list) = request(&served, "GET", "/?status=done");
    assert_eq!(status, 200, "{list}");
    assert!(list.contains(&short(&subject)), "{list}");
    let (status, page) = request(&served, "GET", &format!("/workflows/{}", short(&subject)));
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("data-state=\"shipped\""), "{page}");
    assert!(page.contains("Timeline (4 executions)"), "{page}");
    assert!(page.contains("class=\"dead-letter\"") && page.contains("com.shop.nobody"), "{page}");
    assert!(!page.contains("<script>alert(1)"), "the payload stays text: {page}");
    let (status, _) = request(&served, "POST", "/");
    assert_eq!(status, 405);
    let (status, _) = request(&served, "DELETE", &format!("/workflows/{}", short(&subject)));
    assert_eq!(status, 405);
}

#[tokio::test(flavor = "multi_thread")]
async fn dead_letters_on_a_postgres_store() {
    let Some(url) = database_url() else { return };
    let schema = format!(
        "cli_console_{}_{}",
        std::process::id(),
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().subsec_nanos()
    );
    let store = Arc::new(
        PgStore::<WorkflowRecord>::open(PgConfig { schema: schema.clone(), ..PgConfig::new(&url) })
            .await
            .unwrap(),
    );
    let broker = Broker::builder()
        .handler(Orchestrator::builder(Arc::clone(&store)).machine::<OrderFlow>().build().unwrap())
        .handler(services::inventory().unwrap())
        .handler(services::payment().unwrap())
        .handler(services::shipping().unwrap())
        .build()
        .unwrap();
    let input = OrderInput { order_id: "o-pg".into(), sku: "sku-1".into(), quantity: 1, amount_cents: 100 };
    let init = EventFactory::<OrderV1>::new().init(input, Event::builder().source("com.test.cli")).unwrap();
    broker.resolve(init.clone()).await.unwrap().expect("completion");
    broker.shutdown().await;
    let subject = init.subject().to_owned();

    let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls).await.unwrap();
    let task = tokio::spawn(connection);
    let event = serde_json::to_string(&init).unwrap();
    client
        .execute(
            &format!(
                "INSERT INTO \"{schema}\".dead_letters (topic, subject, event_id, event, attempt, reason) \
                 VALUES ($1, $2, $3, $4, 3, $5)"
            ),
            &[&"arvo.orc.shop.order", &subject, &init.id(), &event, &"<img src=x onerror=alert(1)> refused"],
        )
        .await
        .unwrap();

    let served = serve(&[&url, "--schema", &schema]);
    let (status, page) = request(&served, "GET", &format!("/workflows/{}", short(&subject)));
    drop(served);
    client.batch_execute(&format!("DROP SCHEMA IF EXISTS \"{schema}\" CASCADE")).await.unwrap();
    drop(client);
    let _ = task.await;

    assert_eq!(status, 200, "{page}");
    assert!(page.contains("class=\"dead-letter\""), "{page}");
    assert!(page.contains("&lt;img src=x onerror=alert(1)&gt; refused"), "{page}");
    assert!(!page.contains("<img src=x"), "{page}");
    assert!(page.contains("after 3 deliveries"), "{page}");
    // No node recorded a catalog here: the page says there is no chart.
    assert!(page.contains("No chart:"), "{page}");
}
