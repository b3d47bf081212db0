//! The actions: what workers, the queue, the store and the faults may do next, and their effect.
//! Each action is one atomic step of the real system (one store transaction, one claim, one
//! service call), so that a crash or a lapse can fall between any two of them.

use stateright::{Model, Property};

use crate::state::{Entry, History, Msg, Record, Row, Seen, State, Worker};
use crate::{Protocol, properties};

/// One atomic step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Action {
    /// Worker claims a visible delivery of the event (the `claim` function: any visible row, so
    /// deliveries are reordered and delayed at will). For a workflow event, the claim also reads
    /// the record, its version and the journal's answer to the event.
    Claim(u8, Msg),
    /// Worker tries the workflow's lease once (`Memory::lock`): a fresh epoch, or denied (the
    /// delivery is nacked, to be claimed again later).
    Lock(u8),
    /// Worker runs the lifecycle's gates and the core step, and commits (`commit_step`): the
    /// fencing check, the compare-and-swap on the version, the journal row, the consumed event
    /// out of the queue and the produced one in, the lease released, in one transaction. An event
    /// answered by the journal or ignored takes only the queue step (`outbox_step`).
    Step(u8),
    /// Worker publishes what its step produced and acknowledges its delivery (a transport's ack
    /// after the commit: `Lifecycle`'s "persist → unlock → emit"); only when
    /// [`Protocol::settle_in_commit`] is off.
    Emit(u8),
    /// Service worker handles its request: applies the effect, or finds the recorded answer.
    Serve(u8),
    /// Service worker records the answer of the effect it applied (a second transaction: only
    /// when `Protections::atomic_answer` is off).
    Record(u8),
    /// Service worker settles its delivery with its answer (`ack`: delete by claim, enqueue the
    /// answer, in one transaction; nothing when the claim is gone).
    Settle(u8),
    /// Worker crashes: its in-memory state is lost; its claims and lease stay until they lapse.
    Crash(u8),
    /// The claim of worker on a delivery of the event lapses (its visibility deadline passed):
    /// the delivery is visible again while the worker may still be running it.
    LapseClaim(u8, Msg),
    /// The workflow's lease lapses (its TTL passed while the holder was paused or dead).
    ExpireLease,
    /// The transport delivers the event once more (a broker's redelivery, the outbox's
    /// `redeliver` after a restart).
    Duplicate(Msg),
}

impl Action {
    /// Whether the action is a fault (a crash, a lapse, an expiry, a duplicate) rather than a
    /// step of the protocol.
    pub fn is_fault(self) -> bool {
        matches!(self, Action::Crash(_) | Action::LapseClaim(..) | Action::ExpireLease | Action::Duplicate(_))
    }
}

/// What the lifecycle decides for a workflow event, from what it read (`Lifecycle::locked`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// The journal's answer: the event was consumed before; send what it produced then.
    Reply(Msg),
    /// Nothing to do (done, already the last consumed, a second init, no record yet…).
    Ignore,
    /// Write this record, producing this event.
    Write(Record, Msg),
}

/// The workflow itself (a `CoreStep`): an init starts it and asks for answer 0; answer `n`,
/// when it is the one awaited, moves it on to request `n + 1` or to completion after `calls`
/// answers. Anything else changes nothing.
pub fn core_step(calls: u8, record: Option<Record>, msg: Msg) -> Option<(Record, Msg)> {
    match (record, msg) {
        (None, Msg::Init) => Some((Record { pos: 0, done: calls == 0, last: msg }, first_product(calls))),
        (Some(r), Msg::Answer(n, _)) if !r.done && n == r.pos => {
            let pos = r.pos + 1;
            let done = pos >= calls;
            let produced = if done { Msg::Completed } else { Msg::Request(pos) };
            Some((Record { pos, done, last: msg }, produced))
        }
        _ => None,
    }
}

fn first_product(calls: u8) -> Msg {
    if calls == 0 { Msg::Completed } else { Msg::Request(0) }
}

impl Protocol {
    /// The lifecycle's gates, in `Lifecycle::locked`'s order, then the core step.
    pub fn decide(&self, msg: Msg, seen: Seen) -> Decision {
        if self.protections.journal
            && let Some(produced) = seen.produced
        {
            return Decision::Reply(produced);
        }
        match seen.record {
            Some(r) if r.done => return Decision::Ignore,
            Some(r) if self.protections.journal && r.last == msg => return Decision::Ignore,
            Some(_) if msg == Msg::Init => return Decision::Ignore,
            None if msg != Msg::Init => return Decision::Ignore,
            _ => {}
        }
        match core_step(self.calls, seen.record, msg) {
            Some((record, produced)) => Decision::Write(record, produced),
            None => Decision::Ignore,
        }
    }

