//! What every store shares: the retention of finished workflows, the id rule, time as Unix
//! milliseconds and the identity of the node that holds leases. One copy, so backends cannot
//! drift apart.

use std::fmt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::MemoryError;

/// What a store does with a finished workflow's record and journal (see [`Memory::commit`] and
/// [`Memory::cleanup`]).
///
/// A store forgets what it removed: an event redelivered for a removed workflow (its init
/// included) finds nothing, and an init starts the workflow again. Keep finished workflows
/// ([`Retention::Keep`], [`Retention::RemoveAfter`], [`Retention::Archive`]) for as long as your
/// transport can redeliver their events.
///
/// [`Memory::commit`]: super::Memory::commit
/// [`Memory::cleanup`]: super::Memory::cleanup
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Retention {
    /// Keep it (for inspection and idempotency; storage grows with finished workflows). The
    /// default of every store.
    #[default]
    Keep,
    /// Remove it at once.
    Remove,
    /// Remove it once this long has passed since the workflow finished.
    RemoveAfter(Duration),
    /// Move it to the store's archive (stores that have one; the others keep it, as
    /// [`Retention::Keep`]).
    Archive,
}

/// Rejects ids no backend can store.
pub fn check_id(id: &str) -> Result<(), MemoryError> {
    if id.is_empty() {
        return Err(MemoryError::InvalidId { id: id.to_owned(), reason: "it is empty" });
    }
    Ok(())
}

/// `t` in whole milliseconds since the Unix epoch, rounded down (0 before it, saturating).
pub fn unix_ms(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// Milliseconds since the Unix epoch back as a `SystemTime` (saturating at the far future).
pub fn from_unix_ms(ms: u64) -> SystemTime {
    UNIX_EPOCH
        .checked_add(Duration::from_millis(ms))
        .unwrap_or_else(|| UNIX_EPOCH + Duration::from_secs(u64::from(u32::MAX)))
}

/// The identity of a node (a process) that holds leases and claims: stores record it with each
/// lease, so a restarted node can free what it held before, and operators can tell who holds
/// what.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct NodeId(String);

impl NodeId {
    /// A node id from a name the user chose (a stable name lets a restarted node reclaim its
    /// leases at once).
    pub fn new(name: impl Into<String>) -> Self {
        Self(name.into())
    }

    /// A fresh id for this process: `<host>-<pid>-<random>`.
    pub fn generate() -> Self {
        let host =
            std::env::var("HOSTNAME").ok().filter(|h| !h.is_empty()).unwrap_or_else(|| "node".to_owned());
        let random = uuid::Uuid::new_v4().simple().to_string();
        Self(format!("{host}-{}-{}", std::process::id(), &random[..8]))
    }

    /// The id as a string.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unix_ms_round_trips_and_saturates() {
        let t = UNIX_EPOCH + Duration::from_millis(1_700_000_000_123);
        assert_eq!(from_unix_ms(unix_ms(t)), t);
        assert_eq!(unix_ms(UNIX_EPOCH - Duration::from_secs(1)), 0);
        let _ = from_unix_ms(u64::MAX);
    }

    #[test]
    fn generated_node_ids_differ() {
        assert_ne!(NodeId::generate(), NodeId::generate());
    }
}
