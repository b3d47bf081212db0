//! Two processes share the work: this test binary runs a second durable node in a child process
//! (over the same SQLite file and NATS stream), starts 200 averaging workflows from its own node,
//! and checks that each completed exactly once and that the child handled some of the events.
//!
//! The child is this binary again, running `child_node` with `ORCHESTRATOR_NATS_CHILD_DB` and
//! `ORCHESTRATOR_NATS_CHILD_STREAM` set: it prints `READY`, serves until its standard input
//! closes, shuts its node down and prints `DELIVERED <n>`.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use orchestrator::prelude::*;
use orchestrator_nats::{NatsConfig, NatsTransport};

use common::workload::{Client, Seen, check, init, node, open, wait_for};
use common::{delete, fresh_deployment, nats_url};

const CHILD_DB: &str = "ORCHESTRATOR_NATS_CHILD_DB";
const CHILD_STREAM: &str = "ORCHESTRATOR_NATS_CHILD_STREAM";

fn deployment(url: &str, stream: &str) -> NatsConfig {
    NatsConfig { poll: Duration::from_millis(20), ..NatsConfig::new(url).deployment(stream) }
}

/// The child side: a node without the client; a no-op in a normal test run.
#[test]
fn child_node() {
    let (Ok(path), Ok(stream)) = (std::env::var(CHILD_DB), std::env::var(CHILD_STREAM)) else { return };
    let url = std::env::var("NATS_URL").expect("the parent passes NATS_URL");
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    runtime.block_on(async {
        let store = open(path.as_ref(), "child");
        let transport = NatsTransport::connect(deployment(&url, &stream)).await.expect("connect");
        let node = node(&store, transport, None).await;
        println!("READY");
        // Serve until the parent closes our standard input.
        tokio::task::spawn_blocking(|| std::io::stdin().lines().count()).await.expect("stdin");
        tokio::time::timeout(Duration::from_secs(30), node.shutdown()).await.expect("the child shuts down");
        println!("DELIVERED {}", node.dispatcher().stats().delivered);
    });
}

/// Kills the child if the test fails before it ends.
struct Guard(Option<Child>);

impl Drop for Guard {
    fn drop(&mut self) {
        if let Some(mut child) = self.0.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// What the child printed from `prefix` on, within `wait`.
fn expect_line(lines: &Receiver<String>, prefix: &str, wait: Duration) -> String {
    let deadline = Instant::now() + wait;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match lines.recv_timeout(left) {
            // libtest may print `test child_node ... ` before it on the same line.
            Ok(line) if line.contains(prefix) => {
                return line[line.find(prefix).unwrap_or_default()..].trim_end().to_owned();
            }
            Ok(_) => {}
            Err(RecvTimeoutError::Timeout) => panic!("the child did not say {prefix} within {wait:?}"),
            Err(RecvTimeoutError::Disconnected) => panic!("the child ended before saying {prefix}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_in_another_process_shares_the_work() {
    let Some(url) = nats_url() else { return };
    let n = 200;
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("shared.db");
    let stream = fresh_deployment();
    // The parent's node first: it creates the database file and the stream.
    let store = open(&path, "parent");
    let transport = NatsTransport::connect(deployment(&url, &stream)).await.expect("connect");
    let seen = Seen::default();
    let client = Client::new(&seen);
    let parent = Arc::new(node(&store, transport.clone(), Some(client)).await);

    let mut child = Command::new(std::env::current_exe().expect("this test binary"))
        .args(["child_node", "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD_DB, &path)
        .env(CHILD_STREAM, &stream)
        .env("NATS_URL", &url)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("the child process");
    let stdout = child.stdout.take().expect("its stdout");
    let stdin = child.stdin.take().expect("its stdin");
    let mut guard = Guard(Some(child));
    let (sender, lines) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if sender.send(line).is_err() {
                break;
            }
        }
    });
    let ready = tokio::task::block_in_place(|| expect_line(&lines, "READY", Duration::from_secs(60)));
    assert_eq!(ready, "READY");

    let inits: Vec<Event> = (0..n).map(|i| init("procs", i)).collect();
    let starts: Vec<_> = inits
        .iter()
        .cloned()
        .map(|init| {
            let parent = Arc::clone(&parent);
            tokio::spawn(async move { parent.start(init).await.expect("started") })
        })
        .collect();
    for start in starts {
        start.await.expect("a start");
    }
    wait_for(&seen, n, Duration::from_secs(120)).await;
    drop(stdin);
    let delivered = tokio::task::block_in_place(|| expect_line(&lines, "DELIVERED", Duration::from_secs(60)));
    let child_delivered: u64 = delivered["DELIVERED ".len()..].parse().expect("a count");
    let status = guard.0.take().expect("the child").wait().expect("the child's exit");
    assert!(status.success(), "the child failed: {status}");
    tokio::time::timeout(Duration::from_secs(30), parent.shutdown()).await.expect("the parent shuts down");
    let parent_delivered = parent.dispatcher().stats().delivered;
    println!("deliveries: parent {parent_delivered}, child {child_delivered}");
    assert!(child_delivered > 0, "the child process handled events");
    assert!(parent.take_dead_letters().is_empty(), "nothing dead-lettered");
    check(&store, &transport, &seen, &inits).await;
    delete(&transport).await;
}
