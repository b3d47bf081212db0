//! End-to-end tests of `orchestrator chart …` with the real binary and the conformance fixtures.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/conformance/statecharts");

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_orchestrator"))
        .args(args)
        .output()
        .expect("the orchestrator binary runs")
}

fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).expect("stdout is UTF-8")
}

fn stderr(output: &Output) -> String {
    String::from_utf8(output.stderr.clone()).expect("stderr is UTF-8")
}

/// The fixture directory, or `None` (after printing why) when it is missing outside CI.
fn fixture_dir() -> Option<PathBuf> {
    let dir = PathBuf::from(FIXTURES);
    if dir.is_dir() {
        return Some(dir);
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "conformance fixtures missing at {} (required when CI is set)",
        dir.display()
    );
    println!("SKIP chart CLI tests: fixture directory {} not found", dir.display());
    None
}

fn fixture_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("read fixture dir")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    files
}

/// A scratch directory for this test, emptied first.
fn scratch_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("orchestrator-chart-cli-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create scratch dir");
    dir
}

#[test]
fn check_passes_every_fixture_in_the_directory() {
    let Some(dir) = fixture_dir() else { return };
    let count = fixture_files(&dir).len();
    assert!(count >= 20, "expected the 20 sample fixtures, found {count}");
    let output = run(&["chart", "check", dir.to_str().expect("utf-8 path")]);
    let text = stdout(&output);
    assert_eq!(output.status.code(), Some(0), "{text}{}", stderr(&output));
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), count + 1, "{text}");
    assert_eq!(lines.iter().filter(|l| l.starts_with("PASS ")).count(), count, "{text}");
    assert_eq!(lines.last().copied(), Some(format!("{count} passed, 0 failed").as_str()));
    // Sorted by file name, one line per file.
    for (line, file) in lines.iter().zip(fixture_files(&dir)) {
        assert!(line.starts_with(&format!("PASS {}", file.display())), "{line} vs {}", file.display());
    }
}

#[test]
fn check_reports_a_broken_fixture_and_fails() {
    let Some(dir) = fixture_dir() else { return };
    let text = std::fs::read_to_string(dir.join("scion-basic-basic1.json")).expect("read fixture");
    let mut doc: Value = serde_json::from_str(&text).expect("fixture JSON");
    assert_eq!(doc["steps"][1]["expect"], serde_json::json!(["b"]));
    doc["steps"][1]["expect"] = serde_json::json!(["a"]);
    let scratch = scratch_dir("broken");
    let broken = scratch.join("broken-basic1.json");
    std::fs::write(&broken, serde_json::to_string_pretty(&doc).expect("render")).expect("write");

    let output = run(&["chart", "check", broken.to_str().expect("utf-8 path")]);
    let out = stdout(&output);
    assert_eq!(output.status.code(), Some(1), "{out}{}", stderr(&output));
    assert_eq!(out, format!("FAIL {}: step 1: expected [a] got [b]\n0 passed, 1 failed\n", broken.display()));
    assert!(stderr(&output).starts_with("error: "), "{}", stderr(&output));

    // A directory mixing it with a good fixture and an invalid file.
    std::fs::copy(dir.join("w3c-test144.json"), scratch.join("good.json")).expect("copy");
    std::fs::write(scratch.join("invalid.json"), "{\"machine\": 3}").expect("write");
    let output = run(&["chart", "check", scratch.to_str().expect("utf-8 path")]);
    let out = stdout(&output);
    assert_eq!(output.status.code(), Some(1), "{out}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 4, "{out}");
    assert!(lines[0].starts_with("FAIL ") && lines[0].contains("broken-basic1.json: step 1:"), "{out}");
    assert!(lines[1].starts_with("PASS ") && lines[1].ends_with("good.json"), "{out}");
    assert!(
        lines[2].starts_with("FAIL ") && lines[2].contains("invalid.json: machine: expected an object"),
        "{out}"
    );
    assert_eq!(lines[3], "1 passed, 2 failed");
    let _ = std::fs::remove_dir_all(&scratch);
}

#[test]
fn check_without_fixtures_is_a_usage_error() {
    let scratch = scratch_dir("empty");
    let output = run(&["chart", "check", scratch.to_str().expect("utf-8 path")]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let _ = std::fs::remove_dir_all(&scratch);
}

/// `simulate` on every fixture with the fixture's own events (and clock advances) reproduces
/// each step's expected states (the main expectation or one of its variants) and done flag.
#[test]
fn simulate_reproduces_every_fixture() {
    let Some(dir) = fixture_dir() else { return };
    let mut simulated = 0;
    for file in fixture_files(&dir) {
        let doc: Value =
            serde_json::from_str(&std::fs::read_to_string(&file).expect("read")).expect("fixture JSON");
        let steps = doc["steps"].as_array().expect("steps");
        if steps.iter().any(|s| s["event"].is_object()) {
            continue; // events with data cannot be given on the command line
        }
        let mut args = vec!["chart".to_owned(), "simulate".to_owned(), file.display().to_string()];
        // Which output line checks which step.
        let mut checked_line = vec![0usize];
        for step in &steps[1..] {
            if let Some(ms) = step["advance_ms"].as_u64() {
                args.push(format!("+{ms}"));
            }
            if let Some(event) = step["event"].as_str() {
                args.push(event.to_owned());
            }
            checked_line.push(args.len() - 3);
        }
        let arg_refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let output = run(&arg_refs);
        let text = stdout(&output);
        assert!(output.status.success(), "{}: {}", file.display(), stderr(&output));
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].starts_with("start: ["), "{text}");
        for (step, line_no) in steps.iter().zip(&checked_line) {
            let line = lines[*line_no];
            let (label, rest) = line.split_once(": [").expect("a state line");
            let (states, done) = rest.split_once(']').expect("closing bracket");
            let got: BTreeSet<&str> = states.split(", ").filter(|s| !s.is_empty()).collect();
            assert_eq!(label, if *line_no == 0 { "start" } else { args[line_no + 2].as_str() });
            let expectations = std::iter::once(step)
                .chain(step["variants"].as_object().into_iter().flat_map(|v| v.values()));
            let matches = expectations.clone().any(|e| {
                let expect = e.get("expect").or(step.get("expect"));
                let states_ok = expect.is_none_or(|x| {
                    x.as_array()
                        .expect("expect array")
                        .iter()
                        .map(|p| p.as_str().expect("path"))
                        .collect::<BTreeSet<_>>()
                        == got
                });
                let done_ok = e
                    .get("done")
                    .or(step.get("done"))
                    .and_then(Value::as_bool)
                    .is_none_or(|d| d == (done == " (done)"));
                states_ok && done_ok
            });
            assert!(matches, "{}: line {line:?} matches no expectation of {step}", file.display());
        }
        simulated += 1;
    }
    assert!(simulated >= 15, "only {simulated} fixtures simulated");
}

