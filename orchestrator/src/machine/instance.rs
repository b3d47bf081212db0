//! [`MachineInstance`]: one running workflow of a [`Machine`].

use std::fmt;

use orchestrator_chart::{
    ActionId, Chart, DelayId, EventKind, EventRef, GuardId, Host, Interpreter, MachineState, RunError,
    StateCodecError,
};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::completion::Completion;
use super::fallible::ActionError;
use super::init_meta::InitMeta;
use super::requests::{Requests, ServiceRequest};
use super::traits::{Machine, MachineEvent};
use crate::event::Event;
use crate::violation::Violation;

/// Why a step of a machine failed. A failed step changes nothing: the instance is as it was
/// before the call.
#[derive(Debug, thiserror::Error)]
pub enum MachineError {
    /// An incoming event broke its contract, a request emitted by an action broke the
    /// service's contract, or a fallible action or guard returned a [`Violation`].
    #[error(transparent)]
    Violation(#[from] Violation),
    /// The chart could not run to completion (an eventless or self-sending cycle).
    #[error("machine step failed: {0}")]
    Run(#[from] RunError),
    /// A saved machine state does not belong to this machine's chart.
    #[error("cannot restore the machine state: {0}")]
    State(#[from] StateCodecError),
    /// A snapshot could not be encoded or decoded.
    #[error("invalid machine snapshot: {0}")]
    Snapshot(String),
    /// The snapshot holds a value JSON cannot represent (a non-finite number in the context):
    /// the step that produced it fails, instead of saving it changed.
    #[error("the machine state cannot be saved: {0}")]
    NotJson(#[from] crate::json::NotJson),
    /// A request emitted by an action, or the machine's output, holds a value JSON cannot
    /// represent (a non-finite number): the step fails (the workflow gets a system error naming
    /// the event type and the field), instead of sending it changed or reporting a contract
    /// violation.
    #[error(transparent)]
    NotRepresentable(#[from] crate::json::NotRepresentable),
    /// A fallible action or guard returned an error (one that is not a [`Violation`]: that one is
    /// [`MachineError::Violation`]). The step stopped at it. A workflow fails with the user's
    /// error, as a failing service handler does ([`ActionError::payload`]).
    #[error("{kind} `{name}` of machine `{machine}` failed: {error}")]
    Action {
        /// The machine's name.
        machine: &'static str,
        /// `"action"` or `"guard"`.
        kind: &'static str,
        /// The action's or guard's display name (see [`Machine::action_names`]).
        name: &'static str,
        /// The user's error.
        #[source]
        error: ActionError,
    },
}

impl MachineError {
    /// The error of a failed action or guard: a [`Violation`] stays one.
    fn of_action<M: Machine>(kind: &'static str, name: &'static str, error: ActionError) -> Self {
        match error.into_violation() {
            Ok(violation) => Self::Violation(violation),
            Err(error) => Self::Action { machine: M::NAME, kind, name, error },
        }
    }
}

/// What is persisted between two steps of a workflow: the compact chart state (configuration,
/// history, pending timers, clock), the context and the subject. Never the machine definition,
/// which is code.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Snapshot<C> {
    /// The workflow's subject, if known.
    pub subject: Option<String>,
    /// The context.
    pub context: C,
    /// The chart state.
    pub state: MachineState,
    /// The wall-clock time (Unix ms) of machine clock 0, when a runtime drives the machine's
    /// timers from a real clock (see [`MachineInstance::epoch_ms`]).
    #[serde(default, rename = "epochMs", skip_serializing_if = "Option::is_none")]
    pub epoch_ms: Option<u64>,
    /// The active atomic states' paths (`charging`, `computing.adding.waiting`), for people and
    /// tools reading a stored workflow (Arvo's `value`); ignored when restoring.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub value: Vec<String>,
}

impl<C: Serialize> Snapshot<C> {
    /// The snapshot as JSON bytes.
    /// Fails with [`MachineError::NotJson`] when the context holds a value JSON cannot represent.
    pub fn to_bytes(&self) -> Result<Vec<u8>, MachineError> {
        let value = crate::json::to_value(self)?;
        serde_json::to_vec(&value).map_err(|e| MachineError::Snapshot(e.to_string()))
    }
}

impl<C: DeserializeOwned> Snapshot<C> {
    /// Reads [`Snapshot::to_bytes`] output. The chart state is checked against the chart by
    /// [`MachineInstance::restore`].
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, MachineError> {
        serde_json::from_slice(bytes).map_err(|e| MachineError::Snapshot(e.to_string()))
    }
}

/// Marks the payload of the typed event being processed, so that the host can tell it from
/// events the chart made (raised, sent, done, timers), which carry no payload.
static TYPED: Value = Value::Null;

/// Hands the chart's guard and action calls to the machine's functions with the typed event.
struct MachineHost<M: Machine> {
    /// The typed event of the current call (the init event while starting).
    current: Option<M::Event>,
    /// The last event known only by name, reused while its name does not change.
    named: Option<M::Event>,
    outbox: Requests,
    /// The first action or guard that failed in this step: later guards are false and later
    /// actions are skipped; the step is then discarded.
    failed: Option<MachineError>,
}

impl<M: Machine> MachineHost<M> {
    fn new(subject: Option<String>) -> Self {
        Self { current: None, named: None, outbox: Requests { subject, ..Requests::default() }, failed: None }
    }
}

fn resolve<'a, M: Machine>(
    current: &'a Option<M::Event>,
    named: &'a mut Option<M::Event>,
    event: &EventRef<'_>,
) -> &'a M::Event {
    let typed = event.kind == EventKind::Init || event.data.is_some_and(|data| std::ptr::eq(data, &TYPED));
    if typed && let Some(current) = current {
        return current;
    }
    if named.as_ref().is_some_and(|e| e.name() != event.name) {
        *named = None;
    }
    named.get_or_insert_with(|| M::Event::named(event.name))
}

impl<M: Machine> Host for MachineHost<M> {
    type Context = M::Context;

    fn guard(&mut self, guard: GuardId, context: &M::Context, event: &EventRef<'_>) -> bool {
        if self.failed.is_some() {
            return false;
        }
        match M::guard(guard, context, resolve::<M>(&self.current, &mut self.named, event)) {
            Ok(holds) => holds,
            Err(error) => {
                let name = M::guard_names().get(guard.0 as usize).copied().unwrap_or("guard");
                self.failed = Some(MachineError::of_action::<M>("guard", name, error));
                false
            }
        }
    }

    fn delay(&mut self, delay: DelayId, context: &M::Context) -> u64 {
        M::delay(delay, context)
    }

    fn action(&mut self, action: ActionId, context: &mut M::Context, event: &EventRef<'_>) {
        let Self { current, named, outbox, failed } = self;
        if failed.is_some() {
            return;
        }
        if let Err(error) = M::action(action, context, resolve::<M>(current, named, event), outbox) {
            let name = M::action_names().get(action.0 as usize).copied().unwrap_or("action");
            *failed = Some(MachineError::of_action::<M>("action", name, error));
        }
    }
}

/// One running workflow of machine `M`: the chart state and the context.
///
/// Every step (start, [`send`](Self::send), [`send_wire`](Self::send_wire),
/// [`advance`](Self::advance)) runs to completion and returns the service requests the actions
/// emitted. A step that fails (a request breaking its service's contract, a fallible action or
/// guard returning an error, a runaway cycle) leaves the instance unchanged.
pub struct MachineInstance<M: Machine> {
    interp: Interpreter<MachineHost<M>, &'static Chart>,
    step_limit: Option<u32>,
    epoch_ms: Option<u64>,
}

impl<M: Machine> fmt::Debug for MachineInstance<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MachineInstance")
            .field("machine", &M::NAME)
            .field("state", &self.state())
            .field("done", &self.is_done())
            .finish_non_exhaustive()
    }
}

