//! The dead letters a store keeps for a workflow: the PostgreSQL queue's `dead_letters` table,
//! or a SQLite store's (where a node over the in-process transport buries them).

use orchestrator::memory::DeadLetterStore;
use orchestrator::orchestration::WorkflowRecord;
use orchestrator_postgres::QueueConfig;
use orchestrator_sqlite::SqliteMemory;

use super::workflow::DeadLetterView;
use crate::store::Store;

/// How many dead letters are looked through for one workflow's.
const SCANNED: usize = 10_000;

/// The dead letters whose subject is `id`, oldest first, or why none can be shown.
pub(crate) async fn of(store: &Store, id: &str) -> Result<Vec<DeadLetterView>, String> {
    let pg = match store {
        Store::Postgres(pg) => pg,
        Store::Sqlite(sqlite) => return of_sqlite(sqlite, id).await,
    };
    let queue = pg.queue(QueueConfig::default());
    let mut found = Vec::new();
    let mut after = 0;
    let mut scanned = 0;
    while scanned < SCANNED {
        let page = queue
            .dead_letters(after, 500)
            .await
            .map_err(|e| format!("cannot read the queue's dead letters: {e}"))?;
        let Some(last) = page.last() else { break };
        after = last.seq;
        scanned += page.len();
        for d in page.into_iter().filter(|d| d.subject == id) {
            let event_type =
                d.decode().map(|e| e.r#type().to_owned()).unwrap_or_else(|_| "(undecodable)".to_owned());
            found.push(DeadLetterView {
                at: d.at,
                event_type,
                reason: d.reason,
                attempt: d.attempt,
                event: d.event,
            });
        }
    }
    Ok(found)
}

/// The dead letters a node buried in a SQLite store for workflow `id`, oldest first.
async fn of_sqlite(store: &SqliteMemory<WorkflowRecord>, id: &str) -> Result<Vec<DeadLetterView>, String> {
    let buried = store
        .buried(Some(id), 0, SCANNED)
        .await
        .map_err(|e| format!("cannot read the store's dead letters: {e}"))?;
    Ok(buried
        .into_iter()
        .map(|b| DeadLetterView {
            at: b.at,
            event_type: b.event.r#type().to_owned(),
            reason: b.reason,
            attempt: b.attempt,
            event: b.event.to_json_string(),
        })
        .collect())
}
