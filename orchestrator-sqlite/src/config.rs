//! [`SqliteConfig`]: where the database lives and how the store behaves.

use std::path::{Path, PathBuf};
use std::time::Duration;

use orchestrator::memory::{NodeId, Retention};

use crate::{OpenError, SqliteMemory};

/// SQLite's `PRAGMA synchronous` on the write connection (the database is always in WAL mode).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Synchronous {
    /// `FULL`: every commit is flushed to disk before it is acknowledged; a power loss loses no
    /// acknowledged write. The default.
    #[default]
    Full,
    /// `NORMAL`: in WAL mode the database stays consistent after a crash, but the last commits
    /// acknowledged before a power loss (not a process crash) may be lost.
    Normal,
}

impl Synchronous {
    pub(crate) fn pragma(self) -> &'static str {
        match self {
            Self::Full => "FULL",
            Self::Normal => "NORMAL",
        }
    }
}

/// Settings of a [`SqliteMemory`]: a 120 s lease (as `InMemoryConfig`), finished workflows kept
/// ([`Retention::Keep`]), commits flushed to disk ([`Synchronous::Full`]).
///
/// A lock is one attempt (`Ok(None)` when the lease is held elsewhere): the caller (the
/// runtime's dispatcher) decides when to try again.
///
/// ```
/// use std::time::Duration;
/// use orchestrator_sqlite::{Retention, SqliteConfig, Synchronous};
/// let config = SqliteConfig::new("workflows.db")
///     .synchronous(Synchronous::Normal)
///     .lease_ttl(Duration::from_secs(30))
///     .retention(Retention::Archive)
///     .owner("node-a")
///     .busy_timeout(Duration::from_secs(10));
/// assert_eq!(config.retention, Retention::Archive);
/// ```
#[derive(Debug, Clone)]
pub struct SqliteConfig {
    /// The database file (created if missing, with its `-wal` and `-shm` companions beside it).
    pub path: PathBuf,
    /// Durability of a commit (default [`Synchronous::Full`]).
    pub synchronous: Synchronous,
    /// How long a lease lasts unless released.
    pub lease_ttl: Duration,
    /// What happens to a finished workflow (a commit with `finished`, or `cleanup`), in the
    /// same transaction: [`Retention::Keep`] (the default) keeps its record and journal;
    /// [`Retention::Remove`] deletes them; [`Retention::RemoveAfter`] deletes them once the
    /// delay has passed, at a later finishing commit or cleanup (of any workflow, by any process
    /// sharing the file) or at [`SqliteMemory::sweep`]; [`Retention::Archive`] moves them to
    /// the archive tables (`workflows_archive`, `journal_archive`), readable with
    /// [`SqliteMemory::archived`] and [`SqliteMemory::archived_history`] (the archive keeps the
    /// last finished run of each workflow id).
    pub retention: Retention,
    /// How long a statement waits for another process's write lock before failing.
    pub busy_timeout: Duration,
    /// The most operations committed in one group transaction.
    pub max_group: usize,
    /// How many idle read connections are kept open.
    pub readers: usize,
    /// How many workflows' records the write-through record cache keeps (0 disables it): the
    /// records this store committed, decoded, so that the read before an execution needs no
    /// SQLite read (see the [crate documentation](crate)). Finished workflows leave it at
    /// cleanup.
    pub record_cache: usize,
    /// The name this store's leases are held under, unique to one live process at a time (a
    /// node or worker name that stays the same across restarts). Opening the store releases
    /// the leases a previous run under the same name held: after a crash, its workflows are
    /// free at once instead of after `lease_ttl`. `None` (the default): leases only lapse.
    pub owner: Option<String>,
    /// How often the checkpointer thread copies the write-ahead log back into the database file
    /// (the writer thread then only appends and commits).
    pub checkpoint_every: Duration,
}

impl SqliteConfig {
    /// The default settings for the database file at `path`.
    pub fn new(path: impl AsRef<Path>) -> Self {
        Self {
            path: path.as_ref().to_path_buf(),
            synchronous: Synchronous::Full,
            lease_ttl: Duration::from_secs(120),
            retention: Retention::Keep,
            busy_timeout: Duration::from_secs(5),
            max_group: 1024,
            readers: 4,
            record_cache: 10_000,
            checkpoint_every: Duration::from_millis(100),
            owner: None,
        }
    }

    /// Sets [`SqliteConfig::synchronous`].
    #[must_use]
    pub fn synchronous(mut self, synchronous: Synchronous) -> Self {
        self.synchronous = synchronous;
        self
    }

    /// Sets [`SqliteConfig::lease_ttl`].
    #[must_use]
    pub fn lease_ttl(mut self, ttl: Duration) -> Self {
        self.lease_ttl = ttl;
        self
    }

    /// Sets [`SqliteConfig::retention`].
    #[must_use]
    pub fn retention(mut self, retention: Retention) -> Self {
        self.retention = retention;
        self
    }

    /// Sets [`SqliteConfig::busy_timeout`].
    #[must_use]
    pub fn busy_timeout(mut self, timeout: Duration) -> Self {
        self.busy_timeout = timeout;
        self
    }

    /// Sets [`SqliteConfig::max_group`] (at least 1).
    #[must_use]
    pub fn max_group(mut self, max: usize) -> Self {
        self.max_group = max.max(1);
        self
    }

    /// Sets [`SqliteConfig::readers`].
    #[must_use]
    pub fn readers(mut self, readers: usize) -> Self {
        self.readers = readers;
        self
    }

    /// Sets [`SqliteConfig::record_cache`].
    #[must_use]
    pub fn record_cache(mut self, workflows: usize) -> Self {
        self.record_cache = workflows;
        self
    }

    /// Sets [`SqliteConfig::owner`].
    #[must_use]
    pub fn owner(mut self, owner: impl Into<String>) -> Self {
        self.owner = Some(owner.into());
        self
    }

    /// Sets [`SqliteConfig::owner`] to the name of `node` (the runtime's node identity).
    #[must_use]
    pub fn node(self, node: &NodeId) -> Self {
        self.owner(node.as_str())
    }

    /// Sets [`SqliteConfig::checkpoint_every`] (at least 1 ms).
    #[must_use]
    pub fn checkpoint_every(mut self, every: Duration) -> Self {
        self.checkpoint_every = every.max(Duration::from_millis(1));
        self
    }

    /// Opens (creating or migrating) the database: see [`SqliteMemory::open`].
    pub fn open<R>(self) -> Result<SqliteMemory<R>, OpenError> {
        SqliteMemory::open(self)
    }
}
