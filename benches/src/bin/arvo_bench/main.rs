//! `arvo-bench`: runs Arvo's benchmark workloads (see `BENCHMARKS.md`, section "Arvo workloads") the way
//! Arvo's harness does: `execute()`-level timing, a FIFO loop routing events by `to`, a warm-up of 10% of N
//! (at most 2000 units), every run in a fresh process, one JSON line per run and one per median.
//!
//! ```sh
//! cargo run --release -p orchestrator-benches --bin arvo-bench -- [--only a,b] [--scale F] [--runs R]
//! cargo run --release -p orchestrator-benches --bin arvo-bench -- --list   # the workload names
//! # the in-memory chain with 10,000 workflows in flight:
//! cargo run --release -p orchestrator-benches --bin arvo-bench -- \
//!   --only orchestrator_chain_interleaved --in-flight 10000 --scale 2
//! ```
//!
//! `--in-flight N` sets the number of workflows in flight of the chain workloads (in memory, on
//! SQLite, on PostgreSQL, on a node); their names keep their default (`…_1`, `…_1000`,
//! `…_interleaved`), `params.in_flight` says what ran. The in-memory ones also report the resident
//! set per open workflow (`rss_per_workflow_kb`, see `rig::lifecycle`), the SQLite and PostgreSQL
//! ones the bytes their store keeps per workflow ([`footprint`]).
//!
//! Modules: [`rig`] (the measuring FIFO loop), [`fanout`] (`orchestrator_fanout`), [`otel`] (the chain with
//! a recording OpenTelemetry SDK provider), [`floor`] (the chain's work without the runtime), [`durable`]
//! (the chain on SQLite), [`footprint`] (resident set, bytes a store keeps), [`history`]
//! (`orchestrator_loop_<L>`, `sqlite_loop_normal_<L>`: cost per event against the history length),
//! [`postgres`] (`postgres_chain_<in flight>`, `postgres_fanout`: a durable node on PostgreSQL and
//! its queue, with commits per event; `DATABASE_URL`, skipped when unset;
//! `benches/pgbench-anchor.sh` runs them next to `pgbench -N`), [`nats`] (`nats_*`: a durable node
//! over NATS JetStream with SQLite or PostgreSQL, `NATS_URL`, skipped when unset;
//! `node_sqlite_*`: the same node on the in-process transport).
//!
//! With `--features mimalloc` the binary runs on the mimalloc allocator instead of the system's
//! (glibc's malloc), to show what a service gets by choosing its global allocator.

/// The allocator, with `--features mimalloc`.
#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod durable;
pub mod fanout;
mod floor;
mod footprint;
pub mod history;
mod looped;
mod nats;
mod otel;
mod postgres;
mod rig;

use std::process::Command;

use orchestrator::handler::EventHandler;
use orchestrator::memory::{InMemory, InMemoryConfig, Retention};
use orchestrator::orchestration::resumable::{Request, Resumable, ResumableInput, ResumableOutput};
use orchestrator::orchestration::{Orchestrator, WorkflowRecord};
use orchestrator::prelude::*;
use orchestrator_examples::calculator::{AddV1, MulV1, Operands, Product, Sum, services};
use serde_json::{Value, json};
use tokio::runtime::Runtime;

use rig::{Client, Measured, Phase, Recorder, warmup_units};

type Mem = InMemory<WorkflowRecord>;
type BoxError = Box<dyn std::error::Error>;

/// The client that starts workflows (≥ 3 dot segments, as Arvo requires).
const CLIENT: &str = "com.bench.client";
/// Workflows in flight in the interleaved workloads (and those named `…_1000`) unless `--in-flight`
/// says otherwise.
const IN_FLIGHT: usize = 1000;
/// Pre-built request events of `service_handler`.
const POOL: usize = 1024;

/// One workload: how it is selected, how its JSON lines are named, and its default N.
struct Workload {
    /// The name given to `--only` / `--single`.
    key: &'static str,
    /// The `name` of its JSON lines (Arvo's benchmark name; several keys may share one).
    name: &'static str,
    /// The `otel` field: `off` (no tracer provider installed) or `sdk` (a recording SDK provider).
    otel: &'static str,
    /// Default N (workflows, or executions for `service_handler`).
    n: usize,
    /// Workflows in flight by default, for the workloads whose number `--in-flight` overrides.
    in_flight: Option<usize>,
}

