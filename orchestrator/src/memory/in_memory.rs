//! [`InMemory`]: a concurrency-safe memory for one process.

use std::collections::VecDeque;
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use super::{Journal, JournalRecord, Lease, Memory, MemoryError, Stored, Wake, WriteMeta, check_id};
use crate::event::Event;

const SHARDS: usize = 16;

/// The workflows of one shard, by id. Ids are hashed with foldhash (hashbrown's default: fast on
/// long subject strings, seeded per map) and looked up by `&str`, so a lookup allocates nothing.
type ShardMap<R> = hashbrown::HashMap<String, Slot<R>>;

/// What [`Memory::cleanup`] does with a finished workflow's record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Retention {
    /// Keep it (for inspection; memory grows with finished workflows).
    Keep,
    /// Remove it at once.
    Remove,
    /// Remove it once this long has passed since the workflow finished.
    RemoveAfter(Duration),
}

/// Settings of [`InMemory`]. Defaults follow arvo-tools' concurrent memory: a 120 s lease,
/// 3 lock retries starting at 100 ms, growing ×1.5.
#[derive(Debug, Clone, Copy)]
pub struct InMemoryConfig {
    /// How long a lease lasts unless released.
    pub lease_ttl: Duration,
    /// How many more times `lock` tries when the lease is held, before answering "denied".
    pub lock_retries: u32,
    /// The first wait between tries.
    pub retry_delay: Duration,
    /// Each further wait is the previous one times this.
    pub backoff: f64,
    /// What `cleanup` does.
    pub retention: Retention,
    /// Whether to keep each workflow's journal (every execution's consumed event, produced
    /// events and record; see [`Journal`]): a redelivered event then gets the events it produced
    /// the first time, whichever event it is. Memory grows with each workflow's history until
    /// its retention removes it.
    pub journal: bool,
}

impl Default for InMemoryConfig {
    fn default() -> Self {
        Self {
            lease_ttl: Duration::from_secs(120),
            lock_retries: 3,
            retry_delay: Duration::from_millis(100),
            backoff: 1.5,
            retention: Retention::Remove,
            journal: true,
        }
    }
}

struct Slot<R> {
    /// The record and its version, shared with the journal entry that wrote it.
    record: Option<(Arc<R>, u64)>,
    /// The current lease: (token, expiry).
    lease: Option<(u64, SystemTime)>,
    /// The wake-up of the last write.
    wake_at: Option<SystemTime>,
    /// The journal, oldest first (when journaling).
    journal: Vec<Journaled<R>>,
    /// The journal's entries by the id of the event they consumed (positions in `journal`), so
    /// that looking up a delivery does not grow with the history.
    consumed: ConsumedIndex,
    /// The parent workflow, once known.
    parent: Option<String>,
}

impl<R> Default for Slot<R> {
    fn default() -> Self {
        Self {
            record: None,
            lease: None,
            wake_at: None,
            journal: Vec::new(),
            consumed: ConsumedIndex::default(),
            parent: None,
        }
    }
}

/// Journal positions by consumed event id: a hash table of positions that compares against the
/// journal's own events, so no id is stored twice.
#[derive(Default)]
struct ConsumedIndex {
    hasher: hashbrown::DefaultHashBuilder,
    positions: hashbrown::HashTable<usize>,
}

impl ConsumedIndex {
    fn consumed_at<R>(journal: &[Journaled<R>], position: usize) -> Option<&str> {
        journal.get(position).and_then(|e| e.consumed.as_ref()).map(Event::id)
    }

    /// The position of the entry that consumed `event_id`.
    fn find<R>(&self, journal: &[Journaled<R>], event_id: &str) -> Option<usize> {
        let hash = self.hasher.hash_one(event_id);
        self.positions.find(hash, |&p| Self::consumed_at(journal, p) == Some(event_id)).copied()
    }

    /// Indexes the entry at `position` (the first entry that consumed an event wins).
    fn insert<R>(&mut self, journal: &[Journaled<R>], position: usize) {
        let Some(event_id) = Self::consumed_at(journal, position) else { return };
        let hasher = &self.hasher;
        // One hash and one probe: an id already indexed keeps its first position.
        let entry = self.positions.entry(
            hasher.hash_one(event_id),
            |&p| Self::consumed_at(journal, p) == Some(event_id),
            |&p| hasher.hash_one(Self::consumed_at(journal, p).unwrap_or_default()),
        );
        if let hashbrown::hash_table::Entry::Vacant(vacant) = entry {
            vacant.insert(position);
        }
    }
}

