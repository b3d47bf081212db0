//! Runs one conformance fixture (see `shared/conformance/statecharts/README.md`).
//!
//! Step 0 starts the machine; each later step first advances the clock by `advance_ms` (if
//! given), then sends `event` (if not null), then checks `expect` (active atomic paths, compared
//! as sets) and, where given, `context` and `done`. A step passes when it matches its main
//! expectation or one of its `variants` (a variant's missing fields default to the main ones).
//!
//! [`FixtureReport::summary`] gives `PASS <file>` or `FAIL <file>: step <n>: expected [...] got
//! [...]`.

use std::fmt;
use std::path::Path;

use serde_json::{Map, Value};
use thiserror::Error;

use crate::host::EventRef;
use crate::interpreter::Interpreter;
use crate::json::{self, JsonError};

/// A fixture that cannot be run at all.
#[derive(Debug, Error)]
pub enum FixtureError {
    /// The chart did not load.
    #[error("{file}: {error}")]
    Load {
        /// The fixture.
        file: String,
        /// Why.
        error: JsonError,
    },
    /// The `steps` are malformed.
    #[error("{file}: {message}")]
    Steps {
        /// The fixture.
        file: String,
        /// What is wrong.
        message: String,
    },
}

/// What a step expects (main expectation or a variant).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Expectation {
    /// Active atomic paths (a set), if checked.
    pub expect: Option<Vec<String>>,
    /// Expected values of some context keys.
    pub context: Option<Map<String, Value>>,
    /// Expected done flag.
    pub done: Option<bool>,
}

/// What a step observed.
#[derive(Debug, Clone, PartialEq)]
pub struct Observation {
    /// Active atomic paths, sorted.
    pub active: Vec<String>,
    /// The full context.
    pub context: Map<String, Value>,
    /// The done flag.
    pub done: bool,
}

/// How a step went.
#[derive(Debug, Clone, PartialEq)]
pub enum StepOutcome {
    /// Matched the main expectation.
    Pass,
    /// Matched the named variant (e.g. `w3c-spec`, `xstate-v5`), not the main expectation.
    PassVariant(String),
    /// Matched nothing.
    Fail(Box<Mismatch>),
    /// The interpreter returned an error; later steps were not run.
    Error(String),
}

/// A failed step: the main expectation and what was observed.
#[derive(Debug, Clone, PartialEq)]
pub struct Mismatch {
    /// The main expectation.
    pub expected: Expectation,
    /// The observation.
    pub observed: Observation,
    /// Names of variants that did not match either.
    pub variants: Vec<String>,
}

fn fmt_list(items: &[String]) -> String {
    format!("[{}]", items.join(", "))
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts = Vec::new();
        if let Some(expect) = &self.expected.expect {
            let mut e = expect.clone();
            e.sort();
            if e != self.observed.active {
                parts.push(format!("expected {} got {}", fmt_list(&e), fmt_list(&self.observed.active)));
            }
        }
        if let Some(ctx) = &self.expected.context {
            for (k, v) in ctx {
                let got = self.observed.context.get(k).unwrap_or(&Value::Null);
                if !values_equal(v, got) {
                    parts.push(format!("context {k}: expected {v} got {got}"));
                }
            }
        }
        if let Some(done) = self.expected.done
            && done != self.observed.done
        {
            parts.push(format!("done: expected {done} got {}", self.observed.done));
        }
        if parts.is_empty() {
            parts.push(format!("got {}", fmt_list(&self.observed.active)));
        }
        f.write_str(&parts.join("; "))?;
        if !self.variants.is_empty() {
            write!(f, " (variants not matched either: {})", self.variants.join(", "))?;
        }
        Ok(())
    }
}

/// One step's result.
#[derive(Debug, Clone, PartialEq)]
pub struct StepResult {
    /// Index in `steps`.
    pub index: usize,
    /// Outcome.
    pub outcome: StepOutcome,
}

impl StepResult {
    /// Whether the step passed (main or variant).
    pub fn passed(&self) -> bool {
        matches!(self.outcome, StepOutcome::Pass | StepOutcome::PassVariant(_))
    }
}

