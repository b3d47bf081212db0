//! The node workloads over NATS JetStream, next to the same node on the in-process transport:
//! `nats_sqlite_chain_<in flight>`, `nats_sqlite_fanout`, `nats_pg_chain_1000` and
//! `node_sqlite_chain_<in flight>`.
//!
//! Each runs one durable [`Node`] with the flow's orchestrator, its services and the client (the
//! [`LoopClient`]: it keeps a number of workflows in flight, starting the next as each
//! completes). Over NATS every event is a message of a fresh deployment (a stream of its own,
//! deleted after): published and acknowledged by the server, pulled by the topic's durable
//! consumer, acked after its step committed; a step's products go to the store's outbox in its
//! commit and leave it once the stream stored them. The store is SQLite (`synchronous=FULL`,
//! in a temporary directory) or PostgreSQL (`DATABASE_URL`, a fresh schema dropped after). The
//! `node_` rows run the same node on the in-process transport, where the outbox keeps an event
//! until its handler took it.
//!
//! Lines carry the CPU time of this process and of the servers' processes (`nats-server`, and
//! `postgres` for the PostgreSQL row) per event. `NATS_URL` (and `DATABASE_URL`) must be set;
//! the workloads are skipped, saying so, otherwise.
//!
//! Latency: as in [`super::postgres`], one sample per orchestrator step, from the end of one
//! service (or client) execution of a workflow to the start of its next.

use std::sync::Arc;
use std::time::Duration;

use orchestrator::memory::Memory;
use orchestrator::orchestration::{Orchestrator, WorkflowRecord};
use orchestrator::outbox::Outbox;
use orchestrator::prelude::*;
use orchestrator::runtime::Node;
use orchestrator::transport::{InProcessConfig, InProcessTransport, Transport};
use orchestrator_examples::calculator::services;
use orchestrator_nats::{NatsConfig, NatsTransport};
use orchestrator_postgres::{PgConfig, PgStore};
use orchestrator_sqlite::{SqliteConfig, Synchronous};
use serde_json::{Value, json};
use tokio::runtime::Runtime;

use super::fanout::{FanoutClient, FanoutFlow};
use super::history::{cpu_us_per_event_by_thread, threads_cpu_s};
use super::looped::{
    ClientHandler, Hopped, Hops, LoopClient, drive, process_cpu_s, random_u64, server_cpu_s, server_ticks,
};
use super::postgres::Flow;
use super::rig::{Client, Measured, Recorder, warmup_units};
use super::{BoxError, ChainClient, ChainFlow};

/// The server's URL, or why the NATS workloads are skipped.
pub(super) fn nats_url() -> Result<String, String> {
    match std::env::var("NATS_URL") {
        Ok(url) if !url.is_empty() => Ok(url),
        _ => Err("NATS_URL is not set".to_owned()),
    }
}

/// What carries the events.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Carrier {
    /// The in-process transport.
    InProcess,
    /// NATS JetStream, a fresh deployment per run.
    Nats,
}

/// Where the workflows are kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kept {
    /// SQLite, `synchronous=FULL`.
    Sqlite,
    /// PostgreSQL, a fresh schema.
    Postgres,
}

/// Worker tasks of the node.
const WORKERS: usize = 64;

/// A workload: `n` workflows of `flow`, `in_flight` at a time.
pub(super) fn run(
    n: usize,
    flow: Flow,
    in_flight: usize,
    carrier: Carrier,
    kept: Kept,
) -> Result<Measured, BoxError> {
    let rt: Runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    let tag = format!("{:016x}", random_u64());
    let dir = tempfile::tempdir()?;
    let measured = match kept {
        Kept::Sqlite => {
            let store = Arc::new(
                SqliteConfig::new(dir.path().join("bench.sqlite"))
                    .synchronous(Synchronous::Full)
                    .owner("arvo-bench")
                    .open::<WorkflowRecord>()?,
            );
            on_carrier(&rt, store, n, flow, in_flight, carrier, &tag)
        }
        Kept::Postgres => {
            let url = super::postgres::database_url()?;
            let schema = format!("bench_{tag}");
            let mut config = PgConfig::new(&url);
            config.schema.clone_from(&schema);
            let store = Arc::new(rt.block_on(PgStore::<WorkflowRecord>::open(config))?);
            let measured = on_carrier(&rt, store, n, flow, in_flight, carrier, &tag);
            rt.block_on(super::postgres::drop_schema(&url, &schema));
            measured
        }
    }?;
    let mut measured = measured;
    measured.params["store"] = json!(match kept {
        Kept::Sqlite => "SqliteMemory (synchronous=FULL)",
        Kept::Postgres => "PgStore (its outbox; the queue unused)",
    });
    Ok(measured)
}

