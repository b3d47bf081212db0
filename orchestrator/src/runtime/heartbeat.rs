//! [`Heartbeat`]: keeps a delivery claimed while its handler works.

use std::future::Future;
use std::time::Duration;

use tokio::time::{Instant, MissedTickBehavior};

use crate::transport::Delivery;

/// How a dispatcher keeps a delivery claimed while its handler works: every `every`, it calls
/// [`Delivery::extend`] with `extend_by`, so that a transport with visibility deadlines (the
/// PostgreSQL queue: 30 s by default) does not hand a long step to another consumer while it is
/// still running. Keep `every` well below the transport's visibility, and `extend_by` above
/// `every`. A transport without deadlines (the in-process one) ignores the extensions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Heartbeat {
    /// How often the delivery is extended while its handler runs (default 10 s).
    pub every: Duration,
    /// How far each extension reaches from now (default 30 s).
    pub extend_by: Duration,
}

impl Default for Heartbeat {
    fn default() -> Self {
        Self { every: Duration::from_secs(10), extend_by: Duration::from_secs(30) }
    }
}

impl Heartbeat {
    /// The heartbeat for a transport whose claims (visibility timeout, lease) last `lease`:
    /// extended by `lease` every third of it, so that two heartbeats may fail before the claim
    /// lapses.
    pub fn from_lease(lease: Duration) -> Self {
        Self { every: (lease / 3).max(Duration::from_millis(1)), extend_by: lease }
    }

    /// Runs `work`, extending `delivery` every [`Heartbeat::every`] until it ends. A failed
    /// extension is logged (the claim may lapse and the event be delivered again, which every
    /// consumer tolerates); the work goes on.
    pub(crate) async fn keep_alive<D: Delivery, F: Future>(&self, delivery: &D, work: F) -> F::Output {
        tokio::pin!(work);
        let mut ticks =
            tokio::time::interval_at(Instant::now() + self.every, self.every.max(Duration::from_millis(1)));
        ticks.set_missed_tick_behavior(MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                biased;
                out = &mut work => return out,
                _ = ticks.tick() => {
                    if let Err(error) = delivery.extend(self.extend_by).await {
                        tracing::warn!(
                            event_id = delivery.event().id(),
                            %error,
                            "could not extend a delivery while its handler runs; it may be delivered again"
                        );
                    }
                }
            }
        }
    }
}
