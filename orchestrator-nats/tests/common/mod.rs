//! Shared by the tests: the server's URL (mandatory under CI) and deployments of their own.

#![allow(dead_code, unreachable_pub)]

pub mod workload;

use std::sync::Mutex;
use std::time::Duration;

use orchestrator_nats::{NatsConfig, NatsTransport};

/// The URL in `NATS_URL`; `None` (after saying why) when unset outside CI. Under CI (`CI` set)
/// a missing URL fails the test.
pub fn nats_url() -> Option<String> {
    match std::env::var("NATS_URL") {
        Ok(url) if !url.is_empty() => Some(url),
        _ => {
            assert!(
                std::env::var_os("CI").is_none(),
                "NATS_URL is not set, and CI makes the NATS tests mandatory"
            );
            println!("skipping: NATS_URL is not set");
            None
        }
    }
}

/// A fresh deployment name (stream `T_<hex>`, dead letters `T_<hex>_DEAD`, prefix `t_<hex>`).
pub fn fresh_deployment() -> String {
    format!("T_{:016X}", fastrand::u64(..))
}

/// Settings for a fresh deployment on `url`, quick to poll.
pub fn config(url: &str) -> NatsConfig {
    NatsConfig { poll: Duration::from_millis(20), ..NatsConfig::new(url).deployment(&fresh_deployment()) }
}

/// Transports of fresh deployments made by a synchronous factory, removed by
/// [`Deployments::delete_all`].
#[derive(Default)]
pub struct Deployments(Mutex<Vec<NatsTransport>>);

impl Deployments {
    /// Connects with `config` from inside a multi-thread runtime, synchronously, and remembers
    /// the transport to delete its streams at the end.
    #[allow(clippy::expect_used)]
    pub fn connect(&self, config: NatsConfig) -> NatsTransport {
        let transport = tokio::task::block_in_place(|| {
            tokio::runtime::Handle::current()
                .block_on(NatsTransport::connect(config))
                .expect("connect to NATS")
        });
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(transport.clone());
        transport
    }

    /// Deletes the streams of every transport made (best effort).
    pub async fn delete_all(&self) {
        let transports =
            std::mem::take(&mut *self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner));
        for transport in transports {
            delete(&transport).await;
        }
    }
}

/// Deletes `transport`'s streams (best effort).
pub async fn delete(transport: &NatsTransport) {
    if let Err(e) = transport.delete_streams().await {
        eprintln!("could not delete the streams of {}: {e}", transport.config().stream);
    }
}
