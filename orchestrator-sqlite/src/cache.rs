//! The write-through record cache: the records this store committed, kept decoded, so that the
//! lifecycle's read before an execution ([`orchestrator::memory::Memory::acquire`]) needs neither
//! a read of the record nor a JSON decode.
//!
//! **Validity.** An entry is the record as this store's writer committed it. It stops being the
//! truth only when another connection (another process, or another store on the same file)
//! commits; the writer notices that at the start of each group transaction (`PRAGMA
//! data_version`, read under the write lock) and moves the [`Epoch`] on, which invalidates every
//! entry inserted before. So:
//!
//! * with a lease (`acquire` with `lock`), the writer takes the lease and, in the same
//!   operation, checks the entry against the stored version (and that no foreign commit came
//!   since the entry was made): a hit then is the current record, and a miss is read from the
//!   write connection in that same operation;
//! * without a lease, a hit may predate a commit that was not recorded here yet (another
//!   process's, or one of this process's whose caller has not recorded it yet); the
//!   compare-and-swap write that follows the execution then fails with `Conflict`, exactly as
//!   it would had the other commit come between read and write. Nothing is overwritten.
//!
//! **Idempotency.** `acquire` also answers whether the event was consumed already. For a
//! workflow whose every write this store saw (it created it and no foreign commit intervened),
//! the entry keeps a hash of each consumed event's `(source, id)` (up to
//! [`MAX_TRACKED_EVENTS`]): an event whose hash is absent was never consumed, and the journal
//! need not be read. A present hash (a redelivery, or a collision), an incomplete history or a
//! longer one sends `acquire` to the journal.

use std::collections::HashSet;
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use orchestrator::memory::{EventKey, Stored};

/// How many consumed event ids the cache tracks per workflow: the cache's memory stays bounded
/// (at most this many hashes for each of its workflows) whatever the workflows' histories.
const MAX_TRACKED_EVENTS: usize = 1024;

/// Moves on whenever a foreign commit is seen; entries of an older epoch are invalid.
#[derive(Debug, Default)]
pub(crate) struct Epoch(AtomicU64);

impl Epoch {
    /// The current epoch.
    pub(crate) fn current(&self) -> u64 {
        self.0.load(Ordering::Acquire)
    }

    /// Invalidates every entry inserted so far.
    pub(crate) fn advance(&self) {
        self.0.fetch_add(1, Ordering::AcqRel);
    }
}

/// What the cache knows of one workflow.
struct Entry<R> {
    version: u64,
    record: Arc<R>,
    /// The epoch the entry was written in.
    epoch: u64,
    /// Hashes of every consumed event id, when every write of the workflow went through this
    /// cache; `None` when the history is not fully known here.
    consumed: Option<HashSet<u64, hashbrown::DefaultHashBuilder>>,
}

/// What a cache hit says.
pub(crate) struct Hit<R> {
    /// The record and its version.
    pub(crate) stored: Stored<Arc<R>>,
    /// True when the event was certainly never consumed by the workflow (no journal read
    /// needed); false when the journal must say.
    pub(crate) not_consumed: bool,
    /// The epoch the entry was made in.
    pub(crate) epoch: u64,
}

/// A write just committed, to record in the cache.
pub(crate) struct Committed<'a, R> {
    pub(crate) id: &'a str,
    pub(crate) record: R,
    /// The version expected before the write (`None`: the write created the workflow).
    pub(crate) prev: Option<u64>,
    pub(crate) version: u64,
    /// The epoch of the group the write committed in.
    pub(crate) epoch: u64,
    /// The event the write journaled as consumed, if any.
    pub(crate) consumed: Option<EventKey<'a>>,
}

/// The write-through record cache of one store (see the [module documentation](self)).
pub(crate) struct RecordCache<R> {
    capacity: usize,
    epoch: Arc<Epoch>,
    hasher: hashbrown::DefaultHashBuilder,
    entries: Mutex<hashbrown::HashMap<String, Entry<R>>>,
}