    fn read(&self, state: &State, msg: Msg) -> Seen {
        let produced = state.journal.iter().find(|e| e.consumed == msg).map(|e| e.produced);
        Seen { version: state.version, record: state.record, produced }
    }
}

impl State {
    /// Enqueues an event unless a row with its id is already there (`ON CONFLICT (event_id) DO
    /// NOTHING`); the completion leaves for the parent at once.
    fn enqueue(&mut self, msg: Msg) {
        if msg == Msg::Completed {
            self.history.completed = true;
        } else if !self.queue.iter().any(|r| r.msg == msg) {
            self.queue.push(Row { msg, claimed_by: None });
            self.queue.sort();
        }
    }

    /// Takes the consumed event out of the queue: every row with its id (`DELETE FROM queue
    /// WHERE event_id = …` in `commit_step` and `outbox_step`).
    fn consume(&mut self, msg: Msg) {
        self.queue.retain(|r| r.msg != msg);
    }

    /// Gives worker `w`'s claimed delivery of `msg` back (a nack): visible again.
    fn nack(&mut self, w: u8, msg: Msg) {
        if let Some(row) = self.queue.iter_mut().find(|r| r.msg == msg && r.claimed_by == Some(w)) {
            row.claimed_by = None;
            self.queue.sort();
        }
    }

    /// Releases the lease if it is still worker `w`'s of `epoch` (`unlock`, tolerant).
    fn unlock(&mut self, w: u8, epoch: Option<u8>) {
        if let Some(epoch) = epoch
            && self.lease == Some((w, epoch))
        {
            self.lease = None;
        }
    }

    fn held_elsewhere(&self, w: u8, msg: Msg) -> bool {
        self.workers.iter().enumerate().any(|(i, worker)| i != usize::from(w) && worker.holds() == Some(msg))
    }
}

impl Model for Protocol {
    type State = State;
    type Action = Action;

    fn init_states(&self) -> Vec<State> {
        let calls = usize::from(self.calls);
        vec![State {
            version: 0,
            record: None,
            lease: None,
            epoch: 0,
            journal: Vec::new(),
            queue: vec![Row { msg: Msg::Init, claimed_by: None }],
            answers: vec![None; calls],
            runs: 0,
            workers: vec![Worker::Idle; usize::from(self.workers)],
            budget: self.budget,
            history: History { effects: vec![0; calls], ..History::default() },
        }]
    }

    fn actions(&self, state: &State, actions: &mut Vec<Action>) {
        for (i, worker) in state.workers.iter().enumerate() {
            let w = i as u8;
            match *worker {
                Worker::Idle => {
                    let mut last = None;
                    for row in state.queue.iter().filter(|r| r.claimed_by.is_none()) {
                        if last != Some(row.msg) {
                            actions.push(Action::Claim(w, row.msg));
                            last = Some(row.msg);
                        }
                    }
                }
                Worker::Claimed { seen: Some(_), .. } if self.protections.locking => {
                    actions.push(Action::Lock(w))
                }
                Worker::Claimed { seen: Some(_), .. } | Worker::Locked { .. } => {
                    actions.push(Action::Step(w))
                }
                Worker::Claimed { seen: None, .. } => actions.push(Action::Serve(w)),
                Worker::Recording { .. } => actions.push(Action::Record(w)),
                Worker::Served { .. } => actions.push(Action::Settle(w)),
                Worker::Emitting { .. } => actions.push(Action::Emit(w)),
            }
            if *worker != Worker::Idle && state.budget.crashes > 0 {
                actions.push(Action::Crash(w));
            }
        }
        if state.budget.lapses > 0 {
            let mut last = None;
            for row in &state.queue {
                if let Some(w) = row.claimed_by
                    && last != Some((w, row.msg))
                {
                    actions.push(Action::LapseClaim(w, row.msg));
                    last = Some((w, row.msg));
                }
            }
        }
        if state.budget.expiries > 0 && state.lease.is_some() {
            actions.push(Action::ExpireLease);
        }
        if state.budget.duplicates > 0 {
            let mut last = None;
            for row in &state.queue {
                if last != Some(row.msg) {
                    actions.push(Action::Duplicate(row.msg));
                    last = Some(row.msg);
                }
            }
        }
    }

