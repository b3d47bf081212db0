//! The wire in 30 seconds: typed contracts, typed event factories, the wire format, validation.
//!
//! Run with `cargo run --example wire_tour`.

use orchestrator::prelude::*;
use orchestrator_examples::calculator::{AddV1, AverageInput, AverageV1, DivideV2, Operands, Sum};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // A workflow is started by a client with the orchestrator contract's init event.
    let init = EventFactory::<AverageV1>::new()
        .init(AverageInput { values: vec![2.0, 4.0, 9.0] }, Event::builder().source("com.example.client"))?;
    let subject = init.orchestration_subject()?;
    println!("init event  {}", init.r#type());
    println!("  subject   orchestrator={} execution={}", subject.orchestrator_name(), subject.execution_id());
    println!("  wire      {}", init.to_json_string());

    // The orchestrator asks the add service; the service answers on the same subject.
    let add = EventFactory::<AddV1>::new();
    let request = add.accepts(
        Operands { a: 2.0, b: 4.0 },
        Event::builder().source("arvo.orc.calc.average").orchestration_subject(subject).parentid(init.id()),
    )?;
    let operands = AddV1::parse_accepts(&request)?;
    let response = add.emits(
        Sum { sum: operands.a + operands.b },
        Event::builder()
            .source("com.calc.add")
            .orchestration_subject(subject)
            .parentid(request.id())
            .to("arvo.orc.calc.average"),
    )?;
    println!(
        "service     {} -> {} {}",
        request.r#type(),
        response.r#type(),
        serde_json::to_string(response.data())?
    );

    // Bytes from the wire are parsed and checked against the contract's generated JSON Schema.
    let bad = request
        .to_builder()
        .r#type("com.calc.divide")
        .dataschema("#/calc/divide/2.0.0")
        .data_json(serde_json::json!({"numerator": 1, "denominator": 0, "precision": 40}))
        .build()?;
    let parsed = Event::from_slice(&bad.to_json_vec())?;
    match DivideV2::parse_accepts(&parsed) {
        Ok(request) => println!("unexpected: {request:?}"),
        Err(violation) => println!("rejected    {violation}"),
    }

    // Malformed input gets a typed error naming every broken rule.
    let garbage =
        br#"{"id":"","source":"com app","specversion":"0.3","type":"com.app","subject":"s","data":[]}"#;
    if let Err(error) = Event::from_slice(garbage) {
        println!("rejected    {error}");
    }
    Ok(())
}
