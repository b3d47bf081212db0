//! [`PgStore`]: the [`Memory`], [`Journal`] and [`Outbox`] implementations.

use std::marker::PhantomData;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use deadpool_postgres::{GenericClient, Manager, ManagerConfig, Pool, RecyclingMethod, Runtime};
use orchestrator::event::Event;
use orchestrator::memory::{
    Acquired, Catalog, Commit, Definition, DefinitionKind, DynCatalog, EventKey, Journal, JournalRecord,
    Lease, Materialized, Memory, MemoryError, NodeId, Page, Recorded, Retention, Stored, SubjectColumns,
    Wake, WorkflowFilter, WorkflowIndex, WorkflowState, WorkflowSummary, check_id, from_unix_ms, unix_ms,
};
use orchestrator::outbox::{Outbox, Pending};
use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio_postgres::NoTls;
use tokio_postgres::types::ToSql;

use crate::error::{OpenError, PgError, backend};
use crate::group::{GroupCommit, Param};
use crate::journal::{self, Base, Bases};
use crate::queries as q;
use crate::queue::signals::Signals;
use crate::queue::{PgQueue, QueueConfig, Shared};
use crate::schema::{migrate, quote_ident};

/// How long a caller waits for a pooled connection, or for a new connection to be made, before
/// a transient [`MemoryError::Backend`].
pub const POOL_TIMEOUT: Duration = Duration::from_secs(10);

/// How to open a [`PgStore`].
#[derive(Debug, Clone)]
pub struct PgConfig {
    /// The connection URL (`postgres://user:password@host:port/database`).
    pub url: String,
    /// The PostgreSQL schema that holds every table (created if missing).
    pub schema: String,
    /// How long a lease lasts unless renewed (judged by the database's clock).
    pub lease_ttl: Duration,
    /// What happens to finished workflows.
    pub retention: Retention,
    /// The most connections the pool opens.
    pub pool_size: usize,
    /// How many of them at most settle steps at once (default 1). Settlements (orchestrator
    /// commits, service acks) that wait while the committers are busy are committed together,
    /// in one transaction per committer: fewer, larger transactions. More committers pay when
    /// more steps are in flight: on a 2-core server with 1,000 workflows in flight, 3 committers,
    /// a `pool_size` of 16 and 128 node workers did about a fifth more events per second than the
    /// defaults (BENCHMARKS.md, session 12); more committers alone did not.
    pub committers: usize,
    /// This node's identity, recorded with each lease it holds and each queue claim its queues
    /// make. It must name one live process at a time: opening frees every lease and claim held
    /// under it (what a previous run of this node left when it stopped or crashed), so that its
    /// workflows and events need not wait for them to lapse.
    pub node: NodeId,
}

impl PgConfig {
    /// A configuration for `url` with the defaults: schema `orchestrator`, leases of 30 s,
    /// [`Retention::Keep`], 8 connections of which 1 commits, and a generated node id.
    pub fn new(url: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            schema: "orchestrator".to_owned(),
            lease_ttl: Duration::from_secs(30),
            retention: Retention::Keep,
            pool_size: 8,
            committers: 1,
            node: NodeId::generate(),
        }
    }
}

/// A workflow store on PostgreSQL (see the [crate documentation](crate)). `R` is the record
/// type, stored as JSON text (and in the journal, compactly: see
/// [`orchestrator::memory::journal_codec`]).
pub struct PgStore<R> {
    pool: Pool,
    /// The quoted schema name.
    schema: Arc<str>,
    /// The schema name as given.
    schema_name: String,
    /// The queue's identity: server, database and schema.
    queue_id: Arc<str>,
    /// The connection settings (for a queue's listening connection).
    pg: tokio_postgres::Config,
    /// Wakes the idle consumers of this store's queues when a commit enqueues.
    wake: Arc<Signals>,
    lease_ttl: Duration,
    retention: Retention,
    node: NodeId,
    /// Gathers the commits (and the queue's acks) of concurrent steps into shared transactions.
    group: GroupCommit,
    /// `COMMIT` for this schema.
    commit_sql: Arc<str>,
    /// The records read by steps, for their commits' journal rows (see `crate::journal`).
    bases: Bases,
    _record: PhantomData<fn() -> R>,
}

impl<R> std::fmt::Debug for PgStore<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgStore")
            .field("schema", &self.schema)
            .field("lease_ttl", &self.lease_ttl)
            .field("retention", &self.retention)
            .field("node", &self.node)
            .finish_non_exhaustive()
    }
}