impl<R> RecordCache<R> {
    /// A cache of at most `capacity` workflows (0 disables it) over `epoch`.
    pub(crate) fn new(capacity: usize, epoch: Arc<Epoch>) -> Self {
        Self {
            capacity,
            epoch,
            hasher: hashbrown::DefaultHashBuilder::default(),
            entries: Mutex::new(hashbrown::HashMap::new()),
        }
    }

    fn entries(&self) -> std::sync::MutexGuard<'_, hashbrown::HashMap<String, Entry<R>>> {
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The cached record of `id`, if valid, and whether `event` was certainly never consumed.
    pub(crate) fn get(&self, id: &str, event: EventKey<'_>) -> Option<Hit<R>> {
        if self.capacity == 0 {
            return None;
        }
        let epoch = self.epoch.current();
        let hash = self.hash(event);
        let mut entries = self.entries();
        let entry = entries.get(id)?;
        if entry.epoch != epoch {
            entries.remove(id);
            return None;
        }
        Some(Hit {
            stored: Stored { record: Arc::clone(&entry.record), version: entry.version },
            not_consumed: entry.consumed.as_ref().is_some_and(|ids| !ids.contains(&hash)),
            epoch,
        })
    }

    /// The hash of an event's identity: its source and its id.
    fn hash(&self, event: EventKey<'_>) -> u64 {
        self.hasher.hash_one((event.source, event.id))
    }

    /// Records a committed write.
    pub(crate) fn committed(&self, write: Committed<'_, R>) {
        if self.capacity == 0 {
            return;
        }
        let hash = write.consumed.map(|event| self.hash(event));
        let mut entries = self.entries();
        // One lookup; the key of an entry already there is reused rather than allocated again.
        let (key, old) = match entries.remove_entry(write.id) {
            Some((key, old)) if old.epoch == write.epoch && old.version > write.version => {
                // A later write of the workflow was recorded first: keep it.
                entries.insert(key, old);
                return;
            }
            Some((key, old)) => (key, Some(old)),
            None => (write.id.to_owned(), None),
        };
        // The consumed ids stay complete only when this write follows the entry's own version
        // (or creates the workflow), in the same epoch.
        let mut consumed = match (old, write.prev) {
            (_, None) => Some(HashSet::default()),
            (Some(old), Some(prev)) if old.version == prev && old.epoch == write.epoch => old.consumed,
            _ => None,
        };
        if let (Some(ids), Some(hash)) = (&mut consumed, hash) {
            ids.insert(hash);
        }
        if consumed.as_ref().is_some_and(|ids| ids.len() > MAX_TRACKED_EVENTS) {
            // A long workflow: its redeliveries are looked up in the journal, as for a workflow
            // created elsewhere, rather than keeping a set that grows with its history.
            consumed = None;
        }
        if entries.len() >= self.capacity {
            // Bounded: start over rather than track recency (finished workflows leave at
            // cleanup, so the cache mostly holds the workflows in flight).
            entries.clear();
        }
        let entry =
            Entry { version: write.version, record: Arc::new(write.record), epoch: write.epoch, consumed };
        entries.insert(key, entry);
    }

    /// Forgets `id` (a failed or uncached write, a cleanup).
    pub(crate) fn forget(&self, id: &str) {
        if self.capacity > 0 {
            self.entries().remove(id);
        }
    }

    /// How many workflows are cached (valid or not).
    #[cfg(test)]
    fn len(&self) -> usize {
        self.entries().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cache(capacity: usize) -> (RecordCache<&'static str>, Arc<Epoch>) {
        let epoch = Arc::new(Epoch::default());
        (RecordCache::new(capacity, Arc::clone(&epoch)), epoch)
    }

    fn write<'a>(
        id: &'a str,
        record: &'static str,
        prev: Option<u64>,
        epoch: u64,
        consumed: &'a str,
    ) -> Committed<'a, &'static str> {
        let version = prev.map_or(1, |v| v + 1);
        Committed { id, record, prev, version, epoch, consumed: Some(key(consumed)) }
    }

