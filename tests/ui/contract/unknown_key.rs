//! Unknown contract-level keys are rejected. A misspelt key is reported once, with the key it
//! probably stands for (and not also as that key missing).

use orchestrator::prelude::*;

#[derive(Serialize, Deserialize, JsonSchema)]
pub struct Input {
    pub a: f64,
}

#[derive(Serialize, Deserialize, JsonSchema)]
pub struct Output {
    pub sum: f64,
}

orchestrator::contract! {
    pub contract Add {
        url: "#/calc/add",
        type: "com.calc.add",
        domain: "calc",
        owner: "calc-team",
        versions: {
            AddV1 = "1.0.0" {
                accepts: Input,
                emits: { "evt.calc.add.success" => Output },
            },
        },
    }
}

fn main() {}