fn ms_i64(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

fn time_ms(t: SystemTime) -> i64 {
    i64::try_from(unix_ms(t)).unwrap_or(i64::MAX)
}

fn to_u64(id: &str, what: &'static str, v: i64) -> Result<u64, MemoryError> {
    u64::try_from(v).map_err(|_| backend(id, PgError::Invalid { what, value: v }))
}

fn to_i64(id: &str, what: &'static str, v: u64) -> Result<i64, MemoryError> {
    i64::try_from(v).map_err(|_| backend(id, PgError::Invalid { what, value: i64::MAX }))
}

pub(crate) fn encode<T: Serialize + ?Sized>(
    id: &str,
    what: &'static str,
    value: &T,
) -> Result<String, MemoryError> {
    serde_json::to_string(value).map_err(|source| backend(id, PgError::Codec { what, source }))
}

pub(crate) fn decode<T: DeserializeOwned>(id: &str, what: &'static str, raw: &str) -> Result<T, MemoryError> {
    serde_json::from_str(raw).map_err(|source| backend(id, PgError::Codec { what, source }))
}

impl<R> PgStore<R> {
    /// Connects, creates the schema and its tables if missing and applies the migrations this
    /// version needs. A database whose schema is newer than this crate's is refused with
    /// [`OpenError::NewerSchema`].
    pub async fn open(config: PgConfig) -> Result<Self, OpenError> {
        let pg: tokio_postgres::Config = config.url.parse().map_err(OpenError::Url)?;
        let queue_id = queue_identity(&pg, &config.schema);
        let manager = Manager::from_config(
            pg.clone(),
            NoTls,
            ManagerConfig { recycling_method: RecyclingMethod::Fast },
        );
        let pool = Pool::builder(manager)
            .max_size(config.pool_size.max(1))
            .runtime(Runtime::Tokio1)
            .wait_timeout(Some(POOL_TIMEOUT))
            .create_timeout(Some(POOL_TIMEOUT))
            .build()
            .map_err(|e| OpenError::Pool(e.to_string()))?;
        {
            let mut client = pool.get().await.map_err(|e| OpenError::Pool(e.to_string()))?;
            let client: &mut tokio_postgres::Client = &mut client;
            migrate(client, &config.schema).await?;
            let release = q::RELEASE_NODE.replace("{s}", &quote_ident(&config.schema));
            client.execute(&release, &[&config.node.as_str()]).await.map_err(OpenError::Migration)?;
            let release = q::RELEASE_CLAIMS.replace("{s}", &quote_ident(&config.schema));
            client.execute(&release, &[&config.node.as_str()]).await.map_err(OpenError::Migration)?;
        }
        let wake = Arc::new(Signals::default());
        let group = GroupCommit::start(pool.clone(), config.committers.clamp(1, config.pool_size.max(1)));
        let commit_sql: Arc<str> = q::COMMIT.replace("{s}", &quote_ident(&config.schema)).into();
        Ok(Self {
            pool,
            schema: quote_ident(&config.schema).into(),
            schema_name: config.schema.clone(),
            queue_id: queue_id.into(),
            pg,
            wake,
            lease_ttl: config.lease_ttl,
            retention: config.retention,
            node: config.node,
            group,
            commit_sql,
            bases: Bases::default(),
            _record: PhantomData,
        })
    }

    /// The event queue in this store's schema: a [`Transport`](orchestrator::transport::Transport)
    /// whose queue is this store's outbox (see [`crate::queue`]). It shares the store's
    /// connection pool; several queues (in several processes) over one schema share the work.
    ///
    /// On a durable [`Node`](orchestrator::runtime::Node) over this store, each orchestrator
    /// step then commits, in one transaction, the settlement of the event it consumed, the new
    /// record, the journal entry and the events it produced:
    ///
    /// ```no_run
    /// use std::sync::Arc;
    /// use orchestrator::orchestration::WorkflowRecord;
    /// use orchestrator::runtime::Node;
    /// use orchestrator_postgres::{PgConfig, PgStore, QueueConfig};
    ///
    /// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
    /// let store: PgStore<WorkflowRecord> =
    ///     PgStore::open(PgConfig::new("postgres://postgres@127.0.0.1:5432/test")).await?;
    /// let queue = store.queue(QueueConfig::default());
    /// let node = Node::builder(Arc::new(store)).durable().transport(queue).build().await?;
    /// # drop(node);
    /// # Ok(())
    /// # }
    /// ```
    pub fn queue(&self, config: QueueConfig) -> PgQueue {
        // Other processes' queues are woken when this process enqueues.
        self.wake.spawn_notifier(self.pool.clone(), self.schema_name.clone());
        PgQueue::new(Shared::new(
            self.pool.clone(),
            Arc::clone(&self.schema),
            self.schema_name.clone(),
            Arc::clone(&self.queue_id),
            format!("{}:{:016x}", self.node.as_str(), fastrand::u64(..)),
            config,
            Arc::clone(&self.wake),
            self.pg.clone(),
            self.group.clone(),
        ))
    }

    /// The connection pool, the quoted schema name and the signals shared with the queues: what
    /// a transactional handler needs (see [`crate::effects`]).
    pub(crate) fn parts(&self) -> (Pool, Arc<str>, Arc<Signals>) {
        (self.pool.clone(), Arc::clone(&self.schema), Arc::clone(&self.wake))
    }

    /// The statement `template` for this store's schema.
    fn sql(&self, template: &str) -> String {
        template.replace("{s}", &self.schema)
    }

    pub(crate) async fn client(&self, id: &str) -> Result<deadpool_postgres::Object, MemoryError> {
        self.pool.get().await.map_err(|e| backend(id, PgError::from(e)))
    }

    pub(crate) async fn query<C: GenericClient>(
        &self,
        client: &C,
        id: &str,
        template: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<tokio_postgres::Row>, MemoryError> {
        let statement = client.prepare_cached(&self.sql(template)).await.map_err(|e| backend(id, e))?;
        client.query(&statement, params).await.map_err(|e| backend(id, e))
    }

    /// Runs `template` as a fresh statement (prepared for this call only), so that PostgreSQL
    /// plans it with the values given rather than with a generic plan (see `LIST_WORKFLOWS`).
    async fn query_fresh(
        &self,
        id: &str,
        template: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<tokio_postgres::Row>, MemoryError> {
        let client = self.client(id).await?;
        client.query(self.sql(template).as_str(), params).await.map_err(|e| backend(id, e))
    }

    fn lease_of(&self, id: &str, token: i64, expires_ms: i64) -> Result<Lease, MemoryError> {
        Ok(Lease {
            id: id.to_owned(),
            token: to_u64(id, "token", token)?,
            expires_at: from_unix_ms(to_u64(id, "expiry", expires_ms)?),
        })
    }

    /// Decodes journal rows of workflow `id` read oldest first (see `crate::journal`): when
    /// the first is a delta, reads the rows from the latest snapshot before it.
    async fn decode_journal<C: GenericClient>(
        &self,
        client: &C,
        id: &str,
        rows: &[tokio_postgres::Row],
    ) -> Result<Vec<JournalRecord<R>>, MemoryError>
    where
        R: DeserializeOwned,
    {
        let Some(first) = rows.first() else { return Ok(Vec::new()) };
        let version: i64 = first.get(0);
        let lead = if journal::is_delta(id, version, first.get::<_, &[u8]>(3))? {
            self.query(client, id, q::LEAD, &[&id, &version]).await?
        } else {
            Vec::new()
        };
        journal::decode_rows(id, &lead, rows)
    }

    /// Runs a compensating statement after a transient failure, on a fresh connection, best
    /// effort (within 2 s): what it frees lapses by itself otherwise.
    async fn compensate(&self, id: &str, template: &str, params: &[&(dyn ToSql + Sync)]) {
        let attempt = async {
            let client = self.client(id).await?;
            self.query(&client, id, template, params).await
        };
        match tokio::time::timeout(Duration::from_secs(2), attempt).await {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => {
                tracing::debug!(id, error = %e, "could not free a lease after a failure; it will lapse")
            }
            Err(_) => tracing::debug!(id, "could not free a lease after a failure in time; it will lapse"),
        }
    }

    /// The periodic housekeeping a sweeper runs (any node, any time; several at once are
    /// harmless): deletes the lapsed leases and, with [`Retention::RemoveAfter`], the workflows
    /// whose delay has passed (which finishing commits and cleanups also do). Returns how many
    /// leases and workflows it deleted.
    pub async fn sweep(&self) -> Result<(u64, u64), MemoryError> {
        let client = self.client("").await?;
        let rows = self.query(&client, "", q::REAP_LEASES, &[]).await?;
        let leases = rows.first().map_or(Ok(0), |row| to_u64("", "count", row.get(0)))?;
        let removed = match self.retention {
            Retention::RemoveAfter(after) => {
                let rows = self.query(&client, "", q::SWEEP, &[&ms_i64(after)]).await?;
                rows.first().map_or(Ok(0), |row| to_u64("", "count", row.get(0)))?
            }
            Retention::Keep | Retention::Remove | Retention::Archive => 0,
        };
        Ok((leases, removed))
    }

    /// The retention as the `retain` function takes it: mode and delay in milliseconds.
    fn retention_mode(&self) -> (i32, i64) {
        match self.retention {
            Retention::Keep => (0, 0),
            Retention::Remove => (1, 0),
            Retention::RemoveAfter(after) => (2, ms_i64(after)),
            Retention::Archive => (3, 0),
        }
    }
}

/// The queue's columns of `events`, in order: topics (the `to`; empty when none: such an event
/// is never delivered, the in-process transport refuses it), subjects, ids and JSON. The text
/// columns are borrowed (`&str`) or owned (`String`, for a write that outlives the events).
type QueueColumns<S> = (Vec<S>, Vec<S>, Vec<S>, Vec<String>);

fn queue_columns<'a, S: From<&'a str>>(
    id: &str,
    events: &'a [Event],
) -> Result<QueueColumns<S>, MemoryError> {
    Ok((
        events.iter().map(|e| S::from(e.to().unwrap_or_default())).collect(),
        events.iter().map(|e| S::from(e.subject())).collect(),
        events.iter().map(|e| S::from(e.id())).collect(),
        events.iter().map(|e| encode(id, "event", e)).collect::<Result<Vec<_>, _>>()?,
    ))
}

impl<R> Memory<R> for PgStore<R>
where
    R: Serialize + DeserializeOwned + Send + Sync + 'static,
{
    fn catalog(&self) -> Option<&dyn DynCatalog> {
        Some(self)
    }

    fn answers(&self) -> Option<&dyn orchestrator::memory::DynAnswers> {
        Some(self)
    }

    fn workflow_index(&self) -> Option<&dyn orchestrator::memory::DynWorkflowIndex> {
        Some(self)
    }

    async fn read(&self, id: &str) -> Result<Option<Stored<R>>, MemoryError> {
        check_id(id)?;
        let client = self.client(id).await?;
        let rows = self.query(&client, id, q::READ, &[&id]).await?;
        let Some(row) = rows.first() else { return Ok(None) };
        let raw: String = row.get(0);
        Ok(Some(Stored { record: decode(id, "record", &raw)?, version: to_u64(id, "version", row.get(1))? }))
    }

    async fn lock(&self, id: &str) -> Result<Option<Lease>, MemoryError> {
        check_id(id)?;
        let client = self.client(id).await?;
        let rows =
            self.query(&client, id, q::LOCK, &[&id, &self.node.as_str(), &ms_i64(self.lease_ttl)]).await?;
        rows.first().map(|row| self.lease_of(id, row.get(0), row.get(1))).transpose()
    }

    async fn renew(&self, lease: &Lease) -> Result<Lease, MemoryError> {
        let id = lease.id.as_str();
        check_id(id)?;
        let client = self.client(id).await?;
        let token = to_i64(id, "token", lease.token)?;
        let rows = self.query(&client, id, q::RENEW, &[&id, &token, &ms_i64(self.lease_ttl)]).await?;
        match rows.first() {
            Some(row) => self.lease_of(id, token, row.get(0)),
            None => Err(MemoryError::StaleLease { id: id.to_owned(), token: lease.token }),
        }
    }

    async fn unlock(&self, lease: &Lease) -> Result<bool, MemoryError> {
        let id = lease.id.as_str();
        check_id(id)?;
        let client = self.client(id).await?;
        let token = to_i64(id, "token", lease.token)?;
        let rows = self.query(&client, id, q::UNLOCK, &[&id, &token]).await?;
        Ok(rows.first().is_some_and(|row| row.get::<_, bool>(0)))
    }

    async fn acquire(
        &self,
        id: &str,
        event: EventKey<'_>,
        lock: bool,
    ) -> Result<Option<Acquired<R>>, MemoryError> {
        check_id(id)?;
        if !lock && let Some(looked) = self.wake.take_looked(id, event.source, event.id) {
            // The claim of the event's delivery read the workflow already (or found none).
            let Some(base) = looked.base else {
                return Ok(Some(Acquired { lease: None, stored: None, produced: None }));
            };
            let stored = Stored {
                record: Arc::new(decode(id, "record", &base.record)?),
                version: to_u64(id, "version", base.version)?,
            };
            let produced = looked.produced.map(|raw| journal::produced(id, None, &raw)).transpose()?;
            self.bases.keep(id, base);
            return Ok(Some(Acquired { lease: None, stored: Some(stored), produced }));
        }
        let client = self.client(id).await?;
        let found = if lock {
            let params: [&(dyn ToSql + Sync); 6] =
                [&id, &self.node.as_str(), &ms_i64(self.lease_ttl), &lock, &event.source, &event.id];
            self.query(&client, id, q::ACQUIRE, &params).await
        } else {
            // Nothing to lock: a plain read (the queue's claim serializes the workflow's steps).
            self.query(&client, id, q::LOOK, &[&id, &event.source, &event.id]).await
        };
        let rows = match found {
            Ok(rows) => rows,
            Err(e) => {
                if lock && e.is_transient() {
                    // The lease may have been taken although the answer was lost.
                    self.compensate(id, q::RELEASE_OWN, &[&id, &self.node.as_str()]).await;
                }
                return Err(e);
            }
        };
        let Some(row) = rows.first() else {
            return Err(backend(id, PgError::Invalid { what: "acquire answer (no row)", value: 0 }));
        };
        let token: Option<i64> = row.get(0);
        let expires: Option<i64> = row.get(1);
        let lease = match (lock, token, expires) {
            (false, _, _) => None,
            (true, Some(token), Some(expires)) => Some(self.lease_of(id, token, expires)?),
            (true, _, _) => return Ok(None),
        };
        let record: Option<String> = row.get(2);
        let version: Option<i64> = row.get(3);
        let produced: Option<Vec<u8>> = row.get(4);
        let stored = match (record, version) {
            (Some(raw), Some(version)) => {
                let stored = Stored {
                    record: Arc::new(decode(id, "record", &raw)?),
                    version: to_u64(id, "version", version)?,
                };
                self.bases.keep(id, Base { version, record: raw, tail: row.get(5), since: row.get(6) });
                Some(stored)
            }
            _ => None,
        };
        let produced = match (&stored, produced) {
            (Some(_), Some(raw)) => Some(journal::produced(id, None, &raw)?),
            _ => None,
        };
        Ok(Some(Acquired { lease, stored, produced }))
    }

    async fn commit(&self, commit: Commit<'_, R>) -> Result<u64, MemoryError> {
        let id = commit.id;
        check_id(id)?;
        let meta = &commit.meta;
        let prev = commit.prev.map(|p| to_i64(id, "version", p)).transpose()?;
        // The base read for this step (taken: a commit that fails reads again).
        let base = self.bases.take(id);
        let (record, entry) = match &meta.entry {
            Some(entry) => {
                let encoded =
                    journal::encode_entry(id, &commit.record, prev, base, entry.consumed, entry.produced)?;
                let key = entry.consumed.map(|e| (e.source().to_owned(), e.id().to_owned()));
                let journal::EncodedEntry { record_json, events, record_bytes, since } = encoded;
                (record_json, Some((time_ms(entry.at), key, events, record_bytes, since)))
            }
            None => (encode(id, "record", &commit.record)?, None),
        };
        let token = commit.lease.map(|l| to_i64(id, "token", l.token)).transpose()?;
        if let Some(lease) = commit.lease
            && lease.id != id
        {
            return Err(MemoryError::StaleLease { id: id.to_owned(), token: lease.token });
        }
        let (parent_known, parent) = match &meta.parent_subject {
            Materialized::Pending => (false, None),
            Materialized::Resolved(p) => (true, *p),
        };
        let (initiator_known, initiator) = match &meta.initiator {
            Materialized::Pending => (false, None),
            Materialized::Resolved(i) => (true, Some(*i)),
        };
        let wake_ms = meta.wake_at.map(time_ms);

        let (has_entry, at, (c_source, c_id), events, record_bytes, since) = match entry {
            Some((at, key, events, record_bytes, since)) => (
                true,
                at,
                key.map_or((None, None), |(s, i)| (Some(s), Some(i))),
                Some(events),
                Some(record_bytes),
                Some(since),
            ),
            None => (false, 0, (None, None), None, None, None),
        };
        let (ob_consumed, (ob_topics, ob_subjects, ob_ids, ob_events)) = match &commit.outbox {
            Some(step) => (step.consumed, queue_columns::<String>(id, step.produced)?),
            None => (None, Default::default()),
        };
        let (mode, after) = self.retention_mode();
        let status = meta.status.as_str();
        // What the subject says, parsed once: when the workflow is created.
        let columns = if commit.prev.is_none() { meta.subject_columns(id) } else { None };
        let orchestrator_version = columns.as_ref().map(|c| c.orchestrator_version.clone());
        let execution_id = columns.as_ref().map(|c| c.execution_id.clone());
        let subject_meta = columns.as_ref().map(SubjectColumns::meta_json);
        let params: Vec<Param> = vec![
            Box::new(id.to_owned()),
            Box::new(prev),
            Box::new(token),
            Box::new(record),
            Box::new(parent_known),
            Box::new(parent.map(str::to_owned)),
            Box::new(initiator_known),
            Box::new(initiator.map(str::to_owned)),
            Box::new(meta.source.to_owned()),
            Box::new(wake_ms),
            Box::new(status),
            Box::new(has_entry),
            Box::new(at),
            Box::new(c_source),
            Box::new(c_id),
            Box::new(events),
            Box::new(record_bytes),
            Box::new(since),
            Box::new(commit.outbox.is_some()),
            Box::new(ob_consumed.map(str::to_owned)),
            Box::new(ob_topics),
            Box::new(ob_subjects),
            Box::new(ob_ids),
            Box::new(ob_events),
            Box::new(commit.finished),
            Box::new(mode),
            Box::new(after),
            Box::new(commit.release),
            Box::new(orchestrator_version),
            Box::new(execution_id),
            Box::new(subject_meta),
        ];
        // Run in a group with the commits and acks of other steps (see `group`).
        let rows = match self.group.run(Arc::clone(&self.commit_sql), params).await {
            Ok(rows) => rows,
            Err(e) => {
                let e = backend(id, e);
                if let Some(token) = &token
                    && commit.release
                    && e.is_transient()
                {
                    // Whether or not the commit went through, its lease is done with: released
                    // now, the retry need not wait for it to lapse.
                    self.compensate(id, q::UNLOCK, &[&id, token]).await;
                }
                return Err(e);
            }
        };
        let Some(row) = rows.first() else {
            return Err(backend(id, PgError::Invalid { what: "commit answer (no row)", value: 0 }));
        };
        let status: i32 = row.get(0);
        let version: Option<i64> = row.get(1);
        let version = version.map(|v| to_u64(id, "version", v)).transpose()?;
        match (status, version) {
            (0, Some(version)) => {
                // Its products, and the next event of the consumed event's lane, are claimable.
                if let Some(step) = &commit.outbox {
                    if let Some(consumed) = step.consumed {
                        self.wake.settled_by_commit(consumed);
                    }
                    self.wake.enqueued();
                }
                Ok(version)
            }
            (1, _) => {
                Err(MemoryError::StaleLease { id: id.to_owned(), token: commit.lease.map_or(0, |l| l.token) })
            }
            (2, found) => Err(MemoryError::Conflict { id: id.to_owned(), expected: commit.prev, found }),
            (other, _) => {
                Err(backend(id, PgError::Invalid { what: "commit status", value: i64::from(other) }))
            }
        }
    }

    async fn produced(&self, id: &str, event: EventKey<'_>) -> Result<Option<Vec<Event>>, MemoryError> {
        check_id(id)?;
        let client = self.client(id).await?;
        let rows = self.query(&client, id, q::PRODUCED, &[&id, &event.source, &event.id]).await?;
        rows.first().map(|row| journal::produced(id, Some(row.get(0)), row.get::<_, &[u8]>(1))).transpose()
    }

    async fn claim_due(&self, limit: usize, claim: Duration) -> Result<Vec<Wake>, MemoryError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let client = self.client("").await?;
        let rows = self.query(&client, "", q::CLAIM_DUE, &[&limit, &ms_i64(claim)]).await?;
        let mut due = rows
            .iter()
            .map(|row| {
                let id: String = row.get(0);
                let at = from_unix_ms(to_u64(&id, "wake-up", row.get(1))?);
                Ok(Wake { id, at })
            })
            .collect::<Result<Vec<_>, MemoryError>>()?;
        due.sort_by(|a, b| a.at.cmp(&b.at).then_with(|| a.id.cmp(&b.id)));
        Ok(due)
    }

    async fn cleanup(&self, id: &str) -> Result<(), MemoryError> {
        check_id(id)?;
        let (mode, after) = self.retention_mode();
        let client = self.client(id).await?;
        self.query(&client, id, q::RETAIN, &[&id, &mode, &after]).await?;
        Ok(())
    }
}

impl<R> Journal<R> for PgStore<R>
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
        let after = i64::try_from(after).unwrap_or(i64::MAX);
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let client = self.client(id).await?;
        let rows = self.query(&client, id, q::HISTORY, &[&id, &after, &limit]).await?;
        self.decode_journal(&client, id, &rows).await
    }

    async fn entry(&self, id: &str, version: u64) -> Result<Option<JournalRecord<R>>, MemoryError> {
        check_id(id)?;
        let Ok(version) = i64::try_from(version) else { return Ok(None) };
        let client = self.client(id).await?;
        let rows = self.query(&client, id, q::ENTRY, &[&id, &version]).await?;
        Ok(self.decode_journal(&client, id, &rows).await?.pop())
    }

    async fn children(&self, id: &str) -> Result<Vec<String>, MemoryError> {
        check_id(id)?;
        let client = self.client(id).await?;
        let rows = self.query(&client, id, q::CHILDREN, &[&id]).await?;
        Ok(rows.iter().map(|row| row.get(0)).collect())
    }

    async fn parent(&self, id: &str) -> Result<Option<String>, MemoryError> {
        check_id(id)?;
        let client = self.client(id).await?;
        let rows = self.query(&client, id, q::PARENT, &[&id]).await?;
        Ok(rows.first().and_then(|row| row.get(0)))
    }
}

