//! The transport passes the conformance suite of `orchestrator` against the server: unordered
//! (Redis Streams do not hold a lane back), with a capacity of 8 (backpressure).

mod common;

use std::time::Duration;

use orchestrator::transport::testing::{Profile, conformance};
use orchestrator_redis::RedisConfig;

use common::{Deployments, config, redis_url};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn redis_transport_conforms() {
    let Some(url) = redis_url() else { return };
    let deployments = Deployments::default();
    conformance(
        || {
            deployments.connect(RedisConfig {
                capacity: 8,
                publish_timeout: Some(Duration::from_secs(30)),
                ..config(&url)
            })
        },
        Profile { ordered: false, capacity: 8 },
    )
    .await;
    deployments.delete_all().await;
}
