//! One key names one service, signal or notification; a signal has no `error` event, and a
//! notification triggers nothing.

use orchestrator_examples::calculator::AddV1;
use orchestrator_examples::review::*;

orchestrator::machine! {
    pub machine Flow {
        contract: ReviewV1,
        services: { add: AddV1 },
        signals: { decision: DecisionV1, add: AuditLogV1 },
        notifications: { audit: AuditLogV1, decision: AuditLogV1, subject: DecisionV1 },
        output: |_| ReviewOutcome { document: String::new(), approved: false, by: String::new() },
        states: {
            waiting: { on: { decision::error => done, audit::AuditEntry => done } },
            done: { type: final },
        },
    }
}

fn main() {}
