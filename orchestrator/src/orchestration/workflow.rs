//! [`Workflow`]: the one facade of every orchestrator, a cheap-to-clone handle on its
//! [`Lifecycle`]. [`Orchestrator`](super::Orchestrator) and [`Resumable`](super::Resumable) are
//! `Workflow`s over their core steps.

use std::fmt;
use std::sync::Arc;

use super::{CoreStep, Lifecycle, WorkflowRecord};
use crate::event::Event;
use crate::handler::EventHandler;
use crate::memory::Memory;
use crate::violation::Violation;

/// An orchestrator: core step `C` (a statechart's [`MachineCore`](super::MachineCore), a
/// resumable's [`ResumableCore`](super::resumable::ResumableCore)…) run by the orchestration
/// [`Lifecycle`] over memory `M`. Cheap to clone.
pub struct Workflow<C, M> {
    inner: Arc<Lifecycle<C, M>>,
}

impl<C, M> Workflow<C, M> {
    /// The facade of `lifecycle`.
    pub(super) fn from_lifecycle(lifecycle: Lifecycle<C, M>) -> Self {
        Self { inner: Arc::new(lifecycle) }
    }

    /// The memory.
    pub fn memory(&self) -> &M {
        self.inner.memory()
    }

    /// The lifecycle (the core step and the settings).
    pub fn lifecycle(&self) -> &Lifecycle<C, M> {
        &self.inner
    }
}

impl<C, M> Clone for Workflow<C, M> {
    fn clone(&self) -> Self {
        Self { inner: Arc::clone(&self.inner) }
    }
}

impl<C: fmt::Debug, M> fmt::Debug for Workflow<C, M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Workflow").field("core", &self.inner.core()).finish_non_exhaustive()
    }
}

impl<C: CoreStep, M: Memory<WorkflowRecord> + 'static> EventHandler for Workflow<C, M> {
    fn source(&self) -> &str {
        self.inner.core().source()
    }

    async fn execute(&self, event: &Event) -> Result<Vec<Event>, Violation> {
        self.inner.execute(event).await
    }
}
