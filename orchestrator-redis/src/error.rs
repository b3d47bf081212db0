//! [`RedisError`]: what failed on the Redis side, carried by
//! [`TransportError::Backend`](orchestrator::transport::TransportError::Backend).

use orchestrator::transport::TransportError;

/// What failed on the Redis side. The transport returns it inside
/// [`TransportError::Backend`] (downcast its `source` to tell the cases apart), transient when
/// trying again may help.
#[derive(Debug, thiserror::Error)]
pub enum RedisError {
    /// The server could not be reached.
    #[error("cannot connect to Redis at {url}: {source}")]
    Connect {
        /// The URL (without its password).
        url: String,
        /// Why.
        #[source]
        source: redis::RedisError,
    },
    /// A command failed (a lost connection, a timeout, an error reply).
    #[error("Redis command {what} failed: {source}")]
    Command {
        /// What the command was for.
        what: &'static str,
        /// Why.
        #[source]
        source: redis::RedisError,
    },
    /// The server answered something the transport does not understand.
    #[error("unexpected answer from Redis to {what}: {answer}")]
    Protocol {
        /// What the command was for.
        what: &'static str,
        /// The answer, as debug text.
        answer: String,
    },
    /// An event's body is larger than [`RedisConfig::max_body`](crate::RedisConfig::max_body):
    /// no retry can cure it.
    #[error("event `{id}` is {size} bytes, more than max_body ({max} bytes)")]
    EventTooLarge {
        /// The event's id.
        id: String,
        /// Its size.
        size: usize,
        /// The limit.
        max: usize,
    },
}

impl RedisError {
    /// Whether trying again may help: a lost or refused connection, a timeout, a server
    /// loading its data, busy with a script, or read-only during a failover; not an event too
    /// large, an answer not understood, or a command the server refused for good (a wrong
    /// type, an error in a script).
    pub fn is_transient(&self) -> bool {
        match self {
            Self::EventTooLarge { .. } | Self::Protocol { .. } => false,
            Self::Connect { .. } => true,
            Self::Command { source, .. } => {
                source.is_io_error()
                    || source.is_timeout()
                    || source.is_connection_dropped()
                    || source.is_connection_refusal()
                    || source.code().is_some_and(|code| {
                        matches!(code, "LOADING" | "BUSY" | "TRYAGAIN" | "MASTERDOWN" | "READONLY")
                    })
            }
        }
    }
}

impl From<RedisError> for TransportError {
    fn from(e: RedisError) -> Self {
        TransportError::Backend { transient: e.is_transient(), source: Box::new(e) }
    }
}

/// A `map_err` for a failed command.
pub(crate) fn command(what: &'static str) -> impl Fn(redis::RedisError) -> TransportError {
    move |source| RedisError::Command { what, source }.into()
}