/// One journal entry as kept in memory: a [`JournalRecord`] whose record is shared with the slot.
struct Journaled<R> {
    version: u64,
    at: SystemTime,
    consumed: Option<Event>,
    produced: Vec<Event>,
    record: Arc<R>,
}

impl<R: Clone> Journaled<R> {
    fn to_record(&self) -> JournalRecord<R> {
        JournalRecord {
            version: self.version,
            at: self.at,
            consumed: self.consumed.clone(),
            produced: self.produced.clone(),
            record: R::clone(&self.record),
        }
    }
}

/// Workflow memory held in this process: atomic leases with TTL and fencing tokens,
/// compare-and-swap writes, bounded lock retries with backoff, and eviction of finished workflows
/// by [`Retention`] policy. Sharded so that unrelated workflows do not contend.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
/// use orchestrator::memory::{InMemory, Memory, WriteMeta};
/// let memory = InMemory::<String>::default();
/// let meta = WriteMeta::new("wf-1", "arvo.orc.demo");
/// let lease = memory.lock("wf-1").await?.expect("free");
/// let v1 = memory.write("wf-1", &"started".to_owned(), None, Some(&lease), &meta).await?;
/// // A writer that read nothing (a stale view) cannot overwrite.
/// assert!(memory.write("wf-1", &"other".to_owned(), None, Some(&lease), &meta).await.is_err());
/// memory.write("wf-1", &"done".to_owned(), Some(v1), Some(&lease), &meta).await?;
/// memory.unlock(&lease).await?;
/// assert_eq!(memory.read("wf-1").await?.map(|s| s.record), Some("done".to_owned()));
/// # Ok::<(), orchestrator::memory::MemoryError>(())
/// # }).unwrap();
/// ```
pub struct InMemory<R> {
    shards: Vec<Mutex<ShardMap<R>>>,
    /// Picks the shard of an id.
    shard_hasher: hashbrown::DefaultHashBuilder,
    finished: Mutex<VecDeque<(SystemTime, String)>>,
    /// Fencing tokens come from one counter, so they grow per workflow even when a slot is
    /// dropped and recreated.
    next_token: AtomicU64,
    config: InMemoryConfig,
}

impl<R> Default for InMemory<R> {
    fn default() -> Self {
        Self::new(InMemoryConfig::default())
    }
}

impl<R> std::fmt::Debug for InMemory<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InMemory").field("config", &self.config).field("len", &self.len()).finish()
    }
}

impl<R> InMemory<R> {
    /// A memory with these settings.
    pub fn new(config: InMemoryConfig) -> Self {
        Self {
            shards: (0..SHARDS).map(|_| Mutex::new(ShardMap::default())).collect(),
            shard_hasher: hashbrown::DefaultHashBuilder::default(),
            finished: Mutex::new(VecDeque::new()),
            next_token: AtomicU64::new(1),
            config,
        }
    }

    /// The settings.
    pub fn config(&self) -> &InMemoryConfig {
        &self.config
    }

    /// How many workflows have a record or a lease.
    pub fn len(&self) -> usize {
        self.shards.iter().map(|s| lock_shard(s).len()).sum()
    }

