//! The contract uri must be a properly encoded URI.

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
        uri: "100%",
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