/// The values of `workflow_filter!` (`$1`–`$12`) for `filter`.
struct FilterParams<'a> {
    orchestrator: Option<&'a str>,
    version: Option<&'a str>,
    status: Option<&'static str>,
    initiator: Option<&'a str>,
    parent: Option<&'a str>,
    root: Option<&'a str>,
    execution: Option<String>,
    created: (Option<SystemTime>, Option<SystemTime>),
    updated: (Option<SystemTime>, Option<SystemTime>),
    meta: Option<String>,
}

impl<'a> FilterParams<'a> {
    fn new(filter: &'a WorkflowFilter) -> Self {
        let meta = (!filter.meta.is_empty()).then(|| {
            let map: serde_json::Map<String, serde_json::Value> =
                filter.meta.iter().map(|(k, v)| (k.clone(), serde_json::Value::String(v.clone()))).collect();
            serde_json::Value::Object(map).to_string()
        });
        Self {
            orchestrator: filter.orchestrator.as_deref(),
            version: filter.orchestrator_version.as_deref(),
            status: filter.status.map(WorkflowState::as_str),
            initiator: filter.initiator.as_deref(),
            parent: filter.parent.as_deref(),
            root: filter.root.as_deref(),
            execution: filter.execution_id_prefix.as_deref().map(like_prefix),
            created: (filter.created.since, filter.created.until),
            updated: (filter.updated.since, filter.updated.until),
            meta,
        }
    }

