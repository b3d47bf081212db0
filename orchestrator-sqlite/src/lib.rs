//! Embedded, durable workflow memory for the orchestrator, on SQLite.
//!
//! [`SqliteMemory`] implements [`Memory`] (compare-and-swap records, leases with TTL and fencing
//! tokens, the wake-up index, `produced` idempotency, retention) and [`Journal`] (each execution's
//! consumed event, produced events and record, written in the same transaction as the state).
//!
//! * **One file, several processes.** The database runs in WAL mode. Leases live in a table and
//!   are taken inside `BEGIN IMMEDIATE`, so processes sharing the file exclude each other; fencing
//!   tokens come from one counter row and keep growing even after a workflow's rows are deleted.
//! * **No blocking of the async runtime.** A dedicated writer thread owns the write connection,
//!   fed through a channel and answering through oneshot channels; reads run on a small pool of
//!   read connections in `tokio::task::spawn_blocking`. Lock retries sleep asynchronously.
//! * **Group commit.** The writer drains every queued operation (writes, locks, unlocks,
//!   cleanups), runs them in one transaction, commits once (one fsync with
//!   [`Synchronous::Full`]) and only then answers the callers: no caller is acknowledged before
//!   its commit is durable. Every operation checks (compare-and-swap, lease) before it changes
//!   anything, so a failed compare-and-swap or a stale lease leaves the others of its group
//!   committed; an operation failing after a change (an I/O error midway) rolls its whole group
//!   back. [`SqliteMemory::stats`] counts transactions and operations.
//! * **Versioned schema.** The library creates and migrates its tables (`PRAGMA user_version`);
//!   a file from a newer version is refused with [`OpenError::NewerSchema`].
//! * **Outbox.** [`SqliteMemory`] is also an [`Outbox`]: the events in flight, kept in the same
//!   file, so that a process killed mid-workflow loses none of them (wrap the broker's handlers
//!   in [`orchestrator::outbox::Outboxed`] and call [`orchestrator::outbox::redeliver`] at
//!   start-up).
//! * **Record cache.** The records this store commits are kept decoded (up to
//!   [`SqliteConfig::record_cache`] workflows), so the lifecycle's read before an execution
//!   ([`Memory::lookup`]) usually touches neither a read connection nor JSON. Another process's
//!   commit invalidates the cache (the writer checks `PRAGMA data_version` under the write
//!   lock); see [`Memory::lookup`] below for what that guarantees.
//! * **Retention.** [`Retention::Keep`], [`Retention::Remove`], [`Retention::RemoveAfter`] or
//!   [`Retention::Archive`] (moves a finished workflow's record and journal to archive tables).
//!
//! Records are stored as JSON (`serde_json`); times as milliseconds since the Unix epoch. A row
//! that cannot be decoded gives [`MemoryError::Backend`] with a [`SqliteError::Decode`] cause.
//!
//! The driver is `rusqlite` with its `bundled` SQLite. sqlx is not used: sqlx 0.9 and
//! rusqlite ≥ 0.40 link conflicting versions of `libsqlite3-sys`, and the PostgreSQL backend is
//! to use `tokio-postgres`, so the workspace keeps a single `libsqlite3-sys`.
//!
//! ```
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # tokio::runtime::Builder::new_current_thread().enable_time().build()?.block_on(async {
//! use std::time::Duration;
//! use orchestrator::memory::{Journal, JournalEntry, Memory, WriteMeta};
//! use orchestrator_sqlite::{Retention, SqliteConfig, SqliteMemory};
//!
//! let dir = tempfile::tempdir()?;
//! let memory: SqliteMemory<String> = SqliteConfig::new(dir.path().join("workflows.db"))
//!     .lease_ttl(Duration::from_secs(30))
//!     .retention(Retention::Archive)
//!     .open()?;
//!
//! let lease = memory.lock("wf-1").await?.expect("a free lease");
//! let entry = JournalEntry { at: std::time::SystemTime::now(), consumed: None, produced: &[] };
//! let meta = WriteMeta { entry: Some(entry), ..WriteMeta::new("wf-1", "arvo.orc.demo") };
//! let v1 = memory.write("wf-1", &"started".to_owned(), None, Some(&lease), &meta).await?;
//! // A writer with a stale view cannot overwrite.
//! assert!(memory.write("wf-1", &"other".to_owned(), None, Some(&lease), &meta).await.is_err());
//! memory.write("wf-1", &"done".to_owned(), Some(v1), Some(&lease), &meta).await?;
//! memory.unlock(&lease).await?;
//!
//! assert_eq!(memory.read("wf-1").await?.map(|s| s.record), Some("done".to_owned()));
//! assert_eq!(memory.history("wf-1", 0, 10).await?.len(), 2);
//!
//! memory.cleanup("wf-1").await?; // archived
//! assert!(memory.read("wf-1").await?.is_none());
//! assert_eq!(memory.archived("wf-1").await?.map(|s| s.version), Some(2));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # })
//! # }
//! ```

