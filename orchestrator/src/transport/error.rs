//! [`TransportError`]: why a transport refused or failed an operation.

/// Why a [`Transport`](super::Transport) refused or failed an operation. Every message names what
/// was wrong.
#[derive(Debug, thiserror::Error)]
pub enum TransportError {
    /// The event has no `to`, and transports route every event by its `to`.
    #[error("event `{id}` has no `to`: transports route every event by its `to`")]
    MissingTo {
        /// The id of the event.
        id: String,
    },
    /// An event is larger than the transport takes (its serialized JSON, see
    /// [`Event::check_size`](crate::event::Event::check_size)); nothing of the batch is published.
    #[error(transparent)]
    EventTooLarge(#[from] crate::event::EventTooLarge),
    /// The transport stayed full for as long as a publisher may wait.
    #[error("the transport stayed full (capacity {capacity}) for {waited:?}")]
    Full {
        /// The configured capacity.
        capacity: usize,
        /// How long the publisher waited.
        waited: std::time::Duration,
    },
    /// The transport is closed and accepts no more events from outside.
    #[error("the transport is closed and accepts no more events")]
    Closed,
    /// A setting is out of range.
    #[error("invalid transport setting: {message}")]
    InvalidConfig {
        /// What was wrong.
        message: String,
    },
    /// The transport's backend (a server, a connection) failed.
    #[error("transport backend failed: {source}")]
    Backend {
        /// Whether trying again later may succeed (a lost connection) or not (a refused message).
        transient: bool,
        /// The underlying error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

impl TransportError {
    /// Whether trying again later may succeed.
    pub fn is_transient(&self) -> bool {
        match self {
            Self::Full { .. } => true,
            Self::Backend { transient, .. } => *transient,
            Self::MissingTo { .. } | Self::EventTooLarge(_) | Self::Closed | Self::InvalidConfig { .. } => {
                false
            }
        }
    }
}
