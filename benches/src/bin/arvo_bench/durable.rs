//! The chain workload on the SQLite store: the full lifecycle (read, journal lookup, write with
//! the journal entry, group commit) through the in-process broker, with 1 or 1,000 workflows in
//! flight (or `--in-flight`), `synchronous=FULL` or `NORMAL`. `cpu_s` is the CPU time of the whole
//! process; once the run is over, the store is closed and its file measured (bytes per workflow,
//! per table and index: see [`footprint::sqlite`]). The store keeps finished workflows and their
//! journals (`Retention::Keep`, the default).

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use orchestrator::broker::Broker;
use orchestrator::handler::DynEventHandler;
use orchestrator::handler::EventHandler;
use orchestrator::orchestration::{Locking, Orchestrator, WorkflowRecord};
use orchestrator::outbox::{DynOutbox, Outboxed, publish};
use orchestrator::prelude::*;
use orchestrator::violation::Violation;
use orchestrator_examples::calculator::services;
use orchestrator_sqlite::{SqliteConfig, SqliteMemory, Synchronous};
use serde_json::{Value, json};

use super::footprint;
use super::history::{cpu_us_per_event_by_thread, process_cpu_s, threads_cpu_s};
use super::rig::{Measured, Recorder, warmup_units};
use super::{BoxError, CLIENT, ChainFlow, ChainV1, chain_input};

/// Times each orchestrator execution.
struct Timed<H> {
    inner: H,
    latencies: Arc<Mutex<Vec<f64>>>,
}

impl<H: EventHandler> EventHandler for Timed<H> {
    fn source(&self) -> &str {
        self.inner.source()
    }
    async fn execute(&self, event: &Event) -> Result<Vec<Event>, Violation> {
        let t0 = Instant::now();
        let out = self.inner.execute(event).await;
        let us = t0.elapsed().as_secs_f64() * 1e6;
        self.latencies.lock().unwrap_or_else(PoisonError::into_inner).push(us);
        out
    }
}

/// The client: checks each completion and starts the next workflow, keeping `in_flight` going.
struct Client {
    state: Mutex<ClientState>,
    factory: EventFactory<ChainV1>,
    done: tokio::sync::Notify,
}

struct ClientState {
    next: usize,
    end: usize,
    completed: usize,
    wrong: Option<String>,
    expected: std::collections::HashMap<String, f64>,
}

impl Client {
    fn init(&self, state: &mut ClientState) -> Result<Option<Event>, Violation> {
        if state.next >= state.end {
            return Ok(None);
        }
        let (input, result) = chain_input(state.next);
        state.next += 1;
        let init = self
            .factory
            .init(input, Event::builder().source(CLIENT))
            .map_err(|e| Violation::execution(e.to_string()))?;
        state.expected.insert(init.subject().to_owned(), result);
        Ok(Some(init))
    }
}

impl EventHandler for Client {
    fn source(&self) -> &str {
        CLIENT
    }
    async fn execute(&self, event: &Event) -> Result<Vec<Event>, Violation> {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let want = state.expected.remove(event.subject());
        let got = event.data_value().get("result").and_then(Value::as_f64);
        if want.is_none() || got != want {
            state.wrong = Some(format!("wrong completion (want {want:?}): {event:?}"));
        }
        state.completed += 1;
        let next = self.init(&mut state)?;
        if state.expected.is_empty() && next.is_none() {
            self.done.notify_one();
        }
        Ok(next.into_iter().collect())
    }
}

/// How much of the crash-safety machinery runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Safety {
    /// No outbox: the lifecycle's own cost on the store.
    Bare,
    /// The crash-safe setup, as a durable node builds it: each orchestrator step commits its
    /// outbox step (the consumed event out, the produced ones in) with its state and journal
    /// entry, in one transaction; the services and the client are wrapped in `Outboxed`; inits
    /// are published through the outbox.
    CrashSafe,
}

/// Wraps `handler` in the outbox when `safety` asks for it.
fn outboxed(
    handler: Arc<dyn DynEventHandler>,
    memory: &Arc<SqliteMemory<WorkflowRecord>>,
    safety: Safety,
) -> Arc<dyn DynEventHandler> {
    match safety {
        Safety::Bare => handler,
        Safety::CrashSafe => Arc::new(Outboxed::new(handler, Arc::clone(memory))),
    }
}

