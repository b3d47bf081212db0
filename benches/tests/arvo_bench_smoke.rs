//! Smoke test of the `arvo-bench` binary: every workload runs at a tiny scale (`--single NAME --scale
//! 0.01`, each in its own process, all at once) and prints one JSON line with Arvo's fields, the
//! expected name and `otel`, and `events = workflows × events per workflow`. Not a measurement: it
//! only keeps the benchmark building and running in `cargo test`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::{Command, Output};

use serde_json::Value;

const EXE: &str = env!("CARGO_BIN_EXE_arvo-bench");
const SCALE: &str = "0.01";

/// Every workload: key, JSON `name`, `otel`, events per workflow, orchestrator-only latency samples.
struct Expect {
    key: &'static str,
    name: &'static str,
    otel: &'static str,
    per_workflow: u64,
    /// Latency samples per workflow when not every counted event is timed (the SQLite runs time
    /// only the 3 orchestrator executions of each workflow).
    samples_per_workflow: Option<u64>,
    /// The services it runs on, by the variable holding their URL (`DATABASE_URL`, `NATS_URL`):
    /// run when they are all set (mandatory under `CI`), skipped with a printed reason otherwise.
    needs: &'static [&'static str],
    /// Workflows in flight by default (`params.in_flight`), for the workloads `--in-flight` sets.
    in_flight: Option<u64>,
}

const fn expect(key: &'static str, per_workflow: u64) -> Expect {
    Expect {
        key,
        name: key,
        otel: "off",
        per_workflow,
        samples_per_workflow: None,
        needs: &[],
        in_flight: None,
    }
}

/// An in-memory chain with `in_flight` workflows in flight by default.
const fn chain(key: &'static str, in_flight: u64) -> Expect {
    Expect { in_flight: Some(in_flight), ..expect(key, 5) }
}

const fn sqlite(key: &'static str, in_flight: u64) -> Expect {
    Expect {
        key,
        name: key,
        otel: "off",
        per_workflow: 5,
        samples_per_workflow: Some(3),
        needs: &[],
        in_flight: Some(in_flight),
    }
}

const fn postgres(
    key: &'static str,
    per_workflow: u64,
    samples_per_workflow: u64,
    in_flight: Option<u64>,
) -> Expect {
    Expect {
        key,
        name: key,
        otel: "off",
        per_workflow,
        samples_per_workflow: Some(samples_per_workflow),
        needs: &["DATABASE_URL"],
        in_flight,
    }
}

/// A durable node's chain or fan-out: on the in-process transport (`needs` empty) or NATS.
const fn node(
    key: &'static str,
    per_workflow: u64,
    needs: &'static [&'static str],
    in_flight: Option<u64>,
) -> Expect {
    Expect {
        key,
        name: key,
        otel: "off",
        per_workflow,
        samples_per_workflow: Some(per_workflow / 2 + 1),
        needs,
        in_flight,
    }
}

const EXPECTED: &[Expect] = &[
    expect("service_handler", 1),
    chain("orchestrator_chain", 1),
    chain("orchestrator_chain_interleaved", 1000),
    expect("orchestrator_fanout", 21),
    chain("resumable_chain", 1),
    chain("resumable_chain_interleaved", 1000),
    Expect {
        key: "orchestrator_chain_otel",
        name: "orchestrator_chain",
        otel: "sdk",
        per_workflow: 5,
        samples_per_workflow: None,
        needs: &[],
        in_flight: None,
    },
    expect("orchestrator_chain_floor", 5),
    sqlite("sqlite_chain_full_1", 1),
    sqlite("sqlite_chain_full_1000", 1000),
    sqlite("sqlite_chain_normal_1", 1),
    sqlite("sqlite_chain_normal_1000", 1000),
    sqlite("sqlite_chain_safe_full_1", 1),
    sqlite("sqlite_chain_safe_full_1000", 1000),
    expect("orchestrator_loop_10", 21),
    expect("orchestrator_loop_100", 201),
    expect("orchestrator_loop_1000", 2001),
    expect("sqlite_loop_normal_10", 21),
    expect("sqlite_loop_normal_1000", 2001),
    postgres("postgres_chain_1", 5, 3, Some(1)),
    postgres("postgres_chain_1000", 5, 3, Some(1000)),
    postgres("postgres_chain_1000_batch8", 5, 3, Some(1000)),
    postgres("postgres_chain_1000_2proc", 5, 1, Some(1000)),
    postgres("postgres_fanout", 21, 11, None),
    node("node_sqlite_chain_1", 5, &[], Some(1)),
    node("node_sqlite_chain_1000", 5, &[], Some(1000)),
    node("nats_sqlite_chain_1", 5, &["NATS_URL"], Some(1)),
    node("nats_sqlite_chain_1000", 5, &["NATS_URL"], Some(1000)),
    node("nats_sqlite_fanout", 21, &["NATS_URL"], None),
    node("nats_pg_chain_1000", 5, &["NATS_URL", "DATABASE_URL"], Some(1000)),
];

