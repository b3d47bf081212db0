//! Each version number is declared once.

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
        uri: "#/calc/add",
        type: "com.calc.add",
        versions: {
            AddV1 = "1.0.0" {
                accepts: Input,
                emits: { "evt.calc.add.success" => Output },
            },
            AddV1Again = "1.0.0" {
                accepts: Input,
                emits: { "evt.calc.add.success" => Output },
            },
        },
    }
}

fn main() {}
