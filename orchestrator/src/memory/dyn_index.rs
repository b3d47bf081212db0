//! [`DynWorkflowIndex`]: the object-safe form of [`WorkflowIndex`], which a store hands out
//! through [`Memory::workflow_index`](super::Memory::workflow_index).

use super::dynamic::BoxFuture;
use super::{MemoryError, Page, WorkflowFilter, WorkflowIndex, WorkflowSummary};

/// Object-safe [`WorkflowIndex`]: every `WorkflowIndex` is one.
pub trait DynWorkflowIndex: Send + Sync {
    /// See [`WorkflowIndex::list`].
    fn list_dyn<'a>(
        &'a self,
        filter: &'a WorkflowFilter,
    ) -> BoxFuture<'a, Result<Page<WorkflowSummary>, MemoryError>>;

    /// See [`WorkflowIndex::count`].
    fn count_dyn<'a>(&'a self, filter: &'a WorkflowFilter) -> BoxFuture<'a, Result<u64, MemoryError>>;
}

impl<I: WorkflowIndex> DynWorkflowIndex for I {
    fn list_dyn<'a>(
        &'a self,
        filter: &'a WorkflowFilter,
    ) -> BoxFuture<'a, Result<Page<WorkflowSummary>, MemoryError>> {
        Box::pin(self.list(filter))
    }

    fn count_dyn<'a>(&'a self, filter: &'a WorkflowFilter) -> BoxFuture<'a, Result<u64, MemoryError>> {
        Box::pin(self.count(filter))
    }
}