const fn workload(key: &'static str, n: usize) -> Workload {
    Workload { key, name: key, otel: "off", n, in_flight: None }
}

/// A workload with `in_flight` workflows in flight unless `--in-flight` says otherwise.
const fn flight(key: &'static str, n: usize, in_flight: usize) -> Workload {
    Workload { key, name: key, otel: "off", n, in_flight: Some(in_flight) }
}

/// The workloads and their default N (Arvo's table, where Arvo has the workload).
const WORKLOADS: &[Workload] = &[
    workload("service_handler", 80_000),
    flight("orchestrator_chain", 6_000, 1),
    flight("orchestrator_chain_interleaved", 6_000, IN_FLIGHT),
    workload("orchestrator_fanout", 1_500),
    flight("resumable_chain", 7_000, 1),
    flight("resumable_chain_interleaved", 7_000, IN_FLIGHT),
    Workload {
        key: "orchestrator_chain_otel",
        name: "orchestrator_chain",
        otel: "sdk",
        n: 4_000,
        in_flight: None,
    },
    workload("orchestrator_chain_floor", 100_000),
    flight("sqlite_chain_full_1", 500, 1),
    flight("sqlite_chain_full_1000", 6_000, IN_FLIGHT),
    flight("sqlite_chain_normal_1", 2_000, 1),
    flight("sqlite_chain_normal_1000", 6_000, IN_FLIGHT),
    flight("sqlite_chain_safe_full_1", 500, 1),
    flight("sqlite_chain_safe_full_1000", 6_000, IN_FLIGHT),
    workload("orchestrator_loop_10", 1_500),
    workload("orchestrator_loop_100", 150),
    workload("orchestrator_loop_1000", 15),
    workload("sqlite_loop_normal_10", 300),
    workload("sqlite_loop_normal_1000", 10),
    flight("postgres_chain_1", 100, 1),
    flight("postgres_chain_1000", 1_500, IN_FLIGHT),
    flight("postgres_chain_1000_batch8", 1_500, IN_FLIGHT),
    flight("postgres_chain_1000_2proc", 1_500, IN_FLIGHT),
    workload("postgres_fanout", 20),
    flight("node_sqlite_chain_1", 300, 1),
    flight("node_sqlite_chain_1000", 3_000, IN_FLIGHT),
    flight("nats_sqlite_chain_1", 300, 1),
    flight("nats_sqlite_chain_1000", 3_000, IN_FLIGHT),
    workload("nats_sqlite_fanout", 30),
    flight("nats_pg_chain_1000", 1_500, IN_FLIGHT),
];

/// The workload selected by `key`.
fn find(key: &str) -> Result<&'static Workload, BoxError> {
    WORKLOADS.iter().find(|w| w.key == key).ok_or_else(|| format!("unknown workload `{key}`").into())
}

// ---------------------------------------------------------------------------------------------
// The chain workflow: contract, machine, resumable

/// Starts a chain workflow: `(a + b) * c`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ChainInput {
    /// First addend.
    pub a: f64,
    /// Second addend.
    pub b: f64,
    /// Multiplier.
    pub c: f64,
}

/// The chain's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ChainOutput {
    /// `(a + b) * c`.
    pub result: f64,
}

orchestrator::orchestrator_contract! {
    /// The benchmark chain: add, then multiply.
    pub contract Chain {
        uri: "#/orc/bench/chain",
        name: "bench.chain",
        versions: {
            ChainV1 = "1.0.0" { init: ChainInput, complete: ChainOutput },
        },
    }
}

/// Context of the chain machine.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ChainCtx {
    a: f64,
    b: f64,
    c: f64,
    sum: f64,
    result: f64,
}

fn emit_add(ctx: &mut ChainCtx, _: &ChainFlowEvent, out: &mut ChainFlowOutbox<'_>) {
    out.add(Operands { a: ctx.a, b: ctx.b });
}

fn store_sum(ctx: &mut ChainCtx, event: &ChainFlowEvent, _: &mut ChainFlowOutbox<'_>) {
    if let ChainFlowEvent::AddSum(s) = event {
        ctx.sum = s.sum;
    }
}

