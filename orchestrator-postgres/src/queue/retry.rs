//! [`SettleRetry`]: a settlement that meets a transient failure is tried again while its claim
//! holds.
//!
//! A delivery is settled once: `ack`, `nack` and `terminate` take it by value, so the runtime
//! cannot try again. A settlement that failed for a moment (a dropped connection, a server
//! restarting) would leave its row claimed until the claim lapses, and the event be delivered
//! again later: a late duplicate, and a queue that does not drain until then. So the delivery
//! tries again itself, with backoff, until the claim's deadline. Trying again is safe: every
//! settlement names its claim's token, so one whose first try did commit (its answer lost)
//! finds no row the second time and changes nothing.

use std::time::Duration;

use tokio::time::Instant;

use orchestrator::runtime::pool::Backoff;
use orchestrator::transport::TransportError;

/// The waits between tries: 25 ms, doubling, at most 1 s (the ceilings of the runtime's
/// [`Backoff`]: a claim's deadline bounds the tries, and a settlement waits no longer than it must).
const BACKOFF: Backoff =
    Backoff { initial: Duration::from_millis(25), max: Duration::from_secs(1), multiplier: 2.0 };

/// The backoff of one settlement, bounded by its claim's deadline.
#[derive(Debug)]
pub(super) struct SettleRetry {
    deadline: Instant,
    /// The tries that failed so far.
    failures: u32,
}

impl SettleRetry {
    /// A backoff that gives up at `deadline` (when the claim lapses).
    pub(super) fn until(deadline: Instant) -> Self {
        Self { deadline, failures: 0 }
    }

    /// After a failed try: waits and returns true when `error` is transient and the claim still
    /// holds after the wait, else returns false at once (the caller reports `error`).
    pub(super) async fn again(&mut self, what: &'static str, error: &TransportError) -> bool {
        let wait = BACKOFF.ceiling(self.failures.saturating_add(1));
        if !error.is_transient() || Instant::now() + wait >= self.deadline {
            return false;
        }
        tracing::debug!(settlement = what, %error, ?wait, "settling failed for a moment: trying again");
        tokio::time::sleep(wait).await;
        self.failures = self.failures.saturating_add(1);
        true
    }

    /// Whether a try failed before this one.
    pub(super) fn retried(&self) -> bool {
        self.failures > 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn transient() -> TransportError {
        TransportError::Backend { transient: true, source: "connection reset".into() }
    }

    #[tokio::test(start_paused = true)]
    async fn transient_failures_are_tried_again_with_growing_waits_until_the_deadline() {
        let start = Instant::now();
        let mut retry = SettleRetry::until(start + Duration::from_secs(3));
        let mut waits = Vec::new();
        let mut before = Instant::now();
        while retry.again("ack", &transient()).await {
            waits.push(before.elapsed());
            before = Instant::now();
        }
        assert!(retry.retried());
        let first = Duration::from_millis(25);
        assert_eq!(waits[..3], [first, first * 2, first * 4], "backoff doubles");
        assert!(waits.iter().all(|w| *w <= Duration::from_secs(1)), "waits are capped: {waits:?}");
        assert!(start.elapsed() < Duration::from_secs(3), "no try is planned past the deadline");
        assert!(start.elapsed() > Duration::from_secs(2), "tries go on until close to the deadline");
    }

    #[tokio::test(start_paused = true)]
    async fn permanent_failures_and_lapsed_claims_are_not_tried_again() {
        let mut retry = SettleRetry::until(Instant::now() + Duration::from_secs(30));
        assert!(!retry.again("ack", &TransportError::Closed).await);
        assert!(!retry.retried());
        let mut lapsed = SettleRetry::until(Instant::now());
        assert!(!lapsed.again("ack", &transient()).await);
    }
}