    fn params(&self) -> [&(dyn ToSql + Sync); 12] {
        [
            &self.orchestrator,
            &self.version,
            &self.status,
            &self.initiator,
            &self.parent,
            &self.root,
            &self.execution,
            &self.created.0,
            &self.created.1,
            &self.updated.0,
            &self.updated.1,
            &self.meta,
        ]
    }
}

/// The `LIKE` pattern of the strings that start with `prefix` (its wildcards escaped).
fn like_prefix(prefix: &str) -> String {
    let mut pattern = String::with_capacity(prefix.len() + 2);
    for c in prefix.chars() {
        if matches!(c, '\\' | '%' | '_') {
            pattern.push('\\');
        }
        pattern.push(c);
    }
    pattern.push('%');
    pattern
}

/// A row of `LIST_WORKFLOWS` decoded.
fn summary(row: &tokio_postgres::Row) -> Result<WorkflowSummary, MemoryError> {
    let id: String = row.get(0);
    let status: String = row.get(4);
    let status = WorkflowState::parse(&status)
        .ok_or_else(|| backend(&id, PgError::Invalid { what: "workflow status", value: 0 }))?;
    let meta: Option<String> = row.get(8);
    Ok(WorkflowSummary {
        execution_id: row.get(1),
        orchestrator: row.get(2),
        orchestrator_version: row.get(3),
        status,
        initiator: row.get(5),
        parent: row.get(6),
        root: row.get(7),
        meta: meta.map(|m| decode(&id, "subject meta", &m)).transpose()?.unwrap_or_default(),
        created_at: row.get(9),
        updated_at: row.get(10),
        version: to_u64(&id, "version", row.get(11))?,
        id,
    })
}

