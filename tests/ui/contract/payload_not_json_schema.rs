//! Payload types must derive `JsonSchema` (their schema is generated from the type); the error
//! points at the payload type in the declaration.

use orchestrator::prelude::*;

#[derive(Serialize, Deserialize)]
pub struct Input {
    pub a: f64,
}

#[derive(Serialize, Deserialize, JsonSchema)]
pub struct Output {
    pub sum: f64,
}

orchestrator::contract! {
    pub contract Add {
        uri: "#/calc/add",
        type: "com.calc.add",
        versions: {
            AddV1 = "1.0.0" {
                accepts: Input,
                emits: { "evt.calc.add.success" => Output },
            },
        },
    }
}

fn main() {}
