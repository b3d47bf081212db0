//! The main example's order workflow ([`crate::orders`]) on one PostgreSQL database shared by
//! several processes: `cargo run --release --example cluster -- worker|start` (see
//! `examples/cluster.rs`).
//!
//! * [`worker`]: a process hosting the order workflow and its three services, each in a worker
//!   pool of its own ([`Pools`]), on the store's event queue ([`PgStore::queue`]), until its stop
//!   future completes (SIGTERM, Ctrl-C). It prints a status line ([`Status`]) every second.
//!   Workers share the work through the queue: a claim (`FOR UPDATE SKIP LOCKED`) gives one
//!   delivery to one of them; a workflow's events are handled one at a time, in order, whichever
//!   process claims them; a delivery whose worker died is claimed again once its visibility
//!   deadline passes (at once when the worker is restarted under the same name).
//! * [`start`]: starts workflows, waits for their completion events (on a client topic of its
//!   own, so that several starts may run at once) and reports how many completed, failed or are
//!   missing ([`StartReport`]).
//!
//! Every process names the same schema ([`DEFAULT_SCHEMA`] unless told otherwise).

use std::future::Future;
use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use orchestrator::factory::FactoryError;
use orchestrator::handler::service::Emissions;
use orchestrator::memory::NodeId;
use orchestrator::orchestration::{Orchestrator, WorkflowRecord};
use orchestrator::prelude::*;
use orchestrator::runtime::pool::LifecycleEvent;
use orchestrator::runtime::{Heartbeat, Node, NodeError, RetryPolicy};
use orchestrator::subject::SubjectError;
use orchestrator_postgres::effects::{EffectTx, Transactional};
use orchestrator_postgres::{OpenError, PgConfig, PgQueue, PgStore, QueueConfig};
use tokio::sync::Semaphore;
use tokio::sync::broadcast::error::RecvError;

use crate::nats_order::{order, order_topic, service_topics};
use crate::orders::{OrderFlow, OrderOutcome, OrderV1, Payment, PaymentV1, services};

/// The schema every process of the example uses unless told otherwise.
pub const DEFAULT_SCHEMA: &str = "cluster";

