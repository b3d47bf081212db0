//! Transports: how events travel between the handlers of one process or of many.
//!
//! A [`Transport`] carries events to the handlers listening on their `to` topic, **at least
//! once**. Three traits describe it, the same for every implementation (the in-process queue
//! [`InProcessTransport`], and the networked ones in their own crates):
//!
//! * [`Transport::publish`] puts a batch of events on their topics, in order. When the transport
//!   is full it **waits** (backpressure) up to its configured bound, then fails with
//!   [`TransportError::Full`]: an event is never dropped silently.
//! * [`Transport::subscribe`] joins the competing consumers of some topics: every event of those
//!   topics goes to one of the subscriptions at a time.
//! * Each [`Delivery`] is settled exactly once: [`Delivery::ack`] (handled, with the events it
//!   produced, which the transport publishes before it forgets the delivery: atomically where it
//!   can), [`Delivery::nack`] (not handled now: deliver again after a delay),
//!   [`Delivery::terminate`] (never deliver again: a dead letter, with its reason). While a
//!   handler works, [`Delivery::extend`] keeps the delivery from being handed to someone else.
//!   A delivery dropped without being settled counts as a nack without delay.
//!
//! # Ordering and exclusivity
//!
//! Where a transport offers it (the in-process queue does), the events of one `(topic,
//! subject)` pair are delivered one at a time, in publish order: the next one is delivered once
//! the previous one is settled. Where a transport does not, the store's leases give the same
//! guarantee to orchestrators: a workflow never runs two events at once, whatever the transport
//! (the second is refused with a lock denial, which the dispatcher retries later).
//!
//! # Settlement
//!
//! The runtime's dispatcher ([`crate::runtime`]) decides how a delivery is settled, with one
//! rule for every transport: success → ack with the produced events; a transient failure (lock
//! denied, store unreachable, write conflict) → nack with an exponential, jittered delay, then a
//! dead letter once the retry limit is reached; a permanent failure (a contract or configuration
//! violation, a malformed event, a panic) → dead letter with its reason.

mod error;
pub mod in_process;
mod shared;
#[cfg(any(test, feature = "testing"))]
pub mod testing;

use std::future::Future;
use std::time::Duration;

pub use error::TransportError;
pub use in_process::{DEFAULT_CAPACITY, InProcessConfig, InProcessTransport, TransportStats};

use crate::event::Event;

/// Checks a batch before a transport accepts any of it: every event has a `to`
/// ([`TransportError::MissingTo`]) and is at most `max_event_bytes` once serialized
/// ([`TransportError::EventTooLarge`]). Transports call it first in
/// [`Transport::publish`], so that a refused batch publishes nothing.
pub fn check_batch(events: &[Event], max_event_bytes: usize) -> Result<(), TransportError> {
    for event in events {
        if event.to().is_none() {
            return Err(TransportError::MissingTo { id: event.id().to_owned() });
        }
        event.check_size(max_event_bytes)?;
    }
    Ok(())
}

/// Which topics a subscription receives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Topics {
    /// Every topic (an in-process dispatcher that routes, and reports events nobody handles).
    All,
    /// Only these topics.
    Only(Vec<String>),
}

impl Topics {
    /// Whether `topic` is one of these.
    pub fn contains(&self, topic: &str) -> bool {
        match self {
            Self::All => true,
            Self::Only(topics) => topics.iter().any(|t| t == topic),
        }
    }
}

