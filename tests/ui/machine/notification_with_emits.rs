//! A notification expects no reply: its contract must declare no emitted event.

use orchestrator_examples::calculator::{AddV1, Operands};
use orchestrator_examples::review::*;

fn notify(_: &mut (), _: &FlowEvent, out: &mut FlowOutbox<'_>) {
    out.add(Operands { a: 1.0, b: 2.0 });
}

orchestrator::machine! {
    pub machine Flow {
        contract: ReviewV1,
        notifications: { add: AddV1 },
        output: |_| ReviewOutcome { document: String::new(), approved: false, by: String::new() },
        states: {
            waiting: { entry: [notify], on: { "go" => done } },
            done: { type: final },
        },
    }
}

fn main() {}
