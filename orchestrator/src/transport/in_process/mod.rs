//! [`InProcessTransport`]: the transport of one process, an in-memory queue with per-(topic,
//! subject) lanes.
//!
//! * **Ordering.** Events with the same `to` and the same subject are delivered one at a time,
//!   in publish order: the next is delivered once the previous one is settled (acked,
//!   terminated, or nacked and delivered again). Other lanes are delivered meanwhile. A
//!   consumer takes the oldest queued event whose lane is free, so one consumer sees plain FIFO.
//!   Only this process consumes the transport, so its lanes are exclusive
//!   ([`Transport::exclusive_lanes`]): a [`Node`](crate::runtime::Node) on it runs a workflow's
//!   steps without a lease each, and two processes sharing a store are kept apart by the
//!   store's compare-and-swap.
//! * **Backpressure.** [`Transport::publish`] waits while `capacity` events are queued (events
//!   delivered and not settled do not count), for at most
//!   [`InProcessConfig::publish_timeout`], then fails with [`TransportError::Full`].
//! * **Products are never refused.** [`Delivery::ack`] queues what the delivery produced even
//!   over capacity, and after [`Transport::close`]: they are part of work already accepted, and
//!   waiting there would deadlock once every consumer is blocked on a full queue. **Memory
//!   bound:** outside publishers wait while `queued >= capacity`, so the queue holds at most
//!   `capacity`, plus one batch per waiting publisher, plus what in-flight work produces.
//! * **Retries.** [`Delivery::nack`] puts the event back at the front of its lane once the delay
//!   has passed; the lane stays busy meanwhile (per-subject order is kept), and the event counts
//!   as in flight, so [`InProcessTransport::wait_idle`] waits for pending retries. A delivery
//!   dropped unsettled is put back at once.
//! * **Close.** After [`Transport::close`], outside publishes fail with
//!   [`TransportError::Closed`]; subscriptions receive what is queued (and what it produces)
//!   and their `next` returns `None` once nothing is queued, delivered or waiting for a retry.
//!
//! Nothing sleeps or polls: waiting is done with [`tokio::sync::Notify`] (and, for retries, a
//! timer until the earliest is due).

mod delayed;
mod delivery;
mod inner;
mod lanes;
mod waiters;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

pub use delivery::{InProcessDelivery, InProcessSubscription};

use super::{Topics, Transport, TransportError};
use crate::event::Event;
#[cfg(doc)]
use crate::transport::Delivery;
use inner::Inner;

/// The default capacity (Arvo's `createSimpleEventBroker` uses the same).
pub const DEFAULT_CAPACITY: usize = 1000;

/// Settings of an [`InProcessTransport`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InProcessConfig {
    /// How many events may be queued before outside publishers wait. At least 1. Default
    /// [`DEFAULT_CAPACITY`].
    pub capacity: usize,
    /// How long [`Transport::publish`] waits while the queue is full before it fails with
    /// [`TransportError::Full`]; `None` (the default) waits as long as needed.
    pub publish_timeout: Option<Duration>,
    /// Records every accepted event, in acceptance order, for
    /// [`InProcessTransport::take_log`]. Off by default: the log grows until it is taken.
    pub log: bool,
    /// The largest event [`Transport::publish`] takes, serialized
    /// ([`TransportError::EventTooLarge`] beyond). Default
    /// [`DEFAULT_MAX_EVENT_BYTES`](crate::event::DEFAULT_MAX_EVENT_BYTES), the parsers' limit.
    pub max_event_bytes: usize,
}

impl Default for InProcessConfig {
    fn default() -> Self {
        Self {
            capacity: DEFAULT_CAPACITY,
            publish_timeout: None,
            log: false,
            max_event_bytes: crate::event::DEFAULT_MAX_EVENT_BYTES,
        }
    }
}

