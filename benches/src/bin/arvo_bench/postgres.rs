//! The PostgreSQL workloads: the chain (`postgres_chain_<in flight>`) and the fan-out
//! (`postgres_fanout`) on a durable [`Node`] over a [`PgStore`] and its own [`PgQueue`], so every
//! event is a queue row: claimed (`UPDATE … SKIP LOCKED`), handled (an orchestrator step
//! acquires its lease, then commits its record, journal entry and queue rows in one call of
//! `commit_step`; a service or the client advances the outbox in one call of `outbox_step`) and
//! acked. Each run has a fresh schema, dropped after; the URL comes from `DATABASE_URL` (the
//! workloads are skipped, saying so, when it is unset).
//!
//! Besides the usual fields, each line carries the database's commits per event
//! (`xact_commit` of `pg_stat_database` for the database, before and after: every session on
//! that database counts, so give the bench a database of its own), the WAL syncs per event
//! (`pg_stat_wal`: the whole server) and the CPU time of this process and of the server's
//! `postgres` processes.
//!
//! `postgres_chain_1000_2proc`: the same chain with the orchestrator and the services in two
//! worker processes (this binary again, `--pg-worker SCHEMA`) sharing the schema; this process
//! only runs the client (it starts the workflows and takes their completions), and reports how
//! the deliveries split between the workers.
//!
//! Latency: a workflow's events are handled one after the other, so each sample is the time
//! from the end of one service (or client) execution of a workflow to the start of its next one:
//! the commit and ack of the producer, a claim, one orchestrator step (acquire, machine, commit)
//! and its ack, and the claim of the next event. On the chain, that is one sample per
//! orchestrator step (3 per workflow).
//!
//! After the run, before the schema is dropped, each line gets the bytes the schema keeps per
//! workflow (`pg_total_relation_size` of its tables; see [`footprint::postgres`]): the store
//! keeps finished workflows and their journals (`Retention::Keep`, `PgConfig`'s default).

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use orchestrator::memory::NodeId;
use orchestrator::orchestration::{Orchestrator, WorkflowRecord};
use orchestrator::prelude::*;
use orchestrator::runtime::Node;
use orchestrator_examples::calculator::services;
use orchestrator_postgres::{PgConfig, PgQueue, PgStore, QueueConfig};
use serde_json::{Value, json};
use tokio::runtime::Runtime;

use super::fanout::{FanoutClient, FanoutFlow};
use super::footprint;
use super::looped::{
    ClientHandler, Hopped, Hops, LoopClient, drive, process_cpu_s, random_u64, server_cpu_s, server_ticks,
};
use super::rig::{Client, Measured, Recorder, warmup_units};
use super::{BoxError, ChainClient, ChainFlow};

type Store = PgStore<WorkflowRecord>;
type PgNode = Node<Store, PgQueue>;

/// The argument that makes this binary a worker process of `postgres_chain_1000_2proc`.
pub(super) const WORKER_FLAG: &str = "--pg-worker";

/// How long to wait for the server's backends to publish their statistics (PostgreSQL 15
/// flushes a backend's pending counters at most once a second, when it goes idle).
const STATS_SETTLE: Duration = Duration::from_millis(1_500);

/// The database URL, or why the PostgreSQL workloads are skipped.
pub(super) fn database_url() -> Result<String, String> {
    match std::env::var("DATABASE_URL") {
        Ok(url) if !url.is_empty() => Ok(url),
        _ => Err("DATABASE_URL is not set".to_owned()),
    }
}

/// A setting from the environment (`ARVO_BENCH_PG_<NAME>`), or `default`.
fn setting(name: &str, default: usize) -> Result<usize, BoxError> {
    match std::env::var(format!("ARVO_BENCH_PG_{name}")) {
        Ok(v) => Ok(v.parse().map_err(|e| format!("ARVO_BENCH_PG_{name}={v}: {e}"))?),
        Err(_) => Ok(default),
    }
}