/// All step results of one fixture.
#[derive(Debug, Clone, PartialEq)]
pub struct FixtureReport {
    /// The fixture's file name.
    pub file: String,
    /// Per-step results (steps after an interpreter error are absent).
    pub steps: Vec<StepResult>,
    /// Number of steps in the fixture.
    pub total_steps: usize,
}

impl FixtureReport {
    /// Whether every step ran and passed.
    pub fn passed(&self) -> bool {
        self.steps.len() == self.total_steps && self.steps.iter().all(StepResult::passed)
    }

    /// The first step that did not pass.
    pub fn first_failure(&self) -> Option<&StepResult> {
        self.steps.iter().find(|s| !s.passed())
    }

    /// `PASS <file>` or `FAIL <file>: step <n>: <mismatch>`.
    pub fn summary(&self) -> String {
        match self.first_failure() {
            None if self.passed() => {
                let variants: Vec<&str> = self
                    .steps
                    .iter()
                    .filter_map(|s| match &s.outcome {
                        StepOutcome::PassVariant(v) => Some(v.as_str()),
                        _ => None,
                    })
                    .collect();
                if variants.is_empty() {
                    format!("PASS {}", self.file)
                } else {
                    format!("PASS {} (variant {})", self.file, variants.join(", "))
                }
            }
            None => {
                format!("FAIL {}: only {} of {} steps ran", self.file, self.steps.len(), self.total_steps)
            }
            Some(step) => match &step.outcome {
                StepOutcome::Fail(m) => format!("FAIL {}: step {}: {m}", self.file, step.index),
                StepOutcome::Error(e) => format!("FAIL {}: step {}: error: {e}", self.file, step.index),
                StepOutcome::Pass | StepOutcome::PassVariant(_) => unreachable!("first_failure"),
            },
        }
    }
}

/// Numbers compare numerically (`8` equals `8.0`); everything else structurally.
fn values_equal(a: &Value, b: &Value) -> bool {
    match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) => x == y || (x - y).abs() <= 1e-9 * x.abs().max(y.abs()),
        _ => a == b,
    }
}

impl Expectation {
    fn parse(v: &Map<String, Value>, at: &str) -> Result<Self, String> {
        let expect = match v.get("expect") {
            None => None,
            Some(Value::Array(list)) => Some(
                list.iter()
                    .map(|p| p.as_str().map(str::to_owned).ok_or_else(|| format!("{at}: expect holds paths")))
                    .collect::<Result<Vec<_>, _>>()?,
            ),
            Some(_) => return Err(format!("{at}: expect must be an array")),
        };
        let context = match v.get("context") {
            None | Some(Value::Null) => None,
            Some(Value::Object(m)) => Some(m.clone()),
            Some(_) => return Err(format!("{at}: context must be an object")),
        };
        let done = match v.get("done") {
            None | Some(Value::Null) => None,
            Some(Value::Bool(b)) => Some(*b),
            Some(_) => return Err(format!("{at}: done must be a boolean")),
        };
        Ok(Self { expect, context, done })
    }

    /// A variant: its fields, the main expectation's where missing.
    fn overlay(&self, variant: &Expectation) -> Expectation {
        Expectation {
            expect: variant.expect.clone().or_else(|| self.expect.clone()),
            context: variant.context.clone().or_else(|| self.context.clone()),
            done: variant.done.or(self.done),
        }
    }

    /// Whether the observation satisfies this expectation.
    pub fn matches(&self, obs: &Observation) -> bool {
        if let Some(expect) = &self.expect {
            let mut e = expect.clone();
            e.sort();
            e.dedup();
            if e != obs.active {
                return false;
            }
        }
        if let Some(ctx) = &self.context
            && !ctx.iter().all(|(k, v)| values_equal(v, obs.context.get(k).unwrap_or(&Value::Null)))
        {
            return false;
        }
        self.done.is_none_or(|d| d == obs.done)
    }
}

