//! [`Feed`]: one poller per process and set of topics, claiming for the consumers that wait.
//!
//! Consumers ([`PgSubscription`](super::PgSubscription)s) do not query the database: they say
//! they wait, and take claimed rows from the feed's buffer. The feed's poller claims as many rows
//! as consumers wait (at most [`QueueConfig::batch`](super::QueueConfig::batch) per claim), in
//! one statement; when a claim comes back short there is nothing more to claim, and the poller
//! sleeps until something is enqueued here or elsewhere (a wake-up), a delayed row comes due, or
//! the poll interval passes. So an idle process costs one query per poll interval, and a busy
//! one a claim per batch, whatever its number of consumers.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use orchestrator::runtime::pool::Backoff;
use tokio::sync::Notify;

use super::shared::{Claimed, Shared};

/// The feeds of a queue, by topics (`None`: all).
pub(super) type Feeds = Mutex<HashMap<Option<Vec<String>>, Weak<Feed>>>;

#[derive(Default)]
struct State {
    /// Claimed rows not handed out yet, oldest first.
    buffer: VecDeque<Claimed>,
    /// Consumers waiting in `next`.
    waiting: usize,
    /// Consumers alive.
    subscribers: usize,
    /// The queue is closed and drained: consumers get `None`.
    ended: bool,
}

/// See the [module documentation](self).
pub(super) struct Feed {
    shared: Arc<Shared>,
    topics: Option<Vec<String>>,
    state: Mutex<State>,
    /// Rows were buffered, or the feed ended.
    ready: Notify,
    /// A consumer started waiting, or left.
    demand: Notify,
}

/// The pauses after failed claims: 50 ms doubling up to 5 s, with jitter.
const BACKOFF: Backoff =
    Backoff { initial: Duration::from_millis(50), max: Duration::from_secs(5), multiplier: 2.0 };

impl Feed {
    /// The feed of `topics` on `shared`, started if it was not running; counts a subscriber.
    pub(super) fn join(shared: &Arc<Shared>, topics: Option<Vec<String>>) -> Arc<Self> {
        let mut feeds = shared.feeds.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(feed) = feeds.get(&topics).and_then(Weak::upgrade) {
            let mut state = feed.lock();
            if state.subscribers > 0 {
                state.subscribers += 1;
                drop(state);
                return feed;
            }
        }
        let feed = Arc::new(Self {
            shared: Arc::clone(shared),
            topics: topics.clone(),
            state: Mutex::new(State { subscribers: 1, ..State::default() }),
            ready: Notify::new(),
            demand: Notify::new(),
        });
        feeds.insert(topics, Arc::downgrade(&feed));
        tokio::spawn(Arc::clone(&feed).poll());
        feed
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A subscriber left.
    pub(super) fn leave(&self) {
        self.lock().subscribers -= 1;
        self.demand.notify_one();
    }

    /// The next claimed row, waiting for one; `None` once the queue is closed and drained.
    /// Cancel-safe: a row is taken from the buffer only when it is returned.
    pub(super) async fn next(&self) -> Option<Claimed> {
        let _waiting = Waiting::new(self);
        loop {
            let ready = self.ready.notified();
            tokio::pin!(ready);
            ready.as_mut().enable();
            {
                let mut state = self.lock();
                if let Some(row) = state.buffer.pop_front() {
                    return Some(row);
                }
                if state.ended {
                    return None;
                }
            }
            ready.await;
        }
    }

    /// The poller: claims for the waiting consumers until none is left.
    async fn poll(self: Arc<Self>) {
        let shared = Arc::clone(&self.shared);
        let mut failures = 0_u32;
        loop {
            let mut woken = Box::pin(shared.wake.notified());
            woken.as_mut().enable();
            let demand = self.demand.notified();
            tokio::pin!(demand);
            demand.as_mut().enable();
            let (want, subscribers) = {
                let state = self.lock();
                (state.waiting.saturating_sub(state.buffer.len()), state.subscribers)
            };
            if subscribers == 0 {
                self.stop().await;
                return;
            }
            if want == 0 {
                // Everyone is busy: wait for a consumer to ask (or leave).
                demand.await;
                continue;
            }
            let asked = want.min(shared.config.batch.max(1));
            let claimed = match shared.reap().await {
                Ok(()) => shared.claim(&self.topics, asked).await,
                Err(e) => Err(e),
            };
            match claimed {
                Ok(rows) => {
                    failures = 0;
                    let got = rows.len();
                    super::vacuum::after_claim(&shared, got);
                    if got > 0 {
                        self.lock().buffer.extend(rows);
                        self.ready.notify_waiters();
                    }
                    if got == asked {
                        continue;
                    }
                    // Nothing more to claim now.
                    if got == 0
                        && shared.is_closed()
                        && self.lock().buffer.is_empty()
                        && shared.drained(&self.topics).await.unwrap_or(false)
                    {
                        self.lock().ended = true;
                        self.ready.notify_waiters();
                        return;
                    }
                    let wait = self.idle_wait().await;
                    tokio::select! {
                        () = &mut woken => {}
                        () = tokio::time::sleep(wait) => {}
                    }
                }
                Err(e) => {
                    tracing::warn!(error = %e, "claiming from the PostgreSQL queue failed; trying again");
                    failures = failures.saturating_add(1);
                    tokio::time::sleep(BACKOFF.delay(failures)).await;
                }
            }
        }
    }

    /// How long to sleep when nothing was claimable: until the next row is due by the clock,
    /// at most the poll interval.
    async fn idle_wait(&self) -> Duration {
        let poll = self.shared.config.poll;
        match self.shared.next_due(&self.topics).await {
            Ok(Some(due)) => (due + Duration::from_millis(1)).min(poll),
            Ok(None) | Err(_) => poll,
        }
    }

    /// The last subscriber left: gives back what was claimed and not handed out.
    async fn stop(&self) {
        let rows: Vec<Claimed> = self.lock().buffer.drain(..).collect();
        let until = tokio::time::Instant::now() + self.shared.config.visibility;
        for row in rows {
            self.shared.give_back(row.seq, row.token, until).await;
        }
        self.ready.notify_waiters();
    }
}

/// A consumer waiting in [`Feed::next`]: counted while it waits, also when its `next` is
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
