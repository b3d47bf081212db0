//! `orchestrator_fanout`: the machine emits K = 10 `com.calc.add` calls on entry, collects each sum in
//! its context and completes with their total once all K have arrived. One workflow at a time;
//! 2K + 1 = 21 `execute()` calls per workflow (K + 1 orchestrator, K handler). `--k K` changes K.

use orchestrator::orchestration::Orchestrator;
use orchestrator::prelude::*;
use orchestrator_examples::calculator::{AddV1, Operands, Sum};
use serde_json::json;
use tokio::runtime::Runtime;

use super::rig::{self, Client, Measured};
use super::{BoxError, CLIENT, memory};

/// Default calls per workflow (Arvo's K).
pub(crate) const K: u32 = 10;

/// Starts a fan-out workflow: `add(a, j)` for `j` in `0..k`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FanoutInput {
    /// The first operand of every call.
    pub a: f64,
    /// How many calls to make.
    pub k: u32,
}

/// The fan-out's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FanoutOutput {
    /// The sum of the K sums.
    pub total: f64,
}

orchestrator::orchestrator_contract! {
    /// The benchmark fan-out: K additions at once, then their total.
    pub contract Fanout {
        uri: "#/orc/bench/fanout",
        name: "bench.fanout",
        versions: {
            FanoutV1 = "1.0.0" { init: FanoutInput, complete: FanoutOutput },
        },
    }
}

/// Context of the fan-out machine.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct FanoutCtx {
    a: f64,
    k: u32,
    sums: Vec<f64>,
}

fn emit_adds(ctx: &mut FanoutCtx, _: &FanoutFlowEvent, out: &mut FanoutFlowOutbox<'_>) {
    for j in 0..ctx.k {
        out.add(Operands { a: ctx.a, b: f64::from(j) });
    }
}

fn store_sum(ctx: &mut FanoutCtx, event: &FanoutFlowEvent, _: &mut FanoutFlowOutbox<'_>) {
    if let FanoutFlowEvent::AddSum(s) = event {
        ctx.sums.push(s.sum);
    }
}

fn all_arrived(ctx: &FanoutCtx, _: &FanoutFlowEvent) -> bool {
    ctx.sums.len() >= ctx.k as usize
}

orchestrator::machine! {
    /// `collecting` (emit K adds on entry, store each sum) → `done` when all K sums are in.
    pub machine FanoutFlow {
        contract: FanoutV1,
        services: { add: AddV1 },
        context: FanoutCtx,
        init: |input| FanoutCtx { a: input.a, k: input.k, sums: Vec::with_capacity(input.k as usize) },
        output: |ctx| FanoutOutput { total: ctx.sums.iter().sum() },
        states: {
            collecting: {
                entry: [emit_adds],
                on: { add::Sum => { actions: [store_sum] }, add::error => failed },
                always: { target: done, guard: all_arrived },
            },
            done: { type: final },
            failed: { type: final },
        },
    }
}

/// Starts fan-out workflows of `k` calls and expects `total = k·a + k(k−1)/2`.
pub(crate) struct FanoutClient {
    pub(crate) factory: EventFactory<FanoutV1>,
    pub(crate) k: u32,
}

impl Client for FanoutClient {
    const DONE_TYPE: &'static str = "arvo.orc.bench.fanout.done";
    const RESULT_FIELD: &'static str = "total";

    fn init(&self, i: usize) -> Result<(Event, f64), BoxError> {
        let a = (i % 1000) as f64;
        let k = f64::from(self.k);
        let init = self.factory.init(FanoutInput { a, k: self.k }, Event::builder().source(CLIENT))?;
        Ok((init, k * a + k * (k - 1.0) / 2.0))
    }
}

/// The workload: `n` fan-out workflows of `k` calls, one at a time.
pub(crate) fn run(rt: &Runtime, n: usize, k: u32) -> Result<Measured, BoxError> {
    let orc = Orchestrator::builder(memory()).machine::<FanoutFlow>().build()?;
    let per_workflow = 2 * k as usize + 1;
    let client = FanoutClient { factory: EventFactory::new(), k };
    let mut m = rig::lifecycle(rt, orc, client, n, 1, per_workflow)?;
    m.params["k"] = json!(k);
    m.params["events_per_workflow"] = json!(per_workflow);
    Ok(m)
}
