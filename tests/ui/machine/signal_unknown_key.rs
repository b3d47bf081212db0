//! A trigger naming neither a service nor a signal is an error on the name, suggesting the
//! declared signal.

use orchestrator_examples::review::*;

orchestrator::machine! {
    pub machine Flow {
        contract: ReviewV1,
        signals: { decision: DecisionV1 },
        output: |_| ReviewOutcome { document: String::new(), approved: false, by: String::new() },
        states: {
            waiting: { on: { decison::Decision => done } },
            done: { type: final },
        },
    }
}

fn main() {}
