//! A plain contract with two versions, a domain and metadata; its generated API works.

use orchestrator::contract::{Contract, ContractVersion, Emits};
use orchestrator::prelude::*;

#[derive(Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DivideRequest {
    pub numerator: f64,
    pub denominator: f64,
}

#[derive(Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DivideRequestV2 {
    pub numerator: f64,
    pub denominator: f64,
    pub precision: u8,
}

#[derive(Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Quotient {
    pub quotient: f64,
}

#[derive(Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DivisionByZero {
    pub numerator: f64,
}

orchestrator::contract! {
    /// Divides two numbers.
    pub contract Divide {
        uri: "#/calc/divide",
        type: "com.calc.divide",
        domain: "calc",
        metadata: { "owner": "calc-team", "tier": 2, "beta": false },
        versions: {
            DivideV1 = "1.0.0" {
                accepts: DivideRequest,
                emits: { "evt.calc.divide.success" => Quotient },
            },
            /// Rounds the result.
            DivideV2 = "2.0.0" {
                accepts: DivideRequestV2,
                emits: {
                    "evt.calc.divide.success" => Quotient,
                    "evt.calc.divide.by.zero" => DivisionByZero,
                },
            },
        },
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let contract = Divide::contract();
    assert_eq!(contract.uri(), "#/calc/divide");
    assert_eq!(contract.r#type(), "com.calc.divide");
    assert_eq!(contract.domain(), Some("calc"));
    assert_eq!(contract.description(), Some("Divides two numbers."));
    assert_eq!(contract.metadata()["owner"], "calc-team");
    assert_eq!(contract.versions().count(), 2);
    assert_eq!(DivideV2::VERSION, "2.0.0");
    assert_eq!(<DivideV2 as Emits<DivisionByZero>>::EVENT_TYPE, "evt.calc.divide.by.zero");

    let request = EventFactory::<DivideV2>::new().accepts(
        DivideRequestV2 { numerator: 1.0, denominator: 4.0, precision: 2 },
        Event::builder().source("com.calc.client"),
    )?;
    assert_eq!(request.r#type(), "com.calc.divide");
    assert_eq!(request.dataschema(), Some("#/calc/divide/2.0.0"));
    let input = DivideV2::parse_accepts(&request)?;
    assert_eq!(input.precision, 2);
    // A v2 request is not a v1 request.
    assert!(DivideV1::parse_accepts(&request).is_err());

    let reply = EventFactory::<DivideV2>::new().emits(
        DivisionByZero { numerator: 1.0 },
        Event::builder().source("com.calc.divide").subject(request.subject()),
    )?;
    assert_eq!(reply.r#type(), "evt.calc.divide.by.zero");
    let parsed = <DivideV2 as Emits<DivisionByZero>>::parse_emitted(&reply)?;
    assert_eq!(parsed, DivisionByZero { numerator: 1.0 });
    Ok(())
}
