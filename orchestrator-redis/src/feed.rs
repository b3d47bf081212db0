//! [`Feed`]: the reads of one process and set of topics, made for the subscriptions that wait.
//!
//! Subscriptions do not read from the server themselves: they say they wait, and take entries
//! from the feed's buffer. Each feed is a consumer of the topics' groups, with a name of its
//! own, and runs two tasks:
//!
//! * a **reader**, on a connection of its own (a blocking read must not hold up other
//!   commands): while subscriptions wait, `XREADGROUP ... BLOCK` asks for new entries of every
//!   topic, as many as subscriptions wait less those buffered (at most
//!   [`RedisConfig::batch`](crate::RedisConfig::batch));
//! * a **ticker**, every [`RedisConfig::poll`](crate::RedisConfig::poll): moves the topics'
//!   due delayed events back to their streams; while subscriptions wait, takes over entries
//!   whose consumer has held them longer than the visibility timeout (`XAUTOCLAIM`); keeps the
//!   buffered entries (their idle time restarts); once the transport is closed, ends the feed
//!   when its topics hold nothing; for a subscription to every topic, looks for new topics.
//!
//! Every entry is checked before it is buffered (see [`Feed::admit`]): one that is not an
//! event of its topic, larger than `max_body`, or delivered more than `max_deliveries` times
//! becomes a dead letter and never reaches a handler.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::{Duration, Instant};

use orchestrator::event::Event;
use redis::Value;
use tokio::sync::Notify;

use crate::error::command;
use crate::scripts;
use crate::shared::{Shared, array, backoff, bytes, int, millis, text};

/// An entry delivered and checked, waiting in the buffer for a subscription.
pub(crate) struct Arrived {
    pub(crate) topic: String,
    pub(crate) id: String,
    pub(crate) event: Event,
    pub(crate) attempt: u32,
    /// When it arrived, or was last kept.
    kept: Instant,
}

#[derive(Default)]
struct State {
    /// Entries not handed out yet, in arrival order.
    buffer: VecDeque<Arrived>,
    /// Subscriptions waiting in `next`.
    waiting: usize,
    /// Subscriptions alive.
    subscribers: usize,
    /// The topics read: those subscribed, or every one known for a subscription to all.
    topics: Vec<String>,
    /// Where each topic's `XAUTOCLAIM` goes on.
    cursors: HashMap<String, String>,
    /// The transport is closed and these topics are drained: subscriptions get `None`.
    ended: bool,
    /// The last subscription left: late arrivals are given back.
    stopped: bool,
}

/// See the [module documentation](self).
pub(crate) struct Feed {
    shared: Arc<Shared>,
    /// The topics subscribed; `None`: every topic.
    fixed: Option<Vec<String>>,
    /// This feed's consumer name in the topics' groups.
    pub(crate) consumer: Arc<str>,
    state: Mutex<State>,
    /// Entries were buffered, or the feed ended.
    ready: Notify,
    /// A subscription started waiting or left.
    demand: Notify,
}