mod cache;
mod checkpoint;
mod config;
mod error;
mod ops;
mod reads;
mod schema;
mod time;
mod writer;

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{Duration, SystemTime};

use orchestrator::event::Event;
use orchestrator::memory::{
    Journal, JournalRecord, Lease, Lookup, Materialized, Memory, MemoryError, Stored, Wake, WriteMeta,
};
use orchestrator::outbox::{Outbox, Pending};
use rusqlite::Connection;
use serde::Serialize;
use serde::de::DeserializeOwned;

pub use config::{Retention, SqliteConfig, Synchronous};
pub use error::{OpenError, SqliteError};
pub use schema::SCHEMA_VERSION;
pub use writer::Stats;

use cache::{Committed, Epoch, RecordCache};
use error::{backend, check_id};
use reads::{Readers, Tables, read};
use writer::{Counters, Writer};

/// Durable workflow memory in one SQLite file (see the [crate documentation](crate)).
///
/// `R` is the record type, stored as JSON. Dropping the store stops its writer thread once the
/// operations already queued are answered (the drop waits for that).
///
/// An operation is queued when its future is first polled; dropping the future afterwards does
/// not withdraw it: a write may still commit, and a lease may still be granted (it then lapses
/// after its TTL).
pub struct SqliteMemory<R> {
    // Declared first: dropped (and joined) before the readers.
    writer: Writer,
    _checkpointer: checkpoint::Checkpointer,
    readers: Arc<Readers>,
    counters: Arc<Counters>,
    cache: RecordCache<R>,
    epoch: Arc<Epoch>,
    /// When a cleanup last swept (ms since the Unix epoch, on the writer's clock).
    last_sweep_ms: Arc<AtomicI64>,
    config: SqliteConfig,
}

impl<R> std::fmt::Debug for SqliteMemory<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteMemory").field("config", &self.config).field("stats", &self.stats()).finish()
    }
}

fn open_connection(config: &SqliteConfig) -> Result<Connection, OpenError> {
    let open = |source| OpenError::Open { path: config.path.clone(), source };
    let conn = Connection::open(&config.path).map_err(open)?;
    conn.busy_timeout(config.busy_timeout).map_err(open)?;
    let mode: String = conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0)).map_err(open)?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(OpenError::NoWal { path: config.path.clone(), mode });
    }
    conn.pragma_update(None, "synchronous", config.synchronous.pragma()).map_err(open)?;
    tune(&conn).map_err(open)?;
    Ok(conn)
}

/// Cache and memory-mapping settings of every connection: a 64 MiB page cache and up to 256 MiB
/// of the file mapped, so hot workflows are read without a system call per page. The query
/// planner stability guarantee keeps each cached statement's plan: without it SQLite may
/// re-prepare a statement whenever a bound value could change the plan (partial indexes). The
/// statement cache holds every statement the store runs (rusqlite keeps 16 by default, fewer
/// than the writer uses, which would re-prepare some of them at every operation).
pub(crate) fn tune(conn: &Connection) -> rusqlite::Result<()> {
    conn.set_prepared_statement_cache_capacity(64);
    conn.set_db_config(rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)?;
    conn.pragma_update(None, "cache_size", -65_536)?;
    conn.pragma_update(None, "mmap_size", 268_435_456)?;
    conn.pragma_update(None, "temp_store", "memory")
}

