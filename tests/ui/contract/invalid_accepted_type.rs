//! The accepted event type must be a reverse-DNS name with at least three segments.

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
        type: "com.app",
        versions: {
            AddV1 = "1.0.0" {
                accepts: Input,
                emits: { "evt.calc.add.success" => Output },
            },
        },
    }
}

fn main() {}
