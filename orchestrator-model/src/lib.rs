//! A model of the orchestrator's step protocol, checked with [`stateright`].
//!
//! # What is modelled
//!
//! One workflow that makes `calls` requests to a service, one after the other, then completes;
//! `workers` workers that each run either side; one queue; one store. Every action is one atomic
//! step of the real system ([`actions::Action`]), so a crash, a lapse or another worker's step
//! can fall between any two:
//!
//! | model | real code |
//! | --- | --- |
//! | [`Action::Claim`]: any visible row, reading the record, its version and the journal's answer (used without a lease) | `claim` (`orchestrator-postgres/src/queries/claim.rs`, migration 4 of `src/schema.rs`), `Memory::acquire` (`orchestrator/src/memory/mod.rs`) |
//! | [`Action::Lock`]: one attempt, a new epoch, then the read under the lease; denied → nack | `Memory::lock`/`acquire` with `lock = true` (`Locking::Always`), fencing token `Lease::token` |
//! | [`Protocol::decide`]: journal answer, done, last consumed, second init, no record, core step | `Lifecycle::locked` (`orchestrator/src/orchestration/lifecycle.rs`) |
//! | [`Action::Step`]: fencing check, then CAS on the version read, journal row, consumed event out of the queue, products in (`ON CONFLICT (event_id) DO NOTHING`), lease released | `Memory::commit` / `commit_step` (migration 6; `queries/commit.rs`), `InMemory::store`; `outbox_step` for an event answered or ignored |
//! | [`Action::Emit`] (with `settle_in_commit` off): publish the product, then ack the delivery | `Lifecycle::execute`'s caller, the dispatcher (`orchestrator/src/runtime/dispatcher.rs`) over a transport |
//! | [`Action::Serve`] (+ [`Action::Record`] when not atomic) + [`Action::Settle`]: the effect (with its recorded answer, keyed by the request), then `ack` by claim with the answer | a service handler behind `Outboxed` (`orchestrator/src/outbox/`), `ack` (`queries/ack.rs`: delete by `(seq, token)`, enqueue only if it was still there) |
//! | [`Action::Crash`]: a worker forgets everything; its claims and its lease stay until they lapse | a killed process (`orchestrator-sqlite/tests/crash.rs`) |
//! | [`Action::LapseClaim`], [`Action::ExpireLease`]: a visibility deadline or a lease TTL passes | `REAP_CLAIMS`, `claimed_until`; `leases.expires_at` judged by the store's clock (a paused holder) |
//! | [`Action::Duplicate`]: another copy of a delivery | a broker's redelivery (JetStream, Redis Streams), the outbox's `redeliver` after a restart |
//!
//! The queue is a multiset: any visible row may be claimed next, so deliveries are reordered and
//! delayed at will; with lapses and duplicates they are delivered again.
//! `Protections::locking = false` is `Locking::Never`, for exclusive-lane queues: no lease, only
//! the compare-and-swap guards (lanes themselves are not modelled: any row may be claimed, which
//! is a superset of what lanes allow).
//!
//! # What is abstracted away
//!
//! * Time: a lease or a claim lapses when an action says so ([`Action::ExpireLease`],
//!   [`Action::LapseClaim`]), within a budget; clocks, TTL values and renewals are not modelled.
//! * One workflow, one service, one kind of request; its payloads; failures of the core step (a
//!   failure latch is one more write, like any other); timers; child workflows; retention.
//! * Reads: the claim reads the record, its version and the journal's answer (as the PostgreSQL
//!   claim does); with a lease, [`Action::Lock`] reads them again under the lease
//!   (`Memory::acquire`), and the claim's read serves only `Locking::Never`, as in
//!   `orchestrator-postgres/src/store.rs` (`acquire`).
//! * The service's effect and its recorded answer are one transaction (its own store, or an
//!   idempotency key at the provider), or two steps (`Protections::atomic_answer` off, a mutation);
//!   the service's store itself is not modelled further.
//! * The queue's lanes, attempts, dead letters and `nack` delays. Two ways of settling a workflow
//!   event are modelled ([`Protocol::settle_in_commit`]): in the commit's transaction, as a durable
//!   node over PostgreSQL or SQLite does, or by a publish and an ack after the commit
//!   ([`Action::Emit`]), as over a transport that keeps no outbox in the store. The service
//!   settles with `ack` by claim in both.
//! * The record's content: a position in the workflow, a done flag and the last event consumed.
//!
//! # Properties
//!
//! See [`properties`]. [`Protections`] switch each protection off, and the tests show that the
//! checker then finds a counterexample (the model can fail).

pub mod actions;
pub mod properties;
pub mod state;

use std::collections::{HashSet, VecDeque};
use std::time::{Duration, Instant};

use stateright::{Checker, Model};

pub use actions::{Action, Decision, core_step};
pub use state::{Budget, Msg, State};

/// The protections of the protocol, each of which can be switched off to show what it guards.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Protections {
    /// The commit's compare-and-swap on the version read (`WHERE version = p_prev`, and `ON
    /// CONFLICT (id) DO NOTHING` for a first write).
    pub cas: bool,
    /// The commit's fencing check: the writer's lease is still the current one.
    pub fencing: bool,
    /// Workers take the lease before a step (`Locking::Always`); off is `Locking::Never`.
    pub locking: bool,
    /// With a lease, the record and the journal's answer are read after the lease is taken
    /// (`Memory::acquire` with `lock = true`, one statement), not taken from the claim's read
    /// (`orchestrator-postgres`'s `Store::acquire` uses the claim's read only without a lock).
    pub read_under_lease: bool,
    /// The journal's answer to a redelivered event, and the last-consumed gate.
    pub journal: bool,
    /// The service records its answer per request and returns it to a redelivered request.
    pub recorded_answers: bool,
    /// The answer is recorded in the same transaction as the effect (or by the provider under the
    /// request's key); off, the effect and the record are two steps, with a crash possible
    /// between them.
    pub atomic_answer: bool,
}