/// Listings and counts are one statement each, searching the indexes of schema migrations 5 and
/// 6 (by orchestrator, status, initiator, root, creation time, execution id and meta).
impl<R: Send + Sync> WorkflowIndex for PgStore<R> {
    async fn list(&self, filter: &WorkflowFilter) -> Result<Page<WorkflowSummary>, MemoryError> {
        let values = FilterParams::new(filter);
        let limit = filter.page_size();
        let rows_wanted = i64::try_from(limit).unwrap_or(i64::MAX).saturating_add(1);
        let cursor_at = filter.after.as_ref().map(|c| c.created_at);
        let cursor_id = filter.after.as_ref().map(|c| c.id.as_str());
        let mut params: Vec<&(dyn ToSql + Sync)> = values.params().to_vec();
        params.extend([&cursor_at as &(dyn ToSql + Sync), &cursor_id, &rows_wanted]);
        let rows = self.query_fresh("(workflows)", q::LIST_WORKFLOWS, &params).await?;
        let rows = rows.iter().map(summary).collect::<Result<Vec<_>, _>>()?;
        Ok(Page::from_rows(rows, limit))
    }

    async fn count(&self, filter: &WorkflowFilter) -> Result<u64, MemoryError> {
        let values = FilterParams::new(filter);
        let rows = self.query_fresh("(workflows)", q::COUNT_WORKFLOWS, &values.params()).await?;
        rows.first().map_or(Ok(0), |row| to_u64("(workflows)", "count", row.get(0)))
    }
}

