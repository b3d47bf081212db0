//! API-level tests: timers, persistence of the machine state, action order, limits.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use orchestrator_chart::json::{self, JsonHost};
use orchestrator_chart::{
    ActionId, ActionSpec, Chart, ChartBuilder, EventKind, EventRef, FORMAT_VERSION, GuardId, GuardSpec, Host,
    Interpreter, MachineState, NoHost, NodeKind, RunError, StateCodecError, TimerKind, TransitionSpec,
};
use serde_json::json;

/// Records every custom action by name, and the event it saw.
#[derive(Default)]
struct Recorder {
    names: Vec<String>,
    log: Vec<String>,
}

impl Host for Recorder {
    type Context = ();
    fn guard(&mut self, id: GuardId, _: &(), _: &EventRef<'_>) -> bool {
        id.0 == 1
    }
    fn action(&mut self, id: ActionId, _: &mut (), ev: &EventRef<'_>) {
        self.log.push(format!("{}@{}", self.names[id.0 as usize], ev.name));
    }
}

/// A chart whose named actions (`"x"`) are host actions, recorded by [`Recorder`].
fn traced(machine: serde_json::Value, actions: &[&str]) -> (Chart, Recorder) {
    let defs: Vec<_> =
        actions.iter().map(|a| json!({"name": a, "assign": {"var": a, "op": "set", "value": 1}})).collect();
    let loaded = json::load(&json!({"actions": defs, "machine": machine})).unwrap();
    let names = loaded.host.assigns.iter().map(|a| a.var.clone()).collect();
    (loaded.chart, Recorder { names, log: Vec::new() })
}

#[test]
fn microstep_action_order() {
    let (chart, rec) = traced(
        json!({"id": "m", "initial": {"target": "a", "actions": ["init_root"]}, "entry": ["en_root"], "states": {
            "a": {"entry": ["en_a"], "exit": ["ex_a"], "initial": {"target": "a.a1", "actions": ["init_a"]},
                  "states": {"a1": {"entry": ["en_a1"], "exit": ["ex_a1"], "on": {"t": {"target": "p", "actions": ["t1"]}}}}},
            "p": {"type": "parallel", "entry": ["en_p"], "exit": ["ex_p"], "states": {
                "r1": {"entry": ["en_r1"], "exit": ["ex_r1"]},
                "r2": {"entry": ["en_r2"], "exit": ["ex_r2"], "on": {"u": {"target": "a", "actions": ["t2"]}}}}}}}),
        &[
            "init_root",
            "en_root",
            "en_a",
            "ex_a",
            "init_a",
            "en_a1",
            "ex_a1",
            "t1",
            "en_p",
            "ex_p",
            "en_r1",
            "ex_r1",
            "en_r2",
            "ex_r2",
            "t2",
        ],
    );
    let mut m = Interpreter::new(&chart, rec, ());
    m.start().unwrap();
    m.send("t").unwrap();
    m.send("u").unwrap();
    let log = &m.host().log;
    assert_eq!(
        log,
        &[
            "en_root@xstate.init",
            "init_root@xstate.init",
            "en_a@xstate.init",
            "init_a@xstate.init",
            "en_a1@xstate.init",
            "ex_a1@t",
            "ex_a@t",
            "t1@t",
            "en_p@t",
            "en_r1@t",
            "en_r2@t",
            "ex_r2@u",
            "ex_r1@u",
            "ex_p@u",
            "t2@u",
            "en_a@u",
            "init_a@u",
            "en_a1@u",
        ]
    );
}

