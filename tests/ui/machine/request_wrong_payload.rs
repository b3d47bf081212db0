//! A service method takes the payload the service accepts.

use orchestrator_examples::calculator::*;

fn request_add(_: &mut (), _: &AverageEvent, out: &mut AverageOutbox<'_>) {
    out.add(Sum { sum: 1.0 });
}

orchestrator::machine! {
    pub machine Average {
        contract: AverageV1,
        services: { add: AddV1 },
        output: |_| AverageOutput { average: 0.0 },
        states: {
            adding: { entry: [request_add], on: { add::Sum => done } },
            done: { type: final },
        },
    }
}

fn main() {}
