//! [`InitMeta`]: what a machine's two-argument `init` sees besides the init payload.

use indexmap::IndexMap;

use crate::event::Event;
use crate::subject::Subject;

/// The key of the parent workflow's subject in an orchestrator's init payload.
const PARENT_SUBJECT: &str = "parentSubject$$";

/// Where a workflow starts from: the init event's subject, source, the subject's meta, initiator
/// and parent subject. The second argument of a two-argument `init` (`init: |input, meta| …`).
///
/// Every field is empty when the machine is started without an event
/// ([`MachineInstance::start`](super::MachineInstance::start)); a subject that is not an
/// orchestration subject gives no meta nor initiator.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct InitMeta {
    /// The workflow's subject (the init event's `subject`).
    pub subject: Option<String>,
    /// Who sent the init event (its `source`).
    pub source: Option<String>,
    /// The orchestration subject's free-form meta (`redirectto`, …).
    pub subject_meta: IndexMap<String, String>,
    /// Who started the execution, from the orchestration subject (a child's initiator is its
    /// parent's orchestrator name).
    pub initiator: Option<String>,
    /// The parent workflow's subject (`parentSubject$$` of the init payload), for a child
    /// workflow.
    pub parent_subject: Option<String>,
}

impl InitMeta {
    /// The meta of a workflow with this subject, started without an event: the subject's meta
    /// and initiator when it is an orchestration subject.
    pub fn from_subject(subject: impl Into<String>) -> Self {
        let subject = subject.into();
        let mut meta = Self::default();
        if let Ok(parsed) = Subject::parse(&subject) {
            meta.subject_meta = parsed.content().meta.clone();
            meta.initiator = Some(parsed.initiator().to_owned());
        }
        meta.subject = Some(subject);
        meta
    }

    /// The meta of a workflow started by this init event.
    pub fn from_event(event: &Event) -> Self {
        let mut meta = match event.orchestration_subject() {
            Ok(parsed) => Self {
                subject_meta: parsed.content().meta.clone(),
                initiator: Some(parsed.initiator().to_owned()),
                ..Self::default()
            },
            Err(_) => Self::default(),
        };
        meta.subject = Some(event.subject().to_owned());
        meta.source = Some(event.source().to_owned());
        meta.parent_subject = event.data().get(PARENT_SUBJECT).and_then(|v| v.as_str()).map(str::to_owned);
        meta
    }

    /// A subject meta value.
    pub fn meta(&self, key: &str) -> Option<&str> {
        self.subject_meta.get(key).map(String::as_str)
    }
}