fn timer_chart() -> Arc<Chart> {
    let mut b = ChartBuilder::new("m");
    let root = b.root();
    let a = b.add_state(root, "a", NodeKind::State).unwrap();
    let bb = b.add_state(root, "b", NodeKind::State).unwrap();
    b.add_state(root, "c", NodeKind::State).unwrap();
    b.add_state(root, "d", NodeKind::State).unwrap();
    b.add_state(root, "e", NodeKind::State).unwrap();
    b.add_transition(
        a,
        TransitionSpec::on("go")
            .target("b")
            .action(ActionSpec::send_delayed("x", 10, Some("first")))
            .action(ActionSpec::send_delayed("y", 10, None))
            .action(ActionSpec::send_delayed("z", 5, Some("zz"))),
    )
    .unwrap();
    b.add_transition(a, TransitionSpec::on("cancel").action(ActionSpec::cancel("first"))).unwrap();
    b.add_transition(bb, TransitionSpec::after(10).target("e")).unwrap();
    b.add_transition(bb, TransitionSpec::on("x").target("c")).unwrap();
    b.add_transition(bb, TransitionSpec::on("y").target("d")).unwrap();
    b.add_transition(bb, TransitionSpec::on("z").guard(GuardSpec::Const(true))).unwrap();
    Arc::new(b.build().unwrap())
}

#[test]
fn due_order_ties_follow_scheduling_order() {
    let chart = timer_chart();
    let mut m = Interpreter::new(chart.clone(), NoHost, ());
    m.start().unwrap();
    m.advance(3).unwrap();
    m.send("go").unwrap();
    let due: Vec<(u64, String)> =
        m.pending_timers().iter().map(|t| (t.due_ms(), t.event_name(&chart).to_owned())).collect();
    assert_eq!(
        due,
        [
            (8, "z".to_owned()),
            (13, "x".to_owned()),
            (13, "y".to_owned()),
            (13, "xstate.after.10.b".to_owned())
        ]
    );
    assert_eq!(m.next_due(), Some(8));
    m.advance(10).unwrap();
    // x (scheduled first) wins the tie at 13: b -> c; y and the after timer of b then find c.
    assert_eq!(m.active_atomic_paths(), ["c"]);
    assert!(m.pending_timers().is_empty());
    assert_eq!(m.now_ms(), 13);
}

#[test]
fn cancel_by_id_and_after_cancelled_on_exit() {
    let chart = timer_chart();
    let mut m = Interpreter::new(chart.clone(), NoHost, ());
    m.start().unwrap();
    m.send("go").unwrap();
    // Leave b before its after timer fires: x at 10 moves b -> c, the after timer is gone.
    assert!(m.pending_timers().iter().any(|t| matches!(t.kind(), TimerKind::After { .. })));
    m.advance(10).unwrap();
    assert_eq!(m.active_atomic_paths(), ["c"]);
    // A delayed send survives the exit of its sender (y still arrived, c ignores it).
    assert!(m.pending_timers().is_empty());

    // Cancel: in a, schedule via a second machine, cancel "first" before it is due.
    let mut b = ChartBuilder::new("m");
    let root = b.root();
    let a = b.add_state(root, "a", NodeKind::State).unwrap();
    b.add_state(root, "hit", NodeKind::State).unwrap();
    b.add_transition(a, TransitionSpec::on("arm").action(ActionSpec::send_delayed("fire", 10, Some("k"))))
        .unwrap();
    b.add_transition(a, TransitionSpec::on("disarm").action(ActionSpec::cancel("k"))).unwrap();
    b.add_transition(a, TransitionSpec::on("fire").target("hit")).unwrap();
    let chart = b.build().unwrap();
    let mut m = Interpreter::new(&chart, NoHost, ());
    m.start().unwrap();
    m.send("arm").unwrap();
    m.send("arm").unwrap();
    assert_eq!(m.pending_timers().len(), 2);
    m.send("disarm").unwrap();
    assert!(m.pending_timers().is_empty());
    m.advance(100).unwrap();
    assert_eq!(m.active_atomic_paths(), ["a"]);
    m.send("arm").unwrap();
    m.advance(10).unwrap();
    assert_eq!(m.active_atomic_paths(), ["hit"]);
}

