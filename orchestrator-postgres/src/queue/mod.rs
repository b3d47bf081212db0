//! [`PgQueue`]: the event queue on PostgreSQL, a [`Transport`] whose queue is the store's outbox.
//!
//! Every queued event is a row of the `queue` table: its `(topic, subject)` lane, its attempt
//! count, when it becomes visible and, while a consumer holds it, the claim (owner, token,
//! deadline). The rows are the store's outbox too ([`PgStore`] writes it), so an orchestrator
//! step on a [`PgStore`] and its queue commits the settlement of the event it consumed (the
//! row removed), the new record, the journal entry and the events it produced (rows added) in
//! one transaction: a crash leaves all of the step or none of it.
//!
//! * **Claims.** A consumer claims the oldest claimable rows of its topics with `FOR UPDATE
//!   SKIP LOCKED` (consumers never wait on each other), and holds them until a **visibility
//!   deadline** judged by the database clock ([`QueueConfig::visibility`];
//!   [`Delivery::extend`] pushes it back). A claim whose deadline passed is claimed again by
//!   anyone, with the attempt count grown: a consumer that died loses nothing. A claim changes no
//!   indexed column, so PostgreSQL updates the row in place (a HOT update, no index entries);
//!   claimable rows are found in queue order on the primary key, and lapsed claims are reaped
//!   at every poll interval.
//! * **Lanes.** A row is claimable only as the first of its `(topic, subject)` lane and while
//!   no other row of its lane is claimed: a workflow's events are handled one at a time, in the
//!   order they were queued, whichever process claims them
//!   ([`Transport::exclusive_lanes`]: a node on this queue takes no lease per step).
//! * **Settlement.** [`Delivery::ack`] removes the row and queues the products in one
//!   transaction, and only if the row was still this claim's (when an orchestrator's commit
//!   already took the row with its products, the ack has nothing left to do). [`Delivery::nack`]
//!   gives it back, visible after the delay. [`Delivery::terminate`] moves it to the
//!   `dead_letters` table with the reason ([`PgQueue::dead_letters`],
//!   [`PgQueue::requeue`]). Every settlement carries the claim's token: a consumer whose claim
//!   lapsed and was taken over settles nothing. An event claimed more than
//!   [`QueueConfig::max_deliveries`] times (100 by default) becomes a dead letter instead of a
//!   delivery: an event that crashes its consumer every time does not loop forever.
//! * **One poller per process** (and set of topics): consumers wait on it, and it claims as many
//!   rows as consumers wait for (up to [`QueueConfig::batch`]) in one statement. When a claim
//!   comes back short it sleeps until an enqueue in this process wakes it, or one in another
//!   process does through `LISTEN/NOTIFY` (sent after the commit, at most one per 10 ms and
//!   process: a hint only), or a delayed row comes due, or [`QueueConfig::poll`] passes.
//! * **Backpressure.** [`Transport::publish`] waits while [`QueueConfig::depth`] events wait
//!   unclaimed, up to [`QueueConfig::publish_timeout`], then fails with
//!   [`TransportError::Full`]. Products of an ack are never refused. The common case costs no
//!   count: when the range of the queue's positions is under the depth, there is room.
//! * **Acks share transactions** with the commits of other steps (the store's group commit, see
//!   [`PgConfig::committers`](crate::PgConfig::committers)).
//! * **Faults.** A consumer that meets a failing database logs it and tries again with backoff
//!   (up to 5 s between tries). A settlement (ack, nack, terminate) that fails for a moment is
//!   tried again with backoff while its claim holds, then reports the error.
//! * **Vacuum.** Each event leaves a dead row version behind; the poller vacuums the table in the
//!   background every [`QueueConfig::vacuum_every`] rows it claims (autovacuum comes by once a
//!   minute at most: in between, claims walk past the dead rows and the table grows).

mod config;
mod dead_letter;
mod delivery;
mod feed;
mod listener;
mod retry;
mod shared;
pub(crate) mod signals;
mod subscription;
mod vacuum;

use std::sync::Arc;
use std::time::Instant;

use orchestrator::event::Event;
use orchestrator::transport::{Topics, Transport, TransportError};

