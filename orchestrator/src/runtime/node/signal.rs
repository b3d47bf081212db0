//! [`Node::signal`]: sends a typed signal to a running workflow.

use crate::contract::ContractVersion;
use crate::event::Event;
use crate::factory::EventFactory;
use crate::memory::Memory;
use crate::orchestration::WorkflowRecord;
use crate::transport::Transport;

use super::{Node, NodeError};

/// The source of signals when the node declares no client topic.
pub const SIGNAL_SOURCE: &str = "orchestrator.node.signal";

impl<M: Memory<WorkflowRecord> + 'static, T: Transport> Node<M, T> {
    /// Sends signal `V` to the running workflow `subject` and returns the event's id: the
    /// event `V` accepts (checked against its schema before anything is published), addressed
    /// to the workflow's orchestrator with the workflow's subject (see
    /// [`EventFactory::signal`], which builds the same event without a node). Its source is the
    /// node's first client topic ([`NodeBuilder::client`](super::NodeBuilder::client)), else
    /// [`SIGNAL_SOURCE`]. Like [`Node::start`], it is published through the store's outbox on
    /// a durable node.
    ///
    /// A payload the contract refuses, or a subject that is no orchestration subject, is
    /// [`NodeError::Signal`]. A workflow that is unknown, finished or does not declare the
    /// signal ignores it (an undeclared one is a dead letter).
    pub async fn signal<V: ContractVersion>(
        &self,
        subject: &str,
        payload: V::Accepts,
    ) -> Result<String, NodeError> {
        let source = self.clients.first().map_or(SIGNAL_SOURCE, String::as_str);
        let event = EventFactory::<V>::new()
            .signal(payload, subject, Event::builder().source(source))
            .map_err(|source| NodeError::Signal { subject: subject.to_owned(), source })?;
        event.check_size(self.max_event_bytes)?;
        let id = event.id().to_owned();
        self.send(event).await?;
        Ok(id)
    }
}
