//! [`NatsSubscription`]: a consumer of a [`NatsTransport`](crate::NatsTransport).

use std::sync::Arc;

use orchestrator::transport::Subscription;

use crate::delivery::NatsDelivery;
use crate::feed::Feed;
use crate::shared::Shared;

/// A consumer of a [`NatsTransport`](crate::NatsTransport) (see
/// [`Transport::subscribe`](orchestrator::transport::Transport::subscribe)). The subscriptions
/// of one transport and set of topics share one feed of pull requests;
/// those of every process share the topics' durable consumers, so they compete for the events.
pub struct NatsSubscription {
    shared: Arc<Shared>,
    feed: Arc<Feed>,
}

impl std::fmt::Debug for NatsSubscription {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NatsSubscription").finish_non_exhaustive()
    }
}

impl NatsSubscription {
    pub(crate) fn new(shared: Arc<Shared>, feed: Arc<Feed>) -> Self {
        Self { shared, feed }
    }
}

impl Subscription for NatsSubscription {
    type Delivery = NatsDelivery;

    async fn next(&mut self) -> Option<NatsDelivery> {
        let arrived = self.feed.next().await?;
        Some(NatsDelivery::new(Arc::clone(&self.shared), arrived))
    }
}

impl Drop for NatsSubscription {
    fn drop(&mut self) {
        self.feed.leave();
    }
}
