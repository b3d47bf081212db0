//! The workload of the node tests (`orchestrator-testkit`), with the check of what Redis still
//! holds after a run: nothing in the streams, no dead letters.

use orchestrator::orchestration::WorkflowRecord;
use orchestrator::prelude::*;
use orchestrator_redis::RedisTransport;
use orchestrator_sqlite::SqliteMemory;
pub use orchestrator_testkit::*;

/// What the streams and the dead letters still hold.
#[allow(clippy::expect_used)]
async fn left(transport: &RedisTransport) -> Left {
    Left {
        waiting: transport.remaining().await.expect("remaining"),
        dead_letters: transport.dead_letters(None, 10).await.expect("dead letters").len(),
    }
}

/// Each workflow of `inits` completed exactly once after three steps; nothing left in flight.
pub async fn check(
    store: &SqliteMemory<WorkflowRecord>,
    transport: &RedisTransport,
    seen: &Seen,
    inits: &[Event],
) {
    check_with(store, seen, inits, false, left(transport).await).await;
}

/// [`check`], for runs with faults or duplicates: a service that runs again (its delivery was
/// taken over after its process was killed, or its request was published twice: Redis does not
/// deduplicate publishes) sends a second answer (another event id) to the workflow, which
/// journals it without stepping further. So the journal may hold more than three entries: it is
/// gapless, each event was consumed once, and the completion was produced once.
pub async fn check_faults(
    store: &SqliteMemory<WorkflowRecord>,
    transport: &RedisTransport,
    seen: &Seen,
    inits: &[Event],
) {
    check_with(store, seen, inits, true, left(transport).await).await;
}