/// How the store, the queue and the node are configured (defaults, or the environment's
/// `ARVO_BENCH_PG_POOL`, `ARVO_BENCH_PG_COMMITTERS`, `ARVO_BENCH_PG_BATCH`,
/// `ARVO_BENCH_PG_WORKERS`, `ARVO_BENCH_PG_VACUUM`: rows claimed between vacuums of the queue,
/// 0 for none).
#[derive(Debug, Clone, Copy)]
struct Tuning {
    pool: usize,
    committers: usize,
    batch: usize,
    workers: usize,
    vacuum_every: u64,
}

impl Tuning {
    fn from_env(batch: usize) -> Result<Self, BoxError> {
        Ok(Self {
            pool: setting("POOL", PgConfig::new("").pool_size)?,
            committers: setting("COMMITTERS", PgConfig::new("").committers)?,
            batch: setting("BATCH", batch)?,
            workers: setting("WORKERS", 64)?,
            vacuum_every: setting(
                "VACUUM",
                QueueConfig::default().vacuum_every.map_or(0, |n| usize::try_from(n).unwrap_or(usize::MAX)),
            )? as u64,
        })
    }

    fn json(self) -> Value {
        json!({ "pool_size": self.pool, "committers": self.committers, "claim_batch": self.batch, "node_workers": self.workers, "vacuum_every": self.vacuum_every })
    }
}

async fn open(url: &str, schema: &str, tuning: Tuning) -> Result<Store, BoxError> {
    let mut config = PgConfig::new(url);
    config.schema = schema.to_owned();
    config.pool_size = tuning.pool;
    config.committers = tuning.committers;
    config.node = NodeId::new(format!("arvo-bench-{schema}-{}", std::process::id()));
    Ok(PgStore::open(config).await?)
}

fn queue_config(tuning: Tuning) -> QueueConfig {
    let vacuum_every = (tuning.vacuum_every > 0).then_some(tuning.vacuum_every);
    QueueConfig { batch: tuning.batch, vacuum_every, ..QueueConfig::default() }
}

pub(super) async fn drop_schema(url: &str, schema: &str) {
    if std::env::var_os("ARVO_BENCH_PG_KEEP").is_some() {
        eprintln!("kept schema {schema} (ARVO_BENCH_PG_KEEP)");
        return;
    }
    let sql = format!("DROP SCHEMA IF EXISTS \"{schema}\" CASCADE");
    match tokio_postgres::connect(url, tokio_postgres::NoTls).await {
        Ok((client, connection)) => {
            let task = tokio::spawn(connection);
            if let Err(e) = client.batch_execute(&sql).await {
                eprintln!("could not drop schema {schema}: {e}");
            }
            drop(client);
            let _ = task.await;
        }
        Err(e) => eprintln!("could not drop schema {schema}: {e}"),
    }
}

// ---------------------------------------------------------------------------------------------
// Server-side counters

/// The database's and the server's counters at one moment.
#[derive(Debug, Clone, Default)]
struct PgCounters {
    /// `pg_stat_database.xact_commit` of the bench's database.
    commits: i64,
    /// `pg_stat_database.xact_rollback`.
    rollbacks: i64,
    /// `pg_stat_wal.wal_sync` (the whole server).
    wal_syncs: i64,
    /// `pg_stat_wal.wal_write`.
    wal_writes: i64,
    /// `pg_stat_wal.wal_bytes`.
    wal_bytes: f64,
    /// CPU ticks of the server's `postgres` processes alive at this moment.
    server_ticks: HashMap<u32, u64>,
}

