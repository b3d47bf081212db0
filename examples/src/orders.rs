//! An order-fulfilment workflow: reserve stock, charge the payment (with a 30 s timeout), ship.
//! The main example (`cargo run --example quickstart`) runs it on the embedded SQLite store.
//!
//! * Services: [`Inventory`] (`com.shop.inventory.reserve`), [`Payment`]
//!   (`com.shop.payment.charge`), [`Shipping`] (`com.shop.shipping.dispatch`), served by
//!   [`services`].
//! * Workflow: [`Order`] (`arvo.orc.shop.order`), run by the machine [`OrderFlow`].

use orchestrator::prelude::*;

/// Reserve `quantity` units of `sku`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ReserveRequest {
    /// The order.
    pub order_id: String,
    /// The article.
    pub sku: String,
    /// How many.
    #[schemars(range(min = 1))]
    pub quantity: u32,
}

/// The outcome of a reservation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Reservation {
    /// Whether the stock was there.
    pub reserved: bool,
    /// Units left after the reservation.
    pub left: u32,
}

/// Charge `amount_cents` for an order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ChargeRequest {
    /// The order.
    pub order_id: String,
    /// The amount, in cents.
    #[schemars(range(min = 1))]
    pub amount_cents: u64,
}

/// The outcome of a charge.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Charge {
    /// Whether the payment went through.
    pub approved: bool,
    /// The payment provider's reference.
    pub reference: String,
}

/// Ship an order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DispatchRequest {
    /// The order.
    pub order_id: String,
    /// The article.
    pub sku: String,
    /// How many.
    pub quantity: u32,
}

/// A shipment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Dispatch {
    /// The carrier's tracking number.
    pub tracking: String,
}

orchestrator::simple_contract! {
    /// Reserves stock.
    pub contract Inventory {
        uri: "#/shop/inventory/reserve",
        type: "shop.inventory.reserve",
        versions: { InventoryV1 = "1.0.0" { accepts: ReserveRequest, emits: Reservation } },
    }
}

orchestrator::simple_contract! {
    /// Charges a payment.
    pub contract Payment {
        uri: "#/shop/payment/charge",
        type: "shop.payment.charge",
        versions: { PaymentV1 = "1.0.0" { accepts: ChargeRequest, emits: Charge } },
    }
}

orchestrator::simple_contract! {
    /// Ships an order.
    pub contract Shipping {
        uri: "#/shop/shipping/dispatch",
        type: "shop.shipping.dispatch",
        versions: { ShippingV1 = "1.0.0" { accepts: DispatchRequest, emits: Dispatch } },
    }
}

/// An order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct OrderInput {
    /// The order's id.
    pub order_id: String,
    /// The article.
    pub sku: String,
    /// How many.
    #[schemars(range(min = 1))]
    pub quantity: u32,
    /// The price, in cents.
    #[schemars(range(min = 1))]
    pub amount_cents: u64,
}

/// How an order ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct OrderOutcome {
    /// The order's id.
    pub order_id: String,
    /// `shipped`, `rejected` or `failed`.
    pub status: String,
    /// The tracking number, once shipped.
    pub tracking: Option<String>,
    /// Why it was rejected or failed.
    pub reason: Option<String>,
}

orchestrator::orchestrator_contract! {
    /// Fulfils an order.
    pub contract Order {
        uri: "#/orc/shop/order",
        name: "shop.order",
        versions: { OrderV1 = "1.0.0" { init: OrderInput, complete: OrderOutcome } },
    }
}

/// The workflow's context.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct OrderCtx {
    /// The order.
    pub order_id: String,
    /// The article.
    pub sku: String,
    /// How many.
    pub quantity: u32,
    /// The price, in cents.
    pub amount_cents: u64,
    /// The payment reference, once charged.
    pub payment: Option<String>,
    /// The tracking number, once shipped.
    pub tracking: Option<String>,
    /// Why the order was rejected or failed.
    pub reason: Option<String>,
    /// `shipped`, `rejected` or `failed` at the end.
    pub status: String,
}

fn reserve(ctx: &mut OrderCtx, _: &OrderFlowEvent, out: &mut OrderFlowOutbox<'_>) {
    out.inventory(ReserveRequest {
        order_id: ctx.order_id.clone(),
        sku: ctx.sku.clone(),
        quantity: ctx.quantity,
    });
}

fn charge(ctx: &mut OrderCtx, _: &OrderFlowEvent, out: &mut OrderFlowOutbox<'_>) {
    out.payment(ChargeRequest { order_id: ctx.order_id.clone(), amount_cents: ctx.amount_cents });
}

fn ship(ctx: &mut OrderCtx, _: &OrderFlowEvent, out: &mut OrderFlowOutbox<'_>) {
    out.shipping(DispatchRequest {
        order_id: ctx.order_id.clone(),
        sku: ctx.sku.clone(),
        quantity: ctx.quantity,
    });
}

fn reserved(_: &OrderCtx, event: &OrderFlowEvent) -> bool {
    matches!(event, OrderFlowEvent::InventoryReservation(Reservation { reserved: true, .. }))
}

fn approved(_: &OrderCtx, event: &OrderFlowEvent) -> bool {
    matches!(event, OrderFlowEvent::PaymentCharge(Charge { approved: true, .. }))
}

