//! [`RedisDeadLetter`]: an entry the transport will not deliver again, with why.

use std::time::{Duration, SystemTime};

use orchestrator::event::{Event, EventError};
use redis::Value;

use crate::shared::{array, bytes, int, text};

/// An entry of the dead-letter stream (`<prefix>:dead`): an event terminated by a handler,
/// delivered too many times, or an entry that was not a valid event of its topic, with the
/// reason.
#[derive(Debug, Clone, PartialEq)]
pub struct RedisDeadLetter {
    /// Its id in the dead-letter stream (pass it as `after` to read on).
    pub id: String,
    /// The topic whose stream it came from.
    pub topic: String,
    /// Its id in the topic's stream.
    pub entry: String,
    /// The entry's body as it was (an event's JSON, or whatever was there); cut to
    /// `max_body` when it was larger (see `truncated_from`); empty when the entry had no body.
    pub body: Vec<u8>,
    /// The body's original size when it was cut.
    pub truncated_from: Option<usize>,
    /// The names of the entry's fields, when it had no `body` field.
    pub fields: Option<String>,
    /// On which delivery it became a dead letter.
    pub attempt: u32,
    /// Why.
    pub reason: String,
    /// When it became one (the server's clock).
    pub at: SystemTime,
    /// The consumer that held it.
    pub consumer: String,
}

impl RedisDeadLetter {
    /// A dead letter from an `XRANGE` item (`[id, [field, value, ...]]`).
    pub(crate) fn from_entry(entry: &Value) -> Option<Self> {
        let [id, fields] = array(entry)? else { return None };
        let fields = array(fields)?;
        let field = |name: &[u8]| {
            fields.chunks(2).find(|pair| bytes(&pair[0]) == Some(name)).and_then(|pair| pair.get(1))
        };
        let number = |name: &[u8]| field(name).and_then(int);
        Some(Self {
            id: text(id)?,
            topic: field(b"topic").and_then(text).unwrap_or_default(),
            entry: field(b"entry").and_then(text).unwrap_or_default(),
            body: field(b"body").and_then(bytes).map(<[u8]>::to_vec).unwrap_or_default(),
            truncated_from: number(b"truncated").and_then(|n| usize::try_from(n).ok()),
            fields: field(b"fields").and_then(text),
            attempt: number(b"attempt").and_then(|n| u32::try_from(n).ok()).unwrap_or(0),
            reason: field(b"reason").and_then(text).unwrap_or_default(),
            at: SystemTime::UNIX_EPOCH
                + Duration::from_millis(number(b"at").and_then(|n| u64::try_from(n).ok()).unwrap_or(0)),
            consumer: field(b"consumer").and_then(text).unwrap_or_default(),
        })
    }

    /// The event, decoded (an error for an entry that was not one).
    pub fn decode(&self) -> Result<Event, EventError> {
        Event::from_slice(&self.body)
    }
}
