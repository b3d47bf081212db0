//! [`Dispatcher`]: routes each delivery to the handler of its `to`, runs it with panics
//! contained, and settles the delivery by the one [`Settlement`] rule, whatever the transport.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::task::JoinHandle;

use super::collectors::Collectors;
use super::dead_letters::{DeadLetterReason, DeadLetters};
use super::domained::{Domained, DomainedEvent, DomainedFn};
use super::heartbeat::Heartbeat;
use super::retry::RetryPolicy;
use super::settlement::{Outcome, Settlement};
use crate::event::Event;
use crate::handler::DynEventHandler;
use crate::memory::DynDeadLetterStore;
use crate::outbox::DynOutbox;
use crate::transport::{Delivery, Subscription, Topics, Transport, TransportError};
use crate::util::panic::{CatchPanic, catch};

/// How long a dead letter whose bury failed transiently waits before it is tried again.
pub(crate) const BURY_RETRY: std::time::Duration = std::time::Duration::from_secs(1);

/// Why a [`Dispatcher`] could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DispatcherError {
    /// Two handlers were registered on one topic.
    #[error("two handlers listen on topic `{topic}`: a dispatcher needs exactly one handler per topic")]
    DuplicateHandler {
        /// The topic.
        topic: String,
    },
}

/// What a [`Dispatcher`] has done so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DispatchStats {
    /// Deliveries handed to a handler (a retried event counts once per attempt).
    pub delivered: u64,
    /// Deliveries collected by a waiting caller (the broker's `resolve`).
    pub collected: u64,
    /// Events returned by handlers, domained or not.
    pub produced: u64,
    /// Produced events that carried a domain.
    pub domained: u64,
    /// Deliveries nacked to be tried again (transient failures).
    pub retried: u64,
    /// Events reported as dead letters.
    pub dead_lettered: u64,
    /// Settlements (ack, nack, terminate) the transport failed; logged with `tracing::error!`.
    /// The transport delivers such an event again.
    pub settle_failures: u64,
}

#[derive(Default)]
struct Counters {
    delivered: AtomicU64,
    collected: AtomicU64,
    produced: AtomicU64,
    domained: AtomicU64,
    retried: AtomicU64,
    dead_lettered: AtomicU64,
    settle_failures: AtomicU64,
}

fn bump(counter: &AtomicU64) {
    counter.fetch_add(1, Ordering::Relaxed);
}

/// What [`Dispatcher::settle`] did with a delivery.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Settled {
    /// Acknowledged: handled (its products published), or collected by a waiting caller.
    Acked,
    /// Nacked after a transient failure, to be delivered again after this delay.
    Retried(std::time::Duration),
    /// Reported as a dead letter and terminated.
    DeadLettered,
    /// Handed back unhandled (a nack without delay), to be delivered again at once.
    HandedBack,
    /// The transport failed to settle it (logged and counted); it delivers the event again.
    Failed {
        /// The settlement tried: `ack`, `nack` or `terminate`.
        settlement: &'static str,
        /// The transport's error.
        error: String,
    },
}

/// The transport-independent half of the runtime: the routes (topic → handler), the retry
/// policy, and the outlets (dead letters, domained events). `P` is what the domained-events
/// callback publishes replies with.
pub struct Dispatcher<P> {
    routes: HashMap<String, Arc<dyn DynEventHandler>>,
    retry: RetryPolicy,
    heartbeat: Option<Heartbeat>,
    dead_letters: DeadLetters,
    domained: Domained<P>,
    collectors: Collectors,
    counters: Counters,
    /// The outbox the products leave once the transport stored them (a durable node on a
    /// transport that [stores what it accepts](Transport::stores_published)).
    released_by_transport: Option<Arc<dyn DynOutbox>>,
    /// Where dead letters are buried before their delivery is let go (a node whose transport
    /// [keeps none](Transport::keeps_dead_letters), over a store that keeps them).
    graveyard: Option<Arc<dyn DynDeadLetterStore>>,
    /// The largest product published, once serialized.
    max_event_bytes: usize,
}

