//! Reading a workflow's journal: what a journaling backend recorded of each execution.

use std::future::Future;
use std::time::SystemTime;

use super::MemoryError;
use crate::event::Event;

/// One journaled execution of a workflow: the event it consumed, the events it produced and the
/// record it wrote (a snapshot of the state at that version).
#[derive(Debug, Clone, PartialEq)]
pub struct JournalRecord<R> {
    /// The version written (the journal position: 1, 2, 3… for one workflow).
    pub version: u64,
    /// When the execution ran.
    pub at: SystemTime,
    /// The event consumed; `None` for a timer wake-up.
    pub consumed: Option<Event>,
    /// The events produced, in emission order.
    pub produced: Vec<Event>,
    /// The record written at this version.
    pub record: R,
}

/// Read access to workflow journals (an event-sourced history per workflow), offered by
/// journaling backends. Positions are the record versions.
pub trait Journal<R>: Send + Sync {
    /// Up to `limit` entries of workflow `id` with a version greater than `after`, oldest first
    /// (pass the last version seen to read the next page).
    fn history(
        &self,
        id: &str,
        after: u64,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<JournalRecord<R>>, MemoryError>> + Send;

    /// The entry of workflow `id` at `version`, if journaled.
    fn entry(
        &self,
        id: &str,
        version: u64,
    ) -> impl Future<Output = Result<Option<JournalRecord<R>>, MemoryError>> + Send;

    /// The subjects of the workflows whose parent is `id`, in the order they started.
    fn children(&self, id: &str) -> impl Future<Output = Result<Vec<String>, MemoryError>> + Send;

    /// The parent of workflow `id`, if it is a child workflow.
    fn parent(&self, id: &str) -> impl Future<Output = Result<Option<String>, MemoryError>> + Send;
}
