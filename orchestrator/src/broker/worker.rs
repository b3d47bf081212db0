//! The worker loop: take the next event, deliver it, dispatch what it produced, release its
//! subject's lane. A broker runs N of these as tokio tasks.

use std::sync::Arc;

use super::catch_panic::{CatchPanic, catch};
use super::handle::BrokerHandle;
use super::outlets::{DeadLetterReason, DomainedEvent};
use super::queue::Job;
use super::shared::{Origin, Shared};
use super::stats::bump;
use crate::event::Event;

/// Runs until the broker is closed and drained.
pub(super) async fn run(shared: Arc<Shared>) {
    while let Some(Job { subject, event }) = shared.next_job().await {
        // Released on every path, including a cancelled (aborted) worker.
        let _release = Release { shared: &shared, subject };
        deliver(&shared, event).await;
    }
}

/// Marks the job's subject as no longer busy when dropped.
struct Release<'a> {
    shared: &'a Shared,
    subject: Arc<str>,
}

impl Drop for Release<'_> {
    fn drop(&mut self) {
        self.shared.finish(&self.subject);
    }
}

/// Hands the event to the handler of its `to`, or to a resolve collecting it, or reports it.
async fn deliver(shared: &Arc<Shared>, event: Event) {
    let Some(handler) = event.to().and_then(|to| shared.route(to)) else {
        match shared.collectors.deliver(event) {
            None => bump(&shared.counters.collected),
            Some(event) => {
                let to = event.to().unwrap_or_default().to_owned();
                shared.outlets.dead_letter(&shared.counters, event, DeadLetterReason::NoHandler { to });
            }
        }
        return;
    };
    bump(&shared.counters.delivered);
    let outcome = match catch(|| handler.execute_dyn(&event)) {
        Ok(execution) => CatchPanic(execution).await,
        Err(message) => Err(message),
    };
    match outcome {
        Ok(Ok(produced)) => dispatch(shared, produced).await,
        Ok(Err(violation)) => {
            shared.outlets.dead_letter(&shared.counters, event, DeadLetterReason::Violation(violation))
        }
        Err(message) => {
            shared.outlets.dead_letter(&shared.counters, event, DeadLetterReason::Panicked { message })
        }
    }
}

/// Publishes the produced events in order; domained ones go to the domained-events callback
/// (awaited here, so the subject stays busy and the broker is not idle until it returns) or are
/// kept.
async fn dispatch(shared: &Arc<Shared>, produced: Vec<Event>) {
    for event in produced {
        bump(&shared.counters.produced);
        let Some(domain) = event.domain().map(str::to_owned) else {
            if let Err(refused) = shared.enqueue(event, Origin::Produced) {
                let reason = DeadLetterReason::Rejected(refused.error);
                shared.outlets.dead_letter(&shared.counters, *refused.event, reason);
            }
            continue;
        };
        bump(&shared.counters.domained);
        let domained = DomainedEvent { domain, event };
        let Some(callback) = shared.outlets.on_domained() else {
            shared.outlets.keep_domained(domained);
            continue;
        };
        // Kept only to report the event if the callback panics.
        let copy = domained.event.clone();
        let handle = BrokerHandle { shared: Arc::clone(shared) };
        let outcome = match catch(|| callback(domained, handle)) {
            Ok(future) => CatchPanic(future).await,
            Err(message) => Err(message),
        };
        if let Err(message) = outcome {
            shared.outlets.dead_letter(
                &shared.counters,
                copy,
                DeadLetterReason::CallbackPanicked { message },
            );
        }
    }
}
