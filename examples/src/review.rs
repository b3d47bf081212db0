//! A document review that waits for a human's decision, sent to the running workflow as a
//! **signal**, and records what happens through an `audit` **notification** (an event that
//! expects no reply): the `arvo.orc.review` workflow of the signals example and tests.

use std::sync::{Arc, Mutex, PoisonError};

use orchestrator::handler::service::{ServiceHandler, ServiceInput};
use orchestrator::prelude::*;
use orchestrator::violation::Violation;

/// Starts a review.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ReviewRequest {
    /// The document to review.
    pub document: String,
}

/// The outcome of a review.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ReviewOutcome {
    /// The document reviewed.
    pub document: String,
    /// Whether it was approved.
    pub approved: bool,
    /// Who decided.
    pub by: String,
}

/// A reviewer's decision: the signal's payload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Decision {
    /// Whether the document is approved.
    pub approved: bool,
    /// Who decided (not empty).
    #[schemars(length(min = 1))]
    pub by: String,
}

/// An entry of the audit log: the notification's payload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AuditEntry {
    /// What happened.
    pub note: String,
}

orchestrator::orchestrator_contract! {
    /// Reviews a document: completes once a reviewer decided.
    pub contract Review {
        uri: "#/orc/review",
        name: "review",
        versions: {
            ReviewV1 = "1.0.0" { init: ReviewRequest, complete: ReviewOutcome },
        },
    }
}

orchestrator::contract! {
    /// A reviewer's decision, sent to a running review (a signal: it emits nothing).
    pub contract DecisionSignal {
        uri: "#/review/decision",
        type: "com.review.decision",
        versions: {
            DecisionV1 = "1.0.0" { accepts: Decision, emits: {} },
        },
    }
}

orchestrator::contract! {
    /// An audit log entry (a notification: it emits nothing, so no reply is expected).
    pub contract AuditLog {
        uri: "#/audit/log",
        type: "com.audit.log",
        versions: {
            AuditLogV1 = "1.0.0" { accepts: AuditEntry, emits: {} },
        },
    }
}

/// The review's context.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ReviewContext {
    /// The document under review.
    pub document: String,
    /// The decision, once received.
    pub decision: Option<Decision>,
}

fn requested(ctx: &mut ReviewContext, _: &ReviewFlowEvent, out: &mut ReviewFlowOutbox<'_>) {
    out.audit(AuditEntry { note: format!("review of {} requested", ctx.document) });
}

fn decided(ctx: &mut ReviewContext, event: &ReviewFlowEvent, out: &mut ReviewFlowOutbox<'_>) {
    if let ReviewFlowEvent::Decision(decision) = event {
        let verdict = if decision.approved { "approved" } else { "rejected" };
        out.audit(AuditEntry { note: format!("{} {verdict} by {}", ctx.document, decision.by) });
        ctx.decision = Some(decision.clone());
    }
}

fn outcome(ctx: &ReviewContext) -> ReviewOutcome {
    let (approved, by) = match &ctx.decision {
        Some(d) => (d.approved, d.by.clone()),
        None => (false, String::new()),
    };
    ReviewOutcome { document: ctx.document.clone(), approved, by }
}

orchestrator::machine! {
    /// Waits for the `decision` signal, auditing the request and the decision.
    pub machine ReviewFlow {
        contract: ReviewV1,
        signals: { decision: DecisionV1 },
        notifications: { audit: AuditLogV1 },
        context: ReviewContext,
        init: |input| ReviewContext { document: input.document.clone(), decision: None },
        output: outcome,
        states: {
            waiting: {
                entry: [requested],
                on: { decision::Decision => { target: done, actions: [decided] } },
            },
            done: { type: final },
        },
    }
}

/// The audit log: a handler of the `com.audit.log` notifications that keeps what it receives.
#[derive(Debug, Clone, Default)]
pub struct AuditTrail {
    entries: Arc<Mutex<Vec<(String, AuditEntry)>>>,
}

impl AuditTrail {
    /// An empty log.
    pub fn new() -> Self {
        Self::default()
    }

    /// The handler to register on a node: it keeps each entry with its event's subject and
    /// emits nothing.
    pub fn handler(&self) -> Result<ServiceHandler<AuditLog>, Violation> {
        let entries = Arc::clone(&self.entries);
        ServiceHandler::<AuditLog>::builder()
            .version(move |input: ServiceInput<AuditLogV1>| {
                let entries = Arc::clone(&entries);
                async move {
                    let subject = input.event.subject().to_owned();
                    entries.lock().unwrap_or_else(PoisonError::into_inner).push((subject, input.payload));
                    Ok(())
                }
            })
            .build()
    }

    /// The notes received for workflow `subject`, in order.
    pub fn notes(&self, subject: &str) -> Vec<String> {
        let entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        entries.iter().filter(|(s, _)| s == subject).map(|(_, e)| e.note.clone()).collect()
    }
}
