//! Leases hold across processes sharing one database file.
//!
//! The test binary re-invokes itself: with `CHILD_DB` set, `child_lease_holder` takes the lease in
//! the child process, reports its token on stdout, and waits for an order on stdin.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

use orchestrator::memory::{Lease, Memory, MemoryError, MemoryExt, WriteMeta};
use orchestrator_sqlite::Retention;

const CHILD_DB: &str = "ORCHESTRATOR_SQLITE_CHILD_DB";
const CHILD_TTL_MS: &str = "ORCHESTRATOR_SQLITE_CHILD_TTL_MS";
const CHILD_WRITER_DB: &str = "ORCHESTRATOR_SQLITE_CHILD_WRITER_DB";
const ID: &str = "shared-wf";

/// The child side of the crash test: writes from 4 tasks, reporting each acknowledged write,
/// until it is killed; a no-op in a normal test run.
#[test]
fn child_writer() {
    let Ok(path) = std::env::var(CHILD_WRITER_DB) else { return };
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    rt.block_on(async {
        let m = std::sync::Arc::new(common::store(path.as_ref(), Duration::from_secs(60), Retention::Keep));
        let tasks: Vec<_> = (0..4)
            .map(|t| {
                let m = std::sync::Arc::clone(&m);
                tokio::spawn(async move {
                    for i in 0.. {
                        let id = format!("k-{t}-{i}");
                        m.write(&id, &id, None, None, &WriteMeta::new(&id, "child")).await.unwrap();
                        println!("ACK {id}");
                    }
                })
            })
            .collect();
        for task in tasks {
            task.await.unwrap();
        }
    });
}

/// The child side; a no-op in a normal test run.
#[test]
fn child_lease_holder() {
    let Ok(path) = std::env::var(CHILD_DB) else { return };
    let ttl: u64 = std::env::var(CHILD_TTL_MS).unwrap().parse().unwrap();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let m = common::store(path.as_ref(), Duration::from_millis(ttl), Retention::Keep);
        let lease = m.lock(ID).await.unwrap().expect("the child gets the free lease");
        let prev = m.read(ID).await.unwrap().map(|s| s.version);
        m.write(ID, &format!("child {}", lease.token), prev, Some(&lease), &WriteMeta::new(ID, "child"))
            .await
            .unwrap();
        println!("LOCKED {}", lease.token);
        std::io::stdout().flush().unwrap();
        let mut order = String::new();
        std::io::stdin().read_line(&mut order).unwrap();
        if order.trim() == "unlock" {
            assert!(m.unlock(&lease).await.unwrap());
            println!("UNLOCKED");
        } else {
            // "exit": leave without releasing, like a crashed process.
            println!("EXITING");
        }
        std::io::stdout().flush().unwrap();
    });
}

struct ChildHolder {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
}

impl ChildHolder {
    fn spawn(path: &std::path::Path, ttl: Duration) -> Self {
        Self::spawn_test("child_lease_holder", CHILD_DB, path, ttl)
    }