impl Protections {
    /// Every protection on.
    pub const ALL: Self = Self {
        cas: true,
        fencing: true,
        locking: true,
        read_under_lease: true,
        journal: true,
        recorded_answers: true,
        atomic_answer: true,
    };
}

/// The model: the protocol's bounds and protections.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Protocol {
    /// Service calls the workflow makes before completing.
    pub calls: u8,
    /// Workers.
    pub workers: u8,
    /// Whether a workflow step settles its delivery and enqueues its product in the commit's
    /// transaction (a durable node over PostgreSQL or SQLite: `commit_step`'s outbox part), or
    /// publishes and acknowledges after it ([`Action::Emit`]: a transport acknowledged after the
    /// step, where a crash between the commit and the emission loses the product unless the
    /// redelivered event gets the journal's answer).
    pub settle_in_commit: bool,
    /// Faults the checker may inject along one path.
    pub budget: Budget,
    /// The protections in force.
    pub protections: Protections,
}

impl Protocol {
    /// The bound of the mutation tests: one service call, two workers, one fault of each kind
    /// (enough for every counterexample, found in under a second).
    pub fn small() -> Self {
        Self {
            calls: 1,
            workers: 2,
            settle_in_commit: true,
            budget: Budget { crashes: 1, lapses: 1, expiries: 1, duplicates: 1 },
            protections: Protections::ALL,
        }
    }

    /// The bound run in CI (`cargo test`): two service calls, two workers, one fault of each
    /// kind.
    pub fn ci() -> Self {
        Self { calls: 2, ..Self::small() }
    }

    /// A larger bound (the ignored test, or `ORCHESTRATOR_MODEL_LARGE=1`): two service calls,
    /// two workers, two crashes, two claim lapses, two lease expiries and one duplicate.
    pub fn large() -> Self {
        Self {
            calls: 2,
            budget: Budget { crashes: 2, lapses: 2, expiries: 2, duplicates: 1 },
            ..Self::small()
        }
    }

    /// The same bounds with other protections.
    #[must_use]
    pub fn with(mut self, protections: Protections) -> Self {
        self.protections = protections;
        self
    }

    /// The same bounds, with deliveries settled in the commit or after it.
    #[must_use]
    pub fn settling_in_commit(mut self, settle_in_commit: bool) -> Self {
        self.settle_in_commit = settle_in_commit;
        self
    }

    /// Explores every reachable state breadth first, on `threads` threads.
    pub fn check(self, threads: usize) -> Report {
        let start = Instant::now();
        let checker = self.checker().threads(threads).spawn_bfs().join();
        let elapsed = start.elapsed();
        let discoveries =
            checker.discoveries().into_iter().map(|(name, path)| (name, path.to_string())).collect();
        Report {
            states: checker.state_count(),
            unique_states: checker.unique_state_count(),
            max_depth: checker.max_depth(),
            elapsed,
            discoveries,
        }
    }
}

impl Protocol {
    /// A shortest path (fewest actions) to a state where the `always` property `property` fails,
    /// found breadth first on one thread; `None` when no reachable state breaks it (or when
    /// there is no such property). The checker's own path may be longer: it keeps the last
    /// failing state it met.
    pub fn shortest_counterexample(self, property: &str) -> Option<Vec<Action>> {
        let holds = self.properties().into_iter().find(|p| p.name == property)?.condition;
        let mut states: Vec<(State, Option<(usize, Action)>)> = Vec::new();
        let mut seen: HashSet<State> = HashSet::new();
        let mut queue = VecDeque::new();
        for init in self.init_states() {
            if seen.insert(init.clone()) {
                states.push((init, None));
                queue.push_back(states.len() - 1);
            }
        }
        let mut actions = Vec::new();
        while let Some(i) = queue.pop_front() {
            if !holds(&self, &states[i].0) {
                let mut path = Vec::new();
                let mut at = i;
                while let Some((parent, action)) = states[at].1 {
                    path.push(action);
                    at = parent;
                }
                path.reverse();
                return Some(path);
            }
            actions.clear();
            self.actions(&states[i].0, &mut actions);
            for &action in &actions {
                if let Some(next) = self.next_state(&states[i].0, action)
                    && self.within_boundary(&next)
                    && seen.insert(next.clone())
                {
                    states.push((next, Some((i, action))));
                    queue.push_back(states.len() - 1);
                }
            }
        }
        None
    }
}

/// What a check found.
#[derive(Debug, Clone)]
pub struct Report {
    /// States generated.
    pub states: usize,
    /// Distinct states.
    pub unique_states: usize,
    /// The longest path explored.
    pub max_depth: usize,
    /// How long it took.
    pub elapsed: Duration,
    /// For each property with a discovery (a counterexample to an `always`, an example of a
    /// `sometimes`), the path, printed.
    pub discoveries: Vec<(&'static str, String)>,
}

impl Report {
    /// The path found for `property`, if any.
    pub fn discovery(&self, property: &str) -> Option<&str> {
        self.discoveries.iter().find(|(name, _)| *name == property).map(|(_, path)| path.as_str())
    }

    /// The `always` properties with a counterexample.
    pub fn violated(&self) -> Vec<&'static str> {
        let mut names: Vec<_> = self
            .discoveries
            .iter()
            .map(|(name, _)| *name)
            .filter(|name| properties::SAFETY.contains(name))
            .collect();
        names.sort_unstable();
        names
    }
}
