//! What a transport, its feeds and its deliveries share: the connection, the streams, the
//! consumers, the closed flag; and the operations on them (publish, dead-letter, count).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, PoisonError, Weak};
use std::time::{Duration, Instant};

use async_nats::HeaderMap;
use async_nats::jetstream::consumer::{AckPolicy, DeliverPolicy, PullConsumer, pull};
use async_nats::jetstream::context::{PublishError, PublishErrorKind};
use async_nats::jetstream::publish::PublishAck;
use async_nats::jetstream::stream::{self, DiscardPolicy, RetentionPolicy, StorageType};
use async_nats::jetstream::{self, AckKind};
use bytes::Bytes;
use futures_util::StreamExt;
use orchestrator::event::Event;
use orchestrator::transport::TransportError;
use tokio::sync::Notify;

use crate::config::NatsConfig;
use crate::error::NatsError;
use crate::feed::Feed;
use crate::subject::{consumer_name, event_subject, message_id};

/// The content type of a structured-mode CloudEvent (the CloudEvents NATS protocol binding).
pub(crate) const CLOUDEVENTS_JSON: &str = "application/cloudevents+json";
/// Header: why a message became a dead letter.
pub(crate) const REASON: &str = "Orchestrator-Reason";
/// Header: on which delivery it became one.
pub(crate) const ATTEMPT: &str = "Orchestrator-Attempt";
/// Header: the subject it was published to.
pub(crate) const ORIGINAL_SUBJECT: &str = "Orchestrator-Subject";
/// Header: its sequence in the event stream.
pub(crate) const ORIGINAL_SEQUENCE: &str = "Orchestrator-Sequence";

/// Header: the size of a body kept cut (too large with the dead letter's headers).
pub(crate) const TRUNCATED: &str = "Orchestrator-Truncated";

/// The longest reason kept in a dead letter's header (longer ones are cut).
const MAX_REASON: usize = 4_096;

/// An event ready to publish: its subject, headers and body.
pub(crate) struct Outgoing {
    subject: String,
    headers: HeaderMap,
    body: Bytes,
}

/// The feeds of a transport, by topics (`None`: all).
pub(crate) type Feeds = Mutex<HashMap<Option<Vec<String>>, Weak<Feed>>>;

/// The state shared by a transport, its subscriptions and its deliveries.
pub(crate) struct Shared {
    pub(crate) config: NatsConfig,
    pub(crate) client: async_nats::Client,
    pub(crate) js: jetstream::Context,
    closed: AtomicBool,
    /// Woken when the transport closes.
    pub(crate) closing: Notify,
    pub(crate) feeds: Feeds,
    /// The durable consumers met so far, by name.
    consumers: tokio::sync::Mutex<HashMap<String, PullConsumer>>,
}

/// A boxed error for [`NatsError`].
pub(crate) fn boxed(e: impl std::error::Error + Send + Sync + 'static) -> crate::error::Source {
    Box::new(e)
}

/// The pause after `failures` failures in a row: 50 ms doubling up to 5 s, with jitter.
pub(crate) fn backoff(failures: u32) -> Duration {
    let base = Duration::from_millis(50).saturating_mul(1 << failures.min(7)).min(Duration::from_secs(5));
    base.mul_f64(0.5 + fastrand::f64() / 2.0)
}

/// `text` without line breaks or control characters (header values allow neither), cut to
/// [`MAX_REASON`] bytes.
fn header_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len().min(MAX_REASON));
    for c in text.chars() {
        if out.len() + c.len_utf8() > MAX_REASON {
            break;
        }
        out.push(if c.is_control() { ' ' } else { c });
    }
    out
}

/// Creates the stream `config` describes unless it exists. The processes of a new deployment
/// may connect at the same moment: when another one created the stream between this one's
/// look-up and its create (NATS 2.9 refuses that create with "subjects overlap"), the stream it
/// made is used.
async fn ensure_stream(js: &jetstream::Context, config: stream::Config) -> Result<(), NatsError> {
    let name = config.name.clone();
    match js.get_or_create_stream(config).await {
        Ok(_) => Ok(()),
        Err(create) => match js.get_stream(&name).await {
            Ok(_) => Ok(()),
            Err(_) => Err(NatsError::Setup { what: format!("stream {name}"), source: boxed(create) }),
        },
    }
}