/// The last JSON line of a successful run.
fn json_line(what: &str, out: &Output) -> Value {
    assert!(out.status.success(), "{what} failed: {}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8(out.stdout.clone()).unwrap();
    let line =
        stdout.lines().rev().find(|l| l.starts_with('{')).unwrap_or_else(|| panic!("{what}: no JSON line"));
    serde_json::from_str(line).unwrap_or_else(|e| panic!("{what}: invalid JSON ({e}): {line}"))
}

fn num(line: &Value, key: &str) -> f64 {
    line[key].as_f64().unwrap_or_else(|| panic!("`{key}` is not a number in {line}"))
}

fn int(line: &Value, key: &str) -> u64 {
    line[key].as_u64().unwrap_or_else(|| panic!("`{key}` is not an integer in {line}"))
}

/// Checks Arvo's fields of one line of workload `e`.
fn check_line(e: &Expect, line: &Value) {
    let key = e.key;
    assert_eq!(line["name"], e.name, "{key}: {line}");
    assert_eq!(line["stack"], "rust", "{key}");
    assert_eq!(line["otel"], e.otel, "{key}");
    assert_eq!(line["params"]["key"], key, "{key}");
    let workflows = int(line, "workflows");
    assert!(workflows > 0, "{key}: no workflows");
    assert_eq!(workflows, int(&line["params"], "n"), "{key}: every workflow completes");
    assert_eq!(
        int(line, "events"),
        workflows * e.per_workflow,
        "{key}: events = workflows × {}",
        e.per_workflow
    );
    let samples = int(line, "latency_samples");
    let want_samples = e.samples_per_workflow.map_or(int(line, "events"), |s| workflows * s);
    assert_eq!(samples, want_samples, "{key}: latency samples");
    let wall = num(line, "wall_s");
    assert!(wall > 0.0, "{key}: wall_s {wall}");
    for rate in ["events_per_s", "workflows_per_s"] {
        assert!(num(line, rate) > 0.0, "{key}: {rate}");
    }
    let (p50, p99, max) = (num(line, "p50_us"), num(line, "p99_us"), num(line, "max_us"));
    assert!(0.0 < p50 && p50 <= p99 && p99 <= max, "{key}: p50 {p50} p99 {p99} max {max}");
    assert!(num(line, "peak_rss_mb") > 0.0, "{key}: peak_rss_mb");
    if e.samples_per_workflow.is_none() {
        // Single-threaded workloads also report the measuring thread's on-CPU time.
        assert!(num(&line["params"], "cpu_s") > 0.0, "{key}: cpu_s");
        assert!(num(&line["params"], "events_per_cpu_s") > 0.0, "{key}: events_per_cpu_s");
        assert!(num(&line["params"], "cpu_us_per_event") > 0.0, "{key}: cpu_us_per_event");
    }
    if let Some(in_flight) = e.in_flight {
        assert_eq!(line["params"]["in_flight"], in_flight, "{key}: in_flight");
    }
}

/// The bytes the store keeps: a positive size per workflow, every workflow (warm-up included)
/// kept with its journal, and for SQLite the workflow and journal tables among the sizes by table.
fn check_kept(key: &str, params: &Value) {
    assert!(num(params, "bytes_per_workflow") > 0.0, "{key}: bytes_per_workflow");
    let kept = int(params, "workflows_kept");
    assert_eq!(kept, int(params, "n") + int(params, "warmup"), "{key}: every workflow kept");
    assert!(int(params, "journal_rows") >= kept, "{key}: the journals kept");
    for table in ["workflows", "journal"] {
        assert!(num(&params["bytes_by_table"], table) > 0.0, "{key}: bytes of {table}");
    }
}

/// The resident set of the open workflows of an in-memory chain.
fn check_rss(key: &str, params: &Value) {
    let open = int(&params["rss_probe"], "workflows_open");
    assert_eq!(open, int(params, "in_flight"), "{key}: the probe opens the workflows in flight");
    let per_workflow = num(params, "rss_per_workflow_kb");
    // A thousand open workflows take more than a page in all.
    if open >= 1000 {
        assert!(per_workflow > 0.0, "{key}: rss_per_workflow_kb {per_workflow}");
    }
}

#[test]
fn every_workload_prints_a_valid_line() {
    let list = Command::new(EXE).arg("--list").output().unwrap();
    assert!(list.status.success());
    let listed: Vec<String> = String::from_utf8(list.stdout).unwrap().lines().map(str::to_owned).collect();
    let expected: Vec<&str> = EXPECTED.iter().map(|e| e.key).collect();
    assert_eq!(listed, expected, "the test covers every workload of the binary");

    let set = |var: &str| std::env::var(var).is_ok_and(|url| !url.is_empty());
    for var in ["DATABASE_URL", "NATS_URL"] {
        if !set(var) {
            assert!(
                std::env::var_os("CI").is_none(),
                "{var} must be set under CI (the workloads that need it)"
            );
            println!("skipping the workloads that need {var}: it is not set");
        }
    }
    let children: Vec<_> = EXPECTED
        .iter()
        .filter(|e| e.needs.iter().all(|var| set(var)))
        .map(|e| (e, Command::new(EXE).args(["--single", e.key, "--scale", SCALE]).spawn_output()))
        .collect();
    for (e, child) in children {
        let line = json_line(e.key, &child.wait_with_output().unwrap());
        check_line(e, &line);
        match e.key {
            "orchestrator_fanout" => assert_eq!(line["params"]["k"], 10),
            "orchestrator_chain_otel" => {
                let spans = int(&line["params"], "spans");
                // At least one span per execute() of the measured workflows.
                assert!(spans >= int(&line, "events"), "spans recorded: {spans}");
            }
            "orchestrator_chain_floor" => {
                for part in ["parse", "machine", "serialize"] {
                    assert!(
                        num(&line["params"]["parts_cpu_us_per_workflow"], part) > 0.0,
                        "floor part {part}"
                    );
                }
            }
            "orchestrator_chain"
            | "orchestrator_chain_interleaved"
            | "resumable_chain"
            | "resumable_chain_interleaved" => check_rss(e.key, &line["params"]),
            key if key.starts_with("sqlite_chain_") => check_kept(key, &line["params"]),
            key if key.contains("_loop_") => check_loop(e, &line),
            key if key.starts_with("nats_") || key.starts_with("node_") => {
                let params = &line["params"];
                // Counted in ticks of 10 ms: a tiny run may take none.
                assert!(num(params, "cpu_us_per_event") >= 0.0, "{key}: CPU time reported");
                assert_eq!(params["dispatch"]["dead_lettered"], 0, "{key}: nothing dead-lettered");
                let transport = params["transport"].as_str().unwrap_or_default();
                assert_eq!(transport.starts_with("Nats"), key.starts_with("nats_"), "{key}: {transport}");
            }
            key if key.starts_with("postgres_") => {
                let params = &line["params"];
                assert!(num(params, "commits_per_event") > 0.0, "{key}: commits counted");
                assert_eq!(params["dispatch"]["dead_lettered"], 0, "{key}: nothing dead-lettered");
                check_kept(key, params);
                assert!(num(params, "bytes_per_workflow_compacted") > 0.0, "{key}: after VACUUM FULL");
            }
            _ => {}
        }
    }
}

/// The history-length workloads: L in `params`, one orchestrator sample per journal entry, and on
/// SQLite one write per execution plus one cleanup per workflow, whatever L.
fn check_loop(e: &Expect, line: &Value) {
    let key = e.key;
    let params = &line["params"];
    let steps = int(params, "steps");
    assert_eq!(2 * steps + 1, e.per_workflow, "{key}: steps");
    assert_eq!(int(params, "journal_entries"), steps + 1, "{key}");
    let workflows = int(line, "workflows");
    assert_eq!(int(params, "orc_executions"), workflows * (steps + 1), "{key}: orchestrator samples");
    for p in [
        "orc_p50_us",
        "orc_p99_us",
        "orc_first_p50_us",
        "orc_last_p50_us",
        "orc_init_p50_us",
        "orc_final_p50_us",
    ] {
        assert!(num(params, p) > 0.0, "{key}: {p}");
    }
    if key.starts_with("sqlite_") {
        // One commit per execution; the retention of a finished workflow rides in its last commit.
        assert_eq!(int(params, "operations"), workflows * (steps + 1), "{key}: store writes");
    }
}

#[test]
fn the_parent_prints_each_run_and_the_median() {
    let out = Command::new(EXE)
        .args(["--only", "orchestrator_chain,orchestrator_chain_otel", "--runs", "2", "--scale", SCALE])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let lines: Vec<Value> =
        String::from_utf8(out.stdout).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 6, "2 runs + 1 median, for each of 2 workloads");
    for (i, (e, otel)) in [(&EXPECTED[1], "off"), (&EXPECTED[6], "sdk")].into_iter().enumerate() {
        let group = &lines[i * 3..i * 3 + 3];
        for line in group {
            check_line(e, line);
            assert_eq!(line["otel"], otel);
        }
        assert!(group[0].get("median").is_none() && group[1].get("median").is_none());
        assert_eq!(group[2]["median"], true);
        assert_eq!(group[2]["runs"], 2);
        let rates: Vec<f64> = group[..2].iter().map(|l| num(l, "events_per_s")).collect();
        let median = num(&group[2], "events_per_s");
        assert!(
            (median - (rates[0] + rates[1]) / 2.0).abs() < 0.1,
            "median of two runs: {median} vs {rates:?}"
        );
    }
}

