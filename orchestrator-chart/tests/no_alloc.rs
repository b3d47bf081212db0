//! A simple transition allocates nothing: once the interpreter is started (and its scratch
//! buffers have grown to the chart's size), sending events that move between atomic states, run
//! entry/exit/transition actions and evaluate guards performs no heap allocation.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use orchestrator_chart::{
    ActionId, ActionSpec, Chart, ChartBuilder, EventRef, GuardId, GuardSpec, Host, Interpreter, NodeKind,
    TransitionSpec,
};

struct Count;

impl Host for Count {
    type Context = u64;
    fn guard(&mut self, _: GuardId, ctx: &u64, _: &EventRef<'_>) -> bool {
        *ctx < u64::MAX
    }
    fn action(&mut self, _: ActionId, ctx: &mut u64, _: &EventRef<'_>) {
        *ctx += 1;
    }
}

fn chart() -> Arc<Chart> {
    let mut b = ChartBuilder::new("ring");
    let root = b.root();
    let outer = b.add_state(root, "outer", NodeKind::State).unwrap();
    let states: Vec<_> =
        (0..4).map(|i| b.add_state(outer, &format!("s{i}"), NodeKind::State).unwrap()).collect();
    for (i, s) in states.iter().enumerate() {
        b.add_entry(*s, ActionSpec::custom(ActionId(0))).unwrap();
        b.add_exit(*s, ActionSpec::custom(ActionId(0))).unwrap();
        let spec = TransitionSpec::on("next")
            .target(format!("outer.s{}", (i + 1) % 4))
            .guard(GuardSpec::Custom(GuardId(0)))
            .action(ActionSpec::custom(ActionId(0)));
        b.add_transition(*s, spec).unwrap();
    }
    Arc::new(b.build().unwrap())
}

#[test]
fn simple_transitions_do_not_allocate() {
    let mut machine = Interpreter::new(chart(), Count, 0u64);
    machine.start().unwrap();
    for _ in 0..8 {
        machine.send("next").unwrap(); // warm-up: scratch buffers reach their working size
    }
    let before = *machine.context();
    let info = allocation_counter::measure(|| {
        for _ in 0..1000 {
            machine.send("next").unwrap();
        }
    });
    assert_eq!(*machine.context() - before, 3000, "each event runs exit, transition and entry actions");
    assert_eq!(info.count_total, 0, "1000 simple transitions allocated {} times", info.count_total);
}