/// Carries events to the handlers of their `to` topic, at least once (see the
/// [module documentation](self)).
pub trait Transport: Send + Sync + 'static {
    /// A subscription of this transport.
    type Subscription: Subscription;

    /// Publishes `events` in order. Each must have a `to` ([`TransportError::MissingTo`]
    /// otherwise) and fit the transport's event size limit ([`TransportError::EventTooLarge`]
    /// otherwise, 1 MiB by default, the parsers' limit): a refused batch publishes nothing. Waits while the transport is full, up
    /// to the transport's bound, then fails with [`TransportError::Full`]; fails with
    /// [`TransportError::Closed`] once the transport is closed. Returns once the transport holds
    /// the events (for a networked transport: once the server acknowledged them).
    fn publish(&self, events: Vec<Event>) -> impl Future<Output = Result<(), TransportError>> + Send;

    /// Joins the competing consumers of `topics`.
    fn subscribe(
        &self,
        topics: Topics,
    ) -> impl Future<Output = Result<Self::Subscription, TransportError>> + Send;

    /// Stops accepting events from outside. Subscriptions keep receiving what is already queued
    /// (and what its handlers produce) and end once that is drained.
    fn close(&self);

    /// When this transport's queue is also a store's outbox (a database queue, such as
    /// PostgreSQL's: a step's commit puts its products in the queue in the same transaction),
    /// the identity of that queue, equal to the store's
    /// [`Outbox::queue_id`](crate::outbox::Outbox::queue_id). A durable
    /// [`Node`](crate::runtime::Node) whose store and transport report the same identity
    /// publishes each event once (the outbox step *is* the publication) and redelivers nothing
    /// when it starts (the queue kept it). `None` (the default): the transport has a queue of
    /// its own.
    fn queue_id(&self) -> Option<&str> {
        None
    }

    /// Whether this transport hands out at most one unsettled delivery per `(topic, subject)`
    /// lane across *every* process that consumes it: a database queue whose claims are rows,
    /// such as PostgreSQL's, or a transport that only its own process consumes, such as the
    /// [`InProcessTransport`]. A [`Node`](crate::runtime::Node) on such a transport runs its
    /// orchestrators and resumables without a lease per step
    /// ([`Locking::Never`](crate::orchestration::Locking::Never)): the transport already
    /// serializes a workflow's events, and the compare-and-swap write still refuses a lost
    /// update (after a claim lapsed while its step ran, or when another process sharing the
    /// store steps the same workflow: the later write is refused, retried, and answered from
    /// the journal). `orchestrator-model` checks that protocol without leases. `false` (the
    /// default): steps take the store's lease.
    fn exclusive_lanes(&self) -> bool {
        false
    }

    /// Whether an event this transport accepted (a [`publish`](Transport::publish) or the
    /// products of an [`ack`](Delivery::ack) that returned `Ok`) is stored where a crash of this
    /// process cannot lose it: a broker that acknowledges each write once it holds it, such as
    /// NATS JetStream. A durable [`Node`](crate::runtime::Node) on such a transport lets an
    /// event leave its store's outbox as soon as the transport has it, rather than once a
    /// handler of the same store consumed it: the events it produces may be consumed by other
    /// processes over other stores. `false` (the default): the transport keeps events in this
    /// process's memory, and the outbox keeps them until they are handled.
    fn stores_published(&self) -> bool {
        false
    }

    /// Whether [`Delivery::terminate`] keeps the event where a crash cannot lose it, with its
    /// reason (a dead-letter table or stream: PostgreSQL's queue, NATS, Redis). `false` (the
    /// default): a terminated event is gone from the transport, and a
    /// [`Node`](crate::runtime::Node) buries it in its store when the store keeps dead letters
    /// ([`Memory::dead_letter_store`](crate::memory::Memory::dead_letter_store)).
    fn keeps_dead_letters(&self) -> bool {
        false
    }
}

/// A stream of deliveries (see [`Transport::subscribe`]).
pub trait Subscription: Send + 'static {
    /// A delivery of this subscription.
    type Delivery: Delivery;

    /// The next delivery, waiting for one; `None` once the transport is closed and drained.
    /// Cancel-safe: dropping the future before it completes loses no delivery.
    fn next(&mut self) -> impl Future<Output = Option<Self::Delivery>> + Send;

    /// [`next`](Subscription::next), reporting a failure of the transport instead of hiding
    /// it: `Ok(Some(_))` a delivery, `Ok(None)` the transport is closed and drained, `Err(_)` the
    /// poll failed ([`TransportError::is_transient`] tells whether polling again may succeed).
    /// A worker pool ([`crate::runtime::pool`]) polls with it, backs off after a transient
    /// failure and stops its worker after a permanent one. Cancel-safe like `next`. The
    /// default never fails: it is `Ok(self.next().await)`, for transports that retry
    /// internally.
    fn try_next(&mut self) -> impl Future<Output = Result<Option<Self::Delivery>, TransportError>> + Send {
        async move { Ok(self.next().await) }
    }
}

/// One delivery of one event, to be settled once (see the [module documentation](self)).
pub trait Delivery: Send + Sync + 'static {
    /// The event delivered.
    fn event(&self) -> &Event;

    /// How many times this event has been delivered, this delivery included (1 the first time).
    fn attempt(&self) -> u32;

    /// Handled: publishes `produced` (in order, with the same guarantees as
    /// [`Transport::publish`], except that a full transport does not refuse them: they are part
    /// of work already accepted), then forgets the delivery. If the products are refused (an
    /// event without `to`: [`TransportError::MissingTo`]), the delivery is not settled and is
    /// delivered again.
    fn ack(self, produced: Vec<Event>) -> impl Future<Output = Result<(), TransportError>> + Send;

    /// Not handled now: delivers the event again once `delay` has passed.
    fn nack(self, delay: Duration) -> impl Future<Output = Result<(), TransportError>> + Send;

    /// Keeps the delivery for this subscription for at least `by` more (a heartbeat for long
    /// work). A transport without visibility deadlines does nothing.
    fn extend(&self, by: Duration) -> impl Future<Output = Result<(), TransportError>> + Send;

    /// Never delivers the event again: it becomes a dead letter of the transport, with `reason`.
    fn terminate(self, reason: String) -> impl Future<Output = Result<(), TransportError>> + Send;
}
