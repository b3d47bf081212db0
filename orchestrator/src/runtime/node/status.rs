//! [`WorkflowStatus`]: where a workflow stands, read from its record.

use std::time::SystemTime;

use crate::contract::SystemErrorPayload;
use crate::memory::{WorkflowState, from_unix_ms};
use crate::orchestration::{ExecutionStatus, WorkflowRecord};

/// Where a workflow stands (see [`Node::status`](super::Node::status)).
#[derive(Debug, Clone, PartialEq)]
pub enum WorkflowStatus {
    /// Running, waiting for an event (a service's answer, a signal).
    Active,
    /// Running, waiting for a durable timer due at this time.
    Waiting {
        /// When the timer is due.
        until: SystemTime,
    },
    /// Finished: it reached a final state and emitted its completion.
    Done,
    /// Failed: it emitted a system error and ignores later events.
    Failed {
        /// The error it failed with.
        error: SystemErrorPayload,
    },
    /// Cancelled ([`crate::orchestration::cancel`]): its timers are dropped and it ignores
    /// later events.
    Cancelled {
        /// Why, as the cancel request said.
        reason: Option<String>,
    },
}

impl WorkflowStatus {
    /// The status a record describes (its [`WorkflowRecord::workflow_state`], with the
    /// details).
    pub fn of(record: &WorkflowRecord) -> Self {
        match (record.workflow_state(), &record.execution_status, record.wake_at_ms) {
            (WorkflowState::Failed, ExecutionStatus::Failure { error }, _) => {
                Self::Failed { error: error.clone() }
            }
            (WorkflowState::Cancelled, ExecutionStatus::Cancelled { reason }, _) => {
                Self::Cancelled { reason: reason.clone() }
            }
            (WorkflowState::Done, ..) => Self::Done,
            (WorkflowState::Waiting, _, Some(ms)) => Self::Waiting { until: from_unix_ms(ms) },
            _ => Self::Active,
        }
    }

    /// Its kind, as stores index it.
    pub fn state(&self) -> WorkflowState {
        match self {
            Self::Active => WorkflowState::Active,
            Self::Waiting { .. } => WorkflowState::Waiting,
            Self::Done => WorkflowState::Done,
            Self::Failed { .. } => WorkflowState::Failed,
            Self::Cancelled { .. } => WorkflowState::Cancelled,
        }
    }

    /// Whether the workflow ended (done, failed or cancelled).
    pub fn is_finished(&self) -> bool {
        matches!(self, Self::Done | Self::Failed { .. } | Self::Cancelled { .. })
    }
}

impl std::fmt::Display for WorkflowStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Active => f.write_str("active"),
            Self::Waiting { until } => write!(f, "waiting until {}", crate::event::time::format_utc(*until)),
            Self::Done => f.write_str("done"),
            Self::Failed { error } => write!(f, "failed: {}: {}", error.error_name, error.error_message),
            Self::Cancelled { reason: None } => f.write_str("cancelled"),
            Self::Cancelled { reason: Some(reason) } => write!(f, "cancelled: {reason}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::*;

    fn record(failed: bool, done: bool, wake_at_ms: Option<u64>) -> WorkflowRecord {
        WorkflowRecord {
            execution_status: if failed {
                ExecutionStatus::Failure { error: SystemErrorPayload::new("Boom", "it broke") }
            } else {
                ExecutionStatus::Normal
            },
            subject: "wf".to_owned(),
            parent_subject: None,
            init_event_id: "init".to_owned(),
            done,
            state: Value::Null,
            last_event_id: None,
            last_event_source: None,
            wake_at_ms,
        }
    }

    #[test]
    fn the_status_and_the_indexed_state_follow_one_rule() {
        let cases = [
            ((false, false, None), WorkflowState::Active),
            ((false, false, Some(5)), WorkflowState::Waiting),
            ((false, true, None), WorkflowState::Done),
            ((false, true, Some(5)), WorkflowState::Done),
            ((true, false, None), WorkflowState::Failed),
            ((true, true, Some(5)), WorkflowState::Failed),
        ];
        for ((failed, done, wake), expected) in cases {
            let record = record(failed, done, wake);
            assert_eq!(record.workflow_state(), expected, "{failed} {done} {wake:?}");
            let status = WorkflowStatus::of(&record);
            assert_eq!(status.state(), expected, "{status:?}");
            assert_eq!(status.is_finished(), expected.is_finished());
        }
        assert_eq!(
            WorkflowStatus::of(&record(false, false, Some(5))),
            WorkflowStatus::Waiting { until: from_unix_ms(5) }
        );
        let cancelled = WorkflowRecord {
            execution_status: ExecutionStatus::Cancelled { reason: Some("late".into()) },
            ..record(false, false, None)
        };
        assert_eq!(cancelled.workflow_state(), WorkflowState::Cancelled);
        let status = WorkflowStatus::of(&cancelled);
        assert_eq!(status, WorkflowStatus::Cancelled { reason: Some("late".into()) });
        assert!(status.is_finished() && status.state().is_finished());
        assert_eq!(status.to_string(), "cancelled: late");
        for state in [
            WorkflowState::Active,
            WorkflowState::Waiting,
            WorkflowState::Done,
            WorkflowState::Failed,
            WorkflowState::Cancelled,
        ] {
            assert_eq!(WorkflowState::parse(state.as_str()), Some(state));
            assert_eq!(state.to_string(), state.as_str());
        }
        assert_eq!(WorkflowState::parse("paused"), None);
        assert_eq!(WorkflowState::default(), WorkflowState::Active);
    }
}
