//! The orchestrator's [`Transport`] on Redis Streams: [`RedisTransport`].
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use std::sync::Arc;
//! use std::time::Duration;
//! use orchestrator::memory::InMemory;
//! use orchestrator::orchestration::WorkflowRecord;
//! use orchestrator::runtime::Node;
//! use orchestrator_redis::{RedisConfig, RedisTransport};
//!
//! let config = RedisConfig {
//!     capacity: 50_000,
//!     publish_timeout: Some(Duration::from_secs(30)),
//!     visibility_timeout: Duration::from_secs(60),
//!     ..RedisConfig::new("redis://127.0.0.1:6379").prefix("acme")
//! };
//! let transport = RedisTransport::connect(config).await?;
//! let store = Arc::new(InMemory::<WorkflowRecord>::default());
//! let node = Node::builder(store)
//!     .transport(transport.clone())
//!     .client("com.acme.client")
//!     // .service(..).orchestrator(..)
//!     .build()
//!     .await?;
//! // ... node.start(init).await?; ...
//! node.shutdown().await;
//! for dead in transport.dead_letters(None, 100).await? {
//!     println!("{} on delivery {}: {}", dead.topic, dead.attempt, dead.reason);
//! }
//! # Ok(())
//! # }
//! ```
//!
//! # Layout on the server
//!
//! Every key starts with [`RedisConfig::prefix`] (default `orchestrator`); a deployment on a
//! shared server picks its own. The transport needs one server (a primary, with replicas or
//! not), not Redis Cluster: its scripts touch the keys of several topics at once. It needs
//! Redis 6.2 or later (`XAUTOCLAIM`, exclusive ranges); it is tested on 7.0.
//!
//! * **A stream per topic**, `<prefix>:t:<topic>`: the events whose `to` is the topic. Each
//!   entry has a field `body`, the event as CloudEvents structured JSON, and, when the event was
//!   put back after earlier deliveries, a field `attempts` (how many came before).
//! * **A consumer group per stream** ([`RedisConfig::group`], default `orchestrator`), created
//!   at the first publish or subscription and shared by every subscription of every process:
//!   they compete for the topic's events. Each subscription's feed (one per transport and set
//!   of topics) is a consumer of its own, named [`RedisConfig::consumer`] and a random suffix;
//!   it removes itself from the groups when it ends holding nothing, and removes the consumers
//!   of others that hold nothing and were idle for ten visibility timeouts (processes that
//!   died).
//! * **A delayed set per topic**, `<prefix>:d:<topic>`: the events nacked with a delay, scored
//!   by when they are due (the server's clock). Feeds move the due ones back to their stream.
//! * **A dead-letter stream**, `<prefix>:dead`, capped at about
//!   [`RedisConfig::dead_letter_limit`] entries (`MAXLEN ~`, the oldest go first); read it with
//!   [`RedisTransport::dead_letters`].
//! * **The set of topics**, `<prefix>:topics`: every topic published to or subscribed, for the
//!   subscriptions to every topic ([`Topics::All`]).
//!
//! Topic streams are **never trimmed**: `MAXLEN` would remove entries still pending (Redis 7
//! has no trimming of acknowledged entries only). Instead each settled entry is deleted
//! (`XACK` and `XDEL` together), so a stream holds exactly the events not settled yet.
//!
//! # Delivery and settlement
//!
//! Delivery is **at least once**. A feed reads new entries with a blocking `XREADGROUP` on a
//! **connection of its own** (every other command goes over one shared, reconnecting
//! connection, never behind a blocking read), only as many as its subscriptions wait for. Every
//! settlement is one Lua script, so it is atomic on the server:
//!
//! * [`Delivery::ack`] adds the products to their streams and acknowledges and deletes the
//!   consumed entry together: a crash can never leave the entry acknowledged without its
//!   products, nor the products added without the acknowledgement.
//! * [`Delivery::nack`] adds the event again (a new entry counting the deliveries so far) at
//!   the end of its stream, or to the topic's delayed set when there is a delay, and removes the
//!   delivered entry. A delivery dropped unsettled is nacked without delay.
//! * [`Delivery::extend`] restarts the delivery's idle time (`XCLAIM ... JUSTID` to its own
//!   consumer), so no one takes it over while its handler works; the period is always
//!   [`RedisConfig::visibility_timeout`], whatever `by` asks.
//! * [`Delivery::terminate`] adds the entry with its reason to the dead-letter stream and removes
//!   it.
//!
//! A delivery whose consumer died (its process crashed, or hung past the visibility timeout
//! without a heartbeat) stays pending in the group; the feeds of every process look for such
//! entries and **take them over with `XAUTOCLAIM`** once they have been idle for the visibility
//! timeout. An event is handled again after a crash: the store's fencing and idempotency make
//! that harmless. A handler that outlives its visibility timeout without a heartbeat may so run
//! beside the consumer that took its delivery over; whichever settles first settles the event
//! (an ack of a delivery taken over still adds its products and removes the entry; a nack or
//! an extend of one does nothing).
//!
//! The attempt of a delivery is the deliveries counted by the group (`XPENDING`) plus those of
//! the entries it replaces. After [`RedisConfig::max_deliveries`] an event becomes a dead
//! letter: nacked on its last delivery, or delivered once more (its last delivery was never
//! settled: its consumer died), it goes to the dead-letter stream with the reason and never
//! reaches a handler.
//!
//! An entry that is not a valid event of its topic (no `body`, a body larger than
//! [`RedisConfig::max_body`], malformed bytes, not an Arvo event, a `to` of another topic) is
//! never delivered to a handler: it becomes a dead letter with the reason. An event larger
//! than `max_body` is refused before anything of its batch is published, with
//! [`TransportError::Backend`] (permanent) whose source is [`RedisError::EventTooLarge`].
//!
//! Redis Streams do not hold back the next event of a `(topic, subject)` pair while one is
//! being handled elsewhere, and nacked events go to the end of their stream: the transport is
//! not *ordered* in the sense of [`orchestrator::transport`]; the store's leases serialize each
//! workflow's steps instead. Redis has no publish deduplication either: an event published
//! twice is delivered twice, and the store's idempotency makes the second delivery change
//! nothing.
//!
//! # Backpressure
//!
//! [`Transport::publish`] checks, in the same script that adds the batch, how many events of
//! each of the batch's topics wait undelivered (the stream's entries less those pending). While
//! a topic holds some and the batch would take it past [`RedisConfig::capacity`], nothing is
//! added and the publisher waits and tries again, up to [`RedisConfig::publish_timeout`], then
//! fails with [`TransportError::Full`]. The capacity is per topic. The products of an ack are
//! never refused for capacity: they are part of work already accepted.
//!
//! # Outages
//!
//! Commands go over a connection that reconnects by itself; each feed's reader reconnects with
//! backoff. A publish (from outside, or the products of an ack) that fails on a lost connection
//! or a server that does not answer is tried again with backoff for up to
//! [`RedisConfig::outage`], then fails with a transient [`TransportError::Backend`]. Redis has no
//! idempotent publish: a try whose answer was lost may have been applied, and the batch is then
//! added twice (delivered twice; the store's idempotency covers it). A nack, extend or terminate
//! that fails leaves the delivery pending: it is taken over after the visibility timeout.
//!
//! # Closing
//!
//! [`Transport::close`] refuses further publishes from outside ([`TransportError::Closed`]);
//! the transport's subscriptions go on receiving the events of their topics (those queued,
//! delayed, and those their handlers produce) and end once their streams and delayed sets hold
//! none.
//!
//! # What Redis does not promise
//!
//! Redis acknowledges a write once it is in the server's memory. Whether it survives depends on
//! the server's configuration, and the transport cannot change that:
//!
//! * **Without persistence** (the default of many installations, and `save ""` with
//!   `appendonly no`), a restart of the server loses every event, pending or not.
//! * **With the append-only file and `appendfsync everysec`** (the usual setting), a crash of
//!   the machine or a power loss loses up to about a second of acknowledged writes: published
//!   events, but also acknowledgements (an event handled again) and dead letters. Only
//!   `appendonly yes` with **`appendfsync always`** writes each command to disk before
//!   answering, at a cost in throughput.
//! * **Replication is asynchronous**: on a failover (Sentinel, a managed service promoting a
//!   replica) the writes the old primary acknowledged but had not yet sent are lost. `WAIT`
//!   narrows the window but gives no guarantee; Redis has no consensus on writes.
//! * A script is atomic while the server runs, but a server killed during an `appendfsync
//!   everysec` window can come back without some of its effects.
//!
//! A durable [`Node`](orchestrator::runtime::Node) puts what a step produces in its store's
//! outbox in the step's own transaction, and by default lets it leave once Redis acknowledged
//! it ([`Transport::stores_published`]): a crash of the node between the two loses nothing, but
//! what Redis then loses is lost. For events that must not be lost, run Redis with `appendonly
//! yes` and `appendfsync always` on a single primary (no failover that can drop writes), or,
//! when every node of the deployment shares one store, set
//! [`RedisConfig::keep_until_consumed`]: the outbox then keeps each event until a node consumed
//! it and publishes what is left again when a node starts, so a loss of the transport delays
//! workflows rather than losing them. Redis must not be the system of record for workflow
//! state.
//!
//! [`Delivery`]: orchestrator::transport::Delivery
//! [`Delivery::ack`]: orchestrator::transport::Delivery::ack
//! [`Delivery::nack`]: orchestrator::transport::Delivery::nack
//! [`Delivery::extend`]: orchestrator::transport::Delivery::extend
//! [`Delivery::terminate`]: orchestrator::transport::Delivery::terminate

