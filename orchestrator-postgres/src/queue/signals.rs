//! [`Signals`]: how a process wakes idle consumers when something was enqueued: its own at once
//! (a [`Notify`]), other processes' through a `NOTIFY orchestrator_queue` sent by a small task,
//! at most once per [`COALESCE`], outside every step's transaction (a notification inside a
//! transaction serializes the commits that send one).

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use deadpool_postgres::Pool;
use tokio::sync::Notify;
use tokio::sync::futures::Notified;

/// The most events remembered as settled by a commit (see [`Signals::settled_by_commit`]).
const SETTLED_CAPACITY: usize = 10_000;

/// The most workflow reads kept for the steps of claimed deliveries (see [`Signals::looked`]).
const LOOKED_CAPACITY: usize = 10_000;

/// What a claim read of a workflow for the step of its event: the record (JSON) and its version,
/// and the journal's answer to the event (its products, when it was consumed already).
#[derive(Debug)]
pub(crate) struct Looked {
    /// The event's source (with its id, the event's identity).
    pub(crate) source: String,
    /// The workflow's record, version and journal state; none when it does not exist.
    pub(crate) base: Option<crate::journal::Base>,
    /// The encoded events of the journal row that answered the event, if one did.
    pub(crate) produced: Option<Vec<u8>>,
}

/// The shortest time between two notifications from one process.
const COALESCE: Duration = Duration::from_millis(10);

/// Shared by a store and its queues (see the [module documentation](self)).
#[derive(Debug, Default)]
pub(crate) struct Signals {
    local: Notify,
    /// Something was enqueued since the last notification.
    dirty: AtomicBool,
    kick: Notify,
    notifier: AtomicBool,
    /// Events whose row a commit of this process took out of the queue with their products.
    settled: Mutex<HashSet<String>>,
    /// Reads made by claims, by `(workflow, event id)`, for the steps of their deliveries.
    looked: Mutex<HashMap<(String, String), Looked>>,
    /// The claims of this process's unsettled deliveries, by event id, for the transactions of
    /// transactional handlers (see [`Signals::claim_of`]).
    claims: Mutex<HashMap<String, Claim>>,
}

/// The claim of a delivery: its row's position and its claim's token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Claim {
    /// The event's source (with its id, the event's identity).
    pub(crate) source: String,
    /// The topic it was delivered to (the handler's).
    pub(crate) topic: String,
    pub(crate) seq: i64,
    pub(crate) token: i64,
}

impl Signals {
    /// Wakes one idle consumer of this process (or the next one to wait).
    pub(crate) fn notify_one(&self) {
        self.local.notify_one();
    }

    /// Wakes every idle consumer of this process.
    pub(crate) fn notify_waiters(&self) {
        self.local.notify_waiters();
    }

