//! The properties checked in every reachable state.
//!
//! `always` (safety):
//! * [`ONE_WRITER_PER_VERSION`]: at most one lease epoch (one writer) commits a given step:
//!   each version of the workflow is written once;
//! * [`NEVER_REOPENS`]: a completed workflow never reopens: once done, the record stays done and
//!   the journal has no entry after the one that finished it;
//! * [`EFFECT_AT_MOST_ONCE`]: the service's effect is applied at most once per request;
//! * [`JOURNAL_MATCHES_RECORD`]: the journal is gapless (entry `i` wrote version `i + 1`), as long
//!   as the version, ends with the stored record, and replays: each entry's record is the core
//!   step of the previous record and the entry's consumed event;
//! * [`COMPLETES_ONCE_FAULTS_STOP`]: from every reachable state, once faults stop (no more
//!   crashes or duplicates; the claims and the lease of dead workers lapse), the live workers
//!   complete the workflow: nothing the protocol needs was lost. It is checked by running the
//!   workers from the state, one fault-free schedule (workers busy with a delivery first), which
//!   makes it a safety property of each state.
//!
//! `sometimes` (the model is not vacuous; each names a path the checker must find):
//! [`COMPLETES`], [`TAKEOVER_AFTER_CRASH`], [`DUPLICATE_DELIVERY`], [`FENCED_OUT`],
//! [`CAS_REFUSED`], [`JOURNAL_ANSWERED`], [`ANSWER_REPLAYED`].

use stateright::{Model, Property};

use crate::Protocol;
use crate::actions::{Action, core_step};
use crate::state::{History, State};

/// Each version is written by one commit only.
pub const ONE_WRITER_PER_VERSION: &str = "at most one epoch commits a given step";
/// Done stays done.
pub const NEVER_REOPENS: &str = "a completed workflow never reopens";
/// One effect per request.
pub const EFFECT_AT_MOST_ONCE: &str = "an effect is applied at most once per request";
/// The journal is the record's history.
pub const JOURNAL_MATCHES_RECORD: &str = "the journal is gapless and equals the record";
/// Nothing needed is lost: without more faults the workflow completes.
pub const COMPLETES_ONCE_FAULTS_STOP: &str = "once faults stop, the workflow completes";
/// A workflow completes.
pub const COMPLETES: &str = "a workflow completes";
/// A lease held by a crashed worker lapses and another worker takes it.
pub const TAKEOVER_AFTER_CRASH: &str = "a takeover after a crash happens";
/// An event is delivered again.
pub const DUPLICATE_DELIVERY: &str = "a duplicate delivery happens";
/// A stale lease's commit is refused.
pub const FENCED_OUT: &str = "a stale lease is fenced out";
/// A commit against an old version is refused.
pub const CAS_REFUSED: &str = "a compare-and-swap refuses a write";
/// A redelivered event is answered from the journal.
pub const JOURNAL_ANSWERED: &str = "the journal answers a redelivery";
/// A redelivered request gets the recorded answer.
pub const ANSWER_REPLAYED: &str = "a redelivered request gets its recorded answer";

/// The `always` properties' names.
pub const SAFETY: [&str; 5] = [
    ONE_WRITER_PER_VERSION,
    NEVER_REOPENS,
    EFFECT_AT_MOST_ONCE,
    JOURNAL_MATCHES_RECORD,
    COMPLETES_ONCE_FAULTS_STOP,
];

/// Every property.
pub fn all() -> Vec<Property<Protocol>> {
    vec![
        Property::always(ONE_WRITER_PER_VERSION, |_, s| one_writer_per_version(s)),
        Property::always(NEVER_REOPENS, |_, s| never_reopens(s)),
        Property::always(EFFECT_AT_MOST_ONCE, |_, s| effect_at_most_once(s)),
        Property::always(JOURNAL_MATCHES_RECORD, journal_matches_record),
        Property::always(COMPLETES_ONCE_FAULTS_STOP, completes_once_faults_stop),
        Property::sometimes(COMPLETES, |_, s| completes(s)),
        Property::sometimes(TAKEOVER_AFTER_CRASH, |_, s| history(s).took_over),
        Property::sometimes(DUPLICATE_DELIVERY, |_, s| history(s).redelivered),
        Property::sometimes(FENCED_OUT, |_, s| history(s).fenced),
        Property::sometimes(CAS_REFUSED, |_, s| history(s).conflicted),
        Property::sometimes(JOURNAL_ANSWERED, |_, s| history(s).journal_answered),
        Property::sometimes(ANSWER_REPLAYED, |_, s| history(s).replayed),
    ]
}

