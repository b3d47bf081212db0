//! Example contracts shared by the examples, the `orchestrator` command-line tool and the tests:
//! the calculator services and the averaging workflow of Arvo's own examples, and the
//! order-fulfilment workflow of the main example, its roles across processes over NATS, and its
//! workers and starts on one PostgreSQL database shared by several processes.

pub mod calculator;
pub mod cluster;
pub mod nats_order;
pub mod orders;
pub mod review;

use orchestrator::contract::{ArvoContract, Contract};

/// Every example contract, for tools that list or export them.
pub fn all_contracts() -> Vec<&'static ArvoContract> {
    vec![
        calculator::Add::contract(),
        calculator::Mul::contract(),
        calculator::Divide::contract(),
        calculator::Average::contract(),
        orders::Inventory::contract(),
        orders::Payment::contract(),
        orders::Shipping::contract(),
        orders::Order::contract(),
    ]
}