impl<P: Clone + Send + Sync + 'static> Dispatcher<P> {
    /// Routes each handler's [`source`](crate::handler::EventHandler::source) topic to it. Two
    /// handlers on one topic are refused. Defaults: [`RetryPolicy::default`], no heartbeat
    /// (the in-process transport has no visibility deadline), dead letters kept
    /// in a buffer of [`DEFAULT_DEAD_LETTER_CAPACITY`](super::DEFAULT_DEAD_LETTER_CAPACITY),
    /// domained events kept.
    pub fn new(
        handlers: impl IntoIterator<Item = Arc<dyn DynEventHandler>>,
    ) -> Result<Self, DispatcherError> {
        let mut routes = HashMap::new();
        for handler in handlers {
            match routes.entry(topic_of(&*handler).to_owned()) {
                Entry::Occupied(entry) => {
                    return Err(DispatcherError::DuplicateHandler { topic: entry.key().clone() });
                }
                Entry::Vacant(entry) => {
                    entry.insert(handler);
                }
            }
        }
        Ok(Self {
            routes,
            retry: RetryPolicy::default(),
            heartbeat: None,
            dead_letters: DeadLetters::default(),
            domained: Domained::default(),
            collectors: Collectors::default(),
            counters: Counters::default(),
            released_by_transport: None,
            graveyard: None,
            max_event_bytes: crate::event::DEFAULT_MAX_EVENT_BYTES,
        })
    }

    /// Sets the retry policy for transient failures.
    #[must_use]
    pub fn with_retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }

    /// Sets how deliveries are kept claimed while their handlers run (`None`, the default: never
    /// extended; a [`Node`](super::Node) sets [`Heartbeat::default`]). The heartbeat needs the
    /// Tokio runtime's time driver.
    #[must_use]
    pub fn with_heartbeat(mut self, heartbeat: Option<Heartbeat>) -> Self {
        self.heartbeat = heartbeat;
        self
    }

    /// Sets the largest event a handler may produce, once serialized (default
    /// [`DEFAULT_MAX_EVENT_BYTES`](crate::event::DEFAULT_MAX_EVENT_BYTES), the parsers' limit):
    /// a delivery whose handler produced a larger event publishes none of its products and is a
    /// dead letter ([`DeadLetterReason::EventTooLarge`]), whatever the transport.
    #[must_use]
    pub fn with_max_event_bytes(mut self, max: usize) -> Self {
        self.max_event_bytes = max;
        self
    }

    /// The largest event a handler may produce ([`Dispatcher::with_max_event_bytes`]).
    pub fn max_event_bytes(&self) -> usize {
        self.max_event_bytes
    }

    /// Sets where dead letters go.
    #[must_use]
    pub fn with_dead_letters(mut self, dead_letters: DeadLetters) -> Self {
        self.dead_letters = dead_letters;
        self
    }

    /// Hands domained events to `callback` (instead of keeping them). The worker awaits the
    /// returned future before it settles the delivery that produced the event.
    #[must_use]
    pub fn with_on_domained(mut self, callback: DomainedFn<P>) -> Self {
        self.domained.callback = Some(callback);
        self
    }

    /// Lets the products of each acknowledged delivery leave `outbox` once the transport has
    /// them: for a transport that [stores what it accepts](Transport::stores_published).
    #[must_use]
    pub(crate) fn with_release_on_ack(mut self, outbox: Arc<dyn DynOutbox>) -> Self {
        self.released_by_transport = Some(outbox);
        self
    }

    /// Buries each dead letter in `store` before its delivery is terminated (see
    /// [`DeadLetterStore`](crate::memory::DeadLetterStore)): for a transport that
    /// [keeps none](Transport::keeps_dead_letters).
    #[must_use]
    pub(crate) fn with_graveyard(mut self, store: Arc<dyn DynDeadLetterStore>) -> Self {
        self.graveyard = Some(store);
        self
    }

    /// The handler topics.
    pub fn topics(&self) -> impl Iterator<Item = &str> {
        self.routes.keys().map(String::as_str)
    }

    /// Whether a handler listens on `topic`.
    pub fn handles(&self, topic: &str) -> bool {
        self.routes.contains_key(topic)
    }

    /// The retry policy.
    pub fn retry_policy(&self) -> &RetryPolicy {
        &self.retry
    }

    /// Where dead letters go (and those kept).
    pub fn dead_letters(&self) -> &DeadLetters {
        &self.dead_letters
    }

    /// The domained events kept so far (none are kept when a callback is set).
    pub fn take_domained(&self) -> Vec<DomainedEvent> {
        self.domained.take()
    }

    /// The counters now.
    pub fn stats(&self) -> DispatchStats {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        let c = &self.counters;
        DispatchStats {
            delivered: get(&c.delivered),
            collected: get(&c.collected),
            produced: get(&c.produced),
            domained: get(&c.domained),
            retried: get(&c.retried),
            dead_lettered: get(&c.dead_lettered),
            settle_failures: get(&c.settle_failures),
        }
    }

    pub(crate) fn collectors(&self) -> &Collectors {
        &self.collectors
    }

    /// Subscribes `workers` times to `topics` and runs a worker task on each subscription,
    /// until the transport is closed and drained.
    pub async fn spawn_workers<T: Transport>(
        self: &Arc<Self>,
        transport: &T,
        topics: Topics,
        workers: usize,
        publisher: P,
    ) -> Result<Vec<JoinHandle<()>>, TransportError> {
        let mut handles = Vec::with_capacity(workers);
        for _ in 0..workers {
            let subscription = transport.subscribe(topics.clone()).await?;
            let dispatcher = Arc::clone(self);
            let publisher = publisher.clone();
            handles.push(tokio::spawn(async move { dispatcher.run_worker(subscription, publisher).await }));
        }
        Ok(handles)
    }

    /// Dispatches every delivery of `subscription` until it ends.
    pub async fn run_worker<S: Subscription>(&self, mut subscription: S, publisher: P) {
        while let Some(delivery) = subscription.next().await {
            self.dispatch(delivery, &publisher).await;
        }
    }

    /// Dispatches one delivery: routes it by `to` (no handler: a waiting collector takes it, or
    /// it is a dead letter), runs the handler with panics contained, and settles it: products
    /// with a domain go to the domained-events callback (awaited) or are kept, the others are
    /// published by the ack; a transient failure is nacked with the retry delay; a dead letter
    /// is reported, then terminated.
    pub async fn dispatch<D: Delivery>(&self, delivery: D, publisher: &P) {
        let Some(handler) = self.route(delivery.event()) else {
            self.unrouted(delivery).await;
            return;
        };
        self.begin();
        let outcome = {
            let event = delivery.event();
            // Through `&dyn`, not `&Arc<dyn>`: the `Arc` is itself a handler, one layer more.
            let handler: &dyn DynEventHandler = &**handler;
            match catch(|| handler.execute_dyn(event)) {
                Ok(execution) => match &self.heartbeat {
                    Some(heartbeat) => {
                        let execution = Box::pin(crate::event::under_limit(self.max_event_bytes, execution));
                        heartbeat.keep_alive(&delivery, CatchPanic(execution)).await
                    }
                    None => {
                        CatchPanic(Box::pin(crate::event::under_limit(self.max_event_bytes, execution))).await
                    }
                },
                Err(message) => Err(message),
            }
        };
        self.settle(delivery, outcome, publisher).await;
    }

    /// The handler of `event`'s `to`, if one listens on it.
    pub(crate) fn route(&self, event: &Event) -> Option<&Arc<dyn DynEventHandler>> {
        event.to().and_then(|to| self.routes.get(to))
    }

    /// Counts a delivery handed to a handler.
    pub(crate) fn begin(&self) {
        bump(&self.counters.delivered);
    }

    /// Settles `delivery` by the one [`Settlement`] rule, given what running its handler gave:
    /// success → the products are sorted (domained ones to the callback or kept, the others
    /// published by the ack); a transient failure → nack with the retry delay (a dead letter
    /// once the retries are exhausted); a permanent failure or a panic → a dead letter,
    /// reported then terminated; a product larger than
    /// [`Dispatcher::max_event_bytes`] → a dead letter, nothing published. Returns what was done. Used by [`Dispatcher::dispatch`] and by
    /// the workers of a [pool](super::pool).
    pub async fn settle<D: Delivery>(&self, delivery: D, outcome: Outcome, publisher: &P) -> Settled {
        let attempt = delivery.attempt();
        match Settlement::classify(outcome, attempt, &self.retry) {
            Settlement::Ack(produced) => {
                // The last gate before the transport, the same for every transport.
                if let Some(too_large) =
                    produced.iter().find_map(|e| e.check_size(self.max_event_bytes).err())
                {
                    return self.terminate(delivery, DeadLetterReason::EventTooLarge(too_large)).await;
                }
                let produced = self.divert(produced, publisher).await;
                let released: Vec<String> = match &self.released_by_transport {
                    Some(_) => produced.iter().map(|e| e.id().to_owned()).collect(),
                    None => Vec::new(),
                };
                let acked = delivery.ack(produced).await;
                let stored = acked.is_ok();
                let settled = self.settled("ack", acked, Settled::Acked);
                if stored {
                    self.release(&released).await;
                }
                settled
            }
            Settlement::Retry(delay) => {
                bump(&self.counters.retried);
                tracing::debug!(
                    event_id = delivery.event().id(),
                    attempt,
                    ?delay,
                    "transient failure: retrying"
                );
                self.settled("nack", delivery.nack(delay).await, Settled::Retried(delay))
            }
            Settlement::DeadLetter(reason) => self.terminate(delivery, reason).await,
        }
    }

    /// Hands `delivery` back unhandled, to be delivered again at once (a nack without delay):
    /// a worker that stops before the handler finished, or that claimed it while stopping.
    pub(crate) async fn hand_back<D: Delivery>(&self, delivery: D) -> Settled {
        self.settled("nack", delivery.nack(std::time::Duration::ZERO).await, Settled::HandedBack)
    }

    /// A delivery no handler listens on: collected if someone waits on its `to`, else a dead
    /// letter.
    pub(crate) async fn unrouted<D: Delivery>(&self, delivery: D) -> Settled {
        if self.collectors.collect(delivery.event()) {
            bump(&self.counters.collected);
            return self.settled("ack", delivery.ack(Vec::new()).await, Settled::Acked);
        }
        let to = delivery.event().to().unwrap_or_default().to_owned();
        self.terminate(delivery, DeadLetterReason::NoHandler { to }).await
    }

    /// Buries a dead letter in the store (when the node has one for them), reports it, then
    /// terminates its delivery. A bury that fails transiently leaves the delivery to be tried
    /// again after [`BURY_RETRY`] (nothing is lost); one that fails for good is logged, and the
    /// dead letter still goes to the callback or the buffer.
    async fn terminate<D: Delivery>(&self, delivery: D, reason: DeadLetterReason) -> Settled {
        let text = reason.to_string();
        if let Some(graveyard) = &self.graveyard {
            match graveyard.bury_dyn(delivery.event(), &text, delivery.attempt()).await {
                Ok(()) => {}
                Err(error) if error.is_transient() => {
                    tracing::warn!(%error, event_id = delivery.event().id(), "cannot bury a dead letter yet: retrying");
                    bump(&self.counters.retried);
                    return self.settled(
                        "nack",
                        delivery.nack(BURY_RETRY).await,
                        Settled::Retried(BURY_RETRY),
                    );
                }
                Err(error) => {
                    tracing::error!(%error, event_id = delivery.event().id(), "cannot bury a dead letter in the store");
                }
            }
        }
        self.report(delivery.event().clone(), reason);
        self.settled("terminate", delivery.terminate(text).await, Settled::DeadLettered)
    }

    fn report(&self, event: Event, reason: DeadLetterReason) {
        bump(&self.counters.dead_lettered);
        self.dead_letters.report(event, reason);
    }

    /// The transport stored `ids`: they leave the outbox. On failure they stay, and are
    /// published again when the node starts next (a duplicate the consumers' idempotency and
    /// the transport's deduplication absorb): logged, not fatal.
    async fn release(&self, ids: &[String]) {
        let Some(outbox) = &self.released_by_transport else { return };
        if ids.is_empty() {
            return;
        }
        let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
        if let Err(error) = outbox.release_dyn(&ids).await {
            tracing::warn!(%error, events = ids.len(), "events the transport stored stay in the outbox");
        }
    }

    /// `done`, or, after logging and counting a failed settlement (the transport will deliver
    /// the event again), [`Settled::Failed`].
    fn settled(&self, what: &'static str, result: Result<(), TransportError>, done: Settled) -> Settled {
        match result {
            Ok(()) => done,
            Err(error) => {
                bump(&self.counters.settle_failures);
                tracing::error!(settlement = what, %error, "the transport failed to settle a delivery");
                Settled::Failed { settlement: what, error: error.to_string() }
            }
        }
    }

    /// Sorts the products: domained ones go to the callback (awaited, a panic is a dead letter)
    /// or are kept; one without `to` is a dead letter; the rest are returned, in order, to be
    /// published.
    async fn divert(&self, produced: Vec<Event>, publisher: &P) -> Vec<Event> {
        let mut publish = Vec::with_capacity(produced.len());
        for event in produced {
            bump(&self.counters.produced);
            let Some(domain) = event.domain().map(str::to_owned) else {
                if event.to().is_some() {
                    publish.push(event);
                } else {
                    self.report(event, DeadLetterReason::MissingTo);
                }
                continue;
            };
            bump(&self.counters.domained);
            let domained = DomainedEvent { domain, event };
            let Some(callback) = &self.domained.callback else {
                self.domained.keep(domained);
                continue;
            };
            // Kept only to report the event if the callback panics.
            let copy = domained.event.clone();
            let outcome = match catch(|| callback(domained, publisher.clone())) {
                Ok(future) => CatchPanic(future).await,
                Err(message) => Err(message),
            };
            if let Err(message) = outcome {
                self.report(copy, DeadLetterReason::CallbackPanicked { message });
            }
        }
        publish
    }
}

