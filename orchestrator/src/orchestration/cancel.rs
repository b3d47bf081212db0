//! Cancelling a workflow: a **cancel request** is an event of type `<orchestrator>.cancel`
//! ([`cancel_type`], e.g. `arvo.orc.approval.cancel`) addressed to the orchestrator, on the
//! workflow's subject, with data `{"reason": string?, "children": bool}` ([`CancelRequest`]).
//! Build it with [`cancel_event`], or let [`Node::cancel`](crate::runtime::Node::cancel)
//! publish it. It works the same for machines and resumables: the orchestration
//! [`Lifecycle`](super::Lifecycle) handles it under the workflow's lease, without running the
//! workflow's own code.
//!
//! For an active workflow, the step that consumes the request:
//!
//! * writes the record as cancelled ([`ExecutionStatus::Cancelled`](super::ExecutionStatus::Cancelled)):
//!   its status is then [`WorkflowStatus::Cancelled`](crate::runtime::WorkflowStatus::Cancelled)
//!   and the store lists it as [`WorkflowState::Cancelled`](crate::memory::WorkflowState::Cancelled)
//!   (`cancelled`);
//! * drops its durable timers (no wake-up is due any more, also after a restart);
//! * journals the step like any other;
//! * emits to the workflow's initiator its `sys.<orchestrator>.error` event, named
//!   [`CANCELLED_ERROR_NAME`] (`WorkflowCancelled`) with the reason as its message: every
//!   contract declares that event, so an Arvo initiator or a parent machine (its `child::error`
//!   transition) receives it, and [`SystemErrorPayload::is_cancellation`](crate::contract::SystemErrorPayload::is_cancellation)
//!   tells it apart from a failure;
//! * with `children: true`, emits a cancel request (with children) for each of its child
//!   workflows that is still running, found in the store's workflow index
//!   ([`Memory::workflow_index`](crate::memory::Memory::workflow_index); a store without one
//!   cancels no children).
//!
//! A request for a workflow that is done, failed, already cancelled or unknown changes nothing,
//! and a cancelled workflow ignores every later event (service answers, wake-ups, signals). A
//! redelivered request is answered from the journal, like any event.
//!
//! ```
//! # tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap().block_on(async {
//! use std::sync::Arc;
//! use orchestrator::memory::InMemory;
//! use orchestrator::orchestration::cancel::CancelRequest;
//! use orchestrator::orchestration::{Orchestrator, WorkflowRecord};
//! use orchestrator::prelude::*;
//! use orchestrator::runtime::{Node, WorkflowStatus};
//! # #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
//! # pub struct Request { pub amount: u64 }
//! # #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
//! # pub struct Outcome { pub approved: bool }
//! # orchestrator::orchestrator_contract! {
//! #     pub contract Approval { uri: "#/orc/approval", name: "approval",
//! #         versions: { ApprovalV1 = "1.0.0" { init: Request, complete: Outcome } } }
//! # }
//! # #[derive(Debug, Clone, Default, Serialize, Deserialize)]
//! # pub struct Ctx { pub approved: bool }
//! // Approves by itself after an hour, unless cancelled before.
//! orchestrator::machine! {
//!     pub machine ApprovalFlow {
//!         contract: ApprovalV1,
//!         context: Ctx,
//!         init: |_input| Ctx::default(),
//!         output: |ctx| Outcome { approved: ctx.approved },
//!         states: {
//!             pending: { after: { 3600000 => { target: approved, actions: [|ctx, _, _| ctx.approved = true] } } },
//!             approved: { type: final },
//!         },
//!     }
//! }
//! let store = Arc::new(InMemory::<WorkflowRecord>::default());
//! let node = Node::builder(Arc::clone(&store))
//!     .orchestrator(Orchestrator::builder(Arc::clone(&store)).machine::<ApprovalFlow>())
//!     .client("com.example.client")
//!     .build()
//!     .await?;
//! let init = EventFactory::<ApprovalV1>::new()
//!     .init(Request { amount: 500 }, Event::builder().source("com.example.client"))?;
//! let subject = node.start(init).await?;
//! # while !matches!(node.status(&subject).await?, Some(WorkflowStatus::Waiting { .. })) {
//! #     tokio::time::sleep(std::time::Duration::from_millis(5)).await;
//! # }
//! node.cancel(&subject, CancelRequest::new().reason("withdrawn")).await?;
//! // The initiator gets the workflow's system error, marked as a cancellation.
//! let ended = node.wait(&subject).await;
//! let payload: orchestrator::contract::SystemErrorPayload = serde_json::from_value(ended.data_value().clone())?;
//! assert!(payload.is_cancellation());
//! assert_eq!(payload.error_message, "withdrawn");
//! assert_eq!(
//!     node.status(&subject).await?,
//!     Some(WorkflowStatus::Cancelled { reason: Some("withdrawn".into()) })
//! );
//! node.shutdown().await;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # }).unwrap();
//! ```

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::event::{Event, EventError};
use crate::memory::{DynWorkflowIndex, MemoryError, WorkflowFilter};
use crate::subject::{Subject, SubjectError};

/// The `errorName` of the system-error event a cancelled workflow emits to its initiator.
pub const CANCELLED_ERROR_NAME: &str = "WorkflowCancelled";

