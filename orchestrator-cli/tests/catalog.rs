//! The plain binary on a store a node recorded its workflows in (the catalog): `contract list
//! STORE`, `contract schema STORE TYPE`, `chart export STORE --workflow NAME`, without the
//! program that declared them; and what it says when it knows nothing.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use orchestrator::contract::ContractVersion;
use orchestrator_examples::orders::{OrderV1, PaymentV1};
use serde_json::Value;

use common::{one_order, recorded_order, run, stdout};

fn failure(out: &std::process::Output) -> (i32, String) {
    assert!(out.stdout.is_empty(), "{out:?}");
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_plain_binary_reads_contracts_and_charts_a_node_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("orders.db");
    recorded_order(&path).await;
    let db = path.to_str().unwrap();

    let table = stdout(&run(&["contract", "list", db]));
    let lines: Vec<&str> = table.lines().collect();
    assert!(lines[0].starts_with("TYPE"), "{table}");
    for (ty, uri) in [
        ("arvo.orc.shop.order", "#/orc/shop/order"),
        ("com.shop.inventory.reserve", "#/shop/inventory/reserve"),
        ("com.shop.payment.charge", "#/shop/payment/charge"),
        ("com.shop.shipping.dispatch", "#/shop/shipping/dispatch"),
    ] {
        assert!(
            lines.iter().any(|l| l.starts_with(ty) && l.contains(uri) && l.ends_with("1.0.0")),
            "{ty}: {table}"
        );
    }
    assert_eq!(lines.len(), 5, "the four contracts the order workflow uses: {table}");
    let listed: Value = serde_json::from_str(&stdout(&run(&["contract", "list", db, "--json"]))).unwrap();
    assert_eq!(listed.as_array().unwrap().len(), 4);

    // A version's document, as the program's contract makes it; by type or URI.
    let payment = PaymentV1::versioned().to_json_schema();
    let doc: Value =
        serde_json::from_str(&stdout(&run(&["contract", "schema", db, "com.shop.payment.charge"]))).unwrap();
    assert_eq!(doc, payment);
    let by_uri: Value = serde_json::from_str(&stdout(&run(&[
        "contract",
        "schema",
        db,
        "#/shop/payment/charge",
        "--version",
        "1.0.0",
        "--compact",
    ])))
    .unwrap();
    assert_eq!(by_uri, payment);
    let (code, err) =
        failure(&run(&["contract", "schema", db, "com.shop.payment.charge", "--version", "9.9.9"]));
    assert_eq!(code, 2);
    assert!(err.contains("no recorded version 9.9.9") && err.contains("recorded: 1.0.0"), "{err}");
    let (code, err) = failure(&run(&["contract", "schema", db, "com.nope"]));
    assert_eq!(code, 2);
    assert!(err.contains("unknown contract `com.nope`") && err.contains("com.shop.payment.charge"), "{err}");

    // The machine's chart, in each format.
    let name = OrderV1::versioned().accepts().event_type().to_owned();
    let mermaid = stdout(&run(&["chart", "export", "--format", "mermaid", db, "--workflow", &name]));
    assert!(mermaid.starts_with("stateDiagram-v2"), "{mermaid}");
    for state in ["reserving", "charging", "shipping", "shipped"] {
        assert!(mermaid.contains(state), "{state} missing from {mermaid}");
    }
    let dot =
        stdout(&run(&["chart", "export", "--format", "dot", db, "--workflow", &name, "--version", "1.0.0"]));
    assert!(dot.starts_with("digraph"), "{dot}");
    let xstate: Value = serde_json::from_str(&stdout(&run(&[
        "chart",
        "export",
        "--format",
        "xstate",
        db,
        "--workflow",
        &name,
    ])))
    .unwrap();
    assert!(xstate["states"]["charging"].is_object(), "{xstate}");
    let (code, err) =
        failure(&run(&["chart", "export", "--format", "dot", db, "--workflow", "arvo.orc.nope"]));
    assert_eq!(code, 2);
    assert!(err.contains("unknown workflow `arvo.orc.nope`") && err.contains(&name), "{err}");
    let (code, err) =
        failure(&run(&["chart", "export", "--format", "dot", db, "--workflow", &name, "--version", "2.0.0"]));
    assert_eq!(code, 2);
    assert!(err.contains("no recorded version 2.0.0"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_catalog_or_a_store_the_binary_says_what_to_do() {
    // Written by a broker, not a node: nothing recorded.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("broker.db");
    one_order(&path).await;
    let db = path.to_str().unwrap();
    let (code, err) = failure(&run(&["contract", "schema", db, "com.shop.payment.charge"]));
    assert_eq!(code, 2);
    assert!(err.contains("holds none"), "{err}");
    let (code, err) =
        failure(&run(&["chart", "export", "--format", "mermaid", db, "--workflow", "arvo.orc.shop.order"]));
    assert_eq!(code, 2);
    assert!(err.contains("holds none"), "{err}");

    // The plain binary was taught nothing.
    let (code, err) = failure(&run(&["contract", "list"]));
    assert_eq!(code, 2);
    assert!(err.contains("give a STORE"), "{err}");
    let (code, err) = failure(&run(&["contract", "schema", "com.calc.add"]));
    assert_eq!(code, 2);
    assert!(err.contains("taught no contracts") && err.contains("Tool::contract"), "{err}");
    // A missing store file is named.
    let (code, err) = failure(&run(&["contract", "list", "no-such-store.db"]));
    assert_eq!(code, 1);
    assert!(err.contains("no-such-store.db: no such store"), "{err}");
}