async fn pg_counters(url: &str) -> Result<PgCounters, BoxError> {
    tokio::time::sleep(STATS_SETTLE).await;
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls).await?;
    let task = tokio::spawn(connection);
    let row = client
        .query_one(
            "SELECT d.xact_commit, d.xact_rollback, w.wal_sync, w.wal_write, w.wal_bytes::float8 \
             FROM pg_stat_database d, pg_stat_wal w WHERE d.datname = current_database()",
            &[],
        )
        .await?;
    drop(client);
    let _ = task.await;
    Ok(PgCounters {
        commits: row.get(0),
        rollbacks: row.get(1),
        wal_syncs: row.get(2),
        wal_writes: row.get(3),
        wal_bytes: row.get(4),
        server_ticks: server_ticks("postgres"),
    })
}

/// The workflow a workload runs.
#[derive(Debug, Clone, Copy)]
pub(super) enum Flow {
    /// The chain: 5 events per workflow.
    Chain,
    /// The fan-out with K calls: 2K + 1 events per workflow.
    Fanout(u32),
}

impl Flow {
    pub(super) fn per_workflow(self) -> usize {
        match self {
            Self::Chain => 5,
            Self::Fanout(k) => 2 * k as usize + 1,
        }
    }

    /// A node over `store` running this flow's orchestrator and services (and `client`, when
    /// given) on the store's queue.
    async fn node(
        self,
        store: &Arc<Store>,
        tuning: Tuning,
        hops: &Arc<Hops>,
        client: Option<Box<dyn FnOnce(NodeBuilderOf) -> NodeBuilderOf>>,
        with_workflow: bool,
    ) -> Result<PgNode, BoxError> {
        let queue = store.queue(queue_config(tuning));
        let mut builder = Node::builder(Arc::clone(store)).durable().transport(queue).workers(tuning.workers);
        if with_workflow {
            builder = builder
                .service(Hopped { inner: services::add()?, hops: Arc::clone(hops) })
                .service(Hopped { inner: services::mul()?, hops: Arc::clone(hops) });
            builder = match self {
                Self::Chain => {
                    builder.orchestrator(Orchestrator::builder(Arc::clone(store)).machine::<ChainFlow>())
                }
                Self::Fanout(_) => {
                    builder.orchestrator(Orchestrator::builder(Arc::clone(store)).machine::<FanoutFlow>())
                }
            };
        }
        if let Some(client) = client {
            builder = client(builder);
        }
        Ok(builder.build().await?)
    }
}

type NodeBuilderOf = orchestrator::runtime::NodeBuilder<Store, PgQueue>;

/// One worker process of a multi-process run, as the parent sees it.
struct Worker {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
}

impl Worker {
    fn spawn(schema: &str, flow: Flow) -> Result<Self, BoxError> {
        let k = match flow {
            Flow::Chain => 0,
            Flow::Fanout(k) => k,
        };
        let mut child = Command::new(std::env::current_exe()?)
            .args([WORKER_FLAG, schema, "--k", &k.to_string()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()?;
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().ok_or("no stdout")?);
        let mut worker = Self { child, stdin, stdout };
        let line = worker.line()?;
        if line.trim() != "ready" {
            return Err(format!("worker said `{line}`").into());
        }
        Ok(worker)
    }

    fn line(&mut self) -> Result<String, BoxError> {
        let mut line = String::new();
        if self.stdout.read_line(&mut line)? == 0 {
            return Err("a worker process ended early".into());
        }
        Ok(line)
    }

    /// The worker's deliveries so far and its CPU seconds.
    fn report(&mut self) -> Result<(u64, f64), BoxError> {
        let stdin = self.stdin.as_mut().ok_or("worker closed")?;
        writeln!(stdin, "report")?;
        stdin.flush()?;
        let v: Value = serde_json::from_str(&self.line()?)?;
        Ok((v["delivered"].as_u64().unwrap_or(0), v["cpu_s"].as_f64().unwrap_or(0.0)))
    }

    fn finish(mut self) -> Result<(), BoxError> {
        drop(self.stdin.take());
        let status = self.child.wait()?;
        if !status.success() {
            return Err(format!("a worker process failed: {status}").into());
        }
        Ok(())
    }
}

/// `--pg-worker SCHEMA`: runs the flow's orchestrator and services on the schema's queue until
/// stdin closes; answers each line of stdin with its deliveries and CPU time so far.
pub(super) fn worker_main(schema: &str, k: u32) -> Result<(), BoxError> {
    let url = database_url()?;
    let flow = if k == 0 { Flow::Chain } else { Flow::Fanout(k) };
    let tuning = Tuning::from_env(DEFAULT_BATCH)?;
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    let hops = Arc::new(Hops::default());
    let node = rt.block_on(async {
        let store = Arc::new(open(&url, schema, tuning).await?);
        flow.node(&store, tuning, &hops, None, true).await
    })?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "ready")?;
    out.flush()?;
    for line in std::io::stdin().lock().lines() {
        line?;
        let stats = node.dispatcher().stats();
        writeln!(out, "{}", json!({ "delivered": stats.delivered, "cpu_s": process_cpu_s() }))?;
        out.flush()?;
    }
    rt.block_on(node.shutdown());
    Ok(())
}