/// What went wrong in a worker or a start.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    /// The store could not be opened (within the connect timeout, for a database that is down).
    #[error("cannot open the store: {0}")]
    Open(#[from] OpenError),
    /// The node could not be built, or a workflow could not be started.
    #[error(transparent)]
    Node(#[from] NodeError),
    /// A handler could not be declared.
    #[error(transparent)]
    Violation(#[from] Violation),
    /// An init event could not be built.
    #[error(transparent)]
    Factory(#[from] FactoryError),
    /// A subject could not be built.
    #[error(transparent)]
    Subject(#[from] SubjectError),
    /// A statement of the example's own (creating its charges table) failed.
    #[error("the database refused the example's table: {0}")]
    Sql(tokio_postgres::Error),
    /// A bad option.
    #[error("{0}")]
    Usage(String),
}

/// The size of each worker pool of a [`worker`]: how many deliveries of each topic it handles
/// at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pools {
    /// The order workflow's steps (default 32: its commits are grouped, so more in flight means
    /// fewer transactions).
    pub orders: usize,
    /// The inventory service (default 8).
    pub inventory: usize,
    /// The payment service (default 8).
    pub payment: usize,
    /// The shipping service (default 8).
    pub shipping: usize,
}

impl Default for Pools {
    fn default() -> Self {
        Self { orders: 32, inventory: 8, payment: 8, shipping: 8 }
    }
}

/// How a [`worker`] runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerOptions {
    /// The database (`postgres://user@host:port/database`).
    pub database_url: String,
    /// The schema shared by every process (default [`DEFAULT_SCHEMA`]).
    pub schema: String,
    /// The worker's name: its node id in the store. One live process per name: a worker started
    /// under the name of one that died frees what the dead one held at once (its claims would
    /// otherwise lapse after [`WorkerOptions::visibility`]). Default `worker-<pid>`.
    pub name: String,
    /// The pools' sizes.
    pub pools: Pools,
    /// The most database connections (default 8).
    pub connections: usize,
    /// How many connections commit steps at once (default 1; see `PgConfig::committers`).
    pub committers: usize,
    /// How long a claim lasts unless extended (default 30 s): a delivery of a worker that died
    /// or stalls is delivered again after that. Running handlers extend theirs every third of it.
    pub visibility: Duration,
    /// How long to keep trying to reach the database at start (default 30 s).
    pub connect_timeout: Duration,
    /// How often the status line is printed (default every second; `None`: never).
    pub status_every: Option<Duration>,
}

impl WorkerOptions {
    /// The defaults, on `database_url`.
    pub fn new(database_url: impl Into<String>) -> Self {
        Self {
            database_url: database_url.into(),
            schema: DEFAULT_SCHEMA.to_owned(),
            name: format!("worker-{}", std::process::id()),
            pools: Pools::default(),
            connections: 8,
            committers: 1,
            visibility: Duration::from_secs(30),
            connect_timeout: Duration::from_secs(30),
            status_every: Some(Duration::from_secs(1)),
        }
    }
}

/// A worker's counters at one moment (what its status line shows).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Status {
    /// Deliveries handled per second since the previous status.
    pub tasks_per_second: f64,
    /// Deliveries being handled now.
    pub in_flight: i64,
    /// Deliveries handled since the worker started (a retried event counts once per attempt).
    pub handled: u64,
    /// Deliveries handed back to be tried again (transient failures).
    pub retries: u64,
    /// Events that became dead letters.
    pub dead_letters: u64,
    /// The CPU time the process used so far (Linux), if known.
    pub cpu: Option<Duration>,
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{:>8.1} tasks/s | in flight {:>4} | handled {:>8} | retries {:>5} | dead letters {:>3}",
            self.tasks_per_second, self.in_flight, self.handled, self.retries, self.dead_letters
        )?;
        if let Some(cpu) = self.cpu {
            write!(f, " | cpu {:.1} s", cpu.as_secs_f64())?;
        }
        Ok(())
    }
}

/// What a [`worker`] did, when it stopped.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkerReport {
    /// Its name.
    pub name: String,
    /// Its counters at the end (the rate is the average over its life).
    pub status: Status,
    /// How long it ran.
    pub elapsed: Duration,
}

/// The retry policy of the example's nodes: the default's, with twice as many attempts, so that
/// a database restart is outlasted.
pub fn retry_policy() -> RetryPolicy {
    RetryPolicy { max_attempts: 20, max_delay: Duration::from_secs(5), ..RetryPolicy::default() }
}

/// The queue settings every process of the example uses, with claims that last `visibility`:
/// otherwise the defaults (a poll interval shorter than the default 250 ms costs the server more
/// than it saves: each process's feeds reap lapsed claims once per interval, a scan of the
/// queue; enqueues wake the pollers through `LISTEN/NOTIFY` anyway; see BENCHMARKS.md).
pub fn queue_config(visibility: Duration) -> QueueConfig {
    QueueConfig { visibility, ..QueueConfig::default() }
}

/// Opens the store in `schema` as node `name`, trying again for up to `connect_timeout` while
/// the database cannot be reached (it may be restarting).
pub async fn open(
    url: &str,
    schema: &str,
    name: &str,
    connections: usize,
    committers: usize,
    connect_timeout: Duration,
) -> Result<PgStore<WorkflowRecord>, ClusterError> {
    let config = PgConfig {
        schema: schema.to_owned(),
        pool_size: connections.max(2),
        committers: committers.max(1),
        node: NodeId::new(name),
        ..PgConfig::new(url)
    };
    let deadline = Instant::now() + connect_timeout;
    let mut pause = Duration::from_millis(100);
    loop {
        match PgStore::open(config.clone()).await {
            Ok(store) => return Ok(store),
            Err(e @ (OpenError::Url(_) | OpenError::NewerSchema { .. })) => return Err(e.into()),
            Err(e) if Instant::now() + pause > deadline => return Err(e.into()),
            Err(e) => {
                eprintln!("[{name}] the database is not reachable yet ({e}); trying again");
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_secs(2));
            }
        }
    }
}

