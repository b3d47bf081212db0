//! The writer thread: it owns the write connection and commits queued operations in groups.
//!
//! Callers queue an operation (a closure run against the connection) and await its answer on a
//! oneshot channel. The thread takes the first queued operation, drains every other one already
//! queued (up to `max_group`), runs them in one `BEGIN IMMEDIATE` transaction, commits once, and
//! only then answers every caller of the group.
//!
//! A failing operation must not take the others down with it. Every operation makes its checks
//! (compare-and-swap, lease, fencing) before its first change, so one that fails has usually
//! changed nothing and the group goes on without it. One that failed after changing the database
//! (a statement error midway, an I/O error) breaks the group: the transaction is rolled back as
//! a whole and every caller of the group gets the error. (A savepoint per operation would confine
//! such rare failures, at the price of two more statements and a statement journal for every
//! operation: a fifth of the writer's time.)
//!
//! At the start of each group, under the write lock, the writer reads `PRAGMA data_version`: when
//! it changed, another connection committed since the last group, and the [`Epoch`] moves on so
//! that the record cache drops what it had (see [`crate::cache`]); the writer's own cache of the
//! journal's latest records ([`crate::tail_cache`]) is emptied then, and when a group fails.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, Sender};
use std::thread::JoinHandle;

use orchestrator::memory::MemoryError;
use rusqlite::{Connection, TransactionBehavior};
use tokio::sync::oneshot;

use crate::cache::Epoch;
use crate::error::{SqliteError, backend};
use crate::tail_cache;
use crate::time::now_ms;

/// Group-commit counters of one store (see [`crate::SqliteMemory::stats`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Stats {
    /// Group transactions committed.
    pub transactions: u64,
    /// Operations (acquires with a lock, commits, locks, renewals, unlocks, claims, cleanups,
    /// outbox steps) answered after a successful commit,
    /// including those that failed on their own (a CAS conflict, a stale lease).
    pub operations: u64,
    /// Group transactions that could not begin or commit (every operation in them failed).
    pub failed_transactions: u64,
    /// The most operations committed in one transaction.
    pub largest_group: u64,
}

#[derive(Debug, Default)]
pub(crate) struct Counters {
    transactions: AtomicU64,
    operations: AtomicU64,
    failed_transactions: AtomicU64,
    largest_group: AtomicU64,
}

impl Counters {
    pub(crate) fn snapshot(&self) -> Stats {
        Stats {
            transactions: self.transactions.load(Ordering::Relaxed),
            operations: self.operations.load(Ordering::Relaxed),
            failed_transactions: self.failed_transactions.load(Ordering::Relaxed),
            largest_group: self.largest_group.load(Ordering::Relaxed),
        }
    }
}

/// What runs on the writer connection: gets the connection and the current time (ms since the
/// Unix epoch).
type Work<T> = Box<dyn FnOnce(&Connection, i64) -> Result<T, MemoryError> + Send>;

/// A queued operation, its result once run, and the caller to answer.
struct Op<T> {
    id: String,
    work: Option<Work<T>>,
    result: Option<Result<T, MemoryError>>,
    reply: oneshot::Sender<Result<T, MemoryError>>,
}

/// An operation with its result type erased, as the writer handles it.
trait Queued: Send {
    /// Runs the operation; true when it succeeded.
    fn run(&mut self, conn: &Connection) -> bool;
    /// The group failed: an operation that had not failed on its own fails with `source`.
    fn fail(&mut self, stage: &'static str, source: &Arc<rusqlite::Error>);
    /// Answers the caller.
    fn answer(self: Box<Self>);
}

impl<T: Send> Queued for Op<T> {
    fn run(&mut self, conn: &Connection) -> bool {
        let result = match self.work.take() {
            Some(work) => work(conn, now_ms()),
            None => Err(backend(&self.id, SqliteError::WriterGone)),
        };
        let ok = result.is_ok();
        self.result = Some(result);
        ok
    }

    fn fail(&mut self, stage: &'static str, source: &Arc<rusqlite::Error>) {
        if !matches!(self.result, Some(Err(_))) {
            self.result =
                Some(Err(backend(&self.id, SqliteError::Group { stage, source: Arc::clone(source) })));
        }
    }

    fn answer(self: Box<Self>) {
        let result = self.result.unwrap_or_else(|| Err(backend(&self.id, SqliteError::WriterGone)));
        // The caller may have given up waiting (its future was dropped): nothing to do then.
        let _ = self.reply.send(result);
    }
}

/// The handle on the writer thread.
pub(crate) struct Writer {
    queue: Option<Sender<Box<dyn Queued>>>,
    thread: Option<JoinHandle<()>>,
}

impl Writer {
    /// Starts the writer thread on `conn`.
    pub(crate) fn start(
        conn: Connection,
        max_group: usize,
        counters: Arc<Counters>,
        epoch: Arc<Epoch>,
    ) -> Result<Self, std::io::Error> {
        let (queue, inbox) = std::sync::mpsc::channel();
        let thread = std::thread::Builder::new().name("sqlite-writer".to_owned()).spawn(move || {
            let mut foreign = ForeignCommits { epoch, seen: None };
            writer_loop(conn, &inbox, max_group.max(1), &counters, &mut foreign);
        })?;
        Ok(Self { queue: Some(queue), thread: Some(thread) })
    }

