//! What the node workloads share (PostgreSQL's queue, NATS): a client that keeps a number of
//! workflows in flight, starting the next one as each completes; latency samples between a
//! workflow's consecutive executions; CPU time of this process and of a server's processes.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use orchestrator::handler::EventHandler;
use orchestrator::memory::Memory;
use orchestrator::orchestration::WorkflowRecord;
use orchestrator::prelude::*;
use orchestrator::runtime::Node;
use orchestrator::transport::Transport;
use orchestrator::violation::Violation;
use serde_json::Value;

use super::BoxError;
use super::rig::Client;

/// The end of each workflow's last service or client execution, and the samples.
#[derive(Default)]
pub(super) struct Hops {
    last: Mutex<HashMap<String, Instant>>,
    samples: Mutex<Vec<f64>>,
}

impl Hops {
    /// An execution of workflow `subject` starts: one sample since its previous one ended.
    pub(super) fn enter(&self, subject: &str) {
        let now = Instant::now();
        let last = self.last.lock().unwrap_or_else(PoisonError::into_inner).get(subject).copied();
        if let Some(last) = last {
            let us = now.duration_since(last).as_secs_f64() * 1e6;
            self.samples.lock().unwrap_or_else(PoisonError::into_inner).push(us);
        }
    }

    /// An execution of workflow `subject` ends.
    pub(super) fn leave(&self, subject: &str) {
        self.last.lock().unwrap_or_else(PoisonError::into_inner).insert(subject.to_owned(), Instant::now());
    }

    pub(super) fn forget(&self, subject: &str) {
        self.last.lock().unwrap_or_else(PoisonError::into_inner).remove(subject);
    }

    pub(super) fn take(&self) -> Vec<f64> {
        std::mem::take(&mut *self.samples.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

/// A service whose executions are sampled by [`Hops`].
pub(super) struct Hopped<H> {
    pub(super) inner: H,
    pub(super) hops: Arc<Hops>,
}

impl<H: EventHandler> EventHandler for Hopped<H> {
    fn source(&self) -> &str {
        self.inner.source()
    }
    async fn execute(&self, event: &Event) -> Result<Vec<Event>, Violation> {
        self.hops.enter(event.subject());
        let out = self.inner.execute(event).await;
        self.hops.leave(event.subject());
        out
    }
}

/// Which workflows the client starts, which are in flight and which completed.
struct Range {
    next: usize,
    end: usize,
    completed: usize,
    wrong: Option<String>,
    expected: HashMap<String, f64>,
}

/// The client (a service of the node, on topic `com.bench.client`): checks each completion and
/// starts the next workflow in its place, keeping the same number in flight.
pub(super) struct LoopClient<C> {
    client: C,
    range: Mutex<Range>,
    done: tokio::sync::Notify,
    hops: Arc<Hops>,
}

impl<C: Client + Send + Sync + 'static> LoopClient<C> {
    pub(super) fn new(client: C, hops: Arc<Hops>) -> Self {
        Self {
            client,
            range: Mutex::new(Range { next: 0, end: 0, completed: 0, wrong: None, expected: HashMap::new() }),
            done: tokio::sync::Notify::new(),
            hops,
        }
    }

    /// The init event of the next workflow, if any is left.
    fn init(&self, range: &mut Range) -> Result<Option<Event>, BoxError> {
        if range.next >= range.end {
            return Ok(None);
        }
        let (init, result) = self.client.init(range.next)?;
        range.next += 1;
        range.expected.insert(init.subject().to_owned(), result);
        Ok(Some(init))
    }

    /// Workflows `start..start + count` from now on: returns the first `in_flight` inits.
    fn begin(&self, start: usize, count: usize, in_flight: usize) -> Result<Vec<Event>, BoxError> {
        let mut range = self.range.lock().unwrap_or_else(PoisonError::into_inner);
        *range =
            Range { next: start, end: start + count, completed: 0, wrong: None, expected: HashMap::new() };
        let mut inits = Vec::with_capacity(in_flight);
        for _ in 0..in_flight {
            match self.init(&mut range)? {
                Some(init) => {
                    self.hops.leave(init.subject());
                    inits.push(init);
                }
                None => break,
            }
        }
        Ok(inits)
    }

    /// How many completed, or what was wrong.
    fn outcome(&self) -> Result<usize, BoxError> {
        let range = self.range.lock().unwrap_or_else(PoisonError::into_inner);
        match &range.wrong {
            Some(wrong) => Err(wrong.clone().into()),
            None => Ok(range.completed),
        }
    }
}

/// The node's handle on the shared [`LoopClient`].
pub(super) struct ClientHandler<C>(pub(super) Arc<LoopClient<C>>);

impl<C: Client + Send + Sync + 'static> EventHandler for ClientHandler<C> {
    fn source(&self) -> &str {
        super::CLIENT
    }
    async fn execute(&self, event: &Event) -> Result<Vec<Event>, Violation> {
        self.0.execute(event)
    }
}

impl<C: Client + Send + Sync + 'static> LoopClient<C> {
    fn execute(&self, event: &Event) -> Result<Vec<Event>, Violation> {
        self.hops.enter(event.subject());
        self.hops.forget(event.subject());
        let mut range = self.range.lock().unwrap_or_else(PoisonError::into_inner);
        let want = range.expected.remove(event.subject());
        let got = event.data_value().get(C::RESULT_FIELD).and_then(Value::as_f64);
        if want.is_none() || got != want || event.r#type() != C::DONE_TYPE {
            range.wrong.get_or_insert_with(|| format!("wrong completion (want {want:?}): {event:?}"));
        }
        range.completed += 1;
        let next = self.init(&mut range).map_err(|e| Violation::execution(e.to_string()))?;
        if let Some(init) = &next {
            self.hops.leave(init.subject());
        }
        if range.expected.is_empty() && next.is_none() {
            self.done.notify_one();
        }
        Ok(next.into_iter().collect())
    }
}