fn emit_mul(ctx: &mut ChainCtx, _: &ChainFlowEvent, out: &mut ChainFlowOutbox<'_>) {
    out.mul(Operands { a: ctx.sum, b: ctx.c });
}

fn store_product(ctx: &mut ChainCtx, event: &ChainFlowEvent, _: &mut ChainFlowOutbox<'_>) {
    if let ChainFlowEvent::MulProduct(p) = event {
        ctx.result = p.product;
    }
}

orchestrator::machine! {
    /// `adding` (emit add) → `multiplying` (emit mul) → `done`.
    pub machine ChainFlow {
        contract: ChainV1,
        services: { add: AddV1, mul: MulV1 },
        context: ChainCtx,
        init: |input| ChainCtx { a: input.a, b: input.b, c: input.c, ..ChainCtx::default() },
        output: |ctx| ChainOutput { result: ctx.result },
        states: {
            adding: {
                entry: [emit_add],
                on: { add::Sum => { target: multiplying, actions: [store_sum] }, add::error => failed },
            },
            multiplying: {
                entry: [emit_mul],
                on: { mul::Product => { target: done, actions: [store_product] }, mul::error => failed },
            },
            done: { type: final },
            failed: { type: final },
        },
    }
}

/// Context of the chain resumable.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct ResCtx {
    c: f64,
}

fn memory() -> Mem {
    InMemory::new(InMemoryConfig { retention: Retention::Remove, ..InMemoryConfig::default() })
}

fn chain_orchestrator() -> Result<Orchestrator<Mem>, BoxError> {
    Ok(Orchestrator::builder(memory()).machine::<ChainFlow>().build()?)
}

fn chain_resumable() -> Result<Resumable<Mem>, BoxError> {
    Ok(Resumable::builder(memory())
        .service::<AddV1>()
        .service::<MulV1>()
        .version(|input: ResumableInput<ChainV1, ResCtx>| async move {
            if let Some(init) = input.init {
                return Ok(ResumableOutput::wait().context(ResCtx { c: init.c }).request(Request::new::<
                    AddV1,
                >(
                    Operands { a: init.a, b: init.b },
                )));
            }
            let ctx = input.context.clone().ok_or("no context")?;
            let service = input.service.as_ref().ok_or("no service event")?;
            if service.r#type() == "evt.calc.add.success" {
                let sums = input.collected::<AddV1, Sum>()?;
                let [sum] = sums.as_slice() else { return Err("expected one sum".into()) };
                return Ok(
                    ResumableOutput::wait().request(Request::new::<MulV1>(Operands { a: sum.sum, b: ctx.c }))
                );
            }
            let products = input.collected::<MulV1, Product>()?;
            let [product] = products.as_slice() else { return Err("expected one product".into()) };
            Ok(ResumableOutput::complete(ChainOutput { result: product.product }))
        })
        .build()?)
}

// ---------------------------------------------------------------------------------------------
// Measurement

/// The inputs of chain workflow `i` and its exact result.
fn chain_input(i: usize) -> (ChainInput, f64) {
    let (a, b, c) = ((i % 1000) as f64, 0.5, 3.0);
    (ChainInput { a, b, c }, (a + b) * c)
}

/// Starts chain workflows: `bench.chain` init `{a, b, c}`, completion `{result}`.
struct ChainClient(EventFactory<ChainV1>);

impl ChainClient {
    fn new() -> Self {
        Self(EventFactory::new())
    }
}

impl Client for ChainClient {
    const DONE_TYPE: &'static str = "arvo.orc.bench.chain.done";
    const RESULT_FIELD: &'static str = "result";

    fn init(&self, i: usize) -> Result<(Event, f64), BoxError> {
        let (input, result) = chain_input(i);
        Ok((self.0.init(input, Event::builder().source(CLIENT))?, result))
    }
}

/// The chain through orchestrator (or resumable) `orc`: 5 `execute()` calls per workflow.
fn chain<O: EventHandler>(rt: &Runtime, orc: O, n: usize, in_flight: usize) -> Result<Measured, BoxError> {
    rig::lifecycle(rt, orc, ChainClient::new(), n, in_flight, 5)
}

