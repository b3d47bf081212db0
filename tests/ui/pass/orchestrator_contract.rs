//! An orchestrator contract: `name: "calc.average"` accepts `arvo.orc.calc.average` (with the
//! nullable `parentSubject$$`) and completes with `arvo.orc.calc.average.done`.

use orchestrator::contract::{Contract, ContractVersion, OrchestratorVersion};
use orchestrator::prelude::*;

#[derive(Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AverageInput {
    pub values: Vec<f64>,
}

#[derive(Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AverageOutput {
    pub average: f64,
}

orchestrator::orchestrator_contract! {
    /// Averages numbers.
    pub contract Average {
        uri: "#/orc/calc/average",
        name: "calc.average",
        versions: {
            AverageV1 = "1.0.0" { init: AverageInput, complete: AverageOutput },
        },
    }
}

fn complete_type<V: OrchestratorVersion>() -> &'static str {
    <V as Emits<V::Complete>>::EVENT_TYPE
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    assert_eq!(Average::contract().r#type(), "arvo.orc.calc.average");
    assert_eq!(complete_type::<AverageV1>(), "arvo.orc.calc.average.done");

    let factory = EventFactory::<AverageV1>::new();
    let init =
        factory.init(AverageInput { values: vec![1.0, 3.0] }, Event::builder().source("com.calc.client"))?;
    assert_eq!(init.r#type(), "arvo.orc.calc.average");
    assert_eq!(init.data()["parentSubject$$"], serde_json::Value::Null);
    let parsed = AverageV1::parse_accepts(&init)?;
    assert_eq!(parsed.parent_subject, None);
    assert_eq!(parsed.data.values, vec![1.0, 3.0]);

    let parent = init.orchestration_subject()?;
    let child = factory.init_child(
        AverageInput { values: vec![2.0] },
        parent,
        Event::builder().source("arvo.orc.calc.average"),
    )?;
    assert_eq!(AverageV1::parse_accepts(&child)?.parent_subject.as_deref(), Some(init.subject()));

    let done = factory.complete(
        AverageOutput { average: 2.0 },
        Event::builder().source("arvo.orc.calc.average").orchestration_subject(parent),
    )?;
    assert_eq!(done.r#type(), "arvo.orc.calc.average.done");
    Ok(())
}