impl<M: Machine> MachineInstance<M> {
    /// Starts a root workflow from its init payload: the context is `init(&input)` (a
    /// two-argument `init` sees an empty [`InitMeta`]), the initial configuration is entered and
    /// the first macrostep runs. Returns the instance and the requests emitted while starting.
    pub fn start(input: M::Input) -> Result<(Self, Vec<ServiceRequest>), MachineError> {
        Self::start_with_meta(input, InitMeta::default())
    }

    /// [`start`](Self::start) for the workflow with this subject (the parent subject of the
    /// child orchestrations it starts).
    pub fn start_with_subject(
        input: M::Input,
        subject: impl Into<String>,
    ) -> Result<(Self, Vec<ServiceRequest>), MachineError> {
        Self::start_with_meta(input, InitMeta::from_subject(subject))
    }

    /// [`start`](Self::start) with what a two-argument `init` sees; the workflow's subject is
    /// `meta.subject`.
    pub fn start_with_meta(
        input: M::Input,
        meta: InitMeta,
    ) -> Result<(Self, Vec<ServiceRequest>), MachineError> {
        let context = M::init(&input, &meta);
        let mut host = MachineHost::new(meta.subject);
        host.current = Some(M::init_event(input));
        let mut me =
            Self { interp: Interpreter::new(M::chart(), host, context), step_limit: None, epoch_ms: None };
        let result = me.interp.start();
        let requests = me.take_outbox(result)?;
        Ok((me, requests))
    }

