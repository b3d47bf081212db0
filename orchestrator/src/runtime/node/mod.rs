//! [`Node`]: one call wires a store, a transport, service handlers, orchestrators, resumables,
//! durable timers and recovery, and returns a handle to start workflows, await them, read their
//! status and shut down.
//!
//! ```
//! # tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap().block_on(async {
//! use std::sync::Arc;
//! use orchestrator::memory::InMemory;
//! use orchestrator::orchestration::{Orchestrator, WorkflowRecord};
//! use orchestrator::prelude::*;
//! use orchestrator::runtime::{Node, WorkflowStatus};
//! use orchestrator::handler::service::{Emit, ServiceHandler, ServiceInput};
//! # #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
//! # pub struct Operands { pub a: f64, pub b: f64 }
//! # #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
//! # pub struct Sum { pub sum: f64 }
//! # #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
//! # pub struct Pair { pub values: [f64; 2] }
//! # #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
//! # pub struct Total { pub total: f64 }
//! # orchestrator::simple_contract! {
//! #     pub contract Add { uri: "#/calc/add", type: "calc.add",
//! #         versions: { AddV1 = "1.0.0" { accepts: Operands, emits: Sum } } }
//! # }
//! # orchestrator::orchestrator_contract! {
//! #     pub contract Adder { uri: "#/orc/adder", name: "adder",
//! #         versions: { AdderV1 = "1.0.0" { init: Pair, complete: Total } } }
//! # }
//! # #[derive(Debug, Clone, Default, Serialize, Deserialize)]
//! # pub struct Ctx { pub values: [f64; 2], pub total: f64 }
//! # orchestrator::machine! {
//! #     pub machine AdderFlow {
//! #         contract: AdderV1,
//! #         services: { add: AddV1 },
//! #         context: Ctx,
//! #         init: |input: &Pair| Ctx { values: input.values, total: 0.0 },
//! #         output: |ctx: &Ctx| Total { total: ctx.total },
//! #         states: {
//! #             adding: {
//! #                 entry: [|ctx, _, out| out.add(Operands { a: ctx.values[0], b: ctx.values[1] })],
//! #                 on: { add::Sum => { target: done, actions: [|ctx, event, _| {
//! #                     if let AdderFlowEvent::AddSum(s) = event { ctx.total = s.sum }
//! #                 }] } },
//! #             },
//! #             done: { type: final },
//! #         },
//! #     }
//! # }
//! let add = ServiceHandler::<Add>::builder()
//!     .version(|input: ServiceInput<AddV1>| async move {
//!         let Operands { a, b } = input.payload;
//!         Ok(Emit::new(Sum { sum: a + b }))
//!     })
//!     .build()?;
//! let store = Arc::new(InMemory::<WorkflowRecord>::default());
//! let node = Node::builder(Arc::clone(&store))
//!     .service(add)
//!     .orchestrator(Orchestrator::builder(Arc::clone(&store)).machine::<AdderFlow>())
//!     .client("com.example.client")
//!     .build()
//!     .await?;
//! let init = EventFactory::<AdderV1>::new()
//!     .init(Pair { values: [2.0, 3.0] }, Event::builder().source("com.example.client"))?;
//! let done = node.run(init.clone()).await?;
//! assert_eq!(done.data()["total"], 5.0);
//! assert_eq!(node.status(init.subject()).await?, Some(WorkflowStatus::Done));
//! node.shutdown().await;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # }).unwrap();
//! ```

mod builder;
mod clients;
mod error;
mod signal;
mod status;
mod view;

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

pub use builder::{DEFAULT_WORKERS, NODE_POOL, NodeBuilder, TimerSettings};
pub use error::{MissingService, NodeError};
pub use signal::SIGNAL_SOURCE;
pub use status::WorkflowStatus;
pub use view::{ViewError, WorkflowView};

use super::pool::Consumer;
use super::{DeadLetter, Dispatcher};
use crate::event::Event;
use crate::memory::Memory;
use crate::orchestration::WorkflowRecord;
use crate::orchestration::cancel::CancelRequest;
use crate::orchestration::timers::TimerTask;
use crate::outbox::DynOutbox;
use crate::transport::Transport;
use clients::Completions;

/// A running node (see the [module documentation](self)). Shut it down with
/// [`Node::shutdown`]; dropping it closes the transport without waiting.
pub struct Node<M, T: Transport> {
    store: Arc<M>,
    transport: Arc<T>,
    outbox: Option<Arc<dyn DynOutbox>>,
    /// The transport stores what it accepts: an init leaves the outbox once published.
    released_on_publish: bool,
    dispatcher: Arc<Dispatcher<Arc<T>>>,
    completions: Arc<Completions>,
    clients: Vec<String>,
    consumer: Consumer,
    timers: Mutex<Option<TimerTask>>,
    recovered: usize,
    /// The largest event let in ([`NodeBuilder::max_event_bytes`]).
    max_event_bytes: usize,
}

impl<M, T: Transport> fmt::Debug for Node<M, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Node")
            .field("dispatcher", &self.dispatcher)
            .field("clients", &self.clients)
            .field("durable", &self.outbox.is_some())
            .finish_non_exhaustive()
    }
}

impl<M: Memory<WorkflowRecord> + 'static> Node<M, crate::transport::InProcessTransport> {
    /// Starts declaring a node over `store`, on the in-process transport by default.
    pub fn builder(store: Arc<M>) -> NodeBuilder<M, crate::transport::InProcessTransport> {
        NodeBuilder::new(store)
    }
}

