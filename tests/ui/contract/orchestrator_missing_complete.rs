//! Every orchestrator version declares its `complete` payload.

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
        name: "calc.average",
        versions: {
            AverageV1 = "1.0.0" { init: Input },
        },
    }
}

fn main() {}
