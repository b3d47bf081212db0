//! What a scenario reports: every failed expectation of every run, named by step.

use std::fmt;

/// What went wrong in one step (one failed expectation, or a step that could not run).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum Failure {
    /// The handler (or its store) could not be built for this run.
    #[error("the handler could not be built: {0}")]
    Build(String),
    /// The step's input event could not be built (for example, there is no request to answer).
    #[error("the input could not be built: {0}")]
    Input(String),
    /// The durable timers could not be fired.
    #[error("the timers could not be fired: {0}")]
    Timers(String),
    /// The handler returned a violation where events were expected.
    #[error("unexpected violation: {0}")]
    UnexpectedViolation(String),
    /// A violation was expected, and events were produced.
    #[error("expected {expected}, got events [{}]", .emitted.join(", "))]
    MissingViolation {
        /// The expected violation.
        expected: String,
        /// The types of the events produced instead.
        emitted: Vec<String>,
    },
    /// The violation returned is not the one expected.
    #[error("expected {expected}, got `{actual}`: {difference}")]
    WrongViolation {
        /// The expected violation.
        expected: String,
        /// The violation returned.
        actual: String,
        /// What differs.
        difference: String,
    },
    /// No emitted event matched an expectation.
    #[error("no event matched {expected}{}", describe_candidates(.candidates, .emitted))]
    Missing {
        /// The expectation.
        expected: String,
        /// For each unmatched event of the expected type: what differed.
        candidates: Vec<String>,
        /// The types of all events produced.
        emitted: Vec<String>,
    },
    /// An event was produced that no expectation matched.
    #[error("unexpected event `{event_type}` (id={id})")]
    Unexpected {
        /// Its type.
        event_type: String,
        /// Its id.
        id: String,
    },
}

fn describe_candidates(candidates: &[String], emitted: &[String]) -> String {
    if candidates.is_empty() {
        return format!("; no event of that type among [{}]", emitted.join(", "));
    }
    let mut out = String::new();
    for (i, candidate) in candidates.iter().enumerate() {
        out.push_str(&format!("; candidate {}: {candidate}", i + 1));
    }
    out
}

/// A [`Failure`] and the step it happened in.
#[derive(Debug, Clone, PartialEq)]
pub struct StepFailure {
    /// The step's position (1-based).
    pub step: usize,
    /// The step's name.
    pub name: String,
    /// What went wrong.
    pub failure: Failure,
}

impl fmt::Display for StepFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "step {} ({}): {}", self.step, self.name, self.failure)
    }
}

/// One run of a scenario: its failures (none: it passed).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RunReport {
    /// Every failed expectation, in step order.
    pub failures: Vec<StepFailure>,
}

impl RunReport {
    /// Whether every expectation held.
    pub fn passed(&self) -> bool {
        self.failures.is_empty()
    }
}

/// The report of a scenario: each run's failures, and whether enough runs passed.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    /// The scenario's name.
    pub scenario: String,
    /// Every run, in order (one unless the scenario repeats).
    pub runs: Vec<RunReport>,
    /// How many runs must pass.
    pub required: usize,
}

impl Report {
    /// How many runs passed.
    pub fn passes(&self) -> usize {
        self.runs.iter().filter(|r| r.passed()).count()
    }

    /// Whether at least [`Report::required`] runs passed.
    pub fn passed(&self) -> bool {
        self.passes() >= self.required
    }

    /// Every failure of every run, with the run's number (1-based).
    pub fn failures(&self) -> impl Iterator<Item = (usize, &StepFailure)> {
        self.runs.iter().enumerate().flat_map(|(i, run)| run.failures.iter().map(move |f| (i + 1, f)))
    }

    /// Panics with the report unless it [passed](Report::passed): the one-liner for a test.
    #[track_caller]
    #[allow(clippy::panic)]
    pub fn assert(&self) {
        if !self.passed() {
            panic!("{self}");
        }
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let verdict = if self.passed() { "passed" } else { "FAILED" };
        if self.runs.len() == 1 {
            write!(f, "scenario `{}` {verdict}", self.scenario)?;
        } else {
            write!(
                f,
                "scenario `{}` {verdict}: {}/{} runs passed, {} required",
                self.scenario,
                self.passes(),
                self.runs.len(),
                self.required
            )?;
        }
        for (i, run) in self.runs.iter().enumerate() {
            for failure in &run.failures {
                f.write_str("\n  ")?;
                if self.runs.len() > 1 {
                    write!(f, "run {}, ", i + 1)?;
                }
                write!(f, "{failure}")?;
            }
        }
        Ok(())
    }
}
