//! The client topics of a node: where the completions of the workflows it started arrive, kept
//! until someone awaits them.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio::sync::Notify;

use crate::event::Event;
use crate::handler::EventHandler;
use crate::violation::Violation;

/// At most this many completions wait for [`Node::wait`](super::Node::wait); older ones are
/// dropped first.
pub(super) const KEPT_COMPLETIONS: usize = 10_000;

/// The completions that arrived and were not awaited yet, by workflow subject.
#[derive(Default)]
pub(super) struct Completions {
    state: Mutex<Kept>,
    arrived: Notify,
}

#[derive(Default)]
struct Kept {
    by_subject: HashMap<String, Event>,
    order: VecDeque<String>,
}

impl Completions {
    fn state(&self) -> MutexGuard<'_, Kept> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn keep(&self, event: Event) {
        let mut state = self.state();
        let subject = event.subject().to_owned();
        if state.by_subject.insert(subject.clone(), event).is_none() {
            state.order.push_back(subject);
        }
        while state.order.len() > KEPT_COMPLETIONS {
            if let Some(oldest) = state.order.pop_front() {
                state.by_subject.remove(&oldest);
            }
        }
        drop(state);
        self.arrived.notify_waiters();
    }

    /// Waits for the completion of workflow `subject` and takes it.
    pub(super) async fn wait(&self, subject: &str) -> Event {
        loop {
            let notified = self.arrived.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let mut state = self.state();
                if let Some(event) = state.by_subject.remove(subject) {
                    state.order.retain(|s| s != subject);
                    return event;
                }
            }
            notified.await;
        }
    }
}

/// The handler of one client topic: keeps what arrives for [`Completions::wait`].
pub(super) struct ClientSink {
    pub(super) topic: String,
    pub(super) completions: Arc<Completions>,
}

impl EventHandler for ClientSink {
    fn source(&self) -> &str {
        &self.topic
    }

    async fn execute(&self, event: &Event) -> Result<Vec<Event>, Violation> {
        self.completions.keep(event.clone());
        Ok(Vec::new())
    }
}
