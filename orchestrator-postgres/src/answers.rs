//! The [`Answers`] of [`PgStore`]: table `answers` (schema version 8), keyed by the service's
//! topic and the request's source and id (the primary key: of two concurrent records of one
//! request, the second waits for the first to commit, then finds it).
//!
//! A record made while this process holds the claim of the request's delivery on the store's
//! queue (the request is being handled by a node on [`PgStore::queue`]) settles that delivery
//! with the answer's events in the same statement (`answer_ack`): the delivery's ack then has
//! nothing left to do, as after an orchestrator's commit.

use orchestrator::event::Event;
use orchestrator::memory::{AnswerKey, Answers, MemoryError};
use tokio_postgres::types::ToSql;

use crate::PgStore;
use crate::error::{PgError, backend};
use crate::queries as q;
use crate::queue::signals::{Claim, Signals};
use crate::store::{decode, encode};

/// The key of answer operations in errors.
pub(crate) const KEY: &str = "(answers)";

/// What `ANSWER_ACK` did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AnswerAcked {
    /// The answer is recorded (and the delivery settled, given a claim).
    Recorded,
    /// The answer is recorded, but the claim was lost: nothing was settled.
    ClaimLost,
    /// An answer was recorded first: nothing changed.
    Answered,
}

/// The parameters of `ANSWER_ACK` for recording `produced` under a key, settling `claim`.
pub(crate) struct AnswerAck<'a> {
    key: AnswerKey<'a>,
    json: String,
    seq: Option<i64>,
    token: Option<i64>,
    topics: Vec<&'a str>,
    subjects: Vec<&'a str>,
    ids: Vec<&'a str>,
    events: Vec<String>,
}

impl<'a> AnswerAck<'a> {
    /// Encodes `produced` (the answer) and, with a claim, the events the queue takes: those
    /// with a `to` and no domain, as the runtime's ack would be given them.
    pub(crate) fn new(
        key: AnswerKey<'a>,
        produced: &'a [Event],
        claim: Option<&Claim>,
    ) -> Result<Self, MemoryError> {
        let json = encode(KEY, "recorded answer", produced)?;
        let queued: Vec<&Event> = match claim {
            Some(_) => produced.iter().filter(|e| e.domain().is_none() && e.to().is_some()).collect(),
            None => Vec::new(),
        };
        let events = queued.iter().map(|e| encode(KEY, "produced event", e)).collect::<Result<_, _>>()?;
        Ok(Self {
            key,
            json,
            seq: claim.map(|c| c.seq),
            token: claim.map(|c| c.token),
            topics: queued.iter().filter_map(|e| e.to()).collect(),
            subjects: queued.iter().map(|e| e.subject()).collect(),
            ids: queued.iter().map(|e| e.id()).collect(),
            events,
        })
    }

    /// The statement's parameters.
    pub(crate) fn params(&self) -> [&(dyn ToSql + Sync); 10] {
        [
            &self.key.service,
            &self.key.source,
            &self.key.id,
            &self.json,
            &self.seq,
            &self.token,
            &self.topics,
            &self.subjects,
            &self.ids,
            &self.events,
        ]
    }

    /// What the statement's answer `rows` say.
    pub(crate) fn outcome(rows: &[tokio_postgres::Row]) -> AnswerAcked {
        match rows.first().map(|row| row.get::<_, i32>(0)) {
            Some(0) => AnswerAcked::Recorded,
            Some(2) => AnswerAcked::Answered,
            _ => AnswerAcked::ClaimLost,
        }
    }
}

/// After a record that settled the delivery of `event_id`: its ack has nothing left to do; its
/// products and its lane's next event are claimable.
pub(crate) fn settled(wake: &Signals, event_id: &str) {
    wake.settled_by_commit(event_id);
    wake.enqueued();
}

impl<R: Send + Sync> Answers for PgStore<R> {
    async fn answer(&self, key: AnswerKey<'_>) -> Result<Option<Vec<Event>>, MemoryError> {
        let client = self.client(KEY).await?;
        let rows = self.query(&client, KEY, q::ANSWER, &[&key.service, &key.source, &key.id]).await?;
        rows.first().map(|row| decode(KEY, "recorded answer", row.get::<_, &str>(0))).transpose()
    }

    async fn record_answer(&self, key: AnswerKey<'_>, produced: &[Event]) -> Result<Vec<Event>, MemoryError> {
        let (_, _, wake) = self.parts();
        let claim = wake.claim_of(key.service, key.source, key.id);
        let ack = AnswerAck::new(key, produced, claim.as_ref())?;
        let client = self.client(KEY).await?;
        let rows = self.query(&client, KEY, q::ANSWER_ACK, &ack.params()).await?;
        match AnswerAck::outcome(&rows) {
            AnswerAcked::Recorded => {
                if claim.is_some() {
                    settled(&wake, key.id);
                }
                Ok(produced.to_vec())
            }
            // Recorded; the delivery is another consumer's now, whose run finds the answer.
            AnswerAcked::ClaimLost => Ok(produced.to_vec()),
            // Another record was first (committed before the insert returned): its answer stands.
            AnswerAcked::Answered => match self.answer(key).await? {
                Some(recorded) => Ok(recorded),
                None => Err(backend(KEY, PgError::Vanished { what: "a recorded answer" })),
            },
        }
    }
}
