//! A service with a retry policy: the policy is part of its `ServiceInfo`.

use std::time::Duration;

use orchestrator::machine::Machine;
use orchestrator_examples::calculator::*;

orchestrator::machine! {
    pub machine Average {
        contract: AverageV1,
        services: {
            add: AddV1 { retry: { attempts: 4, backoff: 200 .. 10_000, jitter: true, on: ["Timeout", "Unavailable"] } },
            mul: MulV1 { retry: { attempts: 2 } },
            div: DivideV1,
        },
        output: |_| AverageOutput { average: 0.0 },
        states: {
            adding: { on: { add::Sum => done } },
            done: { type: final },
        },
    }
}

fn main() {
    let services = Average::services();
    let add = services[0].retry.as_ref().expect("add retries");
    assert_eq!(add.attempts(), 4);
    assert_eq!(add.backoff_bounds(), (Duration::from_millis(200), Duration::from_secs(10)));
    assert!(add.is_jittered() && add.retries("Timeout") && !add.retries("BadRequest"));
    let mul = services[1].retry.as_ref().expect("mul retries");
    assert!(mul.attempts() == 2 && mul.retries("anything") && !mul.is_jittered());
    assert!(services[2].retry.is_none());
}
