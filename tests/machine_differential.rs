//! Differential tests: charts declared with `machine!` and the same charts written in the JSON
//! chart format (`orchestrator_chart::json`) give identical traces (active atomic paths, done
//! flag and context after each step) over random sequences of events and clock moves.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use orchestrator::machine::chart::{Interpreter, json};
use orchestrator::machine::{Machine, MachineInstance};
use orchestrator::prelude::*;
use proptest::prelude::*;

#[derive(Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
/// No payload.
pub struct Empty {}

orchestrator::orchestrator_contract! {
    /// The self contract of the test machines.
    pub contract DiffContract {
        uri: "#/orc/diff",
        name: "diff",
        versions: { DiffV1 = "1.0.0" { init: Empty, complete: Empty } },
    }
}

/// A numeric context, mirrored by the JSON charts' `{"x": …}` / `{"n": …}` contexts.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Counter {
    /// The counter.
    pub x: f64,
}

/// One step of a run.
#[derive(Debug, Clone)]
enum Op {
    Send(&'static str),
    Advance(u64),
}

/// After each step: active atomic paths, done flag, counter.
type Trace = Vec<(Vec<String>, bool, f64)>;

fn ops(events: &'static [&'static str], timers: bool) -> impl Strategy<Value = Vec<Op>> {
    let send = proptest::sample::select(events).prop_map(Op::Send);
    let op = if timers {
        prop_oneof![3 => send, 1 => proptest::sample::select(&[50u64, 100, 200, 400, 1000][..]).prop_map(Op::Advance)]
            .boxed()
    } else {
        send.boxed()
    };
    proptest::collection::vec(op, 0..40)
}

fn run_machine<M: Machine<Context = Counter, Input = Empty>>(ops: &[Op]) -> Trace {
    let (mut m, _) = MachineInstance::<M>::start(Empty {}).unwrap();
    let snap = |m: &MachineInstance<M>| {
        (m.active_paths().iter().map(|s| s.to_string()).collect(), m.is_done(), m.context().x)
    };
    let mut trace = vec![snap(&m)];
    for op in ops {
        match op {
            Op::Send(e) => m.send_named(e).unwrap(),
            Op::Advance(ms) => m.advance(*ms).unwrap(),
        };
        trace.push(snap(&m));
    }
    trace
}

fn run_json(doc: &str, var: &str, ops: &[Op]) -> Trace {
    let loaded = json::load_str(doc).unwrap();
    let mut m = Interpreter::new(&loaded.chart, loaded.host.clone(), loaded.context.clone());
    m.start().unwrap();
    let snap = |m: &Interpreter<json::JsonHost, &orchestrator::machine::Chart>| {
        let x = m.context().get(var).and_then(serde_json::Value::as_f64).unwrap_or(f64::NAN);
        (m.active_atomic_paths().iter().map(|s| s.to_string()).collect(), m.is_done(), x)
    };
    let mut trace = vec![snap(&m)];
    for op in ops {
        match op {
            Op::Send(e) => m.send(e).unwrap(),
            Op::Advance(ms) => m.advance(*ms).unwrap(),
        }
        trace.push(snap(&m));
    }
    trace
}

// ---------------------------------------------------------------------------------------------
// A: nested states, deep history, guarded candidates, context updates.

fn inc(c: &mut Counter, _: &NestedEvent, _: &mut NestedOutbox<'_>) {
    c.x += 1.0;
}

orchestrator::machine! {
    /// Nested states with deep history and guarded candidates.
    pub machine Nested {
        contract: DiffV1,
        context: Counter,
        output: |_| Empty {},
        initial: idle,
        states: {
            idle: { on: { "start" => work, "inc" => { actions: [inc] } } },
            work: {
                initial: s1,
                states: {
                    s1: { on: { "next" => work.s2 } },
                    s2: {
                        states: { x: { on: { "next" => work.s2.y } }, y: {} },
                        on: { "next" => work.s1 },
                    },
                    h: { type: history, history: deep },
                },
                on: {
                    "pause" => paused,
                    "inc" => [{ target: done, guard: |c, _| c.x >= 3.0 }, { actions: [inc] }],
                },
            },
            paused: { on: { "resume" => work.h, "restart" => { target: work, reenter: true } } },
            done: { type: final },
        },
    }
}

const NESTED_JSON: &str = r#"{
  "guards": [{"name": "enough", "check": {"var": "x", "op": "ge", "value": 3}}],
  "actions": [{"name": "inc", "assign": {"var": "x", "op": "add", "value": 1}}],
  "machine": {"id": "Nested", "context": {"x": 0}, "initial": "idle", "states": {
    "idle": {"on": {"start": "work", "inc": {"actions": ["inc"]}}},
    "work": {"initial": "s1", "states": {
        "s1": {"on": {"next": "work.s2"}},
        "s2": {"states": {"x": {"on": {"next": "work.s2.y"}}, "y": {}}, "on": {"next": "work.s1"}},
        "h": {"type": "history", "history": "deep"}
      },
      "on": {"pause": "paused", "inc": [{"target": "done", "guard": "enough"}, {"actions": ["inc"]}]}},
    "paused": {"on": {"resume": "work.h", "restart": {"target": "work", "reenter": true}}},
    "done": {"type": "final"}
  }}
}"#;

const NESTED_EVENTS: &[&str] = &["start", "inc", "next", "pause", "resume", "restart", "other"];

// ---------------------------------------------------------------------------------------------
// B: a parallel state, `in` guards, done events, raised events, reentry.

