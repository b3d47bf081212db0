//! [`GroupCommit`]: the settlements of concurrent steps share transactions.
//!
//! Each step ends with one write that must reach the disk before it is answered: an
//! orchestrator's `commit_step` (its record, journal entry, consumed event and products) or a
//! service's `ack` (its consumed event and products). Committed alone, each pays a transaction's
//! fixed cost: its begin and commit, a commit record, a wait for the WAL flush. Under load many
//! workers settle at once, so their writes are gathered: a few *committers* (at most half the
//! pool's connections) each take every write waiting when they get free and run them, pipelined,
//! in one transaction, one commit and one WAL flush for all. A write that waits alone runs alone,
//! as a single statement: a quiet queue adds no latency.
//!
//! The writes in one transaction stay independent in what they decide: each is one function call
//! that reports a lost claim, a stale lease or a version conflict as its result instead of
//! raising an error. When one of them does raise an error (anything unexpected, from a key too
//! long for an index to a deadlock), PostgreSQL rolls the whole transaction back, and every write
//! of the group is run again alone, so that only the faulty one gets its error. When the
//! connection is lost before the commit's answer, every write of the group gets that error (a
//! transient one, as for a single statement whose answer was lost: the runtime's retry and the
//! writes' fencing sort out what happened).

use std::sync::Arc;

use deadpool_postgres::Pool;
use futures_util::future::join_all;
use tokio::sync::{Semaphore, mpsc, oneshot};
use tokio_postgres::Row;
use tokio_postgres::types::ToSql;

use crate::error::PgError;

/// An owned statement parameter.
pub(crate) type Param = Box<dyn ToSql + Send + Sync>;

/// The most writes one transaction takes.
const MAX_GROUP: usize = 32;

/// One write waiting for its group.
struct Job {
    /// The statement, for this schema.
    sql: Arc<str>,
    params: Vec<Param>,
    reply: oneshot::Sender<Result<Vec<Row>, PgError>>,
}

/// See the [module documentation](self).
#[derive(Clone)]
pub(crate) struct GroupCommit {
    jobs: mpsc::UnboundedSender<Job>,
}

impl std::fmt::Debug for GroupCommit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GroupCommit").finish_non_exhaustive()
    }
}

impl GroupCommit {
    /// Starts the committers on `pool` (`committers` at most at once; at least 1).
    pub(crate) fn start(pool: Pool, committers: usize) -> Self {
        let (jobs, queue) = mpsc::unbounded_channel();
        tokio::spawn(gather(pool, queue, committers.max(1)));
        Self { jobs }
    }

    /// Runs `sql` with `params` in the next group; its rows.
    pub(crate) async fn run(&self, sql: Arc<str>, params: Vec<Param>) -> Result<Vec<Row>, PgError> {
        let (reply, answer) = oneshot::channel();
        self.jobs.send(Job { sql, params, reply }).map_err(|_| PgError::CommittersStopped)?;
        answer.await.map_err(|_| PgError::CommittersStopped)?
    }
}

/// Takes the writes that wait, as one group, whenever a committer is free. Ends when every
/// [`GroupCommit`] handle is gone.
async fn gather(pool: Pool, mut queue: mpsc::UnboundedReceiver<Job>, committers: usize) {
    let free = Arc::new(Semaphore::new(committers));
    loop {
        let Ok(permit) = Arc::clone(&free).acquire_owned().await else { return };
        let Some(first) = queue.recv().await else { return };
        let mut group = vec![first];
        while group.len() < MAX_GROUP {
            match queue.try_recv() {
                Ok(job) => group.push(job),
                Err(_) => break,
            }
        }
        let pool = pool.clone();
        tokio::spawn(async move {
            commit(&pool, group).await;
            drop(permit);
        });
    }
}

/// Runs `group` (alone when it is one write) and answers each write.
async fn commit(pool: &Pool, group: Vec<Job>) {
    let client = match pool.get().await {
        Ok(client) => client,
        Err(e) => {
            let e = PgError::from(e).to_string();
            for job in group {
                let _ = job.reply.send(Err(PgError::Pool(e.clone())));
            }
            return;
        }
    };
    if group.len() == 1 {
        for job in group {
            let result = alone(&client, &job).await;
            let _ = job.reply.send(result);
        }
        return;
    }
    match together(&client, &group).await {
        Together::Committed(results) => {
            for (job, rows) in group.into_iter().zip(results) {
                let _ = job.reply.send(Ok(rows));
            }
        }
        Together::RolledBack => {
            // One write failed and took the others with it: each runs alone now.
            for job in group {
                let result = alone(&client, &job).await;
                let _ = job.reply.send(result);
            }
        }
        Together::Unknown(e) => {
            let e = e.to_string();
            for job in group {
                let _ = job.reply.send(Err(PgError::Unanswered(e.clone())));
            }
        }
    }
}

/// How a group's transaction ended.
enum Together {
    /// Committed: each write's rows, in order.
    Committed(Vec<Vec<Row>>),
    /// A write failed: nothing was committed.
    RolledBack,
    /// The commit's outcome is unknown (the connection failed).
    Unknown(tokio_postgres::Error),
}

/// One write as a single statement.
async fn alone(client: &deadpool_postgres::Object, job: &Job) -> Result<Vec<Row>, PgError> {
    let statement = client.prepare_cached(&job.sql).await?;
    let params: Vec<&(dyn ToSql + Sync)> = job.params.iter().map(|p| &**p as &(dyn ToSql + Sync)).collect();
    Ok(client.query(&statement, &params).await?)
}

/// The writes of `group` in one transaction, pipelined (begin, every write, commit: one round
/// trip). After a failed write the commit only ends the aborted transaction.
async fn together(client: &deadpool_postgres::Object, group: &[Job]) -> Together {
    let mut statements = Vec::with_capacity(group.len());
    for job in group {
        match client.prepare_cached(&job.sql).await {
            Ok(statement) => statements.push(statement),
            Err(_) => return Together::RolledBack,
        }
    }
    let params: Vec<Vec<&(dyn ToSql + Sync)>> =
        group.iter().map(|job| job.params.iter().map(|p| &**p as &(dyn ToSql + Sync)).collect()).collect();
    let begin = client.batch_execute("BEGIN");
    let writes =
        join_all(statements.iter().zip(&params).map(|(statement, params)| client.query(statement, params)));
    let end = client.batch_execute("COMMIT");
    let (begun, results, ended) = tokio::join!(begin, writes, end);
    if begun.is_err() || results.iter().any(Result::is_err) {
        return Together::RolledBack;
    }
    match ended {
        Ok(()) => Together::Committed(results.into_iter().map(Result::unwrap_or_default).collect()),
        Err(e) => Together::Unknown(e),
    }
}
