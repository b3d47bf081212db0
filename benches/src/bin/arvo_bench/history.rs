//! `orchestrator_loop_<L>` and `sqlite_loop_normal_<L>`: cost per event against a workflow's history
//! length. The machine stays in state `adding` and calls `com.calc.add` L times in a row, one call
//! at a time: each sum comes back to a guarded transition of `adding` that stores it and emits the
//! next call, until the L-th sum takes it to `done`. One workflow has L + 1 orchestrator executions
//! (so a journal of L + 1 entries) and L handler executions: 2L + 1 `execute()` calls. Its context is
//! a few numbers whatever L, so the record written at each execution has a constant size (unlike
//! the fan-out's, which holds K sums).
//!
//! The workflows run one at a time through the rig's FIFO loop, on `InMemory` (journal on, the
//! default) or on `SqliteMemory` (`synchronous=NORMAL`, `Locking::Never` as the other single-loop
//! SQLite runs: the FIFO loop runs one event of a workflow at a time). Besides the rig's latencies over
//! every `execute()`, `params` gives the orchestrator executions' own p50/p99 (`orc_p50_us`,
//! `orc_p99_us`) and the p50 over the first and the last tenth of each workflow's loop steps
//! (`orc_first_p50_us`, `orc_last_p50_us`: the same step on a short and on a long journal), and of
//! the init and final executions (`orc_init_p50_us`, `orc_final_p50_us`).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use orchestrator::handler::EventHandler;
use orchestrator::orchestration::{Locking, Orchestrator, WorkflowRecord};
use orchestrator::prelude::*;
use orchestrator::violation::Violation;
use orchestrator_examples::calculator::{AddV1, Operands, Sum};
use orchestrator_sqlite::{SqliteConfig, Synchronous};
use serde_json::{Value, json};
use tokio::runtime::Runtime;

use super::rig::{self, Client, Measured, Phase, Recorder, Rig, warmup_units};
use super::{BoxError, CLIENT, memory, percentile, round};

/// Starts a loop workflow: `steps` additions of 1, starting from `a`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LoopInput {
    /// The starting value.
    pub a: f64,
    /// How many calls to make, one after the other (L ≥ 1).
    pub steps: u32,
}

/// The loop's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LoopOutput {
    /// `a + steps`.
    pub result: f64,
}

orchestrator::orchestrator_contract! {
    /// The benchmark loop: L additions one after the other, each on the previous sum.
    pub contract Loop {
        uri: "#/orc/bench/loop",
        name: "bench.loop",
        versions: {
            LoopV1 = "1.0.0" { init: LoopInput, complete: LoopOutput },
        },
    }
}

/// Context of the loop machine: constant in size, whatever the number of steps.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct LoopCtx {
    /// The running value: `a`, then each sum.
    acc: f64,
    /// Sums received so far.
    done: u32,
    /// Sums to receive (L).
    steps: u32,
}

fn emit_add(ctx: &mut LoopCtx, _: &LoopFlowEvent, out: &mut LoopFlowOutbox<'_>) {
    out.add(Operands { a: ctx.acc, b: 1.0 });
}

fn store_sum(ctx: &mut LoopCtx, event: &LoopFlowEvent, _: &mut LoopFlowOutbox<'_>) {
    if let LoopFlowEvent::AddSum(s) = event {
        ctx.acc = s.sum;
        ctx.done += 1;
    }
}

/// Whether the sum being received is not the last one (checked before `store_sum` counts it).
fn more_to_go(ctx: &LoopCtx, _: &LoopFlowEvent) -> bool {
    ctx.done + 1 < ctx.steps
}

orchestrator::machine! {
    /// `adding` (emit add on entry; on each sum, store it and emit the next add while sums remain)
    /// → `done` on the L-th sum.
    pub machine LoopFlow {
        contract: LoopV1,
        services: { add: AddV1 },
        context: LoopCtx,
        init: |input| LoopCtx { acc: input.a, done: 0, steps: input.steps },
        output: |ctx| LoopOutput { result: ctx.acc },
        states: {
            adding: {
                entry: [emit_add],
                on: {
                    add::Sum => [
                        { guard: more_to_go, actions: [store_sum, emit_add] },
                        { target: done, actions: [store_sum] },
                    ],
                    add::error => failed,
                },
            },
            done: { type: final },
            failed: { type: final },
        },
    }
}

/// Starts loop workflows of `steps` calls and expects `result = a + steps`.
struct LoopClient {
    factory: EventFactory<LoopV1>,
    steps: u32,
}

