//! Exports that render: every example machine, every sample chart of
//! `../shared/conformance/statecharts/` and charts built to be hard to escape are exported to
//! Mermaid and Graphviz DOT, and the real tools must accept every one:
//!
//! * Mermaid 11.17.2 and 12.3.0 (`interop/mermaid/check.mjs`, under Node with jsdom) must parse
//!   and render (run the layout of) each Mermaid text, and draw every state inside the state it
//!   is declared in;
//! * Graphviz `dot -Tsvg` must turn each DOT text into SVG without an error or a warning.
//!
//! A failure names the chart. Needs `node`, `interop/mermaid/node_modules`
//! (`cd interop/mermaid && npm ci`) and `dot` (Debian: `apt-get install graphviz`). Without
//! them the checks that need them are skipped with a message, except when the `CI` environment
//! variable is set: then the test fails.

#![allow(clippy::unwrap_used, clippy::expect_used)]

// The example programs, compiled here for their machines (their `main`s are not run).
#[allow(dead_code, unreachable_pub, missing_docs, unused_imports)]
#[path = "../examples/agent_loop.rs"]
mod agent_loop;
#[allow(dead_code, unreachable_pub, missing_docs, unused_imports)]
#[path = "../examples/approval_parallel.rs"]
mod approval_parallel;
#[allow(dead_code, unreachable_pub, missing_docs, unused_imports)]
#[path = "../examples/calculator_workflow.rs"]
mod calculator_workflow;
#[allow(dead_code, unreachable_pub, missing_docs, unused_imports)]
#[path = "../examples/machine_tour.rs"]
mod machine_tour;
#[allow(dead_code, unreachable_pub, missing_docs, unused_imports)]
#[path = "../examples/parent_child.rs"]
mod parent_child;

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use orchestrator::machine::Machine;
use orchestrator::machine::chart::export::{self, NameTable};
use orchestrator::machine::chart::{
    ActionId, ActionSpec, Chart, ChartBuilder, GuardId, GuardSpec, NodeKind, TransitionSpec, json,
};
use orchestrator_examples::calculator::{AverageOutput, AverageV1};
use serde_json::{Value, json};

const MERMAID_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../interop/mermaid");
const FIXTURE_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/conformance/statecharts");

// ---------------------------------------------------------------------------------------------
// A machine written to be hard to export: closures spanning lines with `|`, quotes, `<>`, `#`
// and `;`, named and unnamed; state keys Mermaid reserves (`note`, `default`, `end`) or uses for
// its pseudo-states (`start`); a compound state inside a parallel region that transitions start
// and end at; a final state with entry and exit actions.

