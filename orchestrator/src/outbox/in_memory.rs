//! [`InMemoryOutbox`]: an outbox for tests and single-process runs where nothing is durable.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Mutex, PoisonError};

use super::{Outbox, Pending};
use crate::event::Event;
use crate::memory::MemoryError;

/// An [`Outbox`] kept in memory: it shows what is in flight, but does not survive the process.
#[derive(Debug, Default)]
pub struct InMemoryOutbox {
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    next: u64,
    by_seq: BTreeMap<u64, Event>,
    seq_of: HashMap<String, u64>,
}

impl InMemoryOutbox {
    /// An empty outbox.
    pub fn new() -> Self {
        Self::default()
    }

    /// How many events are in flight.
    pub fn len(&self) -> usize {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner).by_seq.len()
    }

    /// Whether nothing is in flight.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Outbox for InMemoryOutbox {
    async fn advance(&self, consumed: Option<&str>, produced: &[Event]) -> Result<(), MemoryError> {
        let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(seq) = consumed.and_then(|id| inner.seq_of.remove(id)) {
            inner.by_seq.remove(&seq);
        }
        for event in produced {
            if inner.seq_of.contains_key(event.id()) {
                continue;
            }
            inner.next += 1;
            let seq = inner.next;
            inner.seq_of.insert(event.id().to_owned(), seq);
            inner.by_seq.insert(seq, event.clone());
        }
        Ok(())
    }

    async fn release(&self, ids: &[&str]) -> Result<(), MemoryError> {
        let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        for id in ids {
            if let Some(seq) = inner.seq_of.remove(*id) {
                inner.by_seq.remove(&seq);
            }
        }
        Ok(())
    }

    async fn pending(&self, after: u64, limit: usize) -> Result<Vec<Pending>, MemoryError> {
        let inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        Ok(inner
            .by_seq
            .range(after.saturating_add(1)..)
            .take(limit)
            .map(|(seq, event)| Pending { seq: *seq, event: event.clone() })
            .collect())
    }
}