fn on_carrier<M>(
    rt: &Runtime,
    store: Arc<M>,
    n: usize,
    flow: Flow,
    in_flight: usize,
    carrier: Carrier,
    tag: &str,
) -> Result<Measured, BoxError>
where
    M: Memory<WorkflowRecord> + Outbox + 'static,
{
    match carrier {
        Carrier::InProcess => {
            let transport = InProcessTransport::new(InProcessConfig::default())?;
            let mut measured = by_flow(rt, store, transport, n, flow, in_flight)?;
            measured.params["transport"] = json!("InProcessTransport");
            Ok(measured)
        }
        Carrier::Nats => {
            let url = nats_url()?;
            let deployment = format!("BENCH_{}", tag.to_ascii_uppercase());
            let transport =
                rt.block_on(NatsTransport::connect(NatsConfig::new(url).deployment(&deployment)))?;
            let measured = by_flow(rt, store, transport.clone(), n, flow, in_flight);
            if let Err(e) = rt.block_on(transport.delete_streams()) {
                eprintln!("could not delete the deployment {deployment}: {e}");
            }
            let mut measured = measured?;
            measured.params["transport"] = json!("NatsTransport (a stream per run, defaults)");
            Ok(measured)
        }
    }
}

fn by_flow<M, T>(
    rt: &Runtime,
    store: Arc<M>,
    transport: T,
    n: usize,
    flow: Flow,
    in_flight: usize,
) -> Result<Measured, BoxError>
where
    M: Memory<WorkflowRecord> + Outbox + 'static,
    T: Transport,
{
    match flow {
        Flow::Chain => measure(rt, store, transport, n, flow, in_flight, ChainClient::new()),
        Flow::Fanout(k) => measure(
            rt,
            store,
            transport,
            n,
            flow,
            in_flight,
            FanoutClient { factory: EventFactory::new(), k },
        ),
    }
}

fn measure<M, T, C>(
    rt: &Runtime,
    store: Arc<M>,
    transport: T,
    n: usize,
    flow: Flow,
    in_flight: usize,
    client: C,
) -> Result<Measured, BoxError>
where
    M: Memory<WorkflowRecord> + Outbox + 'static,
    T: Transport,
    C: Client + Send + Sync + 'static,
{
    let hops = Arc::new(Hops::default());
    let client = Arc::new(LoopClient::new(client, Arc::clone(&hops)));
    let builder = Node::builder(Arc::clone(&store))
        .transport(transport)
        .durable()
        .workers(WORKERS)
        .without_timers()
        .service(Hopped { inner: services::add()?, hops: Arc::clone(&hops) })
        .service(Hopped { inner: services::mul()?, hops: Arc::clone(&hops) })
        .service(ClientHandler(Arc::clone(&client)));
    let builder = match flow {
        Flow::Chain => builder.orchestrator(Orchestrator::builder(Arc::clone(&store)).machine::<ChainFlow>()),
        Flow::Fanout(_) => {
            builder.orchestrator(Orchestrator::builder(Arc::clone(&store)).machine::<FanoutFlow>())
        }
    };
    let node = rt.block_on(builder.build())?;

    let warmup = warmup_units(n).min(500);
    rt.block_on(drive(&node, &client, 0, warmup, in_flight))?;
    hops.take();
    let servers = || [server_ticks("nats-server"), server_ticks("postgres")];
    let before = servers();
    let cpu0 = process_cpu_s();
    let threads0 = threads_cpu_s();
    let (workflows, wall) = rt.block_on(drive(&node, &client, warmup, n, in_flight))?;
    let cpu_s = process_cpu_s() - cpu0;
    let threads = threads_cpu_s();
    let after = servers();
    let latencies_us = hops.take();
    let stats = node.dispatcher().stats();
    rt.block_on(async {
        tokio::time::timeout(Duration::from_secs(60), node.shutdown())
            .await
            .map_err(|_| "the node did not stop")
    })?;
    let dead = node.take_dead_letters();
    if !dead.is_empty() {
        return Err(format!("{} dead letters, first: {:?}", dead.len(), dead[0]).into());
    }
    let left = rt.block_on(store.pending(0, 10))?;
    if !left.is_empty() {
        return Err(format!("{} events left in the outbox, first: {:?}", left.len(), left[0].event).into());
    }

    let events = (workflows * flow.per_workflow()) as u64;
    let per_event_us = |s: f64| (s / events as f64 * 1e6 * 10.0).round() / 10.0;
    let nats_cpu_s = server_cpu_s(&before[0], &after[0]);
    let pg_cpu_s = server_cpu_s(&before[1], &after[1]);
    let mut params: Value = json!({
        "warmup": warmup,
        "in_flight": in_flight,
        "node_workers": WORKERS,
        "latency": "per orchestrator step: end of one service/client execution of a workflow to the start of its next",
        "cpu_us_per_event": per_event_us(cpu_s),
        "cpu_us_per_event_by_thread": cpu_us_per_event_by_thread(&threads0, &threads, events),
        "nats_server_cpu_us_per_event": per_event_us(nats_cpu_s),
        "postgres_cpu_us_per_event": per_event_us(pg_cpu_s),
        "servers_note": "CPU of every nats-server / postgres process on the machine over the run",
        "dispatch": {
            "delivered": stats.delivered,
            "retried": stats.retried,
            "settle_failures": stats.settle_failures,
            "dead_lettered": stats.dead_lettered,
            "note": "warm-up included",
        },
    });
    if let Flow::Fanout(k) = flow {
        params["k"] = json!(k);
        params["events_per_workflow"] = json!(flow.per_workflow());
    }
    Ok(Measured { workflows, rec: Recorder { latencies_us, events }, wall, cpu_s: Some(cpu_s), params })
}
