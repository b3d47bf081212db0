//! A guard or action is named with an identifier (`name = closure`); built-ins cannot be named.

use orchestrator_examples::calculator::*;

orchestrator::machine! {
    pub machine Average {
        contract: AverageV1,
        output: |_| AverageOutput { average: 0.0 },
        states: {
            adding: {
                entry: ["count" = |_, _, _| {}],
                on: { "next" => { target: done, guard: checks.ok = |_, _| true } },
                exit: [ping = raise("ping")],
            },
            done: { type: final },
        },
    }
}

fn main() {}
