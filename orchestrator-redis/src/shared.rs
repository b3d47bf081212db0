//! What a transport, its feeds and its deliveries share: the client, the connection for
//! commands, the closed flag, the feeds; and the operations on them (publish, settle, count).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError, Weak};
use std::time::{Duration, Instant};

use orchestrator::event::Event;
use orchestrator::transport::TransportError;
use redis::Value;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use tokio::sync::Notify;

use crate::config::RedisConfig;
use crate::error::{RedisError, command};
use crate::feed::Feed;
use crate::scripts;

/// The feeds of a transport, by topics (`None`: all).
pub(crate) type Feeds = HashMap<Option<Vec<String>>, Weak<Feed>>;

/// An event ready to publish: its topic and body.
pub(crate) struct Outgoing {
    pub(crate) topic: String,
    pub(crate) body: Vec<u8>,
}

/// The state shared by a transport, its subscriptions and its deliveries.
pub(crate) struct Shared {
    pub(crate) config: RedisConfig,
    pub(crate) client: redis::Client,
    /// For every command but the blocking reads (each feed has a connection of its own for
    /// those). Reconnects by itself.
    pub(crate) conn: ConnectionManager,
    closed: AtomicBool,
    /// Woken when the transport closes.
    pub(crate) closing: Notify,
    feeds: Mutex<Feeds>,
}

/// The pause after `failures` failures in a row: 50 ms doubling up to 5 s, with jitter.
pub(crate) fn backoff(failures: u32) -> Duration {
    let base = Duration::from_millis(50).saturating_mul(1 << failures.min(7)).min(Duration::from_secs(5));
    base.mul_f64(0.5 + fastrand::f64() / 2.0)
}

/// `url` without its password, for messages.
pub(crate) fn redacted(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => format!("{}://***{}", &url[..scheme], &url[at..]),
        _ => url.to_owned(),
    }
}

/// Milliseconds of `d`, at least 1 when `d` is not zero.
pub(crate) fn millis(d: Duration) -> u64 {
    let ms = u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
    if ms == 0 && !d.is_zero() { 1 } else { ms }
}

