//! [`InMemory`]: a concurrency-safe memory for one process.

use std::collections::VecDeque;
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use super::answers::AnswerMap;
use super::catalog::CatalogMap;
use super::{
    Acquired, Commit, EventKey, Journal, JournalRecord, Lease, Materialized, Memory, MemoryError, Page,
    Retention, Stored, SubjectColumns, Wake, WorkflowFilter, WorkflowIndex, WorkflowState, WorkflowSummary,
    check_id,
};
use super::{AnswerKey, Answers, Catalog, Definition, DynAnswers, DynCatalog, Recorded};
use crate::clock::{Clock, SystemClock};
use crate::event::Event;

const SHARDS: usize = 16;

/// The workflows of one shard, by id. Ids are hashed with foldhash (hashbrown's default: fast on
/// long subject strings, seeded per map) and looked up by `&str`, so a lookup allocates nothing.
type ShardMap<R> = hashbrown::HashMap<String, Slot<R>>;

/// Settings of [`InMemory`]: a 120 s lease, finished workflows kept ([`Retention::Keep`]), every
/// execution journaled.
#[derive(Debug, Clone, Copy)]
pub struct InMemoryConfig {
    /// How long a lease lasts unless released or renewed.
    pub lease_ttl: Duration,
    /// What happens to a finished workflow ([`Retention::Archive`] keeps it: there is no archive
    /// in memory).
    pub retention: Retention,
    /// Whether to keep each workflow's journal (every execution's consumed event, produced
    /// events and record; see [`Journal`]): a redelivered event then gets the events it produced
    /// the first time, whichever event it is. Memory grows with each workflow's history until
    /// its retention removes it.
    pub journal: bool,
}

impl Default for InMemoryConfig {
    fn default() -> Self {
        Self { lease_ttl: Duration::from_secs(120), retention: Retention::Keep, journal: true }
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
    /// Until when the current wake-up is claimed ([`Memory::claim_due`]).
    claimed_until: Option<SystemTime>,
    /// What the workflow index lists (see [`WorkflowIndex`]).
    index: IndexEntry,
}

/// What [`WorkflowIndex`] lists of a workflow, kept by each write.
struct IndexEntry {
    /// The writer's source (the orchestrator).
    source: String,
    status: WorkflowState,
    initiator: Option<String>,
    /// Parsed from the id when the record was created.
    columns: Option<SubjectColumns>,
    created_at: SystemTime,
    updated_at: SystemTime,
}

impl Default for IndexEntry {
    fn default() -> Self {
        Self {
            source: String::new(),
            status: WorkflowState::Active,
            initiator: None,
            columns: None,
            created_at: SystemTime::UNIX_EPOCH,
            updated_at: SystemTime::UNIX_EPOCH,
        }
    }
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
            claimed_until: None,
            index: IndexEntry::default(),
        }
    }
}

/// Journal positions by consumed event (its `(source, id)`, hashed by id): a hash table of
/// positions that compares against the journal's own events, so no key is stored twice.
#[derive(Default)]
struct ConsumedIndex {
    hasher: hashbrown::DefaultHashBuilder,
    positions: hashbrown::HashTable<usize>,
}

impl ConsumedIndex {
    fn consumed_at<R>(journal: &[Journaled<R>], position: usize) -> Option<&Event> {
        journal.get(position).and_then(|e| e.consumed.as_ref())
    }

    /// The position of the entry that consumed `event`.
    fn find<R>(&self, journal: &[Journaled<R>], event: EventKey<'_>) -> Option<usize> {
        let hash = self.hasher.hash_one(event.id);
        self.positions
            .find(hash, |&p| Self::consumed_at(journal, p).is_some_and(|e| event.matches(e)))
            .copied()
    }