/// Runs a fixture file.
pub fn run_file(path: &Path) -> Result<FixtureReport, FixtureError> {
    let file =
        path.file_name().map_or_else(|| path.display().to_string(), |f| f.to_string_lossy().into_owned());
    let text = std::fs::read_to_string(path).map_err(|e| FixtureError::Load {
        file: file.clone(),
        error: JsonError::Io { path: path.display().to_string(), message: e.to_string() },
    })?;
    let doc: Value = serde_json::from_str(&text)
        .map_err(|e| FixtureError::Load { file: file.clone(), error: JsonError::Syntax(e) })?;
    run(&file, &doc)
}

/// Runs a parsed fixture; `file` names it in the report.
pub fn run(file: &str, doc: &Value) -> Result<FixtureReport, FixtureError> {
    let steps_err = |message: String| FixtureError::Steps { file: file.to_owned(), message };
    let loaded = json::load(doc).map_err(|error| FixtureError::Load { file: file.to_owned(), error })?;
    let steps =
        doc.get("steps").and_then(Value::as_array).ok_or_else(|| steps_err("missing \"steps\"".into()))?;
    let mut machine = Interpreter::new(&loaded.chart, loaded.host.clone(), loaded.context.clone());
    let mut results = Vec::with_capacity(steps.len());
    for (index, step) in steps.iter().enumerate() {
        let at = format!("steps[{index}]");
        let step = step.as_object().ok_or_else(|| steps_err(format!("{at}: expected an object")))?;
        let main = Expectation::parse(step, &at).map_err(steps_err)?;
        let mut variants = Vec::new();
        if let Some(vs) = step.get("variants") {
            let vs = vs.as_object().ok_or_else(|| steps_err(format!("{at}: variants must be an object")))?;
            for (name, v) in vs {
                let v = v
                    .as_object()
                    .ok_or_else(|| steps_err(format!("{at}.variants.{name}: expected an object")))?;
                variants.push((name.clone(), main.overlay(&Expectation::parse(v, &at).map_err(steps_err)?)));
            }
        }
        let event = step.get("event").unwrap_or(&Value::Null);
        let (name, data) = match event {
            Value::Null => (None, None),
            Value::String(s) => (Some(s.as_str()), None),
            Value::Object(o) => {
                let name = o.get("name").and_then(Value::as_str);
                (
                    Some(name.ok_or_else(|| steps_err(format!("{at}: event object needs a name")))?),
                    o.get("data"),
                )
            }
            _ => return Err(steps_err(format!("{at}: event must be null, a name or an object"))),
        };
        let run = if index == 0 {
            if name.is_some() {
                return Err(steps_err(format!("{at}: the first step starts the machine (event null)")));
            }
            machine.start()
        } else {
            let advanced = match step.get("advance_ms") {
                None | Some(Value::Null) => Ok(()),
                Some(v) => {
                    let ms = v
                        .as_u64()
                        .ok_or_else(|| steps_err(format!("{at}: advance_ms must be an integer")))?;
                    machine.advance(ms)
                }
            };
            advanced.and_then(|()| match (name, data) {
                (None, _) => Ok(()),
                (Some(n), None) => machine.send(n),
                (Some(n), Some(d)) => machine.send_event(EventRef::with_data(n, d)),
            })
        };
        if let Err(e) = run {
            results.push(StepResult { index, outcome: StepOutcome::Error(e.to_string()) });
            break;
        }
        let mut active: Vec<String> = machine.active_atomic_paths().into_iter().map(str::to_owned).collect();
        active.sort();
        let observed = Observation { active, context: machine.context().clone(), done: machine.is_done() };
        let outcome = if main.matches(&observed) {
            StepOutcome::Pass
        } else if let Some((name, _)) = variants.iter().find(|(_, v)| v.matches(&observed)) {
            StepOutcome::PassVariant(name.clone())
        } else {
            StepOutcome::Fail(Box::new(Mismatch {
                expected: main,
                observed,
                variants: variants.into_iter().map(|(n, _)| n).collect(),
            }))
        };
        results.push(StepResult { index, outcome });
    }
    Ok(FixtureReport { file: file.to_owned(), steps: results, total_steps: steps.len() })
}