#[test]
fn simulate_prints_context_and_accepts_bare_machines() {
    let scratch = scratch_dir("bare");
    let chart = scratch.join("counter.json");
    std::fs::write(
        &chart,
        r#"{"id": "c", "initial": "idle", "context": {"n": 0},
            "states": {"idle": {"on": {"tick": {"actions": [{"type": "raise", "event": "tock"}]}, "tock": "busy"}},
                       "busy": {"after": {"100": "gone"}}, "gone": {"type": "final"}}}"#,
    )
    .expect("write");
    let path = chart.to_str().expect("utf-8 path");
    let output = run(&["chart", "simulate", path, "tick", "+99", "+1", "tick"]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(
        stdout(&output),
        "start: [idle]\ntick: [busy]\n+99: [busy]\n+1: [gone] (done)\ntick: [gone] (done)\ncontext: {\"n\":0}\n"
    );
    let output = run(&["chart", "simulate", "--context", path, "tick"]);
    assert_eq!(stdout(&output), "start: [idle]\ncontext: {\"n\":0}\ntick: [busy]\ncontext: {\"n\":0}\n");
    let output = run(&["chart", "simulate", path, "+later"]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(output.stdout.is_empty());
    let output = run(&["chart", "simulate", scratch.join("nope.json").to_str().expect("utf-8 path")]);
    assert_eq!(output.status.code(), Some(1));
    assert!(stderr(&output).starts_with("error: cannot read "), "{}", stderr(&output));
    let _ = std::fs::remove_dir_all(&scratch);
}

#[test]
fn export_works_in_every_format() {
    let Some(dir) = fixture_dir() else { return };
    for file in fixture_files(&dir) {
        let path = file.to_str().expect("utf-8 path");
        let output = run(&["chart", "export", "--format", "xstate", path]);
        assert!(output.status.success(), "{path}: {}", stderr(&output));
        let machine: Value = serde_json::from_str(&stdout(&output)).expect("XState JSON");
        assert_eq!(machine["id"], "m", "{path}");
        assert!(machine["states"].is_object(), "{path}");
        let doc: Value = serde_json::from_str(&std::fs::read_to_string(&file).expect("read")).expect("JSON");
        if let Some(context) = doc["machine"].get("context") {
            assert_eq!(&machine["context"], context, "{path}");
        }

        let output = run(&["chart", "export", "--format", "mermaid", path]);
        assert!(output.status.success(), "{path}: {}", stderr(&output));
        assert!(stdout(&output).starts_with("stateDiagram-v2\n"), "{path}");

        let output = run(&["chart", "export", "--format", "dot", path]);
        assert!(output.status.success(), "{path}: {}", stderr(&output));
        let text = stdout(&output);
        assert!(text.starts_with("digraph \"m\" {\n") && text.ends_with("}\n"), "{path}");
    }
    let output = run(&["chart", "export", "--format", "svg", "x.json"]);
    assert_eq!(output.status.code(), Some(2));
}
