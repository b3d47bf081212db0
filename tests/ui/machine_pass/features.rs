//! Nested, parallel and history states, eventless transitions, built-in actions and guards,
//! closures as guards and actions, a parallel region typed as a struct.

use orchestrator::machine::MachineInstance;
use orchestrator::prelude::*;

#[derive(Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Start {
    pub limit: u32,
}

#[derive(Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Done {
    pub count: u32,
}

orchestrator::orchestrator_contract! {
    pub contract TourContract {
        uri: "#/orc/tour",
        name: "tour",
        versions: { TourV1 = "1.0.0" { init: Start, complete: Done } },
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Ctx {
    pub count: u32,
    pub limit: u32,
}

orchestrator::machine! {
    pub machine Tour {
        contract: TourV1,
        context: Ctx,
        init: |start| Ctx { count: 0, limit: start.limit },
        output: |ctx| Done { count: ctx.count },
        states: {
            work: {
                initial: busy,
                states: {
                    busy: {
                        type: parallel,
                        states: {
                            left: { states: { a: { on: { "flip" => work.busy.left.b } }, b: {} } },
                            right: { states: { c: {} } },
                        },
                        on: { "count" => { actions: [|ctx, _, _| ctx.count += 1] } },
                    },
                    back: { type: history, history: deep },
                },
                on: {
                    "pause" => paused,
                    "check" => { target: done, guard: in(work.busy.left.b) },
                },
                always: [{ target: done, guard: |ctx, _| ctx.count >= ctx.limit }],
            },
            paused: {
                entry: [send("resume", delay = 100, id = "t"), raise("noted")],
                on: { "resume" => work.back, "noted" => { actions: [cancel("x")] } },
            },
            done: { type: final },
        },
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (mut m, _) = MachineInstance::<Tour>::start(Start { limit: 2 })?;
    let left_a = TourState::Work(TourWork::Busy(TourWorkBusy { left: TourWorkBusyLeft::A, right: TourWorkBusyRight::C }));
    assert_eq!(m.state(), left_a);
    m.send_named("flip")?;
    m.send_named("pause")?;
    assert_eq!(m.state(), TourState::Paused);
    m.advance(100)?;
    assert!(m.is_in("work.busy.left.b"), "deep history restored");
    m.send_named("count")?;
    m.send_named("count")?;
    assert!(m.is_done());
    assert_eq!(m.output(), Some(Done { count: 2 }));
    Ok(())
}