fn remember(ctx: &mut OrderCtx, event: &OrderFlowEvent, _: &mut OrderFlowOutbox<'_>) {
    match event {
        OrderFlowEvent::PaymentCharge(c) if c.approved => ctx.payment = Some(c.reference.clone()),
        OrderFlowEvent::PaymentCharge(c) => ctx.reason = Some(format!("payment {} declined", c.reference)),
        OrderFlowEvent::InventoryReservation(r) if !r.reserved => {
            ctx.reason = Some(format!("{} is out of stock", ctx.sku));
        }
        OrderFlowEvent::ShippingDispatch(d) => ctx.tracking = Some(d.tracking.clone()),
        OrderFlowEvent::InventoryError(e)
        | OrderFlowEvent::PaymentError(e)
        | OrderFlowEvent::ShippingError(e) => {
            ctx.reason = Some(format!("{}: {}", e.error_name, e.error_message));
        }
        _ => {}
    }
}

fn outcome(ctx: &OrderCtx) -> OrderOutcome {
    OrderOutcome {
        order_id: ctx.order_id.clone(),
        status: ctx.status.clone(),
        tracking: ctx.tracking.clone(),
        reason: ctx.reason.clone(),
    }
}

orchestrator::machine! {
    /// reserving → charging (30 s timeout) → shipping → shipped; rejected or failed otherwise.
    pub machine OrderFlow {
        contract: OrderV1,
        services: { inventory: InventoryV1, payment: PaymentV1, shipping: ShippingV1 },
        context: OrderCtx,
        init: |input| OrderCtx {
            order_id: input.order_id.clone(),
            sku: input.sku.clone(),
            quantity: input.quantity,
            amount_cents: input.amount_cents,
            ..OrderCtx::default()
        },
        output: outcome,
        states: {
            reserving: {
                entry: [reserve],
                on: {
                    inventory::Reservation => [
                        { target: charging, guard: reserved },
                        { target: rejected, actions: [remember] },
                    ],
                    inventory::error => { target: failed, actions: [remember] },
                },
            },
            charging: {
                entry: [charge],
                on: {
                    payment::Charge => [
                        { target: shipping, guard: approved, actions: [remember] },
                        { target: rejected, actions: [remember] },
                    ],
                    payment::error => { target: failed, actions: [remember] },
                },
                after: {
                    30000 => {
                        target: rejected,
                        actions: [timed_out = |ctx, _, _| ctx.reason = Some("no answer from the payment provider in 30 s".into())],
                    },
                },
            },
            shipping: {
                entry: [ship],
                on: {
                    shipping::Dispatch => { target: shipped, actions: [remember] },
                    shipping::error => { target: failed, actions: [remember] },
                },
            },
            shipped: { type: final, entry: [mark_shipped = |ctx, _, _| ctx.status = "shipped".into()] },
            rejected: { type: final, entry: [mark_rejected = |ctx, _, _| ctx.status = "rejected".into()] },
            failed: { type: final, entry: [mark_failed = |ctx, _, _| ctx.status = "failed".into()] },
        },
    }
}

/// The shop's services: deterministic stand-ins for an inventory, a payment provider and a
/// carrier.
pub mod services {
    use orchestrator::handler::service::{Emissions, Emit, ServiceHandler, ServiceInput};
    use orchestrator::violation::Violation;

    use super::*;

    /// Stock per article: `sku-0` is out of stock, everything else has 10 units.
    pub fn inventory() -> Result<ServiceHandler<Inventory>, Violation> {
        ServiceHandler::<Inventory>::builder()
            .version(|input: ServiceInput<InventoryV1>| async move {
                let request = input.payload;
                let stock = if request.sku == "sku-0" { 0 } else { 10 };
                let reserved = request.quantity <= stock;
                let left = if reserved { stock - request.quantity } else { stock };
                Ok(Emit::new(Reservation { reserved, left }))
            })
            .build()
    }

    /// Approves charges up to 100 000 cents. Like a real provider that loses a request now and
    /// then, it never answers a charge for an order whose id starts with `lost-`: the workflow's
    /// 30 s payment timeout decides those.
    pub fn payment() -> Result<ServiceHandler<Payment>, Violation> {
        ServiceHandler::<Payment>::builder()
            .version(|input: ServiceInput<PaymentV1>| async move {
                Ok(charge(&input.payload).map_or_else(Emissions::none, |c| Emissions::from(Emit::new(c))))
            })
            .build()
    }

    /// The payment provider's decision on `request` (see [`payment`]): `None` when it never
    /// answers.
    pub fn charge(request: &ChargeRequest) -> Option<Charge> {
        if request.order_id.starts_with("lost-") {
            return None;
        }
        Some(Charge {
            approved: request.amount_cents <= 100_000,
            reference: format!("pay-{}", request.order_id),
        })
    }

    /// Ships everything.
    pub fn shipping() -> Result<ServiceHandler<Shipping>, Violation> {
        ServiceHandler::<Shipping>::builder()
            .version(|input: ServiceInput<ShippingV1>| async move {
                Ok(Emit::new(Dispatch { tracking: format!("TRK-{}", input.payload.order_id.to_uppercase()) }))
            })
            .build()
    }
}
