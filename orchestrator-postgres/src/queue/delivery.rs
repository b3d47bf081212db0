//! [`PgDelivery`]: one claimed row, settled with its claim's token.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::time::Instant;

use orchestrator::event::Event;
use orchestrator::transport::{Delivery, TransportError};

use super::retry::SettleRetry;
use super::shared::{ClaimRead, Claimed, Lane, Shared, columns, ms_i64, transport_error};
use super::signals::{Claim, Looked};
use crate::error::PgError;
use crate::group::Param;
use crate::queries as q;

/// One delivery of a [`PgQueue`](super::PgQueue): a claimed row, held until settled or until
/// its visibility deadline. Dropped unsettled, it is given back at once (a nack without delay).
///
/// A settlement that fails for a moment (a dropped connection, a restarting server) is tried
/// again with backoff while the claim holds: each names the claim's token, so a try whose
/// answer was lost after its commit is not applied twice.
pub struct PgDelivery {
    shared: Arc<Shared>,
    seq: i64,
    token: i64,
    /// When the claim lapses, as this process sees it (moved on by `extend`).
    until: Mutex<Instant>,
    attempt: u32,
    topic: String,
    subject: String,
    raw: String,
    event: Event,
    settled: bool,
}

impl std::fmt::Debug for PgDelivery {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgDelivery")
            .field("seq", &self.seq)
            .field("attempt", &self.attempt)
            .field("event", &self.event.id())
            .finish_non_exhaustive()
    }
}

impl PgDelivery {
    /// The delivery of a claimed row; a row whose event cannot be decoded (written by hand, or
    /// by another program) is moved to the dead letters instead, with the reason.
    pub(super) async fn from_claim(shared: &Arc<Shared>, row: Claimed) -> Option<Self> {
        let attempt = u32::try_from(row.attempt).unwrap_or(u32::MAX);
        if let Some(max) = shared.config.max_deliveries
            && attempt > max.max(1)
        {
            let reason =
                format!("delivered {} times without being settled (the queue's limit is {max})", attempt - 1);
            tracing::warn!(event_id = row.event_id, %reason, "dead letter");
            dead_letter(shared, &row, attempt, &reason).await;
            return None;
        }
        match serde_json::from_str::<Event>(&row.event) {
            Ok(event) => Some({
                if let Some(ClaimRead { base, entry }) = row.looked {
                    let produced = match entry {
                        None => Some(None),
                        // The journal's entry is this event's (same source as well as id).
                        Some((Some(source), produced)) if source == event.source() => Some(Some(produced)),
                        // Another event with this id: the step reads the journal itself.
                        Some(_) => None,
                    };
                    if let Some(produced) = produced {
                        let looked = Looked { source: event.source().to_owned(), base, produced };
                        shared.wake.looked(&row.subject, event.id(), looked);
                    }
                }
                let claim = Claim {
                    source: event.source().to_owned(),
                    topic: row.topic.clone(),
                    seq: row.seq,
                    token: row.token,
                };
                shared.wake.claimed(event.id(), claim);
                Self {
                    shared: Arc::clone(shared),
                    seq: row.seq,
                    token: row.token,
                    until: Mutex::new(Instant::now() + shared.config.visibility),
                    attempt,
                    topic: row.topic,
                    subject: row.subject,
                    raw: row.event,
                    event,
                    settled: false,
                }
            }),
            Err(e) => {
                let reason = format!("the queued event cannot be decoded: {e}");
                tracing::warn!(event_id = row.event_id, %reason, "dead letter");
                dead_letter(shared, &row, attempt, &reason).await;
                None
            }
        }
    }

    /// Fails with a permanent error when the claim is no longer this delivery's.
    fn held(&self, rows: &[tokio_postgres::Row]) -> Result<(), TransportError> {
        if rows.is_empty() {
            Err(transport_error(PgError::ClaimLost { event_id: self.event.id().to_owned() }))
        } else {
            Ok(())
        }
    }

