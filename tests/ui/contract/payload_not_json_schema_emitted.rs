//! An emitted payload type must derive `JsonSchema` too. The error points at the payload type; it
//! is printed twice, because both the `Emits<Output>` impl and the schema generation require the
//! trait (each use of the type is checked on its own by rustc).

use orchestrator::prelude::*;

#[derive(Serialize, Deserialize, JsonSchema)]
pub struct Input {
    pub a: f64,
}

#[derive(Serialize, Deserialize)]
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