impl Client for LoopClient {
    const DONE_TYPE: &'static str = "arvo.orc.bench.loop.done";
    const RESULT_FIELD: &'static str = "result";

    fn init(&self, i: usize) -> Result<(Event, f64), BoxError> {
        let a = (i % 1000) as f64;
        let init = self.factory.init(LoopInput { a, steps: self.steps }, Event::builder().source(CLIENT))?;
        Ok((init, a + f64::from(self.steps)))
    }
}

/// Times each execution of the orchestrator, apart from the rig's samples over every `execute()`.
struct Timed<H> {
    inner: H,
    latencies_us: Arc<Mutex<Vec<f64>>>,
}

impl<H: EventHandler> EventHandler for Timed<H> {
    fn source(&self) -> &str {
        self.inner.source()
    }
    async fn execute(&self, event: &Event) -> Result<Vec<Event>, Violation> {
        let t0 = Instant::now();
        let out = self.inner.execute(event).await;
        let us = t0.elapsed().as_secs_f64() * 1e6;
        self.latencies_us.lock().unwrap_or_else(PoisonError::into_inner).push(us);
        out
    }
}

/// The orchestrator executions' p50/p99 in `params`: overall; the p50 over the first and the last
/// tenth of each workflow's continuing executions (the sums 1 to L − 1, which all do the same work:
/// store the sum, emit the next call); the p50 of the init and of the final execution. `samples`
/// holds whole workflows of `steps + 1` executions, in order.
fn orchestrator_latencies(params: &mut serde_json::Value, samples: &[f64], steps: u32) {
    let steps = steps as usize;
    let tenth = (steps / 10).max(1);
    let mut all = samples.to_vec();
    let mut first = Vec::new();
    let mut last = Vec::new();
    let mut inits = Vec::new();
    let mut finals = Vec::new();
    for workflow in samples.chunks_exact(steps + 1) {
        inits.push(workflow[0]);
        finals.push(workflow[steps]);
        let continuing = &workflow[1..steps];
        first.extend_from_slice(&continuing[..tenth.min(continuing.len())]);
        last.extend_from_slice(&continuing[continuing.len().saturating_sub(tenth)..]);
    }
    for xs in [&mut all, &mut first, &mut last, &mut inits, &mut finals] {
        xs.sort_by(f64::total_cmp);
    }
    let r = |x: f64| (x * 100.0).round() / 100.0;
    params["orc_executions"] = json!(all.len());
    params["orc_p50_us"] = json!(r(percentile(&all, 50.0)));
    params["orc_p99_us"] = json!(r(percentile(&all, 99.0)));
    params["orc_first_p50_us"] = json!(r(percentile(&first, 50.0)));
    params["orc_last_p50_us"] = json!(r(percentile(&last, 50.0)));
    params["orc_init_p50_us"] = json!(r(percentile(&inits, 50.0)));
    params["orc_final_p50_us"] = json!(r(percentile(&finals, 50.0)));
}

/// The workload `orchestrator_loop_<steps>`: `n` loop workflows of `steps` calls, one at a time, on
/// `InMemory`.
pub(crate) fn in_memory(rt: &Runtime, n: usize, steps: u32) -> Result<Measured, BoxError> {
    let latencies_us = Arc::new(Mutex::new(Vec::new()));
    let orc = Orchestrator::builder(memory()).machine::<LoopFlow>().build()?;
    let orc = Timed { inner: orc, latencies_us: Arc::clone(&latencies_us) };
    let per_workflow = 2 * steps as usize + 1;
    let client = LoopClient { factory: EventFactory::new(), steps };
    // The rig runs the warm-up first: keep only the measured phase's samples (its last n workflows).
    let mut m = rig::lifecycle(rt, orc, client, n, 1, per_workflow)?;
    let samples = std::mem::take(&mut *latencies_us.lock().unwrap_or_else(PoisonError::into_inner));
    let measured = &samples[samples.len() - n * (steps as usize + 1)..];
    orchestrator_latencies(&mut m.params, measured, steps);
    m.params["steps"] = json!(steps);
    m.params["journal_entries"] = json!(steps + 1);
    m.params["events_per_workflow"] = json!(per_workflow);
    Ok(m)
}

/// On-CPU time of every live thread of the process in seconds: the sum of [`threads_cpu_s`]. A
/// thread that exits in between is not counted; the store's writer thread and the blocking pool's
/// threads live through the measured phase.
pub(crate) fn process_cpu_s() -> Option<f64> {
    let threads = threads_cpu_s();
    (!threads.is_empty()).then(|| threads.values().map(|(_, s)| s).sum())
}

