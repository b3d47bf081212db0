//! Retries of service calls: a [`RetryPolicy`] per service, shared by
//! [`machine!`](crate::machine!) machines (`services: { pay: PayV1 { retry: { … } } }`) and
//! [`Resumable`](super::Resumable)s ([`ResumableBuilder::service_with_retry`](super::ResumableBuilder::service_with_retry)).
//!
//! When a service answers a request with its system error (`sys.<type>.error`, whose `parentid`
//! is the request's id) and the policy retries that `errorName` with attempts left, the workflow
//! does **not** see the error: the request is sent again (same data, same `to`, `redirectto`,
//! domain and child-subject rules, a new id) after the backoff delay, on the workflow's durable
//! timer (the same one as a machine's `after`), so a pending retry survives a restart. When the
//! attempts are used up or the error is not retryable, the workflow gets the error as usual (a
//! machine's `svc::error` transition).
//!
//! Each retry shows in the workflow's journal: the error event is consumed by a step that
//! produces nothing and schedules the retry, and the wake-up that re-sends produces the new
//! request. The delay is computed deterministically (its jitter is a hash of the workflow's
//! subject, the request id and the attempt), so a replay of the journal computes the same one.
//!
//! ```
//! use std::time::Duration;
//! use orchestrator::orchestration::RetryPolicy;
//!
//! // 5 tries in all; waits 200 ms, 400 ms, 800 ms, 1.6 s between them (at most 10 s each);
//! // only these errors retry.
//! let policy = RetryPolicy::new(5)
//!     .backoff(Duration::from_millis(200), Duration::from_secs(10))
//!     .on(["Timeout", "Unavailable"]);
//! policy.check()?;
//! assert!(policy.retries("Timeout") && !policy.retries("BadRequest"));
//! assert_eq!(policy.delay(1, 0), Duration::from_millis(200));
//! assert_eq!(policy.delay(3, 0), Duration::from_millis(800));
//! assert_eq!(policy.delay(9, 0), Duration::from_secs(10)); // capped
//! # Ok::<(), orchestrator::orchestration::RetryPolicyError>(())
//! ```

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Number, Value};

use crate::contract::VersionedContract;
use crate::domain::Domain;
use crate::emit::request_events;
use crate::event::Event;
use crate::machine::{RequestOptions, ServiceRequest};
use crate::violation::Violation;

use super::StepInput;

/// How a service call is retried: how many tries in all, the exponential backoff between them
/// (doubling from a first delay, up to a cap, optionally with full jitter) and which errors
/// retry. See the [module documentation](self).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetryPolicy {
    attempts: u32,
    first: Duration,
    cap: Duration,
    jitter: bool,
    on: Vec<String>,
}

/// Why a [`RetryPolicy`] is not valid.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RetryPolicyError {
    /// `attempts` is 0: a call is tried at least once.
    #[error("a retry policy needs at least 1 attempt (the first try counts)")]
    NoAttempts,
    /// The cap is below the first delay.
    #[error("the backoff cap ({cap:?}) is below the first delay ({first:?})")]
    CapBelowFirst {
        /// The first delay.
        first: Duration,
        /// The cap.
        cap: Duration,
    },
}

impl RetryPolicy {
    /// `attempts` tries in all (the first included), 1 s doubling up to 60 s between them, no
    /// jitter, every error retried.
    pub fn new(attempts: u32) -> Self {
        Self {
            attempts,
            first: Duration::from_secs(1),
            cap: Duration::from_secs(60),
            jitter: false,
            on: Vec::new(),
        }
    }

    /// The delay before the second try (`first`), doubling for each later one, at most `cap`.
    #[must_use]
    pub fn backoff(mut self, first: Duration, cap: Duration) -> Self {
        self.first = first;
        self.cap = cap;
        self
    }

    /// Full jitter: each delay is drawn between 0 and its backoff (deterministically, from the
    /// workflow's subject, the request id and the attempt, so a replay draws the same).
    #[must_use]
    pub fn jitter(mut self, jitter: bool) -> Self {
        self.jitter = jitter;
        self
    }

    /// Retries only the system errors with these `errorName`s (default: every error).
    #[must_use]
    pub fn on<S: Into<String>>(mut self, error_names: impl IntoIterator<Item = S>) -> Self {
        self.on = error_names.into_iter().map(Into::into).collect();
        self
    }

