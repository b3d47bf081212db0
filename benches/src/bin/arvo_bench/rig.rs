//! The measuring loop of Arvo's harness: a client creating each init event inside the measured loop,
//! a FIFO queue routing every event by `to` to the handler whose `source()` equals it, every
//! `execute()` timed, every completion checked for the exact result.

use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

use orchestrator::handler::EventHandler;
use orchestrator::handler::service::ServiceHandler;
use orchestrator::prelude::*;
use orchestrator_examples::calculator::{Add, Mul, services};
use serde_json::{Value, json};
use tokio::runtime::Runtime;

use super::footprint::{RssProbe, vm_rss_kb};
use super::{BoxError, CLIENT};

/// What one phase (warm-up or measured) recorded.
#[derive(Default)]
pub(crate) struct Recorder {
    /// One sample per timed call, in µs.
    pub(crate) latencies_us: Vec<f64>,
    /// Counted events.
    pub(crate) events: u64,
}

impl Recorder {
    /// A recorder with room for `samples` latencies.
    pub(crate) fn with_capacity(samples: usize) -> Self {
        Self { latencies_us: Vec::with_capacity(samples), events: 0 }
    }

    /// Runs `handler.execute(event)` to completion on `rt`, timed; counts one event.
    pub(crate) fn execute<H: EventHandler>(
        &mut self,
        rt: &Runtime,
        handler: &H,
        event: &Event,
    ) -> Result<Vec<Event>, BoxError> {
        let t0 = Instant::now();
        let out = rt.block_on(handler.execute(event));
        self.latencies_us.push(t0.elapsed().as_secs_f64() * 1e6);
        self.events += 1;
        Ok(out?)
    }
}

/// Result of one measured run.
pub(crate) struct Measured {
    /// Completed workflows (or executed units) of the measured phase.
    pub(crate) workflows: usize,
    /// Latencies and counted events of the measured phase.
    pub(crate) rec: Recorder,
    /// Wall time of the measured phase.
    pub(crate) wall: Duration,
    /// On-CPU time of the measuring thread during the measured phase (single-threaded workloads).
    pub(crate) cpu_s: Option<f64>,
    /// Workload-specific parameters (`n` and `scale` are added by the caller).
    pub(crate) params: Value,
}

/// On-CPU time of the calling thread in seconds (`/proc/thread-self/schedstat`, nanoseconds).
fn thread_cpu_s() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    Some(stat.split_whitespace().next()?.parse::<f64>().ok()? / 1e9)
}

/// Times a measured phase: wall time, and the on-CPU time of this thread (which other processes
/// on a shared machine inflate far less than the wall time).
pub(crate) struct Phase {
    wall: Instant,
    cpu_s: Option<f64>,
}

impl Phase {
    /// Starts timing.
    pub(crate) fn start() -> Self {
        Self { cpu_s: thread_cpu_s(), wall: Instant::now() }
    }

    /// The wall time and the on-CPU time since [`start`](Self::start).
    pub(crate) fn stop(&self) -> (Duration, Option<f64>) {
        let wall = self.wall.elapsed();
        (wall, thread_cpu_s().zip(self.cpu_s).map(|(end, start)| end - start))
    }
}

/// Units of the unmeasured warm-up: 10% of N, at most 2000.
pub(crate) fn warmup_units(n: usize) -> usize {
    (n / 10).min(2000)
}

/// How the client starts workflows of one kind and what their completions must carry.
pub(crate) trait Client {
    /// The type of the completion event.
    const DONE_TYPE: &'static str;
    /// The field of the completion's data holding the result.
    const RESULT_FIELD: &'static str;
    /// Creates the init event of workflow `i` and returns it with the exact expected result.
    fn init(&self, i: usize) -> Result<(Event, f64), BoxError>;
}

/// The orchestrator under test, the two calculator services and the FIFO loop routing events by `to`.
pub(crate) struct Rig<O, C> {
    orc: O,
    add: ServiceHandler<Add>,
    mul: ServiceHandler<Mul>,
    client: C,
}

impl<O: EventHandler, C: Client> Rig<O, C> {
    /// A rig for orchestrator `orc` whose workflows `client` starts.
    pub(crate) fn new(orc: O, client: C) -> Result<Self, BoxError> {
        Ok(Self { orc, add: services::add()?, mul: services::mul()?, client })
    }

    /// Runs workflows `start..start + count` with at most `in_flight` at a time: the client creates all
    /// inits of a batch, then the FIFO queue is drained breadth-first. Returns the completed workflows.
    pub(crate) fn run(
        &self,
        rt: &Runtime,
        rec: &mut Recorder,
        start: usize,
        count: usize,
        in_flight: usize,
    ) -> Result<usize, BoxError> {
        self.run_observed(rt, rec, start, count, in_flight, &mut |_| {})
    }