impl<R: Send + Sync> Catalog for PgStore<R> {
    async fn record(&self, definitions: &[Definition]) -> Result<(), MemoryError> {
        const KEY: &str = "(catalog)";
        if definitions.is_empty() {
            return Ok(());
        }
        let kinds: Vec<&str> = definitions.iter().map(|d| d.kind.as_str()).collect();
        let names: Vec<&str> = definitions.iter().map(|d| d.name.as_str()).collect();
        let versions: Vec<&str> = definitions.iter().map(|d| d.version.as_str()).collect();
        let documents = definitions
            .iter()
            .map(|d| encode(KEY, "catalog document", &d.document))
            .collect::<Result<Vec<String>, MemoryError>>()?;
        let client = self.client(KEY).await?;
        self.query(&client, KEY, q::CATALOG_RECORD, &[&kinds, &names, &versions, &documents]).await?;
        Ok(())
    }

    async fn definitions(&self) -> Result<Vec<Recorded>, MemoryError> {
        const KEY: &str = "(catalog)";
        let client = self.client(KEY).await?;
        let rows = self.query(&client, KEY, q::CATALOG_LIST, &[]).await?;
        let mut recorded = Vec::with_capacity(rows.len());
        for row in &rows {
            let Some(kind) = DefinitionKind::parse(row.get(0)) else { continue };
            let document: String = row.get(3);
            recorded.push(Recorded {
                definition: Definition {
                    kind,
                    name: row.get(1),
                    version: row.get(2),
                    document: decode(KEY, "catalog document", &document)?,
                },
                recorded_at: from_unix_ms(to_u64(KEY, "time", row.get(4))?),
            });
        }
        Ok(recorded)
    }
}