/// What an [`InProcessTransport`] holds now and has done so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TransportStats {
    /// Events waiting for a consumer now.
    pub queued: usize,
    /// Events delivered and not settled now.
    pub in_flight: usize,
    /// Nacked events waiting for their retry delay now.
    pub delayed: usize,
    /// Events accepted so far (published from outside, or produced by an acked delivery).
    pub published: u64,
    /// Deliveries acked so far.
    pub acked: u64,
    /// Deliveries nacked so far (not counting deliveries dropped unsettled).
    pub nacked: u64,
    /// Deliveries terminated so far.
    pub terminated: u64,
}

/// The in-process transport (see the [module documentation](self)). Cloning is cheap and shares
/// the queue.
#[derive(Clone)]
pub struct InProcessTransport {
    inner: Arc<Inner>,
}

impl InProcessTransport {
    /// A transport with these settings. Fails with [`TransportError::InvalidConfig`] when the
    /// capacity is 0.
    pub fn new(config: InProcessConfig) -> Result<Self, TransportError> {
        if config.capacity == 0 {
            return Err(TransportError::InvalidConfig { message: "capacity must be at least 1".to_owned() });
        }
        Ok(Self { inner: Arc::new(Inner::new(&config)) })
    }

    /// Joins the competing consumers of `topics` (what [`Transport::subscribe`] does, without
    /// an `await`).
    pub fn subscription(&self, topics: Topics) -> InProcessSubscription {
        let work = self.inner.subscribe(&topics);
        InProcessSubscription { inner: Arc::clone(&self.inner), topics, work }
    }

    /// Publishes without waiting: fails with [`TransportError::Full`] (waited zero) when
    /// `capacity` events are queued, otherwise as [`Transport::publish`].
    pub fn try_publish(&self, events: Vec<Event>) -> Result<(), TransportError> {
        self.inner.try_publish(events)
    }

    /// Waits until nothing is queued, nothing is delivered and unsettled, and no retry is
    /// pending.
    pub async fn wait_idle(&self) {
        self.inner.wait_idle().await;
    }

    /// Whether [`Transport::close`] was called.
    pub fn is_closed(&self) -> bool {
        self.inner.is_closed()
    }

    /// The capacity.
    pub fn capacity(&self) -> usize {
        self.inner.capacity
    }

    /// The counters and gauges now.
    pub fn stats(&self) -> TransportStats {
        self.inner.stats()
    }

    /// Every event accepted since the last call, in acceptance order; empty unless
    /// [`InProcessConfig::log`] is on.
    pub fn take_log(&self) -> Vec<Event> {
        self.inner.take_log()
    }
}

impl Transport for InProcessTransport {
    type Subscription = InProcessSubscription;

    async fn publish(&self, events: Vec<Event>) -> Result<(), TransportError> {
        self.inner.publish(events).await
    }

    async fn subscribe(&self, topics: Topics) -> Result<InProcessSubscription, TransportError> {
        Ok(self.subscription(topics))
    }

    fn close(&self) {
        self.inner.close();
    }

    /// True: only this process consumes the transport, and a lane hands out its next event once
    /// the previous one is settled (see the [module documentation](self)).
    fn exclusive_lanes(&self) -> bool {
        true
    }
}

