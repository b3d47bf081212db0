//! [`NatsError`]: what failed on the NATS side, carried by
//! [`TransportError::Backend`](orchestrator::transport::TransportError::Backend).

use orchestrator::transport::TransportError;

/// A boxed error of the NATS client.
pub(crate) type Source = Box<dyn std::error::Error + Send + Sync>;

/// What failed on the NATS side. The transport returns it inside
/// [`TransportError::Backend`] (downcast its `source` to tell the cases apart), transient when
/// trying again may help.
#[derive(Debug, thiserror::Error)]
pub enum NatsError {
    /// The server could not be reached.
    #[error("cannot connect to NATS at {url}: {source}")]
    Connect {
        /// The URL.
        url: String,
        /// Why.
        #[source]
        source: Source,
    },
    /// A stream or consumer could not be created or read.
    #[error("JetStream refused to set up {what}: {source}")]
    Setup {
        /// The stream or consumer.
        what: String,
        /// Why.
        #[source]
        source: Source,
    },
    /// An event was larger than the server accepts (its `max_payload`, 1 MiB by default):
    /// no retry can cure it.
    #[error(
        "event `{id}` is {size} bytes with its headers, more than the server's max_payload of {max} bytes"
    )]
    EventTooLarge {
        /// The event's id.
        id: String,
        /// Its size, headers included.
        size: usize,
        /// The server's limit.
        max: usize,
    },
    /// Publishing, or waiting for the stream's acknowledgement, failed.
    #[error("publishing to `{subject}` failed: {source}")]
    Publish {
        /// The subject.
        subject: String,
        /// Why.
        #[source]
        source: Source,
    },
    /// Acknowledging a delivery (ack, nak, progress, term) failed.
    #[error("settling a delivery failed: {source}")]
    Settle {
        /// Why.
        #[source]
        source: Source,
    },
    /// A request to the JetStream API (stream or consumer information, reading a dead letter)
    /// failed.
    #[error("JetStream request for {what} failed: {source}")]
    Request {
        /// What was asked.
        what: &'static str,
        /// Why.
        #[source]
        source: Source,
    },
}

impl NatsError {
    /// Whether trying again may help: everything but an event too large.
    pub fn is_transient(&self) -> bool {
        !matches!(self, Self::EventTooLarge { .. })
    }
}

impl From<NatsError> for TransportError {
    fn from(e: NatsError) -> Self {
        TransportError::Backend { transient: e.is_transient(), source: Box::new(e) }
    }
}