/// The CPU time (user and system) this process has used, from `/proc/self/stat` (Linux; `None`
/// elsewhere), in clock ticks of 10 ms.
pub fn cpu_time() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The fields after the command name (which may hold spaces), from the 3rd (state) on:
    // utime is the 14th field and stime the 15th.
    let rest = stat.get(stat.rfind(')')? + 1..)?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    Some(Duration::from_millis(ticks * 10))
}

/// A worker's node: the order workflow and its services, a pool each, on the store's queue.
async fn build_worker(
    options: &WorkerOptions,
    connect_timeout: Duration,
) -> Result<Node<PgStore<WorkflowRecord>, PgQueue>, ClusterError> {
    let store = Arc::new(
        open(
            &options.database_url,
            &options.schema,
            &options.name,
            options.connections,
            options.committers,
            connect_timeout,
        )
        .await?,
    );
    let queue = store.queue(queue_config(options.visibility));
    let pools = options.pools;
    let [inventory, payment, shipping] = <[String; 3]>::try_from(
        service_topics().map_err(|e| ClusterError::Usage(format!("the shop's services: {e}")))?,
    )
    .map_err(|_| ClusterError::Usage("the shop has three services".into()))?;
    Ok(Node::builder(Arc::clone(&store))
        .transport(queue)
        .durable()
        .heartbeat(Heartbeat::from_lease(options.visibility))
        .retry(retry_policy())
        .service(services::inventory()?)
        .service(ledgered_payment(&store, &options.database_url, &options.schema).await?)
        .service(services::shipping()?)
        .orchestrator(Orchestrator::builder(Arc::clone(&store)).machine::<OrderFlow>())
        .pool(order_topic(), pools.orders)
        .pool(inventory, pools.inventory)
        .pool(payment, pools.payment)
        .pool(shipping, pools.shipping)
        .build()
        .await?)
}

/// The table where the payment service writes each charge it makes, in the store's schema.
pub const CHARGES: &str = "charges";

/// The payment service with its effect: each charge is a row of the `charges` table (see
/// [`CHARGES`]), written in the transaction that records the service's answer and settles the
/// request's delivery ([`PgStore::transactional`]). So a charge is made once per request,
/// whatever crashes and redeliveries: the table has no unique key that would hide a second one.
async fn ledgered_payment(
    store: &PgStore<WorkflowRecord>,
    url: &str,
    schema: &str,
) -> Result<Transactional<ServiceHandler<Payment>>, ClusterError> {
    let table = format!("\"{}\".{CHARGES}", schema.replace('"', "\"\""));
    create_charges(url, &table).await?;
    let insert = Arc::new(format!(
        "INSERT INTO {table} (request_id, order_id, amount_cents, approved) VALUES ($1, $2, $3, $4)"
    ));
    let handler = ServiceHandler::<Payment>::builder()
        .version(move |input: ServiceInput<PaymentV1>| {
            let insert = Arc::clone(&insert);
            async move {
                let Some(charge) = services::charge(&input.payload) else { return Ok(Emissions::none()) };
                let written = async {
                    let amount = i64::try_from(input.payload.amount_cents).unwrap_or(i64::MAX);
                    EffectTx::current()?
                        .execute(
                            &insert,
                            &[&input.event.id(), &input.payload.order_id, &amount, &charge.approved],
                        )
                        .await
                };
                // A failed write is transient (the database restarting, a lost connection): the
                // request is tried again, and the transaction rolled back meanwhile.
                written
                    .await
                    .map_err(|e| Violation::transaction(TransactionCause::WriteFailure, e.to_string()))?;
                Ok(Emissions::from(Emit::new(charge)))
            }
        })
        .build()?;
    Ok(store.transactional(handler))
}

