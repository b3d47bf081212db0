//! [`QueueDeadLetter`]: an event the queue will not deliver again, with why.

use std::time::SystemTime;

use orchestrator::event::Event;
use orchestrator::memory::from_unix_ms;
use orchestrator::transport::TransportError;

use super::shared::invalid;

/// A row of the queue's `dead_letters` table: an event terminated by a consumer (or that could
/// not be decoded), with the reason.
#[derive(Debug, Clone, PartialEq)]
pub struct QueueDeadLetter {
    /// Its position (for [`PgQueue::requeue`](super::PgQueue::requeue)).
    pub seq: u64,
    /// The topic it was queued on.
    pub topic: String,
    /// Its subject.
    pub subject: String,
    /// The event's id.
    pub event_id: String,
    /// The event as queued (JSON text).
    pub event: String,
    /// How many times it was delivered.
    pub attempt: u32,
    /// Why it was terminated.
    pub reason: String,
    /// When.
    pub at: SystemTime,
}

impl QueueDeadLetter {
    pub(super) fn from_row(row: &tokio_postgres::Row) -> Result<Self, TransportError> {
        let seq: i64 = row.get(0);
        let attempt: i32 = row.get(5);
        let at: i64 = row.get(7);
        Ok(Self {
            seq: u64::try_from(seq).map_err(|_| invalid("dead letter position", seq))?,
            topic: row.get(1),
            subject: row.get(2),
            event_id: row.get(3),
            event: row.get(4),
            attempt: u32::try_from(attempt).map_err(|_| invalid("attempt", i64::from(attempt)))?,
            reason: row.get(6),
            at: from_unix_ms(u64::try_from(at).map_err(|_| invalid("time", at))?),
        })
    }

    /// The event, decoded.
    pub fn decode(&self) -> Result<Event, serde_json::Error> {
        serde_json::from_str(&self.event)
    }
}
