//! Every mistake of a declaration is reported in one compile, each on its own token.

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
        type: "com.app",
        domain: "Calc Team",
        owner: "calc-team",
        versions: {
            AddV1 = "1.0" {
                accepts: Input,
                emits: { "arvo.orc.calc.add.done" => Output },
            },
            AddV2 = "0.0.0" {
                emits: { "Evt.Calc.Add.Success" => Output },
            },
        },
    }
}

fn main() {
    // The fallback expansion still declares the types, so using them adds no error.
    let _ = (Add, AddV1, AddV2);
}
