//! Every mistake in a service's retry policy is an error on its token, all in one compile:
//! no attempts, a cap below the first delay, an unknown key, a duplicate key, a value of the
//! wrong form, an unknown option, a missing `attempts`.

use orchestrator_examples::calculator::*;

orchestrator::machine! {
    pub machine Average {
        contract: AverageV1,
        services: {
            add: AddV1 { retry: { attempts: 0, backoff: 500 .. 100, tries: 3 } },
            mul: MulV1 { retry: { attempts: 2, attempts: 3, jitter: yes, on: ["Timeout", "Timeout"] } },
            div: DivideV1 { retry: { backoff: 100 }, timeout: { ms: 5 } },
        },
        output: |_| AverageOutput { average: 0.0 },
        states: {
            adding: { on: { add::Sum => done, mul::error => done, div::error => done } },
            done: { type: final },
        },
    }
}

fn main() {}