impl<R> SqliteMemory<R> {
    /// Opens the database at `config.path`, creating it or migrating its schema to
    /// [`SCHEMA_VERSION`], and starts the writer thread. Blocks while it does (a short, one-time
    /// cost: call it at start-up).
    pub fn open(config: SqliteConfig) -> Result<Self, OpenError> {
        let mut conn = open_connection(&config)?;
        schema::migrate(&mut conn, &config.path)?;
        if let Some(owner) = &config.owner {
            // This owner's previous run is gone (owner names are unique to one live process):
            // what it held is free now rather than after the leases' TTL.
            ops::release_owner(&conn, owner)
                .map_err(|source| OpenError::Open { path: config.path.clone(), source })?;
        }
        // The checkpointer thread copies the WAL back; the writer only steps in if it lags.
        conn.pragma_update(None, "wal_autocheckpoint", checkpoint::WRITER_AUTOCHECKPOINT)
            .map_err(|source| OpenError::Open { path: config.path.clone(), source })?;
        let checkpointer =
            checkpoint::Checkpointer::start(open_connection(&config)?, config.checkpoint_every)
                .map_err(OpenError::Thread)?;
        let readers = Readers::new(config.path.clone(), config.busy_timeout, config.readers);
        let first_reader =
            readers.connect().map_err(|source| OpenError::Open { path: config.path.clone(), source })?;
        readers.put(first_reader);
        let counters = Arc::new(Counters::default());
        let epoch = Arc::new(Epoch::default());
        let writer = Writer::start(conn, config.max_group, Arc::clone(&counters), Arc::clone(&epoch))
            .map_err(OpenError::Thread)?;
        Ok(Self {
            writer,
            _checkpointer: checkpointer,
            readers: Arc::new(readers),
            counters,
            cache: RecordCache::new(config.record_cache, Arc::clone(&epoch)),
            epoch,
            last_sweep_ms: Arc::new(AtomicI64::new(i64::MIN)),
            config,
        })
    }

    /// Opens `path` with the default settings.
    pub fn open_path(path: impl AsRef<Path>) -> Result<Self, OpenError> {
        Self::open(SqliteConfig::new(path))
    }

    /// The settings.
    pub fn config(&self) -> &SqliteConfig {
        &self.config
    }

    /// The group-commit counters since the store was opened.
    pub fn stats(&self) -> Stats {
        self.counters.snapshot()
    }

    /// Deletes the workflows whose [`Retention::RemoveAfter`] delay has passed and the lapsed
    /// leases; returns how many workflows were deleted. `cleanup` does this too.
    pub async fn sweep(&self) -> Result<usize, MemoryError> {
        let epoch = Arc::clone(&self.epoch);
        self.writer
            .submit("(sweep)", move |conn, now| {
                let removed = ops::sweep(conn, now).map_err(|e| backend("(sweep)", e))?;
                forget_all_if(removed > 0, &epoch);
                Ok(removed)
            })
            .await
    }

    /// Submits a write; the new version and the epoch it committed in.
    async fn submit_write(&self, id: &str, op: ops::WriteOp) -> Result<(u64, u64), MemoryError> {
        let epoch = Arc::clone(&self.epoch);
        self.writer.submit(id, move |conn, now| Ok((ops::write(conn, &op, now)?, epoch.current()))).await
    }
}

impl<R: DeserializeOwned + Send + 'static> SqliteMemory<R> {
    /// The archived record of workflow `id` ([`Retention::Archive`]), if any.
    pub async fn archived(&self, id: &str) -> Result<Option<Stored<R>>, MemoryError> {
        check_id(id)?;
        read(&self.readers, id, |conn, id| reads::record(conn, id, Tables::Archive)).await
    }

    /// Up to `limit` archived journal entries of workflow `id` after version `after`, oldest first.
    pub async fn archived_history(
        &self,
        id: &str,
        after: u64,
        limit: usize,
    ) -> Result<Vec<JournalRecord<R>>, MemoryError> {
        check_id(id)?;
        read(&self.readers, id, move |conn, id| reads::history(conn, id, after, limit, Tables::Archive)).await
    }
}

/// Invalidates the record cache when `removed`: deleted workflows must not be answered from it.
fn forget_all_if(removed: bool, epoch: &Epoch) {
    if removed {
        epoch.advance();
    }
}

fn encode<T: Serialize + ?Sized>(id: &str, what: &'static str, value: &T) -> Result<String, MemoryError> {
    serde_json::to_string(value).map_err(|source| backend(id, SqliteError::Encode { what, source }))
}

fn write_op<R: Serialize>(
    id: &str,
    record: &R,
    prev: Option<u64>,
    lease: Option<&Lease>,
    meta: &WriteMeta<'_>,
) -> Result<ops::WriteOp, MemoryError> {
    let entry = match &meta.entry {
        None => None,
        Some(entry) => Some(ops::EntryRow {
            at_ms: time::to_ms(entry.at),
            consumed_event_id: entry.consumed.map(|e| e.id().to_owned()),
            consumed: entry.consumed.map(|e| encode(id, "consumed event", e)).transpose()?,
            produced: encode(id, "produced events", entry.produced)?,
        }),
    };
    Ok(ops::WriteOp {
        id: id.to_owned(),
        record: encode(id, "record", record)?,
        prev,
        lease: lease.map(|l| (l.id.clone(), l.token)),
        parent_subject: match meta.parent_subject {
            Materialized::Pending => None,
            Materialized::Resolved(parent) => Some(parent.map(str::to_owned)),
        },
        initiator: match meta.initiator {
            Materialized::Pending => None,
            Materialized::Resolved(initiator) => Some(initiator.to_owned()),
        },
        source: meta.source.to_owned(),
        wake_at_ms: meta.wake_at.map(time::to_ms_ceil),
        entry,
    })
}

