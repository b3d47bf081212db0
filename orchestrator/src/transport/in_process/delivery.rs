//! [`InProcessSubscription`] and [`InProcessDelivery`]: the consumer side of the in-process
//! transport.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;

use super::inner::Inner;
use super::lanes::Job;
use crate::event::Event;
use crate::transport::{Delivery, Subscription, Topics, TransportError};

/// A consumer of an [`InProcessTransport`](super::InProcessTransport) (see
/// [`Transport::subscribe`](crate::transport::Transport::subscribe)).
pub struct InProcessSubscription {
    pub(super) inner: Arc<Inner>,
    pub(super) topics: Topics,
    /// What this consumer waits on (shared with the consumers of the same topics).
    pub(super) work: Arc<Notify>,
}

impl Subscription for InProcessSubscription {
    type Delivery = InProcessDelivery;

    async fn next(&mut self) -> Option<InProcessDelivery> {
        let job = self.inner.next(&self.topics, &self.work).await?;
        Some(InProcessDelivery { inner: Arc::clone(&self.inner), job: Some(job) })
    }
}

impl Drop for InProcessSubscription {
    fn drop(&mut self) {
        self.inner.unsubscribe(&self.topics);
    }
}

impl fmt::Debug for InProcessSubscription {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InProcessSubscription").field("topics", &self.topics).finish_non_exhaustive()
    }
}

/// One delivery of the in-process transport. Its `(topic, subject)` lane stays busy until it is
/// settled; dropped unsettled (a cancelled or panicking consumer), it is put back at the front
/// of its lane at once, as a nack without delay.
pub struct InProcessDelivery {
    inner: Arc<Inner>,
    /// `Some` until the delivery is settled (the settling methods take `self`, so it is always
    /// `Some` where `event` and `attempt` can be called).
    job: Option<Job>,
}

impl InProcessDelivery {
    fn job(&self) -> &Job {
        self.job.as_ref().expect("a delivery holds its event until it is settled")
    }
}

impl Delivery for InProcessDelivery {
    fn event(&self) -> &Event {
        &self.job().entry.event
    }

    fn attempt(&self) -> u32 {
        self.job().entry.attempt
    }

    async fn ack(mut self, produced: Vec<Event>) -> Result<(), TransportError> {
        // Products first, so they are queued before the lane (and the transport) can go idle.
        // A refused batch (an event without `to`) leaves the delivery unsettled: dropped, it is
        // delivered again.
        self.inner.admit_products(produced)?;
        if let Some(job) = self.job.take() {
            self.inner.release(&job, true);
        }
        Ok(())
    }

    async fn nack(mut self, delay: Duration) -> Result<(), TransportError> {
        if let Some(job) = self.job.take() {
            self.inner.retry(job, delay, true);
        }
        Ok(())
    }

    async fn extend(&self, _by: Duration) -> Result<(), TransportError> {
        // No visibility deadline: a delivery stays with its consumer until settled.
        Ok(())
    }

    async fn terminate(mut self, _reason: String) -> Result<(), TransportError> {
        if let Some(job) = self.job.take() {
            self.inner.release(&job, false);
        }
        Ok(())
    }
}

impl Drop for InProcessDelivery {
    fn drop(&mut self) {
        if let Some(job) = self.job.take() {
            self.inner.retry(job, Duration::ZERO, false);
        }
    }
}

impl fmt::Debug for InProcessDelivery {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut s = f.debug_struct("InProcessDelivery");
        if let Some(job) = &self.job {
            s.field("id", &job.entry.event.id()).field("attempt", &job.entry.attempt);
        }
        s.finish_non_exhaustive()
    }
}
