//! How long a 200-state `machine!` takes to compile.
//!
//! Generates a crate under `target/machine-compile-bench/` whose `main.rs` declares a machine of
//! 200 states (20 compound groups of 10, a chain of `next` transitions with guards and actions,
//! a final state), builds its dependencies once, then times 3 rebuilds of that crate alone
//! (`cargo build`, debug, after touching `main.rs`) and prints the median. The same crate with
//! the machine replaced by nothing is timed as the baseline, so the difference is what the macro
//! and the code it generates cost.
//!
//! Run with `cargo bench -p orchestrator-benches --bench machine_compile`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

const GROUPS: usize = 20;
const PER_GROUP: usize = 10;

fn machine_source() -> String {
    let mut states = String::new();
    for g in 0..GROUPS {
        let mut children = String::new();
        for s in 0..PER_GROUP {
            let next = if s + 1 < PER_GROUP {
                format!("g{g}.s{}", s + 1)
            } else if g + 1 < GROUPS {
                format!("g{}.s0", g + 1)
            } else {
                "finished".to_owned()
            };
            writeln!(
                children,
                "                s{s}: {{ entry: [count], on: {{ \"next\" => {{ target: {next}, guard: ok, actions: [count] }}, \"skip\" => finished }} }},"
            )
            .unwrap();
        }
        writeln!(states, "            g{g}: {{ states: {{\n{children}            }} }},").unwrap();
    }
    format!(
        r#"use orchestrator_examples::calculator::*;

#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct Ctx {{ pub n: u64 }}

fn ok(ctx: &Ctx, _: &BigEvent) -> bool {{ ctx.n < u64::MAX }}
fn count(ctx: &mut Ctx, _: &BigEvent, _: &mut BigOutbox<'_>) {{ ctx.n += 1; }}

orchestrator::machine! {{
    pub machine Big {{
        contract: AverageV1,
        context: Ctx,
        output: |ctx: &Ctx| AverageOutput {{ average: ctx.n as f64 }},
        states: {{
{states}            finished: {{ type: final }},
        }},
    }}
}}

fn main() {{
    let (mut m, _) = orchestrator::machine::MachineInstance::<Big>::start(AverageInput {{ values: vec![1.0] }}).unwrap();
    for _ in 0..{total} {{ m.send_named("next").unwrap(); }}
    assert!(m.is_done());
}}
"#,
        total = GROUPS * PER_GROUP
    )
}

const BASELINE: &str = r#"use orchestrator_examples::calculator::*;
fn main() {
    let _ = AverageInput { values: vec![1.0] };
}
"#;

fn write_crate(dir: &Path, workspace: &Path, main: &str) {
    std::fs::create_dir_all(dir.join("src")).unwrap();
    let manifest = format!(
        r#"[package]
name = "machine-compile-bench"
version = "0.0.0"
edition = "2024"
publish = false

[workspace]

[dependencies]
orchestrator = {{ path = "{ws}/orchestrator" }}
orchestrator-examples = {{ path = "{ws}/examples" }}
serde = {{ version = "1", features = ["derive"] }}
"#,
        ws = workspace.display()
    );
    std::fs::write(dir.join("Cargo.toml"), manifest).unwrap();
    // Same dependency versions as the workspace.
    std::fs::copy(workspace.join("Cargo.lock"), dir.join("Cargo.lock")).unwrap();
    std::fs::write(dir.join("src/main.rs"), main).unwrap();
}

fn build(dir: &Path) -> Duration {
    let started = Instant::now();
    let status = Command::new(env!("CARGO"))
        .args(["build", "--quiet", "--offline"])
        .current_dir(dir)
        .env("CARGO_TARGET_DIR", dir.join("target"))
        .status()
        .expect("cargo runs");
    assert!(status.success(), "the generated crate must compile");
    started.elapsed()
}

fn median_rebuild(dir: &Path, main: &str) -> Duration {
    let mut times: Vec<Duration> = (0..3)
        .map(|_| {
            std::fs::write(dir.join("src/main.rs"), main).unwrap(); // touch: rebuild this crate only
            build(dir)
        })
        .collect();
    times.sort();
    times[1]
}

fn main() {
    // `cargo bench` passes flags such as `--bench`; this program takes none.
    let workspace: PathBuf = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf();
    let dir = workspace.join("target/machine-compile-bench");
    let machine = machine_source();
    write_crate(&dir, &workspace, &machine);
    println!("building dependencies once (not timed)…");
    build(&dir);
    let with_machine = median_rebuild(&dir, &machine);
    let baseline = median_rebuild(&dir, BASELINE);
    println!(
        "machine_compile: {} states: {:.2} s (crate without the machine: {:.2} s; the machine costs {:.2} s)",
        GROUPS * PER_GROUP + GROUPS + 1,
        with_machine.as_secs_f64(),
        baseline.as_secs_f64(),
        with_machine.as_secs_f64() - baseline.as_secs_f64()
    );
}