impl<M: Memory<WorkflowRecord> + 'static, T: Transport> Node<M, T> {
    /// Starts a workflow: publishes its init event (through the store's outbox on a durable
    /// node, so a crash right after loses nothing) and returns its subject. The init's source
    /// must be a client topic of the node ([`NodeBuilder::client`]) for [`Node::wait`] to get
    /// its completion. An init larger than the node's limit ([`NodeBuilder::max_event_bytes`])
    /// is refused with [`NodeError::EventTooLarge`], before anything is stored or published.
    pub async fn start(&self, init: Event) -> Result<String, NodeError> {
        init.check_size(self.max_event_bytes)?;
        let subject = match init.orchestration_subject() {
            Ok(subject) => subject.as_str().to_owned(),
            Err(e) => return Err(NodeError::NotAnInit { id: init.id().to_owned(), reason: e.to_string() }),
        };
        self.send(init).await?;
        Ok(subject)
    }

    /// Publishes an event from outside the workflows (an init, a signal, a cancel request):
    /// first into the store's outbox on a durable node, so that a crash right after loses
    /// nothing, then on the transport; it leaves the outbox once the transport stores it, where
    /// the transport does.
    pub(crate) async fn send(&self, event: Event) -> Result<(), NodeError> {
        let id = event.id().to_owned();
        if let Some(outbox) = &self.outbox {
            outbox.advance_dyn(None, std::slice::from_ref(&event)).await?;
        }
        self.transport.publish(vec![event]).await?;
        if let Some(outbox) = self.outbox.as_ref().filter(|_| self.released_on_publish) {
            outbox.release_dyn(&[id.as_str()]).await?;
        }
        Ok(())
    }

    /// Cancels workflow `subject` (and, with [`CancelRequest::with_children`], its running
    /// child workflows): publishes its cancel request
    /// ([`cancel_event`](crate::orchestration::cancel::cancel_event)), through the store's
    /// outbox on a durable node, like [`Node::start`]. It returns once the request is published;
    /// the workflow's initiator then gets its cancellation event ([`Node::wait`] returns it for
    /// a client of this node) and its status becomes [`WorkflowStatus::Cancelled`]. A workflow
    /// that already ended, or that the store does not know, is left as it is. See
    /// [`crate::orchestration::cancel`].
    pub async fn cancel(&self, subject: &str, request: CancelRequest) -> Result<(), NodeError> {
        let event = crate::orchestration::cancel::cancel_event(subject, &request)?;
        event.check_size(self.max_event_bytes)?;
        self.send(event).await
    }

    /// Waits for the completion of workflow `subject` (its `arvo.orc.<name>.done` event, or the
    /// `sys.arvo.orc.<name>.error` event of a failure) and returns it. Completions that nobody
    /// awaits are kept, up to 10,000 (the oldest are dropped first).
    pub async fn wait(&self, subject: &str) -> Event {
        self.completions.wait(subject).await
    }

    /// [`Node::start`], then [`Node::wait`]. The init's source must be a client topic of the
    /// node ([`NodeError::NotAClient`] otherwise: its completion would never reach this node).
    pub async fn run(&self, init: Event) -> Result<Event, NodeError> {
        if !self.clients.iter().any(|c| c == init.source()) {
            return Err(NodeError::NotAClient {
                id: init.id().to_owned(),
                source_topic: init.source().to_owned(),
            });
        }
        let subject = self.start(init).await?;
        Ok(self.wait(&subject).await)
    }

    /// Where workflow `subject` stands, from the store; `None` for a workflow the store does not
    /// know (never started, or removed by its retention).
    pub async fn status(&self, subject: &str) -> Result<Option<WorkflowStatus>, NodeError> {
        let stored = self.store.read(subject).await?;
        Ok(stored.map(|s| WorkflowStatus::of(&s.record)))
    }

    /// The dead letters kept so far (none when an `on_dead_letter` callback takes them).
    pub fn take_dead_letters(&self) -> Vec<DeadLetter> {
        self.dispatcher.dead_letters().take()
    }

    /// How many events a previous run left in the outbox and this node published again when it
    /// started.
    pub fn recovered(&self) -> usize {
        self.recovered
    }

    /// The store.
    pub fn store(&self) -> &Arc<M> {
        &self.store
    }

    /// The transport.
    pub fn transport(&self) -> &Arc<T> {
        &self.transport
    }

    /// The dispatcher (routes, retry policy, dead letters, counters).
    pub fn dispatcher(&self) -> &Dispatcher<Arc<T>> {
        &self.dispatcher
    }

    /// The worker pools that run the handlers: the default one ([`NODE_POOL`]) and those of
    /// [`NodeBuilder::pool`]. Subscribe to their lifecycle events, or resize them.
    pub fn consumer(&self) -> &Consumer {
        &self.consumer
    }

    /// Stops the timers, closes the transport to new events from outside, lets the workers
    /// finish what is queued (and what it produces), and waits for them. Idempotent.
    pub async fn shutdown(&self) {
        self.stop_timers().await;
        self.transport.close();
        self.consumer.join().await;
    }

    /// Stops now rather than draining the queue: the timers stop, the workers stop claiming,
    /// their running tasks have 30 s to finish, the rest are cancelled and handed back to the
    /// transport (a networked transport delivers them again, to this node's next run or to
    /// another node); then the transport is closed. Idempotent.
    pub async fn stop(&self) {
        self.stop_timers().await;
        self.consumer.stop().await;
        self.transport.close();
    }

    async fn stop_timers(&self) {
        let timers = self.timers.lock().unwrap_or_else(PoisonError::into_inner).take();
        if let Some(timers) = timers {
            timers.stop().await;
        }
    }
}

impl<M, T: Transport> Drop for Node<M, T> {
    fn drop(&mut self) {
        if let Some(timers) = self.timers.lock().unwrap_or_else(PoisonError::into_inner).as_ref() {
            timers.signal_stop();
        }
        self.transport.close();
    }
}
