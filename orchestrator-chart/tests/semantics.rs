//! Semantic tests written as inline fixtures (same format as the conformance suite), covering
//! features the sample fixtures do not: deep history with parallel regions, multi-target
//! transitions, nested parallel done events, timers, wildcard order, `In()` during exit.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use orchestrator_chart::fixture;
use serde_json::{Value, json};

fn check(name: &str, doc: Value) {
    let report = fixture::run(name, &doc).unwrap_or_else(|e| panic!("{e}"));
    assert!(report.passed(), "{}", report.summary());
    // Variants must not be needed by our own charts.
    assert!(!report.summary().contains("variant"), "{}", report.summary());
}

#[test]
fn child_priority_regardless_of_region_order() {
    // Region r1's atomic state is selected first; the parent's transition (found from r2) is
    // preempted because r1.a1's source is its descendant.
    let machine = |first_region: &str| {
        let r1 = json!({"initial": "a1", "states": {"a1": {"on": {"t": "p.r1.a2"}}, "a2": {}}});
        let r2 = json!({"states": {"b": {}}});
        let mut states = serde_json::Map::new();
        if first_region == "r1" {
            states.insert("r1".into(), r1);
            states.insert("r2".into(), r2);
        } else {
            states.insert("r2".into(), r2);
            states.insert("r1".into(), r1);
        }
        json!({"id": "m", "initial": "p", "states": {
            "p": {"type": "parallel", "on": {"t": "x"}, "states": states},
            "x": {}}})
    };
    for first in ["r1", "r2"] {
        check(
            "child-priority",
            json!({"machine": machine(first), "steps": [
                {"event": null, "expect": ["p.r1.a1", "p.r2.b"]},
                {"event": "t", "expect": ["p.r1.a2", "p.r2.b"]}]}),
        );
    }
}

#[test]
fn conflict_first_region_wins_and_targetless_never_conflicts() {
    check(
        "conflict",
        json!({
            "actions": [{"name": "inc", "assign": {"var": "n", "op": "add", "value": 1}}],
            "machine": {"id": "m", "initial": "p", "context": {"n": 0}, "states": {
                "p": {"type": "parallel", "states": {
                    "r1": {"on": {"t": "x", "u": {"actions": ["inc"]}}},
                    "r2": {"on": {"t": "y", "u": {"actions": ["inc"]}}},
                    "r3": {"on": {"u": {"actions": ["inc"]}}}}},
                "x": {}, "y": {}}},
            "steps": [
                {"event": null, "expect": ["p.r1", "p.r2", "p.r3"]},
                {"event": "u", "expect": ["p.r1", "p.r2", "p.r3"], "context": {"n": 3}},
                {"event": "t", "expect": ["x"]}]}),
    );
}

#[test]
fn duplicate_selection_runs_once() {
    // Both regions reach p's targetless transition: it runs once.
    check(
        "merge",
        json!({
            "actions": [{"name": "inc", "assign": {"var": "n", "op": "add", "value": 1}}],
            "machine": {"id": "m", "initial": "p", "context": {"n": 0}, "states": {
                "p": {"type": "parallel", "on": {"t": {"actions": ["inc"]}}, "states": {"a": {}, "b": {}}}}},
            "steps": [{"event": null, "expect": ["p.a", "p.b"]}, {"event": "t", "expect": ["p.a", "p.b"], "context": {"n": 1}}]}),
    );
}

