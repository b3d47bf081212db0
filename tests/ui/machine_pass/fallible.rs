//! Fallible actions and guards (functions and closures, `()`/`bool` or `Result`), and an
//! `output` returning a `Completion` with options.

use orchestrator::emit::{BoxError, NamedError};
use orchestrator::machine::{ActionError, Completion, MachineError, MachineInstance};
use orchestrator::prelude::*;
use orchestrator_examples::calculator::*;

fn check(ctx: &mut Vec<f64>, _: &AverageEvent, _: &mut AverageOutbox<'_>) -> Result<(), NamedError> {
    if ctx.is_empty() { Err(NamedError::new("Empty", "no values")) } else { Ok(()) }
}

fn positive(ctx: &Vec<f64>, _: &AverageEvent) -> Result<bool, BoxError> {
    if ctx.iter().any(|v| v.is_nan()) {
        return Err("not a number".into());
    }
    Ok(ctx[0] > 0.0)
}

orchestrator::machine! {
    pub machine Average {
        contract: AverageV1,
        context: Vec<f64>,
        init: |input| input.values.clone(),
        output: |ctx| Completion::new(AverageOutput { average: ctx[0] }).id("done-1").execution_units(1.0),
        states: {
            start: {
                entry: [check, |ctx, _, _| ctx.push(1.0)],
                on: {
                    "go" => [
                        { target: done, guard: positive },
                        { target: done, guard: |ctx, _| if ctx.len() > 9 { Err(ActionError::violation("too many")) } else { Ok(true) } },
                    ],
                    "fail" => { actions: [|_, _, _| Err::<(), _>(std::io::Error::other("boom"))] },
                },
            },
            done: { type: final },
        },
    }
}

fn main() {
    let (mut m, _) = MachineInstance::<Average>::start(AverageInput { values: vec![2.0] }).unwrap();
    assert!(matches!(m.send_named("fail"), Err(MachineError::Action { kind: "action", .. })));
    m.send_named("go").unwrap();
    let completion = m.completion().unwrap();
    assert_eq!(completion.options().id.as_deref(), Some("done-1"));
    assert_eq!(m.output(), Some(AverageOutput { average: 2.0 }));
}
