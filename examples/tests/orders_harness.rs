//! The order workflow (`orchestrator_examples::orders::OrderFlow`) tested with
//! `orchestrator::harness`: no node, no transport, a manual clock for its payment timeout.

#![allow(clippy::unwrap_used)]

use std::time::Duration;

use orchestrator::harness::{Expect, Scenario, Step, TestEnv, TestMemory};
use orchestrator::prelude::*;
use orchestrator_examples::orders::{
    Charge, Dispatch, InventoryV1, OrderFlow, OrderInput, OrderOutcome, OrderV1, PaymentV1, Reservation,
    ShippingV1,
};
use serde_json::json;

const SHOP: &str = "com.example.shop";

fn orders(env: &TestEnv) -> Result<Orchestrator<TestMemory>, Violation> {
    Orchestrator::builder(env.memory()).machine::<OrderFlow>().clock(env.clock()).build()
}

fn order() -> Event {
    let input = OrderInput { order_id: "o-1".into(), sku: "book".into(), quantity: 2, amount_cents: 4_200 };
    EventFactory::<OrderV1>::new().init(input, Event::builder().source(SHOP)).unwrap()
}

fn outcome(status: &'static str) -> Expect {
    Expect::event_type("arvo.orc.shop.order.done")
        .to(SHOP)
        .payload(move |o: &OrderOutcome| o.status == status)
}

#[tokio::test]
async fn an_order_is_reserved_charged_and_shipped() {
    Scenario::new("ships")
        .step(Step::send(order()).expect(Expect::event_type(InventoryV1::TYPE).field("quantity", json!(2))))
        .step(
            Step::answer::<InventoryV1, _>(Reservation { reserved: true, left: 3 })
                .expect(Expect::event_type(PaymentV1::TYPE).field("amount_cents", json!(4_200))),
        )
        .step(
            Step::answer::<PaymentV1, _>(Charge { approved: true, reference: "p-1".into() })
                .expect(Expect::event_type(ShippingV1::TYPE)),
        )
        .step(
            Step::answer::<ShippingV1, _>(Dispatch { tracking: "t-1".into() })
                .expect(outcome("shipped").field("tracking", json!("t-1"))),
        )
        .run(orders)
        .await
        .assert();
}

#[tokio::test]
async fn an_order_without_an_answer_from_the_payment_provider_is_rejected_after_30_s() {
    Scenario::new("payment times out")
        .step(Step::send(order()).expect(Expect::event_type(InventoryV1::TYPE)))
        .step(
            Step::answer::<InventoryV1, _>(Reservation { reserved: true, left: 3 })
                .expect(Expect::event_type(PaymentV1::TYPE)),
        )
        .step(Step::advance(Duration::from_secs(29)).expect_none())
        .step(Step::advance(Duration::from_secs(1)).expect(outcome("rejected")))
        .run(orders)
        .await
        .assert();
}
