//! Runs the model checker: the protocol holds at the CI bound, and each protection removed
//! gives a counterexample.

use orchestrator_model::properties::{self, SAFETY};
use orchestrator_model::{Protections, Protocol, Report};

fn threads() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from).min(2)
}

fn run(model: Protocol, label: &str) -> Report {
    let report = model.check(threads());
    println!(
        "{label}: {} states ({} unique), depth {}, {:.1?}",
        report.states, report.unique_states, report.max_depth, report.elapsed
    );
    report
}

/// Every safety property holds, and every `sometimes` property this configuration can reach is
/// reached (the model is not vacuous).
fn assert_holds(model: Protocol, report: &Report) {
    for name in SAFETY {
        if let Some(path) = report.discovery(name) {
            panic!("counterexample to {name:?}:\n{path}");
        }
    }
    for name in properties::reachable(&model) {
        assert!(report.discovery(name).is_some(), "never reached: {name:?}");
    }
}

#[test]
fn the_protocol_holds_at_the_ci_bound() {
    let model = Protocol::ci();
    let report = run(model, "ci bound");
    assert_holds(model, &report);
}
