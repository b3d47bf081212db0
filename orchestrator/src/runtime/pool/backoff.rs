//! [`Backoff`]: how long a worker waits after a failed poll: exponential, fully jittered,
//! capped.

use std::time::Duration;

use crate::runtime::RetryPolicy;

/// Exponential backoff with full jitter and a cap: after the `n`th failure in a row (1 for
/// the first) a worker waits a random duration in `0 ..= min(max, initial * multiplier^(n -
/// 1))`. The arithmetic is [`RetryPolicy`]'s (one implementation): every input is accepted
/// without panicking, a non-finite or huge product is capped at `max`, a NaN or negative
/// multiplier counts as 1.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Backoff {
    /// The ceiling of the first wait (default 100 ms).
    pub initial: Duration,
    /// The ceiling of every wait (default 10 s).
    pub max: Duration,
    /// The growth of the ceiling from one failure to the next (default 2.0).
    pub multiplier: f64,
}

impl Default for Backoff {
    fn default() -> Self {
        Self { initial: Duration::from_millis(100), max: Duration::from_secs(10), multiplier: 2.0 }
    }
}

impl Backoff {
    fn policy(&self) -> RetryPolicy {
        RetryPolicy {
            max_attempts: u32::MAX,
            initial: self.initial,
            max_delay: self.max,
            multiplier: self.multiplier,
        }
    }

    /// The largest wait after the `failures`th failure in a row: `min(max, initial *
    /// multiplier^(failures - 1))`.
    pub fn ceiling(&self, failures: u32) -> Duration {
        self.policy().ceiling(failures)
    }

    /// A random wait (full jitter) in `0 ..= ceiling(failures)`.
    pub fn delay(&self, failures: u32) -> Duration {
        self.policy().delay(failures)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_stay_within_the_capped_exponential_ceiling() {
        let backoff =
            Backoff { initial: Duration::from_millis(10), max: Duration::from_millis(200), multiplier: 3.0 };
        assert_eq!(backoff.ceiling(1), Duration::from_millis(10));
        assert_eq!(backoff.ceiling(2), Duration::from_millis(30));
        assert_eq!(backoff.ceiling(3), Duration::from_millis(90));
        assert_eq!(backoff.ceiling(4), Duration::from_millis(200), "270 ms, capped");
        assert_eq!(backoff.ceiling(u32::MAX), Duration::from_millis(200));
        for failures in 1..=10 {
            let delays: Vec<_> = (0..300).map(|_| backoff.delay(failures)).collect();
            assert!(delays.iter().all(|d| *d <= backoff.ceiling(failures)), "failure {failures}");
            // Full jitter: spread over the whole range, not clustered at the ceiling.
            let half = backoff.ceiling(failures) / 2;
            assert!(delays.iter().any(|d| *d < half) && delays.iter().any(|d| *d > half));
        }
    }

    #[test]
    fn odd_settings_do_not_panic() {
        for multiplier in [f64::NAN, f64::INFINITY, -1.0, 0.0] {
            let backoff = Backoff { multiplier, ..Backoff::default() };
            for failures in [0, 1, 7, u32::MAX] {
                assert!(backoff.delay(failures) <= backoff.max);
            }
        }
    }
}
