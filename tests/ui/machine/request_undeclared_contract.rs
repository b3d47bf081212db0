//! The typed request API only takes contracts the machine declares as services.

use orchestrator_examples::calculator::*;

fn request_mul(_: &mut (), _: &AverageEvent, out: &mut AverageOutbox<'_>) {
    out.request(MulV1, Operands { a: 1.0, b: 2.0 });
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
