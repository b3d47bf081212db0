//! A signal trigger names the payload the signal's contract accepts.

use orchestrator_examples::review::*;

orchestrator::machine! {
    pub machine Flow {
        contract: ReviewV1,
        signals: { decision: DecisionV1 },
        output: |_| ReviewOutcome { document: String::new(), approved: false, by: String::new() },
        states: {
            waiting: { on: { decision::AuditEntry => done } },
            done: { type: final },
        },
    }
}

fn main() {}