    /// True when no workflow has a record or a lease.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn shard(&self, id: &str) -> &Mutex<ShardMap<R>> {
        let hash = self.shard_hasher.hash_one(id);
        &self.shards[(hash >> 32) as usize % SHARDS]
    }

    /// One attempt at taking the lease.
    fn try_lock(&self, id: &str) -> Option<Lease> {
        let now = SystemTime::now();
        let mut shard = lock_shard(self.shard(id));
        let slot = shard.entry_ref(id).or_default();
        if let Some((_, expires)) = slot.lease
            && expires > now
        {
            return None;
        }
        let token = self.next_token.fetch_add(1, Ordering::Relaxed);
        let expires_at = now + self.config.lease_ttl;
        slot.lease = Some((token, expires_at));
        Some(Lease { id: id.to_owned(), token, expires_at })
    }

    /// Removes finished workflows whose retention time has passed.
    fn sweep(&self) {
        let now = SystemTime::now();
        loop {
            let due = {
                let mut finished = self.finished.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                match finished.front() {
                    Some((deadline, _)) if *deadline <= now => finished.pop_front().map(|(_, id)| id),
                    _ => None,
                }
            };
            let Some(id) = due else { break };
            self.remove_unleased(&id);
        }
    }

    fn remove_unleased(&self, id: &str) {
        let now = SystemTime::now();
        let mut shard = lock_shard(self.shard(id));
        if let Some(slot) = shard.get_mut(id) {
            let leased = slot.lease.is_some_and(|(_, expires)| expires > now);
            if !leased {
                shard.remove(id);
            } else {
                // Leased (a late event is being handled): keep the fencing state, drop the record.
                slot.record = None;
            }
        }
    }
}

impl<R> InMemory<R> {
    /// [`Memory::write`] of the record `record()` makes (only once the write is allowed).
    fn store(
        &self,
        id: &str,
        record: impl FnOnce() -> R,
        prev: Option<u64>,
        lease: Option<&Lease>,
        meta: &WriteMeta<'_>,
    ) -> Result<u64, MemoryError> {
        check_id(id)?;
        let now = SystemTime::now();
        let mut shard = lock_shard(self.shard(id));
        let slot = shard.entry_ref(id).or_default();
        if let Some(lease) = lease {
            let current =
                matches!(slot.lease, Some((token, expires)) if token == lease.token && expires > now);
            if !current || lease.id != id {
                return Err(MemoryError::StaleLease { id: id.to_owned(), token: lease.token });
            }
        }
        let found = slot.record.as_ref().map(|(_, version)| *version);
        if found != prev {
            return Err(MemoryError::Conflict { id: id.to_owned(), expected: prev, found });
        }
        let version = found.unwrap_or(0) + 1;
        let record = Arc::new(record());
        slot.wake_at = meta.wake_at;
        if let super::Materialized::Resolved(Some(parent)) = meta.parent_subject
            && slot.parent.is_none()
        {
            slot.parent = Some(parent.to_owned());
        }
        if self.config.journal
            && let Some(entry) = &meta.entry
        {
            slot.journal.push(Journaled {
                version,
                at: entry.at,
                consumed: entry.consumed.cloned(),
                produced: entry.produced.to_vec(),
                record: Arc::clone(&record),
            });
            slot.consumed.insert(&slot.journal, slot.journal.len() - 1);
        }
        slot.record = Some((record, version));
        Ok(version)
    }
}

