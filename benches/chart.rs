//! Transitions per second of the statechart core (`orchestrator-chart`).
//!
//! * `flat`: a ring of 10 atomic states; each event moves to the next state (one exit, one entry,
//!   one custom action).
//! * `deep_parallel`: a parallel root with two regions, each a 4-level nested compound whose leaf
//!   toggles between two siblings on every event, so each event selects two transitions (one per
//!   region), exits and enters a leaf in each region and runs their actions.
//!
//! Criterion's throughput line reports transitions (events) per second.

#![allow(clippy::unwrap_used)] // set-up code: a failure is a bug in the bench itself

use std::hint::black_box;
use std::sync::Arc;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use orchestrator_chart::{
    ActionId, ActionSpec, Chart, ChartBuilder, EventRef, GuardId, Host, Interpreter, NodeKind, TransitionSpec,
};

/// Counts custom actions, so the work of running them is not optimised away.
struct Counter;

impl Host for Counter {
    type Context = u64;
    fn guard(&mut self, _: GuardId, _: &u64, _: &EventRef<'_>) -> bool {
        true
    }
    fn action(&mut self, _: ActionId, ctx: &mut u64, _: &EventRef<'_>) {
        *ctx += 1;
    }
}

fn flat_chart() -> Arc<Chart> {
    let mut b = ChartBuilder::new("flat");
    let root = b.root();
    let n = 10;
    let states: Vec<_> =
        (0..n).map(|i| b.add_state(root, &format!("s{i}"), NodeKind::State).unwrap()).collect();
    for (i, s) in states.iter().enumerate() {
        let next = format!("s{}", (i + 1) % n);
        b.add_transition(*s, TransitionSpec::on("next").target(next).action(ActionSpec::custom(ActionId(0))))
            .unwrap();
    }
    Arc::new(b.build().unwrap())
}

fn deep_parallel_chart() -> Arc<Chart> {
    let mut b = ChartBuilder::new("deep");
    b.set_root_parallel();
    let root = b.root();
    for region in ["left", "right"] {
        let mut parent = b.add_state(root, region, NodeKind::State).unwrap();
        let mut path = region.to_owned();
        for level in 0..3 {
            let key = format!("l{level}");
            parent = b.add_state(parent, &key, NodeKind::State).unwrap();
            path = format!("{path}.{key}");
        }
        let on = b.add_state(parent, "on", NodeKind::State).unwrap();
        let off = b.add_state(parent, "off", NodeKind::State).unwrap();
        b.add_entry(on, ActionSpec::custom(ActionId(0))).unwrap();
        b.add_entry(off, ActionSpec::custom(ActionId(0))).unwrap();
        b.add_transition(on, TransitionSpec::on("toggle").target(format!("{path}.off"))).unwrap();
        b.add_transition(off, TransitionSpec::on("toggle").target(format!("{path}.on"))).unwrap();
    }
    Arc::new(b.build().unwrap())
}

fn bench(c: &mut Criterion, name: &str, chart: Arc<Chart>, event: &str) {
    let mut group = c.benchmark_group("chart");
    group.throughput(Throughput::Elements(1));
    let mut machine = Interpreter::new(chart, Counter, 0u64);
    machine.start().unwrap();
    group.bench_function(name, |b| b.iter(|| machine.send(black_box(event)).unwrap()));
    group.finish();
    assert!(*machine.context() > 0);
}

fn transitions(c: &mut Criterion) {
    bench(c, "flat", flat_chart(), "next");
    bench(c, "deep_parallel", deep_parallel_chart(), "toggle");
}

criterion_group!(benches, transitions);
criterion_main!(benches);
