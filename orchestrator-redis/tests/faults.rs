//! Faults: every workflow completes exactly once through a crash of the Redis server mid-run (a
//! throwaway `redis-server` this test starts with `appendonly yes` and `appendfsync always`,
//! killed with SIGKILL and started again on the same port and directory after 1 s): the
//! transport rides out the outage (publishes try again, readers reconnect, deliveries whose
//! settlement was lost are taken over after the visibility timeout).
//!
//! `FAULT_SIGTERM=1` stops the server with SIGTERM instead. The test needs `redis-server`
//! (`REDIS_SERVER`, else on the `PATH`, else `/usr/bin/redis-server`); like every Redis test it
//! is skipped without `REDIS_URL` outside CI.

mod common;

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use orchestrator::prelude::*;
use orchestrator_redis::{RedisConfig, RedisTransport};

use common::workload::{Client, Seen, check_faults, completed, init, node, open, wait_for};
use common::{delete, fresh_prefix, redis_url};

/// The `redis-server` binary, if there is one.
fn redis_server_binary() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("REDIS_SERVER") {
        return Some(PathBuf::from(path));
    }
    let on_path = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|paths| std::env::split_paths(&paths).collect::<Vec<_>>())
        .map(|dir| dir.join("redis-server"));
    on_path.chain([PathBuf::from("/usr/bin/redis-server")]).find(|path| path.is_file())
}

/// A free port on 127.0.0.1 (bound, then released).
fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind a free port");
    listener.local_addr().expect("its address").port()
}

/// A Redis server of the test's own, with its append-only file in `dir`, synced on every
/// write; killed when dropped (also when the test panics).
struct Server {
    binary: PathBuf,
    port: u16,
    dir: PathBuf,
    process: Option<Child>,
}

impl Server {
    fn start(binary: PathBuf, dir: &Path) -> Self {
        std::fs::create_dir_all(dir).expect("the server's directory");
        let mut server = Self { binary, port: free_port(), dir: dir.to_owned(), process: None };
        server.spawn();
        server
    }

    fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// Starts the process and waits until it accepts connections.
    fn spawn(&mut self) {
        let process = Command::new(&self.binary)
            .args(["--bind", "127.0.0.1", "--port", &self.port.to_string(), "--dir"])
            .arg(&self.dir)
            .args(["--appendonly", "yes", "--appendfsync", "always", "--save", ""])
            .args(["--daemonize", "no", "--protected-mode", "no", "--logfile", ""])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start redis-server");
        self.process = Some(process);
        let deadline = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(Instant::now() < deadline, "redis-server did not accept connections within 10 s");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// SIGTERM (the server syncs its file and exits), and waits until the process ended.
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_workflow_completes_exactly_once_across_a_server_crash() {
    if redis_url().is_none() {
        return;
    }
    let Some(binary) = redis_server_binary() else {
        assert!(
            std::env::var_os("CI").is_none(),
            "redis-server is missing, and CI makes this test mandatory"
        );
        println!("skipping: no redis-server binary (set REDIS_SERVER)");
        return;
    };
    let n = 200;
    let dir = tempfile::tempdir().expect("a temporary directory");
    let mut server = Server::start(binary, &dir.path().join("redis"));
    let config = RedisConfig {
        poll: Duration::from_millis(20),
        block: Duration::from_millis(500),
        visibility_timeout: Duration::from_secs(2),
        response_timeout: Duration::from_secs(2),
        outage: Duration::from_secs(30),
        ..RedisConfig::new(server.url()).prefix(fresh_prefix())
    };
    let transport = RedisTransport::connect(config).await.expect("connect");
    let store = open(&dir.path().join("node.db"), "node");
    let seen = Seen::default();
    let node = Arc::new(node(&store, transport.clone(), Some(Client::new(&seen))).await);
    let started = Instant::now();
    let inits: Vec<Event> = (0..n).map(|i| init("crash", i)).collect();
    // The workflows start one after the other, some of them during the outage.
    let starter = {
        let (node, inits) = (Arc::clone(&node), inits.clone());
        tokio::spawn(async move {
            for init in inits {
                node.start(init).await.expect("started (the transport rides out the outage)");
                tokio::time::sleep(Duration::from_millis(15)).await;
            }
        })
    };
    wait_for(&seen, n / 5, Duration::from_secs(30)).await;
    let before = completed(&seen);
    assert!(!starter.is_finished(), "the crash meets workflows still being started");
    tokio::task::block_in_place(|| {
        if std::env::var_os("FAULT_SIGTERM").is_some() {
            server.terminate();
        } else {
            server.kill();
        }
        std::thread::sleep(Duration::from_secs(1));
        server.spawn();
    });
    println!("server restarted after {before} completions, {:?} in", started.elapsed());
    tokio::time::timeout(Duration::from_secs(60), starter)
        .await
        .expect("every workflow started within 60 s")
        .expect("the starts");
    wait_for(&seen, n, Duration::from_secs(60)).await;
    println!("{n} workflows across a server crash: {:?}", started.elapsed());
    tokio::time::timeout(Duration::from_secs(30), node.shutdown()).await.expect("the node shuts down");
    assert!(node.take_dead_letters().is_empty(), "nothing dead-lettered by the node");
    check_faults(&store, &transport, &seen, &inits).await;
    delete(&transport).await;
}