/// The names of the `sometimes` properties a configuration can reach: without locking there is
/// no lease to take over or fence, without recorded answers none to replay, and with the lease,
/// fencing and the read under the lease, the fencing check refuses every write the
/// compare-and-swap would.
pub fn reachable(model: &Protocol) -> Vec<&'static str> {
    let p = model.protections;
    let mut names = vec![COMPLETES, DUPLICATE_DELIVERY];
    // With a lease read under it and fencing, a writer that would conflict is fenced first.
    if !p.locking || !p.fencing || !p.read_under_lease {
        names.push(CAS_REFUSED);
    }
    if p.locking {
        names.push(TAKEOVER_AFTER_CRASH);
        if p.fencing {
            names.push(FENCED_OUT);
        }
    }
    if p.journal {
        names.push(JOURNAL_ANSWERED);
    }
    if p.recorded_answers {
        names.push(ANSWER_REPLAYED);
    }
    names
}

fn history(s: &State) -> &History {
    &s.history
}

fn completes(s: &State) -> bool {
    s.record.is_some_and(|r| r.done) && s.history.completed
}

fn effect_at_most_once(s: &State) -> bool {
    s.history.effects.iter().all(|&n| n <= 1)
}

fn one_writer_per_version(s: &State) -> bool {
    let w = &s.history.writes;
    w.iter().enumerate().all(|(i, (v, _))| w[i + 1..].iter().all(|(u, _)| u != v))
}

fn never_reopens(s: &State) -> bool {
    let stays_done = !s.history.was_done || s.record.is_some_and(|r| r.done);
    let last_done = s.journal.iter().position(|e| e.record.done).is_none_or(|i| i + 1 == s.journal.len());
    stays_done && last_done
}

fn journal_matches_record(model: &Protocol, s: &State) -> bool {
    let gapless = s.journal.iter().enumerate().all(|(i, e)| usize::from(e.version) == i + 1);
    let as_long = s.journal.len() == usize::from(s.version);
    let ends_with_record = s.journal.last().map(|e| e.record) == s.record;
    let mut previous = None;
    let replays = s.journal.iter().all(|e| {
        let step = core_step(model.calls, previous, e.consumed);
        previous = Some(e.record);
        step == Some((e.record, e.produced))
    });
    gapless && as_long && ends_with_record && replays
}

/// Whether `property` is one of the model's properties (a guard for tests naming them).
pub fn is_property(model: &Protocol, property: &str) -> bool {
    model.properties().iter().any(|p| p.name == property)
}

/// How many fault-free steps [`COMPLETES_ONCE_FAULTS_STOP`] allows (far more than a workflow of
/// the model's bounds needs).
const FAULT_FREE_STEPS: usize = 200;

fn completes_once_faults_stop(model: &Protocol, state: &State) -> bool {
    let mut s = state.clone();
    let mut actions = Vec::new();
    for _ in 0..FAULT_FREE_STEPS {
        if completes(&s) {
            return true;
        }
        // Time passes for the dead: a claim or a lease whose holder no longer holds it lapses.
        for row in &mut s.queue {
            if let Some(w) = row.claimed_by
                && s.workers[usize::from(w)].holds() != Some(row.msg)
            {
                row.claimed_by = None;
            }
        }
        s.queue.sort();
        if let Some((w, epoch)) = s.lease
            && !matches!(s.workers[usize::from(w)], crate::state::Worker::Locked { epoch: e, .. } if e == epoch)
        {
            s.lease = None;
        }
        actions.clear();
        model.actions(&s, &mut actions);
        // A worker busy with a delivery goes on first; no fault is injected.
        let busy = actions.iter().find(|a| !a.is_fault() && !matches!(a, Action::Claim(..)));
        let next = busy.or_else(|| actions.iter().find(|a| matches!(a, Action::Claim(..))));
        let Some(&next) = next else { return false };
        match model.next_state(&s, next) {
            Some(n) => s = n,
            None => return false,
        }
    }
    false
}
