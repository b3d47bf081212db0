//! The writer thread's cache of the records of the latest journal rows it wrote.
//!
//! A journaled write stores its record as a delta against the previous row's record (see
//! [`orchestrator::memory::journal_codec`]). Rebuilding that record from the journal (read the
//! rows since the last snapshot, inflate them, parse them, apply the deltas) was a sixth of the
//! writer's work; this cache keeps, on the writer thread, the record each workflow's latest
//! journal row holds, as the writer diffed it.
//!
//! **Validity.** An entry is the record of the journal row `(wf, version)` this writer wrote.
//! It is used only for that row: the workflow's row must say its journal ends at `version`.
//! Every journaled write puts its record, replacing the workflow's entry; so an entry can only be
//! wrong if the journal changed in a way this writer did not see, and the writer clears the
//! cache when that may have happened:
//!
//! * a group rolled back (its writes put entries for rows that were never committed);
//! * another connection committed (see [`crate::writer`]'s `PRAGMA data_version` check).
//!
//! **Memory.** A finished workflow's entry is dropped; past [`MAX_ENTRIES`] entries or
//! [`MAX_BYTES`] of records (counted by their JSON text) the cache is emptied and fills again.
//!
//! The cache lives in a thread-local: the writer thread is the only one that runs write
//! operations, and each store has its own writer thread.

use std::cell::RefCell;
use std::collections::HashMap;
use std::collections::hash_map::Entry;

use serde_json::Value;

/// The most workflows with an entry.
const MAX_ENTRIES: usize = 16 * 1024;
/// The most JSON text the entries' records may add up to.
const MAX_BYTES: usize = 32 << 20;

#[derive(Default)]
struct TailCache {
    /// By the workflow's row (`workflows.seq`): the version of its latest journal row, that
    /// row's record and the length of its JSON text.
    entries: HashMap<i64, (u64, Value, usize)>,
    bytes: usize,
}

thread_local! {
    static CACHE: RefCell<TailCache> = RefCell::default();
}

/// Takes the record of workflow `wf`'s journal row at `version`, if this is what the cache holds
/// (the entry leaves the cache: the write that asked puts the next one).
pub(crate) fn take(wf: i64, version: u64) -> Option<Value> {
    CACHE.with_borrow_mut(|cache| {
        let Entry::Occupied(entry) = cache.entries.entry(wf) else { return None };
        if entry.get().0 != version {
            return None;
        }
        let (_, record, len) = entry.remove();
        cache.bytes -= len;
        Some(record)
    })
}

/// Keeps `record` (whose JSON text is `len` bytes long) as the record of workflow `wf`'s journal
/// row at `version`.
pub(crate) fn put(wf: i64, version: u64, record: Value, len: usize) {
    CACHE.with_borrow_mut(|cache| {
        if let Some((_, _, old)) = cache.entries.remove(&wf) {
            cache.bytes -= old;
        }
        if cache.entries.len() >= MAX_ENTRIES || cache.bytes + len > MAX_BYTES {
            cache.entries.clear();
            cache.bytes = 0;
        }
        if len <= MAX_BYTES {
            cache.entries.insert(wf, (version, record, len));
            cache.bytes += len;
        }
    });
}

/// Drops workflow `wf`'s entry (it finished).
pub(crate) fn forget(wf: i64) {
    CACHE.with_borrow_mut(|cache| {
        if let Some((_, _, len)) = cache.entries.remove(&wf) {
            cache.bytes -= len;
        }
    });
}

/// Drops every entry: the journal may have changed behind the cache's back.
pub(crate) fn clear() {
    CACHE.with_borrow_mut(|cache| {
        cache.entries.clear();
        cache.bytes = 0;
    });
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn an_entry_is_given_once_and_only_for_its_version() {
        clear();
        put(1, 3, json!({"a": 1}), 7);
        assert_eq!(take(1, 2), None, "another version");
        assert_eq!(take(2, 3), None, "another workflow");
        assert_eq!(take(1, 3), Some(json!({"a": 1})));
        assert_eq!(take(1, 3), None, "taken");
    }

    #[test]
    fn a_put_replaces_the_workflows_entry_and_forget_and_clear_drop_entries() {
        clear();
        put(1, 3, json!(1), 1);
        put(1, 4, json!(2), 1);
        assert_eq!(take(1, 3), None);
        put(2, 1, json!(3), 1);
        forget(1);
        assert_eq!(take(1, 4), None);
        clear();
        assert_eq!(take(2, 1), None);
        CACHE.with_borrow(|cache| assert_eq!((cache.entries.len(), cache.bytes), (0, 0)));
    }

    #[test]
    fn the_cache_stays_within_its_bounds() {
        clear();
        for wf in 0..(MAX_ENTRIES as i64 + 10) {
            put(wf, 1, Value::Null, 4);
        }
        CACHE.with_borrow(|cache| {
            assert!(cache.entries.len() <= MAX_ENTRIES);
            assert_eq!(cache.bytes, 4 * cache.entries.len());
        });
        put(-1, 1, Value::Null, MAX_BYTES + 1);
        assert_eq!(take(-1, 1), None, "a record larger than the whole cache is not kept");
        put(-2, 1, Value::Null, MAX_BYTES);
        CACHE.with_borrow(|cache| assert_eq!((cache.entries.len(), cache.bytes), (1, MAX_BYTES)));
        clear();
    }
}
