//! [`NodeError`]: why a node could not be built or could not do what was asked.

use crate::memory::MemoryError;
use crate::runtime::DispatcherError;
use crate::transport::TransportError;
use crate::violation::Violation;

/// A service a registered orchestrator calls, with no handler on the node and not declared
/// remote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MissingService {
    /// The orchestrator that calls it (its topic).
    pub orchestrator: String,
    /// The service's topic (the event type it accepts).
    pub service: String,
}

/// Why a [`Node`](super::Node) could not be built, or could not do what was asked. Every message
/// names what was wrong.
#[derive(Debug, thiserror::Error)]
pub enum NodeError {
    /// Services that registered orchestrators call have no handler on this node and are not
    /// declared remote ([`NodeBuilder::remote`](super::NodeBuilder::remote)): their workflows
    /// would stall. All of them are listed.
    #[error("{}", missing_message(.0))]
    MissingServices(Vec<MissingService>),
    /// An orchestrator or resumable declaration is invalid.
    #[error("invalid workflow declaration: {0}")]
    Declaration(#[from] Violation),
    /// Two handlers listen on one topic, or another routing problem.
    #[error(transparent)]
    Dispatcher(#[from] DispatcherError),
    /// The transport refused or failed.
    #[error("transport: {0}")]
    Transport(#[from] TransportError),
    /// The store failed (the outbox, a status read).
    #[error("store: {0}")]
    Store(#[from] MemoryError),
    /// The event started is no init of a workflow this node can await: its source is not a
    /// client topic of the node ([`NodeBuilder::client`](super::NodeBuilder::client)).
    #[error(
        "event `{id}` comes from `{source_topic}`, which is not a client topic of this node: declare it with NodeBuilder::client(\"{source_topic}\") to await its workflows"
    )]
    NotAClient {
        /// The event's id.
        id: String,
        /// The event's source.
        source_topic: String,
    },
    /// The event started is no orchestration init (its subject is not an orchestration subject).
    #[error("event `{id}` cannot start a workflow: {reason}")]
    NotAnInit {
        /// The event's id.
        id: String,
        /// Why.
        reason: String,
    },
    /// [`NodeBuilder::pool`](super::NodeBuilder::pool) names a topic no handler of the node
    /// listens on.
    #[error("a pool is declared for `{topic}`, but no handler of this node listens on it")]
    NoHandlerForPool {
        /// The topic.
        topic: String,
    },
    /// A service is registered with
    /// [`NodeBuilder::idempotent_service`](super::NodeBuilder::idempotent_service), but the
    /// store keeps no answers ([`Memory::answers`](crate::memory::Memory::answers) is `None`).
    #[error(
        "service `{topic}` records its answers, but the store keeps none: use a store with answers (InMemory, SQLite, PostgreSQL) or register it with NodeBuilder::service"
    )]
    NoAnswers {
        /// The service's topic.
        topic: String,
    },
    /// The event is larger than the node's limit
    /// ([`NodeBuilder::max_event_bytes`](super::NodeBuilder::max_event_bytes)): nothing of it
    /// was stored or published.
    #[error(transparent)]
    EventTooLarge(#[from] crate::event::EventTooLarge),
    /// A signal could not be built: its payload breaks the contract's schema, or the subject is
    /// no orchestration subject ([`Node::signal`](super::Node::signal)). Nothing was published.
    #[error("signal to workflow `{subject}` refused: {source}")]
    Signal {
        /// The workflow's subject.
        subject: String,
        /// Why.
        #[source]
        source: crate::factory::FactoryError,
    },
    /// The worker pools could not start.
    #[error("worker pools: {0}")]
    Pool(#[from] crate::runtime::pool::PoolError),
    /// The cancel request could not be built (the subject is not a workflow's).
    #[error(transparent)]
    Cancel(#[from] crate::orchestration::cancel::CancelError),
    /// The node was shut down.
    #[error("the node is shut down")]
    ShutDown,
    /// `build` was called outside a tokio runtime.
    #[error("a node must be built inside a tokio runtime: it spawns its workers there")]
    NoRuntime,
}

fn missing_message(missing: &[MissingService]) -> String {
    let list: Vec<String> =
        missing.iter().map(|m| format!("`{}` (called by `{}`)", m.service, m.orchestrator)).collect();
    format!(
        "no handler for {}: register a handler with NodeBuilder::service, or declare the service remote with NodeBuilder::remote when another process handles it",
        list.join(", ")
    )
}
