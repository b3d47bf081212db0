//! The workload of the node tests (`orchestrator-testkit`), with the check of what NATS still
//! holds after a run: nothing in the stream, no dead letters.

use orchestrator::orchestration::WorkflowRecord;
use orchestrator::prelude::*;
use orchestrator_nats::NatsTransport;
use orchestrator_sqlite::SqliteMemory;
pub use orchestrator_testkit::*;

/// What the stream and the dead letters still hold.
#[allow(clippy::expect_used)]
async fn left(transport: &NatsTransport) -> Left {
    Left {
        waiting: transport.waiting().await.expect("waiting"),
        dead_letters: transport.dead_letters(0, 10).await.expect("dead letters").len(),
    }
}

/// Each workflow of `inits` completed exactly once after three steps; nothing left in flight.
pub async fn check(
    store: &SqliteMemory<WorkflowRecord>,
    transport: &NatsTransport,
    seen: &Seen,
    inits: &[Event],
) {
    check_with(store, seen, inits, false, left(transport).await).await;
}

/// [`check`], for runs with faults: a service whose acknowledgement was lost (its process was
/// killed, or the server restarted) runs again when its request is delivered again, and its
/// second answer (another event id) reaches the workflow, which journals it without stepping
/// further. So the journal may hold more than three entries: it is gapless, each event was
/// consumed once, and the completion was produced once.
pub async fn check_faults(
    store: &SqliteMemory<WorkflowRecord>,
    transport: &NatsTransport,
    seen: &Seen,
    inits: &[Event],
) {
    check_with(store, seen, inits, true, left(transport).await).await;
}