impl<R: Send + Sync> Outbox for PgStore<R> {
    async fn advance(&self, consumed: Option<&str>, produced: &[Event]) -> Result<(), MemoryError> {
        let (topics, subjects, ids, events) = queue_columns::<&str>("", produced)?;
        let client = self.client("").await?;
        self.query(&client, "", q::OUTBOX_STEP, &[&consumed, &topics, &subjects, &ids, &events]).await?;
        self.wake.enqueued();
        Ok(())
    }

    async fn pending(&self, after: u64, limit: usize) -> Result<Vec<Pending>, MemoryError> {
        let after = i64::try_from(after).unwrap_or(i64::MAX);
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let client = self.client("").await?;
        let rows = self.query(&client, "", q::OUTBOX_PENDING, &[&after, &limit]).await?;
        rows.iter()
            .map(|row| {
                let raw: String = row.get(1);
                Ok(Pending { seq: to_u64("", "position", row.get(0))?, event: decode("", "event", &raw)? })
            })
            .collect()
    }

    fn queue_id(&self) -> Option<&str> {
        Some(&self.queue_id)
    }
}

/// The identity of the queue in `schema` of the database `pg` points at.
fn queue_identity(pg: &tokio_postgres::Config, schema: &str) -> String {
    let hosts: Vec<String> = pg
        .get_hosts()
        .iter()
        .map(|host| match host {
            tokio_postgres::config::Host::Tcp(name) => name.clone(),
            tokio_postgres::config::Host::Unix(path) => path.display().to_string(),
        })
        .collect();
    let ports: Vec<String> = pg.get_ports().iter().map(u16::to_string).collect();
    format!(
        "postgres://{}:{}/{}#{}",
        hosts.join(","),
        ports.join(","),
        pg.get_dbname().unwrap_or_default(),
        schema
    )
}

