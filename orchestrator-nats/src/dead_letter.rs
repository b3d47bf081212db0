//! [`NatsDeadLetter`]: a message the transport will not deliver again, with why.

use std::time::SystemTime;

use async_nats::jetstream::message::StreamMessage;
use orchestrator::event::{Event, EventError};

use crate::shared::{ATTEMPT, ORIGINAL_SEQUENCE, ORIGINAL_SUBJECT, REASON, TRUNCATED};
use crate::subject::decode_topic;

/// A message of the dead-letter stream: an event terminated by a handler, delivered too many
/// times, or a message that was not a valid event of its topic, with the reason.
#[derive(Debug, Clone, PartialEq)]
pub struct NatsDeadLetter {
    /// Its sequence in the dead-letter stream (pass it as `after` to read on).
    pub seq: u64,
    /// The topic whose subject it came on; `None` when its subject was not a topic's.
    pub topic: Option<String>,
    /// The subject it was published to.
    pub subject: String,
    /// Its sequence in the event stream.
    pub original_seq: u64,
    /// The message's body as published (an event's JSON, or whatever was there); cut when it
    /// was too large to keep with the dead letter's headers (see `truncated_from`).
    pub body: Vec<u8>,
    /// The body's original size when it was cut.
    pub truncated_from: Option<usize>,
    /// On which delivery it became a dead letter.
    pub attempt: u32,
    /// Why.
    pub reason: String,
    /// When it became one.
    pub at: SystemTime,
}

impl NatsDeadLetter {
    pub(crate) fn from_stream(prefix: &str, message: &StreamMessage) -> Self {
        let header =
            |name: &str| message.headers.get(name).map(|v| v.as_str().to_owned()).unwrap_or_default();
        let tokens = message.subject.as_str().strip_prefix(prefix).and_then(|s| s.strip_prefix(".dead."));
        Self {
            seq: message.sequence,
            topic: tokens.and_then(decode_topic),
            subject: header(ORIGINAL_SUBJECT),
            original_seq: header(ORIGINAL_SEQUENCE).parse().unwrap_or(0),
            body: message.payload.to_vec(),
            truncated_from: message.headers.get(TRUNCATED).and_then(|v| v.as_str().parse().ok()),
            attempt: header(ATTEMPT).parse().unwrap_or(0),
            reason: header(REASON),
            at: SystemTime::from(message.time),
        }
    }

    /// The event, decoded (an error for a message that was not one).
    pub fn decode(&self) -> Result<Event, EventError> {
        Event::from_slice(&self.body)
    }
}
