//! Every simple-contract version declares its `emits` payload.

use orchestrator::prelude::*;

#[derive(Serialize, Deserialize, JsonSchema)]
pub struct Input {
    pub a: f64,
}

#[derive(Serialize, Deserialize, JsonSchema)]
pub struct Output {
    pub sum: f64,
}

orchestrator::simple_contract! {
    pub contract Add {
        uri: "#/calc/add",
        type: "calc.add",
        versions: {
            AddV1 = "1.0.0" { accepts: Input },
        },
    }
}

fn main() {}