mod config;
mod dead_letter;
mod delivery;
mod error;
mod feed;
mod scripts;
mod shared;
mod subscription;

use std::sync::Arc;

use orchestrator::event::Event;
use orchestrator::transport::{Topics, Transport, TransportError};
use redis::Value;

pub use config::RedisConfig;
pub use dead_letter::RedisDeadLetter;
pub use delivery::RedisDelivery;
pub use error::RedisError;
pub use subscription::RedisSubscription;

use error::command;
use feed::Feed;
use shared::Shared;

/// The transport on Redis Streams (see the [crate documentation](crate)). Clones share the
/// connection and its state.
#[derive(Clone)]
pub struct RedisTransport {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for RedisTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisTransport")
            .field("url", &shared::redacted(&self.shared.config.url))
            .field("prefix", &self.shared.config.prefix)
            .finish_non_exhaustive()
    }
}

/// `text` with the characters that are special in a `SCAN MATCH` pattern escaped.
fn glob_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

impl RedisTransport {
    /// Checks `config` and connects to its server.
    pub async fn connect(config: RedisConfig) -> Result<Self, TransportError> {
        Ok(Self { shared: Arc::new(Shared::connect(config).await?) })
    }

    /// The settings.
    pub fn config(&self) -> &RedisConfig {
        &self.shared.config
    }