impl Shared {
    /// Connects to the server of `config`.
    pub(crate) async fn connect(config: RedisConfig) -> Result<Self, TransportError> {
        config.validate()?;
        let url = redacted(&config.url);
        let connect = |source| RedisError::Connect { url: url.clone(), source };
        let client = redis::Client::open(config.url.as_str()).map_err(connect)?;
        let manager = ConnectionManagerConfig::new()
            .set_response_timeout(Some(config.response_timeout))
            .set_connection_timeout(Some(config.response_timeout))
            .set_number_of_retries(3);
        let conn = ConnectionManager::new_with_config(client.clone(), manager).await.map_err(connect)?;
        Ok(Self {
            config,
            client,
            conn,
            closed: AtomicBool::new(false),
            closing: Notify::new(),
            feeds: Mutex::default(),
        })
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::Release);
        self.closing.notify_waiters();
    }

    pub(crate) fn lock_feeds(&self) -> MutexGuard<'_, Feeds> {
        self.feeds.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A connection for commands (clones share one multiplexed connection).
    pub(crate) fn conn(&self) -> ConnectionManager {
        self.conn.clone()
    }

    /// `events` ready to publish, in order: [`TransportError::MissingTo`] for the first
    /// without `to`, [`RedisError::EventTooLarge`] for the first larger than `max_body`.
    pub(crate) fn encode(&self, events: &[Event]) -> Result<Vec<Outgoing>, TransportError> {
        let mut out = Vec::with_capacity(events.len());
        for event in events {
            let Some(to) = event.to() else {
                return Err(TransportError::MissingTo { id: event.id().to_owned() });
            };
            let body = event.to_json_vec();
            let max = self.config.max_body;
            if body.len() > max {
                return Err(
                    RedisError::EventTooLarge { id: event.id().to_owned(), size: body.len(), max }.into()
                );
            }
            out.push(Outgoing { topic: to.to_owned(), body });
        }
        Ok(out)
    }

    /// Runs the publish script once: `true` when the batch was added (and `consumed`
    /// acknowledged), `false` when a topic was full (only checked with a capacity).
    pub(crate) async fn publish_once(
        &self,
        outgoing: &[Outgoing],
        capacity: usize,
        consumed: Option<(&str, &str)>,
    ) -> Result<bool, TransportError> {
        let config = &self.config;
        let mut invocation = scripts::PUBLISH.prepare_invoke();
        invocation.key(config.topics_key());
        for o in outgoing {
            invocation.key(config.stream_key(&o.topic));
        }
        if let Some((topic, _)) = consumed {
            invocation.key(config.stream_key(topic));
        }
        invocation.arg(&config.group).arg(capacity).arg(outgoing.len());
        for o in outgoing {
            invocation.arg(&o.topic);
        }
        for o in outgoing {
            invocation.arg(o.body.as_slice());
        }
        if let Some((_, id)) = consumed {
            invocation.arg(id);
        }
        let added: i64 = invocation.invoke_async(&mut self.conn()).await.map_err(command("publish"))?;
        Ok(added == 1)
    }

    /// Runs the publish script (see [`Shared::publish_once`]), trying again with backoff
    /// while it fails transiently (a lost connection, a server restarting), for up to
    /// [`RedisConfig::outage`].
    pub(crate) async fn publish_through_outage(
        &self,
        outgoing: &[Outgoing],
        capacity: usize,
        consumed: Option<(&str, &str)>,
    ) -> Result<bool, TransportError> {
        let started = Instant::now();
        let mut failures = 0;
        loop {
            match self.publish_once(outgoing, capacity, consumed).await {
                Err(e) if e.is_transient() && started.elapsed() < self.config.outage => {
                    tracing::warn!(error = %e, "publishing to Redis failed; trying again");
                    tokio::time::sleep(backoff(failures)).await;
                    failures += 1;
                }
                other => return other,
            }
        }
    }

    /// Publishes `outgoing` from outside: waits while a topic of the batch holds
    /// [`RedisConfig::capacity`] events waiting undelivered, up to the publish timeout
    /// ([`TransportError::Full`]); [`TransportError::Closed`] if the transport closes
    /// meanwhile.
    pub(crate) async fn publish(&self, outgoing: &[Outgoing]) -> Result<(), TransportError> {
        let capacity = self.config.capacity;
        let started = Instant::now();
        let mut pause = Duration::from_millis(2);
        loop {
            if self.publish_through_outage(outgoing, capacity, None).await? {
                return Ok(());
            }
            let waited = started.elapsed();
            if self.config.publish_timeout.is_some_and(|limit| waited >= limit) {
                return Err(TransportError::Full { capacity, waited });
            }
            if self.is_closed() {
                return Err(TransportError::Closed);
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(self.config.poll);
        }
    }

    /// Makes sure the group of each of `topics` exists (and its stream, empty), and records
    /// the topics.
    pub(crate) async fn ensure_groups(&self, topics: &[String]) -> Result<(), TransportError> {
        let mut conn = self.conn();
        for topic in topics {
            let created: Result<Value, redis::RedisError> = redis::cmd("XGROUP")
                .arg("CREATE")
                .arg(self.config.stream_key(topic))
                .arg(&self.config.group)
                .arg("0")
                .arg("MKSTREAM")
                .query_async(&mut conn)
                .await;
            match created {
                Ok(_) => {}
                Err(e) if e.code() == Some("BUSYGROUP") => {}
                Err(e) => return Err(command("XGROUP CREATE")(e)),
            }
        }
        if !topics.is_empty() {
            let _: i64 = redis::cmd("SADD")
                .arg(self.config.topics_key())
                .arg(topics)
                .query_async(&mut conn)
                .await
                .map_err(command("SADD topics"))?;
        }
        Ok(())
    }

    /// Every topic met so far (published to or subscribed), sorted.
    pub(crate) async fn known_topics(&self) -> Result<Vec<String>, TransportError> {
        let mut topics: Vec<String> = redis::cmd("SMEMBERS")
            .arg(self.config.topics_key())
            .query_async(&mut self.conn())
            .await
            .map_err(command("SMEMBERS topics"))?;
        topics.sort();
        Ok(topics)
    }

    /// How many events of `topics` are not settled yet: in their streams (waiting, or
    /// delivered and unsettled) or delayed.
    pub(crate) async fn remaining(&self, topics: &[String]) -> Result<u64, TransportError> {
        if topics.is_empty() {
            return Ok(0);
        }
        let mut pipe = redis::pipe();
        for topic in topics {
            pipe.cmd("XLEN").arg(self.config.stream_key(topic));
            pipe.cmd("ZCARD").arg(self.config.delayed_key(topic));
        }
        let counts: Vec<u64> = pipe.query_async(&mut self.conn()).await.map_err(command("XLEN"))?;
        Ok(counts.iter().sum())
    }

    /// How many events of `topics` wait undelivered: their streams' entries less those
    /// pending (delivered, unsettled).
    pub(crate) async fn waiting(&self, topics: &[String]) -> Result<u64, TransportError> {
        let mut total = 0;
        let mut conn = self.conn();
        for topic in topics {
            let key = self.config.stream_key(topic);
            let len: u64 =
                redis::cmd("XLEN").arg(&key).query_async(&mut conn).await.map_err(command("XLEN"))?;
            let pending: Result<Value, _> =
                redis::cmd("XPENDING").arg(&key).arg(&self.config.group).query_async(&mut conn).await;
            let pending = match pending {
                Ok(Value::Array(items)) => items.first().and_then(int).unwrap_or(0),
                Ok(_) => 0,
                Err(e) if e.code() == Some("NOGROUP") => 0,
                Err(e) => return Err(command("XPENDING")(e)),
            };
            total += len.saturating_sub(u64::try_from(pending).unwrap_or(0));
        }
        Ok(total)
    }

    /// Moves the entry `id` of `topic`'s stream (held by `consumer`, delivered `attempt`
    /// times) to the dead letters with `reason`. `false` when the entry was no longer there.
    pub(crate) async fn dead_letter(
        &self,
        topic: &str,
        id: &str,
        consumer: &str,
        attempt: u32,
        reason: &str,
    ) -> Result<bool, TransportError> {
        tracing::warn!(topic, id, attempt, reason, "dead letter");
        let config = &self.config;
        let moved: i64 = scripts::DEAD_LETTER
            .key(config.stream_key(topic))
            .key(config.dead_key())
            .arg(&config.group)
            .arg(id)
            .arg(topic)
            .arg(attempt)
            .arg(reason)
            .arg(config.dead_letter_limit)
            .arg(config.max_body)
            .arg(consumer)
            .invoke_async(&mut self.conn())
            .await
            .map_err(command("dead letter"))?;
        Ok(moved == 1)
    }

    /// Puts the entry `id` of `topic` back (see [`scripts::PUT_BACK`]), counting `attempts`
    /// deliveries so far, after `delay`. `false` when `consumer` no longer held it.
    pub(crate) async fn put_back(
        &self,
        topic: &str,
        id: &str,
        consumer: &str,
        attempts: u32,
        delay: Duration,
    ) -> Result<bool, TransportError> {
        let config = &self.config;
        let done: i64 = scripts::PUT_BACK
            .key(config.stream_key(topic))
            .key(config.delayed_key(topic))
            .arg(&config.group)
            .arg(consumer)
            .arg(id)
            .arg(attempts)
            .arg(millis(delay))
            .invoke_async(&mut self.conn())
            .await
            .map_err(command("nack"))?;
        Ok(done == 1)
    }

    /// Restarts the visibility timeout of entry `id` of `topic`, held by `consumer`. `false`
    /// when it no longer held it.
    pub(crate) async fn keep(&self, topic: &str, id: &str, consumer: &str) -> Result<bool, TransportError> {
        let kept: i64 = scripts::KEEP
            .key(self.config.stream_key(topic))
            .arg(&self.config.group)
            .arg(consumer)
            .arg(id)
            .invoke_async(&mut self.conn())
            .await
            .map_err(command("extend"))?;
        Ok(kept == 1)
    }
}

