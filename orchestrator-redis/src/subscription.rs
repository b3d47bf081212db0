//! [`RedisSubscription`]: a consumer of a [`RedisTransport`](crate::RedisTransport).

use std::sync::Arc;

use orchestrator::transport::Subscription;

use crate::delivery::RedisDelivery;
use crate::feed::Feed;
use crate::shared::Shared;

/// A consumer of a [`RedisTransport`](crate::RedisTransport) (see
/// [`Transport::subscribe`](orchestrator::transport::Transport::subscribe)). The subscriptions
/// of one transport and set of topics share one feed (one consumer of the topics' groups);
/// those of every process share the groups, so they compete for the events.
pub struct RedisSubscription {
    shared: Arc<Shared>,
    feed: Arc<Feed>,
}

impl std::fmt::Debug for RedisSubscription {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisSubscription").field("consumer", &self.feed.consumer).finish_non_exhaustive()
    }
}

impl RedisSubscription {
    pub(crate) fn new(shared: Arc<Shared>, feed: Arc<Feed>) -> Self {
        Self { shared, feed }
    }

    /// The name of this subscription's consumer in its topics' groups.
    pub fn consumer(&self) -> &str {
        &self.feed.consumer
    }
}

impl Subscription for RedisSubscription {
    type Delivery = RedisDelivery;

    async fn next(&mut self) -> Option<RedisDelivery> {
        let arrived = self.feed.next().await?;
        Some(RedisDelivery::new(Arc::clone(&self.shared), Arc::clone(&self.feed.consumer), arrived))
    }
}

impl Drop for RedisSubscription {
    fn drop(&mut self) {
        self.feed.leave();
    }
}