fn lock_shard<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A panic while holding a shard cannot leave a slot half-updated (every update is a single
    // assignment), so a poisoned lock is still consistent.
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl<R: Clone + Send + Sync> Memory<R> for InMemory<R> {
    async fn read(&self, id: &str) -> Result<Option<Stored<R>>, MemoryError> {
        check_id(id)?;
        let shard = lock_shard(self.shard(id));
        let stored = shard.get(id).and_then(|slot| slot.record.as_ref());
        Ok(stored.map(|(record, version)| Stored { record: R::clone(record), version: *version }))
    }

    async fn read_shared(&self, id: &str) -> Result<Option<Stored<Arc<R>>>, MemoryError> {
        check_id(id)?;
        let shard = lock_shard(self.shard(id));
        let stored = shard.get(id).and_then(|slot| slot.record.as_ref());
        Ok(stored.map(|(record, version)| Stored { record: Arc::clone(record), version: *version }))
    }

    async fn write(
        &self,
        id: &str,
        record: &R,
        prev: Option<u64>,
        lease: Option<&Lease>,
        meta: &WriteMeta<'_>,
    ) -> Result<u64, MemoryError> {
        self.store(id, || record.clone(), prev, lease, meta)
    }

    async fn write_owned(
        &self,
        id: &str,
        record: R,
        prev: Option<u64>,
        lease: Option<&Lease>,
        meta: &WriteMeta<'_>,
    ) -> Result<u64, MemoryError> {
        self.store(id, || record, prev, lease, meta)
    }

    async fn produced(&self, id: &str, event_id: &str) -> Result<Option<Vec<Event>>, MemoryError> {
        check_id(id)?;
        let shard = lock_shard(self.shard(id));
        Ok(shard.get(id).and_then(|slot| {
            let position = slot.consumed.find(&slot.journal, event_id)?;
            slot.journal.get(position).map(|e| e.produced.clone())
        }))
    }

    async fn due(&self, now: SystemTime, limit: usize) -> Result<Vec<Wake>, MemoryError> {
        let mut due: Vec<Wake> = Vec::new();
        for shard in &self.shards {
            let shard = lock_shard(shard);
            due.extend(shard.iter().filter_map(|(id, slot)| match slot.wake_at {
                Some(at) if at <= now && slot.record.is_some() => Some(Wake { id: id.clone(), at }),
                _ => None,
            }));
        }
        due.sort_by(|a, b| a.at.cmp(&b.at).then_with(|| a.id.cmp(&b.id)));
        due.truncate(limit);
        Ok(due)
    }

    async fn lock(&self, id: &str) -> Result<Option<Lease>, MemoryError> {
        check_id(id)?;
        let mut delay = self.config.retry_delay;
        for attempt in 0..=self.config.lock_retries {
            if let Some(lease) = self.try_lock(id) {
                return Ok(Some(lease));
            }
            if attempt < self.config.lock_retries {
                tokio::time::sleep(delay).await;
                delay = delay.mul_f64(self.config.backoff.max(1.0));
            }
        }
        Ok(None)
    }

    async fn unlock(&self, lease: &Lease) -> Result<bool, MemoryError> {
        check_id(&lease.id)?;
        let mut shard = lock_shard(self.shard(&lease.id));
        let Some(slot) = shard.get_mut(&lease.id) else { return Ok(false) };
        match slot.lease {
            Some((token, expires)) if token == lease.token => {
                slot.lease = None;
                if slot.record.is_none() {
                    // Nothing stored (an unknown or already removed workflow): forget the slot, so
                    // memory does not grow with events for workflows that are gone.
                    shard.remove(&lease.id);
                }
                Ok(expires > SystemTime::now())
            }
            _ => Ok(false),
        }
    }

    async fn cleanup(&self, id: &str) -> Result<(), MemoryError> {
        check_id(id)?;
        match self.config.retention {
            Retention::Keep => {}
            Retention::Remove => self.remove_unleased(id),
            Retention::RemoveAfter(after) => {
                let mut finished = self.finished.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                finished.push_back((SystemTime::now() + after, id.to_owned()));
            }
        }
        self.sweep();
        Ok(())
    }
}

impl<R: Clone + Send + Sync> Journal<R> for InMemory<R> {
    async fn history(
        &self,
        id: &str,
        after: u64,
        limit: usize,
    ) -> Result<Vec<JournalRecord<R>>, MemoryError> {
        check_id(id)?;
        let shard = lock_shard(self.shard(id));
        Ok(shard.get(id).map_or_else(Vec::new, |slot| {
            slot.journal.iter().filter(|e| e.version > after).take(limit).map(Journaled::to_record).collect()
        }))
    }

    async fn entry(&self, id: &str, version: u64) -> Result<Option<JournalRecord<R>>, MemoryError> {
        check_id(id)?;
        let shard = lock_shard(self.shard(id));
        Ok(shard
            .get(id)
            .and_then(|slot| slot.journal.iter().find(|e| e.version == version).map(Journaled::to_record)))
    }

    async fn children(&self, id: &str) -> Result<Vec<String>, MemoryError> {
        check_id(id)?;
        let mut children: Vec<(SystemTime, String)> = Vec::new();
        for shard in &self.shards {
            let shard = lock_shard(shard);
            children.extend(shard.iter().filter(|(_, slot)| slot.parent.as_deref() == Some(id)).map(
                |(child, slot)| {
                    (slot.journal.first().map_or(SystemTime::UNIX_EPOCH, |e| e.at), child.clone())
                },
            ));
        }
        children.sort();
        Ok(children.into_iter().map(|(_, child)| child).collect())
    }

    async fn parent(&self, id: &str) -> Result<Option<String>, MemoryError> {
        check_id(id)?;
        Ok(lock_shard(self.shard(id)).get(id).and_then(|slot| slot.parent.clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fast(ttl: Duration, retention: Retention) -> InMemory<String> {
        InMemory::new(InMemoryConfig {
            lease_ttl: ttl,
            lock_retries: 2,
            retry_delay: Duration::from_millis(5),
            backoff: 1.5,
            retention,
            journal: true,
        })
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn passes_the_conformance_suite_with_every_retention() {
        for retention in
            [Retention::Keep, Retention::Remove, Retention::RemoveAfter(Duration::from_millis(10))]
        {
            crate::memory::testing::conformance(|ttl| fast(ttl, retention)).await;
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_backend_chosen_at_run_time_conforms() {
        use crate::memory::DynMemory;
        crate::memory::testing::conformance(|ttl| {
            let backend: std::sync::Arc<dyn DynMemory<String>> =
                std::sync::Arc::new(fast(ttl, Retention::Remove));
            backend
        })
        .await;
    }

    #[tokio::test]
    async fn a_backend_chosen_at_run_time_keeps_its_shared_reads_and_owned_writes() {
        use crate::memory::DynMemory;
        let backend: std::sync::Arc<dyn DynMemory<String>> =
            std::sync::Arc::new(fast(Duration::from_secs(60), Retention::Keep));
        let meta = WriteMeta::new("wf", "s");
        backend.write_owned("wf", "stored".to_owned(), None, None, &meta).await.unwrap();
        let first = backend.read_shared("wf").await.unwrap().unwrap();
        let second = backend.read_shared("wf").await.unwrap().unwrap();
        // InMemory's own read_shared hands out the record it stores; the default would wrap a
        // fresh copy at each read.
        assert!(Arc::ptr_eq(&first.record, &second.record));
        assert_eq!((first.record.as_str(), first.version), ("stored", 1));
    }

    #[tokio::test]
    async fn finished_workflows_do_not_accumulate() {
        let m = fast(Duration::from_secs(60), Retention::Remove);
        for i in 0..1000 {
            let id = format!("wf-{i}");
            let lease = m.lock(&id).await.unwrap().unwrap();
            m.write(&id, &"done".into(), None, Some(&lease), &WriteMeta::new(&id, "s")).await.unwrap();
            m.cleanup(&id).await.unwrap();
            m.unlock(&lease).await.unwrap();
        }
        assert!(m.is_empty(), "{} entries left", m.len());
        // An event for an unknown workflow leaves nothing behind either.
        let lease = m.lock("ghost").await.unwrap().unwrap();
        assert!(m.read("ghost").await.unwrap().is_none());
        m.unlock(&lease).await.unwrap();
        assert!(m.is_empty());
    }

    #[tokio::test]
    async fn retention_keep_and_remove_after() {
        let keep = fast(Duration::from_secs(60), Retention::Keep);
        keep.write("a", &"x".into(), None, None, &WriteMeta::new("a", "s")).await.unwrap();
        keep.cleanup("a").await.unwrap();
        assert!(keep.read("a").await.unwrap().is_some(), "Keep keeps the record");

        let later = fast(Duration::from_secs(60), Retention::RemoveAfter(Duration::from_millis(30)));
        later.write("a", &"x".into(), None, None, &WriteMeta::new("a", "s")).await.unwrap();
        later.cleanup("a").await.unwrap();
        assert!(later.read("a").await.unwrap().is_some(), "kept until the delay has passed");
        tokio::time::sleep(Duration::from_millis(60)).await;
        later.cleanup("other").await.unwrap(); // any later cleanup sweeps due removals
        assert!(later.read("a").await.unwrap().is_none(), "removed after the delay");
    }

    #[tokio::test]
    async fn denied_after_bounded_retries() {
        let m = fast(Duration::from_secs(60), Retention::Remove);
        let held = m.lock("x").await.unwrap().unwrap();
        let started = std::time::Instant::now();
        assert!(m.lock("x").await.unwrap().is_none());
        // 2 retries of 5 ms and 7.5 ms: bounded, not a hang.
        assert!(started.elapsed() < Duration::from_secs(2));
        m.unlock(&held).await.unwrap();
    }
}