#[test]
fn timer_events_are_not_matched_by_wildcards() {
    let loaded = json::load(&json!({"machine": {"id": "m", "initial": "a", "states": {
        "a": {"after": {"5": "b"}, "initial": "a1", "states": {"a1": {"on": {"*": "fail"}}}},
        "b": {}, "fail": {}}}}))
    .unwrap();
    let mut m = Interpreter::new(&loaded.chart, loaded.host, loaded.context);
    m.start().unwrap();
    m.advance(5).unwrap();
    assert_eq!(m.active_atomic_paths(), ["b"]);
}

#[test]
fn state_round_trips_bytes_and_serde_and_resumes() {
    let loaded = json::load(&json!({"machine": {"id": "m", "initial": "s", "states": {
        "s": {"after": {"50": "late"}, "on": {"out": "o"}, "states": {
            "h": {"type": "history", "history": "deep"},
            "p": {"type": "parallel", "states": {
                "r1": {"states": {"a": {"on": {"n": {"target": "s.p.r1.b", "actions": [
                    {"type": "send", "event": "ping", "delay_ms": 30, "id": "pp"}]}}}, "b": {}}},
                "r2": {"states": {"c": {}, "d": {}}}}}}},
        "o": {"on": {"back": "s.h", "ping": "pinged"}},
        "pinged": {"on": {"back": "s.h"}},
        "late": {}}}}))
    .unwrap();
    let chart = Arc::new(loaded.chart);
    let mut m = Interpreter::new(chart.clone(), JsonHost::default(), loaded.context.clone());
    m.start().unwrap();
    m.advance(7).unwrap();
    m.send("n").unwrap();
    m.send("out").unwrap();
    let saved = m.snapshot();
    assert_eq!(saved.pending_timers().len(), 1, "the after timer of s was cancelled, the send kept");

    let bytes = saved.to_bytes();
    assert_eq!(bytes[0], FORMAT_VERSION);
    let back = MachineState::from_bytes(&chart, &bytes).unwrap();
    assert_eq!(back, saved);
    let via_serde: MachineState = serde_json::from_str(&serde_json::to_string(&saved).unwrap()).unwrap();
    assert_eq!(via_serde, saved);

    // Resume from bytes: the pending send still arrives, the deep history is still there.
    let mut resumed = Interpreter::restore(chart.clone(), JsonHost::default(), loaded.context, back).unwrap();
    assert_eq!(resumed.now_ms(), 7);
    resumed.advance(30).unwrap();
    assert_eq!(resumed.active_atomic_paths(), ["pinged"]);
    resumed.send("back").unwrap();
    assert_eq!(resumed.active_atomic_paths(), ["s.p.r1.b", "s.p.r2.c"]);
}

#[test]
fn codec_rejections_are_typed() {
    let chart = timer_chart();
    let mut m = Interpreter::new(chart.clone(), NoHost, ());
    m.start().unwrap();
    m.send("go").unwrap();
    let bytes = m.state().to_bytes();

    let mut wrong_version = bytes.clone();
    wrong_version[0] = FORMAT_VERSION + 1;
    assert_eq!(
        MachineState::from_bytes(&chart, &wrong_version),
        Err(StateCodecError::UnsupportedVersion { found: FORMAT_VERSION + 1, supported: FORMAT_VERSION })
    );
    assert_eq!(MachineState::from_bytes(&chart, &[]), Err(StateCodecError::Empty));
    for cut in 1..bytes.len() {
        assert!(MachineState::from_bytes(&chart, &bytes[..cut]).is_err(), "accepted a {cut}-byte prefix");
    }
    let mut trailing = bytes.clone();
    trailing.push(0);
    assert_eq!(MachineState::from_bytes(&chart, &trailing), Err(StateCodecError::TrailingBytes(1)));

    let other = json::load(&json!({"machine": {"states": {"a": {}}}})).unwrap().chart;
    assert!(matches!(MachineState::from_bytes(&other, &bytes), Err(StateCodecError::ChartMismatch { .. })));

    let mut value = serde_json::to_value(m.state()).unwrap();
    value["version"] = json!(99);
    let err = serde_json::from_value::<MachineState>(value).unwrap_err();
    assert!(err.to_string().contains("unsupported machine-state format version 99"), "{err}");
}