/// The wait after `delay`: times `backoff` (at least 1), never longer than a lease lasts (nor
/// a panic on an absurd factor).
fn next_delay(delay: Duration, backoff: f64, ttl: Duration) -> Duration {
    let cap = ttl.max(delay);
    let factor = if backoff.is_finite() { backoff.max(1.0) } else { 1.0 };
    Duration::try_from_secs_f64(delay.as_secs_f64() * factor).map_or(cap, |next| next.min(cap))
}

impl<R> Memory<R> for SqliteMemory<R>
where
    R: Serialize + DeserializeOwned + Send + Sync + 'static,
{
    async fn read(&self, id: &str) -> Result<Option<Stored<R>>, MemoryError> {
        check_id(id)?;
        read(&self.readers, id, |conn, id| reads::record(conn, id, Tables::Live)).await
    }

    async fn write(
        &self,
        id: &str,
        record: &R,
        prev: Option<u64>,
        lease: Option<&Lease>,
        meta: &WriteMeta<'_>,
    ) -> Result<u64, MemoryError> {
        check_id(id)?;
        let op = write_op(id, record, prev, lease, meta)?;
        // Only an owned record can be cached; the cached one is outdated either way.
        let written = self.submit_write(id, op).await;
        self.cache.forget(id);
        written.map(|(version, _)| version)
    }

    async fn write_owned(
        &self,
        id: &str,
        record: R,
        prev: Option<u64>,
        lease: Option<&Lease>,
        meta: &WriteMeta<'_>,
    ) -> Result<u64, MemoryError> {
        check_id(id)?;
        let op = write_op(id, &record, prev, lease, meta)?;
        match self.submit_write(id, op).await {
            Ok((version, epoch)) => {
                let consumed = meta.entry.as_ref().and_then(|e| e.consumed).map(Event::id);
                self.cache.committed(Committed { id, record, prev, version, epoch, consumed });
                Ok(version)
            }
            Err(error) => {
                self.cache.forget(id);
                Err(error)
            }
        }
    }

    async fn lock(&self, id: &str) -> Result<Option<Lease>, MemoryError> {
        check_id(id)?;
        let ttl = self.config.lease_ttl;
        let mut delay = self.config.retry_delay;
        for attempt in 0..=self.config.lock_retries {
            let owned = id.to_owned();
            let owner = self.config.owner.clone();
            let lease = self
                .writer
                .submit(id, move |conn, now| ops::lock(conn, &owned, owner.as_deref(), ttl, now))
                .await?;
            if lease.is_some() {
                return Ok(lease);
            }
            if attempt < self.config.lock_retries {
                tokio::time::sleep(delay).await;
                delay = next_delay(delay, self.config.backoff, ttl);
            }
        }
        Ok(None)
    }

    async fn unlock(&self, lease: &Lease) -> Result<bool, MemoryError> {
        check_id(&lease.id)?;
        let (id, token) = (lease.id.clone(), lease.token);
        self.writer.submit(&lease.id, move |conn, now| ops::unlock(conn, &id, token, now)).await
    }

    async fn due(&self, now: SystemTime, limit: usize) -> Result<Vec<Wake>, MemoryError> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        let now = time::to_ms(now);
        read(&self.readers, "(due)", move |conn, _| reads::due(conn, now, limit)).await
    }

    async fn produced(&self, id: &str, event_id: &str) -> Result<Option<Vec<Event>>, MemoryError> {
        check_id(id)?;
        let event_id = event_id.to_owned();
        read(&self.readers, id, move |conn, id| reads::produced(conn, id, &event_id)).await
    }

    /// The record from the record cache when it has it (see the [crate documentation](crate)):
    /// in one process, or under a lease, the current record; without a lease, across
    /// processes, possibly one that another process has since replaced, which the
    /// compare-and-swap write after the execution then refuses. Otherwise, and for the journal
    /// unless the cache knows the event was never consumed, one read on a read connection.
    async fn lookup(&self, id: &str, event_id: &str) -> Result<Lookup<R>, MemoryError> {
        check_id(id)?;
        if let Some(hit) = self.cache.get(id, event_id) {
            let produced = if hit.not_consumed { None } else { self.produced(id, event_id).await? };
            return Ok(Lookup { stored: Some(hit.stored), produced });
        }
        let event_id = event_id.to_owned();
        // One read connection, one hand-off to the blocking pool. No snapshot is needed: the
        // journal entry of an event is committed with the record that consumed it, so an entry
        // found is the answer whatever the record read before it.
        read(&self.readers, id, move |conn, id| {
            let stored = reads::record::<R>(conn, id, Tables::Live)?
                .map(|Stored { record, version }| Stored { record: Arc::new(record), version });
            let produced = match stored {
                Some(_) => reads::produced(conn, id, &event_id)?,
                None => None,
            };
            Ok(Lookup { stored, produced })
        })
        .await
    }

    async fn cleanup(&self, id: &str) -> Result<(), MemoryError> {
        check_id(id)?;
        let retention = self.config.retention;
        let owned = id.to_owned();
        let epoch = Arc::clone(&self.epoch);
        let last_sweep = Arc::clone(&self.last_sweep_ms);
        let cleaned = self
            .writer
            .submit(id, move |conn, now| {
                // Once per millisecond is enough: the cleanups of one group share a sweep.
                let sweep = last_sweep.swap(now, Ordering::Relaxed) != now;
                let swept = ops::cleanup(conn, &owned, retention, now, sweep)?;
                forget_all_if(swept > 0, &epoch);
                Ok(())
            })
            .await;
        // A finished workflow is rarely read again; with `Remove` or `Archive` it is gone.
        self.cache.forget(id);
        cleaned
    }
}