/// Creates the charges table `table` unless it exists (several workers may try at once).
async fn create_charges(url: &str, table: &str) -> Result<(), ClusterError> {
    let (client, connection) =
        tokio_postgres::connect(url, tokio_postgres::NoTls).await.map_err(ClusterError::Sql)?;
    let connection = tokio::spawn(connection);
    let create = format!(
        "CREATE TABLE IF NOT EXISTS {table} (request_id TEXT NOT NULL, order_id TEXT NOT NULL, \
         amount_cents BIGINT NOT NULL, approved BOOLEAN NOT NULL, charged_at TIMESTAMPTZ NOT NULL DEFAULT now())"
    );
    let mut result = client.batch_execute(&create).await;
    if result.is_err() {
        // Another worker created it at the same moment: the second try finds it.
        result = client.batch_execute(&create).await;
    }
    drop(client);
    let _ = connection.await;
    result.map_err(ClusterError::Sql)
}

/// Runs a worker (see the [module documentation](self)) until `stop` completes: then it stops
/// claiming, lets its running deliveries finish (30 s at most; the rest are handed back) and
/// returns its counters.
pub async fn worker(
    options: WorkerOptions,
    stop: impl Future<Output = &'static str>,
) -> Result<WorkerReport, ClusterError> {
    let name = options.name.clone();
    // The database may be restarting: the node is built again (its store opened again) while it
    // fails transiently, until the connect timeout.
    let deadline = Instant::now() + options.connect_timeout;
    let node = loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match build_worker(&options, left).await {
            Ok(node) => break node,
            Err(ClusterError::Node(NodeError::Store(e))) if e.is_transient() && !left.is_zero() => {
                eprintln!("[{name}] the database failed while the worker started ({e}); trying again");
            }
            Err(ClusterError::Node(NodeError::Transport(e))) if e.is_transient() && !left.is_zero() => {
                eprintln!("[{name}] the database failed while the worker started ({e}); trying again");
            }
            Err(e) => return Err(e),
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let pools = options.pools;
    println!(
        "[{name}] pid {}: schema {}, pools orders {} inventory {} payment {} shipping {}, {} connections",
        std::process::id(),
        options.schema,
        pools.orders,
        pools.inventory,
        pools.payment,
        pools.shipping,
        options.connections
    );
    let in_flight = Arc::new(AtomicI64::new(0));
    let lagged = Arc::new(AtomicBool::new(false));
    let counter = {
        let (in_flight, lagged) = (Arc::clone(&in_flight), Arc::clone(&lagged));
        let mut events = node.consumer().subscribe();
        tokio::spawn(async move {
            loop {
                match events.recv().await {
                    Ok(LifecycleEvent::TaskReceived { .. }) => {
                        in_flight.fetch_add(1, Ordering::Relaxed);
                    }
                    Ok(LifecycleEvent::TaskDone { .. }) => {
                        in_flight.fetch_sub(1, Ordering::Relaxed);
                    }
                    Ok(_) => {}
                    Err(RecvError::Lagged(_)) => lagged.store(true, Ordering::Relaxed),
                    Err(RecvError::Closed) => break,
                }
            }
        })
    };
    let started = Instant::now();
    let status = |tasks_per_second: f64| {
        let stats = node.dispatcher().stats();
        Status {
            tasks_per_second,
            in_flight: in_flight.load(Ordering::Relaxed).max(0),
            handled: stats.delivered,
            retries: stats.retried,
            dead_letters: stats.dead_lettered,
            cpu: cpu_time(),
        }
    };
    let terminal = std::io::stdout().is_terminal();
    let printer = async {
        let Some(every) = options.status_every else { return std::future::pending().await };
        let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
        let (mut last, mut at) = (0, Instant::now());
        loop {
            ticks.tick().await;
            let now = Instant::now();
            let handled = node.dispatcher().stats().delivered;
            let rate = (handled - last) as f64 / now.duration_since(at).as_secs_f64().max(1e-3);
            (last, at) = (handled, now);
            let line = format!(
                "[{name}] {}{}",
                status(rate),
                if lagged.load(Ordering::Relaxed) { " (in flight approximate)" } else { "" }
            );
            if terminal {
                print!("\r\x1b[2K{line}");
                let _ = std::io::stdout().flush();
            } else {
                println!("{line}");
            }
        }
    };
    let why = tokio::select! {
        why = stop => why,
        never = printer => never,
    };
    if terminal {
        println!();
    }
    println!("[{name}] {why}: stopping (running deliveries finish, the rest are handed back)");
    node.stop().await;
    counter.abort();
    let elapsed = started.elapsed();
    let mut end = status(0.0);
    end.tasks_per_second = end.handled as f64 / elapsed.as_secs_f64().max(1e-3);
    println!("[{name}] stopped after {:.1?}: {end}", elapsed);
    Ok(WorkerReport { name, status: end, elapsed })
}

/// How a [`start`] runs.
#[derive(Debug, Clone, PartialEq)]
pub struct StartOptions {
    /// The database (`postgres://user@host:port/database`).
    pub database_url: String,
    /// The schema shared by every process (default [`DEFAULT_SCHEMA`]).
    pub schema: String,
    /// How many workflows to start.
    pub workflows: usize,
    /// Names this run: its workflows' ids, its client topic (`com.example.cluster.c<tag>`) and
    /// its node id. Lower-case letters and digits; default: the time in hex.
    pub tag: String,
    /// How long to wait for the completions, from the first start (default 300 s).
    pub timeout: Duration,
    /// Start at most this many workflows per second (`None`, the default: as fast as possible).
    pub rate: Option<f64>,
    /// Keep at most this many workflows running at once: the next starts when one completes
    /// (`None`, the default: no limit; every workflow is queued at once).
    pub in_flight: Option<usize>,
    /// Show a progress bar on stderr (default true; hidden anyway when stderr is not a terminal).
    pub progress: bool,
    /// How long to keep trying to reach the database at start (default 30 s).
    pub connect_timeout: Duration,
}

impl StartOptions {
    /// The defaults: `workflows` workflows on `database_url`.
    pub fn new(database_url: impl Into<String>, workflows: usize) -> Self {
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        Self {
            database_url: database_url.into(),
            schema: DEFAULT_SCHEMA.to_owned(),
            workflows,
            tag: format!("{:x}", now.as_millis()),
            timeout: Duration::from_secs(300),
            rate: None,
            in_flight: None,
            progress: true,
            connect_timeout: Duration::from_secs(30),
        }
    }
}

/// How one workflow of a [`start`] ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Completed: its completion event's status (`shipped` or `rejected`).
    Completed(String),
    /// Failed: a service failed (status `failed`) or the workflow did (a `sys.…error` event),
    /// with why.
    Failed(String),
    /// No completion within the timeout.
    Missing,
}

