//! [`RetryPolicy`]: how often, and after how long, a transient failure is tried again.

use std::time::Duration;

/// Exponential backoff with full jitter: the delay before attempt `n + 1` is a random duration
/// in `0 ..= min(max_delay, initial * multiplier^(n - 1))`, and an event is tried at most
/// `max_attempts` times. Every input is accepted without panicking: a non-finite or huge
/// product is capped at `max_delay`, a NaN or negative multiplier counts as 1.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RetryPolicy {
    /// How many times an event is tried in all, the first delivery included (default 10). 0
    /// counts as 1 (no retry).
    pub max_attempts: u32,
    /// The ceiling of the first retry's delay (default 50 ms).
    pub initial: Duration,
    /// The ceiling of every delay (default 30 s).
    pub max_delay: Duration,
    /// The growth of the ceiling from one attempt to the next (default 2.0).
    pub multiplier: f64,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_attempts: 10,
            initial: Duration::from_millis(50),
            max_delay: Duration::from_secs(30),
            multiplier: 2.0,
        }
    }
}

impl RetryPolicy {
    /// No retry: the first transient failure is final.
    pub fn never() -> Self {
        Self { max_attempts: 1, ..Self::default() }
    }

    /// Whether an event that failed on delivery `attempt` (1 for the first) may be tried again.
    pub fn may_retry(&self, attempt: u32) -> bool {
        attempt < self.max_attempts.max(1)
    }

    /// The largest delay after a failure of delivery `attempt` (1 for the first):
    /// `min(max_delay, initial * multiplier^(attempt - 1))`.
    pub fn ceiling(&self, attempt: u32) -> Duration {
        let cap = self.max_delay.as_secs_f64();
        let multiplier =
            if self.multiplier.is_nan() || self.multiplier < 0.0 { 1.0 } else { self.multiplier };
        let exponent = i32::try_from(attempt.saturating_sub(1)).unwrap_or(i32::MAX);
        let secs = self.initial.as_secs_f64() * multiplier.powi(exponent);
        if secs.is_nan() {
            // 0 × ∞: the initial delay is zero, and so is every delay.
            return Duration::ZERO;
        }
        if secs >= cap {
            return self.max_delay;
        }
        Duration::try_from_secs_f64(secs).unwrap_or(self.max_delay).min(self.max_delay)
    }

    /// A random delay (full jitter) in `0 ..= ceiling(attempt)`.
    pub fn delay(&self, attempt: u32) -> Duration {
        let ceiling = u64::try_from(self.ceiling(attempt).as_nanos()).unwrap_or(u64::MAX);
        Duration::from_nanos(fastrand::u64(0..=ceiling))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_stay_within_the_exponential_ceiling() {
        let policy = RetryPolicy::default();
        assert_eq!(policy.ceiling(1), Duration::from_millis(50));
        assert_eq!(policy.ceiling(2), Duration::from_millis(100));
        assert_eq!(policy.ceiling(4), Duration::from_millis(400));
        for attempt in 1..=12 {
            for _ in 0..200 {
                assert!(policy.delay(attempt) <= policy.ceiling(attempt), "attempt {attempt}");
            }
        }
    }

    #[test]
    fn the_ceiling_is_capped() {
        let policy = RetryPolicy::default();
        assert_eq!(policy.ceiling(11), Duration::from_secs(30), "50 ms × 2^10 = 51.2 s, capped");
        assert_eq!(policy.ceiling(64), Duration::from_secs(30));
    }

    #[test]
    fn jitter_is_spread() {
        let policy = RetryPolicy { initial: Duration::from_secs(1), ..RetryPolicy::default() };
        let delays: Vec<_> = (0..100).map(|_| policy.delay(1)).collect();
        assert!(delays.iter().any(|d| *d < Duration::from_millis(500)));
        assert!(delays.iter().any(|d| *d > Duration::from_millis(500)));
    }

    #[test]
    fn odd_inputs_do_not_panic() {
        let max = Duration::from_secs(30);
        for multiplier in [f64::INFINITY, f64::NEG_INFINITY, f64::NAN, f64::MAX, 0.0, -2.0, 1e308] {
            for initial in [Duration::ZERO, Duration::from_millis(50), Duration::MAX] {
                for max_delay in [Duration::ZERO, max, Duration::MAX] {
                    let policy = RetryPolicy { max_attempts: u32::MAX, initial, max_delay, multiplier };
                    for attempt in [0, 1, 2, 1000, u32::MAX] {
                        let ceiling = policy.ceiling(attempt);
                        assert!(ceiling <= max_delay, "{policy:?} attempt {attempt}: {ceiling:?}");
                        assert!(policy.delay(attempt) <= ceiling);
                    }
                }
            }
        }
        let infinite = RetryPolicy { multiplier: f64::INFINITY, ..RetryPolicy::default() };
        assert_eq!(infinite.ceiling(u32::MAX), max);
        let nan = RetryPolicy { multiplier: f64::NAN, ..RetryPolicy::default() };
        assert_eq!(nan.ceiling(u32::MAX), Duration::from_millis(50), "NaN counts as 1");
    }

    #[test]
    fn attempts_are_limited() {
        let policy = RetryPolicy { max_attempts: 3, ..RetryPolicy::default() };
        assert!(policy.may_retry(1) && policy.may_retry(2));
        assert!(!policy.may_retry(3));
        assert!(!RetryPolicy { max_attempts: 0, ..policy }.may_retry(1), "0 counts as 1");
        assert!(!RetryPolicy::never().may_retry(1));
    }
}
