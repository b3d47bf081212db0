//! The orchestrator's [`Transport`] on NATS JetStream: [`NatsTransport`].
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use std::sync::Arc;
//! use std::time::Duration;
//! use orchestrator::memory::InMemory;
//! use orchestrator::orchestration::WorkflowRecord;
//! use orchestrator::runtime::Node;
//! use orchestrator_nats::{NatsConfig, NatsTransport};
//!
//! let config = NatsConfig {
//!     capacity: 50_000,
//!     publish_timeout: Some(Duration::from_secs(30)),
//!     ..NatsConfig::new("nats://127.0.0.1:4222").deployment("ACME")
//! };
//! let transport = NatsTransport::connect(config).await?;
//! let store = Arc::new(InMemory::<WorkflowRecord>::default());
//! let node = Node::builder(store)
//!     .transport(transport.clone())
//!     .client("com.acme.client")
//!     // .service(..).orchestrator(..)
//!     .build()
//!     .await?;
//! // ... node.start(init).await?; ...
//! node.shutdown().await;
//! for dead in transport.dead_letters(0, 100).await? {
//!     println!("{:?} on delivery {}: {}", dead.topic, dead.attempt, dead.reason);
//! }
//! # Ok(())
//! # }
//! ```
//!
//! # Layout on the server
//!
//! * **One stream per deployment** ([`NatsConfig::stream`], default `ORCHESTRATOR`), on file
//!   storage with [`NatsConfig::replicas`] replicas and **work-queue retention**: an event is
//!   removed once a consumer acknowledges it. Its subjects are `<prefix>.t.>`
//!   ([`NatsConfig::subject_prefix`]).
//! * **A subject per topic**: the events whose `to` is `t` go to `<prefix>.t.<t>`, the topic's
//!   dots kept as NATS's hierarchy and every character NATS forbids in a subject token
//!   escaped (see [`subject`] for the exact, reversible mapping).
//! * **A durable pull consumer per topic**, named after the topic, shared by every worker of
//!   every process that subscribes to the topic: they compete for its events (a subscription
//!   to every topic, [`Topics::All`], uses one consumer of `<prefix>.t.>`; a work-queue stream
//!   refuses it next to per-topic consumers, so a deployment uses one way or the other).
//! * **A dead-letter stream** ([`NatsConfig::dead_letter_stream`]) on `<prefix>.dead.>`, which
//!   keeps the last [`NatsConfig::dead_letter_limit`] dead letters: read them with
//!   [`NatsTransport::dead_letters`].
//!
//! # Messages
//!
//! Events follow the CloudEvents NATS protocol binding in structured mode: the body is the
//! event's JSON, with the header `Content-Type: application/cloudevents+json`. Each carries a
//! `Nats-Msg-Id` made of its source and id (see [`subject::message_id`]): the server stores an
//! event published again within its duplicate window ([`NatsConfig::duplicate_window`]) once,
//! whether its first copy still waits in the stream or was consumed already. An event published
//! again after the window is stored again; the store's fencing and idempotency guard every
//! step, so a duplicate delivery changes nothing.
//!
//! A durable node ([`NodeBuilder::durable`](orchestrator::runtime::NodeBuilder::durable)) on
//! this transport lets an event leave its store's outbox as soon as the stream has stored it
//! ([`Transport::stores_published`]): its outbox holds only what a step committed and the stream
//! has not acknowledged yet, which the node publishes again when it next starts. So the
//! processes of a deployment can each keep their own store: an orchestrator's requests consumed
//! by a service in another process leave nothing behind.
//!
//! A publish that fails on a lost connection or a server that does not answer (a restart) is
//! tried again with backoff, under the same message id, for up to [`NatsConfig::outage`]; the
//! client reconnects by itself, and pull requests lost with the server expire and are made
//! again.
//!
//! A received message that is not a valid event of its topic (malformed bytes, not an Arvo
//! event, a `to` of another topic, a body larger than [`NatsConfig::max_event_bytes`]) is never
//! delivered to a handler: it becomes a dead letter with the reason. An event larger than the
//! server's `max_payload` is refused before anything of its batch is published, with
//! [`TransportError::Backend`] (permanent) whose source is [`NatsError::EventTooLarge`].
//!
//! # Arvo TypeScript on the same deployment
//!
//! The layout above is all another program needs to take part: Arvo services and clients
//! written in TypeScript with the real `arvo-core` and `arvo-event-handler` (2.2.13, from npm)
//! interoperate with Rust nodes over NATS. `interop/arvo/nats-wire.mjs` writes the layout again
//! for Node.js (subjects and their escaping, consumer names, message ids, dead letters);
//! `nats-service.mjs` hosts an Arvo service handler (`createArvoEventHandler`) on its topic's
//! durable consumer, and `nats-client.mjs` starts a Rust workflow with arvo-core's
//! `createArvoOrchestratorEventFactory(..).init(..)` and validates its completion event with
//! arvo-core. The test `orchestrator-nats/tests/arvo_interop.rs` runs them against a Rust
//! orchestrator ([`Node`](orchestrator::runtime::Node) with
//! [`remote`](orchestrator::runtime::NodeBuilder::remote) for the Arvo service): a Rust workflow
//! completes with the Arvo service's answer (or its `sys.….error` event), an Arvo client gets
//! the completion of the Rust workflow it started, and hostile messages from either side become
//! dead letters with their reason while the rest goes on (it needs `NATS_URL`, `node` and
//! `npm ci` in `interop/arvo`, and fails under `CI` without them).
//!
//! # Delivery and settlement
//!
//! Delivery is **at least once**. [`Delivery::ack`] publishes the products (and waits until the
//! stream has stored them), then acknowledges the event; a crash between the two delivers the
//! event again, which the store's idempotency covers. [`Delivery::nack`] is a `-NAK` with the
//! delay, [`Delivery::extend`] a progress acknowledgement (`+WPI`: the consumer's ack wait,
//! [`NatsConfig::ack_wait`], starts again), [`Delivery::terminate`] publishes the event with its
//! reason to the dead-letter stream, then terminates the delivery (`+TERM`). A delivery not
//! settled within the ack wait (its process died) is delivered again, to anyone.
//!
//! After [`NatsConfig::max_deliver`] deliveries an event becomes a dead letter: nacked on its
//! last delivery, or delivered once more (its last delivery was never settled: the consumer
//! died), it goes to the dead-letter stream with the reason. The transport counts deliveries
//! itself (the consumers' own `max_deliver` is unlimited), so a message is never stranded in the
//! stream by the server's limit.
//!
//! JetStream does not hold back the next event of a `(topic, subject)` pair while one is being
//! handled elsewhere: the transport is not *ordered* in the sense of
//! [`orchestrator::transport`]; the store's leases serialize each workflow's steps instead.
//!
//! # Backpressure
//!
//! [`Transport::publish`] waits while [`NatsConfig::capacity`] or more events wait undelivered
//! in the stream (the stream's messages less those its consumers hold), up to
//! [`NatsConfig::publish_timeout`], then fails with [`TransportError::Full`]. The products of an
//! ack are never refused for capacity: they are part of work already accepted.
//!
//! # Closing
//!
//! [`Transport::close`] refuses further publishes from outside ([`TransportError::Closed`]);
//! the transport's subscriptions go on receiving the events of their topics (those queued, and
//! those their handlers produce) and end once the stream holds none of their topics.
//!
//! # Durability
//!
//! The stream is on file storage, and the server acknowledges a publish once the event is
//! written to its store. The server leaves flushing to disk to the operating system and syncs
//! its files every `sync_interval` (two minutes by default): an acknowledged event survives a
//! crash of the server process, but a power loss of a lone server can lose the events of the
//! last interval. For acknowledged events to survive that, either run a cluster and set
//! [`NatsConfig::replicas`] to 3 (an acknowledgement then means a quorum of servers stored the
//! event), or configure the server with `jetstream { sync_interval: always }` (NATS 2.10 and
//! later), which syncs every write at a cost in throughput.
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
mod shared;
pub mod subject;
mod subscription;

