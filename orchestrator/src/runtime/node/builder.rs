//! [`NodeBuilder`]: what a [`Node`] runs, checked before it starts.

use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::clients::{ClientSink, Completions};
use super::{MissingService, Node, NodeError};
use crate::contract::VersionedContract;
use crate::event::{DEFAULT_MAX_EVENT_BYTES, Event};
use crate::handler::{Answered, DynEventHandler, EventHandler, MemoryAnswers};
use crate::memory::{Definition, Memory};
use crate::orchestration::timers::Timers;
use crate::orchestration::{Locking, OrchestratorBuilder, ResumableBuilder, WorkflowRecord};
use crate::outbox::{DynOutbox, Outbox, Outboxed};
use crate::runtime::pool::{ConsumerBuilder, PoolConfig};
use crate::runtime::{DeadLetter, DeadLetters, Dispatcher, DomainedEvent, Heartbeat, RetryPolicy};
use crate::transport::{InProcessConfig, InProcessTransport, Topics, Transport};

/// How many deliveries a node handles at once by default: 64. A delivery mostly waits on the
/// store (a durable store's group commit serves every delivery in flight with one sync), so
/// more workers than CPUs keep it busy: 2,000 averaging workflows at once on SQLite took 1.3 s
/// with 64 workers and 2.5 s with 8 (`orchestrator-sqlite/tests/node.rs`, release build). For
/// handlers that only compute, the CPU count is enough.
pub const DEFAULT_WORKERS: usize = 64;

/// The name of a node's default pool, which runs every handler without a pool of its own
/// ([`NodeBuilder::pool`]).
pub const NODE_POOL: &str = "node";

/// How long the tasks of a node's pools may run on after [`Node::stop`] before they are
/// cancelled and handed back.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(30);

/// How a node delivers durable timers (see [`crate::orchestration::timers`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimerSettings {
    /// How often the store is asked for due wake-ups (default 50 ms).
    pub tick: Duration,
    /// The most wake-ups claimed per pass (default 256).
    pub batch: usize,
    /// How long a wake-up stays claimed: it is published again if still due after that
    /// (default 5 s).
    pub resend_after: Duration,
}

impl Default for TimerSettings {
    fn default() -> Self {
        Self { tick: Duration::from_millis(50), batch: 256, resend_after: Duration::from_secs(5) }
    }
}

/// A workflow handler to build, and the services it calls.
/// Builds a registered workflow with the node's outbox, whether the transport's lanes are
/// exclusive (the steps then take no lease), and the node's event size limit.
type Workflow = Box<dyn FnOnce(Option<Arc<dyn DynOutbox>>, bool, usize) -> Result<Built, NodeError> + Send>;

/// A built workflow handler.
struct Built {
    handler: Arc<dyn DynEventHandler>,
    services: Vec<&'static VersionedContract>,
    /// What the store's catalog records of it.
    definitions: Vec<Definition>,
}

/// Declares a [`Node`]: its store, transport, handlers and settings. Nothing runs until
/// [`NodeBuilder::build`], which checks the declaration first.
#[must_use]
pub struct NodeBuilder<M, T> {
    store: Arc<M>,
    transport: T,
    subscribe_all: bool,
    outbox: Option<Arc<dyn DynOutbox>>,
    services: Vec<Arc<dyn DynEventHandler>>,
    /// The topics of the services whose answers are recorded.
    answered: Vec<String>,
    workflows: Vec<Workflow>,
    remote: Vec<String>,
    clients: Vec<String>,
    workers: usize,
    pools: Vec<(String, usize)>,
    retry: RetryPolicy,
    heartbeat: Option<Heartbeat>,
    dead_letters: Option<DeadLetters>,
    on_domained: Option<crate::runtime::DomainedFn<Arc<T>>>,
    timers: Option<TimerSettings>,
    max_event_bytes: usize,
}

impl<M, T> fmt::Debug for NodeBuilder<M, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NodeBuilder")
            .field("services", &self.services.iter().map(|h| h.source_dyn().to_owned()).collect::<Vec<_>>())
            .field("workflows", &self.workflows.len())
            .field("remote", &self.remote)
            .field("clients", &self.clients)
            .field("workers", &self.workers)
            .field("durable", &self.outbox.is_some())
            .finish_non_exhaustive()
    }
}

