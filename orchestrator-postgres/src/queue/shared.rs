//! What a queue, its subscriptions and its deliveries share: the pool, the schema, the
//! wake-ups, the statements.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use deadpool_postgres::Pool;

use crate::group::{GroupCommit, Param};
use orchestrator::event::Event;
use orchestrator::transport::{Topics, TransportError};
use tokio::task::JoinHandle;
use tokio_postgres::types::ToSql;

use super::QueueConfig;
use super::signals::Signals;
use crate::error::PgError;
use crate::journal::Base;
use crate::queries as q;

/// A [`TransportError::Backend`] from a PostgreSQL or pool failure, transient when a retry may
/// help.
pub(crate) fn transport_error(e: impl Into<PgError>) -> TransportError {
    let e = e.into();
    TransportError::Backend { transient: e.is_transient(), source: Box::new(e) }
}

/// A permanent [`TransportError::Backend`] for a stored number out of range.
pub(super) fn invalid(what: &'static str, value: i64) -> TransportError {
    transport_error(PgError::Invalid { what, value })
}

pub(super) fn ms_i64(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

/// The topics as the statements take them: null for all.
pub(super) fn topic_list(topics: &Topics) -> Option<Vec<String>> {
    match topics {
        Topics::All => None,
        Topics::Only(topics) => Some(topics.clone()),
    }
}

/// The lane of an event: its `to` and its subject.
pub(super) struct Lane {
    pub(super) topic: String,
    pub(super) subject: String,
}

impl Lane {
    /// The lanes of `events`, in order; [`TransportError::MissingTo`] for the first without `to`.
    pub(super) fn of_all(events: &[Event]) -> Result<Vec<Self>, TransportError> {
        events
            .iter()
            .map(|e| match e.to() {
                Some(to) => Ok(Self { topic: to.to_owned(), subject: e.subject().to_owned() }),
                None => Err(TransportError::MissingTo { id: e.id().to_owned() }),
            })
            .collect()
    }
}

/// A claimed row, before its event is decoded.
pub(super) struct Claimed {
    pub(super) seq: i64,
    pub(super) token: i64,
    pub(super) attempt: i32,
    pub(super) topic: String,
    pub(super) subject: String,
    pub(super) event_id: String,
    pub(super) event: String,
    /// For a row of an orchestrator's lane whose workflow exists, or a row whose workflow does
    /// not exist: what the claim read of it.
    pub(super) looked: Option<ClaimRead>,
}

/// What a claim read of the workflow of a row of an orchestrator's lane (see
/// `Signals::looked`).
pub(super) struct ClaimRead {
    /// The record (JSON), its version and the workflow's journal state; none when the
    /// workflow does not exist.
    pub(super) base: Option<Base>,
    /// The journal's first entry for the event's id: the source of the event it consumed, and
    /// its events (encoded).
    pub(super) entry: Option<(Option<String>, Vec<u8>)>,
}

/// The state shared by a queue, its subscriptions and its deliveries.
pub(crate) struct Shared {
    pub(super) pool: Pool,
    /// The quoted schema name.
    pub(super) schema: Arc<str>,
    /// The schema name as `NOTIFY` payloads carry it.
    pub(super) schema_name: String,
    pub(super) queue_id: Arc<str>,
    /// This queue's name on its claims.
    pub(super) owner: String,
    pub(super) config: QueueConfig,
    /// Wakes idle consumers of this process: enqueues here, settlements, notifications.
    pub(super) wake: Arc<Signals>,
    closed: AtomicBool,
    /// When lapsed claims were last reaped, in ms since `born`.
    reaped_at: AtomicU64,
    born: Instant,
    /// The settings of the listening connection.
    pg: tokio_postgres::Config,
    /// The store's committers: acks share transactions with the commits of other steps.
    group: GroupCommit,
    /// `ACK` for this schema.
    ack_sql: Arc<str>,
    listener: std::sync::Mutex<Option<JoinHandle<()>>>,
    /// The pollers, by topics.
    pub(super) feeds: super::feed::Feeds,
    /// When to vacuum the queue's table (see `super::vacuum`).
    pub(super) vacuum: super::vacuum::Vacuum,
}

impl Shared {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        pool: Pool,
        schema: Arc<str>,
        schema_name: String,
        queue_id: Arc<str>,
        owner: String,
        config: QueueConfig,
        wake: Arc<Signals>,
        pg: tokio_postgres::Config,
        group: GroupCommit,
    ) -> Self {
        let ack_sql = q::ACK.replace("{s}", &schema).into();
        Self {
            pool,
            schema,
            schema_name,
            queue_id,
            owner,
            config,
            wake,
            closed: AtomicBool::new(false),
            reaped_at: AtomicU64::new(0),
            born: Instant::now(),
            pg,
            group,
            ack_sql,
            listener: std::sync::Mutex::new(None),
            feeds: std::sync::Mutex::default(),
            vacuum: super::vacuum::Vacuum::default(),
        }
    }

    pub(super) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    pub(super) fn close(&self) {
        self.closed.store(true, Ordering::Release);
        self.wake.notify_waiters();
    }

    /// Runs statement `template` on a pooled connection (prepared once per connection).
    pub(super) async fn query(
        &self,
        template: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<tokio_postgres::Row>, TransportError> {
        let client = self.pool.get().await.map_err(|e| transport_error(PgError::from(e)))?;
        let statement =
            client.prepare_cached(&template.replace("{s}", &self.schema)).await.map_err(transport_error)?;
        client.query(&statement, params).await.map_err(transport_error)
    }

    /// Runs `ACK` with `params` in a group with other steps' commits and acks (see
    /// `crate::group`).
    pub(super) async fn ack(&self, params: Vec<Param>) -> Result<Vec<tokio_postgres::Row>, TransportError> {
        self.group.run(Arc::clone(&self.ack_sql), params).await.map_err(transport_error)
    }

    /// How many rows wait unclaimed, counted up to `limit`.
    pub(super) async fn depth(&self, limit: usize) -> Result<usize, TransportError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows = self.query(q::DEPTH, &[&limit]).await?;
        let count: i64 = rows.first().map_or(0, |row| row.get(0));
        Ok(usize::try_from(count).unwrap_or(usize::MAX))
    }

    /// An upper bound of how many rows are queued (claimed or not), read from the ends of the
    /// primary key: cheap enough for every publish.
    pub(super) async fn span(&self) -> Result<usize, TransportError> {
        let rows = self.query(q::SPAN, &[]).await?;
        let span: i64 = rows.first().map_or(0, |row| row.get(0));
        Ok(usize::try_from(span).unwrap_or(usize::MAX))
    }

    /// Enqueues `events` (of `lanes`) in order, skipping ids queued already, and wakes a
    /// consumer.
    pub(super) async fn enqueue(&self, lanes: &[Lane], events: &[Event]) -> Result<(), TransportError> {
        let (topics, subjects, ids, json) = columns(lanes, events)?;
        self.query(q::ENQUEUE, &[&topics, &subjects, &ids, &json]).await?;
        self.wake.enqueued();
        Ok(())
    }

    /// Makes lapsed claims (of consumers that died or stall) claimable again, at most once per
    /// poll interval in this process.
    pub(super) async fn reap(&self) -> Result<(), TransportError> {
        let now = u64::try_from(self.born.elapsed().as_millis()).unwrap_or(u64::MAX);
        let last = self.reaped_at.load(Ordering::Acquire);
        let due = now.saturating_sub(last) >= u64::try_from(self.config.poll.as_millis()).unwrap_or(u64::MAX);
        if !due || self.reaped_at.compare_exchange(last, now, Ordering::AcqRel, Ordering::Acquire).is_err() {
            return Ok(());
        }
        let reaped = self.query(q::REAP_CLAIMS, &[]).await?;
        if !reaped.is_empty() {
            tracing::debug!(reaped = reaped.len(), "lapsed queue claims made claimable again");
            self.wake.notify_one();
        }
        Ok(())
    }

    /// Claims up to `limit` rows of `topics`.
    pub(super) async fn claim(
        &self,
        topics: &Option<Vec<String>>,
        limit: usize,
    ) -> Result<Vec<Claimed>, TransportError> {
        let limit = i64::try_from(limit.max(1)).unwrap_or(1);
        let visibility = ms_i64(self.config.visibility);
        let rows = self.query(q::CLAIM, &[topics, &limit, &self.owner, &visibility]).await?;
        let mut claimed: Vec<Claimed> = rows
            .iter()
            .map(|row| Claimed {
                seq: row.get(0),
                token: row.get(1),
                attempt: row.get(2),
                topic: row.get(3),
                subject: row.get(4),
                event_id: row.get(5),
                event: row.get(6),
                looked: match (row.get::<_, Option<String>>(7), row.get::<_, Option<i64>>(8)) {
                    (Some(record), Some(version)) => {
                        let entry = row.get::<_, Option<Vec<u8>>>(10).map(|events| (row.get(9), events));
                        let base = Base { version, record, tail: row.get(11), since: row.get(12) };
                        Some(ClaimRead { base: Some(base), entry })
                    }
                    _ if row.get::<_, bool>(13) => Some(ClaimRead { base: None, entry: None }),
                    _ => None,
                },
            })
            .collect();
        claimed.sort_by_key(|c| c.seq);
        Ok(claimed)
    }

    /// Whether nothing of `topics` is left for this queue (see `DRAINED`).
    pub(super) async fn drained(&self, topics: &Option<Vec<String>>) -> Result<bool, TransportError> {
        let rows = self.query(q::DRAINED, &[topics, &self.owner]).await?;
        Ok(rows.first().is_some_and(|row| row.get::<_, bool>(0)))
    }

    /// When the next row of `topics` becomes claimable by the clock, if one will.
    pub(super) async fn next_due(
        &self,
        topics: &Option<Vec<String>>,
    ) -> Result<Option<Duration>, TransportError> {
        let rows = self.query(q::NEXT_DUE, &[topics]).await?;
        let ms: Option<i64> = rows.first().and_then(|row| row.get(0));
        Ok(ms.map(|ms| Duration::from_millis(u64::try_from(ms).unwrap_or(0))))
    }

    /// Gives back claim `(seq, token)` at once (a nack without delay), trying again after a
    /// transient failure until the claim lapses at `until`: a claim not given back lapses.
    pub(super) async fn give_back(&self, seq: i64, token: i64, until: tokio::time::Instant) {
        let mut retry = super::retry::SettleRetry::until(until);
        loop {
            match self.query(q::NACK, &[&seq, &token, &0_i64]).await {
                Ok(_) => return self.wake.enqueued(),
                Err(e) if retry.again("give back", &e).await => {}
                Err(e) => return tracing::debug!(error = %e, "giving back a claim failed; it will lapse"),
            }
        }
    }

    /// Starts listening for other processes' enqueues, once.
    pub(super) fn start_listener(&self) {
        let mut listener = self.listener.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if listener.is_none() && tokio::runtime::Handle::try_current().is_ok() {
            *listener = Some(tokio::spawn(super::listener::listen(
                self.pg.clone(),
                self.schema_name.clone(),
                Arc::clone(&self.wake),
            )));
        }
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        let listener = self.listener.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take();
        if let Some(listener) = listener {
            listener.abort();
        }
    }
}

/// The columns `enqueue` and `ack` take: topics, subjects, ids and JSON, in order.
pub(super) type Columns = (Vec<String>, Vec<String>, Vec<String>, Vec<String>);

pub(super) fn columns(lanes: &[Lane], events: &[Event]) -> Result<Columns, TransportError> {
    let mut json = Vec::with_capacity(events.len());
    for event in events {
        json.push(
            serde_json::to_string(event)
                .map_err(|source| transport_error(PgError::Codec { what: "event", source }))?,
        );
    }
    Ok((
        lanes.iter().map(|l| l.topic.clone()).collect(),
        lanes.iter().map(|l| l.subject.clone()).collect(),
        events.iter().map(|e| e.id().to_owned()).collect(),
        json,
    ))
}
