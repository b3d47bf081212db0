//! Runs the model checker: the protocol holds at the CI bound, and each protection removed
//! gives a counterexample (the model can fail).

use orchestrator_model::properties::{
    self, COMPLETES_ONCE_FAULTS_STOP, EFFECT_AT_MOST_ONCE, JOURNAL_MATCHES_RECORD, NEVER_REOPENS,
    ONE_WRITER_PER_VERSION, SAFETY,
};
use orchestrator_model::{Budget, Protections, Protocol, Report};

fn threads() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from).min(2)
}

fn run(model: Protocol, label: &str) -> Report {
    let report = model.check(threads());
    println!(
        "{label}: {} states generated, {} unique, depth {}, {:.2?}",
        report.states, report.unique_states, report.max_depth, report.elapsed
    );
    report
}

/// Every safety property holds, and every `sometimes` property this configuration can reach is
/// reached (the model is not vacuous).
fn assert_holds(model: Protocol, label: &str) {
    let report = run(model, label);
    for name in SAFETY {
        if let Some(path) = report.discovery(name) {
            panic!("{label}: counterexample to {name:?}:\n{path}");
        }
    }
    for name in properties::reachable(&model) {
        assert!(report.discovery(name).is_some(), "{label}: never reached: {name:?}");
    }
}

/// The checker finds counterexamples to exactly `expected`; prints a shortest one for each.
fn assert_fails(model: Protocol, label: &str, expected: &[&str]) {
    let report = run(model, label);
    let mut expected = expected.to_vec();
    expected.sort_unstable();
    assert_eq!(report.violated(), expected, "{label}: the properties violated");
    for name in expected {
        let path = model.shortest_counterexample(name).expect("a counterexample");
        println!("{label}: shortest counterexample to {name:?} ({} actions): {path:?}", path.len());
    }
}

const ALL: Protections = Protections::ALL;

#[test]
fn the_protocol_holds_at_the_ci_bound() {
    assert_holds(Protocol::ci(), "ci bound");
}

#[test]
fn the_protocol_holds_with_deliveries_settled_after_the_commit() {
    assert_holds(Protocol::ci().settling_in_commit(false), "ci bound, settled after the commit");
}

/// The compare-and-swap alone guards the record: without the lease (`Locking::Never`), or with
/// a lease but no fencing, nothing breaks.
#[test]
fn the_compare_and_swap_alone_suffices() {
    assert_holds(Protocol::ci().with(Protections { locking: false, ..ALL }), "no lease (Locking::Never)");
    assert_holds(Protocol::ci().with(Protections { fencing: false, ..ALL }), "no fencing");
}

/// The fencing check alone guards the record too, as long as the record is read under the
/// lease (`Memory::acquire` with `lock`).
#[test]
fn fencing_alone_suffices_when_the_read_is_under_the_lease() {
    assert_holds(Protocol::ci().with(Protections { cas: false, ..ALL }), "no cas");
}

/// What a lost update breaks: a stale writer rewrites a version, which may roll a done workflow
/// back to an earlier state that no event in flight moves on any more.
const BROKEN_RECORD: [&str; 4] =
    [ONE_WRITER_PER_VERSION, NEVER_REOPENS, JOURNAL_MATCHES_RECORD, COMPLETES_ONCE_FAULTS_STOP];

#[test]
fn without_cas_or_fencing_two_epochs_commit_one_step() {
    let model = Protocol::small().with(Protections { cas: false, fencing: false, ..ALL });
    assert_fails(model, "no cas, no fencing", &BROKEN_RECORD);
}

#[test]
fn without_cas_and_without_lease_two_writers_commit_one_step() {
    let model = Protocol::small().with(Protections { cas: false, locking: false, ..ALL });
    assert_fails(model, "no cas, no lease", &BROKEN_RECORD);
}

/// Fencing does not cover a record read before the lease was taken (the claim's read): the
/// fenced writer holds the current lease and still writes from a stale read. The store must
/// read under the lease, or keep the compare-and-swap.
#[test]
fn fencing_without_cas_fails_when_the_read_precedes_the_lease() {
    let model = Protocol::small().with(Protections { cas: false, read_under_lease: false, ..ALL });
    assert_fails(model, "no cas, read at the claim", &BROKEN_RECORD);
    assert_holds(Protocol::small().with(Protections { read_under_lease: false, ..ALL }), "read at the claim");
}

#[test]
fn without_recorded_answers_a_redelivered_request_pays_twice() {
    let model = Protocol::small().with(Protections { recorded_answers: false, ..ALL });
    assert_fails(model, "no recorded answers", &[EFFECT_AT_MOST_ONCE]);
}

/// An answer recorded after the effect, in a second step, is not enough: a redelivery of the
/// request between the two (a lapsed claim, a crash) finds no answer and applies the effect
/// again (check-then-act).
#[test]
fn an_answer_recorded_after_the_effect_lets_a_redelivery_pay_twice() {
    let model = Protocol::small().with(Protections { atomic_answer: false, ..ALL });
    assert_fails(model, "answer recorded after the effect", &[EFFECT_AT_MOST_ONCE]);
}

/// Settled in the commit, the products cannot be lost and the journal is only a shortcut; a
/// transport acknowledged after the commit needs the journal's answer to a redelivery, or a
/// crash between the commit and the emission loses the product for good.
#[test]
fn without_the_journal_a_crash_after_the_commit_loses_the_product() {
    assert_holds(
        Protocol::small().with(Protections { journal: false, ..ALL }),
        "no journal, settled in the commit",
    );
    let model = Protocol::small().with(Protections { journal: false, ..ALL }).settling_in_commit(false);
    assert_fails(model, "no journal, settled after the commit", &[COMPLETES_ONCE_FAULTS_STOP]);
}

/// The larger bound: `cargo test -p orchestrator-model -- --ignored`, or set
/// `ORCHESTRATOR_MODEL_LARGE=1` to run it with the other tests.
#[test]
#[ignore = "minutes: run with --ignored or ORCHESTRATOR_MODEL_LARGE=1"]
fn the_protocol_holds_at_the_large_bound() {
    large();
}

#[test]
fn the_protocol_holds_at_the_large_bound_when_asked() {
    if std::env::var_os("ORCHESTRATOR_MODEL_LARGE").is_some() {
        large();
    }
}

fn large() {
    assert_holds(Protocol::large(), "large bound");
}

/// A bound of your choice: `ORCHESTRATOR_MODEL_BOUND=calls,workers,crashes,lapses,expiries,duplicates`
/// (and `ORCHESTRATOR_MODEL_SETTLE=after` for deliveries settled after the commit).
#[test]
fn the_protocol_holds_at_the_bound_asked() {
    let Some(bound) = std::env::var_os("ORCHESTRATOR_MODEL_BOUND") else { return };
    let n: Vec<u8> = bound
        .to_string_lossy()
        .split(',')
        .map(|n| n.trim().parse().expect("ORCHESTRATOR_MODEL_BOUND: six small numbers"))
        .collect();
    let [calls, workers, crashes, lapses, expiries, duplicates] = n[..] else {
        panic!("ORCHESTRATOR_MODEL_BOUND: calls,workers,crashes,lapses,expiries,duplicates")
    };
    let after = std::env::var("ORCHESTRATOR_MODEL_SETTLE").is_ok_and(|s| s == "after");
    let model = Protocol {
        calls,
        workers,
        settle_in_commit: !after,
        budget: Budget { crashes, lapses, expiries, duplicates },
        protections: ALL,
    };
    assert_holds(model, &format!("bound {model:?}"));
}