#[test]
fn deep_history_with_parallel_regions() {
    check(
        "deep-history-parallel",
        json!({"machine": {"id": "m", "initial": "s", "states": {
            "s": {"initial": "p", "on": {"out": "o"}, "states": {
                "h": {"type": "history", "history": "deep"},
                "p": {"type": "parallel", "states": {
                    "r1": {"states": {"a": {"on": {"n1": "s.p.r1.b"}}, "b": {"states": {"b1": {"on": {"n1": "s.p.r1.b.b2"}}, "b2": {}}}}},
                    "r2": {"states": {"c": {"on": {"n2": "s.p.r2.d"}}, "d": {}}}}},
                "q": {}}},
            "o": {"on": {"back": "s.h", "fresh": "s"}}}},
         "steps": [
            {"event": null, "expect": ["s.p.r1.a", "s.p.r2.c"]},
            {"event": "n1", "expect": ["s.p.r1.b.b1", "s.p.r2.c"]},
            {"event": "n1", "expect": ["s.p.r1.b.b2", "s.p.r2.c"]},
            {"event": "n2", "expect": ["s.p.r1.b.b2", "s.p.r2.d"]},
            {"event": "out", "expect": ["o"]},
            {"event": "back", "expect": ["s.p.r1.b.b2", "s.p.r2.d"]},
            {"event": "out", "expect": ["o"]},
            {"event": "fresh", "expect": ["s.p.r1.a", "s.p.r2.c"]},
            {"event": "out", "expect": ["o"]},
            {"event": "back", "expect": ["s.p.r1.a", "s.p.r2.c"]}]}),
    );
}

#[test]
fn shallow_history_restores_child_with_default_initial_below() {
    check(
        "shallow-history",
        json!({
            "actions": [{"name": "hist_default", "assign": {"var": "d", "op": "add", "value": 1}}],
            "machine": {"id": "m", "initial": "s", "context": {"d": 0}, "states": {
            "s": {"on": {"out": "o"}, "states": {
                "a": {"on": {"go": "s.b.b2"}},
                "b": {"states": {"b1": {}, "b2": {}}},
                "h": {"type": "history", "target": "s.b", "actions": ["hist_default"]}}},
            "o": {"on": {"back": "s.h"}}}},
         "steps": [
            {"event": null, "expect": ["s.a"]},
            {"event": "out", "expect": ["o"]},
            {"event": "back", "expect": ["s.a"], "context": {"d": 0}},
            {"event": "go", "expect": ["s.b.b2"]},
            {"event": "out", "expect": ["o"]},
            {"event": "back", "expect": ["s.b.b1"], "context": {"d": 0}}]}),
    );
    // Default used (and its actions run) when nothing is stored.
    check(
        "history-default",
        json!({
            "actions": [{"name": "hist_default", "assign": {"var": "d", "op": "add", "value": 1}}],
            "machine": {"id": "m", "initial": "o", "context": {"d": 0}, "states": {
            "s": {"states": {
                "a": {},
                "b": {"states": {"b1": {}, "b2": {}}},
                "h": {"type": "history", "target": "s.b.b2", "actions": ["hist_default"]}}},
            "o": {"on": {"back": "s.h"}}}},
         "steps": [
            {"event": null, "expect": ["o"]},
            {"event": "back", "expect": ["s.b.b2"], "context": {"d": 1}}]}),
    );
}

#[test]
fn multi_target_and_deep_initial() {
    check(
        "multi-target",
        json!({"machine": {"id": "m", "initial": ["p.r1.y", "p.r2.w"], "states": {
            "p": {"type": "parallel", "states": {
                "r1": {"states": {"x": {}, "y": {}}},
                "r2": {"states": {"v": {}, "w": {}}},
                "r3": {"states": {"k": {}, "l": {}}}},
                "on": {"reset": {"target": ["p.r1.x", "p.r3.l"]}, "out": "o"}},
            "o": {"on": {"go": {"target": ["p.r2.w", "p.r3.l"]}}}}},
         "steps": [
            {"event": null, "expect": ["p.r1.y", "p.r2.w", "p.r3.k"]},
            {"event": "reset", "expect": ["p.r1.x", "p.r2.v", "p.r3.l"]},
            {"event": "out", "expect": ["o"]},
            {"event": "go", "expect": ["p.r1.x", "p.r2.w", "p.r3.l"]}]}),
    );
}

