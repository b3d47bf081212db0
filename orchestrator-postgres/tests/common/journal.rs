//! The checks of a finished workflow's journal the workload and fault tests share.

use std::collections::HashSet;

use orchestrator::event::Event;
use orchestrator::memory::{Journal, JournalRecord, Memory, Stored};
use orchestrator::orchestration::WorkflowRecord;
use orchestrator_postgres::PgStore;

/// Reads workflow `i` (`subject`, started by `init`) and checks that it is done, that its
/// journal is gapless and ends with its record, that no event was consumed twice and that the
/// first consumed is its init. Returns the state read and the journal.
pub async fn check_done(
    store: &PgStore<WorkflowRecord>,
    i: usize,
    subject: &str,
    init: &Event,
) -> (Stored<WorkflowRecord>, Vec<JournalRecord<WorkflowRecord>>) {
    let stored = store.read(subject).await.expect("reading the state").expect("the workflow's state");
    assert!(stored.record.done, "workflow {i} is done");
    let journal = store.history(subject, 0, 100).await.expect("reading the journal");
    let versions: Vec<u64> = journal.iter().map(|e| e.version).collect();
    assert_eq!(versions, (1..=stored.version).collect::<Vec<_>>(), "workflow {i}: the journal is gapless");
    assert_eq!(journal.last().map(|e| &e.record), Some(&stored.record), "workflow {i}: journal = record");
    let consumed: Vec<&str> = journal.iter().filter_map(|e| e.consumed.as_ref().map(Event::id)).collect();
    let unique: HashSet<&str> = consumed.iter().copied().collect();
    assert_eq!(unique.len(), consumed.len(), "workflow {i}: an event consumed twice: {consumed:?}");
    assert_eq!(consumed.first().copied(), Some(init.id()), "workflow {i} started by its init");
    (stored, journal)
}