impl<M: Memory<WorkflowRecord> + 'static> NodeBuilder<M, InProcessTransport> {
    pub(super) fn new(store: Arc<M>) -> Self {
        Self {
            store,
            transport: InProcessTransport::new(InProcessConfig::default())
                .unwrap_or_else(|_| unreachable!("the default in-process settings are valid")),
            subscribe_all: true,
            outbox: None,
            services: Vec::new(),
            answered: Vec::new(),
            workflows: Vec::new(),
            remote: Vec::new(),
            clients: Vec::new(),
            workers: DEFAULT_WORKERS,
            pools: Vec::new(),
            retry: RetryPolicy::default(),
            heartbeat: Some(Heartbeat::default()),
            dead_letters: None,
            on_domained: None,
            timers: Some(TimerSettings::default()),
            max_event_bytes: DEFAULT_MAX_EVENT_BYTES,
        }
    }

    /// Runs on an in-process transport with these settings (capacity, publish timeout).
    pub fn in_process(mut self, config: InProcessConfig) -> Result<Self, NodeError> {
        self.transport = InProcessTransport::new(config)?;
        Ok(self)
    }
}

impl<M: Memory<WorkflowRecord> + 'static, T: Transport> NodeBuilder<M, T> {
    /// Runs on `transport` instead of the in-process one. The node then receives only the
    /// topics of its handlers: events for other topics are left to the processes that handle
    /// them.
    ///
    /// Call it before [`NodeBuilder::on_domained`]: the callback gets the transport, so one set
    /// earlier (for the in-process transport) is dropped.
    pub fn transport<T2: Transport>(self, transport: T2) -> NodeBuilder<M, T2> {
        NodeBuilder {
            store: self.store,
            transport,
            subscribe_all: false,
            outbox: self.outbox,
            services: self.services,
            answered: self.answered,
            workflows: self.workflows,
            remote: self.remote,
            clients: self.clients,
            workers: self.workers,
            pools: self.pools,
            retry: self.retry,
            heartbeat: self.heartbeat,
            dead_letters: self.dead_letters,
            on_domained: None,
            timers: self.timers,
            max_event_bytes: self.max_event_bytes,
        }
    }

    /// Moves every event through the store's outbox, so that a crash loses nothing: the init
    /// events [`Node::start`] publishes, what each handler produces (an orchestrator's step
    /// commits its outbox step with its state, in one transaction), and, when the node starts,
    /// what a previous run left in flight is published again.
    ///
    /// An event leaves the outbox once it is handled, or once it fails for good (a contract or
    /// configuration violation: it is dead-lettered once). An event whose transient failures
    /// outlasted the retries, or whose handler panicked, is dead-lettered too but stays in the
    /// outbox: the next start tries it again.
    ///
    /// When the transport's queue *is* the store's outbox (both report the same
    /// [`Transport::queue_id`], as a PostgreSQL store and its queue do), each step's commit
    /// settles its delivery and enqueues its products in one transaction, a service's ack does
    /// the same for its products (fenced by its claim on the event), [`Node::start`] enqueues
    /// once, and nothing is redelivered at start (the queue kept it); dead letters go to the
    /// transport's own dead letters.
    ///
    /// When the transport stores what it accepts ([`Transport::stores_published`], as NATS
    /// JetStream does), an event leaves the outbox as soon as the transport has it: the outbox
    /// then holds only what was committed and not yet handed to the broker, and the events this
    /// node produces may be consumed by processes over other stores.
    pub fn durable(mut self) -> Self
    where
        M: Outbox,
    {
        self.outbox = Some(Arc::clone(&self.store) as Arc<dyn DynOutbox>);
        self
    }

    /// Registers a service handler on its topic ([`EventHandler::source`]).
    pub fn service(mut self, handler: impl EventHandler) -> Self {
        self.services.push(Arc::new(handler));
        self
    }

    /// Registers a service handler on its topic, like [`NodeBuilder::service`], whose answer to
    /// each request is recorded in the store ([`Memory::answers`]) under the handler's topic and
    /// the request's `(source, id)`: a request delivered again (after a crash, a lapsed claim, a
    /// lost ack, or published twice) gets the recorded answer, the same events with the same
    /// ids, without the handler running again ([`Answered`] says how, and what is guaranteed).
    ///
    /// The answer is recorded once the handler returned, with or before the settlement of its
    /// delivery, so a process that dies between the handler's effect and the record runs the
    /// handler again on the redelivery: an effect outside the store needs its own idempotency
    /// key to be applied once. Where the record goes:
    ///
    /// * on a durable node whose store is the transport's queue (PostgreSQL's store and queue),
    ///   the record settles the delivery with the answer's events in the same statement (the
    ///   ack then has nothing left to do);
    /// * on a durable node over a store that is its own outbox but not the transport's queue
    ///   (SQLite), the record and the outbox step are two transactions, record first: a crash
    ///   between them redelivers the request, which gets the recorded answer;
    /// * elsewhere, the record comes before the transport's ack: a crash between them, the same.
    ///
    /// On PostgreSQL, a handler whose effects are database writes can make them in the
    /// transaction that records its answer and settles its delivery: register
    /// `orchestrator_postgres::PgStore::transactional(handler)` with [`NodeBuilder::service`]
    /// instead. Those writes are then applied exactly once.
    ///
    /// [`NodeBuilder::build`] fails with [`NodeError::NoAnswers`] when the store keeps no
    /// answers.
    ///
    /// ```
    /// # tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap().block_on(async {
    /// use std::sync::Arc;
    /// use std::sync::atomic::{AtomicUsize, Ordering};
    /// use orchestrator::handler::service::{Emit, ServiceHandler, ServiceInput};
    /// use orchestrator::transport::Transport;
    /// use orchestrator::memory::{AnswerKey, Answers, InMemory};
    /// use orchestrator::orchestration::WorkflowRecord;
    /// use orchestrator::prelude::*;
    /// use orchestrator::runtime::Node;
    /// # #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
    /// # pub struct Charge { pub cents: u64 }
    /// # #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
    /// # pub struct Receipt { pub charged: u64 }
    /// # orchestrator::simple_contract! {
    /// #     pub contract Pay { uri: "#/shop/pay", type: "shop.pay",
    /// #         versions: { PayV1 = "1.0.0" { accepts: Charge, emits: Receipt } } }
    /// # }
    /// let charges = Arc::new(AtomicUsize::new(0));
    /// let counted = Arc::clone(&charges);
    /// let pay = ServiceHandler::<Pay>::builder()
    ///     .version(move |input: ServiceInput<PayV1>| {
    ///         let charges = Arc::clone(&counted);
    ///         async move {
    ///             charges.fetch_add(1, Ordering::Relaxed); // the card is charged here
    ///             Ok(Emit::new(Receipt { charged: input.payload.cents }))
    ///         }
    ///     })
    ///     .build()?;
    /// let store = Arc::new(InMemory::<WorkflowRecord>::default());
    /// let node = Node::builder(Arc::clone(&store))
    ///     .idempotent_service(pay)
    ///     .client("com.shop.client")
    ///     .build()
    ///     .await?;
    /// let request = EventFactory::<PayV1>::new()
    ///     .accepts(Charge { cents: 500 }, Event::builder().source("com.shop.client"))?;
    /// // Delivered twice (a publisher's retry, a redelivery): charged once, answered twice alike.
    /// node.transport().publish(vec![request.clone(), request.clone()]).await?;
    /// # tokio::time::timeout(std::time::Duration::from_secs(10), node.transport().wait_idle()).await?;
    /// node.shutdown().await;
    /// assert_eq!(charges.load(Ordering::Relaxed), 1);
    /// let answer = store.answer(AnswerKey::of("com.shop.pay", &request)).await?.expect("recorded");
    /// assert_eq!(answer[0].data()["charged"], 500);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    pub fn idempotent_service(mut self, handler: impl EventHandler) -> Self {
        self.answered.push(handler.source().to_owned());
        let answers = MemoryAnswers::<M, WorkflowRecord>::new(Arc::clone(&self.store));
        self.services.push(Arc::new(Answered::new(handler, answers)));
        self
    }

    /// Registers a statechart orchestrator (its machines; the node adds the outbox when it is
    /// durable). Build it over the node's store. On a transport whose lanes are exclusive
    /// ([`Transport::exclusive_lanes`]: the in-process transport, PostgreSQL's queue) its steps
    /// take no lease: the transport serializes a workflow's events, and the compare-and-swap
    /// write refuses a lost update. On the others (NATS, Redis) each step takes the store's
    /// lease.
    pub fn orchestrator(mut self, orchestrator: OrchestratorBuilder<Arc<M>>) -> Self {
        self.workflows.push(Box::new(move |outbox, exclusive_lanes, max_event_bytes| {
            let orchestrator = orchestrator.max_event_bytes(max_event_bytes);
            let orchestrator = match outbox {
                Some(outbox) => orchestrator.outbox(outbox),
                None => orchestrator,
            };
            let orchestrator =
                if exclusive_lanes { orchestrator.locking(Locking::Never) } else { orchestrator };
            let orchestrator = orchestrator.build()?;
            let services = orchestrator.services();
            let definitions = orchestrator.definitions();
            Ok(Built { handler: Arc::new(orchestrator), services, definitions })
        }));
        self
    }

    /// Registers a resumable (the node adds the outbox when it is durable). Build it over the
    /// node's store. Like an orchestrator, it takes no lease per step on a transport whose lanes
    /// are exclusive ([`Transport::exclusive_lanes`]).
    pub fn resumable(mut self, resumable: ResumableBuilder<Arc<M>>) -> Self {
        self.workflows.push(Box::new(move |outbox, exclusive_lanes, max_event_bytes| {
            let resumable = resumable.max_event_bytes(max_event_bytes);
            let resumable = match outbox {
                Some(outbox) => resumable.outbox(outbox),
                None => resumable,
            };
            let resumable = if exclusive_lanes { resumable.locking(Locking::Never) } else { resumable };
            let resumable = resumable.build()?;
            let services = resumable.services();
            let definitions = resumable.definitions();
            Ok(Built { handler: Arc::new(resumable), services, definitions })
        }));
        self
    }

    /// Sets the largest event the node lets in, once serialized (its compact JSON,
    /// [`Event::encoded_len`]); default [`DEFAULT_MAX_EVENT_BYTES`] (1 MiB), the limit the
    /// parsers apply to bytes. It applies wherever an event enters:
    ///
    /// * [`Node::start`] and [`Node::run`] refuse a larger init with
    ///   [`NodeError::EventTooLarge`]: nothing is stored, published or delivered;
    /// * an orchestrator or resumable step that emits a larger event fails (its state unchanged,
    ///   the failure latch written, a `sys.<orchestrator>.error` event named `EventTooLarge` to
    ///   the workflow's initiator): the node sets this limit on every workflow it registers;
    /// * a [`ServiceHandler`](crate::handler::service::ServiceHandler) answering with a larger
    ///   event answers with a `sys.<type>.error` event instead (its own limit,
    ///   [`ServiceHandlerBuilder::max_event_bytes`](crate::handler::service::ServiceHandlerBuilder::max_event_bytes));
    /// * any other handler's larger product is refused by the dispatcher before the transport
    ///   sees it: the delivery that produced it is a dead letter
    ///   ([`DeadLetterReason::EventTooLarge`](crate::runtime::DeadLetterReason::EventTooLarge))
    ///   and none of its products are published.
    pub fn max_event_bytes(mut self, max: usize) -> Self {
        self.max_event_bytes = max;
        self
    }

    /// Declares that another process handles `topic` (a service or orchestrator this node's
    /// workflows call), so [`NodeBuilder::build`] does not ask for a handler here.
    pub fn remote(mut self, topic: impl Into<String>) -> Self {
        self.remote.push(topic.into());
        self
    }

    /// Declares a client topic: workflows started from it (their init's `source`) send their
    /// completion there, and this node keeps it for [`Node::wait`].
    pub fn client(mut self, topic: impl Into<String>) -> Self {
        self.clients.push(topic.into());
        self
    }

    /// How many deliveries are handled at once (default [`DEFAULT_WORKERS`]). At least 1.
    ///
    /// On a durable store with group commit (SQLite), more workers make larger write groups
    /// when many workflows are in flight: with 1,000 chain workflows in flight, 256 workers
    /// instead of 64 cut the SQLite writer's CPU per event by about 10 % and raised throughput
    /// by 2–10 % (`arvo-bench`'s `node_sqlite_chain_1000`, BENCHMARKS.md, session 17). Each worker
    /// runs one handler at a time, so this is also how many handlers may call out at once.
    pub fn workers(mut self, workers: usize) -> Self {
        self.workers = workers.max(1);
        self
    }

    /// Runs the handler of `topic` in a pool of its own, of `workers` workers (at least 1),
    /// named after the topic, instead of in the node's default pool ([`NODE_POOL`], of
    /// [`NodeBuilder::workers`] workers). Resize it while the node runs with
    /// [`Node::consumer`]. On a transport the node consumes every topic of (the in-process one,
    /// by default), the default pool still takes this topic's events too: the dedicated pool
    /// adds workers to it rather than isolating it.
    pub fn pool(mut self, topic: impl Into<String>, workers: usize) -> Self {
        self.pools.push((topic.into(), workers.max(1)));
        self
    }

    /// How transient failures are retried (default [`RetryPolicy::default`]).
    pub fn retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }

    /// How deliveries are kept claimed while their handlers run (default
    /// [`Heartbeat::default`]: extended by 30 s every 10 s). Set it from the transport's
    /// visibility deadline (the PostgreSQL queue's `QueueConfig::visibility`).
    pub fn heartbeat(mut self, heartbeat: Heartbeat) -> Self {
        self.heartbeat = Some(heartbeat);
        self
    }

    /// Never extends deliveries while their handlers run: a handler that outlasts the transport's
    /// visibility deadline sees its event delivered again elsewhere.
    pub fn without_heartbeat(mut self) -> Self {
        self.heartbeat = None;
        self
    }

    /// Sends dead letters to `f` (after logging them) instead of keeping the last 10,000.
    pub fn on_dead_letter(mut self, f: impl Fn(DeadLetter) + Send + Sync + 'static) -> Self {
        self.dead_letters = Some(DeadLetters::callback(Arc::new(f)));
        self
    }

    /// Sends produced events that carry a domain to `f`, with the transport to reply through,
    /// instead of keeping them.
    pub fn on_domained<F, Fut>(mut self, f: F) -> Self
    where
        F: Fn(DomainedEvent, Arc<T>) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = ()> + Send + 'static,
    {
        self.on_domained = Some(Arc::new(move |domained, transport| Box::pin(f(domained, transport))));
        self
    }

    /// Sets how durable timers are delivered (on by default).
    pub fn timers(mut self, settings: TimerSettings) -> Self {
        self.timers = Some(settings);
        self
    }

    /// Delivers no durable timers from this node (another node over the same store does).
    pub fn without_timers(mut self) -> Self {
        self.timers = None;
        self
    }

    /// Checks the declaration and starts the node: every service a registered orchestrator or
    /// resumable calls must have a handler here or be declared remote
    /// ([`NodeError::MissingServices`] lists all that do not), no two handlers share a topic.
    /// Then the workers start and, on a durable node, what a previous run left in the outbox is
    /// published again (`build` returns once it is queued: with a backlog larger than the
    /// transport holds, once the workers have made room for it), and the timers start.
    pub async fn build(self) -> Result<Node<M, T>, NodeError> {
        tokio::runtime::Handle::try_current().map_err(|_| NodeError::NoRuntime)?;
        if let Some(topic) = self.answered.first()
            && self.store.answers().is_none()
        {
            return Err(NodeError::NoAnswers { topic: topic.clone() });
        }
        let outbox = self.outbox.clone();
        // The outbox is the transport's queue: what is in it is queued already, and a service's
        // ack settles its event and enqueues its products in one step, fenced by its claim.
        let queued_outbox = outbox
            .as_ref()
            .and_then(|outbox| outbox.queue_id_dyn())
            .is_some_and(|id| self.transport.queue_id() == Some(id));
        let exclusive_lanes = self.transport.exclusive_lanes();
        let mut handlers: Vec<Arc<dyn DynEventHandler>> = Vec::new();
        let mut workflows = Vec::new();
        let mut definitions: Vec<Definition> = Vec::new();
        for workflow in self.workflows {
            let built = workflow(outbox.clone(), exclusive_lanes, self.max_event_bytes)?;
            workflows.push((built.handler.source_dyn().to_owned(), built.services));
            handlers.push(built.handler);
            for definition in built.definitions {
                let same = |d: &Definition| {
                    (d.kind, &d.name, &d.version) == (definition.kind, &definition.name, &definition.version)
                };
                if !definitions.iter().any(same) {
                    definitions.push(definition);
                }
            }
        }
        let completions = Arc::new(Completions::default());
        let sinks = self.clients.iter().map(|topic| {
            Arc::new(ClientSink { topic: topic.clone(), completions: Arc::clone(&completions) })
                as Arc<dyn DynEventHandler>
        });
        for handler in self.services.into_iter().chain(sinks) {
            handlers.push(match &outbox {
                // Each event the handler consumes leaves the outbox with what it produced.
                Some(outbox) if !queued_outbox => Arc::new(Outboxed::new(handler, Arc::clone(outbox))),
                Some(_) | None => handler,
            });
        }
        check_services(&handlers, &workflows, &self.remote)?;
        for (topic, _) in &self.pools {
            if !handlers.iter().any(|h| h.source_dyn() == topic) {
                return Err(NodeError::NoHandlerForPool { topic: topic.clone() });
            }
        }
        // What tools need to show these workflows without the user's code.
        if let Some(catalog) = self.store.catalog()
            && !definitions.is_empty()
        {
            catalog.record_dyn(&definitions).await?;
        }

        let mut dispatcher = Dispatcher::new(handlers)?
            .with_retry(self.retry)
            .with_heartbeat(self.heartbeat)
            .with_max_event_bytes(self.max_event_bytes);
        if let Some(dead_letters) = self.dead_letters {
            dispatcher = dispatcher.with_dead_letters(dead_letters);
        }
        if let Some(on_domained) = self.on_domained {
            dispatcher = dispatcher.with_on_domained(on_domained);
        }
        // The transport stores what it accepts: an event leaves the outbox once it has it.
        let released_on_publish = match &outbox {
            Some(outbox) if !queued_outbox && self.transport.stores_published() => Some(Arc::clone(outbox)),
            Some(_) | None => None,
        };
        if let Some(outbox) = &released_on_publish {
            dispatcher = dispatcher.with_release_on_ack(Arc::clone(outbox));
        }
        // The transport forgets what it terminates: dead letters are buried in the store.
        if !self.transport.keeps_dead_letters() && self.store.dead_letter_store().is_some() {
            let graveyard = crate::memory::GraveyardOf::<M, WorkflowRecord>::new(Arc::clone(&self.store));
            dispatcher = dispatcher.with_graveyard(Arc::new(graveyard));
        }
        let dispatcher = Arc::new(dispatcher);
        let transport = Arc::new(self.transport);
        // Read what a previous run left in flight before any worker produces more.
        let left = match &outbox {
            Some(outbox) if !queued_outbox => crate::outbox::in_flight(outbox, 1_024).await?,
            Some(_) | None => Vec::new(),
        };
        let dedicated = |topic: &str| self.pools.iter().any(|(t, _)| t == topic);
        let topics = if self.subscribe_all {
            Topics::All
        } else {
            Topics::Only(dispatcher.topics().filter(|t| !dedicated(t)).map(str::to_owned).collect())
        };
        let pool = |config: PoolConfig| config.heartbeat(self.heartbeat).grace(SHUTDOWN_GRACE);
        let mut consumer =
            ConsumerBuilder::new(Arc::clone(&transport), Arc::clone(&dispatcher), Arc::clone(&transport));
        if !matches!(&topics, Topics::Only(t) if t.is_empty()) {
            consumer =
                consumer.routed_pool(pool(PoolConfig::with_topics(NODE_POOL, topics).workers(self.workers)));
        }
        for (topic, workers) in &self.pools {
            consumer = consumer.routed_pool(pool(PoolConfig::new(topic.as_str()).workers(*workers)));
        }
        let consumer = consumer.start().await?;
        let recovered = left.len();
        for batch in left.chunks(256) {
            transport.publish(batch.to_vec()).await?;
            if let Some(outbox) = &released_on_publish {
                let ids: Vec<&str> = batch.iter().map(Event::id).collect();
                outbox.release_dyn(&ids).await?;
            }
        }
        let timers = self.timers.map(|settings| {
            Timers::new(Arc::clone(&self.store))
                .with_tick(settings.tick)
                .with_batch(settings.batch)
                .with_resend_after(settings.resend_after)
                .spawn(Arc::clone(&transport), |e| tracing::warn!(error = %e, "a timer pass failed"))
        });
        Ok(Node {
            store: self.store,
            transport,
            outbox: if queued_outbox { None } else { outbox },
            released_on_publish: released_on_publish.is_some(),
            dispatcher,
            completions,
            clients: self.clients,
            consumer,
            timers: Mutex::new(timers),
            recovered,
            max_event_bytes: self.max_event_bytes,
        })
    }
}

/// Every service a workflow calls that no handler takes and is not remote.
fn check_services(
    handlers: &[Arc<dyn DynEventHandler>],
    workflows: &[(String, Vec<&'static VersionedContract>)],
    remote: &[String],
) -> Result<(), NodeError> {
    let handled =
        |topic: &str| handlers.iter().any(|h| h.source_dyn() == topic) || remote.iter().any(|r| r == topic);
    let mut missing = Vec::new();
    for (orchestrator, services) in workflows {
        for service in services {
            let topic = service.accepts().event_type();
            if !handled(topic) && !missing.iter().any(|m: &MissingService| m.service == topic) {
                missing
                    .push(MissingService { orchestrator: orchestrator.clone(), service: topic.to_owned() });
            }
        }
    }
    if missing.is_empty() { Ok(()) } else { Err(NodeError::MissingServices(missing)) }
}