#[test]
fn nested_parallel_done_events() {
    // q (parallel) inside p (parallel): done.state.q.* then done.state.p.q then done.state.p.
    check(
        "nested-parallel-done",
        json!({
            "actions": [
                {"name": "saw_q", "assign": {"var": "q", "op": "add", "value": 1}},
                {"name": "saw_r", "assign": {"var": "r", "op": "add", "value": 1}}],
            "guards": [{"name": "ok", "meaning": "", "check": {"var": "q", "op": "eq", "value": 1}}],
            "machine": {"id": "m", "initial": "p", "context": {"q": 0, "r": 0}, "states": {
            "p": {"type": "parallel",
                  "on": {"done.state.p.q": {"actions": ["saw_q"]}, "done.state.p.r": {"actions": ["saw_r"]}},
                  "onDone": [{"target": "pass", "guard": "ok"}, {"target": "fail"}],
                  "states": {
                "q": {"type": "parallel", "states": {
                    "q1": {"states": {"a": {"on": {"e1": "p.q.q1.f"}}, "f": {"type": "final"}}},
                    "q2": {"states": {"a": {"on": {"e2": "p.q.q2.f"}}, "f": {"type": "final"}}}}},
                "r": {"states": {"a": {"on": {"e3": "p.r.f"}}, "f": {"type": "final"}}}}},
            "pass": {"type": "final"},
            "fail": {"type": "final"}}},
         "steps": [
            {"event": null, "expect": ["p.q.q1.a", "p.q.q2.a", "p.r.a"]},
            {"event": "e3", "expect": ["p.q.q1.a", "p.q.q2.a", "p.r.f"], "context": {"r": 1, "q": 0}},
            {"event": "e1", "expect": ["p.q.q1.f", "p.q.q2.a", "p.r.f"], "context": {"q": 0}},
            {"event": "e2", "expect": ["pass"], "done": true},
            {"event": "e1", "expect": ["pass"], "done": true}]}),
    );
}

#[test]
fn halt_runs_exit_actions_and_ignores_events() {
    check(
        "halt",
        json!({
            "actions": [{"name": "inc", "assign": {"var": "n", "op": "add", "value": 1}}],
            "machine": {"id": "m", "initial": "a", "context": {"n": 0}, "states": {
            "a": {"on": {"t": "f"}, "exit": ["inc"]},
            "f": {"type": "final", "exit": ["inc"], "entry": [{"type": "send", "event": "t"}]}}},
         "steps": [
            {"event": null, "expect": ["a"], "done": false},
            {"event": "t", "expect": ["f"], "context": {"n": 2}, "done": true},
            {"event": "t", "expect": ["f"], "context": {"n": 2}, "done": true}]}),
    );
}

#[test]
fn wildcard_document_order_and_tokens() {
    check(
        "wildcard-order",
        json!({"machine": {"id": "m", "initial": "a", "states": {
            "a": {"on": {"*": "b", "foo": "c"}},
            "b": {"on": {"foo.*": "c", "*": "a"}},
            "c": {"on": {"foo.bar.*": "d"}},
            "d": {}}},
         "steps": [
            {"event": null, "expect": ["a"]},
            {"event": "foo", "expect": ["b"]},
            {"event": "foobar", "expect": ["a"]},
            {"event": "x", "expect": ["b"]},
            {"event": "foo.baz", "expect": ["c"]},
            {"event": "foo", "expect": ["c"]},
            {"event": "foo.bar", "expect": ["d"]}]}),
    );
}

#[test]
fn in_predicate_sees_configuration_state_by_state() {
    // SCXML (w3c test409/411-like): a child is removed before its parent's exit actions run,
    // and a state is added before its own entry actions run.
    check(
        "in-during-exit",
        json!({
            "guards": [
                {"name": "in_a1", "meaning": "", "check": {"in": "a.a1"}},
                {"name": "in_b", "meaning": "", "check": {"in": "b"}}],
            "actions": [
                {"name": "x1", "assign": {"var": "x", "op": "set", "value": 1}},
                {"name": "y1", "assign": {"var": "y", "op": "set", "value": 1}}],
            "machine": {"id": "m", "initial": "a", "context": {"x": 0, "y": 0}, "states": {
            "a": {"exit": [{"type": "raise", "event": "bad", "guard": "in_a1"}], "on": {"t": "b"},
                  "states": {"a1": {}}},
            "b": {"entry": [{"type": "raise", "event": "good", "guard": "in_b"}],
                  "on": {"good": {"actions": ["x1"]}, "bad": {"actions": ["y1"]}}}}},
         "steps": [
            {"event": null, "expect": ["a.a1"]},
            {"event": "t", "expect": ["b"], "context": {"x": 1, "y": 0}}]}),
    );
}

