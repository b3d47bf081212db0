//! The dead letters a store keeps for a workflow: the PostgreSQL queue's `dead_letters` table;
//! a SQLite store keeps none (a node's dead letters go to its callback or its memory).

use orchestrator_postgres::QueueConfig;

use super::workflow::DeadLetterView;
use crate::store::Store;

/// How many dead letters are looked through for one workflow's.
const SCANNED: usize = 10_000;

/// The dead letters whose subject is `id`, oldest first, or why none can be shown.
pub(crate) async fn of(store: &Store, id: &str) -> Result<Vec<DeadLetterView>, String> {
    let Store::Postgres(pg) = store else {
        return Err("a SQLite store keeps no dead letters (a node hands them to its callback or keeps them in memory)".to_owned());
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