    /// Checks the policy: at least one attempt, a cap not below the first delay.
    pub fn check(&self) -> Result<(), RetryPolicyError> {
        if self.attempts == 0 {
            return Err(RetryPolicyError::NoAttempts);
        }
        if self.cap < self.first {
            return Err(RetryPolicyError::CapBelowFirst { first: self.first, cap: self.cap });
        }
        Ok(())
    }

    /// The tries in all, the first included.
    pub fn attempts(&self) -> u32 {
        self.attempts
    }

    /// The first delay and the cap.
    pub fn backoff_bounds(&self) -> (Duration, Duration) {
        (self.first, self.cap)
    }

    /// Whether the delays are jittered.
    pub fn is_jittered(&self) -> bool {
        self.jitter
    }

    /// The `errorName`s that retry (empty: every one).
    pub fn error_names(&self) -> &[String] {
        &self.on
    }

    /// Whether a system error named `error_name` is retried.
    pub fn retries(&self, error_name: &str) -> bool {
        self.on.is_empty() || self.on.iter().any(|n| n == error_name)
    }

    /// The delay after try number `failed` (1 for the first) failed: `first · 2^(failed-1)`, at
    /// most the cap; with jitter, a value between 0 and that drawn from `seed`.
    pub fn delay(&self, failed: u32, seed: u64) -> Duration {
        let first = u64::try_from(self.first.as_millis()).unwrap_or(u64::MAX);
        let cap = u64::try_from(self.cap.as_millis()).unwrap_or(u64::MAX);
        let factor = 1u64.checked_shl(failed.saturating_sub(1)).unwrap_or(u64::MAX);
        let backoff = first.saturating_mul(factor).min(cap).max(first.min(cap));
        let ms = if self.jitter { seed % backoff.saturating_add(1) } else { backoff };
        Duration::from_millis(ms)
    }
}

/// FNV-1a over `parts`, each followed by a separator, from `seed`.
fn fnv(seed: u64, parts: &[&str]) -> u64 {
    let mut hash = seed;
    for part in parts {
        for byte in part.bytes().chain([0xff]) {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    hash
}

/// A uuid (v4 layout) derived from `parts`: the same parts give the same id, so a replay gives
/// the same request ids and the same state.
fn derived_id(parts: &[&str]) -> String {
    let high = fnv(0xcbf2_9ce4_8422_2325, parts);
    let low = fnv(0x6c62_272e_07bb_0142, parts);
    let mut bytes = [0u8; 16];
    bytes[..8].copy_from_slice(&high.to_be_bytes());
    bytes[8..].copy_from_slice(&low.to_be_bytes());
    uuid::Builder::from_random_bytes(bytes).into_uuid().hyphenated().to_string()
}

/// What is kept of a request to send it again.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct StoredRequest {
    service: String,
    data: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    to: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    redirectto: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    accesscontrol: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    executionunits: Option<Number>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    domain: Option<String>,
}

/// A request in flight to a service with a policy.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct InFlight {
    id: String,
    attempt: u32,
    request: StoredRequest,
}

/// A retry waiting for its delay.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Pending {
    /// The try this will be (2 for the first retry).
    attempt: u32,
    /// When it is due (Unix ms).
    due_ms: u64,
    /// The error that caused it.
    after_error: String,
    /// The id of the request that failed.
    #[serde(default)]
    replaces: String,
    request: StoredRequest,
}

/// The retry bookkeeping of one workflow, kept in its state under `"retries"`: the requests in
/// flight to services with a policy (dropped on their answer) and the retries waiting.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct RetryLedger {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    inflight: Vec<InFlight>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pending: Vec<Pending>,
}

/// The key of the ledger in a workflow's state.
const KEY: &str = "retries";

/// A service of a workflow, as the retry engine needs it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RetryService<'a> {
    /// The name a request carries ([`ServiceRequest::service`]).
    pub(crate) name: &'static str,
    pub(crate) contract: &'static VersionedContract,
    pub(crate) policy: Option<&'a RetryPolicy>,
}

/// What the engine decided about an incoming event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Intercepted {
    /// The event is a retried error: the workflow must not see it.
    Retried,
    /// The workflow sees the event.
    Pass,
}