orchestrator::machine! {
    /// Parallel regions completing into a done event.
    pub machine Regions {
        contract: DiffV1,
        context: Counter,
        output: |_| Empty {},
        states: {
            p: {
                type: parallel,
                states: {
                    l: { states: { l1: { on: { "a" => p.l.l2 } }, l2: { type: final } } },
                    r: {
                        states: {
                            r1: { on: { "b" => p.r.r2, "c" => { target: p.r.r3, guard: in(p.l.l2) } } },
                            r2: { on: { "b" => p.r.r1 } },
                            r3: { type: final },
                        },
                    },
                },
                on_done: q,
                on: { "reset" => { target: p, reenter: true } },
            },
            q: { entry: [raise("go")], on: { "go" => z, "reset" => p } },
            z: { on: { "reset" => p, "fin" => end, "*" => { actions: [|c, _, _| c.x += 1.0] } } },
            end: { type: final },
        },
    }
}

const REGIONS_JSON: &str = r#"{
  "guards": [{"name": "leftDone", "check": {"in": "p.l.l2"}}],
  "actions": [{"name": "count", "assign": {"var": "x", "op": "add", "value": 1}}],
  "machine": {"id": "Regions", "context": {"x": 0}, "states": {
    "p": {"type": "parallel", "states": {
        "l": {"states": {"l1": {"on": {"a": "p.l.l2"}}, "l2": {"type": "final"}}},
        "r": {"states": {
          "r1": {"on": {"b": "p.r.r2", "c": {"target": "p.r.r3", "guard": "leftDone"}}},
          "r2": {"on": {"b": "p.r.r1"}},
          "r3": {"type": "final"}}}
      },
      "onDone": "q",
      "on": {"reset": {"target": "p", "reenter": true}}},
    "q": {"entry": [{"type": "raise", "event": "go"}], "on": {"go": "z", "reset": "p"}},
    "z": {"on": {"reset": "p", "fin": "end", "*": {"actions": ["count"]}}},
    "end": {"type": "final"}
  }}
}"#;

const REGIONS_EVENTS: &[&str] = &["a", "b", "c", "reset", "fin", "x"];

// ---------------------------------------------------------------------------------------------
// C: `after` timers, delayed and cancelled sends, eventless transitions.

orchestrator::machine! {
    /// Timers and delayed sends.
    pub machine Timers {
        contract: DiffV1,
        context: Counter,
        output: |_| Empty {},
        initial: idle,
        states: {
            idle: {
                on: {
                    "arm" => { target: armed, actions: [send("fire", delay = 300, id = "t")] },
                    "bump" => { actions: [|c, _, _| c.x += 1.0] },
                },
                always: { target: hot, guard: |c, _| c.x >= 2.0 },
            },
            armed: {
                after: { 100 => armed2 },
                on: { "disarm" => { target: idle, actions: [cancel("t")] }, "fire" => boom },
            },
            armed2: {
                after: { 500 => idle },
                on: { "fire" => boom, "disarm" => { target: idle, actions: [cancel("t")] } },
            },
            boom: { entry: [|c, _, _| c.x = 0.0], on: { "reset" => idle } },
            hot: { on: { "cool" => { target: idle, actions: [|c, _, _| c.x = 0.0] } }, after: { 1000 => end } },
            end: { type: final },
        },
    }
}

const TIMERS_JSON: &str = r#"{
  "guards": [{"name": "big", "check": {"var": "x", "op": "ge", "value": 2}}],
  "actions": [
    {"name": "bump", "assign": {"var": "x", "op": "add", "value": 1}},
    {"name": "zero", "assign": {"var": "x", "op": "set", "value": 0}}
  ],
  "machine": {"id": "Timers", "context": {"x": 0}, "initial": "idle", "states": {
    "idle": {
      "on": {
        "arm": {"target": "armed", "actions": [{"type": "send", "event": "fire", "delay_ms": 300, "id": "t"}]},
        "bump": {"actions": ["bump"]}
      },
      "always": {"target": "hot", "guard": "big"}},
    "armed": {"after": {"100": "armed2"},
      "on": {"disarm": {"target": "idle", "actions": [{"type": "cancel", "id": "t"}]}, "fire": "boom"}},
    "armed2": {"after": {"500": "idle"},
      "on": {"fire": "boom", "disarm": {"target": "idle", "actions": [{"type": "cancel", "id": "t"}]}}},
    "boom": {"entry": ["zero"], "on": {"reset": "idle"}},
    "hot": {"on": {"cool": {"target": "idle", "actions": ["zero"]}}, "after": {"1000": "end"}},
    "end": {"type": "final"}
  }}
}"#;

const TIMERS_EVENTS: &[&str] = &["arm", "disarm", "bump", "fire", "reset", "cool"];

#[test]
fn the_charts_are_the_same_charts() {
    for (chart, doc) in
        [(Nested::chart(), NESTED_JSON), (Regions::chart(), REGIONS_JSON), (Timers::chart(), TIMERS_JSON)]
    {
        let loaded = json::load_str(doc).unwrap();
        assert_eq!(chart.fingerprint(), loaded.chart.fingerprint(), "{}", chart.machine_id());
        assert_eq!(chart.transitions().len(), loaded.chart.transitions().len(), "{}", chart.machine_id());
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn nested_matches_json(ops in ops(NESTED_EVENTS, false)) {
        prop_assert_eq!(run_machine::<Nested>(&ops), run_json(NESTED_JSON, "x", &ops));
    }

    #[test]
    fn regions_match_json(ops in ops(REGIONS_EVENTS, false)) {
        prop_assert_eq!(run_machine::<Regions>(&ops), run_json(REGIONS_JSON, "x", &ops));
    }

    #[test]
    fn timers_match_json(ops in ops(TIMERS_EVENTS, true)) {
        prop_assert_eq!(run_machine::<Timers>(&ops), run_json(TIMERS_JSON, "x", &ops));
    }
}