    /// A connection for commands outside the transport (clones share one multiplexed,
    /// reconnecting connection; do not block on it).
    pub fn connection(&self) -> redis::aio::ConnectionManager {
        self.shared.conn()
    }

    /// Up to `limit` dead letters after the one with id `after` (`None`: from the oldest
    /// kept), oldest first.
    pub async fn dead_letters(
        &self,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<RedisDeadLetter>, TransportError> {
        let start = match after {
            Some(id) => format!("({id}"),
            None => "-".to_owned(),
        };
        let reply: Value = redis::cmd("XRANGE")
            .arg(self.shared.config.dead_key())
            .arg(start)
            .arg("+")
            .arg("COUNT")
            .arg(limit)
            .query_async(&mut self.shared.conn())
            .await
            .map_err(command("XRANGE dead letters"))?;
        let entries = shared::array(&reply).ok_or_else(|| RedisError::Protocol {
            what: "XRANGE dead letters",
            answer: format!("{reply:?}"),
        })?;
        Ok(entries.iter().filter_map(RedisDeadLetter::from_entry).collect())
    }

    /// How many events wait undelivered, over every topic met so far (the figure backpressure
    /// judges per topic).
    pub async fn waiting(&self) -> Result<u64, TransportError> {
        let topics = self.shared.known_topics().await?;
        self.shared.waiting(&topics).await
    }

    /// How many events are not settled yet, over every topic met so far: waiting, delivered
    /// and unsettled, or delayed.
    pub async fn remaining(&self) -> Result<u64, TransportError> {
        let topics = self.shared.known_topics().await?;
        self.shared.remaining(&topics).await
    }

    /// Deletes every key of this transport's prefix (streams, groups, delayed sets, dead
    /// letters): the end of a deployment, or of a test. Returns how many keys were deleted.
    pub async fn delete_keys(&self) -> Result<usize, TransportError> {
        let mut conn = self.shared.conn();
        let pattern = format!("{}:*", glob_escape(&self.shared.config.prefix));
        let mut cursor = 0_u64;
        let mut deleted = 0;
        loop {
            let (next, keys): (u64, Vec<String>) = redis::cmd("SCAN")
                .arg(cursor)
                .arg("MATCH")
                .arg(&pattern)
                .arg("COUNT")
                .arg(1_000)
                .query_async(&mut conn)
                .await
                .map_err(command("SCAN"))?;
            if !keys.is_empty() {
                let n: usize =
                    redis::cmd("DEL").arg(&keys).query_async(&mut conn).await.map_err(command("DEL"))?;
                deleted += n;
            }
            if next == 0 {
                return Ok(deleted);
            }
            cursor = next;
        }
    }
}

impl Transport for RedisTransport {
    type Subscription = RedisSubscription;

    async fn publish(&self, events: Vec<Event>) -> Result<(), TransportError> {
        if self.shared.is_closed() {
            return Err(TransportError::Closed);
        }
        let outgoing = self.shared.encode(&events)?;
        if outgoing.is_empty() {
            return Ok(());
        }
        self.shared.publish(&outgoing).await
    }

    async fn subscribe(&self, topics: Topics) -> Result<RedisSubscription, TransportError> {
        let (fixed, now) = match topics {
            Topics::All => (None, self.shared.known_topics().await?),
            Topics::Only(mut topics) => {
                topics.sort();
                topics.dedup();
                (Some(topics.clone()), topics)
            }
        };
        self.shared.ensure_groups(&now).await?;
        let feed = Feed::join(&self.shared, fixed, now);
        Ok(RedisSubscription::new(Arc::clone(&self.shared), feed))
    }

    fn close(&self) {
        self.shared.close();
    }

    /// True unless [`RedisConfig::keep_until_consumed`] is set: a publish returns once the
    /// server acknowledged the events (see the crate documentation on what Redis promises).
    fn stores_published(&self) -> bool {
        !self.shared.config.keep_until_consumed
    }

    /// True: a terminated event goes to the capped dead-letter stream, with its reason.
    fn keeps_dead_letters(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn glob_characters_of_a_prefix_are_escaped() {
        assert_eq!(super::glob_escape("a*b?[c]\\d"), "a\\*b\\?\\[c\\]\\\\d");
        assert_eq!(super::glob_escape("plain-prefix"), "plain-prefix");
    }
}