    fn key(id: &str) -> EventKey<'_> {
        EventKey { source: "src", id }
    }

    #[test]
    fn a_workflow_created_here_knows_which_events_it_consumed() {
        let (cache, _) = cache(10);
        cache.committed(write("wf", "a", None, 0, "e1"));
        cache.committed(write("wf", "b", Some(1), 0, "e2"));
        let hit = cache.get("wf", key("e3")).expect("cached");
        assert_eq!((*hit.stored.record, hit.stored.version), ("b", 2));
        assert!(hit.not_consumed, "e3 was never consumed");
        assert!(!cache.get("wf", key("e1")).expect("cached").not_consumed, "e1 was: ask the journal");
        assert!(!cache.get("wf", key("e2")).expect("cached").not_consumed);
        let elsewhere = EventKey { source: "other", id: "e1" };
        assert!(
            cache.get("wf", elsewhere).expect("cached").not_consumed,
            "e1 from another source is another event"
        );
    }

    #[test]
    fn a_foreign_commit_invalidates_every_entry() {
        let (cache, epoch) = cache(10);
        cache.committed(write("wf", "a", None, 0, "e1"));
        epoch.advance();
        assert!(cache.get("wf", key("e2")).is_none());
        assert_eq!(cache.len(), 0, "the stale entry is dropped");
        // A write that committed before the advance but is recorded after it stays invalid.
        cache.committed(write("late", "x", None, 0, "e1"));
        assert!(cache.get("late", key("e2")).is_none());
    }

    #[test]
    fn a_write_not_following_the_cached_version_loses_the_consumed_ids() {
        let (cache, _) = cache(10);
        cache.committed(write("wf", "a", None, 0, "e1"));
        // Version 5 after 1: writes happened that this cache did not see.
        cache.committed(write("wf", "f", Some(4), 0, "e5"));
        let hit = cache.get("wf", key("e9")).expect("cached");
        assert_eq!(hit.stored.version, 5);
        assert!(!hit.not_consumed, "the history is incomplete: the journal must say");
        // A write recorded late never replaces a later version.
        cache.committed(write("wf", "e", Some(3), 0, "e4"));
        assert_eq!(cache.get("wf", key("e9")).expect("cached").stored.version, 5);
        // A first write here of a workflow that exists elsewhere has an incomplete history too.
        cache.committed(write("other", "o", Some(7), 0, "e8"));
        assert!(!cache.get("other", key("e1")).expect("cached").not_consumed);
    }

    #[test]
    fn a_long_history_stops_being_tracked() {
        let (cache, _) = cache(10);
        let ids: Vec<String> = (0..=MAX_TRACKED_EVENTS + 1).map(|i| format!("e{i}")).collect();
        cache.committed(write("wf", "r", None, 0, &ids[0]));
        for (v, id) in (1u64..).zip(&ids[1..MAX_TRACKED_EVENTS]) {
            cache.committed(write("wf", "r", Some(v), 0, id));
        }
        assert!(cache.get("wf", key("new")).expect("cached").not_consumed, "tracked up to the bound");
        let v = MAX_TRACKED_EVENTS as u64;
        cache.committed(write("wf", "r", Some(v), 0, &ids[MAX_TRACKED_EVENTS]));
        let hit = cache.get("wf", key("new")).expect("still cached");
        assert_eq!(hit.stored.version, v + 1);
        assert!(!hit.not_consumed, "past the bound the journal answers");
        cache.committed(write("wf", "r", Some(v + 1), 0, &ids[MAX_TRACKED_EVENTS + 1]));
        assert!(!cache.get("wf", key("new")).expect("cached").not_consumed, "and keeps answering");
    }

    #[test]
    fn forgotten_entries_miss_and_the_cache_stays_bounded() {
        let (cache, _) = cache(2);
        cache.committed(write("a", "a", None, 0, "e"));
        cache.forget("a");
        assert!(cache.get("a", key("x")).is_none());
        for id in ["b", "c", "d", "e", "f"] {
            cache.committed(write(id, "r", None, 0, "e"));
            assert!(cache.len() <= 2);
        }
        assert!(cache.get("f", key("x")).is_some(), "the newest entry is kept");
    }

    #[test]
    fn a_disabled_cache_keeps_nothing() {
        let (cache, _) = cache(0);
        cache.committed(write("wf", "a", None, 0, "e1"));
        assert!(cache.get("wf", key("e2")).is_none());
        assert_eq!(cache.len(), 0);
    }
}