use std::sync::Arc;

use orchestrator::event::Event;
use orchestrator::transport::{Topics, Transport, TransportError};

pub use config::NatsConfig;
pub use dead_letter::NatsDeadLetter;
pub use delivery::NatsDelivery;
pub use error::NatsError;
pub use subscription::NatsSubscription;

use error::Source;
use feed::Feed;
use shared::Shared;

/// The transport on NATS JetStream (see the [crate documentation](crate)). Clones share the
/// connection and its state.
#[derive(Clone)]
pub struct NatsTransport {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for NatsTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NatsTransport").field("config", &self.shared.config).finish_non_exhaustive()
    }
}

fn request_error(what: &'static str) -> impl Fn(&dyn std::fmt::Display) -> TransportError {
    move |e| NatsError::Request { what, source: Source::from(e.to_string()) }.into()
}

impl NatsTransport {
    /// Connects to the server of `config` and creates the event and dead-letter streams if they
    /// do not exist (an existing stream is used as it is).
    pub async fn connect(config: NatsConfig) -> Result<Self, TransportError> {
        Ok(Self { shared: Arc::new(Shared::connect(config).await?) })
    }

    /// The settings.
    pub fn config(&self) -> &NatsConfig {
        &self.shared.config
    }

    /// The NATS connection (to publish or read outside the transport).
    pub fn client(&self) -> &async_nats::Client {
        &self.shared.client
    }

