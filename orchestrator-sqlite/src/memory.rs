//! The [`Memory`] implementation of [`SqliteMemory`]: every change is one operation of the
//! writer thread (group-committed); reads without a lease go to the read pool.

use std::sync::Arc;
use std::time::Duration;

use orchestrator::event::Event;
use orchestrator::memory::{Acquired, Commit, EventKey, Lease, Memory, MemoryError, Stored, Wake, check_id};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::SqliteMemory;
use crate::cache::Committed;
use crate::error::backend;
use crate::ops::{self, AcquireRow};
use crate::reads::{self, Tables, read};
use crate::store::{encode, forget_all_if, should_sweep, write_op};
use crate::time::from_ms;

impl<R> Memory<R> for SqliteMemory<R>
where
    R: Serialize + DeserializeOwned + Send + Sync + 'static,
{
    fn catalog(&self) -> Option<&dyn orchestrator::memory::DynCatalog> {
        Some(self)
    }

    fn answers(&self) -> Option<&dyn orchestrator::memory::DynAnswers> {
        Some(self)
    }

    fn dead_letter_store(&self) -> Option<&dyn orchestrator::memory::DynDeadLetterStore> {
        Some(self)
    }

    fn workflow_index(&self) -> Option<&dyn orchestrator::memory::DynWorkflowIndex> {
        Some(self)
    }

    async fn read(&self, id: &str) -> Result<Option<Stored<R>>, MemoryError> {
        check_id(id)?;
        read(&self.readers, id, |conn, id| reads::record(conn, id, Tables::Live)).await
    }

    async fn lock(&self, id: &str) -> Result<Option<Lease>, MemoryError> {
        check_id(id)?;
        let ttl = self.config.lease_ttl;
        let owned = id.to_owned();
        let owner = self.config.owner.clone();
        self.writer.submit(id, move |conn, now| ops::lock(conn, &owned, owner.as_deref(), ttl, now)).await
    }

    async fn renew(&self, lease: &Lease) -> Result<Lease, MemoryError> {
        check_id(&lease.id)?;
        let (id, token, ttl) = (lease.id.clone(), lease.token, self.config.lease_ttl);
        let renewed =
            self.writer.submit(&lease.id, move |conn, now| ops::renew(conn, &id, token, ttl, now)).await?;
        let Some(expires) = renewed else {
            return Err(MemoryError::StaleLease { id: lease.id.clone(), token: lease.token });
        };
        let expires_at = from_ms("lease expiry", expires).map_err(|e| backend(&lease.id, e))?;
        Ok(Lease { expires_at, ..lease.clone() })
    }

    async fn unlock(&self, lease: &Lease) -> Result<bool, MemoryError> {
        check_id(&lease.id)?;
        let (id, token) = (lease.id.clone(), lease.token);
        self.writer.submit(&lease.id, move |conn, now| ops::unlock(conn, &id, token, now)).await
    }

    /// With `lock`, one operation of the writer thread: the lease, then, in the same
    /// transaction, the record's version checked against the record cache (the record itself is
    /// read only when the cache does not have the current one) and the journal's answer (unless
    /// the cache knows the event was never consumed). Without `lock`, the record cache or one
    /// read on a read connection: see the [record cache](crate#record-cache) for what a hit
    /// without a lease guarantees.
    async fn acquire(
        &self,
        id: &str,
        event: EventKey<'_>,
        lock: bool,
    ) -> Result<Option<Acquired<R>>, MemoryError> {
        check_id(id)?;
        let hit = self.cache.get(id, event);
        if !lock {
            return self.acquire_unlocked(id, event, hit).await.map(Some);
        }
        let ttl = self.config.lease_ttl;
        let owner = self.config.owner.clone();
        let (owned, source, event_id) = (id.to_owned(), event.source.to_owned(), event.id.to_owned());
        let epoch = Arc::clone(&self.epoch);
        // The cache entry counts only if no foreign commit came since it was made (the writer
        // checks at the start of each group) and its version is the stored one.
        let cached = hit.as_ref().map(|h| (h.epoch, h.stored.version, h.not_consumed));
        let taken = self
            .writer
            .submit(id, move |conn, now| {
                let Some(lease) = ops::lock(conn, &owned, owner.as_deref(), ttl, now)? else {
                    return Ok(None);
                };
                let cached = cached.filter(|(e, _, _)| *e == epoch.current()).map(|(_, v, fresh)| (v, fresh));
                let row = ops::acquire_row(conn, &owned, &source, &event_id, cached)?;
                Ok(Some((lease, row)))
            })
            .await?;
        let Some((lease, AcquireRow { stored, produced })) = taken else { return Ok(None) };
        let stored = match stored {
            None => None,
            Some((version, Some(record))) => Some(Stored {
                record: Arc::new(record.decode(id, version)?),
                version: reads::version(id, version)?,
            }),
            Some((version, None)) => match hit {
                Some(hit) => Some(hit.stored),
                // Not reachable: the record is only left out for a cached version.
                None => {
                    return Err(backend(
                        id,
                        crate::SqliteError::Invalid { what: "cached version", value: version },
                    ));
                }
            },
        };
        let produced = match (&stored, produced) {
            (Some(_), Some((v, events))) => Some(reads::decode_produced(id, v, &events)?),
            _ => None,
        };
        Ok(Some(Acquired { lease: Some(lease), stored, produced }))
    }

    /// One operation of the writer thread (see the [crate documentation](crate)).
    async fn commit(&self, commit: Commit<'_, R>) -> Result<u64, MemoryError> {
        let Commit { id, record, prev, lease, release, finished, meta, outbox } = commit;
        check_id(id)?;
        // Each event the step produced is serialized once, for its journal row and its outbox row.
        let entry_produced = meta.entry.as_ref().map_or(&[][..], |entry| entry.produced);
        let mut produced_json = entry_produced
            .iter()
            .map(|e| encode(e.id(), "produced event", e))
            .collect::<Result<Vec<_>, MemoryError>>()?;
        let write =
            write_op(id, &record, prev, lease.map(|l| (l.id.as_str(), l.token)), &meta, &produced_json)?;
        let outbox = match outbox {
            None => None,
            Some(step) => {
                // The outbox's events are some of the produced ones, in the same order.
                let mut next = 0;
                let produced = step
                    .produced
                    .iter()
                    .map(|e| {
                        while next < entry_produced.len() && entry_produced[next].id() != e.id() {
                            next += 1;
                        }
                        let json = match produced_json.get_mut(next) {
                            Some(json) => std::mem::take(json),
                            None => encode(e.id(), "outbox event", e)?,
                        };
                        next += 1;
                        Ok((e.id().to_owned(), json))
                    })
                    .collect::<Result<_, MemoryError>>()?;
                Some(ops::AdvanceOp {
                    consumed: step.consumed.map(str::to_owned).into_iter().collect(),
                    produced,
                })
            }
        };
        let mut op = ops::CommitOp { write, finished, retention: self.config.retention, release, outbox };
        let epoch = Arc::clone(&self.epoch);
        let last_sweep = self.sweep_flag();
        let written = self
            .writer
            .submit(id, move |conn, now| {
                let sweep = op.finished && should_sweep(&last_sweep, now);
                let (version, swept) = ops::commit(conn, &mut op, now, sweep)?;
                forget_all_if(swept > 0, &epoch);
                // The operation's buffers come back to be freed by the caller's thread, which
                // allocated them: freed on the writer thread, they would contend for the
                // caller's allocator arena (glibc's malloc locks an arena to take back memory
                // freed by another thread).
                Ok((version, epoch.current(), op))
            })
            .await
            .map(|(version, epoch, op)| {
                drop(op);
                (version, epoch)
            });
        match written {
            // A finished workflow is rarely read again (and may be gone): it leaves the cache.
            Ok((version, _)) if finished => {
                self.cache.forget(id);
                Ok(version)
            }
            Ok((version, epoch)) => {
                let consumed = meta.entry.as_ref().and_then(|e| e.consumed).map(EventKey::of);
                self.cache.committed(Committed { id, record, prev, version, epoch, consumed });
                Ok(version)
            }
            Err(error) => {
                self.cache.forget(id);
                Err(error)
            }
        }
    }

    async fn produced(&self, id: &str, event: EventKey<'_>) -> Result<Option<Vec<Event>>, MemoryError> {
        check_id(id)?;
        let (source, event_id) = (event.source.to_owned(), event.id.to_owned());
        read(&self.readers, id, move |conn, id| reads::produced(conn, id, &source, &event_id)).await
    }

    /// One operation of the writer thread, on its clock (`SystemTime::now()` in the writer).
    async fn claim_due(&self, limit: usize, claim: Duration) -> Result<Vec<Wake>, MemoryError> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        let due = self
            .writer
            .submit("(claim_due)", move |conn, now| ops::claim_due(conn, limit, claim, now))
            .await?;
        due.into_iter()
            .map(|(id, at)| match from_ms("wake-up time", at) {
                Ok(at) => Ok(Wake { id, at }),
                Err(e) => Err(backend(&id, e)),
            })
            .collect()
    }

    async fn cleanup(&self, id: &str) -> Result<(), MemoryError> {
        check_id(id)?;
        let retention = self.config.retention;
        let owned = id.to_owned();
        let epoch = Arc::clone(&self.epoch);
        let last_sweep = self.sweep_flag();
        let cleaned = self
            .writer
            .submit(id, move |conn, now| {
                let swept = ops::cleanup(conn, &owned, retention, now, should_sweep(&last_sweep, now))?;
                forget_all_if(swept > 0, &epoch);
                Ok(())
            })
            .await;
        // A finished workflow is rarely read again; with `Remove` or `Archive` it is gone.
        self.cache.forget(id);
        cleaned
    }
}