    fn next_state(&self, last: &State, action: Action) -> Option<State> {
        let mut s = last.clone();
        match action {
            Action::Claim(w, msg) => {
                let row = s.queue.iter_mut().find(|r| r.msg == msg && r.claimed_by.is_none())?;
                row.claimed_by = Some(w);
                s.queue.sort();
                let answered = match msg {
                    Msg::Request(n) => s.history.effects[usize::from(n)] > 0,
                    _ => false,
                };
                if answered || s.journal.iter().any(|e| e.consumed == msg) || s.held_elsewhere(w, msg) {
                    s.history.redelivered = true;
                }
                let seen = msg.for_workflow().then(|| self.read(&s, msg));
                s.workers[usize::from(w)] = Worker::Claimed { msg, seen };
            }
            Action::Lock(w) => {
                let Worker::Claimed { msg, seen: Some(seen) } = s.workers[usize::from(w)] else {
                    return None;
                };
                if s.lease.is_some() {
                    // Denied: the dispatcher gives the delivery back, to be retried.
                    s.nack(w, msg);
                    s.workers[usize::from(w)] = Worker::Idle;
                } else {
                    s.epoch += 1;
                    s.lease = Some((w, s.epoch));
                    if s.history.orphaned {
                        s.history.orphaned = false;
                        s.history.took_over = true;
                    }
                    // `Memory::acquire` with `lock`: the lease, then the record and the journal's
                    // answer read under it (the claim's read serves only `Locking::Never`).
                    let seen = if self.protections.read_under_lease { self.read(&s, msg) } else { seen };
                    s.workers[usize::from(w)] = Worker::Locked { msg, seen, epoch: s.epoch };
                }
            }
            Action::Step(w) => {
                let (msg, seen, epoch) = match s.workers[usize::from(w)] {
                    Worker::Claimed { msg, seen: Some(seen) } => (msg, seen, None),
                    Worker::Locked { msg, seen, epoch } => (msg, seen, Some(epoch)),
                    _ => return None,
                };
                s.workers[usize::from(w)] = Worker::Idle;
                let (write, produced) = match self.decide(msg, seen) {
                    Decision::Reply(produced) => {
                        s.history.journal_answered = true;
                        (None, Some(produced))
                    }
                    Decision::Ignore => (None, None),
                    Decision::Write(record, produced) => (Some(record), Some(produced)),
                };
                if let Some(record) = write {
                    if self.protections.fencing
                        && let Some(epoch) = epoch
                        && s.lease != Some((w, epoch))
                    {
                        s.history.fenced = true;
                        s.nack(w, msg);
                        return Some(s);
                    }
                    if self.protections.cas && s.version != seen.version {
                        s.history.conflicted = true;
                        s.unlock(w, epoch);
                        s.nack(w, msg);
                        return Some(s);
                    }
                    // `version = p_prev + 1`: the version the writer read, plus one.
                    let version = seen.version + 1;
                    let produced = produced.unwrap_or(Msg::Completed);
                    s.version = version;
                    s.record = Some(record);
                    s.journal.push(Entry { version, consumed: msg, produced, record });
                    s.history.writes.push((version, epoch.unwrap_or(0)));
                    s.history.was_done |= record.done;
                }
                s.unlock(w, epoch);
                if self.settle_in_commit {
                    // The queue step in the same transaction (`commit_step`'s outbox part, or
                    // `outbox_step` when nothing is written).
                    s.consume(msg);
                    if let Some(produced) = produced {
                        s.enqueue(produced);
                    }
                } else {
                    s.workers[usize::from(w)] = Worker::Emitting { msg, produced };
                }
            }
            Action::Emit(w) => {
                let Worker::Emitting { msg, produced } = s.workers[usize::from(w)] else { return None };
                s.workers[usize::from(w)] = Worker::Idle;
                if let Some(produced) = produced {
                    s.enqueue(produced);
                }
                if let Some(i) = s.queue.iter().position(|r| r.msg == msg && r.claimed_by == Some(w)) {
                    s.queue.remove(i);
                }
            }
            Action::Serve(w) => {
                let Worker::Claimed { msg: msg @ Msg::Request(n), seen: None } = s.workers[usize::from(w)]
                else {
                    return None;
                };
                let n_ = usize::from(n);
                let run = match s.answers[n_] {
                    Some(run) if self.protections.recorded_answers => {
                        s.history.replayed = true;
                        run
                    }
                    _ => {
                        // The effect and, with recorded answers, its answer, in one transaction
                        // of the service's own store (or an idempotency key at the provider).
                        s.history.effects[n_] += 1;
                        let run = s.runs;
                        s.runs += 1;
                        if self.protections.recorded_answers && !self.protections.atomic_answer {
                            s.workers[usize::from(w)] = Worker::Recording { msg, run };
                            return Some(s);
                        }
                        if self.protections.recorded_answers {
                            s.answers[n_] = Some(run);
                        }
                        run
                    }
                };
                s.workers[usize::from(w)] = Worker::Served { msg, answer: Msg::Answer(n, run) };
            }
            Action::Record(w) => {
                let Worker::Recording { msg: msg @ Msg::Request(n), run } = s.workers[usize::from(w)] else {
                    return None;
                };
                // A unique key on the request: the first answer recorded stays.
                let run = *s.answers[usize::from(n)].get_or_insert(run);
                s.workers[usize::from(w)] = Worker::Served { msg, answer: Msg::Answer(n, run) };
            }
            Action::Settle(w) => {
                let Worker::Served { msg, answer } = s.workers[usize::from(w)] else { return None };
                s.workers[usize::from(w)] = Worker::Idle;
                if let Some(i) = s.queue.iter().position(|r| r.msg == msg && r.claimed_by == Some(w)) {
                    s.queue.remove(i);
                    s.enqueue(answer);
                }
            }
            Action::Crash(w) => {
                s.budget.crashes -= 1;
                if matches!(s.workers[usize::from(w)], Worker::Locked { .. })
                    && s.lease.is_some_and(|(holder, _)| holder == w)
                {
                    s.history.orphaned = true;
                }
                s.workers[usize::from(w)] = Worker::Idle;
            }
            Action::LapseClaim(w, msg) => {
                s.budget.lapses -= 1;
                s.nack(w, msg);
            }
            Action::ExpireLease => {
                s.budget.expiries -= 1;
                s.lease = None;
            }
            Action::Duplicate(msg) => {
                s.budget.duplicates -= 1;
                s.queue.push(Row { msg, claimed_by: None });
                s.queue.sort();
            }
        }
        Some(s)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        properties::all()
    }

