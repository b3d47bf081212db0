//! The outbox has one method per declared service: emitting to another one does not compile.

use orchestrator_examples::calculator::*;

fn request_mul(_: &mut (), _: &AverageEvent, out: &mut AverageOutbox<'_>) {
    out.mul(Operands { a: 1.0, b: 2.0 });
}

orchestrator::machine! {
    pub machine Average {
        contract: AverageV1,
        services: { add: AddV1 },
        output: |_| AverageOutput { average: 0.0 },
        states: {
            adding: { entry: [request_mul], on: { add::Sum => done } },
            done: { type: final },
        },
    }
}

fn main() {}