impl<R> SqliteMemory<R>
where
    R: DeserializeOwned + Send + Sync + 'static,
{
    /// `acquire` without a lease: the record cache when it has the record (and knows the event
    /// was never consumed, or the journal says), else one read on a read connection.
    async fn acquire_unlocked(
        &self,
        id: &str,
        event: EventKey<'_>,
        hit: Option<crate::cache::Hit<R>>,
    ) -> Result<Acquired<R>, MemoryError> {
        let (source, event_id) = (event.source.to_owned(), event.id.to_owned());
        if let Some(hit) = hit {
            let produced = if hit.not_consumed {
                None
            } else {
                read(&self.readers, id, move |conn, id| reads::produced(conn, id, &source, &event_id)).await?
            };
            return Ok(Acquired { lease: None, stored: Some(hit.stored), produced });
        }
        // One read connection, one hand-off to the blocking pool. No snapshot is needed: the
        // journal entry of an event is committed with the record that consumed it, so an entry
        // found is the answer whatever the record read before it.
        read(&self.readers, id, move |conn, id| {
            let stored = reads::record::<R>(conn, id, Tables::Live)?
                .map(|Stored { record, version }| Stored { record: Arc::new(record), version });
            let produced = match stored {
                Some(_) => reads::produced(conn, id, &source, &event_id)?,
                None => None,
            };
            Ok(Acquired { lease: None, stored, produced })
        })
        .await
    }
}