#[test]
fn the_fan_out_width_is_a_parameter() {
    let out = Command::new(EXE)
        .args(["--single", "orchestrator_fanout", "--scale", SCALE, "--k", "3"])
        .output()
        .unwrap();
    let line = json_line("orchestrator_fanout --k 3", &out);
    check_line(&Expect { per_workflow: 7, ..expect("orchestrator_fanout", 21) }, &line);
    assert_eq!(line["params"]["k"], 3);
}

#[test]
fn the_in_flight_knob_sets_the_workflows_in_flight() {
    // In one process (`--single`): the in-memory chain and a SQLite one.
    for (e, in_flight) in
        [(chain("orchestrator_chain_interleaved", 1000), 7), (sqlite("sqlite_chain_normal_1", 1), 5)]
    {
        let out = Command::new(EXE)
            .args(["--single", e.key, "--scale", SCALE, "--in-flight", &in_flight.to_string()])
            .output()
            .unwrap();
        let line = json_line(e.key, &out);
        check_line(&Expect { in_flight: Some(in_flight), ..e }, &line);
        if e.key.starts_with("sqlite_") {
            check_kept(e.key, &line["params"]);
        } else {
            check_rss(e.key, &line["params"]);
        }
    }
    // Through the parent, which passes it to its children; the median line keeps it.
    let out = Command::new(EXE)
        .args(["--only", "resumable_chain", "--runs", "1", "--scale", SCALE, "--in-flight", "3"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let lines: Vec<Value> =
        String::from_utf8(out.stdout).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 2, "1 run + 1 median");
    for line in &lines {
        check_line(&chain("resumable_chain", 3), line);
    }
}

#[test]
fn the_in_flight_knob_rejects_zero_and_non_numbers() {
    for bad in ["0", "ten", "-1", ""] {
        for mode in [&["--single", "orchestrator_chain"][..], &["--only", "orchestrator_chain"][..]] {
            let out =
                Command::new(EXE).args(mode).args(["--scale", SCALE, "--in-flight", bad]).output().unwrap();
            assert!(!out.status.success(), "--in-flight `{bad}` accepted");
            assert!(out.stdout.is_empty(), "--in-flight `{bad}`: nothing ran");
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(
                stderr.contains("--in-flight"),
                "--in-flight `{bad}`: the error names the option: {stderr}"
            );
        }
    }
}

/// `Command::spawn` with captured output.
trait SpawnOutput {
    fn spawn_output(&mut self) -> std::process::Child;
}

impl SpawnOutput for Command {
    fn spawn_output(&mut self) -> std::process::Child {
        self.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped()).spawn().unwrap()
    }
}
