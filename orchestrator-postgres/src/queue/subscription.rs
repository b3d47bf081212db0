//! [`PgSubscription`]: a consumer of a [`PgQueue`](super::PgQueue).

use std::sync::Arc;

use orchestrator::transport::{Subscription, Topics};

use super::delivery::PgDelivery;
use super::feed::Feed;
use super::shared::{Shared, topic_list};

/// A consumer of a [`PgQueue`](super::PgQueue) (see
/// [`Transport::subscribe`](orchestrator::transport::Transport::subscribe)). The consumers of one
/// queue and set of topics share one poller (see [`crate::queue`]).
pub struct PgSubscription {
    shared: Arc<Shared>,
    feed: Arc<Feed>,
}

impl std::fmt::Debug for PgSubscription {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgSubscription").finish_non_exhaustive()
    }
}

impl PgSubscription {
    pub(super) fn new(shared: Arc<Shared>, topics: &Topics) -> Self {
        let feed = Feed::join(&shared, topic_list(topics));
        Self { shared, feed }
    }
}

impl Subscription for PgSubscription {
    type Delivery = PgDelivery;

    async fn next(&mut self) -> Option<PgDelivery> {
        loop {
            let row = self.feed.next().await?;
            if let Some(delivery) = PgDelivery::from_claim(&self.shared, row).await {
                return Some(delivery);
            }
        }
    }
}

impl Drop for PgSubscription {
    fn drop(&mut self) {
        self.feed.leave();
    }
}