/// A handler's topic, called on the trait object itself (not on the `Arc`, which is a handler
/// too).
fn topic_of(handler: &dyn DynEventHandler) -> &str {
    handler.source_dyn()
}

impl<P> fmt::Debug for Dispatcher<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Dispatcher")
            .field("topics", &self.routes.keys().collect::<Vec<_>>())
            .field("retry", &self.retry)
            .field("dead_letters", &self.dead_letters)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use serde_json::json;

    use super::*;
    use crate::handler::EventHandler;
    use crate::transport::{InProcessConfig, InProcessTransport};
    use crate::violation::Violation;

    /// Forwards `com.test.first` events to `com.test.second`, which answers nothing.
    struct Forward(&'static str, Option<&'static str>);

    impl EventHandler for Forward {
        fn source(&self) -> &str {
            self.0
        }
        async fn execute(&self, event: &Event) -> Result<Vec<Event>, Violation> {
            let Some(next) = self.1 else { return Ok(vec![]) };
            let forwarded = Event::builder()
                .source(self.0)
                .r#type(next)
                .subject(event.subject())
                .data_json(json!({}))
                .build()
                .map_err(|e| Violation::execution(e.to_string()))?;
            Ok(vec![forwarded])
        }
    }

    fn event(to: &str, subject: &str) -> Event {
        Event::builder()
            .source("com.test.client")
            .r#type(to)
            .subject(subject)
            .data_json(json!({}))
            .build()
            .expect("a valid event")
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn workers_on_any_transport_route_by_topic() {
        let handlers: Vec<Arc<dyn DynEventHandler>> = vec![
            Arc::new(Forward("com.test.first", Some("com.test.second"))),
            Arc::new(Forward("com.test.second", None)),
        ];
        let dispatcher = Arc::new(Dispatcher::<()>::new(handlers).expect("distinct topics"));
        let transport = InProcessTransport::new(InProcessConfig::default()).expect("valid config");
        let topics = Topics::Only(dispatcher.topics().map(str::to_owned).collect());
        let workers = dispatcher.spawn_workers(&transport, topics, 2, ()).await.expect("subscribed");
        let events: Vec<_> = (0..20).map(|n| event("com.test.first", &format!("s{n}"))).collect();
        transport.publish(events).await.expect("published");
        tokio::time::timeout(Duration::from_secs(30), transport.wait_idle()).await.expect("idle");
        let stats = dispatcher.stats();
        assert_eq!((stats.delivered, stats.produced, stats.dead_lettered), (40, 20, 0));
        transport.close();
        for worker in workers {
            worker.await.expect("a worker ends once the transport is closed and drained");
        }
    }

    #[test]
    fn two_handlers_on_one_topic_are_refused() {
        let handlers: Vec<Arc<dyn DynEventHandler>> =
            vec![Arc::new(Forward("com.test.x", None)), Arc::new(Forward("com.test.x", None))];
        let err = Dispatcher::<()>::new(handlers).expect_err("duplicate topic");
        assert_eq!(err, DispatcherError::DuplicateHandler { topic: "com.test.x".to_owned() });
    }
}
