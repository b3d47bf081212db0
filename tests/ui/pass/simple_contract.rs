//! A simple contract: `type: "calc.add"` accepts `com.calc.add` and emits `evt.calc.add.success`.

use orchestrator::contract::{Contract, ContractVersion, Emits};
use orchestrator::prelude::*;

#[derive(Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Operands {
    pub a: f64,
    pub b: f64,
}

#[derive(Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Sum {
    pub sum: f64,
}

orchestrator::simple_contract! {
    /// Adds two numbers.
    pub contract Add {
        uri: "#/calc/add",
        type: "calc.add",
        versions: {
            AddV1 = "1.0.0" { accepts: Operands, emits: Sum },
        },
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    assert_eq!(Add::contract().r#type(), "com.calc.add");
    assert_eq!(AddV1::TYPE, "com.calc.add");
    assert_eq!(<AddV1 as Emits<Sum>>::EVENT_TYPE, "evt.calc.add.success");

    let factory = EventFactory::<AddV1>::new();
    let request = factory.accepts(Operands { a: 1.0, b: 2.0 }, Event::builder().source("com.calc.client"))?;
    let input = AddV1::parse_accepts(&request)?;
    assert_eq!(input, Operands { a: 1.0, b: 2.0 });
    // The subject was generated: orchestrator = the event type, initiator = the source.
    let subject = request.orchestration_subject()?;
    assert_eq!(subject.orchestrator_name(), "com.calc.add");
    assert_eq!(subject.initiator(), "com.calc.client");

    let reply = factory.emits(
        Sum { sum: input.a + input.b },
        Event::builder().source("com.calc.add").orchestration_subject(subject),
    )?;
    assert_eq!(reply.r#type(), "evt.calc.add.success");
    assert_eq!(reply.subject(), request.subject());
    Ok(())
}