/// What a [`start`] saw.
#[derive(Debug, Clone, PartialEq)]
pub struct StartReport {
    /// The run's tag.
    pub tag: String,
    /// Workflow `i`'s subject at index `i`.
    pub subjects: Vec<String>,
    /// Workflow `i`'s outcome at index `i`.
    pub outcomes: Vec<Outcome>,
    /// From the first start to the last completion (or the timeout).
    pub elapsed: Duration,
}

impl StartReport {
    /// How many completed (shipped or rejected).
    pub fn completed(&self) -> usize {
        self.outcomes.iter().filter(|o| matches!(o, Outcome::Completed(_))).count()
    }

    /// How many completed with `status`.
    pub fn with_status(&self, status: &str) -> usize {
        self.outcomes.iter().filter(|o| matches!(o, Outcome::Completed(s) if s == status)).count()
    }

    /// How many failed.
    pub fn failed(&self) -> usize {
        self.outcomes.iter().filter(|o| matches!(o, Outcome::Failed(_))).count()
    }

    /// How many did not complete in time.
    pub fn missing(&self) -> usize {
        self.outcomes.iter().filter(|o| matches!(o, Outcome::Missing)).count()
    }

    /// Workflows completed per second.
    pub fn throughput(&self) -> f64 {
        self.completed() as f64 / self.elapsed.as_secs_f64().max(1e-3)
    }
}

