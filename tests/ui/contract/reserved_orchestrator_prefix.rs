//! A plain contract may not accept an `arvo.orc` type: that prefix belongs to orchestrators.

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
        type: "arvo.orc.calc.add",
        versions: {
            AddV1 = "1.0.0" {
                accepts: Input,
                emits: { "evt.calc.add.success" => Output },
            },
        },
    }
}

fn main() {}