impl Feed {
    /// The feed of `fixed` (`None`: every topic; `topics`: the topics to read now, whose groups
    /// exist), started if it was not running; counts a subscriber.
    pub(crate) fn join(shared: &Arc<Shared>, fixed: Option<Vec<String>>, topics: Vec<String>) -> Arc<Self> {
        let mut feeds = shared.lock_feeds();
        if let Some(feed) = feeds.get(&fixed).and_then(Weak::upgrade) {
            let mut state = feed.lock();
            if state.subscribers > 0 {
                state.subscribers += 1;
                drop(state);
                return feed;
            }
        }
        let consumer: Arc<str> = format!("{}-{:08x}", shared.config.consumer, fastrand::u32(..)).into();
        let feed = Arc::new(Self {
            shared: Arc::clone(shared),
            fixed: fixed.clone(),
            consumer,
            state: Mutex::new(State { subscribers: 1, topics, ..State::default() }),
            ready: Notify::new(),
            demand: Notify::new(),
        });
        feeds.insert(fixed, Arc::downgrade(&feed));
        tokio::spawn(Arc::clone(&feed).read());
        tokio::spawn(Arc::clone(&feed).tick());
        feed
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A subscriber left.
    pub(crate) fn leave(&self) {
        self.lock().subscribers -= 1;
        self.demand.notify_waiters();
    }

    /// The next entry, waiting for one; `None` once the transport is closed and these topics
    /// are drained. Cancel-safe: an entry leaves the buffer only when it is returned.
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

    /// How many more entries the waiting subscriptions want.
    fn wanted(state: &State, batch: usize) -> usize {
        state.waiting.saturating_sub(state.buffer.len()).min(batch)
    }

    /// The reader: blocking `XREADGROUP`s on a connection of its own while subscriptions wait.
    async fn read(self: Arc<Self>) {
        let config = &self.shared.config;
        let mut conn: Option<redis::aio::MultiplexedConnection> = None;
        let mut failures = 0;
        loop {
            let demand = self.demand.notified();
            tokio::pin!(demand);
            demand.as_mut().enable();
            let (topics, want) = {
                let state = self.lock();
                if state.stopped || state.ended {
                    return;
                }
                (state.topics.clone(), Self::wanted(&state, config.batch))
            };
            if want == 0 || topics.is_empty() {
                tokio::select! {
                    () = &mut demand => {}
                    () = tokio::time::sleep(config.poll) => {}
                }
                continue;
            }
            let connection = match conn.as_mut() {
                Some(connection) => connection,
                None => {
                    let settings = redis::AsyncConnectionConfig::new()
                        .set_connection_timeout(Some(config.response_timeout))
                        .set_response_timeout(Some(config.block + config.response_timeout));
                    match self.shared.client.get_multiplexed_async_connection_with_config(&settings).await {
                        Ok(connection) => conn.insert(connection),
                        Err(e) => {
                            tracing::warn!(error = %e, "connecting a reader to Redis failed; trying again");
                            tokio::time::sleep(backoff(failures)).await;
                            failures += 1;
                            continue;
                        }
                    }
                }
            };
            let mut read = redis::cmd("XREADGROUP");
            read.arg("GROUP")
                .arg(&config.group)
                .arg(&*self.consumer)
                .arg("COUNT")
                .arg(want)
                .arg("BLOCK")
                .arg(millis(config.block))
                .arg("STREAMS");
            let keys: Vec<String> = topics.iter().map(|t| config.stream_key(t)).collect();
            read.arg(&keys);
            for _ in &keys {
                read.arg(">");
            }
            let reply: Result<Value, redis::RedisError> = read.query_async(connection).await;
            match reply {
                Ok(reply) => {
                    failures = 0;
                    self.admit_read(&topics, &keys, &reply).await;
                }
                Err(e) if e.code() == Some("NOGROUP") => {
                    // The streams were deleted (an operator, the end of a test): made again
                    // while the transport is open; a closed one's feed ends once they are gone.
                    if self.shared.is_closed() {
                        tokio::time::sleep(config.poll).await;
                    } else if let Err(e) = self.shared.ensure_groups(&topics).await {
                        tracing::warn!(error = %e, "making the topics' groups again failed");
                        tokio::time::sleep(backoff(failures)).await;
                        failures += 1;
                    }
                }
                Err(e) => {
                    tracing::warn!(error = %e, "reading from Redis failed; trying again");
                    conn = None;
                    tokio::time::sleep(backoff(failures)).await;
                    failures += 1;
                }
            }
        }
    }

    /// Admits the entries of an `XREADGROUP` answer (first deliveries).
    async fn admit_read(&self, topics: &[String], keys: &[String], reply: &Value) {
        let streams: Vec<(&[u8], &Value)> = match reply {
            Value::Nil => return,
            Value::Map(pairs) => pairs.iter().filter_map(|(k, v)| Some((bytes(k)?, v))).collect(),
            other => array(other)
                .unwrap_or_default()
                .iter()
                .filter_map(|s| match array(s)? {
                    [k, v] => Some((bytes(k)?, v)),
                    _ => None,
                })
                .collect(),
        };
        for (key, entries) in streams {
            let Some(index) = keys.iter().position(|k| k.as_bytes() == key) else { continue };
            for entry in array(entries).unwrap_or_default() {
                if let Some([id, fields]) = array(entry)
                    && let Some(id) = text(id)
                {
                    self.admit(&topics[index], id, fields, 1).await;
                }
            }
        }
    }

    /// The ticker (see the [module documentation](self)).
    async fn tick(self: Arc<Self>) {
        let config = &self.shared.config;
        let keep_after = config.visibility_timeout / 3;
        let claim_every = config.poll.max(config.visibility_timeout / 10);
        let sweep_every = config.visibility_timeout.saturating_mul(10);
        let mut last_claim = Instant::now();
        let mut last_sweep = Instant::now();
        loop {
            let closing = self.shared.closing.notified();
            tokio::pin!(closing);
            closing.as_mut().enable();
            let stopped = {
                let mut state = self.lock();
                if state.subscribers == 0 {
                    state.stopped = true;
                    Some(state.buffer.drain(..).collect::<Vec<_>>())
                } else {
                    None
                }
            };
            if let Some(given_back) = stopped {
                for arrived in given_back {
                    self.give_back(&arrived).await;
                }
                self.forget_consumer().await;
                return;
            }
            if self.fixed.is_none() {
                self.find_topics().await;
            }
            let topics = self.lock().topics.clone();
            for topic in &topics {
                if let Err(e) = self.move_due(topic).await {
                    tracing::debug!(error = %e, topic, "moving delayed events failed");
                }
            }
            if last_claim.elapsed() >= claim_every {
                last_claim = Instant::now();
                for topic in &topics {
                    let want = Self::wanted(&self.lock(), config.batch);
                    if want == 0 {
                        break;
                    }
                    if let Err(e) = self.claim(topic, want).await {
                        tracing::debug!(error = %e, topic, "taking over idle deliveries failed");
                    }
                }
            }
            let keep: Vec<(String, String)> = {
                let mut state = self.lock();
                state
                    .buffer
                    .iter_mut()
                    .filter(|a| a.kept.elapsed() >= keep_after)
                    .map(|a| {
                        a.kept = Instant::now();
                        (a.topic.clone(), a.id.clone())
                    })
                    .collect()
            };
            for (topic, id) in keep {
                if let Err(e) = self.shared.keep(&topic, &id, &self.consumer).await {
                    tracing::debug!(error = %e, "keeping a buffered entry failed");
                }
            }
            if last_sweep.elapsed() >= sweep_every {
                last_sweep = Instant::now();
                self.sweep(&topics, sweep_every).await;
            }
            if self.shared.is_closed()
                && self.lock().buffer.is_empty()
                && self.shared.remaining(&topics).await.is_ok_and(|left| left == 0)
            {
                let ended = {
                    let mut state = self.lock();
                    state.ended = state.buffer.is_empty();
                    state.ended
                };
                if ended {
                    self.ready.notify_waiters();
                    self.forget_consumer().await;
                    return;
                }
            }
            tokio::select! {
                () = &mut closing => {}
                () = tokio::time::sleep(config.poll) => {}
            }
        }
    }

    /// For a subscription to every topic: reads the topics known now.
    async fn find_topics(&self) {
        let known = match self.shared.known_topics().await {
            Ok(known) => known,
            Err(e) => {
                tracing::debug!(error = %e, "reading the known topics failed");
                return;
            }
        };
        let new: Vec<String> = {
            let state = self.lock();
            known.iter().filter(|t| !state.topics.contains(t)).cloned().collect()
        };
        if new.is_empty() {
            return;
        }
        match self.shared.ensure_groups(&new).await {
            Ok(()) => self.lock().topics.extend(new),
            Err(e) => tracing::debug!(error = %e, "making the groups of new topics failed"),
        }
    }

    /// Moves `topic`'s due delayed events back to its stream.
    async fn move_due(&self, topic: &str) -> Result<(), redis::RedisError> {
        let config = &self.shared.config;
        let _moved: i64 = scripts::MOVE_DUE
            .key(config.delayed_key(topic))
            .key(config.stream_key(topic))
            .arg(1_000)
            .invoke_async(&mut self.shared.conn())
            .await?;
        Ok(())
    }

    /// Takes over up to `want` entries of `topic` idle longer than the visibility timeout.
    async fn claim(&self, topic: &str, want: usize) -> Result<(), redis::RedisError> {
        let config = &self.shared.config;
        let cursor = self.lock().cursors.get(topic).cloned().unwrap_or_else(|| "0-0".to_owned());
        let reply: Value = scripts::CLAIM
            .key(config.stream_key(topic))
            .arg(&config.group)
            .arg(&*self.consumer)
            .arg(millis(config.visibility_timeout))
            .arg(&cursor)
            .arg(want)
            .invoke_async(&mut self.shared.conn())
            .await?;
        let Some([next, claimed]) = array(&reply) else { return Ok(()) };
        if let Some(next) = text(next) {
            self.lock().cursors.insert(topic.to_owned(), next);
        }
        for entry in array(claimed).unwrap_or_default() {
            if let Some([id, fields, deliveries]) = array(entry)
                && let Some(id) = text(id)
            {
                let deliveries = int(deliveries).and_then(|d| u32::try_from(d).ok()).unwrap_or(1);
                tracing::debug!(topic, id, deliveries, "took over an idle delivery");
                self.admit(topic, id, fields, deliveries).await;
            }
        }
        Ok(())
    }

    /// Checks an entry delivered `deliveries` times (counted by its group) and buffers it, or
    /// makes it a dead letter when it is not an event of its topic (no body, a body larger than
    /// `max_body`, malformed bytes, not an Arvo event, a `to` of another topic) or was
    /// delivered more than `max_deliveries` times.
    async fn admit(&self, topic: &str, id: String, fields: &Value, deliveries: u32) {
        let config = &self.shared.config;
        let mut body = None;
        let mut before = 0_u32;
        if let Some(fields) = array(fields) {
            for pair in fields.chunks(2) {
                if let [name, value] = pair {
                    match bytes(name) {
                        Some(b"body") => body = bytes(value),
                        Some(b"attempts") => {
                            before = int(value).and_then(|n| u32::try_from(n).ok()).unwrap_or(0);
                        }
                        _ => {}
                    }
                }
            }
        }
        let attempt = before.saturating_add(deliveries);
        let max = config.max_deliveries;
        let checked = check(topic, body, config.max_body).and_then(|event| {
            if attempt > max {
                Err(format!(
                    "delivered {attempt} times, more than max_deliveries ({max}): its previous \
                     deliveries were never settled"
                ))
            } else {
                Ok(event)
            }
        });
        match checked {
            Ok(event) => {
                let arrived = Arrived { topic: topic.to_owned(), id, event, attempt, kept: Instant::now() };
                let late = {
                    let mut state = self.lock();
                    if state.stopped || state.ended {
                        Some(arrived)
                    } else {
                        state.buffer.push_back(arrived);
                        None
                    }
                };
                match late {
                    Some(arrived) => self.give_back(&arrived).await,
                    None => self.ready.notify_waiters(),
                }
            }
            Err(reason) => {
                if let Err(e) = self.shared.dead_letter(topic, &id, &self.consumer, attempt, &reason).await {
                    tracing::warn!(
                        error = %e,
                        "could not move an entry to the dead letters; it is taken over again after the \
                         visibility timeout"
                    );
                }
            }
        }
    }

    /// Gives an entry that was never handed out back at once, without counting this delivery.
    async fn give_back(&self, arrived: &Arrived) {
        let attempts = arrived.attempt.saturating_sub(1);
        if let Err(e) =
            self.shared.put_back(&arrived.topic, &arrived.id, &self.consumer, attempts, Duration::ZERO).await
        {
            tracing::debug!(error = %e, "giving back an entry failed; it comes back after the visibility timeout");
        }
    }

    /// Removes this feed's consumer from its topics' groups where it holds nothing.
    async fn forget_consumer(&self) {
        let topics = self.lock().topics.clone();
        forget(&self.shared, &topics, &self.consumer).await;
    }

    /// Removes the consumers of `topics` that hold nothing and were idle for longer than
    /// `idle` (those of processes that ended without leaving, or died).
    async fn sweep(&self, topics: &[String], idle: Duration) {
        let config = &self.shared.config;
        for topic in topics {
            let info: Result<Value, _> = redis::cmd("XINFO")
                .arg("CONSUMERS")
                .arg(config.stream_key(topic))
                .arg(&config.group)
                .query_async(&mut self.shared.conn())
                .await;
            let Ok(info) = info else { continue };
            for consumer in array(&info).unwrap_or_default() {
                let Some(fields) = array(consumer) else { continue };
                let field = |name: &[u8]| {
                    fields.chunks(2).find(|pair| bytes(&pair[0]) == Some(name)).and_then(|pair| pair.get(1))
                };
                let (Some(name), Some(pending), Some(idle_ms)) = (
                    field(b"name").and_then(text),
                    field(b"pending").and_then(int),
                    field(b"idle").and_then(int),
                ) else {
                    continue;
                };
                if pending == 0
                    && u64::try_from(idle_ms).unwrap_or(0) > millis(idle)
                    && *name != *self.consumer
                {
                    forget(&self.shared, std::slice::from_ref(topic), &name).await;
                }
            }
        }
    }
}

/// Removes `consumer` from the groups of `topics` where it holds nothing (best effort).
async fn forget(shared: &Shared, topics: &[String], consumer: &str) {
    if topics.is_empty() {
        return;
    }
    let config = &shared.config;
    let mut invocation = scripts::FORGET_CONSUMER.prepare_invoke();
    for topic in topics {
        invocation.key(config.stream_key(topic));
    }
    invocation.arg(&config.group).arg(consumer);
    let result: Result<i64, _> = invocation.invoke_async(&mut shared.conn()).await;
    if let Err(e) = result.map_err(command("forget a consumer")) {
        tracing::debug!(error = %e, consumer, "removing a consumer failed");
    }
}

/// The event an entry's body holds, if it is one of `topic`.
fn check(topic: &str, body: Option<&[u8]>, max_body: usize) -> Result<Event, String> {
    let body = body.ok_or_else(|| "the entry has no `body` field".to_owned())?;
    if body.len() > max_body {
        return Err(format!("the body is {} bytes, more than max_body ({max_body} bytes)", body.len()));
    }
    let event = Event::from_slice(body).map_err(|e| format!("the entry is not a valid event: {e}"))?;
    match event.to() {
        Some(to) if to == topic => Ok(event),
        to => Err(format!("event `{}` is addressed to {to:?}, but came on topic `{topic}`", event.id())),
    }
}

/// A subscription waiting in [`Feed::next`]: counted while it waits, also when its `next` is
/// dropped.
struct Waiting<'a>(&'a Feed);

impl<'a> Waiting<'a> {
    fn new(feed: &'a Feed) -> Self {
        feed.lock().waiting += 1;
        feed.demand.notify_waiters();
        Self(feed)
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.lock().waiting -= 1;
    }
}
