//! A factory only emits the payload types its contract version declares: the `Emits` trait's
//! diagnostic names the version and the payload and lists the payloads it does emit.

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
pub struct Cached {
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
                emits: {
                    "evt.calc.add.success" => Output,
                    "evt.calc.add.cached" => Cached,
                },
            },
        },
    }
}

fn main() {
    let _ = EventFactory::<AddV1>::new().emits(Other { x: 1.0 }, Event::builder().source("com.calc.client"));
}