impl RetryLedger {
    /// The ledger kept in `state` (empty when there is none).
    pub(crate) fn read(state: Option<&Value>) -> Result<Self, Violation> {
        match state.and_then(|s| s.get(KEY)) {
            None => Ok(Self::default()),
            Some(value) => Self::deserialize(value).map_err(|e| {
                Violation::execution(format!("the retries of the workflow cannot be read: {e}"))
            }),
        }
    }

    /// Writes the ledger into `state` (an object), or removes it when empty.
    pub(crate) fn write(&self, state: &mut Value) -> Result<(), Violation> {
        let Some(object) = state.as_object_mut() else { return Ok(()) };
        if self.inflight.is_empty() && self.pending.is_empty() {
            object.remove(KEY);
        } else {
            let value = serde_json::to_value(self).map_err(|e| {
                Violation::execution(format!("the retries of the workflow cannot be saved: {e}"))
            })?;
            object.insert(KEY.to_owned(), value);
        }
        Ok(())
    }

    /// Forgets everything (the workflow is done).
    pub(crate) fn clear(&mut self) {
        self.inflight.clear();
        self.pending.clear();
    }

    /// When the earliest retry is due (Unix ms).
    pub(crate) fn next_due_ms(&self) -> Option<u64> {
        self.pending.iter().map(|p| p.due_ms).min()
    }

    /// Handles an incoming event: an answer to a tracked request drops it; a system error the
    /// policy retries (with attempts left) schedules the retry and is [`Intercepted::Retried`].
    pub(crate) fn on_event(
        &mut self,
        event: &Event,
        subject: &str,
        now_ms: u64,
        services: &[RetryService<'_>],
    ) -> Intercepted {
        let Some(parent) = event.parentid() else { return Intercepted::Pass };
        let Some(index) = self.inflight.iter().position(|f| f.id == parent) else { return Intercepted::Pass };
        let tracked = self.inflight.remove(index);
        let Some(service) = services.iter().find(|s| s.name == tracked.request.service) else {
            return Intercepted::Pass;
        };
        let error_type = format!("sys.{}.error", service.contract.accepts().event_type());
        if event.r#type() != error_type {
            return Intercepted::Pass;
        }
        let Some(policy) = service.policy else { return Intercepted::Pass };
        let error_name = event.data().get("errorName").and_then(Value::as_str).unwrap_or_default();
        if tracked.attempt >= policy.attempts() || !policy.retries(error_name) {
            return Intercepted::Pass;
        }
        let attempt = tracked.attempt.to_string();
        let seed = fnv(0x9e37_79b9_7f4a_7c15, &[subject, &tracked.id, &attempt]);
        let delay = u64::try_from(policy.delay(tracked.attempt, seed).as_millis()).unwrap_or(u64::MAX);
        self.pending.push(Pending {
            attempt: tracked.attempt + 1,
            due_ms: now_ms.saturating_add(delay),
            after_error: error_name.to_owned(),
            replaces: tracked.id,
            request: tracked.request,
        });
        Intercepted::Retried
    }
}

/// Emits the requests of one step and keeps the ledger: first the retries due by the step's
/// time, then `requests` (the workflow's new ones). A request to a service with a policy gets an
/// id derived from the workflow's subject and the triggering event (deterministic, for replays)
/// and is tracked until its answer.
pub(crate) struct RetryEmitter<'a, 'i> {
    source: &'static str,
    service_domains: &'a [crate::domain::Domain],
    input: &'a StepInput<'i>,
    self_contract: &'a VersionedContract,
    services: &'a [RetryService<'a>],
    count: u32,
}

