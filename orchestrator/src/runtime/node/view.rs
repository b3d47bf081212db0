//! [`WorkflowView`]: a workflow as the store holds it, read with [`Node::workflow`].

use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::machine::{Machine, MachineInstance, Snapshot};
use crate::memory::Memory;
use crate::orchestration::WorkflowRecord;
use crate::transport::Transport;

use super::{Node, NodeError, WorkflowStatus};

/// Why a [`WorkflowView`] could not be read as asked.
#[derive(Debug, thiserror::Error)]
pub enum ViewError {
    /// The stored state does not decode as the type asked for (another machine's workflow, or a
    /// context type that changed).
    #[error("workflow `{subject}`: the stored {what} does not decode as `{ty}`: {reason}")]
    Decode {
        /// The workflow's subject.
        subject: String,
        /// `context` or `machine state`.
        what: &'static str,
        /// The type asked for.
        ty: &'static str,
        /// Why.
        reason: String,
    },
}

/// A workflow as its store holds it: its status, its context and, for a machine, its active
/// states (see [`Node::workflow`]).
#[derive(Debug, Clone, PartialEq)]
pub struct WorkflowView {
    status: WorkflowStatus,
    record: WorkflowRecord,
}

impl WorkflowView {
    /// The view of a stored record.
    pub fn of(record: WorkflowRecord) -> Self {
        Self { status: WorkflowStatus::of(&record), record }
    }

    /// Where the workflow stands.
    pub fn status(&self) -> &WorkflowStatus {
        &self.status
    }

    /// The workflow's subject.
    pub fn subject(&self) -> &str {
        &self.record.subject
    }

    /// The stored record.
    pub fn record(&self) -> &WorkflowRecord {
        &self.record
    }

    /// The context as JSON: a machine's context, or the context a resumable's function returned
    /// (`null` until it returned one).
    pub fn context_json(&self) -> &Value {
        let state = &self.record.state;
        state.get("state$$").or_else(|| state.get("context")).unwrap_or(&Value::Null)
    }

    /// The typed context: `view.context::<<M as Machine>::Context>()` for a machine, the
    /// resumable's context type for a resumable.
    pub fn context<C: DeserializeOwned>(&self) -> Result<C, ViewError> {
        C::deserialize(self.context_json()).map_err(|e| self.error::<C>("context", e))
    }

    /// The active atomic states of a machine's workflow (`review.waiting`), in document order;
    /// empty for a resumable.
    pub fn active_paths(&self) -> Vec<String> {
        match self.record.state.get("value") {
            Some(Value::Array(paths)) => paths.iter().filter_map(Value::as_str).map(str::to_owned).collect(),
            _ => Vec::new(),
        }
    }

    /// The typed active configuration of machine `M`'s workflow (`M::State`).
    pub fn state<M: Machine>(&self) -> Result<M::State, ViewError> {
        let snapshot = Snapshot::<M::Context>::deserialize(&self.record.state)
            .map_err(|e| self.error::<M::State>("machine state", e))?;
        let instance = MachineInstance::<M>::restore(snapshot)
            .map_err(|e| self.error::<M::State>("machine state", e))?;
        Ok(instance.state())
    }

    fn error<T>(&self, what: &'static str, e: impl std::fmt::Display) -> ViewError {
        ViewError::Decode {
            subject: self.record.subject.clone(),
            what,
            ty: std::any::type_name::<T>(),
            reason: e.to_string(),
        }
    }
}

impl<M: Memory<WorkflowRecord> + 'static, T: Transport> Node<M, T> {
    /// Workflow `subject` as the store holds it (status, context, a machine's active states);
    /// `None` for a workflow the store does not know (never started, or removed by its
    /// retention).
    pub async fn workflow(&self, subject: &str) -> Result<Option<WorkflowView>, NodeError> {
        let stored = self.store.read(subject).await?;
        Ok(stored.map(|s| WorkflowView::of(s.record)))
    }
}
