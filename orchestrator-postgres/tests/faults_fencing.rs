//! Fencing: a worker paused past its lease cannot write when it resumes, and another worker
//! finishes its workflows.
//!
//! A child process (this test binary run again: `fencing_child`, ignored in a normal run) runs a
//! durable node with 2 s leases over a store whose commits announce themselves
//! (`COMMITTING <id>`) and pause for half a second before they are sent. As soon as the first
//! one shows, the parent stops the child with SIGSTOP: it holds leases and is about to write.
//! Once the leases have lapsed, the parent runs a node of its own (another node id, the same
//! schema), which takes over the events in flight from the outbox and finishes every workflow.
//! Then the child gets SIGCONT: each commit it was about to send is refused (printed as
//! `COMMIT <id> Err(…)`): with `StaleLease` where steps take leases, with `Conflict` (the
//! compare-and-swap on the record's version) on the queue, whose claims serialize a workflow's
//! steps instead of a lease (`Transport::exclusive_lanes`). Its retries find the journal's
//! answers instead of stepping the workflows again, and the journals the parent wrote are
//! exactly as they were: each workflow completed once, gapless, nothing left in flight.

mod common;

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::Arc;
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use orchestrator::event::Event;
use orchestrator::memory::{
    Acquired, Commit, EventKey, Journal, JournalRecord, Lease, Memory, MemoryError, NodeId, Retention,
    Stored, Wake,
};
use orchestrator::orchestration::WorkflowRecord;
use orchestrator::outbox::{Outbox, Pending};
use orchestrator_postgres::PgStore;

use common::workload::{self, Client, Completion};

const CHILD_URL: &str = "ORCHESTRATOR_FENCING_URL";
const CHILD_SCHEMA: &str = "ORCHESTRATOR_FENCING_SCHEMA";
const WORKFLOWS: usize = 4;
/// The child's lease TTL.
const CHILD_LEASE: Duration = Duration::from_secs(2);
/// How long each of the child's commits waits before it is sent: the parent's window to stop it.
const COMMIT_PAUSE: Duration = Duration::from_millis(500);

/// A test-only store decorator: every call goes to `inner`, but a commit first prints
/// `COMMITTING <id>` and waits [`COMMIT_PAUSE`], then prints `COMMIT <id> <result>`.
struct AnnouncedCommits {
    inner: PgStore<WorkflowRecord>,
}

impl Memory<WorkflowRecord> for AnnouncedCommits {
    async fn read(&self, id: &str) -> Result<Option<Stored<WorkflowRecord>>, MemoryError> {
        self.inner.read(id).await
    }

    async fn lock(&self, id: &str) -> Result<Option<Lease>, MemoryError> {
        self.inner.lock(id).await
    }

    async fn renew(&self, lease: &Lease) -> Result<Lease, MemoryError> {
        self.inner.renew(lease).await
    }

    async fn unlock(&self, lease: &Lease) -> Result<bool, MemoryError> {
        self.inner.unlock(lease).await
    }

    async fn acquire(
        &self,
        id: &str,
        event: EventKey<'_>,
        lock: bool,
    ) -> Result<Option<Acquired<WorkflowRecord>>, MemoryError> {
        self.inner.acquire(id, event, lock).await
    }

    async fn commit(&self, commit: Commit<'_, WorkflowRecord>) -> Result<u64, MemoryError> {
        let id = commit.id.to_owned();
        println!("COMMITTING {id}");
        tokio::time::sleep(COMMIT_PAUSE).await;
        let result = self.inner.commit(commit).await;
        println!("COMMIT {id} {result:?}");
        result
    }

    async fn produced(&self, id: &str, event: EventKey<'_>) -> Result<Option<Vec<Event>>, MemoryError> {
        self.inner.produced(id, event).await
    }

    async fn claim_due(&self, limit: usize, claim: Duration) -> Result<Vec<Wake>, MemoryError> {
        self.inner.claim_due(limit, claim).await
    }

    async fn cleanup(&self, id: &str) -> Result<(), MemoryError> {
        self.inner.cleanup(id).await
    }
}

impl Outbox for AnnouncedCommits {
    async fn advance(&self, consumed: Option<&str>, produced: &[Event]) -> Result<(), MemoryError> {
        self.inner.advance(consumed, produced).await
    }

    async fn pending(&self, after: u64, limit: usize) -> Result<Vec<Pending>, MemoryError> {
        self.inner.pending(after, limit).await
    }

    fn queue_id(&self) -> Option<&str> {
        self.inner.queue_id()
    }
}

