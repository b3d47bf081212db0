//! The transport passes the conformance suite of `orchestrator` against the server: unordered
//! (JetStream does not hold a lane back), with a capacity of 8 (backpressure).

mod common;

use std::time::Duration;

use orchestrator::transport::testing::{Profile, conformance};
use orchestrator_nats::NatsConfig;

use common::{Deployments, config, nats_url};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn nats_transport_conforms() {
    let Some(url) = nats_url() else { return };
    let deployments = Deployments::default();
    conformance(
        || {
            deployments.connect(NatsConfig {
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
