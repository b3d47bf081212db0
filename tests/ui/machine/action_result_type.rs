//! A fallible action returns `Result<(), E>`; `Result<u8, E>` is an error on the action.

use orchestrator_examples::calculator::*;

fn store_sum(_: &mut (), _: &AverageEvent, _: &mut AverageOutbox<'_>) -> Result<u8, std::io::Error> {
    Ok(1)
}

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