    /// Indexes the entry at `position` (the first entry that consumed an event wins).
    fn insert<R>(&mut self, journal: &[Journaled<R>], position: usize) {
        let Some(consumed) = Self::consumed_at(journal, position) else { return };
        let key = EventKey::of(consumed);
        let hasher = &self.hasher;
        // One hash and one probe: an event already indexed keeps its first position.
        let entry = self.positions.entry(
            hasher.hash_one(key.id),
            |&p| Self::consumed_at(journal, p).is_some_and(|e| key.matches(e)),
            |&p| hasher.hash_one(Self::consumed_at(journal, p).map_or("", Event::id)),
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
/// use orchestrator::memory::{InMemory, Memory, MemoryExt, WriteMeta};
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
    /// The store's clock: leases, retention delays and due wake-ups are judged by it.
    clock: Arc<dyn Clock>,
    /// What nodes recorded of their workflows.
    catalog: CatalogMap,
    /// What idempotent services answered.
    answers: AnswerMap,
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
            clock: Arc::new(SystemClock),
            catalog: CatalogMap::default(),
            answers: AnswerMap::default(),
        }
    }

    /// Judges leases, retention delays and due wake-ups by `clock` instead of the wall clock
    /// (give it the orchestrators' [`ManualClock`](crate::clock::ManualClock) in tests).
    #[must_use]
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
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

    /// One attempt at taking the lease, in the workflow's slot.
    fn take_lease(&self, slot: &mut Slot<R>, id: &str, now: SystemTime) -> Option<Lease> {
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
        let now = self.clock.now();
        loop {
            let due = {
                let mut finished = self.finished.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                match finished.front() {
                    Some((deadline, _)) if *deadline <= now => finished.pop_front().map(|(_, id)| id),
                    _ => None,
                }
            };
            let Some(id) = due else { break };
            let mut shard = lock_shard(self.shard(&id));
            remove_unleased(&mut shard, &id, now);
        }
    }

    /// Applies the retention to a finished workflow whose shard is locked.
    fn retain(&self, shard: &mut ShardMap<R>, id: &str, now: SystemTime) {
        match self.config.retention {
            Retention::Keep | Retention::Archive => {}
            Retention::Remove => remove_unleased(shard, id, now),
            Retention::RemoveAfter(after) => {
                let mut finished = self.finished.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                finished.push_back((now + after, id.to_owned()));
            }
        }
    }
}

/// Removes a workflow; one that is leased (a late event is being handled) keeps its fencing
/// state and loses its record.
fn remove_unleased<R>(shard: &mut ShardMap<R>, id: &str, now: SystemTime) {
    if let Some(slot) = shard.get_mut(id) {
        if slot.lease.is_some_and(|(_, expires)| expires > now) {
            slot.record = None;
            slot.journal.clear();
            slot.consumed = ConsumedIndex::default();
            slot.wake_at = None;
        } else {
            shard.remove(id);
        }
    }
}

/// Whether `lease` is the current lease of `slot`.
fn holds<R>(slot: &Slot<R>, lease: &Lease, now: SystemTime) -> bool {
    matches!(slot.lease, Some((token, expires)) if token == lease.token && expires > now)
}