/// The child: starts the workflows on its node, then, once the parent writes a line (or closes
/// its stdin), waits until every workflow is finished and nothing is in flight, and stops.
#[test]
#[ignore = "the child process of `a_worker_paused_past_its_lease_cannot_write_and_another_finishes`"]
fn fencing_child() {
    let url = std::env::var(CHILD_URL).expect("run by the fencing test");
    let schema = std::env::var(CHILD_SCHEMA).expect("run by the fencing test");
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    rt.block_on(async {
        let mut config = common::config(&url, &schema, CHILD_LEASE, Retention::Keep);
        config.node = NodeId::new("fencing-child");
        let store = Arc::new(AnnouncedCommits { inner: PgStore::open(config).await.unwrap() });
        // Every workflow in flight at once, before any runs: the node publishes them all.
        let inits: Vec<Event> = (0..WORKFLOWS).map(|i| workload::init_event(&schema, i)).collect();
        store.advance(None, &inits).await.unwrap();
        let node =
            workload::node_builder(Arc::clone(&store), workload::transport(&store.inner), Client::printing())
                .retry(workload::patient_retry())
                .on_dead_letter(|dead| println!("DEAD {}: {}", dead.event.id(), dead.reason))
                .build()
                .await
                .unwrap();
        println!("STARTED {}", inits.len());
        let finish = tokio::task::spawn_blocking(|| std::io::stdin().lock().read_line(&mut String::new()));
        tokio::time::timeout(Duration::from_secs(120), finish).await.unwrap().unwrap().unwrap();
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let mut finished = 0;
            for init in &inits {
                if store.read(init.subject()).await.unwrap().is_some_and(|s| s.record.done) {
                    finished += 1;
                }
            }
            if finished == inits.len() && store.pending(0, 1).await.unwrap().is_empty() {
                break;
            }
            assert!(Instant::now() < deadline, "the child did not settle: {finished} finished");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        tokio::time::timeout(Duration::from_secs(30), node.shutdown()).await.unwrap();
        println!("CHILD DONE retried={}", node.dispatcher().stats().retried);
    });
}

/// The child process, stopped, resumed and killed by its handle; killed (after a SIGCONT) when
/// dropped.
struct ChildProcess {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    /// Every line read so far, from its first tag on (libtest may print its own text first).
    log: Vec<String>,
}

const TAGS: [&str; 6] = ["COMMITTING ", "COMMIT ", "COMPLETED ", "STARTED ", "CHILD DONE", "DEAD "];

impl ChildProcess {
    fn spawn(url: &str, schema: &str) -> Self {
        let mut child = Command::new(std::env::current_exe().expect("the test binary"))
            .args(["--exact", "fencing_child", "--ignored", "--nocapture", "--test-threads", "1"])
            .env(CHILD_URL, url)
            .env(CHILD_SCHEMA, schema)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("spawn the child");
        let stdout = child.stdout.take().expect("the child's stdout");
        let stdin = child.stdin.take();
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let from = TAGS.iter().filter_map(|tag| line.find(tag)).min();
                if let Some(from) = from
                    && tx.send(line[from..].to_owned()).is_err()
                {
                    break;
                }
            }
        });
        Self { child, stdin, lines, log: Vec::new() }
    }

    /// Reads lines until the log satisfies `wanted` (true) or `within` passes (false).
    fn wait_for(&mut self, within: Duration, wanted: impl Fn(&[String]) -> bool) -> bool {
        let deadline = Instant::now() + within;
        while !wanted(&self.log) {
            let Some(left) = deadline.checked_duration_since(Instant::now()) else { return false };
            match self.lines.recv_timeout(left) {
                Ok(line) => self.log.push(line),
                Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => return false,
            }
        }
        true
    }

    /// Reads what the child printed until it ends its output, at most `within`.
    fn drain(&mut self, within: Duration) {
        let deadline = Instant::now() + within;
        while let Some(left) = deadline.checked_duration_since(Instant::now()) {
            match self.lines.recv_timeout(left) {
                Ok(line) => self.log.push(line),
                Err(_) => return,
            }
        }
    }

    fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(self.child.id().to_string())
            .status()
            .expect("run kill");
        assert!(status.success(), "kill -{signal} {}", self.child.id());
    }

    /// Tells the child to settle and stop.
    fn finish(&mut self) {
        if let Some(mut stdin) = self.stdin.take() {
            let _ = writeln!(stdin, "FINISH");
        }
    }

    /// Waits for the child to exit, at most `within`; whether it succeeded.
    fn wait(&mut self, within: Duration) -> bool {
        let deadline = Instant::now() + within;
        loop {
            if let Some(status) = self.child.try_wait().expect("the child's status") {
                return status.success();
            }
            if Instant::now() > deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn lines_tagged<'a>(&'a self, tag: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.log.iter().filter_map(move |l| l.strip_prefix(tag))
    }
}