    /// A wake-up to wait for.
    pub(crate) fn notified(&self) -> Notified<'_> {
        self.local.notified()
    }

    /// Events were enqueued: wakes a consumer here and, soon, other processes'.
    pub(crate) fn enqueued(&self) {
        self.local.notify_one();
        self.dirty.store(true, Ordering::Release);
        self.kick.notify_one();
    }

    /// A commit of this process took event `id`'s row out of the queue (with its products): its
    /// delivery's ack has nothing left to do and skips its round trip. Only an optimization: an
    /// ack that does not know (another process committed, or this memory was full and cleared)
    /// finds the row gone and does nothing either.
    pub(crate) fn settled_by_commit(&self, id: &str) {
        let mut settled = self.settled.lock().unwrap_or_else(PoisonError::into_inner);
        if settled.len() >= SETTLED_CAPACITY {
            settled.clear();
        }
        settled.insert(id.to_owned());
    }

    /// Whether a commit settled event `id` (forgetting it).
    pub(crate) fn take_settled(&self, id: &str) -> bool {
        self.settled.lock().unwrap_or_else(PoisonError::into_inner).remove(id)
    }

    /// A claim read workflow `id` for the step of event `event_id`: kept until that step's
    /// `acquire` takes it or the delivery ends. The read stays good while the claim holds (the
    /// claim serializes the workflow's steps); if the claim lapsed and another step wrote, the
    /// commit's compare-and-swap refuses the stale step, whose retry reads afresh.
    pub(crate) fn looked(&self, id: &str, event_id: &str, looked: Looked) {
        let mut map = self.looked.lock().unwrap_or_else(PoisonError::into_inner);
        if map.len() >= LOOKED_CAPACITY {
            map.clear();
        }
        map.insert((id.to_owned(), event_id.to_owned()), looked);
    }

    /// The read a claim made of workflow `id` for event `(source, event_id)`, taken (each is used
    /// once: a retry reads afresh).
    pub(crate) fn take_looked(&self, id: &str, source: &str, event_id: &str) -> Option<Looked> {
        let mut map = self.looked.lock().unwrap_or_else(PoisonError::into_inner);
        if map.is_empty() {
            return None;
        }
        let looked = map.remove(&(id.to_owned(), event_id.to_owned()))?;
        (looked.source == source).then_some(looked)
    }

    /// Forgets the read kept for the delivery of event `event_id` of workflow `id` (it ended).
    pub(crate) fn forget_looked(&self, id: &str, event_id: &str) {
        let mut map = self.looked.lock().unwrap_or_else(PoisonError::into_inner);
        if !map.is_empty() {
            map.remove(&(id.to_owned(), event_id.to_owned()));
        }
    }

    /// A delivery of event `event_id` holds `claim` until it ends ([`Signals::unclaimed`]). The
    /// queue has one row per event id, so one claim per id is current; a later claim of the same
    /// row (the first lapsed) replaces it.
    pub(crate) fn claimed(&self, event_id: &str, claim: Claim) {
        self.claims.lock().unwrap_or_else(PoisonError::into_inner).insert(event_id.to_owned(), claim);
    }

    /// The current claim of this process on event `(source, event_id)` delivered to `topic`, if one
    /// of its deliveries holds it: a transactional handler settles it in its own transaction. A claim that lapsed
    /// meanwhile is refused by the settlement (its token no longer matches), never applied twice.
    pub(crate) fn claim_of(&self, topic: &str, source: &str, event_id: &str) -> Option<Claim> {
        let claims = self.claims.lock().unwrap_or_else(PoisonError::into_inner);
        claims.get(event_id).filter(|c| c.source == source && c.topic == topic).cloned()
    }

    /// The delivery holding claim `token` on event `event_id` ended.
    pub(crate) fn unclaimed(&self, event_id: &str, token: i64) {
        let mut claims = self.claims.lock().unwrap_or_else(PoisonError::into_inner);
        if claims.get(event_id).is_some_and(|c| c.token == token) {
            claims.remove(event_id);
        }
    }

    /// Starts the task that sends the notifications for `schema`, once (and only within a Tokio
    /// runtime); it ends once the signals are dropped. Until then, nothing is sent: a store
    /// without a queue has nobody to tell.
    pub(crate) fn spawn_notifier(self: &Arc<Self>, pool: Pool, schema: String) {
        if tokio::runtime::Handle::try_current().is_ok() && !self.notifier.swap(true, Ordering::AcqRel) {
            tokio::spawn(notify_loop(Arc::downgrade(self), pool, schema));
        }
    }
}

async fn notify_loop(signals: Weak<Signals>, pool: Pool, schema: String) {
    loop {
        let Some(strong) = signals.upgrade() else { return };
        if strong.dirty.swap(false, Ordering::AcqRel) {
            drop(strong);
            match pool.get().await {
                Ok(client) => {
                    if let Err(e) =
                        client.execute("SELECT pg_notify('orchestrator_queue', $1)", &[&schema]).await
                    {
                        tracing::debug!(error = %e, "could not notify other processes of enqueued events");
                    }
                }
                Err(e) => tracing::debug!(error = %e, "could not notify other processes of enqueued events"),
            }
            tokio::time::sleep(COALESCE).await;
            continue;
        }
        // Checks now and then whether the signals are still in use.
        let _ = tokio::time::timeout(Duration::from_secs(1), strong.kick.notified()).await;
    }
}
