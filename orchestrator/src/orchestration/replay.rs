//! Replay and time travel: rebuild a workflow's state at any journal position or time by
//! re-running its orchestrator over the journaled events, checking each step against what was
//! recorded.
//!
//! Every journal entry keeps the event consumed, the events produced, the time the execution
//! ran at and the record written (a snapshot). [`Lifecycle::replay`] starts from the beginning or
//! from a snapshot, feeds each journaled event to the core step with the journaled time (so
//! durable timers fire exactly as they did) and compares the state and the produced events
//! (type, `to`, subject, data) with the journal. A difference is a [`ReplayError::Diverged`]:
//! typically, the machine definition changed since the workflow ran. Reading the state at a
//! position without re-running anything is [`Journal::entry`].

use std::time::SystemTime;

use serde_json::Value;

use super::{CoreStep, Lifecycle, StepError, StepInput, WorkflowRecord};
use crate::event::Event;
use crate::memory::{Journal, JournalRecord, MemoryError};
use crate::subject::{Subject, SubjectError};
use crate::telemetry::TraceHeaders;
use crate::violation::Violation;

/// How far to replay.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Until {
    /// Through the last journal entry.
    End,
    /// Through the entry at this version.
    Version(u64),
    /// Through the last entry that ran at or before this time.
    Time(SystemTime),
}

impl Until {
    /// Whether `entry` is within this bound.
    pub fn includes(self, entry: &JournalRecord<WorkflowRecord>) -> bool {
        match self {
            Self::End => true,
            Self::Version(v) => entry.version <= v,
            Self::Time(t) => entry.at <= t,
        }
    }
}

/// The state a replay rebuilt.
#[derive(Debug, Clone, PartialEq)]
pub struct Replayed {
    /// The version (journal position) reached; 0 when nothing was replayed.
    pub version: u64,
    /// When the last replayed execution ran.
    pub at: Option<SystemTime>,
    /// The kind-specific state (for a machine, its snapshot: configuration and context).
    pub state: Value,
    /// Whether the workflow was finished at that point.
    pub done: bool,
    /// Whether the workflow was latched by a failure at that point.
    pub failed: bool,
    /// Whether a cancel request had ended the workflow at that point
    /// ([`crate::orchestration::cancel`]; its step is taken from the journal, not re-run).
    pub cancelled: bool,
    /// How many executions were re-run.
    pub steps: usize,
}

/// Why a replay failed.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    /// The subject is not an orchestration subject.
    #[error("cannot replay {subject:?}: {source}")]
    Subject {
        /// The subject.
        subject: String,
        /// Why.
        #[source]
        source: SubjectError,
    },
    /// The journal could not be read.
    #[error("cannot read the journal of {subject}: {source}")]
    Journal {
        /// The subject.
        subject: String,
        /// Why.
        #[source]
        source: MemoryError,
    },
    /// The journal has no entry at the snapshot version asked for.
    #[error("workflow {subject} has no journal entry at version {version}")]
    NoSuchVersion {
        /// The subject.
        subject: String,
        /// The version.
        version: u64,
    },
    /// The journal has a gap or an entry the lifecycle cannot have written.
    #[error("the journal of {subject} is inconsistent at version {version}: {reason}")]
    Inconsistent {
        /// The subject.
        subject: String,
        /// The version.
        version: u64,
        /// What is wrong.
        reason: String,
    },
    /// Re-running an execution gave another result than the one journaled.
    #[error(
        "replay of {subject} diverged at version {version}: {what} differs from the journal \
         (journaled: {journaled}; replayed: {replayed}). The orchestrator's definition probably \
         changed since the workflow ran"
    )]
    Diverged {
        /// The subject.
        subject: String,
        /// The first version that differs.
        version: u64,
        /// What differs (`state`, `produced events`, `outcome`).
        what: &'static str,
        /// What the journal holds.
        journaled: String,
        /// What the replay produced.
        replayed: String,
    },
    /// Re-running an execution was refused with a violation.
    #[error("replay of {subject} failed at version {version}: {violation}")]
    Violation {
        /// The subject.
        subject: String,
        /// The version.
        version: u64,
        /// The violation.
        #[source]
        violation: Violation,
    },
}

/// The parts of an event a replay compares (ids and times are new on every run).
fn shape(events: &[Event]) -> Vec<Value> {
    events
        .iter()
        .map(|e| {
            serde_json::json!({
                "type": e.r#type(),
                "to": e.to(),
                "subject": e.subject(),
                "domain": e.domain(),
                "data": e.data(),
            })
        })
        .collect()
}