orchestrator::machine! {
    /// Closures with awkward source text, and awkward state keys.
    pub machine Tricky {
        contract: AverageV1,
        context: Vec<String>,
        output: |_| AverageOutput { average: 0.0 },
        states: {
            note: {
                entry: [|ctx, _, _| {
                    ctx.push("a|b \"q\" <b>x</b>; #1 %% end note".to_owned());
                }],
                on: {
                    "go" => {
                        target: r#default,
                        guard: |ctx, _| ctx.iter().any(|s| s.contains('|') || s.as_str() == "<>"),
                        actions: [record = |ctx, _, _| {
                            ctx.push(String::from("\"<>\"\n"));
                        }],
                    },
                    "skip" => { target: r#default.left.start.x, guard: has_two = |ctx, _| ctx.len() == 2 },
                },
            },
            r#default: {
                type: parallel,
                states: {
                    left: {
                        states: {
                            start: {
                                states: { x: { on: { "down" => r#default.left.start.y } }, y: {} },
                                on: { "out" => r#default.left.end },
                            },
                            end: { on: { "in" => r#default.left.start, "quit" => done } },
                        },
                    },
                    right: { states: { idle: { on: { "tick" => r#default.right.idle } } } },
                },
            },
            done: {
                type: final,
                entry: [|ctx, _, _| ctx.clear(), |ctx, _, _| {
                    // `|` and "quotes" in a comment.
                    ctx.shrink_to_fit()
                }],
                exit: [farewell = |ctx, _, _| ctx.push("<bye>".into())],
            },
        },
    }
}

// ---------------------------------------------------------------------------------------------

/// One chart's exports.
struct Exported {
    name: String,
    mermaid: String,
    dot: String,
}

fn exported(name: impl Into<String>, chart: &Chart, names: &NameTable) -> Exported {
    Exported {
        name: name.into(),
        mermaid: export::to_mermaid(chart, names),
        dot: export::to_dot(chart, names),
    }
}

fn machine<M: Machine>() -> Exported {
    // No display name is source text.
    for name in M::guard_names().iter().chain(M::action_names()) {
        assert!(
            !name.contains(['|', '\n', '"', '<', '{', ' ']),
            "{}: a guard or action is shown as {name:?}",
            M::NAME
        );
    }
    exported(format!("example machine {}", M::NAME), M::chart(), &M::names())
}

/// Every example machine (`examples/` and `examples/src/`).
fn example_machines() -> Vec<Exported> {
    vec![
        machine::<orchestrator_examples::calculator::flows::AverageFlow>(),
        machine::<orchestrator_examples::orders::OrderFlow>(),
        machine::<agent_loop::AgentLoop>(),
        machine::<approval_parallel::GatedFlow>(),
        machine::<calculator_workflow::AverageFlow>(),
        machine::<machine_tour::VideoCall>(),
        machine::<parent_child::Increment>(),
        machine::<parent_child::Decrement>(),
        machine::<parent_child::ParentOne>(),
        machine::<parent_child::ParentTwo>(),
    ]
}

/// Every sample chart; `None` (after printing why) when the directory is missing outside CI.
fn sample_charts() -> Option<Vec<Exported>> {
    let dir = Path::new(FIXTURE_DIR);
    if !dir.is_dir() {
        assert!(
            std::env::var_os("CI").is_none(),
            "sample charts missing at {} (required under CI)",
            dir.display()
        );
        println!("SKIP sample charts: {} not found", dir.display());
        return None;
    }
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no sample charts in {}", dir.display());
    Some(
        files
            .iter()
            .map(|p| {
                let name = format!("sample chart {}", p.file_name().unwrap().to_string_lossy());
                let loaded = json::load_file(p).unwrap_or_else(|e| panic!("{name}: {e}"));
                exported(name, &loaded.chart, &loaded.names)
            })
            .collect(),
    )
}

/// Charts built to be hard to escape: names from a JSON chart or a `NameTable` hold anything.
fn hard_charts() -> Vec<Exported> {
    let mut b = ChartBuilder::new("q\"m <x> #1;");
    let root = b.root();
    let a = b.add_state(root, "a:b|c", NodeKind::State).unwrap();
    b.add_state(root, "a;b{x}[y]", NodeKind::State).unwrap();
    let class = b.add_state(root, "class", NodeKind::State).unwrap();
    b.add_state(class, "root", NodeKind::State).unwrap();
    b.add_state(class, "state", NodeKind::State).unwrap();
    b.add_state(root, "<b>\"x\"</b>&%%{init}%%", NodeKind::Final).unwrap();
    b.add_entry(root, ActionSpec::custom(ActionId(1))).unwrap();
    b.add_entry(class, ActionSpec::custom(ActionId(2))).unwrap();
    b.add_transition(a, TransitionSpec::on("ev").target("a;b{x}[y]").action(ActionSpec::custom(ActionId(0))))
        .unwrap();
    b.add_transition(
        a,
        TransitionSpec::on("go")
            .guard(GuardSpec::Custom(GuardId(0)))
            .target("<b>\"x\"</b>&%%{init}%%")
            .action(ActionSpec::custom(ActionId(2))),
    )
    .unwrap();
    b.add_transition(a, TransitionSpec::on("in").target("class")).unwrap();
    let chart = b.build().unwrap();
    let closure = "|ctx, _, out|\n{\n    out.say(\"a|b\"); // Vec<u8> #1 & 50% --> [*]\n}\r\n\\N end note";
    let names = NameTable::from_lists([closure], ["say \"hi\"; #1", "send END note", closure]);
    let mut out = vec![exported("hand-built chart with awkward names", &chart, &names)];

    // Deep and multi-region initials, composite states inside regions as arrow ends, history.
    let doc = json!({"machine": {"id": "m", "initial": "a", "states": {
        "a": {"initial": {"target": ["a.p.r1.c.x", "a.p.r2"]}, "states": {
            "h": {"type": "history", "history": "deep", "target": "a.p.r1.z"},
            "p": {"type": "parallel", "states": {
                "r1": {"initial": "c", "states": {
                    "c": {"states": {"x": {}, "y": {"type": "parallel", "states": {"k": {}, "l": {}}}},
                          "on": {"out": "a.p.r1.z", "stay": {}}},
                    "z": {"on": {"back": "a.p.r1.c", "deep": "a.p.r1.c.y"}}}},
                "r2": {"on": {"self": "a.p.r2"}}}}},
            "on": {"reset": "a.h"}},
        "q": {"type": "parallel", "states": {"r3": {"states": {"u": {"on": {"v": "q.r3.w"}}, "w": {}}}, "r4": {}}}}}});
    let loaded = json::load(&doc).unwrap();
    out.push(exported(
        "JSON chart with deep initials and composite arrow ends in regions",
        &loaded.chart,
        &loaded.names,
    ));
    out
}

// ---------------------------------------------------------------------------------------------
// Prerequisites.

/// Why the Mermaid check cannot run here, if it cannot.
fn mermaid_missing() -> Option<String> {
    match Command::new("node").arg("--version").output() {
        Ok(out) if out.status.success() => {}
        Ok(out) => return Some(format!("`node --version` failed: {}", String::from_utf8_lossy(&out.stderr))),
        Err(e) => return Some(format!("`node` is not on PATH ({e})")),
    }
    for package in ["mermaid", "mermaid12", "jsdom"] {
        let manifest = Path::new(MERMAID_DIR).join("node_modules").join(package).join("package.json");
        if !manifest.is_file() {
            return Some(format!("{} is missing: run `cd interop/mermaid && npm ci`", manifest.display()));
        }
    }
    None
}

/// Why the Graphviz check cannot run here, if it cannot.
fn graphviz_missing() -> Option<String> {
    match Command::new("dot").arg("-V").output() {
        Ok(out) if out.status.success() => None,
        Ok(out) => Some(format!("`dot -V` failed: {}", String::from_utf8_lossy(&out.stderr))),
        Err(e) => Some(format!("Graphviz `dot` is not on PATH ({e}); on Debian: apt-get install graphviz")),
    }
}

/// True when a check may run; panics under CI when it cannot.
fn available(what: &str, missing: Option<String>) -> bool {
    match missing {
        None => true,
        Some(reason) if std::env::var_os("CI").is_some() => {
            panic!("CI is set, so the {what} check must run, but {reason}")
        }
        Some(reason) => {
            println!("SKIPPED {what} check: {reason} (set CI=1 to make this a failure)");
            false
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The checks.

/// The states a Mermaid text declares, each with the state whose block it is declared in.
fn declared_parents(text: &str) -> BTreeMap<String, Option<String>> {
    let mut stack: Vec<String> = Vec::new();
    let mut out = BTreeMap::new();
    for line in text.lines().map(str::trim) {
        if line == "}" {
            stack.pop();
        } else if let Some(rest) = line.strip_prefix("state \"") {
            let (_, id) = rest.rsplit_once("\" as ").unwrap();
            let (id, opens) = match id.strip_suffix(" {") {
                Some(id) => (id, true),
                None => (id, false),
            };
            out.insert(id.to_owned(), stack.last().cloned());
            if opens {
                stack.push(id.to_owned());
            }
        }
    }
    out
}

/// Runs `check.mjs` on every Mermaid text; returns the failures, one line each.
fn check_mermaid(charts: &[Exported]) -> Vec<String> {
    let doc: Vec<Value> = charts.iter().map(|c| json!({ "name": c.name, "text": c.mermaid })).collect();
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    let file = std::env::temp_dir().join(format!("orchestrator-mermaid-{}-{nanos}.json", std::process::id()));
    std::fs::write(&file, serde_json::to_vec(&doc).unwrap()).unwrap();
    let output = Command::new("node")
        .arg(Path::new(MERMAID_DIR).join("check.mjs"))
        .arg(&file)
        .current_dir(MERMAID_DIR)
        .output()
        .expect("node runs");
    let _ = std::fs::remove_file(&file);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let report: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| {
        panic!(
            "check.mjs did not print a JSON report ({e}); exit {:?}\nstdout:\n{stdout}\nstderr:\n{}",
            output.status.code(),
            String::from_utf8_lossy(&output.stderr)
        )
    });
    let results = report["results"].as_array().unwrap();
    let versions: std::collections::BTreeSet<&str> =
        results.iter().map(|r| r["mermaid"].as_str().unwrap()).collect();
    assert_eq!(results.len(), charts.len() * versions.len(), "one result per chart and version");
    assert!(versions.len() >= 2, "{versions:?}");
    let mut failures = Vec::new();
    for r in results {
        let name = r["name"].as_str().unwrap();
        let version = r["mermaid"].as_str().unwrap();
        if r["ok"] != true {
            failures.push(format!("{name}: {version} cannot {} it: {}", r["stage"], r["error"]));
            continue;
        }
        let chart = charts.iter().find(|c| c.name == name).unwrap();
        let expected = declared_parents(&chart.mermaid);
        let drawn: BTreeMap<String, Option<String>> = r["parents"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(id, p)| (id.clone(), p.as_str().map(str::to_owned)))
            .collect();
        if drawn != expected {
            let differs: Vec<String> = expected
                .keys()
                .chain(drawn.keys())
                .filter(|id| expected.get(*id) != drawn.get(*id))
                .map(|id| {
                    let place = |p: Option<&Option<String>>| match p {
                        None => "nowhere".to_owned(),
                        Some(None) => "the top level".to_owned(),
                        Some(Some(parent)) => parent.clone(),
                    };
                    format!(
                        "{id}: declared in {}, drawn in {}",
                        place(expected.get(id)),
                        place(drawn.get(id))
                    )
                })
                .collect();
            failures.push(format!("{name}: {version} draws states elsewhere: {}", differs.join("; ")));
        }
    }
    failures
}

/// Runs `dot -Tsvg` on every DOT text; returns the failures, one line each.
fn check_dot(charts: &[Exported]) -> Vec<String> {
    let mut failures = Vec::new();
    for c in charts {
        let mut child = Command::new("dot")
            .arg("-Tsvg")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("dot runs");
        child.stdin.take().unwrap().write_all(c.dot.as_bytes()).unwrap();
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        // Graphviz reports some mistakes as warnings and still exits with 0.
        if !out.status.success() || !stderr.trim().is_empty() {
            failures.push(format!("{}: dot -Tsvg: exit {:?}: {}", c.name, out.status.code(), stderr.trim()));
        } else if !String::from_utf8_lossy(&out.stdout).contains("</svg>") {
            failures.push(format!("{}: dot -Tsvg wrote no SVG", c.name));
        }
    }
    failures
}

#[test]
fn every_example_and_sample_chart_renders_with_mermaid_and_graphviz() {
    let mut charts = example_machines();
    let examples = charts.len();
    let samples = sample_charts().unwrap_or_default();
    let sample_count = samples.len();
    charts.extend(samples);
    charts.extend(hard_charts());
    charts.push(machine::<Tricky>());
    for c in &charts {
        // Final states are drawn at the size of a state, not as a circle sized to hold the label.
        assert!(!c.dot.contains("doublecircle"), "{}", c.name);
    }
    let mut failures = Vec::new();
    let mut checked = Vec::new();
    if available("Mermaid", mermaid_missing()) {
        failures.extend(check_mermaid(&charts));
        checked.push("Mermaid 11 and 12");
    }
    if available("Graphviz", graphviz_missing()) {
        failures.extend(check_dot(&charts));
        checked.push("dot -Tsvg");
    }
    assert!(
        failures.is_empty(),
        "{} failures over {} charts:\n{}",
        failures.len(),
        charts.len(),
        failures.join("\n")
    );
    println!(
        "{} charts ({examples} example machines, {sample_count} sample charts, {} built to be hard) checked with: {}",
        charts.len(),
        charts.len() - examples - sample_count,
        if checked.is_empty() { "nothing (skipped)".to_owned() } else { checked.join(", ") }
    );
}

#[test]
fn closures_are_shown_by_name_or_neutrally_and_escaped() {
    assert_eq!(Tricky::guard_names(), ["guard0", "has_two"]);
    assert_eq!(Tricky::action_names(), ["action0", "record", "action2", "action3", "farewell"]);
    let mermaid = export::to_mermaid(Tricky::chart(), &Tricky::names());
    let dot = export::to_dot(Tricky::chart(), &Tricky::names());
    for text in [&mermaid, &dot] {
        for bad in ["|ctx", "ctx.", "\"<>\"", "push"] {
            assert!(!text.contains(bad), "{bad:?} in\n{text}");
        }
    }
    // Mermaid: reserved keys get safe ids; the entry action of `note` is a description; the
    // transition label shows the guard and action names.
    assert!(mermaid.contains("    state \"note\" as s_note\n    s_note : entry / action0\n"), "{mermaid}");
    assert!(mermaid.contains("    state \"default\" as s_default {\n"), "{mermaid}");
    assert!(mermaid.contains("state \"start\" as s_default_left_start_s {\n"), "{mermaid}");
    assert!(mermaid.contains("    s_note --> s_default : go [guard0] / record\n"), "{mermaid}");
    assert!(
        mermaid.contains("    done : entry / action2, action3\n    done : exit / farewell\n"),
        "{mermaid}"
    );
    // `start` (compound, inside region `left`) is an arrow end: no `--` in `default`.
    let default_block: String = mermaid
        .lines()
        .skip_while(|l| !l.ends_with("as s_default {"))
        .take_while(|l| *l != "    }")
        .collect::<Vec<_>>()
        .join("\n");
    assert!(!default_block.lines().any(|l| l.trim() == "--"), "{mermaid}");
    // DOT: the final state is a double-bordered box with its actions.
    assert!(
        dot.contains(
            "\"done\" [label=\"done\\nentry / action2, action3\\nexit / farewell\", peripheries=2];"
        ),
        "{dot}"
    );
    assert!(dot.contains("[label=\"go [guard0] / record\""), "{dot}");
}