/// The queue's default claim size ([`QueueConfig::batch`]), which the rows use unless they say.
pub(super) const DEFAULT_BATCH: usize = 64;

/// A workload: `n` workflows of `flow`, `in_flight` at a time, in `procs` worker processes (0:
/// all in this process), claiming up to `batch` events at once.
pub(super) fn run(
    n: usize,
    flow: Flow,
    in_flight: usize,
    procs: usize,
    batch: usize,
) -> Result<Measured, BoxError> {
    let url = database_url()?;
    let tuning = Tuning::from_env(batch)?;
    let schema = format!("bench_{:016x}", random_u64());
    let rt: Runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    let result = match flow {
        Flow::Chain => measure(&rt, &url, &schema, n, flow, in_flight, procs, tuning, ChainClient::new()),
        Flow::Fanout(k) => measure(
            &rt,
            &url,
            &schema,
            n,
            flow,
            in_flight,
            procs,
            tuning,
            FanoutClient { factory: EventFactory::new(), k },
        ),
    };
    rt.block_on(drop_schema(&url, &schema));
    result
}

#[allow(clippy::too_many_arguments)]
fn measure<C: Client + Send + Sync + 'static>(
    rt: &Runtime,
    url: &str,
    schema: &str,
    n: usize,
    flow: Flow,
    in_flight: usize,
    procs: usize,
    tuning: Tuning,
    client: C,
) -> Result<Measured, BoxError> {
    let hops = Arc::new(Hops::default());
    let client = Arc::new(LoopClient::new(client, Arc::clone(&hops)));
    // This process's node: everything, or only the client when workers do the rest.
    let store = Arc::new(rt.block_on(open(url, schema, tuning))?);
    let with_client: Box<dyn FnOnce(NodeBuilderOf) -> NodeBuilderOf> = {
        let client = Arc::clone(&client);
        Box::new(move |b: NodeBuilderOf| b.service(ClientHandler(client)))
    };
    let node = rt.block_on(flow.node(&store, tuning, &hops, Some(with_client), procs == 0))?;
    let mut workers = (0..procs).map(|_| Worker::spawn(schema, flow)).collect::<Result<Vec<_>, _>>()?;

    let warmup = warmup_units(n).min(500);
    rt.block_on(drive(&node, &client, 0, warmup, in_flight))?;
    hops.take();
    let before_workers = workers.iter_mut().map(Worker::report).collect::<Result<Vec<_>, _>>()?;
    let before = rt.block_on(pg_counters(url))?;
    let cpu0 = process_cpu_s();
    let (workflows, wall) = rt.block_on(drive(&node, &client, warmup, n, in_flight))?;
    let cpu_s = process_cpu_s() - cpu0;
    let after_workers = workers.iter_mut().map(Worker::report).collect::<Result<Vec<_>, _>>()?;
    let after = rt.block_on(pg_counters(url))?;
    let latencies_us = hops.take();
    let stats = node.dispatcher().stats();
    rt.block_on(node.shutdown());
    let dead = node.take_dead_letters();
    for worker in workers {
        worker.finish()?;
    }
    if !dead.is_empty() {
        return Err(format!("{} dead letters, first: {:?}", dead.len(), dead[0]).into());
    }
    // The bytes the schema keeps for the warm-up's and the measured workflows.
    let kept = rt.block_on(footprint::postgres(url, schema))?;

    let events = (workflows * flow.per_workflow()) as u64;
    let per_event = |x: f64| x / events as f64;
    let split: Vec<u64> = before_workers.iter().zip(&after_workers).map(|(b, a)| a.0 - b.0).collect();
    let workers_cpu_s: f64 = before_workers.iter().zip(&after_workers).map(|(b, a)| a.1 - b.1).sum();
    let all_cpu_s = cpu_s + workers_cpu_s;
    let commits = after.commits - before.commits;
    let wal_syncs = after.wal_syncs - before.wal_syncs;
    let server_cpu_s = server_cpu_s(&before.server_ticks, &after.server_ticks);
    let mut params = json!({
        "warmup": warmup,
        "in_flight": in_flight,
        "memory": "PgStore(Retention::Keep)",
        "broker": "durable Node on PgStore::queue (PgQueue)",
        "latency": if procs == 0 {
            "per orchestrator step: end of one service/client execution of a workflow to the start of its next"
        } else {
            "per workflow: the client's init to its completion (the services run in the workers)"
        },
        "worker_processes": procs,
        "tuning": tuning.json(),
        "commits": commits,
        "commits_per_event": (per_event(commits as f64) * 100.0).round() / 100.0,
        "rollbacks": after.rollbacks - before.rollbacks,
        "wal_syncs": wal_syncs,
        "wal_syncs_per_event": (per_event(wal_syncs as f64) * 1000.0).round() / 1000.0,
        "wal_writes": after.wal_writes - before.wal_writes,
        "wal_kb_per_event": (per_event(after.wal_bytes - before.wal_bytes) / 1024.0 * 100.0).round() / 100.0,
        "cpu_us_per_event": (per_event(all_cpu_s) * 1e6 * 10.0).round() / 10.0,
        "server_cpu_s": (server_cpu_s * 100.0).round() / 100.0,
        "server_cpu_us_per_event": (per_event(server_cpu_s) * 1e6 * 10.0).round() / 10.0,
        "dispatch": {
            "delivered": stats.delivered,
            "retried": stats.retried,
            "settle_failures": stats.settle_failures,
            "dead_lettered": stats.dead_lettered,
            "note": "this process's node, warm-up included",
        },
        "stats_note": "commits: pg_stat_database.xact_commit of this database (all its sessions); wal_syncs and server_cpu_s: the whole server",
    });
    if procs > 0 {
        let total: u64 = split.iter().sum();
        params["deliveries_per_worker"] = json!(split);
        params["deliveries_share"] = json!(
            split
                .iter()
                .map(|d| (*d as f64 / total.max(1) as f64 * 1000.0).round() / 1000.0)
                .collect::<Vec<_>>()
        );
        params["client_cpu_s"] = json!((cpu_s * 100.0).round() / 100.0);
        params["workers_cpu_s"] = json!((workers_cpu_s * 100.0).round() / 100.0);
    }
    if let (Value::Object(params), Value::Object(kept)) = (&mut params, kept) {
        params.extend(kept);
    }
    if let Flow::Fanout(k) = flow {
        params["k"] = json!(k);
        params["events_per_workflow"] = json!(flow.per_workflow());
    }
    Ok(Measured { workflows, rec: Recorder { latencies_us, events }, wall, cpu_s: Some(all_cpu_s), params })
}