impl<S: CoreStep, M> Lifecycle<S, M> {
    /// Rebuilds workflow `subject`'s state through `until` by re-running the core step over the
    /// events in `journal`, starting from the snapshot at version `from` (`None`: from the
    /// beginning, checking the whole history). Each re-run execution must give the state and
    /// events journaled for it, else [`ReplayError::Diverged`]. The cost grows with the number
    /// of entries replayed, so `from` a recent snapshot bounds it.
    pub async fn replay<J: Journal<WorkflowRecord>>(
        &self,
        journal: &J,
        subject: &str,
        until: Until,
        from: Option<u64>,
    ) -> Result<Replayed, ReplayError> {
        let parsed = Subject::parse(subject)
            .map_err(|source| ReplayError::Subject { subject: subject.to_owned(), source })?;
        let read_error = |source| ReplayError::Journal { subject: subject.to_owned(), source };
        let mut replayed = Replayed {
            version: 0,
            at: None,
            state: Value::Null,
            done: false,
            failed: false,
            cancelled: false,
            steps: 0,
        };
        let mut context: Option<(Option<String>, String)> = None;
        if let Some(version) = from {
            let entry = journal
                .entry(subject, version)
                .await
                .map_err(read_error)?
                .ok_or_else(|| ReplayError::NoSuchVersion { subject: subject.to_owned(), version })?;
            replayed = Replayed {
                version,
                at: Some(entry.at),
                state: entry.record.state.clone(),
                done: entry.record.done,
                failed: entry.record.is_failed(),
                cancelled: entry.record.is_cancelled(),
                steps: 0,
            };
            context = Some((entry.record.parent_subject.clone(), entry.record.init_event_id.clone()));
        }
        let wake_type = self.wake_type();
        loop {
            let page = journal.history(subject, replayed.version, 256).await.map_err(read_error)?;
            if page.is_empty() {
                break;
            }
            for entry in page {
                if !until.includes(&entry) {
                    return Ok(replayed);
                }
                let inconsistent = |reason: String| ReplayError::Inconsistent {
                    subject: subject.to_owned(),
                    version: entry.version,
                    reason,
                };
                if entry.version != replayed.version + 1 {
                    return Err(inconsistent(format!("expected version {}", replayed.version + 1)));
                }
                if replayed.done || replayed.failed || replayed.cancelled {
                    return Err(inconsistent("an entry after the workflow ended".to_owned()));
                }
                let Some(event) = &entry.consumed else {
                    return Err(inconsistent("the entry has no consumed event".to_owned()));
                };
                if entry.record.is_cancelled() {
                    // A cancellation runs no core step: the journal's record is the outcome.
                    replayed.cancelled = true;
                    replayed.state = entry.record.state.clone();
                    replayed.version = entry.version;
                    replayed.at = Some(entry.at);
                    continue;
                }
                let (parent, init_id) = context.get_or_insert_with(|| {
                    (entry.record.parent_subject.clone(), entry.record.init_event_id.clone())
                });
                let trace = TraceHeaders::of(event);
                let input = StepInput {
                    event,
                    subject: &parsed,
                    state: (replayed.version > 0).then_some(&replayed.state),
                    parent_subject: parent.as_deref(),
                    init_event_id: init_id,
                    executionunits: self.executionunits(),
                    now: entry.at,
                    is_wake: event.r#type() == wake_type,
                    trace: &trace,
                };
                let diverged =
                    |what: &'static str, journaled: String, replayed: String| ReplayError::Diverged {
                        subject: subject.to_owned(),
                        version: entry.version,
                        what,
                        journaled,
                        replayed,
                    };
                match (self.core().step(input).await, entry.record.is_failed()) {
                    (Ok(output), false) => {
                        if output.state != entry.record.state {
                            return Err(diverged(
                                "state",
                                entry.record.state.to_string(),
                                output.state.to_string(),
                            ));
                        }
                        let (journaled, rerun) = (shape(&entry.produced), shape(&output.events));
                        if journaled != rerun {
                            return Err(diverged(
                                "produced events",
                                Value::from(journaled).to_string(),
                                Value::from(rerun).to_string(),
                            ));
                        }
                        replayed.done = output.done;
                        replayed.state = output.state;
                    }
                    (Err(StepError::Failure(_)), true) => {
                        replayed.failed = true;
                        replayed.state = entry.record.state.clone();
                    }
                    (Ok(_), true) => {
                        return Err(diverged("outcome", "a failure".to_owned(), "a success".to_owned()));
                    }
                    (Err(StepError::Failure(e)), false) => {
                        return Err(diverged("outcome", "a success".to_owned(), format!("a failure: {e}")));
                    }
                    (Err(StepError::Violation(violation)), _) => {
                        return Err(ReplayError::Violation {
                            subject: subject.to_owned(),
                            version: entry.version,
                            violation,
                        });
                    }
                }
                replayed.version = entry.version;
                replayed.at = Some(entry.at);
                replayed.steps += 1;
            }
        }
        Ok(replayed)
    }
}
