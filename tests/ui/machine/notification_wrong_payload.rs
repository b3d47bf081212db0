//! A notification method takes the payload its contract accepts.

use orchestrator_examples::review::*;

fn notify(_: &mut (), _: &FlowEvent, out: &mut FlowOutbox<'_>) {
    out.audit(Decision { approved: true, by: String::new() });
}

orchestrator::machine! {
    pub machine Flow {
        contract: ReviewV1,
        notifications: { audit: AuditLogV1 },
        output: |_| ReviewOutcome { document: String::new(), approved: false, by: String::new() },
        states: {
            waiting: { entry: [notify], on: { "go" => done } },
            done: { type: final },
        },
    }
}

fn main() {}
