//! Each version has its own type name, distinct from the contract's; a clash is reported once by
//! the macro (not again by rustc as a type defined twice).

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
            AddV1 = "2.0.0" {
                accepts: Input,
                emits: { "evt.calc.add.success" => Output },
            },
            Add = "3.0.0" {
                accepts: Input,
                emits: { "evt.calc.add.success" => Output },
            },
        },
    }
}

fn main() {}