    fn within_boundary(&self, state: &State) -> bool {
        state.epoch < u8::MAX - 1 && state.runs < u8::MAX - 1 && state.version < u8::MAX - 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Protections;

    fn seen(version: u8, record: Option<Record>, produced: Option<Msg>) -> Seen {
        Seen { version, record, produced }
    }

    #[test]
    fn the_workflow_asks_then_completes() {
        let (r0, p0) = core_step(2, None, Msg::Init).expect("init starts it");
        assert_eq!((r0.pos, r0.done, p0), (0, false, Msg::Request(0)));
        assert_eq!(core_step(2, Some(r0), Msg::Answer(1, 0)), None, "not the answer awaited");
        let (r1, p1) = core_step(2, Some(r0), Msg::Answer(0, 7)).expect("answer 0");
        assert_eq!((r1.pos, r1.done, p1), (1, false, Msg::Request(1)));
        let (r2, p2) = core_step(2, Some(r1), Msg::Answer(1, 0)).expect("answer 1");
        assert_eq!((r2.pos, r2.done, p2), (2, true, Msg::Completed));
        assert_eq!(core_step(2, Some(r2), Msg::Answer(1, 0)), None, "done");
    }

    #[test]
    fn the_gates_follow_the_lifecycle() {
        let model = Protocol::small();
        let r0 = Record { pos: 0, done: false, last: Msg::Init };
        let done = Record { pos: 1, done: true, last: Msg::Answer(0, 0) };
        assert_eq!(
            model.decide(Msg::Init, seen(1, Some(r0), Some(Msg::Request(0)))),
            Decision::Reply(Msg::Request(0))
        );
        assert_eq!(model.decide(Msg::Init, seen(1, Some(r0), None)), Decision::Ignore, "last consumed");
        assert_eq!(model.decide(Msg::Answer(0, 1), seen(2, Some(done), None)), Decision::Ignore, "done");
        assert_eq!(model.decide(Msg::Answer(0, 0), seen(0, None, None)), Decision::Ignore, "no record");
        let no_journal = model.with(Protections { journal: false, ..Protections::ALL });
        assert_eq!(
            no_journal.decide(Msg::Init, seen(1, Some(r0), Some(Msg::Request(0)))),
            Decision::Ignore,
            "a second init"
        );
    }
}
