//! Faults (issue 14, item 4): every workflow completes exactly once through
//!
//! * a restart of the NATS server mid-run (a throwaway `nats-server` this test starts, stopped
//!   with SIGTERM and started again on the same port and store directory after 1 s),
//! * a worker process killed with SIGKILL while it holds deliveries, several times,
//! * the same init events published several times (in one call and in separate calls);
//!
//! and a copy of an event published within the duplicate window after the first was consumed is
//! not delivered again.
//!
//! The kill test's worker is this binary again, running `fault_child` with
//! `ORCHESTRATOR_NATS_FAULT_DB` and `ORCHESTRATOR_NATS_FAULT_STREAM` set: it prints `READY`, serves
//! until its standard input closes (or it is killed), shuts its node down and prints
//! `DELIVERED <n>`.
//!
//! `FAULT_SIGKILL=1` stops the server with SIGKILL instead. That is not part of the test: a
//! NATS 2.9 server killed so may come back with messages that its consumers had acknowledged
//! still in the work-queue stream (the consumers' state was written, the stream's removal was
//! not), never to be delivered again, so the stream never empties; and its file store
//! acknowledges a publish before writing it, so the last events acknowledged may be lost (a
//! durable node keeps them in its outbox and publishes them again when it next starts).
//!
//! The restart test needs `nats-server` (`NATS_SERVER`, else on the `PATH`, else
//! `/usr/sbin/nats-server`); like every NATS test it is skipped without `NATS_URL` outside CI.

mod common;

use std::io::{BufRead, BufReader};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::Arc;
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use orchestrator::prelude::*;
use orchestrator::runtime::Node;
use orchestrator::transport::Transport;
use orchestrator_nats::{NatsConfig, NatsTransport};

use common::workload::{Client, Seen, check, check_faults, completed, init, node, open, wait_for};
use common::{delete, fresh_deployment, nats_url};

const CHILD_DB: &str = "ORCHESTRATOR_NATS_FAULT_DB";
const CHILD_STREAM: &str = "ORCHESTRATOR_NATS_FAULT_STREAM";

/// A deployment's settings with a short ack wait: what a killed worker held comes back quickly.
fn deployment(url: &str, stream: &str) -> NatsConfig {
    NatsConfig {
        poll: Duration::from_millis(20),
        ack_wait: Duration::from_secs(2),
        ..NatsConfig::new(url).deployment(stream)
    }
}

// ---------------------------------------------------------------------------------------------
// A throwaway server.

/// The `nats-server` binary, if there is one.
fn nats_server_binary() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("NATS_SERVER") {
        return Some(PathBuf::from(path));
    }
    let on_path = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|paths| std::env::split_paths(&paths).collect::<Vec<_>>())
        .map(|dir| dir.join("nats-server"));
    on_path.chain([PathBuf::from("/usr/sbin/nats-server")]).find(|path| path.is_file())
}

/// A free port on 127.0.0.1 (bound, then released).
#[allow(clippy::expect_used)]
fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind a free port");
    listener.local_addr().expect("its address").port()
}

/// A JetStream server of the test's own, with a file store in `dir`; killed when dropped (also
/// when the test panics).
struct Server {
    binary: PathBuf,
    port: u16,
    dir: PathBuf,
    process: Option<Child>,
}

impl Server {
    fn start(binary: PathBuf, dir: &Path) -> Self {
        let mut server = Self { binary, port: free_port(), dir: dir.to_owned(), process: None };
        server.spawn();
        server
    }

    fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }

    /// Starts the process and waits until it accepts connections.
    #[allow(clippy::expect_used)]
    fn spawn(&mut self) {
        let process = Command::new(&self.binary)
            .args(["-js", "-a", "127.0.0.1", "-p", &self.port.to_string(), "-sd"])
            .arg(&self.dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start nats-server");
        self.process = Some(process);
        let deadline = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(Instant::now() < deadline, "nats-server did not accept connections within 10 s");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// SIGTERM, and waits until the process ended.
    fn terminate(&mut self) {
        if let Some(mut process) = self.process.take() {
            let _ = Command::new("kill").args(["-TERM", &process.id().to_string()]).status();
            let _ = process.wait();
        }
    }

    /// SIGKILL: nothing is flushed or closed cleanly.
    fn kill(&mut self) {
        if let Some(mut process) = self.process.take() {
            let _ = process.kill();
            let _ = process.wait();
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Connects, trying again while the server's JetStream is not ready yet (up to 10 s).
#[allow(clippy::expect_used)]
async fn connect_when_ready(config: NatsConfig) -> NatsTransport {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match NatsTransport::connect(config.clone()).await {
            Ok(transport) => return transport,
            Err(e) if Instant::now() < deadline => {
                println!("not connected yet: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(e) => panic!("could not connect to the throwaway server: {e}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_workflow_completes_exactly_once_across_a_server_restart() {
    if nats_url().is_none() {
        return;
    }
    let Some(binary) = nats_server_binary() else {
        assert!(std::env::var_os("CI").is_none(), "nats-server is missing, and CI makes this test mandatory");
        println!("skipping: no nats-server binary (set NATS_SERVER)");
        return;
    };
    let n = 200;
    let dir = tempfile::tempdir().expect("a temporary directory");
    let store_dir = dir.path().join("jetstream");
    let mut server = Server::start(binary, &store_dir);
    let config =
        NatsConfig { ack_wait: Duration::from_secs(5), ..deployment(&server.url(), &fresh_deployment()) };
    let transport = connect_when_ready(config).await;
    let store = open(&dir.path().join("node.db"), "node");
    let seen = Seen::default();
    let node = Arc::new(node(&store, transport.clone(), Some(Client::new(&seen))).await);
    let started = Instant::now();
    let inits: Vec<Event> = (0..n).map(|i| init("restart", i)).collect();
    // The workflows start one after the other, some of them during the outage.
    let starter = {
        let (node, inits) = (Arc::clone(&node), inits.clone());
        tokio::spawn(async move {
            for init in inits {
                node.start(init).await.expect("started (the transport rides out the outage)");
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
    };
    wait_for(&seen, n / 5, Duration::from_secs(30)).await;
    let before = completed(&seen);
    tokio::task::block_in_place(|| {
        if std::env::var_os("FAULT_SIGKILL").is_some() {
            server.kill();
        } else {
            server.terminate();
        }
        std::thread::sleep(Duration::from_secs(1));
        server.spawn();
    });
    println!("server restarted after {before} completions, {:?} in", started.elapsed());
    tokio::time::timeout(Duration::from_secs(30), starter)
        .await
        .expect("every workflow started within 30 s")
        .expect("the starts");
    wait_for(&seen, n, Duration::from_secs(40)).await;
    println!("{n} workflows across a server restart: {:?}", started.elapsed());
    tokio::time::timeout(Duration::from_secs(30), node.shutdown()).await.expect("the node shuts down");
    assert!(node.take_dead_letters().is_empty(), "nothing dead-lettered by the node");
    check_faults(&store, &transport, &seen, &inits).await;
    delete(&transport).await;
}

// ---------------------------------------------------------------------------------------------
// A worker killed with deliveries in flight.

/// The child side: a node without the client; a no-op in a normal test run.
#[test]
fn fault_child() {
    let (Ok(path), Ok(stream)) = (std::env::var(CHILD_DB), std::env::var(CHILD_STREAM)) else { return };
    let url = std::env::var("NATS_URL").expect("the parent passes NATS_URL");
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    runtime.block_on(async {
        // The same owner every run: opening the store frees what a killed run held.
        let store = open(path.as_ref(), "worker");
        let transport = NatsTransport::connect(deployment(&url, &stream)).await.expect("connect");
        let node = node(&store, transport, None).await;
        println!("READY");
        tokio::task::spawn_blocking(|| std::io::stdin().lines().count()).await.expect("stdin");
        tokio::time::timeout(Duration::from_secs(30), node.shutdown()).await.expect("the child shuts down");
        println!("DELIVERED {}", node.dispatcher().stats().delivered);
    });
}

/// A worker process; killed if the test fails before it ends.
struct Worker {
    process: Option<Child>,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
}

impl Worker {
    #[allow(clippy::expect_used)]
    fn spawn(url: &str, db: &Path, stream: &str) -> Self {
        let mut process = Command::new(std::env::current_exe().expect("this test binary"))
            .args(["fault_child", "--exact", "--nocapture", "--test-threads=1"])
            .env(CHILD_DB, db)
            .env(CHILD_STREAM, stream)
            .env("NATS_URL", url)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("the worker process");
        let stdout = process.stdout.take().expect("its stdout");
        let stdin = process.stdin.take();
        let (sender, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if sender.send(line).is_err() {
                    break;
                }
            }
        });
        Self { process: Some(process), stdin, lines }
    }

    /// What the worker printed from `prefix` on, within `wait`.
    fn expect_line(&self, prefix: &str, wait: Duration) -> String {
        let deadline = Instant::now() + wait;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                // libtest may print `test fault_child ... ` before it on the same line.
                Ok(line) if line.contains(prefix) => {
                    return line[line.find(prefix).unwrap_or_default()..].trim_end().to_owned();
                }
                Ok(_) => {}
                Err(RecvTimeoutError::Timeout) => panic!("the worker did not say {prefix} within {wait:?}"),
                Err(RecvTimeoutError::Disconnected) => panic!("the worker ended before saying {prefix}"),
            }
        }
    }

    /// SIGKILL: whatever it held in memory is gone, its deliveries unsettled.
    fn kill(&mut self) {
        if let Some(mut process) = self.process.take() {
            let _ = process.kill();
            let _ = process.wait();
        }
    }

    /// Closes its standard input and waits for a clean exit; what it delivered.
    #[allow(clippy::expect_used)]
    fn finish(&mut self) -> u64 {
        drop(self.stdin.take());
        let delivered = self.expect_line("DELIVERED", Duration::from_secs(40));
        let status = self.process.take().expect("the worker").wait().expect("its exit");
        assert!(status.success(), "the worker failed: {status}");
        delivered["DELIVERED ".len()..].parse().expect("a count")
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        self.kill();
    }
}

/// xorshift64*: kill moments a seed (`FAULT_SEED`) reproduces.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % n
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_workflow_completes_exactly_once_across_worker_kills() {
    let Some(url) = nats_url() else { return };
    let n = 200;
    let kills = 4;
    let seed = std::env::var("FAULT_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(1, |d| d.as_nanos() as u64)
            | 1
    });
    println!("FAULT_SEED={seed}");
    let mut rng = Rng(seed);
    let dir = tempfile::tempdir().expect("a temporary directory");
    let db = dir.path().join("shared.db");
    let stream = fresh_deployment();
    // The client's node, in this process: it starts the workflows and records the completions
    // (it survives the kills). The workers do the rest.
    let store = open(&db, "client");
    let transport = NatsTransport::connect(deployment(&url, &stream)).await.expect("connect");
    let seen = Seen::default();
    let client = Arc::new(
        Node::builder(Arc::clone(&store))
            .transport(transport.clone())
            .durable()
            .service(Client::new(&seen))
            .without_timers()
            .build()
            .await
            .expect("the client's node"),
    );
    let started = Instant::now();
    let inits: Vec<Event> = (0..n).map(|i| init("kill", i)).collect();
    // The workflows start one after the other (over ~4 s) while the workers are killed.
    let starter = {
        let (client, inits) = (Arc::clone(&client), inits.clone());
        tokio::spawn(async move {
            for init in inits {
                client.start(init).await.expect("started");
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
    };

    let mut killed_mid_run = 0;
    let mut runs = Vec::new();
    for _ in 0..kills {
        let before = completed(&seen);
        let mut worker = Worker::spawn(&url, &db, &stream);
        tokio::task::block_in_place(|| worker.expect_line("READY", Duration::from_secs(30)));
        // Killed at a random moment of its run (unless every workflow completed already).
        let wait = Duration::from_millis(100 + rng.below(700));
        let run = Instant::now();
        while run.elapsed() < wait && completed(&seen) < n {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        let at = completed(&seen);
        tokio::task::block_in_place(|| worker.kill());
        killed_mid_run += usize::from(at < n);
        runs.push(format!("completed {before} -> {at}, killed after {:?}", run.elapsed()));
    }
    tokio::time::timeout(Duration::from_secs(30), starter)
        .await
        .expect("every workflow started within 30 s")
        .expect("the starts");
    // A last run, not killed, until every workflow completed.
    let mut worker = Worker::spawn(&url, &db, &stream);
    tokio::task::block_in_place(|| worker.expect_line("READY", Duration::from_secs(30)));
    wait_for(&seen, n, Duration::from_secs(40)).await;
    let delivered = tokio::task::block_in_place(|| worker.finish());
    println!("{killed_mid_run} kills mid-run ({:?}); runs:\n  {}", started.elapsed(), runs.join("\n  "));
    println!("the last worker delivered {delivered}");
    tokio::time::timeout(Duration::from_secs(30), client.shutdown()).await.expect("the client shuts down");
    assert!(client.take_dead_letters().is_empty(), "nothing dead-lettered");
    check_faults(&store, &transport, &seen, &inits).await;
    assert!(killed_mid_run >= 2, "the workers were killed mid-run (seed {seed}): {killed_mid_run} times");
    delete(&transport).await;
}

// ---------------------------------------------------------------------------------------------
// Duplicated publishes.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_init_published_several_times_starts_one_workflow() {
    let Some(url) = nats_url() else { return };
    let n = 20;
    let dir = tempfile::tempdir().expect("a temporary directory");
    let transport = NatsTransport::connect(common::config(&url)).await.expect("connect");
    let inits: Vec<Event> = (0..2 * n).map(|i| init("dup", i)).collect();
    // Before any node: three copies in one call, and one more in another call, of each of the
    // first `n` inits. The server keeps one of each.
    for init in &inits[..n] {
        transport.publish(vec![init.clone(); 3]).await.expect("published");
    }
    for init in &inits[..n] {
        transport.publish(vec![init.clone()]).await.expect("published again");
    }
    assert_eq!(transport.waiting().await.expect("waiting"), n as u64, "one copy of each init is stored");

    let store = open(&dir.path().join("node.db"), "node");
    let seen = Seen::default();
    let node = node(&store, transport.clone(), Some(Client::new(&seen))).await;
    // With a node running: the other inits started through it, then published again twice
    // while their workflows run: dropped by the server within its duplicate window, whether
    // the first copy waits in the stream or was consumed already.
    for init in &inits[n..] {
        node.start(init.clone()).await.expect("started");
        transport.publish(vec![init.clone(), init.clone()]).await.expect("published again");
        transport.publish(vec![init.clone()]).await.expect("published again");
    }
    wait_for(&seen, 2 * n, Duration::from_secs(30)).await;
    // Time for a duplicate that slipped through to complete a second time.
    tokio::time::sleep(Duration::from_secs(1)).await;
    tokio::time::timeout(Duration::from_secs(30), node.shutdown()).await.expect("the node shuts down");
    assert!(node.take_dead_letters().is_empty(), "nothing dead-lettered by the node");
    // No stale answer: every workflow took exactly its three steps.
    check(&store, &transport, &seen, &inits).await;
    let handled = common::workload::lock(&seen).values().map(|(_, _, deliveries)| deliveries).sum::<usize>();
    assert_eq!(handled, 2 * n, "each completion was handled once");
    delete(&transport).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_copy_published_after_the_first_was_consumed_is_dropped_within_the_window() {
    use orchestrator::transport::{Delivery, Subscription, Topics};
    let Some(url) = nats_url() else { return };
    let transport = NatsTransport::connect(common::config(&url)).await.expect("connect");
    let event = init("again", 0);
    let topic = event.to().expect("an init has a topic").to_owned();
    let mut subscription = transport.subscribe(Topics::Only(vec![topic])).await.expect("subscribe");
    transport.publish(vec![event.clone(), event.clone()]).await.expect("published");
    assert_eq!(transport.waiting().await.expect("waiting"), 1, "copies of a waiting event are dropped");
    let first = tokio::time::timeout(Duration::from_secs(10), subscription.next())
        .await
        .expect("a delivery in time")
        .expect("a delivery");
    assert_eq!(first.event().id(), event.id());
    first.ack(Vec::new()).await.expect("acked");
    // Consumed: a copy now (a node publishing again what a crash left in its outbox) was stored
    // once already, and is not delivered again.
    transport.publish(vec![event.clone()]).await.expect("published again");
    assert_eq!(transport.waiting().await.expect("waiting"), 0, "the copy is not stored");
    let again = tokio::time::timeout(Duration::from_secs(2), subscription.next()).await;
    assert!(again.is_err(), "the copy is not delivered");
    drop(subscription);
    delete(&transport).await;
}
