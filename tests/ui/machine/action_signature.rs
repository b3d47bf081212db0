//! An action is `fn(&mut Context, &Event, &mut Outbox<'_>)`; another signature is an error on it.

use orchestrator_examples::calculator::*;

fn store_sum(_: &mut (), _: &AverageEvent) {}

orchestrator::machine! {
    pub machine Average {
        contract: AverageV1,
        services: { add: AddV1 },
        output: |_| AverageOutput { average: 0.0 },
        states: {
            adding: { on: { add::Sum => { target: done, actions: [store_sum] } } },
            done: { type: final },
        },
    }
}

fn main() {}