impl fmt::Debug for InProcessTransport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InProcessTransport")
            .field("capacity", &self.capacity())
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}
#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::testing::{Profile, conformance};
    use crate::transport::{Delivery, Subscription};

    fn event(subject: &str) -> Event {
        Event::builder()
            .source("com.test.client")
            .r#type("com.test.a")
            .subject(subject)
            .data_json(serde_json::json!({}))
            .build()
            .expect("a valid event")
    }

    fn transport(capacity: usize, publish_timeout: Option<Duration>) -> InProcessTransport {
        InProcessTransport::new(InProcessConfig {
            capacity,
            publish_timeout,
            log: true,
            ..InProcessConfig::default()
        })
        .expect("valid config")
    }

    #[tokio::test]
    async fn publish_times_out_when_full_and_try_publish_does_not_wait() {
        let t = transport(1, Some(Duration::from_millis(50)));
        t.try_publish(vec![event("a")]).expect("room for one");
        assert!(
            matches!(t.try_publish(vec![event("b")]), Err(TransportError::Full { capacity: 1, waited }) if waited.is_zero())
        );
        match t.publish(vec![event("b")]).await {
            Err(TransportError::Full { capacity: 1, waited }) => {
                assert_eq!(waited, Duration::from_millis(50))
            }
            other => panic!("expected Full, got {other:?}"),
        }
        assert_eq!(t.stats().published, 1);
        assert_eq!(t.take_log().len(), 1);
        assert!(
            InProcessTransport::new(InProcessConfig { capacity: 0, ..InProcessConfig::default() }).is_err()
        );
    }

    #[tokio::test]
    async fn wait_idle_waits_for_pending_retries() {
        let t = transport(4, None);
        t.try_publish(vec![event("a")]).expect("room");
        let mut subscription = t.subscription(Topics::All);
        let first = subscription.next().await.expect("a delivery");
        let delay = Duration::from_millis(100);
        let nacked = tokio::time::Instant::now();
        first.nack(delay).await.expect("nack");
        let stats = t.stats();
        assert_eq!((stats.queued, stats.in_flight, stats.delayed, stats.nacked), (0, 0, 1, 1));
        let consumer = tokio::spawn(async move {
            while let Some(delivery) = subscription.next().await {
                delivery.ack(vec![]).await.expect("ack");
            }
        });
        t.wait_idle().await;
        assert!(nacked.elapsed() >= delay, "idle only once the retry was delivered and acked");
        assert_eq!((t.stats().acked, t.stats().delayed), (1, 0));
        t.close();
        consumer.await.expect("the consumer ends once closed and drained");
    }

    fn to(topic: &str, subject: &str) -> Event {
        Event::builder()
            .source("com.test.client")
            .r#type(topic)
            .subject(subject)
            .data_json(serde_json::json!({}))
            .build()
            .expect("a valid event")
    }

    /// Consumers waiting on different topics: an event wakes one that listens on its topic,
    /// whichever filters wait beside it, and the others keep waiting for theirs.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_waiting_consumer_of_the_events_topic_gets_it_whatever_else_waits() {
        let t = transport(16, None);
        let only = |topic: &str| Topics::Only(vec![topic.to_owned()]);
        let wait = Duration::from_secs(5);
        let consumer = |topics: Topics| {
            let mut subscription = t.subscription(topics);
            tokio::spawn(async move {
                let delivery = subscription.next().await.expect("a delivery");
                let event_type = delivery.event().r#type().to_owned();
                delivery.ack(vec![]).await.expect("ack");
                event_type
            })
        };
        // Four consumers of `a` (one group), two of `b`, one of both.
        let a: Vec<_> = (0..4).map(|_| consumer(only("com.test.a"))).collect();
        let b: Vec<_> = (0..2).map(|_| consumer(only("com.test.b"))).collect();
        let both = consumer(Topics::Only(vec!["com.test.b".to_owned(), "com.test.c".to_owned()]));
        tokio::time::sleep(Duration::from_millis(50)).await;

        // Three events of `b`: the three consumers that listen on `b` take them, none of `a`.
        t.publish((0..3).map(|n| to("com.test.b", &format!("s{n}"))).collect()).await.expect("publish");
        for handle in b.into_iter().chain([both]) {
            let got = tokio::time::timeout(wait, handle).await.expect("woken").expect("no panic");
            assert_eq!(got, "com.test.b");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(a.iter().all(|h| !h.is_finished()), "`a`'s consumers wait on");
        // Four events of `a`, published one at a time: each wakes one of `a`'s consumers.
        for n in 0..4 {
            t.publish(vec![to("com.test.a", &format!("s{n}"))]).await.expect("publish");
        }
        for handle in a {
            let got = tokio::time::timeout(wait, handle).await.expect("woken").expect("no panic");
            assert_eq!(got, "com.test.a");
        }
        assert_eq!(t.stats().acked, 7);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn in_process_transport_conforms() {
        let capacity = 8;
        conformance(
            || {
                InProcessTransport::new(InProcessConfig { capacity, ..InProcessConfig::default() })
                    .expect("valid config")
            },
            Profile { ordered: true, capacity },
        )
        .await;
    }
}
