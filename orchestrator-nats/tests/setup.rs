//! Setting a deployment up: every process of a new deployment may connect, and subscribe, at the
//! same moment, and each one gets the deployment's streams and consumers, whoever created them.
//!
//! Needs `NATS_URL` (skipped without it, mandatory under CI).

mod common;

use orchestrator::transport::{Topics, Transport};
use orchestrator_nats::NatsTransport;

use common::{config, delete, nats_url};

/// Processes started together, each with its own connection.
const PROCESSES: usize = 8;

/// New deployments set up: NATS 2.9 lost about one in fifty such races before the fix.
const ROUNDS: usize = 200;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn processes_of_a_new_deployment_starting_at_once_all_get_its_streams_and_consumers() {
    let Some(url) = nats_url() else { return };
    for round in 0..ROUNDS {
        let config = config(&url);
        let starts: Vec<_> = (0..PROCESSES)
            .map(|_| {
                let config = config.clone();
                tokio::spawn(async move {
                    let transport = NatsTransport::connect(config).await?;
                    let subscription =
                        transport.subscribe(Topics::Only(vec!["com.setup.a".to_owned()])).await?;
                    Ok::<_, orchestrator::transport::TransportError>((transport, subscription))
                })
            })
            .collect();
        let mut started = Vec::new();
        for start in starts {
            match start.await.expect("the task ran") {
                Ok(process) => started.push(process),
                Err(e) => panic!("round {round}: a process could not start: {e:?}"),
            }
        }
        assert_eq!(started.len(), PROCESSES);
        delete(&started[0].0).await;
    }
}