/// Runs `count` chain workflows from `start`, `in_flight` at a time, through a broker.
async fn run(
    memory: &Arc<SqliteMemory<WorkflowRecord>>,
    start: usize,
    count: usize,
    in_flight: usize,
    safety: Safety,
    latencies: &Arc<Mutex<Vec<f64>>>,
) -> Result<(usize, Duration), BoxError> {
    if count == 0 {
        // Nothing to start: the client would never be notified.
        return Ok((0, Duration::ZERO));
    }
    // No lease per step: the broker runs one event of a workflow at a time (its lanes are
    // exclusive, so a node on it would not lock either).
    let orc = Orchestrator::builder(Arc::clone(memory)).machine::<ChainFlow>().locking(Locking::Never);
    let orc = match safety {
        Safety::Bare => orc,
        // Each step's commit takes its outbox step, as on a durable node.
        Safety::CrashSafe => orc.outbox(Arc::clone(memory) as Arc<dyn DynOutbox>),
    }
    .build()?;
    let client = Arc::new(Client {
        state: Mutex::new(ClientState {
            next: start,
            end: start + count,
            completed: 0,
            wrong: None,
            expected: std::collections::HashMap::new(),
        }),
        factory: EventFactory::new(),
        done: tokio::sync::Notify::new(),
    });
    let broker = Broker::builder()
        // Timed outside the outbox step: it is part of what an execution costs.
        .handler(Timed { inner: orc, latencies: Arc::clone(latencies) })
        .shared_handler(outboxed(Arc::new(services::add()?), memory, safety))
        .shared_handler(outboxed(Arc::new(services::mul()?), memory, safety))
        .shared_handler(outboxed(Arc::clone(&client) as Arc<dyn DynEventHandler>, memory, safety))
        .workers(in_flight.clamp(1, 1024))
        .capacity(in_flight * 4 + 16)
        .build()?;
    let t0 = Instant::now();
    let inits: Vec<Event> = {
        let mut state = client.state.lock().unwrap_or_else(PoisonError::into_inner);
        (0..in_flight).map_while(|_| client.init(&mut state).transpose()).collect::<Result<_, _>>()?
    };
    for init in inits {
        match safety {
            Safety::Bare => broker.publish_wait(init).await?,
            Safety::CrashSafe => publish(&**memory, &broker.handle(), init).await?,
        }
    }
    client.done.notified().await;
    let wall = t0.elapsed();
    broker.shutdown().await;
    let state = client.state.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(wrong) = &state.wrong {
        return Err(wrong.clone().into());
    }
    let dead = broker.take_dead_letters();
    if !dead.is_empty() {
        return Err(format!("{} dead letters, first: {:?}", dead.len(), dead[0]).into());
    }
    Ok((state.completed, wall))
}

/// The workloads `sqlite_chain_<full|normal>_<in flight>` ([`Safety::Bare`]) and
/// `sqlite_chain_safe_<full|normal>_<in flight>` ([`Safety::CrashSafe`]).
pub(super) fn chain(
    n: usize,
    synchronous: Synchronous,
    in_flight: usize,
    safety: Safety,
) -> Result<Measured, BoxError> {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("bench.sqlite");
    let memory = Arc::new(
        SqliteConfig::new(&path).synchronous(synchronous).owner("arvo-bench").open::<WorkflowRecord>()?,
    );
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    let latencies = Arc::new(Mutex::new(Vec::new()));
    let warmup = warmup_units(n).min(500);
    rt.block_on(run(&memory, 0, warmup, in_flight, safety, &latencies))?;
    latencies.lock().unwrap_or_else(PoisonError::into_inner).clear();
    let cpu0 = process_cpu_s();
    let threads0 = threads_cpu_s();
    let (workflows, wall) = rt.block_on(run(&memory, warmup, n, in_flight, safety, &latencies))?;
    let cpu_s = process_cpu_s().zip(cpu0).map(|(end, start)| end - start);
    let threads = threads_cpu_s();
    let latencies_us = std::mem::take(&mut *latencies.lock().unwrap_or_else(PoisonError::into_inner));
    // Orchestrator executions are timed; each workflow also has two service executions.
    let events = latencies_us.len() as u64 + 2 * workflows as u64;
    let stats = memory.stats();
    let mut params = json!({
        "warmup": warmup,
        "in_flight": in_flight,
        "memory": format!("SqliteMemory(synchronous={synchronous:?})"),
        "broker": match safety {
            Safety::Bare => "Broker(Locking::Never)",
            Safety::CrashSafe => "Broker(Locking::Never; the orchestrator's commits take the outbox step, the other handlers Outboxed)",
        },
        "latency": "orchestrator executions",
        "commits": stats.transactions,
        "operations": stats.operations,
        "cpu": "process",
        "cpu_us_per_event_by_thread": cpu_us_per_event_by_thread(&threads0, &threads, events),
        "retention": "Retention::Keep (SqliteConfig's default, as in the README's quickstart)",
    });
    // The bytes the store keeps for the warm-up's and the measured workflows, once it is closed.
    drop(memory);
    drop(rt);
    if let (Value::Object(params), Value::Object(kept)) = (&mut params, footprint::sqlite(&path)?) {
        params.extend(kept);
    }
    // Several threads: `cpu_s` is the CPU time of all of them (the store's writer thread, its
    // readers and the runtime's workers).
    Ok(Measured { workflows, rec: Recorder { latencies_us, events }, wall, cpu_s, params })
}
