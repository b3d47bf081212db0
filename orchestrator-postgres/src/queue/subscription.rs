//! [`PgSubscription`]: a consumer of a [`PgQueue`](super::PgQueue).

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use orchestrator::transport::{Subscription, Topics, TransportError};
use tokio::task::JoinHandle;

use super::delivery::PgDelivery;
use super::shared::{Claimed, Shared, topic_list};

/// A claim under way: its own task, so that a `next` dropped mid-claim loses nothing.
type PendingClaim = JoinHandle<Result<Vec<Claimed>, TransportError>>;

/// A consumer of a [`PgQueue`](super::PgQueue) (see
/// [`Transport::subscribe`](orchestrator::transport::Transport::subscribe)). Dropped, it gives
/// back what it claimed and did not hand out.
pub struct PgSubscription {
    shared: Arc<Shared>,
    topics: Option<Vec<String>>,
    claimed: VecDeque<PgDelivery>,
    pending: Option<PendingClaim>,
}

impl std::fmt::Debug for PgSubscription {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgSubscription").field("topics", &self.topics).finish_non_exhaustive()
    }
}

/// The pause after `failures` failures in a row: 50 ms doubling up to 5 s, with jitter.
fn backoff(failures: u32) -> Duration {
    let base = Duration::from_millis(50).saturating_mul(1 << failures.min(7)).min(Duration::from_secs(5));
    base.mul_f64(0.5 + fastrand::f64() / 2.0)
}

impl PgSubscription {
    pub(super) fn new(shared: Arc<Shared>, topics: Topics) -> Self {
        Self { topics: topic_list(&topics), shared, claimed: VecDeque::new(), pending: None }
    }

    /// The claim under way, or a new one.
    fn claim(&mut self) -> &mut PendingClaim {
        self.pending.get_or_insert_with(|| {
            let shared = Arc::clone(&self.shared);
            let topics = self.topics.clone();
            let batch = shared.config.batch;
            tokio::spawn(async move {
                shared.reap().await?;
                shared.claim(&topics, batch).await
            })
        })
    }

    /// How long to sleep when nothing was claimable: until the next row is due by the clock,
    /// at most the poll interval.
    async fn idle_wait(&self) -> Duration {
        let poll = self.shared.config.poll;
        match self.shared.next_due(&self.topics).await {
            Ok(Some(due)) => (due + Duration::from_millis(1)).min(poll),
            Ok(None) | Err(_) => poll,
        }
    }
}

impl Subscription for PgSubscription {
    type Delivery = PgDelivery;

    async fn next(&mut self) -> Option<PgDelivery> {
        let mut failures = 0_u32;
        loop {
            if let Some(delivery) = self.claimed.pop_front() {
                return Some(delivery);
            }
            let shared = Arc::clone(&self.shared);
            let mut notified = Box::pin(shared.wake.notified());
            // Registered before the claim, so a wake-up during it is not missed.
            notified.as_mut().enable();
            let result = match self.claim().await {
                Ok(result) => result,
                Err(join) => Err(TransportError::Backend { transient: true, source: Box::new(join) }),
            };
            self.pending = None;
            match result {
                Ok(rows) if !rows.is_empty() => {
                    failures = 0;
                    for row in rows {
                        if let Some(delivery) = PgDelivery::from_claim(&self.shared, row).await {
                            self.claimed.push_back(delivery);
                        }
                    }
                    // There may be more: let another idle consumer look (a chain of wake-ups
                    // while work lasts, instead of waking them all).
                    drop(notified);
                    self.shared.wake.notify_one();
                }
                Ok(_) => {
                    failures = 0;
                    if self.shared.is_closed() && self.shared.drained(&self.topics).await.unwrap_or(false) {
                        return None;
                    }
                    let wait = self.idle_wait().await;
                    tokio::select! {
                        () = &mut notified => {}
                        () = tokio::time::sleep(wait) => {}
                    }
                }
                Err(e) => {
                    tracing::warn!(error = %e, "claiming from the PostgreSQL queue failed; trying again");
                    tokio::time::sleep(backoff(failures)).await;
                    failures = failures.saturating_add(1);
                }
            }
        }
    }
}

impl Drop for PgSubscription {
    fn drop(&mut self) {
        // Deliveries claimed and not handed out give their rows back as they drop; a claim
        // still running gives its rows back once it ends.
        if let Some(pending) = self.pending.take()
            && tokio::runtime::Handle::try_current().is_ok()
        {
            let shared = Arc::clone(&self.shared);
            tokio::spawn(async move {
                if let Ok(Ok(rows)) = pending.await {
                    for row in rows {
                        drop(PgDelivery::from_claim(&shared, row).await);
                    }
                }
            });
        }
    }
}
