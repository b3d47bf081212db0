//! Group commit: concurrent operations share transactions, a failing one rolls back alone.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::store;
use orchestrator::memory::{Memory, MemoryError, MemoryExt, WriteMeta};
use orchestrator_sqlite::Retention;

const LONG: Duration = Duration::from_secs(60);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_writes_share_commits() {
    let dir = tempfile::tempdir().unwrap();
    let m = Arc::new(store(&dir.path().join("g.db"), LONG, Retention::Keep));
    let before = m.stats();
    let started = Instant::now();
    let tasks: Vec<_> = (0..64)
        .map(|i| {
            let m = Arc::clone(&m);
            tokio::spawn(async move {
                let id = format!("wf-{i}");
                m.write(&id, &format!("r{i}"), None, None, &WriteMeta::new(&id, "s")).await
            })
        })
        .collect();
    for task in tasks {
        assert_eq!(task.await.unwrap().unwrap(), 1);
    }
    let elapsed = started.elapsed();
    let after = m.stats();
    let (transactions, operations) =
        (after.transactions - before.transactions, after.operations - before.operations);
    eprintln!(
        "64 concurrent writes: {transactions} commits, largest group {}, {elapsed:?}",
        after.largest_group
    );
    assert_eq!(operations, 64);
    assert!(transactions < 32, "64 concurrent writes took {transactions} commits");
    for i in 0..64 {
        let id = format!("wf-{i}");
        assert_eq!(m.read(&id).await.unwrap().map(|s| s.record), Some(format!("r{i}")), "{id} is stored");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_operation_in_a_group_rolls_back_alone() {
    let dir = tempfile::tempdir().unwrap();
    let m = Arc::new(store(&dir.path().join("f.db"), LONG, Retention::Keep));
    // Every even task conflicts (writes over a record it claims does not exist).
    for i in (0..32).step_by(2) {
        let id = format!("wf-{i}");
        m.write(&id, &"seed".into(), None, None, &WriteMeta::new(&id, "s")).await.unwrap();
    }
    let tasks: Vec<_> = (0..32)
        .map(|i| {
            let m = Arc::clone(&m);
            tokio::spawn(async move {
                let id = format!("wf-{i}");
                m.write(&id, &"new".into(), None, None, &WriteMeta::new(&id, "s")).await
            })
        })
        .collect();
    for (i, task) in tasks.into_iter().enumerate() {
        let result = task.await.unwrap();
        if i % 2 == 0 {
            assert!(matches!(result, Err(MemoryError::Conflict { .. })), "wf-{i}: {result:?}");
            assert_eq!(m.read(&format!("wf-{i}")).await.unwrap().unwrap().record, "seed");
        } else {
            assert_eq!(result.unwrap(), 1, "wf-{i}");
            assert_eq!(m.read(&format!("wf-{i}")).await.unwrap().unwrap().record, "new");
        }
    }
    assert_eq!(m.stats().failed_transactions, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sequential_and_concurrent_throughput_figures() {
    // Not a benchmark: prints figures for the report, asserts only that grouping happens.
    let dir = tempfile::tempdir().unwrap();
    let m = Arc::new(store(&dir.path().join("t.db"), LONG, Retention::Keep));
    const N: usize = 200;
    let started = Instant::now();
    for i in 0..N {
        let id = format!("seq-{i}");
        m.write(&id, &"x".into(), None, None, &WriteMeta::new(&id, "s")).await.unwrap();
    }
    let sequential = started.elapsed();
    let commits_before = m.stats().transactions;
    let started = Instant::now();
    let tasks: Vec<_> = (0..N)
        .map(|i| {
            let m = Arc::clone(&m);
            tokio::spawn(async move {
                let id = format!("par-{i}");
                m.write(&id, &"x".into(), None, None, &WriteMeta::new(&id, "s")).await
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap().unwrap();
    }
    let concurrent = started.elapsed();
    let commits = m.stats().transactions - commits_before;
    eprintln!(
        "{N} sequential writes: {sequential:?} ({:?}/write); {N} concurrent writes: {concurrent:?} in {commits} commits",
        sequential / N as u32
    );
    assert!((commits as usize) < N);
}

/// The size of the database file itself (not its write-ahead log).
fn db_file_size(path: &std::path::Path) -> u64 {
    std::fs::metadata(path).map(|m| m.len()).unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_checkpointer_copies_the_log_into_the_database_file() {
    let dir = tempfile::tempdir().unwrap();
    let (fast, idle) = (dir.path().join("fast.db"), dir.path().join("idle.db"));
    // 2 kB that do not compress (records are stored deflated).
    let mut state = 0x2545_f491_4f6c_dd1d_u64;
    let big: String = (0..2_000)
        .map(|_| {
            state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            char::from(b'!' + u8::try_from(state >> 58).unwrap())
        })
        .collect();
    let mut sizes = Vec::new();
    for (path, every) in [(&fast, Duration::from_millis(10)), (&idle, Duration::from_secs(3_600))] {
        let m =
            orchestrator_sqlite::SqliteConfig::new(path).checkpoint_every(every).open::<String>().unwrap();
        for i in 0..300 {
            let id = format!("wf-{i}");
            m.write(&id, &big, None, None, &WriteMeta::new(&id, "s")).await.unwrap();
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
        sizes.push(db_file_size(path));
        drop(m);
    }
    // 300 records of 2 kB: the checkpointer has copied them into the file; with it idle, the
    // writer (which only checkpoints a much longer log) has not.
    assert!(sizes[0] > 500_000, "checkpointed: the file holds the records ({} bytes)", sizes[0]);
    assert!(
        sizes[1] < 100_000,
        "not checkpointed yet: the records are still in the log ({} bytes)",
        sizes[1]
    );
}