    /// Up to `limit` dead letters after sequence `after` (0: from the oldest kept), oldest
    /// first.
    pub async fn dead_letters(
        &self,
        after: u64,
        limit: usize,
    ) -> Result<Vec<NatsDeadLetter>, TransportError> {
        let config = &self.shared.config;
        let stream = self
            .shared
            .js
            .get_stream(&config.dead_letter_stream)
            .await
            .map_err(|e| request_error("the dead-letter stream")(&e))?;
        let state = stream.cached_info().state.clone();
        let mut letters = Vec::new();
        let mut seq = after.saturating_add(1).max(state.first_sequence);
        while letters.len() < limit && seq <= state.last_sequence && state.messages > 0 {
            match stream.get_raw_message(seq).await {
                Ok(message) => letters.push(NatsDeadLetter::from_stream(&config.subject_prefix, &message)),
                Err(e) if e.kind() == async_nats::jetstream::stream::RawMessageErrorKind::NoMessageFound => {}
                Err(e) => return Err(request_error("a dead letter")(&e)),
            }
            seq += 1;
        }
        Ok(letters)
    }

    /// How many events wait undelivered (the figure backpressure is judged by: exact when
    /// the stream holds at least the capacity, else the stream's message count).
    pub async fn waiting(&self) -> Result<u64, TransportError> {
        self.shared.waiting().await
    }

    /// Deletes the event and dead-letter streams (and so their consumers and every event in
    /// them): the end of a deployment, or of a test.
    pub async fn delete_streams(&self) -> Result<(), TransportError> {
        let config = &self.shared.config;
        for name in [&config.stream, &config.dead_letter_stream] {
            match self.shared.js.delete_stream(name).await {
                Ok(_) => {}
                Err(e) if e.to_string().contains("not found") => {}
                Err(e) => return Err(request_error("deleting a stream")(&e)),
            }
        }
        Ok(())
    }
}

impl Transport for NatsTransport {
    type Subscription = NatsSubscription;

    async fn publish(&self, events: Vec<Event>) -> Result<(), TransportError> {
        if self.shared.is_closed() {
            return Err(TransportError::Closed);
        }
        let outgoing = self.shared.encode(&events)?;
        if outgoing.is_empty() {
            return Ok(());
        }
        self.shared.wait_for_room(outgoing.len()).await?;
        self.shared.publish(outgoing).await
    }

    async fn subscribe(&self, topics: Topics) -> Result<NatsSubscription, TransportError> {
        let (key, consumers) = match topics {
            Topics::All => (None, vec![self.shared.consumer(None).await?]),
            Topics::Only(mut topics) => {
                topics.sort();
                topics.dedup();
                let mut consumers = Vec::with_capacity(topics.len());
                for topic in &topics {
                    consumers.push(self.shared.consumer(Some(topic)).await?);
                }
                (Some(topics), consumers)
            }
        };
        let feed = Feed::join(&self.shared, key, consumers);
        Ok(NatsSubscription::new(Arc::clone(&self.shared), feed))
    }

    fn close(&self) {
        self.shared.close();
    }

    /// True: a publish returns once the stream stored the events (see the crate documentation
    /// on durability for what the server must be configured with so that this survives a power
    /// loss).
    fn stores_published(&self) -> bool {
        true
    }

    /// True: a terminated event goes to the deployment's dead-letter stream, with its reason.
    fn keeps_dead_letters(&self) -> bool {
        true
    }
}