#[test]
fn eventless_before_internal_and_external_queue_order() {
    check(
        "queues",
        json!({"machine": {"id": "m", "initial": "a", "states": {
            "a": {"on": {"go": {"target": "b", "actions": [
                {"type": "send", "event": "e1"}, {"type": "raise", "event": "i1"}, {"type": "send", "event": "e2"}]}}},
            "b": {"always": "c", "on": {"i1": "fail"}},
            "c": {"on": {"i1": "d", "e1": "fail"}},
            "d": {"on": {"e1": "e", "e2": "fail"}},
            "e": {"on": {"e2": "f"}},
            "f": {},
            "fail": {}}},
         "steps": [{"event": null, "expect": ["a"]}, {"event": "go", "expect": ["f"]}]}),
    );
}

#[test]
fn internal_vs_external_transitions() {
    check(
        "reenter",
        json!({
            "actions": [{"name": "inc", "assign": {"var": "n", "op": "add", "value": 1}}],
            "machine": {"id": "m", "initial": "a", "context": {"n": 0}, "states": {
            "a": {"entry": ["inc"], "exit": ["inc"],
                  "on": {"gop": "p", "int": "a.a2", "ext": {"target": "a.a2", "reenter": true}, "self": "a", "selfx": {"target": "a", "reenter": true}},
                  "states": {"a1": {}, "a2": {}}},
            "p": {"type": "parallel", "entry": ["inc"], "on": {"pint": "p.r.y"}, "states": {"r": {"states": {"x": {}, "y": {}}}}}}},
         "steps": [
            {"event": null, "expect": ["a.a1"], "context": {"n": 1}},
            {"event": "int", "expect": ["a.a2"], "context": {"n": 1}},
            {"event": "ext", "expect": ["a.a2"], "context": {"n": 3}},
            {"event": "self", "expect": ["a.a1"], "context": {"n": 5}},
            {"event": "selfx", "expect": ["a.a1"], "context": {"n": 7}},
            {"event": "gop", "expect": ["p.r.x"], "context": {"n": 9}},
            {"event": "pint", "expect": ["p.r.y"], "context": {"n": 10}}]}),
    );
}

#[test]
fn after_timers_and_delayed_sends() {
    check(
        "timers",
        json!({"machine": {"id": "m", "initial": "a", "states": {
            "a": {"after": {"100": "timeout"}, "on": {"t": {"target": "b", "actions": [
                {"type": "send", "event": "late", "delay_ms": 50},
                {"type": "send", "event": "never", "delay_ms": 60, "id": "n"}]}}},
            "b": {"after": {"30": "c"}, "on": {"late": "fail", "never": "fail", "stay": {"target": "b", "reenter": true}}},
            "c": {"entry": [{"type": "cancel", "id": "n"}], "on": {"late": "d", "never": "fail"}},
            "d": {"after": {"10": "e"}, "on": {"*": "fail"}},
            "e": {},
            "timeout": {},
            "fail": {}}},
         "steps": [
            {"event": null, "expect": ["a"]},
            {"advance_ms": 99, "event": "t", "expect": ["b"]},
            {"advance_ms": 10, "event": "stay", "expect": ["b"]},
            {"advance_ms": 20, "event": null, "expect": ["b"]},
            {"advance_ms": 10, "event": null, "expect": ["c"]},
            {"advance_ms": 9, "event": null, "expect": ["c"]},
            {"advance_ms": 1, "event": null, "expect": ["d"]},
            {"advance_ms": 100, "event": null, "expect": ["e"]}]}),
    );
}