impl<R: Send + Sync> Outbox for SqliteMemory<R> {
    async fn advance(&self, consumed: Option<&str>, produced: &[Event]) -> Result<(), MemoryError> {
        let key = consumed.unwrap_or("(outbox)");
        let produced = produced
            .iter()
            .map(|e| Ok((e.id().to_owned(), encode(e.id(), "outbox event", e)?)))
            .collect::<Result<Vec<_>, MemoryError>>()?;
        let op = ops::AdvanceOp { consumed: consumed.map(str::to_owned), produced };
        self.writer.submit(key, move |conn, now| ops::advance(conn, &op, now)).await
    }

    async fn pending(&self, after: u64, limit: usize) -> Result<Vec<Pending>, MemoryError> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        read(&self.readers, "(outbox)", move |conn, _| reads::pending(conn, after, limit)).await
    }
}

impl<R> Journal<R> for SqliteMemory<R>
where
    R: Serialize + DeserializeOwned + Send + Sync + 'static,
{
    async fn history(
        &self,
        id: &str,
        after: u64,
        limit: usize,
    ) -> Result<Vec<JournalRecord<R>>, MemoryError> {
        check_id(id)?;
        read(&self.readers, id, move |conn, id| reads::history(conn, id, after, limit, Tables::Live)).await
    }

    async fn entry(&self, id: &str, version: u64) -> Result<Option<JournalRecord<R>>, MemoryError> {
        check_id(id)?;
        read(&self.readers, id, move |conn, id| reads::entry(conn, id, version)).await
    }

    async fn children(&self, id: &str) -> Result<Vec<String>, MemoryError> {
        check_id(id)?;
        read(&self.readers, id, reads::children).await
    }

    async fn parent(&self, id: &str) -> Result<Option<String>, MemoryError> {
        check_id(id)?;
        read(&self.readers, id, reads::parent).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lock_backoff_is_bounded_and_never_panics() {
        let ttl = Duration::from_secs(2);
        let d = Duration::from_millis(100);
        assert_eq!(next_delay(d, 1.5, ttl), Duration::from_millis(150));
        assert_eq!(next_delay(d, 0.5, ttl), d, "a factor below 1 keeps the delay");
        assert_eq!(next_delay(d, f64::NAN, ttl), d);
        assert_eq!(next_delay(d, f64::INFINITY, ttl), d);
        assert_eq!(next_delay(d, 1e300, ttl), ttl, "capped at the lease TTL");
        assert_eq!(next_delay(Duration::MAX, 2.0, ttl), Duration::MAX, "never shorter than the delay given");
    }

    #[test]
    fn times_round_trip_and_wake_ups_round_up() {
        let t = SystemTime::UNIX_EPOCH + Duration::from_millis(1_700_000_000_123);
        assert_eq!(time::from_ms("t", time::to_ms(t)).ok(), Some(t));
        let later = t + Duration::from_micros(1);
        assert_eq!(time::to_ms_ceil(later), time::to_ms(t) + 1);
        assert_eq!(time::to_ms_ceil(t), time::to_ms(t));
        let before = SystemTime::UNIX_EPOCH - Duration::from_millis(5);
        assert_eq!(time::from_ms("t", time::to_ms(before)).ok(), Some(before));
    }
}