    /// Queues `work` for workflow `id` and waits for its answer, which comes once the group it
    /// ran in has committed.
    pub(crate) async fn submit<T, F>(&self, id: &str, work: F) -> Result<T, MemoryError>
    where
        T: Send + 'static,
        F: FnOnce(&Connection, i64) -> Result<T, MemoryError> + Send + 'static,
    {
        let (reply, answer) = oneshot::channel();
        let op = Op { id: id.to_owned(), work: Some(Box::new(work)), result: None, reply };
        let queue = self.queue.as_ref().ok_or_else(|| backend(id, SqliteError::WriterGone))?;
        queue.send(Box::new(op)).map_err(|_| backend(id, SqliteError::WriterGone))?;
        answer.await.map_err(|_| backend(id, SqliteError::WriterGone))?
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        // Closing the queue stops the thread once it has answered what was queued; joining it
        // closes the write connection (checkpointing the WAL) before the store is gone.
        self.queue = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn writer_loop(
    mut conn: Connection,
    inbox: &Receiver<Box<dyn Queued>>,
    max_group: usize,
    counters: &Counters,
    foreign: &mut ForeignCommits,
) {
    while let Ok(first) = inbox.recv() {
        let mut group = vec![first];
        while group.len() < max_group {
            match inbox.try_recv() {
                Ok(op) => group.push(op),
                Err(_) => break,
            }
        }
        run_group(&mut conn, &mut group, counters, foreign);
        for op in group {
            op.answer();
        }
    }
}

/// Runs `op`; an error when it failed after changing the database (or the failure ended the
/// transaction), which the group cannot survive.
fn run_op(conn: &Connection, op: &mut dyn Queued) -> rusqlite::Result<()> {
    let before = conn.total_changes();
    if op.run(conn) || (conn.total_changes() == before && !conn.is_autocommit()) {
        return Ok(());
    }
    Err(rusqlite::Error::SqliteFailure(
        rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_ABORT),
        Some("an operation failed after changing the database".to_owned()),
    ))
}

/// Notices commits of other connections to the database file.
struct ForeignCommits {
    epoch: Arc<Epoch>,
    /// `PRAGMA data_version` at the last group (`None` before the first).
    seen: Option<i64>,
}

impl ForeignCommits {
    /// Called under the write lock: moves the epoch on if another connection committed since
    /// the last call (or if that cannot be told).
    fn check(&mut self, conn: &Connection) {
        let now =
            conn.prepare_cached("PRAGMA data_version").and_then(|mut s| s.query_row([], |r| r.get(0))).ok();
        if now.is_none() || self.seen.is_some_and(|seen| Some(seen) != now) {
            self.epoch.advance();
            tail_cache::clear();
        }
        self.seen = now;
    }
}

/// Runs `group` in one transaction; each operation's result is set (failed if the group failed).
fn run_group(
    conn: &mut Connection,
    group: &mut [Box<dyn Queued>],
    counters: &Counters,
    foreign: &mut ForeignCommits,
) {
    let failed = |group: &mut [Box<dyn Queued>], stage, error| {
        // Whatever the group's writes put in the tail cache was not committed.
        tail_cache::clear();
        let error = Arc::new(error);
        for op in group.iter_mut() {
            op.fail(stage, &error);
        }
        counters.failed_transactions.fetch_add(1, Ordering::Relaxed);
    };
    let tx = match conn.transaction_with_behavior(TransactionBehavior::Immediate) {
        Ok(tx) => tx,
        Err(error) => return failed(group, "begin", error),
    };
    foreign.check(&tx);
    let mut broken = None;
    for op in group.iter_mut() {
        if let Err(error) = run_op(&tx, op.as_mut()) {
            broken = Some(error);
            break;
        }
    }
    if let Some(error) = broken {
        // The transaction can no longer be trusted: roll it all back.
        drop(tx);
        return failed(group, "complete", error);
    }
    match tx.commit() {
        Ok(()) => {
            let n = group.len() as u64;
            counters.transactions.fetch_add(1, Ordering::Relaxed);
            counters.operations.fetch_add(n, Ordering::Relaxed);
            counters.largest_group.fetch_max(n, Ordering::Relaxed);
        }
        Err(error) => failed(group, "commit", error),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn writer(dir: &tempfile::TempDir) -> (Writer, Arc<Counters>) {
        let conn = Connection::open(dir.path().join("w.db")).expect("open");
        conn.execute_batch("CREATE TABLE t (k TEXT PRIMARY KEY, v INTEGER NOT NULL)").expect("schema");
        let counters = Arc::new(Counters::default());
        let writer = Writer::start(conn, 64, Arc::clone(&counters), Arc::default()).expect("start");
        (writer, counters)
    }

    fn insert(k: &'static str) -> impl FnOnce(&Connection, i64) -> Result<usize, MemoryError> + Send {
        move |conn, _| conn.execute("INSERT INTO t VALUES (?1, 1)", [k]).map_err(|e| backend(k, e))
    }

    /// Checks first, like every real operation: fails without changing anything.
    fn refuse(k: &'static str) -> impl FnOnce(&Connection, i64) -> Result<usize, MemoryError> + Send {
        move |_, _| Err(MemoryError::Conflict { id: k.to_owned(), expected: None, found: Some(1) })
    }

    /// Changes a row, then fails.
    fn fail_midway(k: &'static str) -> impl FnOnce(&Connection, i64) -> Result<usize, MemoryError> + Send {
        move |conn, _| {
            conn.execute("INSERT INTO t VALUES (?1, 1)", [k]).map_err(|e| backend(k, e))?;
            conn.execute("INSERT INTO t VALUES (?1, 1)", [k]).map_err(|e| backend(k, e))
        }
    }

    fn rows(dir: &tempfile::TempDir) -> Vec<String> {
        let conn = Connection::open(dir.path().join("w.db")).expect("open");
        let mut s = conn.prepare("SELECT k FROM t ORDER BY k").expect("select");
        s.query_map([], |r| r.get(0)).expect("rows").collect::<Result<_, _>>().expect("rows")
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_operation_failing_before_any_change_leaves_its_group_alone() {
        let dir = tempfile::tempdir().expect("dir");
        let (w, counters) = writer(&dir);
        let (a, b, c) =
            tokio::join!(w.submit("a", insert("a")), w.submit("b", refuse("b")), w.submit("c", insert("c")));
        assert_eq!((a.ok(), c.ok()), (Some(1), Some(1)));
        assert!(matches!(b, Err(MemoryError::Conflict { .. })), "{b:?}");
        drop(w);
        assert_eq!(rows(&dir), ["a", "c"]);
        assert_eq!(counters.snapshot().failed_transactions, 0);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_failed_group_empties_the_tail_cache_of_what_its_writes_put() {
        let dir = tempfile::tempdir().expect("dir");
        let (w, _) = writer(&dir);
        // Puts an entry, inserts `k`, then inserts the same key again: the second insert fails
        // after a change, and the group rolls back.
        let put = |wf, k: &'static str| {
            move |conn: &Connection, _| {
                tail_cache::put(wf, 1, serde_json::json!(wf), 1);
                conn.execute("INSERT INTO t VALUES (?1, 1)", [k]).map_err(|e| backend(k, e))?;
                conn.execute("INSERT INTO t VALUES ('first', 1)", []).map_err(|e| backend(k, e))
            }
        };
        let taken = |wf| move |_: &Connection, _| Ok(tail_cache::take(wf, 1));
        w.submit("put", put(1, "first")).await.expect_err("the second insert fails");
        w.submit("put", put(1, "other")).await.expect("committed");
        let failed = w.submit("put", put(2, "more")).await;
        assert!(failed.is_err(), "{failed:?}");
        assert_eq!(w.submit("take", taken(2)).await.expect("ran"), None, "the rolled-back write's entry");
        assert_eq!(w.submit("take", taken(1)).await.expect("ran"), None, "every entry: the cache is emptied");
        w.submit("put", move |_: &Connection, _| {
            tail_cache::put(3, 1, serde_json::json!(3), 1);
            Ok(())
        })
        .await
        .expect("ran");
        assert_eq!(w.submit("take", taken(3)).await.expect("ran"), Some(serde_json::json!(3)));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_operation_failing_after_a_change_rolls_its_group_back() {
        let dir = tempfile::tempdir().expect("dir");
        let (w, counters) = writer(&dir);
        // Queued together: one group (the first may run alone before the others are queued).
        let (a, b, c) = tokio::join!(
            w.submit("a", insert("a")),
            w.submit("b", fail_midway("b")),
            w.submit("c", insert("c"))
        );
        let b = b.expect_err("b fails");
        assert!(b.to_string().contains("UNIQUE"), "b keeps its own error: {b}");
        drop(w);
        let stored = rows(&dir);
        assert!(!stored.contains(&"b".to_owned()), "b's first insert is rolled back: {stored:?}");
        // Whatever shared b's group failed with it and stored nothing; the rest committed.
        for (k, result) in [("a", a), ("c", c)] {
            match result {
                Ok(_) => assert!(stored.contains(&k.to_owned())),
                Err(e) => {
                    assert!(e.to_string().contains("failed after changing the database"), "{e}");
                    assert!(!stored.contains(&k.to_owned()));
                }
            }
        }
        assert_eq!(counters.snapshot().failed_transactions, 1);
    }
}