impl std::fmt::Display for StartReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} workflows in {:.2?}: {} completed ({} shipped, {} rejected), {} failed, {} missing ({:.1} workflows/s)",
            self.outcomes.len(),
            self.elapsed,
            self.completed(),
            self.with_status("shipped"),
            self.with_status("rejected"),
            self.failed(),
            self.missing(),
            self.throughput()
        )
    }
}

/// The client topic of the run tagged `tag`: where its workflows send their completions.
pub fn client_topic(tag: &str) -> String {
    format!("com.example.cluster.c{tag}")
}

/// Workflow `i` of the run tagged `tag`: its init event (a fixed id, `init-<tag>-<i>`, and a
/// fixed execution id, `<tag>-<i>`, so that any process recognises it) and the status it should
/// end with (a regular order, an article out of stock and a payment the provider declines, in
/// turn).
pub fn init_event(tag: &str, i: usize) -> Result<(Event, &'static str), ClusterError> {
    let (input, expected) = order(tag, i);
    let client = client_topic(tag);
    let versioned = OrderV1::versioned();
    let subject =
        Subject::builder(versioned.accepts().event_type(), versioned.version_str(), client.as_str())
            .execution_id(format!("{tag}-{i:06}"))
            .build()?;
    let init = EventFactory::<OrderV1>::new().init(
        input,
        Event::builder().source(client).id(format!("init-{tag}-{i:06}")).orchestration_subject(&subject),
    )?;
    Ok((init, expected))
}

/// How a completion event ends its workflow.
fn outcome(event: &Event) -> Outcome {
    if event.r#type().starts_with("sys.") {
        return Outcome::Failed(event.data_value().to_string());
    }
    match serde_json::from_value::<OrderOutcome>(event.data_value().clone()) {
        Ok(o) if o.status == "shipped" || o.status == "rejected" => Outcome::Completed(o.status),
        Ok(o) => Outcome::Failed(o.reason.unwrap_or(o.status)),
        Err(e) => Outcome::Failed(format!("an unreadable completion: {e}")),
    }
}

