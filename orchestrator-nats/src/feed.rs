//! [`Feed`]: the pull requests of one process and set of topics, made for the consumers that
//! wait.
//!
//! Subscriptions do not pull from the server themselves: they say they wait, and take
//! delivered messages from the feed's buffer. For each topic's durable consumer, the feed keeps
//! as many messages asked for (in pull requests of at most [`NatsConfig::batch`], waiting up to
//! [`NatsConfig::pull_expires`] on the server) as subscriptions wait, less those buffered. A
//! feed of several topics may so receive more than its subscriptions wait for (one batch per
//! topic); a message that waits in the buffer for a third of the ack wait is kept with a
//! progress acknowledgement, so the server does not deliver it elsewhere meanwhile.
//!
//! Every message is checked before it is buffered (see [`Feed::admit`]): one that is not an
//! event of its topic, or that was delivered more than [`NatsConfig::max_deliver`] times,
//! becomes a dead letter and never reaches a handler.
//!
//! [`NatsConfig::batch`]: crate::NatsConfig::batch
//! [`NatsConfig::pull_expires`]: crate::NatsConfig::pull_expires
//! [`NatsConfig::max_deliver`]: crate::NatsConfig::max_deliver

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::Instant;

use async_nats::jetstream::consumer::PullConsumer;
use async_nats::jetstream::{self, AckKind};
use futures_util::StreamExt;
use orchestrator::event::{Event, ParseOptions};
use tokio::sync::Notify;

use crate::config::NatsConfig;
use crate::shared::{Shared, backoff};
use crate::subject::topic_of_subject;

/// A message delivered and checked, waiting in the buffer for a subscription.
pub(crate) struct Arrived {
    pub(crate) message: jetstream::Message,
    pub(crate) event: Event,
    pub(crate) attempt: u32,
    /// When it arrived, or was last kept with a progress acknowledgement.
    kept: Instant,
}

#[derive(Default)]
struct State {
    /// Messages not handed out yet, in arrival order.
    buffer: VecDeque<Arrived>,
    /// Subscriptions waiting in `next`.
    waiting: usize,
    /// Subscriptions alive.
    subscribers: usize,
    /// Messages asked for and not yet arrived, by consumer.
    outstanding: Vec<usize>,
    /// The transport is closed and these topics are drained: subscriptions get `None`.
    ended: bool,
    /// The last subscription left: late arrivals are given back.
    stopped: bool,
}

/// See the [module documentation](self).
pub(crate) struct Feed {
    shared: Arc<Shared>,
    topics: Option<Vec<String>>,
    consumers: Vec<PullConsumer>,
    state: Mutex<State>,
    /// Messages were buffered, or the feed ended.
    ready: Notify,
    /// A subscription started waiting or left, or a pull request ended.
    demand: Notify,
}

