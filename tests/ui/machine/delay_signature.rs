//! A computed `after` delay: a closure is `fn(&Context) -> Duration`, anything else a `Duration`,
//! a `u64` of ms or a `fn(&Context) -> Duration`; a mistake is one error on the user's delay.

use orchestrator_examples::calculator::*;

#[derive(Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct Ctx {
    pub timeout_ms: u64,
}

fn not_a_delay(_: &Ctx) -> u32 {
    0
}

orchestrator::machine! {
    pub machine Average {
        contract: AverageV1,
        context: Ctx,
        output: |_| AverageOutput { average: 0.0 },
        states: {
            a: { after: { timeout = |ctx| ctx.timeout_ms => b } },
            b: { after: { not_a_delay => c } },
            c: { after: { "soon" => d } },
            d: { after: { t = |_| std::time::Duration::ZERO => a, t = |_| std::time::Duration::ZERO => b } },
        },
    }
}

fn main() {}