fn service_handler(rt: &Runtime, n: usize) -> Result<Measured, BoxError> {
    let add = services::add()?;
    let factory = EventFactory::<AddV1>::new();
    let pool = (0..POOL)
        .map(|i| factory.accepts(Operands { a: i as f64, b: 1.0 }, Event::builder().source(CLIENT)))
        .collect::<Result<Vec<_>, _>>()?;
    let check = |rec: &mut Recorder, i: usize| -> Result<(), BoxError> {
        let out = rec.execute(rt, &add, &pool[i % POOL])?;
        let sum = out.first().and_then(|e| e.data_value().get("sum")).and_then(Value::as_f64);
        if out.len() != 1 || sum != Some((i % POOL) as f64 + 1.0) {
            return Err(format!("wrong response: {out:?}").into());
        }
        Ok(())
    };
    let warmup = warmup_units(n);
    let mut rec = Recorder::default();
    for i in 0..warmup {
        check(&mut rec, i)?;
    }
    let mut rec = Recorder::with_capacity(n);
    let phase = Phase::start();
    for i in 0..n {
        check(&mut rec, i)?;
    }
    let (wall, cpu_s) = phase.stop();
    Ok(Measured { workflows: n, rec, wall, cpu_s, params: json!({ "pool": POOL, "warmup": warmup }) })
}

/// Exact nearest-rank percentile of sorted samples.
fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = (p / 100.0 * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// The process's peak RSS (VmHWM) in MB.
fn peak_rss_mb() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        })
        .map_or(0.0, |kb| kb / 1024.0)
}

fn round(x: f64, digits: i32) -> f64 {
    let m = 10f64.powi(digits);
    (x * m).round() / m
}

