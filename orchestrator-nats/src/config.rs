//! [`NatsConfig`]: where a [`NatsTransport`](crate::NatsTransport) connects, its stream and how
//! it pushes back, retries and gives up.

use std::time::Duration;

use orchestrator::event::DEFAULT_MAX_EVENT_BYTES;
use orchestrator::transport::TransportError;

use crate::subject::{valid_prefix, valid_stream_name};

/// How a [`NatsTransport`](crate::NatsTransport) connects and behaves. Every process of a
/// deployment must use the same `stream`, `dead_letter_stream` and `subject_prefix`;
/// [`NatsConfig::new`] fills in defaults that suit most uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NatsConfig {
    /// The server's URL (`nats://host:4222`; several separated by commas).
    pub url: String,
    /// The JetStream stream that holds the events (default `ORCHESTRATOR`): created if it does
    /// not exist, with work-queue retention (an acknowledged event is removed).
    pub stream: String,
    /// The stream that keeps the dead letters (default: the stream's name and `_DEAD`), with
    /// limits retention, at most [`NatsConfig::dead_letter_limit`] messages (the oldest go
    /// first).
    pub dead_letter_stream: String,
    /// The first tokens of every subject (default `orchestrator`): the events of topic `t` go
    /// to `<prefix>.t.<t>`, its dead letters to `<prefix>.dead.<t>` (see [`crate::subject`]).
    pub subject_prefix: String,
    /// How many events may wait undelivered before a publisher from outside waits (default
    /// 10,000). Products of an ack are admitted over it.
    pub capacity: usize,
    /// How long a publisher waits for room before
    /// [`TransportError::Full`]; `None` (the default) waits as long as needed.
    pub publish_timeout: Option<Duration>,
    /// How long a delivery stays with its consumer unless extended (default 30 s, the
    /// consumer's `ack_wait`): then the server delivers it again, to anyone.
    /// [`Delivery::extend`](orchestrator::transport::Delivery::extend) restarts this period: a
    /// node's heartbeat (`NodeBuilder::heartbeat`, every 10 s by default) must beat more often
    /// than this for long handlers to keep their deliveries.
    pub ack_wait: Duration,
    /// How many times an event is delivered at most (default 20): nacked on its last delivery,
    /// or delivered once more after a consumer died holding it, it becomes a dead letter.
    pub max_deliver: u32,
    /// The most messages one pull request asks for (default 64).
    pub batch: usize,
    /// How long an idle pull request waits on the server (default 5 s).
    pub pull_expires: Duration,
    /// How often a closed transport's consumers check whether their topics are drained, and
    /// how often a waiting publisher looks again, at most (default 100 ms).
    pub poll: Duration,
    /// The stream's replicas (default 1). Three on a cluster keep acknowledged events through
    /// the loss of a server (see the crate documentation on durability).
    pub replicas: usize,
    /// The server's duplicate window for the stream (default 2 min): an event published again
    /// with the same source and id within it is stored once (a node's outbox republishing at
    /// start, products of an ack tried again), whether the first copy still waits or was
    /// consumed already (see the crate documentation on messages).
    pub duplicate_window: Duration,
    /// The most dead letters kept (default 100,000; the oldest are removed first).
    pub dead_letter_limit: i64,
    /// How long a request to the JetStream API (stream and consumer management, publish
    /// acknowledgements) may take (default 10 s).
    pub request_timeout: Duration,
    /// How long a publish (from outside, or the products of an ack) keeps trying through a
    /// lost connection or a server that does not answer, a restart say, before it fails with a
    /// transient error (default 60 s): the client reconnects by itself, and each try is sent
    /// again with the same message id, so the stream stores the event once.
    pub outage: Duration,
    /// The largest message body taken as an event, in bytes (default 1 MiB,
    /// [`DEFAULT_MAX_EVENT_BYTES`]): a larger message received on a topic becomes a dead
    /// letter with the reason, like any message that is not a valid event. The server's
    /// `max_payload` (1 MiB by default, headers included) bounds what can be published at all;
    /// this bounds, below it, what the deployment's handlers take from other programs.
    /// Publishing does not check it (only the server's limit): every process of a deployment
    /// should use the same value, and events larger than it are meant to come from outside.
    pub max_event_bytes: usize,
}

impl NatsConfig {
    /// The settings for the server at `url`, with every default.
    pub fn new(url: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            stream: "ORCHESTRATOR".to_owned(),
            dead_letter_stream: "ORCHESTRATOR_DEAD".to_owned(),
            subject_prefix: "orchestrator".to_owned(),
            capacity: 10_000,
            publish_timeout: None,
            ack_wait: Duration::from_secs(30),
            max_deliver: 20,
            batch: 64,
            pull_expires: Duration::from_secs(5),
            poll: Duration::from_millis(100),
            replicas: 1,
            duplicate_window: Duration::from_secs(120),
            dead_letter_limit: 100_000,
            request_timeout: Duration::from_secs(10),
            outage: Duration::from_secs(60),
            max_event_bytes: DEFAULT_MAX_EVENT_BYTES,
        }
    }

    /// Sets the stream, its dead-letter stream (`<stream>_DEAD`) and the subject prefix (the
    /// stream's name in lower case) at once: one deployment on a shared server.
    pub fn deployment(mut self, stream: &str) -> Self {
        self.stream = stream.to_owned();
        self.dead_letter_stream = format!("{stream}_DEAD");
        self.subject_prefix = stream.to_ascii_lowercase();
        self
    }

    /// Checks every setting: [`TransportError::InvalidConfig`] names the first one out of
    /// range.
    pub fn validate(&self) -> Result<(), TransportError> {
        let invalid = |message: String| Err(TransportError::InvalidConfig { message });
        if !valid_stream_name(&self.stream) {
            return invalid(format!("stream name `{}` is not a valid JetStream name", self.stream));
        }
        if !valid_stream_name(&self.dead_letter_stream) || self.dead_letter_stream == self.stream {
            return invalid(format!(
                "dead-letter stream name `{}` must be a valid JetStream name other than the stream's",
                self.dead_letter_stream
            ));
        }
        if !valid_prefix(&self.subject_prefix) {
            return invalid(format!(
                "subject prefix `{}` must be dot-separated tokens without wildcards or whitespace",
                self.subject_prefix
            ));
        }
        if self.capacity == 0 {
            return invalid("capacity must be at least 1".to_owned());
        }
        if self.max_deliver == 0 {
            return invalid("max_deliver must be at least 1".to_owned());
        }
        if self.batch == 0 {
            return invalid("batch must be at least 1".to_owned());
        }
        if self.ack_wait < Duration::from_secs(1) {
            return invalid(format!("ack_wait must be at least 1 s, got {:?}", self.ack_wait));
        }
        if self.pull_expires < Duration::from_millis(100) || self.poll.is_zero() {
            return invalid("pull_expires must be at least 100 ms and poll more than zero".to_owned());
        }
        if self.replicas == 0 || self.replicas > 5 {
            return invalid(format!("replicas must be 1 to 5, got {}", self.replicas));
        }
        if self.max_event_bytes == 0 {
            return invalid("max_event_bytes must be at least 1".to_owned());
        }
        if self.dead_letter_limit < 1 {
            return invalid("dead_letter_limit must be at least 1".to_owned());
        }
        Ok(())
    }
}
