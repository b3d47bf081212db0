//! The model's state: the store (record, lease, journal), the queue, the service's recorded
//! answers, the workers' in-memory state, the fault budgets and the history the properties read.

/// An event, named by its identity (CloudEvents' `(source, id)`: two events are the same event
/// exactly when they are equal here).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Msg {
    /// The workflow's init event, published from outside.
    Init,
    /// The workflow's `n`th request to the service (its id is fixed by the commit that
    /// produced it, and the journal gives the same id again to a redelivery).
    Request(u8),
    /// The service's answer to request `n`; the second field tells apart the answers of two runs
    /// of the service (a service without recorded answers makes a new event at each run).
    Answer(u8, u8),
    /// The workflow's completion, addressed to its parent (outside the model: it leaves the queue
    /// at once).
    Completed,
}

impl Msg {
    /// Whether the workflow (the orchestrator's lane) consumes it; otherwise the service does.
    pub fn for_workflow(self) -> bool {
        matches!(self, Msg::Init | Msg::Answer(..))
    }
}

/// The workflow's record (`WorkflowRecord`): how many answers it consumed, whether it is done,
/// and the last event it consumed (`WorkflowRecord::last_event_id`/`last_event_source`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Record {
    /// Answers consumed so far.
    pub pos: u8,
    /// Finished (`WorkflowRecord::done`).
    pub done: bool,
    /// The event consumed by the write that stored this record.
    pub last: Msg,
}

/// One journal row (`memory::JournalRecord`, the `journal` table): the version written, the
/// event consumed, the event produced and the record written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Entry {
    /// The version written by the commit.
    pub version: u8,
    /// The event consumed.
    pub consumed: Msg,
    /// The event produced.
    pub produced: Msg,
    /// The record written.
    pub record: Record,
}

/// A row of the queue (the `queue` table, or a broker's pending message): the event and the
/// worker whose claim it is under, if any (a claim is visible to nobody else until it lapses).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Row {
    /// The event.
    pub msg: Msg,
    /// The worker holding the claim. A claim belongs to one delivery attempt (the `token` of
    /// `claim`): a worker that crashed and claims again is another attempt, so the worker's
    /// index is enough to tell attempts apart here.
    pub claimed_by: Option<u8>,
}

/// What a worker read when it claimed a workflow event: the version and record, and the
/// journal's answer if the workflow already consumed the event (the `claim` function of
/// migration 4, or `Memory::acquire`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Seen {
    /// The version read (0: no record).
    pub version: u8,
    /// The record read.
    pub record: Option<Record>,
    /// The journal's answer: what the workflow produced when it consumed the event before.
    pub produced: Option<Msg>,
}

/// A worker's in-memory state (lost on a crash).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Worker {
    /// Waiting for a delivery.
    Idle,
    /// Holding a claimed delivery; for a workflow event, with what it read at the claim.
    Claimed {
        /// The event.
        msg: Msg,
        /// What was read (workflow events only).
        seen: Option<Seen>,
    },
    /// Holding a workflow event and the lease of epoch `epoch` (fencing token).
    Locked {
        /// The event.
        msg: Msg,
        /// What was read.
        seen: Seen,
        /// The lease's epoch.
        epoch: u8,
    },
    /// A workflow worker whose step is done in the store (committed, answered by the journal, or
    /// ignored) and that has yet to publish the product and acknowledge the delivery: only when
    /// the delivery is not settled in the commit (a transport acknowledged after the step).
    Emitting {
        /// The event.
        msg: Msg,
        /// The event to publish.
        produced: Option<Msg>,
    },
    /// A service worker that applied the effect and has yet to record its answer (only when
    /// the answer is not recorded with the effect: `Protections::atomic_answer` off).
    Recording {
        /// The request.
        msg: Msg,
        /// The answer's run number.
        run: u8,
    },
    /// A service worker that ran the request (applied the effect or found its recorded answer)
    /// and has not settled the delivery yet.
    Served {
        /// The request.
        msg: Msg,
        /// The answer to enqueue with the settlement.
        answer: Msg,
    },
}

impl Worker {
    /// The event the worker is handling, if any.
    pub fn holds(self) -> Option<Msg> {
        match self {
            Worker::Idle => None,
            Worker::Claimed { msg, .. }
            | Worker::Locked { msg, .. }
            | Worker::Emitting { msg, .. }
            | Worker::Recording { msg, .. }
            | Worker::Served { msg, .. } => Some(msg),
        }
    }
}

/// The whole system.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct State {
    /// The workflow's version (0: no record yet).
    pub version: u8,
    /// The workflow's record.
    pub record: Option<Record>,
    /// The workflow's lease: the holder and its epoch. A lapsed lease is `None` (a lapsed lease
    /// and no lease are the same to `lock` and to the fencing check).
    pub lease: Option<(u8, u8)>,
    /// The last epoch handed out (fencing tokens grow per workflow).
    pub epoch: u8,
    /// The workflow's journal, oldest first.
    pub journal: Vec<Entry>,
    /// The queue, kept sorted (it is a multiset: any visible row may be delivered next).
    pub queue: Vec<Row>,
    /// The service's recorded answer per request (`answers[n]`: the answer's run number).
    pub answers: Vec<Option<u8>>,
    /// Answers made so far (the next run number).
    pub runs: u8,
    /// The workers.
    pub workers: Vec<Worker>,
    /// Fault budgets left.
    pub budget: Budget,
    /// What happened, for the properties (not read by the protocol).
    pub history: History,
}

/// Faults left to inject.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Budget {
    /// Worker crashes.
    pub crashes: u8,
    /// Claims lapsing (a visibility deadline passing while the claimant is slow or dead).
    pub lapses: u8,
    /// Leases lapsing (a TTL passing while the holder is paused or dead).
    pub expiries: u8,
    /// Extra copies of a delivery made by the transport.
    pub duplicates: u8,
}

/// History (ghost variables): what the properties check, never read by the protocol.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct History {
    /// Every successful commit: (version written, epoch of the writer's lease, 0 without one).
    pub writes: Vec<(u8, u8)>,
    /// The effect's applications per request.
    pub effects: Vec<u8>,
    /// The workflow has been seen done.
    pub was_done: bool,
    /// A worker crashed while it held the workflow's lease, and nobody has locked since.
    pub orphaned: bool,
    /// Another worker took the lease over after a holder crashed.
    pub took_over: bool,
    /// An event was delivered again (already consumed, answered, or held by another worker).
    pub redelivered: bool,
    /// A commit was refused because the writer's lease was stale.
    pub fenced: bool,
    /// A commit was refused because the version changed (compare-and-swap).
    pub conflicted: bool,
    /// The journal answered a redelivered event.
    pub journal_answered: bool,
    /// The service answered a redelivered request with its recorded answer.
    pub replayed: bool,
    /// The completion was emitted.
    pub completed: bool,
}