/// Runs one workload in this process and returns its JSON line; `in_flight` overrides the
/// workload's number of workflows in flight (when it has one).
fn single(key: &str, scale: f64, k: u32, in_flight: Option<usize>) -> Result<Value, BoxError> {
    let w = find(key)?;
    let n = ((w.n as f64 * scale).round() as usize).max(1);
    if in_flight.is_some() && w.in_flight.is_none() {
        eprintln!("`--in-flight` does not apply to `{key}`: ignored");
    }
    // Workflows in flight (the workloads without the knob run one at a time or fix their own).
    let f = w.in_flight.map_or(1, |default| in_flight.unwrap_or(default));
    if w.in_flight.is_some() && n < f {
        eprintln!("`{key}`: N = {n} < {f} in flight, so the measured phase has at most {n} in flight");
    }
    let rt = tokio::runtime::Builder::new_current_thread().enable_time().build()?;
    use durable::Safety::{Bare, CrashSafe};
    use nats::Carrier::{InProcess, Nats};
    use nats::Kept::{Postgres, Sqlite};
    use orchestrator_sqlite::Synchronous::{Full, Normal};
    let m = match key {
        "service_handler" => service_handler(&rt, n)?,
        "orchestrator_chain" | "orchestrator_chain_interleaved" => chain(&rt, chain_orchestrator()?, n, f)?,
        "orchestrator_fanout" => fanout::run(&rt, n, k)?,
        "resumable_chain" | "resumable_chain_interleaved" => chain(&rt, chain_resumable()?, n, f)?,
        "orchestrator_chain_otel" => otel::chain_with_spans(&rt, n)?,
        "orchestrator_chain_floor" => floor::chain(n)?,
        "sqlite_chain_full_1" | "sqlite_chain_full_1000" => durable::chain(n, Full, f, Bare)?,
        "sqlite_chain_normal_1" | "sqlite_chain_normal_1000" => durable::chain(n, Normal, f, Bare)?,
        "sqlite_chain_safe_full_1" | "sqlite_chain_safe_full_1000" => durable::chain(n, Full, f, CrashSafe)?,
        "orchestrator_loop_10" => history::in_memory(&rt, n, 10)?,
        "orchestrator_loop_100" => history::in_memory(&rt, n, 100)?,
        "orchestrator_loop_1000" => history::in_memory(&rt, n, 1000)?,
        "sqlite_loop_normal_10" => history::sqlite(n, 10)?,
        "sqlite_loop_normal_1000" => history::sqlite(n, 1000)?,
        "postgres_chain_1" | "postgres_chain_1000" => {
            postgres::run(n, postgres::Flow::Chain, f, 0, postgres::DEFAULT_BATCH)?
        }
        "postgres_chain_1000_batch8" => postgres::run(n, postgres::Flow::Chain, f, 0, 8)?,
        "postgres_chain_1000_2proc" => {
            postgres::run(n, postgres::Flow::Chain, f, 2, postgres::DEFAULT_BATCH)?
        }
        "postgres_fanout" => postgres::run(n, postgres::Flow::Fanout(k), 1, 0, postgres::DEFAULT_BATCH)?,
        "node_sqlite_chain_1" | "node_sqlite_chain_1000" => {
            nats::run(n, postgres::Flow::Chain, f, InProcess, Sqlite)?
        }
        "nats_sqlite_chain_1" | "nats_sqlite_chain_1000" => {
            nats::run(n, postgres::Flow::Chain, f, Nats, Sqlite)?
        }
        "nats_sqlite_fanout" => nats::run(n, postgres::Flow::Fanout(k), 1, Nats, Sqlite)?,
        "nats_pg_chain_1000" => nats::run(n, postgres::Flow::Chain, f, Nats, Postgres)?,
        _ => return Err(format!("workload `{key}` has no runner").into()),
    };
    let mut lat = m.rec.latencies_us;
    lat.sort_by(f64::total_cmp);
    let wall_s = m.wall.as_secs_f64();
    let mut params = m.params;
    if let Some(cpu_s) = m.cpu_s {
        params["cpu_s"] = json!(round(cpu_s, 4));
        params["events_per_cpu_s"] = json!(round(m.rec.events as f64 / cpu_s, 1));
        // The workloads measuring their own (all processes' CPU) keep theirs.
        if params.get("cpu_us_per_event").is_none() && m.rec.events > 0 {
            params["cpu_us_per_event"] = json!(round(cpu_s / m.rec.events as f64 * 1e6, 3));
        }
    }
    if w.in_flight.is_some() {
        params["in_flight"] = json!(f);
    }
    // What else ran at the time (`benches/pgbench-anchor.sh` sets it).
    if let Ok(tag) = std::env::var("ARVO_BENCH_TAG") {
        params["tag"] = json!(tag);
    }
    params["key"] = json!(w.key);
    params["n"] = json!(n);
    params["scale"] = json!(scale);
    Ok(json!({
        "name": w.name,
        "stack": "rust",
        "otel": w.otel,
        "workflows": m.workflows,
        "events": m.rec.events,
        "wall_s": round(wall_s, 4),
        "events_per_s": round(m.rec.events as f64 / wall_s, 1),
        "workflows_per_s": round(m.workflows as f64 / wall_s, 1),
        "p50_us": round(percentile(&lat, 50.0), 2),
        "p99_us": round(percentile(&lat, 99.0), 2),
        "max_us": round(lat.last().copied().unwrap_or(0.0), 2),
        "latency_samples": lat.len(),
        "peak_rss_mb": round(peak_rss_mb(), 1),
        "params": params,
    }))
}

/// Median of the numbers; the mean of the two middle ones for an even count.
fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    let n = xs.len();
    match n {
        0 => 0.0,
        _ if n % 2 == 1 => xs[n / 2],
        _ => (xs[n / 2 - 1] + xs[n / 2]) / 2.0,
    }
}

/// The median of one field over the runs: numbers are replaced by their median (integers stay
/// integers), objects field by field, anything else is the first run's.
fn median_value(values: &[&Value]) -> Value {
    match values[0] {
        Value::Number(first) => {
            let m = median(values.iter().filter_map(|v| v.as_f64()).collect());
            if first.is_u64() { json!(m.round() as u64) } else { json!(round(m, 4)) }
        }
        Value::Object(first) => Value::Object(
            first
                .keys()
                .map(|k| {
                    (k.clone(), median_value(&values.iter().map(|v| &v[k.as_str()]).collect::<Vec<_>>()))
                })
                .collect(),
        ),
        other => other.clone(),
    }
}