impl<'a, 'i> RetryEmitter<'a, 'i> {
    pub(crate) fn new(
        source: &'static str,
        service_domains: &'a [crate::domain::Domain],
        input: &'a StepInput<'i>,
        self_contract: &'a VersionedContract,
        services: &'a [RetryService<'a>],
    ) -> Self {
        Self { source, service_domains, input, self_contract, services, count: 0 }
    }

    /// The events of the retries due by the step's time (they are then in flight), and for
    /// each the id of the request it replaces.
    pub(crate) fn due(&mut self, ledger: &mut RetryLedger) -> Result<Vec<(String, Event)>, Violation> {
        let now_ms = crate::memory::unix_ms(self.input.now);
        let (due, waiting): (Vec<Pending>, Vec<Pending>) =
            std::mem::take(&mut ledger.pending).into_iter().partition(|p| p.due_ms <= now_ms);
        ledger.pending = waiting;
        let mut events = Vec::new();
        for pending in due {
            let Some(service) = self.services.iter().find(|s| s.name == pending.request.service) else {
                continue;
            };
            let stored = &pending.request;
            let request = ServiceRequest {
                service: service.name,
                contract: service.contract,
                event_type: service.contract.accepts().event_type(),
                dataschema: service.contract.dataschema(),
                data: stored.data.clone(),
                options: RequestOptions {
                    id: None,
                    to: stored.to.clone(),
                    redirectto: stored.redirectto.clone(),
                    accesscontrol: stored.accesscontrol.clone(),
                    executionunits: stored.executionunits.clone(),
                    domains: Some(vec![stored.domain.clone().map_or(Domain::Local, Domain::Named)]),
                },
            };
            let replaces = pending.replaces;
            events.extend(
                self.emit(ledger, &request, pending.attempt)?.into_iter().map(|e| (replaces.clone(), e)),
            );
        }
        Ok(events)
    }

    /// The events of `requests`, tracking those of services with a policy.
    pub(crate) fn requests(
        &mut self,
        ledger: &mut RetryLedger,
        requests: &[ServiceRequest],
    ) -> Result<Vec<Event>, Violation> {
        let mut events = Vec::new();
        for request in requests {
            events.extend(self.emit(ledger, request, 1)?);
        }
        Ok(events)
    }

    fn emit(
        &mut self,
        ledger: &mut RetryLedger,
        request: &ServiceRequest,
        attempt: u32,
    ) -> Result<Vec<Event>, Violation> {
        let events = request_events(
            self.source,
            self.service_domains,
            self.input,
            self.self_contract,
            std::slice::from_ref(request),
        )?;
        let tracked = self.services.iter().any(|s| s.name == request.service && s.policy.is_some());
        if !tracked {
            return Ok(events);
        }
        let mut out = Vec::with_capacity(events.len());
        for event in events {
            let event = if attempt > 1 || request.options.id.is_none() {
                self.count += 1;
                let count = self.count.to_string();
                let trigger = self.input.event;
                let id = derived_id(&[self.input.subject.as_str(), trigger.source(), trigger.id(), &count]);
                event.to_builder().id(id).build().map_err(|e| {
                    Violation::execution(format!(
                        "the retried request to {} cannot be built: {e}",
                        request.service
                    ))
                })?
            } else {
                event
            };
            ledger.inflight.push(InFlight {
                id: event.id().to_owned(),
                attempt,
                request: StoredRequest {
                    service: request.service.to_owned(),
                    data: request.data.clone(),
                    to: event.to().map(str::to_owned),
                    redirectto: event.redirectto().map(str::to_owned),
                    accesscontrol: event.accesscontrol().map(str::to_owned),
                    executionunits: event.executionunits_number().cloned(),
                    domain: event.domain().map(str::to_owned),
                },
            });
            out.push(event);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_double_up_to_the_cap() {
        let policy = RetryPolicy::new(6).backoff(Duration::from_millis(100), Duration::from_millis(500));
        let delays: Vec<u128> = (1..=5).map(|n| policy.delay(n, 7).as_millis()).collect();
        assert_eq!(delays, [100, 200, 400, 500, 500]);
    }

    #[test]
    fn jitter_stays_within_the_backoff_and_is_deterministic() {
        let policy =
            RetryPolicy::new(3).backoff(Duration::from_millis(100), Duration::from_secs(1)).jitter(true);
        for seed in [0, 1, 99, 100, 101, u64::MAX] {
            assert!(policy.delay(2, seed) <= Duration::from_millis(200));
            assert_eq!(policy.delay(2, seed), policy.delay(2, seed));
        }
        assert_eq!(derived_id(&["a", "b"]), derived_id(&["a", "b"]));
        assert_ne!(derived_id(&["a", "b"]), derived_id(&["ab", ""]));
    }

    #[test]
    fn checks() {
        assert_eq!(RetryPolicy::new(0).check(), Err(RetryPolicyError::NoAttempts));
        let bad = RetryPolicy::new(2).backoff(Duration::from_secs(2), Duration::from_secs(1));
        assert!(matches!(bad.check(), Err(RetryPolicyError::CapBelowFirst { .. })));
        assert!(RetryPolicy::new(1).check().is_ok());
    }
}