#[cfg(test)]
mod tests {
    use orchestrator::memory::{TimeRange, WorkflowCursor};

    use super::*;

    #[test]
    fn like_prefixes_escape_wildcards() {
        assert_eq!(like_prefix("ab"), "ab%");
        assert_eq!(like_prefix("a%_\\"), "a\\%\\_\\\\%");
    }

    /// The listings of the workflow index search the index of the filter given (with sequential
    /// scans off: on a table this small, a scan would be cheaper).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn listings_use_the_indexes() {
        let Some(url) = crate::test_support::database_url() else { return };
        let schema = crate::test_support::fresh_schema();
        let config = PgConfig { schema: schema.clone(), ..PgConfig::new(&url) };
        let store = PgStore::<String>::open(config).await.expect("open");
        let (client, connection) = tokio_postgres::connect(&url, NoTls).await.expect("connect");
        tokio::spawn(connection);
        client.batch_execute("SET enable_seqscan = off").await.expect("no sequential scans");
        let some = |s: &str| Some(s.to_owned());
        let new = WorkflowFilter::new;
        let cases = [
            (WorkflowFilter { status: Some(WorkflowState::Failed), ..new() }, "workflows_status_created"),
            (WorkflowFilter { orchestrator: some("arvo.orc.x"), ..new() }, "workflows_source_created"),
            (
                WorkflowFilter {
                    orchestrator: some("arvo.orc.x"),
                    orchestrator_version: some("1.0.0"),
                    ..new()
                },
                "workflows_source_created",
            ),
            (WorkflowFilter { initiator: some("com.x"), ..new() }, "workflows_initiator_created"),
            (WorkflowFilter { root: some("wf"), ..new() }, "workflows_root_created"),
            (WorkflowFilter { parent: some("wf"), ..new() }, "workflows_parent"),
            (WorkflowFilter { execution_id_prefix: some("ab"), ..new() }, "workflows_execution"),
            (WorkflowFilter { meta: vec![("k".into(), "v".into())], ..new() }, "workflows_meta"),
            (
                WorkflowFilter {
                    created: TimeRange { since: Some(SystemTime::now()), until: None },
                    after: Some(WorkflowCursor { created_at: SystemTime::now(), id: "x".into() }),
                    ..new()
                },
                "workflows_created",
            ),
            (new(), "workflows_created"),
        ];
        for (filter, index) in cases {
            let values = FilterParams::new(&filter);
            let after = filter.after.clone();
            let (at, id, limit) = (after.as_ref().map(|c| c.created_at), after.map(|c| c.id), 21i64);
            let mut params: Vec<&(dyn ToSql + Sync)> = values.params().to_vec();
            params.extend([&at as &(dyn ToSql + Sync), &id, &limit]);
            for (what, template, params) in
                [("list", q::LIST_WORKFLOWS, &params[..]), ("count", q::COUNT_WORKFLOWS, &params[..12])]
            {
                let sql = format!("EXPLAIN {}", store.sql(template));
                let plan = client.query(sql.as_str(), params).await.expect("explain");
                let plan: Vec<String> = plan.iter().map(|r| r.get(0)).collect();
                // Without a filter, a count reads every row: any index will do.
                if what == "count" && index == "workflows_created" {
                    continue;
                }
                // A count by status may read either index that leads with the status (the
                // planner takes the narrower, `workflows_status_touched`).
                let index = if what == "count" && index == "workflows_status_created" {
                    "workflows_status_"
                } else {
                    index
                };
                assert!(
                    plan.iter().any(|line| line.contains(index)),
                    "{what} {filter:?} uses {index}: {plan:#?}"
                );
            }
        }
        drop(client);
        drop(store);
        crate::test_support::drop_schema(&url, &schema).await;
    }
}