/// Runs workflows `start..start + count` with `in_flight` at a time through `node`, whose client
/// is `client`; returns the completed workflows and the wall time.
pub(super) async fn drive<C, M, T>(
    node: &Node<M, T>,
    client: &Arc<LoopClient<C>>,
    start: usize,
    count: usize,
    in_flight: usize,
) -> Result<(usize, Duration), BoxError>
where
    C: Client + Send + Sync + 'static,
    M: Memory<WorkflowRecord> + 'static,
    T: Transport,
{
    if count == 0 {
        // Nothing to start, so no completion would ever come (a tiny run has no warm-up).
        return Ok((0, Duration::ZERO));
    }
    let t0 = Instant::now();
    let notified = client.done.notified();
    tokio::pin!(notified);
    notified.as_mut().enable();
    for init in client.begin(start, count, in_flight)? {
        node.start(init).await?;
    }
    notified.await;
    let wall = t0.elapsed();
    Ok((client.outcome()?, wall))
}

/// Clock ticks of a `/proc/<pid>/stat` line (utime + stime), if its command is `command`.
fn ticks_of(stat: &str, command: &str) -> Option<u64> {
    let (head, rest) = stat.rsplit_once(')')?;
    if head.rsplit_once('(').map(|(_, name)| name) != Some(command) {
        return None;
    }
    // After the command: state (field 3) … utime (14), stime (15).
    let fields: Vec<&str> = rest.split_whitespace().collect();
    Some(fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?)
}

/// Clock ticks used so far by each process named `command` (a server: `postgres`,
/// `nats-server`) alive now.
pub(super) fn server_ticks(command: &str) -> HashMap<u32, u64> {
    let Ok(dir) = std::fs::read_dir("/proc") else { return HashMap::new() };
    dir.filter_map(Result::ok)
        .filter_map(|e| {
            let pid = e.file_name().to_str()?.parse::<u32>().ok()?;
            let ticks = ticks_of(&std::fs::read_to_string(e.path().join("stat")).ok()?, command)?;
            Some((pid, ticks))
        })
        .collect()
}

/// CPU seconds the server's processes used from `before` to `after`: those alive at
/// the end (a process that ended in between is not counted; one that started counts whole).
pub(super) fn server_cpu_s(before: &HashMap<u32, u64>, after: &HashMap<u32, u64>) -> f64 {
    let ticks: u64 =
        after.iter().map(|(pid, t)| t.saturating_sub(before.get(pid).copied().unwrap_or(0))).sum();
    ticks as f64 / 100.0
}

/// CPU seconds used so far by this process (all its threads).
pub(super) fn process_cpu_s() -> f64 {
    std::fs::read_to_string("/proc/self/stat")
        .ok()
        .and_then(|s| {
            let (_, rest) = s.rsplit_once(')')?;
            let fields: Vec<&str> = rest.split_whitespace().collect();
            Some(fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?)
        })
        .map_or(0.0, |ticks| ticks as f64 / 100.0)
}

/// A random `u64` without another dependency.
pub(super) fn random_u64() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_nanos(),
    );
    h.write_u32(std::process::id());
    h.finish()
}
