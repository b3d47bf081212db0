//! Times as milliseconds since the Unix epoch (SQLite `INTEGER`s).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::error::SqliteError;

/// `t` in whole milliseconds since the epoch, rounded down (negative before it).
pub(crate) fn to_ms(t: SystemTime) -> i64 {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_millis()).unwrap_or(i64::MAX),
        Err(e) => i64::try_from(e.duration().as_millis()).map_or(i64::MIN, |ms| -ms),
    }
}

/// `t` in milliseconds, rounded up: a wake-up stored this way is never due early.
pub(crate) fn to_ms_ceil(t: SystemTime) -> i64 {
    let floor = to_ms(t);
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) if d.subsec_nanos() % 1_000_000 != 0 => floor.saturating_add(1),
        _ => floor,
    }
}

/// The current time in milliseconds.
pub(crate) fn now_ms() -> i64 {
    to_ms(SystemTime::now())
}

/// A stored millisecond time back as a `SystemTime`.
pub(crate) fn from_ms(what: &'static str, ms: i64) -> Result<SystemTime, SqliteError> {
    let offset = Duration::from_millis(ms.unsigned_abs());
    let t = if ms >= 0 { UNIX_EPOCH.checked_add(offset) } else { UNIX_EPOCH.checked_sub(offset) };
    t.ok_or(SqliteError::Invalid { what, value: ms })
}

/// A duration in milliseconds, saturating.
pub(crate) fn duration_ms(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}