/// Starts `init` on `node`, trying again (every 100 ms, for up to `within`) while the database
/// fails transiently. An init already queued is not queued twice (its id is unique).
async fn start_one<M, T>(node: &Node<M, T>, init: &Event, within: Duration) -> Result<(), ClusterError>
where
    M: orchestrator::memory::Memory<WorkflowRecord> + 'static,
    T: orchestrator::transport::Transport,
{
    let deadline = Instant::now() + within;
    loop {
        match node.start(init.clone()).await {
            Ok(_) => return Ok(()),
            Err(NodeError::Store(e)) if e.is_transient() && Instant::now() < deadline => {}
            Err(NodeError::Transport(e)) if e.is_transient() && Instant::now() < deadline => {}
            Err(e) => return Err(e.into()),
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Starts `options.workflows` workflows (see [`init_event`]), waits for their completions (at
/// most `options.timeout`, or until `stop` completes) and reports how each ended.
pub async fn start(
    options: StartOptions,
    stop: impl Future<Output = &'static str>,
) -> Result<StartReport, ClusterError> {
    let tag = options.tag.clone();
    if tag.is_empty() || !tag.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit()) {
        return Err(ClusterError::Usage(format!("a tag is lower-case letters and digits, not {tag:?}")));
    }
    let name = format!("start-{tag}");
    let store =
        Arc::new(open(&options.database_url, &options.schema, &name, 4, 1, options.connect_timeout).await?);
    let queue: PgQueue = store.queue(queue_config(Duration::from_secs(30)));
    let node = Arc::new(
        Node::builder(Arc::clone(&store))
            .transport(queue)
            .durable()
            .client(client_topic(&tag))
            .retry(retry_policy())
            .without_timers()
            .build()
            .await?,
    );
    let n = options.workflows;
    let mut inits = Vec::with_capacity(n);
    for i in 0..n {
        inits.push(init_event(&tag, i)?.0);
    }
    let subjects: Vec<String> = inits.iter().map(|e| e.subject().to_owned()).collect();
    let bar = if options.progress {
        ProgressBar::with_draw_target(Some(n as u64), ProgressDrawTarget::stderr())
    } else {
        ProgressBar::hidden()
    };
    bar.set_style(
        ProgressStyle::with_template(
            "{elapsed_precise} [{bar:40.cyan/blue}] {pos}/{len} completed ({per_sec}) {msg}",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> "),
    );
    println!(
        "[start] run {tag}: {n} workflows on schema {}, completions on {}",
        options.schema,
        client_topic(&tag)
    );
    let started = Instant::now();
    let deadline = tokio::time::Instant::now() + options.timeout;
    // The waiters first, so that no completion arrives unawaited. Each writes its outcome.
    let outcomes = Arc::new(Mutex::new(vec![Outcome::Missing; n]));
    let room = Arc::new(Semaphore::new(options.in_flight.unwrap_or(Semaphore::MAX_PERMITS).max(1)));
    let waiters: Vec<_> = subjects
        .iter()
        .enumerate()
        .map(|(i, subject)| {
            let (node, subject, bar) = (Arc::clone(&node), subject.clone(), bar.clone());
            let (outcomes, room) = (Arc::clone(&outcomes), Arc::clone(&room));
            tokio::spawn(async move {
                if let Ok(event) = tokio::time::timeout_at(deadline, node.wait(&subject)).await {
                    outcomes.lock().unwrap_or_else(PoisonError::into_inner)[i] = outcome(&event);
                    bar.inc(1);
                    room.add_permits(1);
                }
            })
        })
        .collect();
    let aborts: Vec<_> = waiters.iter().map(tokio::task::JoinHandle::abort_handle).collect();
    // The starts, on 16 lanes, paced by the rate if any.
    const LANES: usize = 16;
    let inits = Arc::new(inits);
    let starts: Vec<_> = (0..LANES.min(n.max(1)))
        .map(|lane| {
            let (node, inits, rate) = (Arc::clone(&node), Arc::clone(&inits), options.rate);
            let room = Arc::clone(&room);
            let within = options.timeout;
            tokio::spawn(async move {
                for i in (lane..inits.len()).step_by(LANES) {
                    if let Some(rate) = rate.filter(|r| *r > 0.0) {
                        let due = Duration::from_secs_f64(i as f64 / rate);
                        tokio::time::sleep_until(tokio::time::Instant::from_std(started) + due).await;
                    }
                    // A place among the workflows in flight, given back by its completion.
                    if let Ok(permit) = room.acquire().await {
                        permit.forget();
                    }
                    start_one(&node, &inits[i], within).await?;
                }
                Ok::<(), ClusterError>(())
            })
        })
        .collect();
    let start_aborts: Vec<_> = starts.iter().map(tokio::task::JoinHandle::abort_handle).collect();
    let all_done = async {
        for lane in starts {
            match lane.await {
                Ok(result) => result?,
                Err(e) => return Err(ClusterError::Usage(format!("a start lane stopped: {e}"))),
            }
        }
        bar.set_message(format!("(all {n} started)"));
        for waiter in waiters {
            let _ = waiter.await;
        }
        Ok::<_, ClusterError>(())
    };
    let finished = tokio::select! {
        done = all_done => done,
        why = stop => {
            bar.abandon_with_message(format!("{why}: stopped waiting"));
            Ok(())
        }
    };
    for abort in aborts.iter().chain(&start_aborts) {
        abort.abort();
    }
    finished?;
    let outcomes = std::mem::take(&mut *outcomes.lock().unwrap_or_else(PoisonError::into_inner));
    let elapsed = started.elapsed();
    bar.finish();
    // Drain the run's client topic (a completion delivered twice, at least once, is acked
    // rather than left for a client that is gone), then stop.
    if tokio::time::timeout(Duration::from_secs(10), node.shutdown()).await.is_err() {
        let _ = tokio::time::timeout(Duration::from_secs(30), node.stop()).await;
    }
    let report = StartReport { tag, subjects, outcomes, elapsed };
    println!("[start] {report}");
    Ok(report)
}