/// The message of that event when the request gave no reason.
pub const DEFAULT_CANCEL_MESSAGE: &str = "the workflow was cancelled";

/// The type of the cancel requests of orchestrator `source`: `<source>.cancel`.
pub fn cancel_type(source: &str) -> String {
    format!("{source}.cancel")
}

/// What a cancel request says (its event's data).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CancelRequest {
    /// Why: the message of the event the initiator gets ([`DEFAULT_CANCEL_MESSAGE`] when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Cancel the workflow's running child workflows too (and theirs).
    #[serde(default)]
    pub children: bool,
}

impl CancelRequest {
    /// A request without a reason, for the workflow alone.
    pub fn new() -> Self {
        Self::default()
    }

    /// With this reason.
    #[must_use]
    pub fn reason(mut self, reason: impl Into<String>) -> Self {
        self.reason = Some(reason.into());
        self
    }

    /// With the workflow's children (and theirs).
    #[must_use]
    pub fn with_children(mut self) -> Self {
        self.children = true;
        self
    }

    /// The request a cancel event's data holds: a reason that is not a string and a `children`
    /// that is not a boolean are ignored, rather than leave the workflow running.
    pub fn from_data(data: &Value) -> Self {
        Self {
            reason: data.get("reason").and_then(Value::as_str).map(str::to_owned),
            children: data.get("children").and_then(Value::as_bool).unwrap_or(false),
        }
    }

    /// The message of the initiator's event: the reason, or [`DEFAULT_CANCEL_MESSAGE`].
    pub fn message(&self) -> &str {
        self.reason.as_deref().unwrap_or(DEFAULT_CANCEL_MESSAGE)
    }
}

/// Why a cancel request could not be built.
#[derive(Debug, thiserror::Error)]
pub enum CancelError {
    /// The subject is not an orchestration subject.
    #[error("cannot cancel {subject:?}: it is not a workflow subject: {source}")]
    Subject {
        /// The subject.
        subject: String,
        /// Why it does not parse.
        #[source]
        source: SubjectError,
    },
    /// The event could not be built.
    #[error("cannot build the cancel request of {subject:?}: {source}")]
    Event {
        /// The subject.
        subject: String,
        /// Why.
        #[source]
        source: EventError,
    },
}

/// The cancel request of workflow `subject`: type `<orchestrator>.cancel`, source and `to` the
/// orchestrator named by the subject, data `request`.
///
/// ```
/// use orchestrator::orchestration::cancel::{CancelRequest, cancel_event};
/// use orchestrator::subject::Subject;
/// let subject = Subject::builder("arvo.orc.approval", "1.0.0", "com.example.client").build()?;
/// let cancel = cancel_event(subject.as_str(), &CancelRequest::new().reason("withdrawn").with_children())?;
/// assert_eq!(cancel.r#type(), "arvo.orc.approval.cancel");
/// assert_eq!(cancel.to(), Some("arvo.orc.approval"));
/// assert_eq!(cancel.data()["reason"], "withdrawn");
/// assert_eq!(cancel.data()["children"], true);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn cancel_event(subject: &str, request: &CancelRequest) -> Result<Event, CancelError> {
    let parsed = Subject::parse(subject)
        .map_err(|source| CancelError::Subject { subject: subject.to_owned(), source })?;
    let orchestrator = parsed.orchestrator_name();
    let data = serde_json::to_value(request).unwrap_or(Value::Null);
    Event::builder()
        .source(orchestrator)
        .r#type(cancel_type(orchestrator))
        .to(orchestrator)
        .subject(subject)
        .data_json(data)
        .build()
        .map_err(|source| CancelError::Event { subject: subject.to_owned(), source })
}

/// The cancel requests (with children) of the running children of workflow `parent`, from
/// `index`. A child whose subject cannot carry a request is skipped.
pub(crate) async fn child_cancels(
    index: &dyn DynWorkflowIndex,
    parent: &str,
    request: &CancelRequest,
) -> Result<Vec<Event>, MemoryError> {
    let request = CancelRequest { reason: request.reason.clone(), children: true };
    let mut filter = WorkflowFilter { parent: Some(parent.to_owned()), ..WorkflowFilter::new() };
    let mut events = Vec::new();
    loop {
        let page = index.list_dyn(&filter).await?;
        for child in page.items.iter().filter(|c| !c.status.is_finished()) {
            match cancel_event(&child.id, &request) {
                Ok(event) => events.push(event),
                Err(e) => tracing::warn!(error = %e, "a child workflow cannot be cancelled"),
            }
        }
        match page.next {
            Some(next) => filter = filter.after(Some(next)),
            None => return Ok(events),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_request_reads_leniently() {
        let full = CancelRequest::from_data(&json!({"reason": "late", "children": true}));
        assert_eq!(full, CancelRequest::new().reason("late").with_children());
        assert_eq!(CancelRequest::from_data(&json!({"reason": 5, "children": "yes"})), CancelRequest::new());
        assert_eq!(CancelRequest::from_data(&Value::Null).message(), DEFAULT_CANCEL_MESSAGE);
        assert!(matches!(
            cancel_event("not a subject", &CancelRequest::new()),
            Err(CancelError::Subject { .. })
        ));
    }
}
