//! Runs every fixture in `shared/conformance/statecharts/` and requires all to pass.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

use orchestrator_chart::fixture;

fn fixture_dir() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/conformance/statecharts"))
}

#[test]
fn all_fixtures_pass() {
    let dir = fixture_dir();
    if !dir.is_dir() {
        assert!(
            std::env::var_os("CI").is_none(),
            "conformance fixtures missing at {} (required when CI is set)",
            dir.display()
        );
        println!("SKIP conformance: fixture directory {} not found", dir.display());
        return;
    }
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("read fixture dir")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no fixtures in {}", dir.display());
    let mut failures = Vec::new();
    for path in &files {
        let line = match fixture::run_file(path) {
            Ok(report) => {
                if !report.passed() {
                    failures.push(report.summary());
                }
                report.summary()
            }
            Err(e) => {
                let line = format!("FAIL {e}");
                failures.push(line.clone());
                line
            }
        };
        println!("{line}");
    }
    println!("{} of {} fixtures pass", files.len() - failures.len(), files.len());
    assert!(failures.is_empty(), "{} fixture(s) failed:\n{}", failures.len(), failures.join("\n"));
}
