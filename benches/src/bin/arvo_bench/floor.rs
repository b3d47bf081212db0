//! `orchestrator_chain_floor`: the bare cost of a chain workflow's work without the runtime, to measure
//! the lifecycle against.
//!
//! The five events one chain workflow's `execute()` calls consume (init, add request, add success,
//! mul request, mul success) are recorded once as JSON bytes from a real run, for a pool of
//! [`POOL`] workflows. Each measured workflow then, for each of the five events in order:
//!
//! 1. parses the bytes (`Event::from_slice`: JSON and every event rule);
//! 2. for the three events the orchestrator consumes, steps the generated `ChainFlow` machine
//!    without persistence (`MachineInstance::start_wire` on the init, `send_wire` on the two
//!    results: payload decoded and validated against its contract, transitions, entry actions
//!    building the next service request);
//! 3. serializes the parsed event (`to_json_vec`).
//!
//! Each of the five steps is one latency sample and one counted event (as the five `execute()`
//! calls of the lifecycle are), and the machine's output is checked for the exact result.
//! Not included: creating events (ids, timestamps, subjects), contracts of the services, memory,
//! locking, journal, telemetry, routing.

use std::hint::black_box;
use std::time::Instant;

use orchestrator::handler::EventHandler;
use orchestrator::machine::MachineInstance;
use orchestrator::prelude::*;
use orchestrator_examples::calculator::services;
use serde_json::json;

use super::rig::{Client, Measured, Phase, Recorder, warmup_units};
use super::{BoxError, ChainClient, ChainFlow, ChainOutput, chain_orchestrator};

/// Recorded workflows whose events are replayed.
const POOL: usize = 64;

/// The five consumed events of one chain workflow, as JSON.
struct Recorded {
    /// init, add request, add success, mul request, mul success.
    events: [Vec<u8>; 5],
    /// The exact result.
    result: f64,
}

/// Runs `POOL` chain workflows through the real orchestrator and services, keeping their events.
fn record() -> Result<Vec<Recorded>, BoxError> {
    let rt = tokio::runtime::Builder::new_current_thread().enable_time().build()?;
    let orc = chain_orchestrator()?;
    let (add, mul) = (services::add()?, services::mul()?);
    let client = ChainClient::new();
    let one = |out: Vec<Event>| -> Result<Event, BoxError> {
        let [event] = <[Event; 1]>::try_from(out).map_err(|out| format!("expected one event: {out:?}"))?;
        Ok(event)
    };
    (0..POOL)
        .map(|i| {
            let (init, result) = client.init(i)?;
            let add_request = one(rt.block_on(orc.execute(&init))?)?;
            let sum = one(rt.block_on(add.execute(&add_request))?)?;
            let mul_request = one(rt.block_on(orc.execute(&sum))?)?;
            let product = one(rt.block_on(mul.execute(&mul_request))?)?;
            let done = one(rt.block_on(orc.execute(&product))?)?;
            if done.data_value().get("result").and_then(serde_json::Value::as_f64) != Some(result) {
                return Err(format!("wrong completion: {done:?}").into());
            }
            let events = [&init, &add_request, &sum, &mul_request, &product].map(|e| e.to_json_vec());
            Ok(Recorded { events, result })
        })
        .collect()
}

/// Does workflow `w`'s floor work on `pool`, one latency sample per event.
fn workflow(pool: &[Recorded], w: usize, rec: &mut Recorder) -> Result<(), BoxError> {
    let recorded = &pool[w % POOL];
    let mut machine: Option<MachineInstance<ChainFlow>> = None;
    for (step, bytes) in recorded.events.iter().enumerate() {
        let t0 = Instant::now();
        let event = Event::from_slice(bytes)?;
        let requests = match (step, machine.as_mut()) {
            (0, _) => {
                let (m, requests) = MachineInstance::<ChainFlow>::start_wire(&event)?;
                machine = Some(m);
                requests.len()
            }
            (2 | 4, Some(m)) => m.send_wire(&event)?.len(),
            _ => 0,
        };
        black_box(event.to_json_vec());
        rec.latencies_us.push(t0.elapsed().as_secs_f64() * 1e6);
        rec.events += 1;
        if requests != usize::from(step < 4 && step % 2 == 0) {
            return Err(format!("step {step}: {requests} requests").into());
        }
    }
    let output = machine.and_then(|m| m.output());
    if output != Some(ChainOutput { result: recorded.result }) {
        return Err(format!("wrong output {output:?}, want {}", recorded.result).into());
    }
    Ok(())
}

/// On-CPU µs per workflow of `f` over `count` workflows (wall µs where the CPU time is unavailable).
fn per_workflow_us(count: usize, mut f: impl FnMut(usize) -> Result<(), BoxError>) -> Result<f64, BoxError> {
    let phase = Phase::start();
    for w in 0..count {
        f(w)?;
    }
    let (wall, cpu_s) = phase.stop();
    Ok(cpu_s.unwrap_or(wall.as_secs_f64()) * 1e6 / count as f64)
}

/// The workload: warm-up, `n` measured floor workflows, then a breakdown of one workflow's floor
/// into its parts (parse, machine, serialize), each timed alone in on-CPU µs per workflow.
pub(crate) fn chain(n: usize) -> Result<Measured, BoxError> {
    let pool = record()?;
    let warmup = warmup_units(n);
    let mut rec = Recorder::default();
    for w in 0..warmup {
        workflow(&pool, w, &mut rec)?;
    }
    let mut rec = Recorder::with_capacity(n * 5);
    let phase = Phase::start();
    for w in 0..n {
        workflow(&pool, w, &mut rec)?;
    }
    let (wall, cpu_s) = phase.stop();

    let parsed = pool
        .iter()
        .map(|r| r.events.iter().map(|bytes| Event::from_slice(bytes)).collect::<Result<Vec<_>, _>>())
        .collect::<Result<Vec<_>, _>>()?;
    let parts = n.min(20_000);
    let parse = per_workflow_us(parts, |w| {
        for bytes in &pool[w % POOL].events {
            black_box(Event::from_slice(bytes)?);
        }
        Ok(())
    })?;
    let serialize = per_workflow_us(parts, |w| {
        for event in &parsed[w % POOL] {
            black_box(event.to_json_vec());
        }
        Ok(())
    })?;
    let machine = per_workflow_us(parts, |w| {
        let [init, _, sum, _, product] = parsed[w % POOL].as_slice() else {
            return Err("five events per workflow".into());
        };
        let (mut m, _) = MachineInstance::<ChainFlow>::start_wire(init)?;
        m.send_wire(sum)?;
        m.send_wire(product)?;
        black_box(m.output());
        Ok(())
    })?;
    let params = json!({
        "warmup": warmup,
        "in_flight": 1,
        "pool": POOL,
        "counts": "per workflow: 5 events parsed (Event::from_slice) and serialized (to_json_vec); \
                   init/add-success/mul-success also step the generated ChainFlow machine \
                   (MachineInstance start_wire/send_wire, no persistence); one sample per event",
        "parts_cpu_us_per_workflow": {
            "parse": (parse * 100.0).round() / 100.0,
            "machine": (machine * 100.0).round() / 100.0,
            "serialize": (serialize * 100.0).round() / 100.0,
        },
    });
    Ok(Measured { workflows: n, rec, wall, cpu_s, params })
}