#[test]
fn events_carry_payload_and_kind() {
    struct Seen(Vec<(String, Option<serde_json::Value>, EventKind)>);
    impl Host for Seen {
        type Context = ();
        fn guard(&mut self, _: GuardId, _: &(), ev: &EventRef<'_>) -> bool {
            ev.data.and_then(|d| d.get("ok")).and_then(serde_json::Value::as_bool).unwrap_or(false)
        }
        fn action(&mut self, _: ActionId, _: &mut (), ev: &EventRef<'_>) {
            self.0.push((ev.name.to_owned(), ev.data.cloned(), ev.kind));
        }
    }
    let mut b = ChartBuilder::new("m");
    let root = b.root();
    let a = b.add_state(root, "a", NodeKind::State).unwrap();
    let bb = b.add_state(root, "b", NodeKind::State).unwrap();
    b.add_transition(
        a,
        TransitionSpec::on("go")
            .guard(GuardSpec::Custom(GuardId(0)))
            .target("b")
            .action(ActionSpec::custom(ActionId(0)))
            .action(ActionSpec::raise("inner")),
    )
    .unwrap();
    b.add_transition(bb, TransitionSpec::on("inner").action(ActionSpec::custom(ActionId(0)))).unwrap();
    let chart = b.build().unwrap();
    let mut m = Interpreter::new(&chart, Seen(Vec::new()), ());
    m.start().unwrap();
    let no = json!({"ok": false});
    m.send_event(EventRef::with_data("go", &no)).unwrap();
    assert!(m.is_in("a"));
    let yes = json!({"ok": true});
    m.send_event(EventRef::with_data("go", &yes)).unwrap();
    assert!(m.is_in("b"));
    assert_eq!(
        m.host().0,
        [
            ("go".to_owned(), Some(yes.clone()), EventKind::External),
            ("inner".to_owned(), None, EventKind::Internal)
        ]
    );
}

#[test]
fn step_limit_stops_eventless_cycles() {
    let loaded = json::load(
        &json!({"machine": {"initial": "a", "states": {"a": {"always": "b"}, "b": {"always": "a"}}}}),
    )
    .unwrap();
    let mut m = Interpreter::new(&loaded.chart, loaded.host, loaded.context);
    m.set_step_limit(1000);
    assert_eq!(m.start(), Err(RunError::StepLimit { limit: 1000 }));
    assert!(loaded.chart.is_legal_configuration(m.state().active()));
}

#[test]
fn not_started_and_started_twice() {
    let chart = timer_chart();
    let mut m = Interpreter::new(chart, NoHost, ());
    assert_eq!(m.send("go"), Err(RunError::NotStarted));
    assert_eq!(m.advance(1), Err(RunError::NotStarted));
    m.start().unwrap();
    assert_eq!(m.start(), Err(RunError::AlreadyStarted));
}

#[test]
fn host_guards_and_custom_guard_ids() {
    // Recorder: guard 1 is true, guard 0 false.
    let mut b = ChartBuilder::new("m");
    let root = b.root();
    let a = b.add_state(root, "a", NodeKind::State).unwrap();
    b.add_state(root, "no", NodeKind::State).unwrap();
    b.add_state(root, "yes", NodeKind::State).unwrap();
    b.add_transition(a, TransitionSpec::on("t").guard(GuardSpec::Custom(GuardId(0))).target("no")).unwrap();
    b.add_transition(a, TransitionSpec::on("t").guard(GuardSpec::Custom(GuardId(1))).target("yes")).unwrap();
    let chart = b.build().unwrap();
    let mut m = Interpreter::new(&chart, Recorder::default(), ());
    m.start().unwrap();
    m.send("t").unwrap();
    assert_eq!(m.active_atomic_paths(), ["yes"]);
}