    fn spawn_test(test: &str, env: &str, path: &std::path::Path, ttl: Duration) -> Self {
        let mut child = Command::new(std::env::current_exe().expect("the test binary"))
            .args(["--exact", test, "--nocapture", "--test-threads=1"])
            .env(env, path)
            .env(CHILD_TTL_MS, ttl.as_millis().to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("spawn the child process");
        let stdin = child.stdin.take().expect("piped stdin");
        let stdout = BufReader::new(child.stdout.take().expect("piped stdout"));
        // A thread forwards the child's lines, so that waiting for one can time out.
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in stdout.lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Self { child, stdin, lines }
    }

    /// Reads the child's stdout until a line starting with `prefix`; returns the rest of it.
    fn expect(&mut self, prefix: &str) -> String {
        loop {
            let line = match self.lines.recv_timeout(Duration::from_secs(60)) {
                Ok(line) => line,
                Err(e) => {
                    let _ = self.child.kill();
                    panic!("no {prefix:?} from the child: {e}");
                }
            };
            // libtest prints `test child_lease_holder ... ` before the child's own output.
            if let Some(at) = line.find(prefix) {
                return line[at + prefix.len()..].trim().to_owned();
            }
        }
    }

    fn order(&mut self, order: &str) {
        writeln!(self.stdin, "{order}").expect("write to the child");
        self.stdin.flush().expect("flush to the child");
    }

    fn finish(mut self) {
        let status = self.child.wait().expect("wait for the child");
        assert!(status.success(), "the child failed: {status}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lease_held_by_another_process_is_denied_until_released() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shared.db");
    let m = common::store(&path, Duration::from_secs(60), Retention::Keep);
    let mut child = ChildHolder::spawn(&path, Duration::from_secs(60));
    let child_token: u64 = tokio::task::block_in_place(|| child.expect("LOCKED ")).parse().unwrap();

    assert!(m.lock(ID).await.unwrap().is_none(), "the other process holds the lease");
    let stored = m.read(ID).await.unwrap().unwrap();
    assert_eq!(stored.record, format!("child {child_token}"), "its write is visible here");
    // A lease this process never got cannot write (fencing).
    let forged =
        Lease { id: ID.to_owned(), token: child_token + 1, expires_at: std::time::SystemTime::now() };
    assert!(matches!(
        m.write(ID, &"x".into(), Some(stored.version), Some(&forged), &WriteMeta::new(ID, "parent")).await,
        Err(MemoryError::StaleLease { .. })
    ));

    child.order("unlock");
    tokio::task::block_in_place(|| child.expect("UNLOCKED"));
    child.finish();
    let lease = m.lock(ID).await.unwrap().expect("released by the other process");
    assert!(lease.token > child_token, "tokens grow across processes: {child_token} then {}", lease.token);
    m.write(ID, &"parent".into(), Some(stored.version), Some(&lease), &WriteMeta::new(ID, "parent"))
        .await
        .unwrap();
    assert!(m.unlock(&lease).await.unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lease_of_a_vanished_process_lapses_after_its_ttl() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("crash.db");
    let m = common::store(&path, Duration::from_secs(60), Retention::Keep);
    let ttl = Duration::from_millis(1500);
    let mut child = ChildHolder::spawn(&path, ttl);
    let child_token: u64 = tokio::task::block_in_place(|| child.expect("LOCKED ")).parse().unwrap();
    let locked_at = Instant::now();
    child.order("exit");
    tokio::task::block_in_place(|| child.expect("EXITING"));
    child.finish();

    assert!(m.lock(ID).await.unwrap().is_none(), "still held: the process left without releasing");
    tokio::time::sleep(ttl.saturating_sub(locked_at.elapsed()) + Duration::from_millis(100)).await;
    let lease = m.lock(ID).await.unwrap().expect("the lease lapsed");
    assert!(lease.token > child_token);
    assert_eq!(m.read(ID).await.unwrap().unwrap().record, format!("child {child_token}"));
    assert!(m.unlock(&lease).await.unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_acknowledged_write_survives_a_killed_process() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("killed.db");
    drop(common::store(&path, Duration::from_secs(60), Retention::Keep));
    let mut child = ChildHolder::spawn_test("child_writer", CHILD_WRITER_DB, &path, Duration::from_secs(60));
    let mut acked = Vec::new();
    tokio::task::block_in_place(|| {
        while acked.len() < 200 {
            acked.push(child.expect("ACK "));
        }
    });
    // SIGKILL: no destructor, no checkpoint, whatever was in flight is lost, but not an acknowledged write.
    child.child.kill().unwrap();
    child.child.wait().unwrap();
    let m = common::store(&path, Duration::from_secs(60), Retention::Keep);
    for id in &acked {
        assert_eq!(m.read(id).await.unwrap().map(|s| s.record).as_ref(), Some(id), "{id} was acknowledged");
    }
}