    /// [`run`](Self::run), calling `on_round(r)` in each batch once `r` rounds of its events have
    /// been handled (a round: as many events as the batch has workflows; the FIFO queue is drained
    /// breadth-first, so round 1 is the batch's inits, round 2 the first requests they emitted, …).
    /// At `on_round(1)` every workflow of the batch is open and none has completed.
    pub(crate) fn run_observed(
        &self,
        rt: &Runtime,
        rec: &mut Recorder,
        start: usize,
        count: usize,
        in_flight: usize,
        on_round: &mut dyn FnMut(usize),
    ) -> Result<usize, BoxError> {
        let mut queue = VecDeque::new();
        let mut expected: HashMap<String, f64> = HashMap::new();
        let mut completed = 0;
        let mut next = start;
        let end = start + count;
        while next < end {
            let batch_end = (next + in_flight).min(end);
            for i in next..batch_end {
                let (init, result) = self.client.init(i)?;
                expected.insert(init.subject().to_owned(), result);
                queue.push_back(init);
            }
            let opened = batch_end - next;
            next = batch_end;
            let mut handled = 0;
            while let Some(event) = queue.pop_front() {
                if handled > 0 && handled % opened == 0 {
                    on_round(handled / opened);
                }
                handled += 1;
                let to = event.to().ok_or("an event without `to`")?;
                let out = if to == self.orc.source() {
                    rec.execute(rt, &self.orc, &event)?
                } else if to == self.add.source() {
                    rec.execute(rt, &self.add, &event)?
                } else if to == self.mul.source() {
                    rec.execute(rt, &self.mul, &event)?
                } else if to == CLIENT {
                    let want =
                        expected.remove(event.subject()).ok_or("a completion of an unknown workflow")?;
                    let got = event.data_value().get(C::RESULT_FIELD).and_then(Value::as_f64);
                    if event.r#type() != C::DONE_TYPE || got != Some(want) {
                        return Err(format!("wrong completion (want {want}): {event:?}").into());
                    }
                    completed += 1;
                    continue;
                } else {
                    return Err(format!("no handler for `{to}`").into());
                };
                queue.extend(out);
            }
        }
        if !expected.is_empty() {
            return Err(format!("{} workflows did not complete", expected.len()).into());
        }
        Ok(completed)
    }
}

/// Warm-up, then `n` measured workflows of `orc` started by `client`, `in_flight` at a time;
/// `per_workflow` is the number of `execute()` calls of one workflow (to size the latency buffer).
pub(crate) fn lifecycle<O: EventHandler, C: Client>(
    rt: &Runtime,
    orc: O,
    client: C,
    n: usize,
    in_flight: usize,
    per_workflow: usize,
) -> Result<Measured, BoxError> {
    let rig = Rig::new(orc, client)?;
    let probe = memory_probe(rt, &rig, in_flight, per_workflow)?;
    let warmup = warmup_units(n);
    let mut rec = Recorder::default();
    rig.run(rt, &mut rec, 0, warmup, in_flight)?;
    let mut rec = Recorder::with_capacity(n * per_workflow);
    let phase = Phase::start();
    let workflows = rig.run(rt, &mut rec, warmup, n, in_flight)?;
    let (wall, cpu_s) = phase.stop();
    let mut params = json!({
        "warmup": warmup,
        "in_flight": in_flight,
        "memory": "InMemory(Retention::Remove)",
        "broker": "fifo-loop",
    });
    if let (Value::Object(params), Value::Object(probe)) = (&mut params, probe.json()) {
        params.extend(probe);
    }
    Ok(Measured { workflows, rec, wall, cpu_s, params })
}

/// The resident set of `in_flight` open workflows, measured before the warm-up (once the heap has
/// grown, freed memory is reused and the resident set no longer moves): one workflow runs first
/// (first-use allocations), then one batch of `in_flight` runs to completion and `VmRSS` is
/// sampled at the end of each round of its breadth-first drain (round 1: every init delivered, no
/// workflow completed), compared with `VmRSS` just before the batch. The latency buffer is
/// allocated beforehand, so the difference is the open workflows' state in the store, their
/// pending events in the FIFO queue and the client's expected results (with the spare capacity of
/// the queue and the map).
fn memory_probe<O: EventHandler, C: Client>(
    rt: &Runtime,
    rig: &Rig<O, C>,
    in_flight: usize,
    per_workflow: usize,
) -> Result<RssProbe, BoxError> {
    rig.run(rt, &mut Recorder::default(), 0, 1, 1)?;
    let mut rec = Recorder::with_capacity(in_flight * per_workflow);
    let mut probe = RssProbe { before_kb: vm_rss_kb(), rounds_kb: Vec::new(), workflows: in_flight };
    rig.run_observed(rt, &mut rec, 0, in_flight, in_flight, &mut |_| probe.rounds_kb.push(vm_rss_kb()))?;
    Ok(probe)
}
