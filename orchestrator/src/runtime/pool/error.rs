//! [`PoolError`]: why a consumer or a pool refused a request.

/// Why a [`Consumer`](super::Consumer) or a [`Pool`](super::Pool) refused a request.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PoolError {
    /// Two pools of one consumer have the same name (worker ids would collide).
    #[error("two pools are named `{name}`: each pool of a consumer needs its own name")]
    DuplicatePool {
        /// The name.
        name: String,
    },
    /// Pools run on Tokio: `start` was called outside a Tokio runtime.
    #[error("a consumer starts its pools on a Tokio runtime: call `start` inside one")]
    NoRuntime,
    /// A worker stopped before it ran: its subscription failed for good (a fatal error, or
    /// too many retryable ones in a row).
    #[error("worker {worker} could not start: {reason}")]
    NotStarted {
        /// The worker.
        worker: String,
        /// Why it stopped.
        reason: super::ExitReason,
    },
    /// The pool is stopping or stopped.
    #[error("pool `{pool}` is stopping or stopped")]
    Stopped {
        /// The pool's name.
        pool: String,
    },
}