/// The median line: every numeric field (also in `params`) is the median of that field over the runs.
fn median_line(runs: &[Value]) -> Value {
    let mut line = median_value(&runs.iter().collect::<Vec<_>>());
    line["median"] = json!(true);
    line["runs"] = json!(runs.len());
    line
}

struct Args {
    only: Vec<String>,
    scale: f64,
    runs: usize,
    /// Calls per fan-out workflow (`orchestrator_fanout` only).
    k: u32,
    single: Option<String>,
    /// `--pg-worker SCHEMA`: a worker process of a multi-process PostgreSQL workload.
    pg_worker: Option<String>,
    /// `--in-flight N`: workflows in flight, for the workloads that have such a number.
    in_flight: Option<usize>,
}

/// The value of `--in-flight`: a whole number of workflows, at least 1.
fn parse_in_flight(value: &str) -> Result<usize, String> {
    match value.parse::<usize>() {
        Ok(0) => Err("`--in-flight` must be at least 1 (workflows in flight), got 0".to_owned()),
        Ok(n) => Ok(n),
        Err(_) => Err(format!("`--in-flight` needs a whole number of workflows (at least 1), got `{value}`")),
    }
}

fn parse_args() -> Result<Args, BoxError> {
    let mut args = Args {
        only: WORKLOADS.iter().map(|w| w.key.to_owned()).collect(),
        scale: 1.0,
        runs: 3,
        k: fanout::K,
        single: None,
        pg_worker: None,
        in_flight: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("`{arg}` needs a value"));
        match arg.as_str() {
            "--only" => args.only = value()?.split(',').map(str::to_owned).collect(),
            "--scale" => args.scale = value()?.parse()?,
            "--runs" => args.runs = value()?.parse()?,
            "--k" => args.k = value()?.parse()?,
            "--single" => args.single = Some(value()?),
            "--in-flight" => args.in_flight = Some(parse_in_flight(&value()?)?),
            postgres::WORKER_FLAG => args.pg_worker = Some(value()?),
            "--list" => {
                for w in WORKLOADS {
                    println!("{}", w.key);
                }
                std::process::exit(0);
            }
            "-h" | "--help" => {
                println!(
                    "arvo-bench [--only NAME,...] [--scale F] [--runs R] [--in-flight N] [--single NAME] \
                     [--k K] [--list]"
                );
                println!("workloads: {}", WORKLOADS.iter().map(|w| w.key).collect::<Vec<_>>().join(", "));
                std::process::exit(0);
            }
            other => return Err(format!("unknown argument `{other}`").into()),
        }
    }
    Ok(args)
}

fn main() -> std::process::ExitCode {
    match run() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("arvo-bench: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), BoxError> {
    let args = parse_args()?;
    if let Some(schema) = &args.pg_worker {
        return postgres::worker_main(schema, args.k);
    }
    if let Some(name) = &args.single {
        println!("{}", single(name, args.scale, args.k, args.in_flight)?);
        return Ok(());
    }
    let exe = std::env::current_exe()?;
    for name in &args.only {
        find(name)?;
        if (name.starts_with("postgres_") || name.starts_with("nats_pg_"))
            && let Err(reason) = postgres::database_url()
        {
            eprintln!("skipping {name}: {reason}");
            continue;
        }
        if name.starts_with("nats_")
            && let Err(reason) = nats::nats_url()
        {
            eprintln!("skipping {name}: {reason}");
            continue;
        }
        let mut runs = Vec::with_capacity(args.runs);
        for _ in 0..args.runs {
            let mut child = Command::new(&exe);
            child.args(["--single", name, "--scale", &args.scale.to_string(), "--k", &args.k.to_string()]);
            if let Some(in_flight) = args.in_flight {
                child.args(["--in-flight", &in_flight.to_string()]);
            }
            let out = child.output()?;
            if !out.status.success() {
                return Err(format!("`{name}` failed: {}", String::from_utf8_lossy(&out.stderr)).into());
            }
            let stdout = String::from_utf8(out.stdout)?;
            let line =
                stdout.lines().rev().find(|l| l.starts_with('{')).ok_or("no JSON line from the child")?;
            let run: Value = serde_json::from_str(line)?;
            println!("{run}");
            runs.push(run);
        }
        if !runs.is_empty() {
            println!("{}", median_line(&runs));
        }
    }
    Ok(())
}
