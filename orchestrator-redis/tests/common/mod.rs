//! Shared by the tests: the server's URL (mandatory under CI) and key prefixes of their own.

#![allow(dead_code, unreachable_pub)]

pub mod workload;

use std::sync::Mutex;
use std::time::Duration;

use orchestrator_redis::{RedisConfig, RedisTransport};

/// The URL in `REDIS_URL`; `None` (after saying why) when unset outside CI. Under CI (`CI` set)
/// a missing URL fails the test.
pub fn redis_url() -> Option<String> {
    match std::env::var("REDIS_URL") {
        Ok(url) if !url.is_empty() => Some(url),
        _ => {
            assert!(
                std::env::var_os("CI").is_none(),
                "REDIS_URL is not set, and CI makes the Redis tests mandatory"
            );
            println!("skipping: REDIS_URL is not set");
            None
        }
    }
}

/// A fresh key prefix, unique to a test run.
pub fn fresh_prefix() -> String {
    format!("test-{:016x}", fastrand::u64(..))
}

/// Settings for a fresh prefix on `url`, quick to poll.
pub fn config(url: &str) -> RedisConfig {
    RedisConfig {
        poll: Duration::from_millis(20),
        block: Duration::from_millis(500),
        ..RedisConfig::new(url).prefix(fresh_prefix())
    }
}

/// Transports of fresh prefixes made by a synchronous factory, removed by
/// [`Deployments::delete_all`].
#[derive(Default)]
pub struct Deployments(Mutex<Vec<RedisTransport>>);

impl Deployments {
    /// Connects with `config` from inside a multi-thread runtime, synchronously, and remembers
    /// the transport to delete its keys at the end.
    #[allow(clippy::expect_used)]
    pub fn connect(&self, config: RedisConfig) -> RedisTransport {
        let transport = tokio::task::block_in_place(|| {
            tokio::runtime::Handle::current()
                .block_on(RedisTransport::connect(config))
                .expect("connect to Redis")
        });
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(transport.clone());
        transport
    }

    /// Deletes the keys of every transport made (best effort).
    pub async fn delete_all(&self) {
        let transports =
            std::mem::take(&mut *self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner));
        for transport in transports {
            delete(&transport).await;
        }
    }
}

/// Deletes `transport`'s keys (best effort), after a pause for its feeds to stop.
pub async fn delete(transport: &RedisTransport) {
    if let Err(e) = transport.delete_keys().await {
        eprintln!("could not delete the keys of {}: {e}", transport.config().prefix);
    }
}