impl Feed {
    /// The feed of `topics` (whose consumers are `consumers`), started if it was not running;
    /// counts a subscriber.
    pub(crate) fn join(
        shared: &Arc<Shared>,
        topics: Option<Vec<String>>,
        consumers: Vec<PullConsumer>,
    ) -> Arc<Self> {
        let mut feeds = shared.lock_feeds();
        if let Some(feed) = feeds.get(&topics).and_then(Weak::upgrade) {
            let mut state = feed.lock();
            if state.subscribers > 0 {
                state.subscribers += 1;
                drop(state);
                return feed;
            }
        }
        let outstanding = vec![0; consumers.len()];
        let feed = Arc::new(Self {
            shared: Arc::clone(shared),
            topics: topics.clone(),
            consumers,
            state: Mutex::new(State { subscribers: 1, outstanding, ..State::default() }),
            ready: Notify::new(),
            demand: Notify::new(),
        });
        feeds.insert(topics, Arc::downgrade(&feed));
        tokio::spawn(Arc::clone(&feed).run());
        feed
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A subscriber left.
    pub(crate) fn leave(&self) {
        self.lock().subscribers -= 1;
        self.demand.notify_one();
    }

    /// The next message, waiting for one; `None` once the transport is closed and these topics
    /// are drained. Cancel-safe: a message leaves the buffer only when it is returned.
    pub(crate) async fn next(&self) -> Option<Arrived> {
        let _waiting = Waiting::new(self);
        loop {
            let ready = self.ready.notified();
            tokio::pin!(ready);
            ready.as_mut().enable();
            {
                let mut state = self.lock();
                if let Some(arrived) = state.buffer.pop_front() {
                    return Some(arrived);
                }
                if state.ended {
                    return None;
                }
            }
            ready.await;
        }
    }

    /// Asks for messages while subscriptions wait, keeps buffered ones, and ends the feed once
    /// the transport is closed and the topics are drained.
    async fn run(self: Arc<Self>) {
        let config = &self.shared.config;
        let keep_after = config.ack_wait / 3;
        let tick = config.poll.min(keep_after);
        loop {
            let demand = self.demand.notified();
            tokio::pin!(demand);
            demand.as_mut().enable();
            let closing = self.shared.closing.notified();
            tokio::pin!(closing);
            closing.as_mut().enable();
            let stopped = {
                let mut state = self.lock();
                if state.subscribers == 0 {
                    state.stopped = true;
                    Some(state.buffer.drain(..).collect::<Vec<Arrived>>())
                } else {
                    None
                }
            };
            if let Some(given_back) = stopped {
                for arrived in given_back {
                    give_back(&arrived.message).await;
                }
                return;
            }
            let (keep, check_drained) = {
                let mut state = self.lock();
                let (buffered, waiting) = (state.buffer.len(), state.waiting);
                for (index, outstanding) in state.outstanding.iter_mut().enumerate() {
                    let want = waiting.saturating_sub(buffered + *outstanding).min(config.batch);
                    if want > 0 {
                        *outstanding += want;
                        tokio::spawn(Arc::clone(&self).pull(index, want));
                    }
                }
                let mut keep = Vec::new();
                for arrived in state.buffer.iter_mut().filter(|a| a.kept.elapsed() >= keep_after) {
                    arrived.kept = Instant::now();
                    keep.push(arrived.message.clone());
                }
                (keep, self.shared.is_closed() && state.buffer.is_empty() && state.waiting > 0)
            };
            for message in keep {
                if let Err(e) = message.ack_with(AckKind::Progress).await {
                    tracing::debug!(error = %e, "keeping a buffered message failed");
                }
            }
            if check_drained && self.shared.remaining(&self.topics).await.is_ok_and(|left| left == 0) {
                let ended = {
                    let mut state = self.lock();
                    state.ended = state.buffer.is_empty();
                    state.ended
                };
                if ended {
                    self.ready.notify_waiters();
                    return;
                }
            }
            let wait = if self.shared.is_closed() { tick } else { keep_after.max(tick) };
            tokio::select! {
                () = &mut demand => {}
                () = &mut closing => {}
                () = tokio::time::sleep(wait) => {}
            }
        }
    }

    /// One pull request for `count` messages of consumer `index`.
    async fn pull(self: Arc<Self>, index: usize, count: usize) {
        let config = &self.shared.config;
        let batch =
            self.consumers[index].batch().max_messages(count).expires(config.pull_expires).messages().await;
        let mut arrived = 0;
        let mut failed = false;
        match batch {
            Ok(mut batch) => {
                while let Some(message) = batch.next().await {
                    match message {
                        Ok(message) => {
                            arrived += 1;
                            self.admit(index, message).await;
                        }
                        Err(e) => {
                            tracing::debug!(error = %e, "a pull request from JetStream ended with an error");
                            failed = true;
                            break;
                        }
                    }
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, "pulling from JetStream failed; trying again");
                failed = true;
            }
        }
        if failed {
            tokio::time::sleep(backoff(2)).await;
        }
        self.lock().outstanding[index] -= count - arrived;
        self.demand.notify_one();
    }

    /// Checks a delivered message (of consumer `index`) and buffers it, or makes it a dead
    /// letter when it is not an event of the topic of its subject (malformed bytes, not an Arvo
    /// event, a `to` of another topic) or was delivered more than `max_deliver` times.
    async fn admit(&self, index: usize, message: jetstream::Message) {
        let shared = &self.shared;
        let max_deliver = shared.config.max_deliver;
        let attempt = message.info().map_or(1, |info| u32::try_from(info.delivered).unwrap_or(u32::MAX));
        let checked = check(&shared.config, &message).and_then(|event| {
            if attempt > max_deliver {
                Err(format!(
                    "delivered {attempt} times, more than max_deliver ({max_deliver}): \
                     its previous deliveries were never settled"
                ))
            } else {
                Ok(event)
            }
        });
        match checked {
            Ok(event) => {
                let late = {
                    let mut state = self.lock();
                    state.outstanding[index] -= 1;
                    if state.stopped || state.ended {
                        Some(message)
                    } else {
                        state.buffer.push_back(Arrived { message, event, attempt, kept: Instant::now() });
                        None
                    }
                };
                match late {
                    Some(message) => give_back(&message).await,
                    None => self.ready.notify_waiters(),
                }
            }
            Err(reason) => {
                let result = shared.dead_letter(&message, attempt, &reason).await;
                self.lock().outstanding[index] -= 1;
                if let Err(e) = result {
                    tracing::warn!(error = %e, "could not move a message to the dead letters; it comes back later");
                    let later = AckKind::Nak(Some(shared.config.ack_wait));
                    if let Err(e) = message.ack_with(later).await {
                        tracing::debug!(error = %e, "giving back a message failed");
                    }
                }
                self.demand.notify_one();
            }
        }
    }
}

/// The event a message carries, if it is one of the topic of its subject and not larger than
/// [`NatsConfig::max_event_bytes`](crate::NatsConfig::max_event_bytes).
fn check(config: &NatsConfig, message: &jetstream::Message) -> Result<Event, String> {
    let subject = message.subject.as_str();
    let topic = topic_of_subject(&config.subject_prefix, subject)
        .ok_or_else(|| format!("subject `{subject}` is not the subject of a topic"))?;
    let event = ParseOptions::default()
        .max_bytes(config.max_event_bytes)
        .parse(&message.payload)
        .map_err(|e| format!("the message is not a valid event: {e}"))?;
    match event.to() {
        Some(to) if to == topic => Ok(event),
        Some(to) => {
            Err(format!("event `{}` is addressed to `{to}`, but came on topic `{topic}`", event.id()))
        }
        None => Err(format!("event `{}` has no `to`, but came on topic `{topic}`", event.id())),
    }
}

/// Gives `message` back for another delivery at once (a nak without delay), best effort: a
/// message not given back is delivered again after the ack wait.
pub(crate) async fn give_back(message: &jetstream::Message) {
    if let Err(e) = message.ack_with(AckKind::Nak(None)).await {
        tracing::debug!(error = %e, "giving back a message failed; it comes back after the ack wait");
    }
}

/// A subscription waiting in [`Feed::next`]: counted while it waits, also when its `next` is
/// dropped.
struct Waiting<'a>(&'a Feed);

impl<'a> Waiting<'a> {
    fn new(feed: &'a Feed) -> Self {
        feed.lock().waiting += 1;
        feed.demand.notify_one();
        Self(feed)
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.lock().waiting -= 1;
    }
}
