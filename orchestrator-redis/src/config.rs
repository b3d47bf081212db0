//! [`RedisConfig`]: where a [`RedisTransport`](crate::RedisTransport) connects, its keys, and
//! how it pushes back, redelivers and gives up.

use std::time::Duration;

use orchestrator::transport::TransportError;

/// How a [`RedisTransport`](crate::RedisTransport) connects and behaves. Every process of a
/// deployment must use the same `prefix` and `group`; [`RedisConfig::new`] fills in defaults
/// that suit most uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RedisConfig {
    /// The server's URL (`redis://[user:password@]host:6379[/db]`).
    pub url: String,
    /// The first part of every key (default `orchestrator`): the events of topic `t` are in the
    /// stream `<prefix>:t:<t>`, those nacked with a delay in the sorted set `<prefix>:d:<t>`, the
    /// dead letters in the stream `<prefix>:dead`, the topics met so far in the set
    /// `<prefix>:topics`.
    pub prefix: String,
    /// The consumer group of every topic's stream (default `orchestrator`), shared by every
    /// subscription of every process: they compete for the topic's events.
    pub group: String,
    /// The first part of this process's consumer names (default `c-<process id>`); each
    /// subscription's feed adds a random suffix.
    pub consumer: String,
    /// How many events of one topic may wait undelivered (in its stream, not handed to a
    /// consumer) before a publisher from outside waits (default 10,000). Products of an ack are
    /// admitted over it.
    pub capacity: usize,
    /// How long a publisher waits for room before [`TransportError::Full`]; `None` (the
    /// default) waits as long as needed.
    pub publish_timeout: Option<Duration>,
    /// How long a delivery stays with its consumer unless extended (default 30 s): then any
    /// consumer of the group may take it over with `XAUTOCLAIM`.
    /// [`Delivery::extend`](orchestrator::transport::Delivery::extend) restarts this period: a
    /// node's heartbeat (every 10 s by default) must beat more often than this for long
    /// handlers to keep their deliveries.
    pub visibility_timeout: Duration,
    /// How many times an event is delivered at most (default 100): nacked on its last
    /// delivery, or taken over once more after a consumer died holding it, it becomes a dead
    /// letter.
    pub max_deliveries: u32,
    /// The largest body accepted (default 1 MiB): a larger event is refused at publish with
    /// [`RedisError::EventTooLarge`](crate::RedisError::EventTooLarge); a larger entry written
    /// by someone else becomes a dead letter (its body kept cut to this size).
    pub max_body: usize,
    /// The most entries one read asks for (default 64).
    pub batch: usize,
    /// How long a blocking `XREADGROUP` waits on the server (default 2 s). A subscription to
    /// every topic sees a new topic's first events after at most this long.
    pub block: Duration,
    /// How often a feed moves delayed events back to their streams, looks for deliveries whose
    /// consumer died, and (once the transport is closed) checks whether its topics are
    /// drained; and how often a waiting publisher looks again, at most (default 100 ms).
    pub poll: Duration,
    /// The most dead letters kept (default 100,000; approximate, the oldest go first).
    pub dead_letter_limit: usize,
    /// How long a command may wait for the server's answer (default 10 s).
    pub response_timeout: Duration,
    /// How long a publish (from outside, or the products of an ack) keeps trying through a
    /// lost connection or a server that does not answer, a restart say, before it fails with a
    /// transient error (default 60 s). A try whose answer was lost may have been applied: the
    /// batch is then added twice (at least once; the store's idempotency covers it).
    pub outage: Duration,
    /// Whether a durable node keeps the events it produces in its store's outbox until they
    /// are consumed (`true`), or lets them leave it once Redis acknowledged them (`false`, the
    /// default: [`Transport::stores_published`](orchestrator::transport::Transport::stores_published)).
    /// `true` covers a Redis that loses acknowledged writes (see the crate documentation), but
    /// only when every node of the deployment shares one store: an event consumed by a node over
    /// another store would stay in the producer's outbox, published again at each start.
    pub keep_until_consumed: bool,
}