    /// The backoff of a settlement: tries again until the claim lapses.
    fn retry(&self) -> SettleRetry {
        SettleRetry::until(*self.until.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

impl Delivery for PgDelivery {
    fn event(&self) -> &Event {
        &self.event
    }

    fn attempt(&self) -> u32 {
        self.attempt
    }

    async fn ack(mut self, produced: Vec<Event>) -> Result<(), TransportError> {
        // Refused products leave the delivery unsettled: dropped, it is delivered again.
        let lanes = Lane::of_all(&produced)?;
        if self.shared.wake.take_settled(self.event.id()) {
            // This process's commit took the row out of the queue with these products.
            self.settled = true;
            return Ok(());
        }
        let mut retry = self.retry();
        loop {
            // Built again for each try (the statement takes its parameters).
            let (topics, subjects, ids, json) = columns(&lanes, &produced)?;
            let params: Vec<Param> = vec![
                Box::new(self.seq),
                Box::new(self.token),
                Box::new(topics),
                Box::new(subjects),
                Box::new(ids),
                Box::new(json),
            ];
            let Err(e) = self.shared.ack(params).await else { break };
            if retry.again("ack", &e).await {
                continue;
            }
            if !e.is_transient() {
                // The database refuses the products for good (a key too long for its index, a
                // NUL character): delivering the event again would fail the same way, so it
                // becomes a dead letter with the reason.
                let reason = format!("its products were refused: {e}");
                tracing::warn!(event_id = self.event.id(), %reason, "dead letter");
                self.terminate_now(&reason).await?;
            }
            return Err(e);
        }
        self.settled = true;
        // Products to claim, and the lane's next event, if any, is claimable now.
        self.shared.wake.enqueued();
        Ok(())
    }

    async fn nack(mut self, delay: Duration) -> Result<(), TransportError> {
        let delay = ms_i64(delay);
        let mut retry = self.retry();
        let rows = loop {
            match self.shared.query(q::NACK, &[&self.seq, &self.token, &delay]).await {
                Ok(rows) => break rows,
                Err(e) if retry.again("nack", &e).await => {}
                Err(e) => return Err(e),
            }
        };
        self.settled = true;
        if delay == 0 {
            self.shared.wake.enqueued();
        }
        if rows.is_empty() && retry.retried() {
            // The failed try may have given the row back already: either way it is not ours.
            return Ok(());
        }
        self.held(&rows)
    }

    async fn extend(&self, by: Duration) -> Result<(), TransportError> {
        let asked = Instant::now();
        let rows = self.shared.query(q::EXTEND, &[&self.seq, &self.token, &ms_i64(by)]).await?;
        self.held(&rows)?;
        *self.until.lock().unwrap_or_else(PoisonError::into_inner) = asked + by;
        Ok(())
    }

    async fn terminate(mut self, reason: String) -> Result<(), TransportError> {
        self.terminate_now(&reason).await
    }
}

impl PgDelivery {
    /// Moves the event to the dead letters with `reason` (see `TERMINATE`).
    async fn terminate_now(&mut self, reason: &str) -> Result<(), TransportError> {
        let attempt = i32::try_from(self.attempt).unwrap_or(i32::MAX);
        let params: [&(dyn tokio_postgres::types::ToSql + Sync); 8] = [
            &self.seq,
            &self.token,
            &self.topic,
            &self.subject,
            &self.event.id(),
            &self.raw,
            &attempt,
            &reason,
        ];
        let mut retry = self.retry();
        loop {
            match self.shared.query(q::TERMINATE, &params).await {
                Ok(_) => break,
                Err(e) if retry.again("terminate", &e).await => {}
                Err(e) => return Err(e),
            }
        }
        self.settled = true;
        self.shared.wake.enqueued();
        Ok(())
    }
}

/// Moves a claimed row that is not delivered to the dead letters with `reason`, best effort (a
/// row left claimed lapses and is claimed again, and judged again).
async fn dead_letter(shared: &Shared, row: &Claimed, attempt: u32, reason: &str) {
    let attempt = i32::try_from(attempt).unwrap_or(i32::MAX);
    let params: [&(dyn tokio_postgres::types::ToSql + Sync); 8] =
        [&row.seq, &row.token, &row.topic, &row.subject, &row.event_id, &row.event, &attempt, &reason];
    if let Err(e) = shared.query(q::TERMINATE, &params).await {
        tracing::warn!(error = %e, event_id = row.event_id, "could not move an event to the dead letters");
    }
}

impl Drop for PgDelivery {
    fn drop(&mut self) {
        self.shared.wake.forget_looked(&self.subject, self.event.id());
        self.shared.wake.unclaimed(self.event.id(), self.token);
        if self.settled || tokio::runtime::Handle::try_current().is_err() {
            return;
        }
        let shared = Arc::clone(&self.shared);
        let (seq, token, until) =
            (self.seq, self.token, *self.until.lock().unwrap_or_else(PoisonError::into_inner));
        tokio::spawn(async move { shared.give_back(seq, token, until).await });
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use orchestrator::event::Event;
    use orchestrator::transport::{Subscription, Topics, Transport};

    use crate::{PgConfig, PgStore, QueueConfig};

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_terminate_run_again_records_its_dead_letter_once() {
        let Some(url) = crate::test_support::database_url() else { return };
        let schema = crate::test_support::fresh_schema();
        let store = PgStore::<String>::open(PgConfig { schema: schema.clone(), ..PgConfig::new(&url) })
            .await
            .expect("open");
        let queue = store.queue(QueueConfig { poll: Duration::from_millis(20), ..QueueConfig::default() });
        let event = Event::builder()
            .id("doomed")
            .source("com.dead.client")
            .r#type("com.dead.step")
            .to("com.dead.step")
            .subject("s")
            .data_json(serde_json::json!({}))
            .build()
            .expect("event");
        queue.publish(vec![event]).await.expect("publish");
        let mut subscription = queue.subscribe(Topics::All).await.expect("subscribe");
        let mut delivery = tokio::time::timeout(Duration::from_secs(10), subscription.next())
            .await
            .expect("a delivery within 10 s")
            .expect("a delivery");
        // The second run is a retry whose first answer was lost: the row is gone by then.
        delivery.terminate_now("first").await.expect("terminate");
        delivery.terminate_now("again").await.expect("terminate again");
        let dead = queue.dead_letters(0, 10).await.expect("dead letters");
        assert_eq!(dead.len(), 1, "one dead letter: {dead:?}");
        assert_eq!(dead[0].reason, "first");
        drop((delivery, subscription, queue, store));
        crate::test_support::drop_schema(&url, &schema).await;
    }
}
