//! Small helpers shared by the runtime modules: panic containment and poison-tolerant locking.

pub(crate) mod panic;

use std::sync::{Mutex, MutexGuard, PoisonError};

/// Locks a mutex, ignoring poisoning (every critical section of the runtime leaves consistent
/// state: it only does a few map or counter operations, never a user callback).
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
