//! [`WorkflowStatus`]: where a workflow stands, read from its record.

use std::time::SystemTime;

use crate::contract::SystemErrorPayload;
use crate::memory::from_unix_ms;
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
}

impl WorkflowStatus {
    /// The status a record describes.
    pub fn of(record: &WorkflowRecord) -> Self {
        if let ExecutionStatus::Failure { error } = &record.execution_status {
            return Self::Failed { error: error.clone() };
        }
        if record.done {
            return Self::Done;
        }
        match record.wake_at_ms {
            Some(ms) => Self::Waiting { until: from_unix_ms(ms) },
            None => Self::Active,
        }
    }

    /// Whether the workflow ended (done or failed).
    pub fn is_finished(&self) -> bool {
        matches!(self, Self::Done | Self::Failed { .. })
    }
}

impl std::fmt::Display for WorkflowStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Active => f.write_str("active"),
            Self::Waiting { until } => write!(f, "waiting until {}", crate::event::time::format_utc(*until)),
            Self::Done => f.write_str("done"),
            Self::Failed { error } => write!(f, "failed: {}: {}", error.error_name, error.error_message),
        }
    }
}