    /// Starts from a wire init event: validated against the self contract as every event
    /// reaching the machine is (see [`Machine::decode`]), subject taken from the event; a
    /// two-argument `init` sees [`InitMeta::from_event`].
    pub fn start_wire(event: &Event) -> Result<(Self, Vec<ServiceRequest>), MachineError> {
        let input = super::__private::decode_init::<M>(event)?;
        Self::start_with_meta(input, InitMeta::from_event(event))
    }

    /// Resumes a workflow from a [`Snapshot`] (its chart state is checked against the chart).
    pub fn restore(snapshot: Snapshot<M::Context>) -> Result<Self, MachineError> {
        let Snapshot { subject, context, state, epoch_ms, value: _ } = snapshot;
        let interp = Interpreter::restore(M::chart(), MachineHost::new(subject), context, state)?;
        Ok(Self { interp, step_limit: None, epoch_ms })
    }

    /// Sends a typed event and runs to completion.
    pub fn send(&mut self, event: M::Event) -> Result<Vec<ServiceRequest>, MachineError> {
        let backup = self.backup();
        let name = event.name().to_owned();
        self.interp.host_mut().current = Some(event);
        let result =
            self.interp.send_event(EventRef { name: &name, data: Some(&TYPED), kind: EventKind::External });
        self.settle(result, backup)
    }

    /// Sends an event known only by its name (an `Internal` event), as
    /// `send(<Name>Event::Internal(name))`.
    pub fn send_named(&mut self, name: &str) -> Result<Vec<ServiceRequest>, MachineError> {
        self.send(M::Event::named(name))
    }

    /// Decodes a wire event (validating it against its contract: a bad payload is a contract
    /// [`Violation`]) and sends it.
    pub fn send_wire(&mut self, event: &Event) -> Result<Vec<ServiceRequest>, MachineError> {
        let typed = M::decode(event)?;
        self.send(typed)
    }

    /// Moves the clock `ms` forward, delivering due `after` timers and delayed sends.
    pub fn advance(&mut self, ms: u64) -> Result<Vec<ServiceRequest>, MachineError> {
        let backup = self.backup();
        let result = self.interp.advance(ms);
        self.settle(result, backup)
    }

    /// Moves the clock `ms` forward at once, then delivers the timers due by then; a late timer
    /// sees the new time (see [`Interpreter::catch_up`]). What a runtime uses after waiting.
    pub fn catch_up(&mut self, ms: u64) -> Result<Vec<ServiceRequest>, MachineError> {
        let backup = self.backup();
        let result = self.interp.catch_up(ms);
        self.settle(result, backup)
    }

    /// The typed active configuration.
    pub fn state(&self) -> M::State {
        match M::state_of(self.interp.state().active()) {
            Some(state) => state,
            None => unreachable!("a started machine is always in a legal configuration"),
        }
    }

    /// Paths of the active atomic states, in document order.
    pub fn active_paths(&self) -> Vec<&str> {
        self.interp.active_atomic_paths()
    }

    /// Whether the state at this absolute path is active.
    pub fn is_in(&self, path: &str) -> bool {
        self.interp.is_in(path)
    }

    /// The context.
    pub fn context(&self) -> &M::Context {
        self.interp.context()
    }

    /// Whether a top-level final state was reached.
    pub fn is_done(&self) -> bool {
        self.interp.is_done()
    }

    /// The completion payload, once done.
    pub fn output(&self) -> Option<M::Output> {
        self.is_done().then(|| M::output(self.interp.context()))
    }

    /// The completion payload with its event's options ([`Completion`]), once done.
    pub fn completion(&self) -> Option<Completion<M::Output>> {
        self.is_done().then(|| M::completion(self.interp.context()))
    }

