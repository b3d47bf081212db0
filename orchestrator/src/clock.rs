//! [`Clock`]: where the lifecycle and the in-memory store read the time (the wall clock by
//! default, settable in tests and simulations).

use std::fmt;
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

/// The time source of an orchestrator: each execution reads it once, computes its timers from
/// it and journals it, so a replay sees the same time.
pub trait Clock: Send + Sync + fmt::Debug + 'static {
    /// The current time.
    fn now(&self) -> SystemTime;
}

/// The wall clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> SystemTime {
        SystemTime::now()
    }
}

/// A clock that moves only when told to, for tests and simulations.
///
/// ```
/// use std::time::{Duration, SystemTime};
/// use orchestrator::orchestration::{Clock, ManualClock};
/// let clock = ManualClock::new(SystemTime::UNIX_EPOCH);
/// clock.advance(Duration::from_secs(5));
/// assert_eq!(clock.now(), SystemTime::UNIX_EPOCH + Duration::from_secs(5));
/// ```
#[derive(Debug)]
pub struct ManualClock(Mutex<SystemTime>);

impl ManualClock {
    /// A clock reading `start`.
    pub fn new(start: SystemTime) -> Self {
        Self(Mutex::new(start))
    }

    /// Moves the clock forward by `by`.
    pub fn advance(&self, by: Duration) {
        let mut now = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        *now += by;
    }

    /// Sets the clock to `to`.
    pub fn set(&self, to: SystemTime) {
        *self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = to;
    }
}

impl Clock for ManualClock {
    fn now(&self) -> SystemTime {
        *self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl<C: Clock> Clock for std::sync::Arc<C> {
    fn now(&self) -> SystemTime {
        (**self).now()
    }
}