impl Drop for ChildProcess {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = Command::new("kill").arg("-CONT").arg(self.child.id().to_string()).status();
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Every workflow's journal.
async fn journals(
    store: &PgStore<WorkflowRecord>,
    inits: &[Event],
) -> Vec<Vec<JournalRecord<WorkflowRecord>>> {
    let mut all = Vec::new();
    for init in inits {
        all.push(store.history(init.subject(), 0, 100).await.expect("the journal"));
    }
    all
}

#[test]
fn a_worker_paused_past_its_lease_cannot_write_and_another_finishes() {
    let Some(url) = common::database_url() else { return };
    let schema = common::fresh_schema();
    let inits: Vec<Event> = (0..WORKFLOWS).map(|i| workload::init_event(&schema, i)).collect();
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let started = Instant::now();

    let mut child = ChildProcess::spawn(&url, &schema);
    let about_to_write =
        child.wait_for(Duration::from_secs(60), |log| log.iter().any(|l| l.starts_with("COMMITTING ")));
    assert!(about_to_write, "the child never came to commit:\n{}", child.log.join("\n"));
    let seen = Instant::now();
    child.signal("STOP");
    let stopped = Instant::now();
    let stop_latency = stopped - seen;
    let first = child.lines_tagged("COMMITTING ").next().expect("a commit announced").to_owned();

    // Past the child's leases (judged by the database's clock, on this machine).
    std::thread::sleep(CHILD_LEASE + Duration::from_secs(1));
    let (parent_completions, before) = rt.block_on(async {
        let mut config = common::config(&url, &schema, Duration::from_secs(10), Retention::Keep);
        config.node = NodeId::new("fencing-parent");
        let store = Arc::new(PgStore::<WorkflowRecord>::open(config).await.expect("open"));
        let client = Client::default();
        let node = workload::node_builder(Arc::clone(&store), workload::transport(&store), client.clone())
            .retry(workload::patient_retry())
            .build()
            .await
            .expect("the parent's node");
        let done = client.wait_for(WORKFLOWS, Duration::from_secs(60)).await;
        let dead = node.take_dead_letters();
        tokio::time::timeout(Duration::from_secs(30), node.shutdown())
            .await
            .expect("the parent's node stops");
        assert!(done, "the parent finished only {} of {WORKFLOWS} workflows", client.completed());
        assert!(dead.is_empty(), "the parent dead-lettered {} events", dead.len());
        (client.completions(), journals(&store, &inits).await)
    });
    let parent_took = stopped.elapsed();

    child.signal("CONT");
    // Each commit the child announced gets its answer.
    let answered = child.wait_for(Duration::from_secs(30), |log| {
        let announced = log.iter().filter(|l| l.starts_with("COMMITTING ")).count();
        let answers = log.iter().filter(|l| l.starts_with("COMMIT ")).count();
        answers >= announced
    });
    assert!(answered, "the child's commits were not answered:\n{}", child.log.join("\n"));
    // Its retries settle (a retry comes within a second with this policy); then it stops.
    child.drain(Duration::from_secs(2));
    child.finish();
    let ok = child.wait(Duration::from_secs(90));
    child.drain(Duration::from_secs(5));
    let log = child.log.join("\n");
    assert!(ok && log.contains("CHILD DONE"), "the child failed:\n{log}");
    println!("the child's output:\n  {}", child.log.join("\n  "));
    println!(
        "{WORKFLOWS} workflows; the child was stopped {stop_latency:?} after its first commit showed, the parent finished them in \
         {parent_took:?}; {} commits of the child refused; {:?} in all",
        child.lines_tagged("COMMIT ").count(),
        started.elapsed()
    );

    // The child's stale commits were all refused: the first one first.
    let answer_of = |id: &str| {
        child.lines_tagged("COMMIT ").find_map(|l| l.strip_prefix(id)).map(str::trim).map(str::to_owned)
    };
    let first_answer = answer_of(&first).expect("the first commit's answer");
    let refused = |answer: &str| answer.starts_with("Err(StaleLease") || answer.starts_with("Err(Conflict");
    assert!(
        refused(&first_answer),
        "the commit the child was stopped in ({stop_latency:?} after it showed) was refused, not {first_answer}:\n{log}"
    );
    for answer in child.lines_tagged("COMMIT ") {
        let answer = answer.split_once(' ').map_or(answer, |(_, result)| result);
        assert!(refused(answer), "a commit of the child went through: {answer}\n{log}");
    }
    assert!(!log.contains("DEAD "), "the child dead-lettered an event:\n{log}");

    rt.block_on(async {
        let mut config = common::config(&url, &schema, Duration::from_secs(10), Retention::Keep);
        config.node = NodeId::new("fencing-checker");
        let store = PgStore::<WorkflowRecord>::open(config).await.expect("open");
        // What the parent wrote is exactly as it was.
        assert_eq!(journals(&store, &inits).await, before, "the child changed no journal");
        // Completions the child received count too: a second one for a workflow would show.
        let mut completions: HashMap<String, Completion> = parent_completions;
        for line in child.lines_tagged("COMPLETED ") {
            let [subject, id, average] = line.split(' ').collect::<Vec<_>>()[..] else {
                panic!("a completion line: {line}")
            };
            completions
                .entry(id.to_owned())
                .or_insert(Completion {
                    subject: subject.to_owned(),
                    average: average.parse().expect("an average"),
                    deliveries: 0,
                })
                .deliveries += 1;
        }
        workload::check(&store, &completions, &inits).await;
        common::drop_schema(&url, &schema).await;
    });
}
