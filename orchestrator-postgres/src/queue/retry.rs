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

use orchestrator::transport::TransportError;

/// The first wait after a transient failure.
const FIRST: Duration = Duration::from_millis(25);
/// The longest wait between two tries.
const MOST: Duration = Duration::from_secs(1);

/// The backoff of one settlement, bounded by its claim's deadline.
#[derive(Debug)]
pub(super) struct SettleRetry {
    deadline: Instant,
    next: Duration,
    /// Whether a try failed already (a try after that may find its work done).
    retried: bool,
}

impl SettleRetry {
    /// A backoff that gives up at `deadline` (when the claim lapses).
    pub(super) fn until(deadline: Instant) -> Self {
        Self { deadline, next: FIRST, retried: false }
    }

    /// After a failed try: waits and returns true when `error` is transient and the claim still
    /// holds after the wait, else returns false at once (the caller reports `error`).
    pub(super) async fn again(&mut self, what: &'static str, error: &TransportError) -> bool {
        if !error.is_transient() || Instant::now() + self.next >= self.deadline {
            return false;
        }
        tracing::debug!(settlement = what, %error, wait = ?self.next, "settling failed for a moment: trying again");
        tokio::time::sleep(self.next).await;
        self.next = (self.next * 2).min(MOST);
        self.retried = true;
        true
    }

    /// Whether a try failed before this one.
    pub(super) fn retried(&self) -> bool {
        self.retried
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
        assert_eq!(waits[..3], [FIRST, FIRST * 2, FIRST * 4], "backoff doubles");
        assert!(waits.iter().all(|w| *w <= MOST), "waits are capped: {waits:?}");
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
