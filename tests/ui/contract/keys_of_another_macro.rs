//! Keys of `contract!` given to `orchestrator_contract!` are reported as such, once each.

use orchestrator::prelude::*;

#[derive(Serialize, Deserialize, JsonSchema)]
pub struct Input {
    pub a: f64,
}

#[derive(Serialize, Deserialize, JsonSchema)]
pub struct Output {
    pub sum: f64,
}
orchestrator::orchestrator_contract! {
    pub contract Average {
        uri: "#/orc/calc/average",
        type: "calc.average",
        versions: {
            AverageV1 = "1.0.0" { accepts: Input, emits: Output },
        },
    }
}

fn main() {}