pub use config::QueueConfig;
pub use dead_letter::QueueDeadLetter;
pub use delivery::PgDelivery;
pub use subscription::PgSubscription;

use crate::queries as q;
use shared::Lane;
pub(crate) use shared::Shared;

#[cfg(doc)]
use crate::PgStore;
#[cfg(doc)]
use orchestrator::transport::Delivery;

/// The event queue of a [`PgStore`]'s database (see the [module documentation](self)). Made by
/// [`PgStore::queue`]; clones share the queue.
#[derive(Clone)]
pub struct PgQueue {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for PgQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgQueue")
            .field("queue", &self.shared.queue_id)
            .field("owner", &self.shared.owner)
            .field("config", &self.shared.config)
            .finish_non_exhaustive()
    }
}

impl PgQueue {
    pub(crate) fn new(shared: Shared) -> Self {
        Self { shared: Arc::new(shared) }
    }

    /// Up to `limit` dead letters after position `after`, oldest first.
    pub async fn dead_letters(
        &self,
        after: u64,
        limit: usize,
    ) -> Result<Vec<QueueDeadLetter>, TransportError> {
        let after = i64::try_from(after).unwrap_or(i64::MAX);
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows = self.shared.query(q::DEAD_LETTERS, &[&after, &limit]).await?;
        rows.iter().map(QueueDeadLetter::from_row).collect()
    }

    /// Puts dead letter `seq` back in the queue, as a fresh delivery; false when there is no
    /// such dead letter (or its event is queued already).
    pub async fn requeue(&self, seq: u64) -> Result<bool, TransportError> {
        let seq = i64::try_from(seq).unwrap_or(i64::MAX);
        let rows = self.shared.query(q::REQUEUE, &[&seq]).await?;
        if !rows.is_empty() {
            self.shared.wake.enqueued();
        }
        Ok(!rows.is_empty())
    }

    /// How many events wait unclaimed (counted up to `limit`).
    pub async fn depth(&self, limit: usize) -> Result<usize, TransportError> {
        self.shared.depth(limit).await
    }

    /// Waits while the queue is past its depth; `Full` after the publish timeout.
    async fn wait_for_room(&self, batch: usize) -> Result<(), TransportError> {
        let config = &self.shared.config;
        let started = Instant::now();
        let mut pause = std::time::Duration::from_millis(5);
        loop {
            // The primary key's range bounds the queue's length: under the depth, there is room
            // without counting.
            if self.shared.span().await?.saturating_add(batch) <= config.depth {
                return Ok(());
            }
            let depth = self.shared.depth(config.depth).await?;
            if depth == 0 || depth + batch <= config.depth {
                return Ok(());
            }
            let waited = started.elapsed();
            if config.publish_timeout.is_some_and(|limit| waited >= limit) {
                return Err(TransportError::Full { capacity: config.depth, waited });
            }
            if self.shared.is_closed() {
                return Err(TransportError::Closed);
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(config.poll);
        }
    }
}

impl Transport for PgQueue {
    type Subscription = PgSubscription;

    async fn publish(&self, events: Vec<Event>) -> Result<(), TransportError> {
        if self.shared.is_closed() {
            return Err(TransportError::Closed);
        }
        orchestrator::transport::check_batch(&events, self.shared.config.max_event_bytes)?;
        let lanes = Lane::of_all(&events)?;
        if events.is_empty() {
            return Ok(());
        }
        self.wait_for_room(events.len()).await?;
        self.shared.enqueue(&lanes, &events).await
    }

    async fn subscribe(&self, topics: Topics) -> Result<PgSubscription, TransportError> {
        self.shared.start_listener();
        Ok(PgSubscription::new(Arc::clone(&self.shared), &topics))
    }

    fn close(&self) {
        self.shared.close();
    }

    fn queue_id(&self) -> Option<&str> {
        Some(&self.shared.queue_id)
    }

    /// Always: a row is claimable only while no other row of its lane is claimed, whichever
    /// process claims it.
    fn exclusive_lanes(&self) -> bool {
        true
    }

    /// True: a terminated event moves to the `dead_letters` table, with its reason, in the
    /// statement that removes it from the queue.
    fn keeps_dead_letters(&self) -> bool {
        true
    }
}