/// Each live thread's on-CPU time in seconds (`/proc/self/task/*/schedstat`), by thread id, with
/// the thread's name.
pub(crate) type ThreadsCpu = HashMap<String, (String, f64)>;

/// The [`ThreadsCpu`] of this process now (empty where `/proc` cannot be read).
pub(crate) fn threads_cpu_s() -> ThreadsCpu {
    let mut threads = HashMap::new();
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else { return threads };
    for task in tasks.flatten() {
        let path = task.path();
        let name = std::fs::read_to_string(path.join("comm")).unwrap_or_default().trim().to_owned();
        let ns = std::fs::read_to_string(path.join("schedstat"))
            .ok()
            .and_then(|s| s.split_whitespace().next()?.parse::<f64>().ok());
        if let Some(ns) = ns {
            threads.insert(task.file_name().to_string_lossy().into_owned(), (name, ns / 1e9));
        }
    }
    threads
}

/// CPU µs per event of each kind of thread (by name: `sqlite-writer`, `tokio-rt-worker`, ...)
/// between two [`threads_cpu_s`] readings, counting the threads alive at both.
pub(crate) fn cpu_us_per_event_by_thread(before: &ThreadsCpu, after: &ThreadsCpu, events: u64) -> Value {
    let mut by_name = BTreeMap::<String, f64>::new();
    for (tid, (name, end)) in after {
        if let Some((_, start)) = before.get(tid) {
            *by_name.entry(name.clone()).or_default() += end - start;
        }
    }
    let events = events.max(1) as f64;
    by_name.into_iter().map(|(name, s)| (name, json!(round(s / events * 1e6, 2)))).collect()
}

/// The workload `sqlite_loop_normal_<steps>`: `n` loop workflows of `steps` calls, one at a time,
/// on `SqliteMemory` (`synchronous=NORMAL`, journal written with each record). `cpu_s` is the CPU
/// time of all the process's threads (the store's reader pool and writer thread do part of the work).
pub(crate) fn sqlite(n: usize, steps: u32) -> Result<Measured, BoxError> {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("bench.sqlite");
    let memory = Arc::new(
        SqliteConfig::new(&path)
            .synchronous(Synchronous::Normal)
            .owner("arvo-bench")
            .open::<WorkflowRecord>()?,
    );
    // The store's reads run on the blocking pool and its writes on its writer thread; the loop
    // itself runs on this thread.
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let latencies_us = Arc::new(Mutex::new(Vec::new()));
    let orc =
        Orchestrator::builder(Arc::clone(&memory)).machine::<LoopFlow>().locking(Locking::Never).build()?;
    let orc = Timed { inner: orc, latencies_us: Arc::clone(&latencies_us) };
    let per_workflow = 2 * steps as usize + 1;
    let rig = Rig::new(orc, LoopClient { factory: EventFactory::new(), steps })?;
    let warmup = warmup_units(n);
    rig.run(&rt, &mut Recorder::default(), 0, warmup, 1)?;
    latencies_us.lock().unwrap_or_else(PoisonError::into_inner).clear();
    let before = memory.stats();
    let mut rec = Recorder::with_capacity(n * per_workflow);
    let cpu0 = process_cpu_s();
    let phase = Phase::start();
    let workflows = rig.run(&rt, &mut rec, warmup, n, 1)?;
    let (wall, _) = phase.stop();
    let cpu_s = process_cpu_s().zip(cpu0).map(|(end, start)| end - start);
    let after = memory.stats();
    let samples = std::mem::take(&mut *latencies_us.lock().unwrap_or_else(PoisonError::into_inner));
    let executions = samples.len() as f64;
    let mut params = json!({
        "warmup": warmup,
        "in_flight": 1,
        "memory": "SqliteMemory(synchronous=Normal)",
        "broker": "fifo-loop(Locking::Never)",
        "cpu": "process",
        "steps": steps,
        "journal_entries": steps + 1,
        "events_per_workflow": per_workflow,
        "commits": after.transactions - before.transactions,
        "operations": after.operations - before.operations,
        "operations_per_orc_execution": ((after.operations - before.operations) as f64 / executions * 1000.0)
            .round()
            / 1000.0,
    });
    orchestrator_latencies(&mut params, &samples, steps);
    Ok(Measured { workflows, rec, wall, cpu_s, params })
}
