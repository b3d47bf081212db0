//! A factory only emits the payload types its contract version declares. With a single emitted
//! payload, rustc infers it and reports a type mismatch (see `emits_wrong_payload.rs` for the
//! `Emits` diagnostic).

use orchestrator::prelude::*;

#[derive(Serialize, Deserialize, JsonSchema)]
pub struct Input {
    pub a: f64,
}

#[derive(Serialize, Deserialize, JsonSchema)]
pub struct Output {
    pub sum: f64,
}

#[derive(Serialize, Deserialize, JsonSchema)]
pub struct Other {
    pub x: f64,
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

fn main() {
    let _ = EventFactory::<AddV1>::new().emits(Other { x: 1.0 }, Event::builder().source("com.calc.client"));
}