    /// The workflow's subject, if known.
    pub fn subject(&self) -> Option<&str> {
        self.interp.host().outbox.subject()
    }

    /// The clock (ms).
    pub fn now_ms(&self) -> u64 {
        self.interp.now_ms()
    }

    /// When the next timer is due.
    pub fn next_due(&self) -> Option<u64> {
        self.interp.next_due()
    }

    /// The wall-clock time (Unix ms) of machine clock 0, when a runtime drives this machine from
    /// a real clock: machine time `t` is wall time `epoch_ms + t`. Persisted in the snapshot.
    pub fn epoch_ms(&self) -> Option<u64> {
        self.epoch_ms
    }

    /// Sets [`epoch_ms`](Self::epoch_ms).
    pub fn set_epoch_ms(&mut self, epoch_ms: Option<u64>) {
        self.epoch_ms = epoch_ms;
    }

    /// The chart state.
    pub fn machine_state(&self) -> &MachineState {
        self.interp.state()
    }

    /// The chart.
    pub fn chart(&self) -> &'static Chart {
        M::chart()
    }

    /// Sets the most microsteps one step may take (see [`Interpreter::set_step_limit`]).
    pub fn set_step_limit(&mut self, limit: u32) {
        self.step_limit = Some(limit);
        self.interp.set_step_limit(limit);
    }

    /// What to persist: chart state, context and subject.
    pub fn snapshot(&self) -> Snapshot<M::Context> {
        Snapshot {
            subject: self.subject().map(str::to_owned),
            context: self.interp.context().clone(),
            state: self.interp.snapshot(),
            epoch_ms: self.epoch_ms,
            value: self.active_paths().into_iter().map(str::to_owned).collect(),
        }
    }

    /// [`snapshot`](Self::snapshot) as JSON, written from the instance without copying it
    /// (the same value as `serde_json::to_value(self.snapshot())`). Fails with
    /// [`MachineError::NotJson`] when the context holds a value JSON cannot represent (NaN or
    /// an infinity), which serde_json would silently write as `null`.
    pub fn snapshot_json(&self) -> Result<serde_json::Value, MachineError> {
        /// [`Snapshot`] borrowing the instance: same fields, same attributes, same output.
        #[derive(Serialize)]
        struct SnapshotRef<'a, C> {
            subject: Option<&'a str>,
            context: &'a C,
            state: &'a MachineState,
            #[serde(rename = "epochMs", skip_serializing_if = "Option::is_none")]
            epoch_ms: Option<u64>,
            #[serde(skip_serializing_if = "Vec::is_empty")]
            value: Vec<&'a str>,
        }
        let snapshot = SnapshotRef {
            subject: self.subject(),
            context: self.interp.context(),
            state: self.interp.state(),
            epoch_ms: self.epoch_ms,
            value: self.active_paths(),
        };
        Ok(crate::json::to_value(&snapshot)?)
    }

    fn backup(&self) -> (MachineState, M::Context) {
        (self.interp.snapshot(), self.interp.context().clone())
    }

    /// Collects the step's requests; on failure, restores `backup`.
    fn settle(
        &mut self,
        result: Result<(), RunError>,
        backup: (MachineState, M::Context),
    ) -> Result<Vec<ServiceRequest>, MachineError> {
        self.interp.host_mut().current = None;
        match self.take_outbox(result) {
            Ok(requests) => Ok(requests),
            Err(error) => {
                let (state, context) = backup;
                let subject = self.subject().map(str::to_owned);
                let mut interp = Interpreter::restore(M::chart(), MachineHost::new(subject), context, state)?;
                if let Some(limit) = self.step_limit {
                    interp.set_step_limit(limit);
                }
                self.interp = interp;
                Err(error)
            }
        }
    }

    fn take_outbox(&mut self, result: Result<(), RunError>) -> Result<Vec<ServiceRequest>, MachineError> {
        let host = self.interp.host_mut();
        // The first failed action or guard is the step's error, before what it led to.
        if let Some(failed) = host.failed.take() {
            host.outbox.requests.clear();
            host.outbox.errors.clear();
            return Err(failed);
        }
        let outbox = &mut host.outbox;
        let requests = std::mem::take(&mut outbox.requests);
        let errors = std::mem::take(&mut outbox.errors);
        result?;
        match errors.into_iter().next() {
            Some(error) => Err(error),
            None => Ok(requests),
        }
    }
}
