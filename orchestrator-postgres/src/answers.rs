//! The [`Answers`] of [`PgStore`]: table `answers` (schema version 8), keyed by the service's
//! topic and the request's source and id (the primary key: of two concurrent records of one
//! request, the second waits for the first to commit, then finds it).

use orchestrator::event::Event;
use orchestrator::memory::{AnswerKey, Answers, MemoryError};

use crate::PgStore;
use crate::error::{PgError, backend};
use crate::queries as q;
use crate::store::{decode, encode};

/// The key of answer operations in errors.
pub(crate) const KEY: &str = "(answers)";

impl<R: Send + Sync> Answers for PgStore<R> {
    async fn answer(&self, key: AnswerKey<'_>) -> Result<Option<Vec<Event>>, MemoryError> {
        let client = self.client(KEY).await?;
        let rows = self.query(&client, KEY, q::ANSWER, &[&key.service, &key.source, &key.id]).await?;
        rows.first().map(|row| decode(KEY, "recorded answer", row.get::<_, &str>(0))).transpose()
    }

    async fn record_answer(&self, key: AnswerKey<'_>, produced: &[Event]) -> Result<Vec<Event>, MemoryError> {
        let json = encode(KEY, "recorded answer", produced)?;
        let client = self.client(KEY).await?;
        let rows =
            self.query(&client, KEY, q::RECORD_ANSWER, &[&key.service, &key.source, &key.id, &json]).await?;
        if !rows.is_empty() {
            return Ok(produced.to_vec());
        }
        // Another record was first (committed before the insert returned): its answer stands.
        match self.answer(key).await? {
            Some(recorded) => Ok(recorded),
            None => Err(backend(KEY, PgError::Vanished { what: "a recorded answer" })),
        }
    }
}