#[test]
fn first_transition_into_history_of_enclosing_parallel_keeps_configuration_legal() {
    // The transition's domain is computed once, before exit (from the default target p.r: the
    // root, since findLCCA skips the parallel p), so p is exited and re-entered. Recomputing it
    // after history recording (as the pseudo-code's computeEntrySet does) would leave p out.
    check(
        "history-domain",
        json!({
            "actions": [{"name": "enter_p", "assign": {"var": "p", "op": "add", "value": 1}}],
            "machine": {"id": "m", "initial": "p", "context": {"p": 0}, "states": {
            "p": {"type": "parallel", "entry": ["enter_p"], "states": {
                "h": {"type": "history", "history": "deep", "target": "p.r"},
                "r": {"states": {"x": {"on": {"go": {"target": "p.h", "reenter": true}, "next": "p.r.y"}}, "y": {}}}}}}},
         "steps": [
            {"event": null, "expect": ["p.r.x"], "context": {"p": 1}},
            {"event": "go", "expect": ["p.r.x"], "context": {"p": 2}},
            {"event": "next", "expect": ["p.r.y"]}]}),
    );
}

#[test]
fn history_transition_with_domain_inside_the_history_parent_reenters_nothing_above_the_domain() {
    // a -> p.h (default p.q.r1.a): the effective target is a, so the domain is p.q.r1 and only a
    // is exited. The pseudo-code's addDescendantStatesToEnter for the history state adds the
    // ancestors of a up to the history's parent p (r1 and q), which are active and were not
    // exited; entering q again would also default-enter region r2 (c next to the active d).
    check(
        "history-domain-inside-parent",
        json!({
            "actions": [
                {"name": "enter_q", "assign": {"var": "q", "op": "add", "value": 1}},
                {"name": "enter_r1", "assign": {"var": "r1", "op": "add", "value": 1}},
                {"name": "enter_r2", "assign": {"var": "r2", "op": "add", "value": 1}},
                {"name": "enter_a", "assign": {"var": "a", "op": "add", "value": 1}},
                {"name": "exit_a", "assign": {"var": "xa", "op": "add", "value": 1}}],
            "machine": {"id": "m", "initial": "p", "context": {"q": 0, "r1": 0, "r2": 0, "a": 0, "xa": 0},
            "states": {
            "p": {"states": {
                "h": {"type": "history", "target": "p.q.r1.a"},
                "q": {"type": "parallel", "entry": ["enter_q"], "states": {
                    "r1": {"entry": ["enter_r1"], "states": {
                        "a": {"entry": ["enter_a"], "exit": ["exit_a"],
                              "on": {"go": {"target": "p.h", "reenter": true}}}}},
                    "r2": {"entry": ["enter_r2"], "states": {"c": {"on": {"n": "p.q.r2.d"}}, "d": {}}}}}}}}},
         "steps": [
            {"event": null, "expect": ["p.q.r1.a", "p.q.r2.c"], "context": {"q": 1, "r1": 1, "r2": 1, "a": 1, "xa": 0}},
            {"event": "n", "expect": ["p.q.r1.a", "p.q.r2.d"]},
            {"event": "go", "expect": ["p.q.r1.a", "p.q.r2.d"], "context": {"q": 1, "r1": 1, "r2": 1, "a": 2, "xa": 1}}]}),
    );
}

#[test]
fn stored_history_transition_with_domain_inside_the_history_parent_keeps_ancestors() {
    // The same with a stored deep history: y -> p.h (stored [p.c.x]) has domain p.c, so c is
    // neither exited nor entered again.
    check(
        "deep-history-domain-inside-parent",
        json!({
            "actions": [{"name": "enter_c", "assign": {"var": "c", "op": "add", "value": 1}}],
            "machine": {"id": "m", "initial": "p", "context": {"c": 0}, "states": {
            "p": {"on": {"out": "o"}, "states": {
                "h": {"type": "history", "history": "deep"},
                "c": {"entry": ["enter_c"], "states": {
                    "x": {"on": {"next": "p.c.y"}},
                    "y": {"on": {"go": "p.h"}}}}}},
            "o": {"on": {"back": "p.h"}}}},
         "steps": [
            {"event": null, "expect": ["p.c.x"], "context": {"c": 1}},
            {"event": "out", "expect": ["o"]},
            {"event": "back", "expect": ["p.c.x"], "context": {"c": 2}},
            {"event": "next", "expect": ["p.c.y"]},
            {"event": "go", "expect": ["p.c.x"], "context": {"c": 2}}]}),
    );
}