/// An integer answer (or a number as text).
pub(crate) fn int(v: &Value) -> Option<i64> {
    match v {
        Value::Int(i) => Some(*i),
        Value::BulkString(b) => std::str::from_utf8(b).ok()?.parse().ok(),
        Value::SimpleString(s) => s.parse().ok(),
        _ => None,
    }
}

/// A string answer's bytes.
pub(crate) fn bytes(v: &Value) -> Option<&[u8]> {
    match v {
        Value::BulkString(b) => Some(b),
        Value::SimpleString(s) => Some(s.as_bytes()),
        _ => None,
    }
}

/// A string answer as text (lossy).
pub(crate) fn text(v: &Value) -> Option<String> {
    bytes(v).map(|b| String::from_utf8_lossy(b).into_owned())
}

/// An array answer's items.
pub(crate) fn array(v: &Value) -> Option<&[Value]> {
    match v {
        Value::Array(items) | Value::Set(items) => Some(items),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_is_shown_without_its_password() {
        assert_eq!(redacted("redis://user:secret@host:6379/0"), "redis://***@host:6379/0");
        assert_eq!(redacted("redis://127.0.0.1:6379"), "redis://127.0.0.1:6379");
    }

    #[test]
    fn millis_never_rounds_a_delay_down_to_zero() {
        assert_eq!(millis(Duration::ZERO), 0);
        assert_eq!(millis(Duration::from_micros(10)), 1);
        assert_eq!(millis(Duration::from_millis(1500)), 1500);
    }
}
