//! [`Signals`]: how a process wakes idle consumers when something was enqueued: its own at once
//! (a [`Notify`]), other processes' through a `NOTIFY orchestrator_queue` sent by a small task,
//! at most once per [`COALESCE`], outside every step's transaction (a notification inside a
//! transaction serializes the commits that send one).

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use deadpool_postgres::Pool;
use tokio::sync::Notify;
use tokio::sync::futures::Notified;

/// The most events remembered as settled by a commit (see [`Signals::settled_by_commit`]).
const SETTLED_CAPACITY: usize = 10_000;

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