impl<R> InMemory<R> {
    /// Steps of [`Memory::commit`] under the shard lock: checks, then the write.
    fn store(&self, slot: &mut Slot<R>, commit: Commit<'_, R>, now: SystemTime) -> Result<u64, MemoryError> {
        let Commit { id, record, prev, lease, release, meta, .. } = commit;
        if let Some(lease) = lease
            && (!holds(slot, lease, now) || lease.id != id)
        {
            return Err(MemoryError::StaleLease { id: id.to_owned(), token: lease.token });
        }
        let found = slot.record.as_ref().map(|(_, version)| *version);
        if found != prev {
            return Err(MemoryError::Conflict { id: id.to_owned(), expected: prev, found });
        }
        let version = found.unwrap_or(0) + 1;
        let record = Arc::new(record);
        slot.wake_at = meta.wake_at;
        slot.claimed_until = None;
        if let Materialized::Resolved(Some(parent)) = meta.parent_subject
            && slot.parent.is_none()
        {
            slot.parent = Some(parent.to_owned());
        }
        let index = &mut slot.index;
        if found.is_none() {
            index.created_at = now;
            index.columns = meta.subject_columns(id);
        }
        index.updated_at = now;
        index.status = meta.status;
        if index.source != meta.source {
            meta.source.clone_into(&mut index.source);
        }
        if let Materialized::Resolved(initiator) = meta.initiator {
            index.initiator = Some(initiator.to_owned());
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
        if release && lease.is_some() {
            slot.lease = None;
        }
        Ok(version)
    }
}

fn lock_shard<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A panic while holding a shard cannot leave a slot half-updated (every update is a single
    // assignment), so a poisoned lock is still consistent.
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The journal's answer for `event` in `slot`.
fn produced_in<R>(slot: &Slot<R>, event: EventKey<'_>) -> Option<Vec<Event>> {
    let position = slot.consumed.find(&slot.journal, event)?;
    slot.journal.get(position).map(|e| e.produced.clone())
}

impl<R: Send + Sync> Catalog for InMemory<R> {
    async fn record(&self, definitions: &[Definition]) -> Result<(), MemoryError> {
        self.catalog.record(definitions, self.clock.now());
        Ok(())
    }

    async fn definitions(&self) -> Result<Vec<Recorded>, MemoryError> {
        Ok(self.catalog.definitions())
    }
}

impl<R: Send + Sync> Answers for InMemory<R> {
    async fn answer(&self, key: AnswerKey<'_>) -> Result<Option<Vec<Event>>, MemoryError> {
        Ok(self.answers.get(key))
    }

    async fn record_answer(&self, key: AnswerKey<'_>, produced: &[Event]) -> Result<Vec<Event>, MemoryError> {
        Ok(self.answers.record(key, produced))
    }
}

impl<R: Clone + Send + Sync + 'static> Memory<R> for InMemory<R> {
    fn catalog(&self) -> Option<&dyn DynCatalog> {
        Some(self)
    }

    fn answers(&self) -> Option<&dyn DynAnswers> {
        Some(self)
    }

    fn workflow_index(&self) -> Option<&dyn crate::memory::DynWorkflowIndex> {
        Some(self)
    }

    async fn read(&self, id: &str) -> Result<Option<Stored<R>>, MemoryError> {
        check_id(id)?;
        let shard = lock_shard(self.shard(id));
        let stored = shard.get(id).and_then(|slot| slot.record.as_ref());
        Ok(stored.map(|(record, version)| Stored { record: R::clone(record), version: *version }))
    }

    async fn lock(&self, id: &str) -> Result<Option<Lease>, MemoryError> {
        check_id(id)?;
        let now = self.clock.now();
        let mut shard = lock_shard(self.shard(id));
        let slot = shard.entry_ref(id).or_default();
        Ok(self.take_lease(slot, id, now))
    }

    async fn renew(&self, lease: &Lease) -> Result<Lease, MemoryError> {
        check_id(&lease.id)?;
        let now = self.clock.now();
        let mut shard = lock_shard(self.shard(&lease.id));
        let stale = || MemoryError::StaleLease { id: lease.id.clone(), token: lease.token };
        let slot = shard.get_mut(&lease.id).ok_or_else(stale)?;
        if !holds(slot, lease, now) {
            return Err(stale());
        }
        let expires_at = now + self.config.lease_ttl;
        slot.lease = Some((lease.token, expires_at));
        Ok(Lease { expires_at, ..lease.clone() })
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
                Ok(expires > self.clock.now())
            }
            _ => Ok(false),
        }
    }

    async fn acquire(
        &self,
        id: &str,
        event: EventKey<'_>,
        lock: bool,
    ) -> Result<Option<Acquired<R>>, MemoryError> {
        check_id(id)?;
        let now = self.clock.now();
        let mut shard = lock_shard(self.shard(id));
        let lease = if lock {
            let slot = shard.entry_ref(id).or_default();
            match self.take_lease(slot, id, now) {
                Some(lease) => Some(lease),
                None => return Ok(None),
            }
        } else {
            None
        };
        let slot = shard.get(id);
        let stored = slot.and_then(|slot| slot.record.as_ref());
        let stored = stored.map(|(record, version)| Stored { record: Arc::clone(record), version: *version });
        let produced = match (slot, &stored) {
            (Some(slot), Some(_)) => produced_in(slot, event),
            _ => None,
        };
        Ok(Some(Acquired { lease, stored, produced }))
    }

    async fn commit(&self, commit: Commit<'_, R>) -> Result<u64, MemoryError> {
        check_id(commit.id)?;
        if commit.outbox.is_some() {
            return Err(MemoryError::Unsupported { what: "an outbox step (InMemory is no outbox)" });
        }
        let (id, finished) = (commit.id, commit.finished);
        let now = self.clock.now();
        let version = {
            let mut shard = lock_shard(self.shard(id));
            let slot = shard.entry_ref(id).or_default();
            let written = self.store(slot, commit, now);
            if written.is_err() && slot.record.is_none() && slot.lease.is_none() {
                shard.remove(id);
            }
            let version = written?;
            if finished {
                self.retain(&mut shard, id, now);
            }
            version
        };
        if finished {
            self.sweep();
        }
        Ok(version)
    }

    async fn produced(&self, id: &str, event: EventKey<'_>) -> Result<Option<Vec<Event>>, MemoryError> {
        check_id(id)?;
        let shard = lock_shard(self.shard(id));
        Ok(shard.get(id).and_then(|slot| produced_in(slot, event)))
    }

    async fn claim_due(&self, limit: usize, claim: Duration) -> Result<Vec<Wake>, MemoryError> {
        let now = self.clock.now();
        let mut due: Vec<Wake> = Vec::new();
        for shard in &self.shards {
            let shard = lock_shard(shard);
            due.extend(shard.iter().filter_map(|(id, slot)| match slot.wake_at {
                Some(at)
                    if at <= now
                        && slot.record.is_some()
                        && slot.claimed_until.is_none_or(|until| until <= now) =>
                {
                    Some(Wake { id: id.clone(), at })
                }
                _ => None,
            }));
        }
        due.sort_by(|a, b| a.at.cmp(&b.at).then_with(|| a.id.cmp(&b.id)));
        due.truncate(limit);
        // Claim them (a write since the scan replaced the wake-up: then it is not claimed).
        due.retain(|wake| {
            let mut shard = lock_shard(self.shard(&wake.id));
            match shard.get_mut(&wake.id) {
                Some(slot)
                    if slot.wake_at == Some(wake.at)
                        && slot.claimed_until.is_none_or(|until| until <= now) =>
                {
                    slot.claimed_until = Some(now + claim);
                    true
                }
                _ => false,
            }
        });
        Ok(due)
    }

    async fn cleanup(&self, id: &str) -> Result<(), MemoryError> {
        check_id(id)?;
        let now = self.clock.now();
        {
            let mut shard = lock_shard(self.shard(id));
            self.retain(&mut shard, id, now);
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

impl<R> InMemory<R> {
    /// Every stored workflow's summary, roots resolved, matching `filter` (cursor aside).
    fn summaries(&self, filter: &WorkflowFilter) -> Vec<WorkflowSummary> {
        let mut all: Vec<WorkflowSummary> = Vec::new();
        for shard in &self.shards {
            let shard = lock_shard(shard);
            all.extend(shard.iter().filter_map(|(id, slot)| {
                let (_, version) = slot.record.as_ref()?;
                let index = &slot.index;
                let columns = index.columns.as_ref();
                Some(WorkflowSummary {
                    id: id.clone(),
                    execution_id: columns.map(|c| c.execution_id.clone()),
                    orchestrator: index.source.clone(),
                    orchestrator_version: columns.map(|c| c.orchestrator_version.clone()),
                    status: index.status,
                    initiator: index.initiator.clone(),
                    parent: slot.parent.clone(),
                    root: None,
                    meta: columns.map(|c| c.meta.iter().cloned().collect()).unwrap_or_default(),
                    created_at: index.created_at,
                    updated_at: index.updated_at,
                    version: *version,
                })
            }));
        }
        // The root: up the parents to the last one stored, or the first one missing.
        let roots: Vec<String> = {
            let parents: hashbrown::HashMap<&str, &str> =
                all.iter().filter_map(|s| Some((s.id.as_str(), s.parent.as_deref()?))).collect();
            all.iter()
                .map(|s| {
                    let mut root = s.id.as_str();
                    for _ in 0..all.len() {
                        match parents.get(root) {
                            Some(parent) => root = parent,
                            None => break,
                        }
                    }
                    root.to_owned()
                })
                .collect()
        };
        for (summary, root) in all.iter_mut().zip(roots) {
            summary.root = Some(root);
        }
        all.retain(|s| filter.matches(s));
        all
    }
}

/// Lists by scanning every workflow (there is no index in memory: the store is for one process
/// and its workflows fit in memory).
impl<R: Send + Sync> WorkflowIndex for InMemory<R> {
    async fn list(&self, filter: &WorkflowFilter) -> Result<Page<WorkflowSummary>, MemoryError> {
        let mut all = self.summaries(filter);
        if let Some(after) = &filter.after {
            all.retain(|s| after.precedes(s.created_at, &s.id));
        }
        all.sort_by(|a, b| (b.created_at, &b.id).cmp(&(a.created_at, &a.id)));
        all.truncate(filter.page_size() + 1);
        Ok(Page::from_rows(all, filter.page_size()))
    }

    async fn count(&self, filter: &WorkflowFilter) -> Result<u64, MemoryError> {
        Ok(self.summaries(filter).len() as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::{MemoryExt, WriteMeta};

    fn fast(ttl: Duration, retention: Retention) -> InMemory<String> {
        InMemory::new(InMemoryConfig { lease_ttl: ttl, retention, journal: true })
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn passes_the_conformance_suites() {
        crate::memory::testing::conformance(|s| fast(s.lease_ttl, s.retention)).await;
        crate::memory::testing::journal(|s| fast(s.lease_ttl, s.retention)).await;
        crate::memory::testing::index(|s| fast(s.lease_ttl, s.retention)).await;
        crate::memory::testing::catalog(|s| fast(s.lease_ttl, s.retention)).await;
        crate::memory::testing::answers(|s| fast(s.lease_ttl, s.retention)).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_backend_chosen_at_run_time_conforms() {
        use crate::memory::DynMemory;
        crate::memory::testing::conformance(|s| {
            let backend: std::sync::Arc<dyn DynMemory<String>> =
                std::sync::Arc::new(fast(s.lease_ttl, s.retention));
            backend
        })
        .await;
    }

    #[tokio::test]
    async fn a_backend_chosen_at_run_time_keeps_its_shared_records() {
        use crate::memory::DynMemory;
        let backend: std::sync::Arc<dyn DynMemory<String>> =
            std::sync::Arc::new(fast(Duration::from_secs(60), Retention::Keep));
        let meta = WriteMeta::new("wf", "s");
        backend.commit(Commit::new("wf", "stored".to_owned(), None, meta)).await.unwrap();
        let key = EventKey { source: "s", id: "e" };
        let first = backend.acquire("wf", key, false).await.unwrap().unwrap().stored.unwrap();
        let second = backend.acquire("wf", key, false).await.unwrap().unwrap().stored.unwrap();
        // InMemory hands out the record it stores: no copy per read.
        assert!(Arc::ptr_eq(&first.record, &second.record));
        assert_eq!((first.record.as_str(), first.version), ("stored", 1));
    }

    #[tokio::test]
    async fn finished_workflows_do_not_accumulate_under_remove() {
        let m = fast(Duration::from_secs(60), Retention::Remove);
        for i in 0..1000 {
            let id = format!("wf-{i}");
            let lease = m.lock(&id).await.unwrap().unwrap();
            let commit = Commit {
                release: true,
                finished: true,
                ..Commit::new(&id, "done".to_owned(), None, WriteMeta::new(&id, "s")).lease(Some(&lease))
            };
            m.commit(commit).await.unwrap();
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
    async fn a_held_lease_is_denied_at_once() {
        let m = fast(Duration::from_secs(60), Retention::Keep);
        let held = m.lock("x").await.unwrap().unwrap();
        assert!(m.lock("x").await.unwrap().is_none());
        let key = EventKey { source: "s", id: "e" };
        assert!(m.acquire("x", key, true).await.unwrap().is_none(), "acquire is denied too");
        m.unlock(&held).await.unwrap();
        assert!(m.acquire("x", key, true).await.unwrap().is_some());
    }
}