impl Shared {
    /// Connects, and creates the event and dead-letter streams if they do not exist.
    pub(crate) async fn connect(config: NatsConfig) -> Result<Self, TransportError> {
        config.validate()?;
        let client = async_nats::ConnectOptions::new()
            .name(format!("orchestrator-nats/{}", config.stream))
            .request_timeout(Some(config.request_timeout))
            .connect(config.url.as_str())
            .await
            .map_err(|e| NatsError::Connect { url: config.url.clone(), source: boxed(e) })?;
        let js = jetstream::ContextBuilder::new().timeout(config.request_timeout).build(client.clone());
        let events = stream::Config {
            name: config.stream.clone(),
            subjects: vec![format!("{}.t.>", config.subject_prefix)],
            retention: RetentionPolicy::WorkQueue,
            storage: StorageType::File,
            num_replicas: config.replicas,
            duplicate_window: config.duplicate_window,
            description: Some("orchestrator events, by topic (orchestrator-nats)".to_owned()),
            ..stream::Config::default()
        };
        ensure_stream(&js, events).await?;
        let dead = stream::Config {
            name: config.dead_letter_stream.clone(),
            subjects: vec![format!("{}.dead.>", config.subject_prefix)],
            retention: RetentionPolicy::Limits,
            storage: StorageType::File,
            num_replicas: config.replicas,
            max_messages: config.dead_letter_limit,
            discard: DiscardPolicy::Old,
            duplicate_window: config.duplicate_window,
            description: Some("orchestrator dead letters (orchestrator-nats)".to_owned()),
            ..stream::Config::default()
        };
        ensure_stream(&js, dead).await?;
        Ok(Self {
            config,
            client,
            js,
            closed: AtomicBool::new(false),
            closing: Notify::new(),
            feeds: Mutex::default(),
            consumers: tokio::sync::Mutex::default(),
        })
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::Release);
        self.closing.notify_waiters();
    }

    pub(crate) fn lock_feeds(&self) -> std::sync::MutexGuard<'_, HashMap<Option<Vec<String>>, Weak<Feed>>> {
        self.feeds.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The durable pull consumer of `topic` (`None`: every topic), created if it does not
    /// exist. Every process of the deployment shares it: its workers compete for the topic's
    /// events.
    pub(crate) async fn consumer(&self, topic: Option<&str>) -> Result<PullConsumer, TransportError> {
        let name = consumer_name(topic);
        let mut consumers = self.consumers.lock().await;
        if let Some(consumer) = consumers.get(&name) {
            return Ok(consumer.clone());
        }
        let prefix = &self.config.subject_prefix;
        let filter_subject = match topic {
            Some(topic) => event_subject(prefix, topic),
            None => format!("{prefix}.t.>"),
        };
        let config = pull::Config {
            durable_name: Some(name.clone()),
            description: Some(match topic {
                Some(topic) => format!("orchestrator topic {topic}"),
                None => "orchestrator, every topic".to_owned(),
            }),
            deliver_policy: DeliverPolicy::All,
            ack_policy: AckPolicy::Explicit,
            ack_wait: self.config.ack_wait,
            // The transport counts deliveries itself (see `Feed::admit`): a server-side limit
            // would strand a message whose last delivery went to a consumer that died.
            max_deliver: -1,
            filter_subject,
            num_replicas: self.config.replicas,
            ..pull::Config::default()
        };
        let setup = |e: &dyn std::fmt::Display| NatsError::Setup {
            what: format!("consumer {name} on stream {}", self.config.stream),
            source: e.to_string().into(),
        };
        let stream = self.js.get_stream_no_info(&self.config.stream).await.map_err(|e| setup(&e))?;
        // As with the streams: another process may create the consumer between this one's
        // look-up and its create; then the consumer it made is used.
        let consumer: PullConsumer = match stream.get_or_create_consumer(&name, config).await {
            Ok(consumer) => consumer,
            Err(create) => stream.get_consumer(&name).await.map_err(|_| setup(&create))?,
        };
        consumers.insert(name, consumer.clone());
        Ok(consumer)
    }

    /// `events` ready to publish, in order: [`TransportError::MissingTo`] for the first
    /// without `to`, [`NatsError::EventTooLarge`] for the first larger than the server takes.
    pub(crate) fn encode(&self, events: &[Event]) -> Result<Vec<Outgoing>, TransportError> {
        let max = self.client.server_info().max_payload;
        let mut out = Vec::with_capacity(events.len());
        for event in events {
            let Some(to) = event.to() else {
                return Err(TransportError::MissingTo { id: event.id().to_owned() });
            };
            let body = Bytes::from(event.to_json_vec());
            let msg_id = message_id(event.source(), event.id());
            let mut headers = HeaderMap::new();
            headers.insert("Content-Type", CLOUDEVENTS_JSON);
            headers.insert(async_nats::header::NATS_MESSAGE_ID, msg_id.as_str());
            // `NATS/1.0\r\n`, each `name: value\r\n`, the closing `\r\n`.
            let header_size = 10
                + "Content-Type: \r\n".len()
                + CLOUDEVENTS_JSON.len()
                + "Nats-Msg-Id: \r\n".len()
                + msg_id.len()
                + 2;
            let size = body.len() + header_size;
            if max > 0 && size > max {
                return Err(NatsError::EventTooLarge { id: event.id().to_owned(), size, max }.into());
            }
            out.push(Outgoing { subject: event_subject(&self.config.subject_prefix, to), headers, body });
        }
        Ok(out)
    }

    /// Publishes `outgoing` in order and waits until the stream has acknowledged each.
    ///
    /// An event whose publish or acknowledgement fails (a lost connection, a server restarting
    /// or not answering) is published again with backoff, with the same message id, until
    /// [`NatsConfig::outage`] has passed since the first failure; then the error is returned
    /// (transient). Only an event larger than the server takes fails at once.
    ///
    /// An event the server drops as a duplicate (same `Nats-Msg-Id` within the duplicate
    /// window) was stored before: it is waiting, or it was consumed already (a node publishing
    /// again what a crash left in its outbox), and either way it is not stored twice.
    pub(crate) async fn publish(&self, outgoing: Vec<Outgoing>) -> Result<(), TransportError> {
        let mut acks = Vec::with_capacity(outgoing.len());
        for Outgoing { subject, headers, body } in outgoing {
            let size = body.len();
            let sent = self.js.publish_with_headers(subject.clone(), headers.clone(), body.clone()).await;
            match sent {
                Err(e) if e.kind() == PublishErrorKind::MaxPayloadExceeded => {
                    let max = self.client.server_info().max_payload;
                    return Err(NatsError::EventTooLarge { id: subject, size, max }.into());
                }
                sent => acks.push((sent, Outgoing { subject, headers, body })),
            }
        }
        for (sent, outgoing) in acks {
            let first = match sent {
                Ok(ack) => ack.await,
                Err(e) => Err(e),
            };
            if let Err(e) = first {
                self.publish_again(&outgoing, e).await?;
            }
        }
        Ok(())
    }

    /// One publish of `outgoing`, acknowledged.
    async fn publish_one(&self, outgoing: &Outgoing) -> Result<PublishAck, PublishError> {
        let Outgoing { subject, headers, body } = outgoing;
        self.js.publish_with_headers(subject.clone(), headers.clone(), body.clone()).await?.await
    }

    /// Publishes `outgoing` again after its first try failed with `error`, with backoff, until
    /// it is acknowledged or [`NatsConfig::outage`] has passed. Only the failures of an outage
    /// are tried again: no answer in time (or the connection lost while waiting for it), no
    /// JetStream answering for the stream (it is starting up), too many acknowledgements
    /// awaited; any other fails at once.
    async fn publish_again(
        &self,
        outgoing: &Outgoing,
        mut error: PublishError,
    ) -> Result<PublishAck, TransportError> {
        let started = Instant::now();
        let mut failures = 0;
        loop {
            let outage = matches!(
                error.kind(),
                PublishErrorKind::TimedOut
                    | PublishErrorKind::BrokenPipe
                    | PublishErrorKind::StreamNotFound
                    | PublishErrorKind::MaxAckPending
            );
            if !outage || started.elapsed() >= self.config.outage {
                let subject = outgoing.subject.clone();
                return Err(NatsError::Publish { subject, source: boxed(error) }.into());
            }
            tracing::warn!(subject = outgoing.subject, %error, "publishing failed; trying again");
            tokio::time::sleep(backoff(failures)).await;
            failures += 1;
            match self.publish_one(outgoing).await {
                Ok(ack) => return Ok(ack),
                Err(e) => error = e,
            }
        }
    }

    /// How many events wait undelivered: the stream's messages less those its consumers hold
    /// unacknowledged (asked of the consumers only when the stream holds `capacity` or more).
    pub(crate) async fn waiting(&self) -> Result<u64, TransportError> {
        let request = |e: &dyn std::fmt::Display| NatsError::Request {
            what: "the event stream's depth",
            source: e.to_string().into(),
        };
        let stream = self.js.get_stream(&self.config.stream).await.map_err(|e| request(&e))?;
        let messages = stream.cached_info().state.messages;
        if messages < self.config.capacity as u64 {
            return Ok(messages);
        }
        let mut held = 0_u64;
        let mut consumers = stream.consumers();
        while let Some(info) = consumers.next().await {
            held += info.map_err(|e| request(&e))?.num_ack_pending as u64;
        }
        Ok(messages.saturating_sub(held))
    }

    /// Waits while `capacity` or more events wait undelivered; [`TransportError::Full`] after
    /// the publish timeout, [`TransportError::Closed`] if the transport closes meanwhile.
    pub(crate) async fn wait_for_room(&self, batch: usize) -> Result<(), TransportError> {
        let capacity = self.config.capacity;
        let started = Instant::now();
        let mut pause = Duration::from_millis(5);
        let mut failures = 0;
        loop {
            let waiting = match self.waiting().await {
                Ok(waiting) => usize::try_from(waiting).unwrap_or(usize::MAX),
                // A lost connection or a server restarting: asked again, up to `outage`.
                Err(e) if started.elapsed() < self.config.outage && !self.is_closed() => {
                    tracing::warn!(error = %e, "the stream's depth is unknown; asking again");
                    tokio::time::sleep(backoff(failures)).await;
                    failures += 1;
                    continue;
                }
                Err(e) => return Err(e),
            };
            if waiting == 0 || waiting.saturating_add(batch) <= capacity {
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

    /// How many events of `topics` (`None`: all) the stream still holds.
    pub(crate) async fn remaining(&self, topics: &Option<Vec<String>>) -> Result<u64, TransportError> {
        let request = |e: &dyn std::fmt::Display| NatsError::Request {
            what: "the events left on a subscription's topics",
            source: e.to_string().into(),
        };
        let prefix = &self.config.subject_prefix;
        let stream = self.js.get_stream(&self.config.stream).await.map_err(|e| request(&e))?;
        let Some(topics) = topics else {
            return Ok(stream.cached_info().state.messages);
        };
        let subjects: Vec<String> = topics.iter().map(|t| event_subject(prefix, t)).collect();
        let filter = match subjects.as_slice() {
            [one] => one.clone(),
            _ => format!("{prefix}.t.>"),
        };
        let mut counts = stream.info_with_subjects(filter).await.map_err(|e| request(&e))?;
        let mut left = 0_u64;
        while let Some(entry) = counts.next().await {
            let (subject, count) = entry.map_err(|e| request(&e))?;
            if subjects.contains(&subject) {
                left += count as u64;
            }
        }
        Ok(left)
    }

    /// Moves `message` (delivered `attempt` times) to the dead letters with `reason`: publishes
    /// it to the dead-letter stream (awaiting the stream's acknowledgement), then terminates
    /// the delivery (`+TERM`, confirmed by the server), which removes it from the event stream.
    pub(crate) async fn dead_letter(
        &self,
        message: &jetstream::Message,
        attempt: u32,
        reason: &str,
    ) -> Result<(), TransportError> {
        let prefix = &self.config.subject_prefix;
        let tokens = message.subject.as_str().strip_prefix(prefix).and_then(|s| s.strip_prefix(".t."));
        let subject = format!("{prefix}.dead.{}", tokens.unwrap_or("~"));
        let sequence = message.info().map(|info| info.stream_sequence).unwrap_or(0);
        let mut headers = HeaderMap::new();
        if let Some(content_type) = message.headers.as_ref().and_then(|h| h.get("Content-Type")) {
            headers.insert("Content-Type", content_type.as_str());
        }
        headers.insert(REASON, header_text(reason).as_str());
        headers.insert(ATTEMPT, attempt.to_string().as_str());
        headers.insert(ORIGINAL_SUBJECT, header_text(message.subject.as_str()).as_str());
        headers.insert(ORIGINAL_SEQUENCE, sequence.to_string().as_str());
        // A second try of the same dead letter (the first's `+TERM` was lost) is stored once.
        let msg_id = format!("dead-{}-{sequence}", self.config.stream);
        headers.insert(async_nats::header::NATS_MESSAGE_ID, msg_id.as_str());
        // The headers added may take a body that just fit over the server's limit: such a body
        // is kept cut, with its size.
        let max = self.client.server_info().max_payload;
        let mut body = message.payload.clone();
        if max > 0 && body.len() + 2 * MAX_REASON + 1_024 > max {
            headers.insert(TRUNCATED, body.len().to_string().as_str());
            body.truncate(max.saturating_sub(2 * MAX_REASON + 1_024));
        }
        tracing::warn!(subject = message.subject.as_str(), attempt, reason, "dead letter");
        self.publish(vec![Outgoing { subject, headers, body }]).await?;
        message
            .double_ack_with(AckKind::Term)
            .await
            .map_err(|source| TransportError::from(NatsError::Settle { source }))
    }
}