impl RedisConfig {
    /// The settings for the server at `url`, with every default.
    pub fn new(url: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            prefix: "orchestrator".to_owned(),
            group: "orchestrator".to_owned(),
            consumer: format!("c-{}", std::process::id()),
            capacity: 10_000,
            publish_timeout: None,
            visibility_timeout: Duration::from_secs(30),
            max_deliveries: 100,
            max_body: 1024 * 1024,
            batch: 64,
            block: Duration::from_secs(2),
            poll: Duration::from_millis(100),
            dead_letter_limit: 100_000,
            response_timeout: Duration::from_secs(10),
            outage: Duration::from_secs(60),
            keep_until_consumed: false,
        }
    }

    /// Sets the key prefix: one deployment on a shared server.
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// Checks every setting: [`TransportError::InvalidConfig`] names the first one out of
    /// range.
    pub fn validate(&self) -> Result<(), TransportError> {
        let invalid = |message: String| Err(TransportError::InvalidConfig { message });
        if self.prefix.is_empty() || self.prefix.contains(char::is_whitespace) {
            return invalid(format!("prefix `{}` must be non-empty, without whitespace", self.prefix));
        }
        if self.group.is_empty() || self.consumer.is_empty() {
            return invalid("group and consumer must be non-empty".to_owned());
        }
        if self.capacity == 0 {
            return invalid("capacity must be at least 1".to_owned());
        }
        if self.max_deliveries == 0 {
            return invalid("max_deliveries must be at least 1".to_owned());
        }
        if self.batch == 0 {
            return invalid("batch must be at least 1".to_owned());
        }
        if self.max_body < 1024 {
            return invalid(format!("max_body must be at least 1024 bytes, got {}", self.max_body));
        }
        if self.visibility_timeout < Duration::from_millis(100) {
            return invalid(format!(
                "visibility_timeout must be at least 100 ms, got {:?}",
                self.visibility_timeout
            ));
        }
        if self.block < Duration::from_millis(10) || self.poll.is_zero() {
            return invalid("block must be at least 10 ms and poll more than zero".to_owned());
        }
        if self.dead_letter_limit == 0 {
            return invalid("dead_letter_limit must be at least 1".to_owned());
        }
        if self.response_timeout < Duration::from_millis(100) {
            return invalid("response_timeout must be at least 100 ms".to_owned());
        }
        Ok(())
    }

    /// The stream of `topic`.
    pub fn stream_key(&self, topic: &str) -> String {
        format!("{}:t:{topic}", self.prefix)
    }

    /// The sorted set of `topic`'s events nacked with a delay.
    pub fn delayed_key(&self, topic: &str) -> String {
        format!("{}:d:{topic}", self.prefix)
    }

    /// The dead-letter stream.
    pub fn dead_key(&self) -> String {
        format!("{}:dead", self.prefix)
    }

    /// The set of topics met so far (published to or subscribed).
    pub fn topics_key(&self) -> String {
        format!("{}:topics", self.prefix)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_defaults_are_valid_and_each_setting_out_of_range_is_named() {
        let config = RedisConfig::new("redis://127.0.0.1:6379");
        assert!(config.validate().is_ok());
        let cases: Vec<(RedisConfig, &str)> = vec![
            (config.clone().prefix(""), "prefix"),
            (config.clone().prefix("a b"), "prefix"),
            (RedisConfig { group: String::new(), ..config.clone() }, "group"),
            (RedisConfig { capacity: 0, ..config.clone() }, "capacity"),
            (RedisConfig { max_deliveries: 0, ..config.clone() }, "max_deliveries"),
            (RedisConfig { batch: 0, ..config.clone() }, "batch"),
            (RedisConfig { max_body: 10, ..config.clone() }, "max_body"),
            (
                RedisConfig { visibility_timeout: Duration::from_millis(5), ..config.clone() },
                "visibility_timeout",
            ),
            (RedisConfig { poll: Duration::ZERO, ..config.clone() }, "poll"),
            (RedisConfig { dead_letter_limit: 0, ..config.clone() }, "dead_letter_limit"),
        ];
        for (config, name) in cases {
            match config.validate() {
                Err(TransportError::InvalidConfig { message }) => {
                    assert!(message.contains(name), "{message}")
                }
                other => panic!("{name}: expected InvalidConfig, got {other:?}"),
            }
        }
    }

    #[test]
    fn keys_start_with_the_prefix() {
        let config = RedisConfig::new("redis://x").prefix("acme");
        assert_eq!(config.stream_key("com.a"), "acme:t:com.a");
        assert_eq!(config.delayed_key("com.a"), "acme:d:com.a");
        assert_eq!(config.dead_key(), "acme:dead");
        assert_eq!(config.topics_key(), "acme:topics");
    }
}
