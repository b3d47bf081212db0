//! [`SqliteMemory`]: opening the database (connections, tuning, migration), the writer,
//! checkpointer and read pool, and what the store offers beside the traits (stats, sweep, the
//! archive).

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use orchestrator::memory::journal_codec;
use orchestrator::memory::{EventKey, JournalRecord, Materialized, MemoryError, Stored, WriteMeta, check_id};
use rusqlite::Connection;
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::cache::{Epoch, RecordCache};
use crate::error::{OpenError, SqliteError, backend};
use crate::reads::{Readers, Tables, read};
use crate::writer::{Counters, Stats, Writer};
use crate::{SqliteConfig, checkpoint, ops, reads, record_column, schema, time};

/// Durable workflow memory in one SQLite file (see the [crate documentation](crate)).
///
/// `R` is the record type, stored as JSON. Dropping the store stops its writer thread once the
/// operations already queued are answered (the drop waits for that).
///
/// An operation is queued when its future is first polled; dropping the future afterwards does
/// not withdraw it: a commit may still be stored, and a lease may still be granted (it then
/// lapses after its TTL).
pub struct SqliteMemory<R> {
    // Declared first: dropped (and joined) before the readers.
    pub(crate) writer: Writer,
    _checkpointer: checkpoint::Checkpointer,
    pub(crate) readers: Arc<Readers>,
    counters: Arc<Counters>,
    pub(crate) cache: RecordCache<R>,
    pub(crate) epoch: Arc<Epoch>,
    /// When a retention last swept (ms since the Unix epoch, on the writer's clock).
    last_sweep_ms: Arc<AtomicI64>,
    pub(crate) config: SqliteConfig,
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
    /// [`SCHEMA_VERSION`](crate::SCHEMA_VERSION), and starts the writer thread. Blocks while it
    /// does (a short, one-time cost: call it at start-up).
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

    /// The group-commit counters since the store was opened: each operation submitted to the
    /// writer thread (an `acquire` with a lock, a `commit`, a `lock`…) counts one.
    pub fn stats(&self) -> Stats {
        self.counters.snapshot()
    }

    /// Deletes the workflows whose [`Retention::RemoveAfter`](crate::Retention::RemoveAfter)
    /// delay has passed and the lapsed leases; returns how many workflows were deleted. A
    /// finishing commit and `cleanup` do this too.
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

    /// Whether an operation of the writer at `now` should also sweep: once per millisecond is
    /// enough (the retentions of one group share a sweep).
    pub(crate) fn sweep_flag(&self) -> Arc<AtomicI64> {
        Arc::clone(&self.last_sweep_ms)
    }
}

/// Whether to sweep at `now` (see [`SqliteMemory::sweep_flag`]).
pub(crate) fn should_sweep(last: &AtomicI64, now: i64) -> bool {
    last.swap(now, Ordering::Relaxed) != now
}

impl<R: DeserializeOwned + Send + 'static> SqliteMemory<R> {
    /// The archived record of workflow `id` ([`Retention::Archive`](crate::Retention::Archive)),
    /// if any.
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
pub(crate) fn forget_all_if(removed: bool, epoch: &Epoch) {
    if removed {
        epoch.advance();
    }
}

/// `value` as JSON, or a permanent backend error.
pub(crate) fn encode<T: Serialize + ?Sized>(
    id: &str,
    what: &'static str,
    value: &T,
) -> Result<String, MemoryError> {
    serde_json::to_string(value).map_err(|source| backend(id, SqliteError::Encode { what, source }))
}

/// A write, encoded for the writer thread. `produced_json` holds the text of each event the
/// journal entry produced (none without an entry).
pub(crate) fn write_op<R: Serialize>(
    id: &str,
    record: &R,
    prev: Option<u64>,
    lease: Option<(&str, u64)>,
    meta: &WriteMeta<'_>,
    produced_json: &[String],
) -> Result<ops::WriteOp, MemoryError> {
    // With a journal entry, the record as a JSON value too (the writer diffs it against the
    // previous one); its text is that value's.
    let (entry, record) = match &meta.entry {
        None => (None, encode(id, "record", record)?),
        Some(entry) => {
            let value = serde_json::to_value(record)
                .map_err(|source| backend(id, SqliteError::Encode { what: "record", source }))?;
            let json = encode(id, "record", &value)?;
            let consumed = entry.consumed.map(|e| encode(id, "consumed event", e)).transpose()?;
            let events = journal_codec::encode_events_texts(consumed.as_deref(), produced_json, id);
            let row = ops::EntryRow {
                at_ms: time::to_ms(entry.at),
                consumed_key: entry.consumed.map(|e| crate::consumed_key::consumed_key(EventKey::of(e))),
                events,
                record: value,
            };
            (Some(row), json)
        }
    };
    Ok(ops::WriteOp {
        id: id.to_owned(),
        stored_record: record_column::encode(&record, id, entry.is_some()),
        // A first write's journal row is a snapshot: made here rather than on the writer thread.
        snapshot: (entry.is_some() && prev.is_none()).then(|| record_column::snapshot(&record, id)),
        record,
        prev,
        lease: lease.map(|(id, token)| (id.to_owned(), token)),
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
        status: meta.status.as_str(),
        // Parsed once, when the workflow is created (a write that must find no record).
        columns: if prev.is_none() { meta.subject_columns(id) } else { None },
    })
}
