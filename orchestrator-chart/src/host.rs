//! The embedding's side: custom guards and actions over its own context type.
//!
//! ## Events
//!
//! Guards and actions see the current event as an [`EventRef`]: a borrowed name plus an
//! optional borrowed [`serde_json::Value`] payload. The choice is deliberate:
//!
//! * the runtime around this core speaks CloudEvents whose `data` is already a
//!   `serde_json::Value`, so the payload is handed through **by reference**: the interpreter
//!   never clones, boxes or converts it;
//! * events made by the chart itself (`raise`, `send`, `done.state.*`, `after` timers) carry no
//!   payload and have names that live in the chart as shared `Arc<str>`; queuing one is a
//!   reference-count bump, not an allocation;
//! * hosts that want typed payloads deserialize from the `Value` where they need it.

use serde_json::Value;

use crate::action::{ActionId, DelayId, GuardId};

/// Where the current event came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EventKind {
    /// No event yet: the machine is starting (name [`INIT_EVENT`]).
    Init,
    /// Sent by the caller, or by an undelayed `send` action.
    External,
    /// Raised by the chart (`raise`, `done.state.*`).
    Internal,
    /// A delayed send or an `after` timer coming due.
    Timer,
}

/// The event name seen by guards and actions while the machine starts.
pub const INIT_EVENT: &str = "xstate.init";

/// The event being processed, as seen by guards and actions. During eventless transitions this
/// is the last event taken from a queue (SCXML `_event`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EventRef<'a> {
    /// The event name.
    pub name: &'a str,
    /// The payload, for events sent by the caller with one.
    pub data: Option<&'a Value>,
    /// Where it came from.
    pub kind: EventKind,
}

impl<'a> EventRef<'a> {
    /// An external event with no payload.
    pub fn new(name: &'a str) -> Self {
        Self { name, data: None, kind: EventKind::External }
    }

    /// An external event with a payload.
    pub fn with_data(name: &'a str, data: &'a Value) -> Self {
        Self { name, data: Some(data), kind: EventKind::External }
    }
}

/// Implemented by the embedding: evaluates [`Guard::Custom`](crate::Guard::Custom) and
/// executes [`ActionKind::Custom`](crate::ActionKind::Custom) against its context.
///
/// Guards should be pure functions of the context and event: the interpreter evaluates each
/// transition's guard at most once per selection, but may evaluate it again in a later one.
pub trait Host {
    /// The extended state (XState `context`, SCXML data model) the chart works on.
    type Context;

    /// Evaluates a custom guard.
    fn guard(&mut self, guard: GuardId, context: &Self::Context, event: &EventRef<'_>) -> bool;

    /// Executes a custom action.
    fn action(&mut self, action: ActionId, context: &mut Self::Context, event: &EventRef<'_>);

    /// Computes an `after` delay in ms ([`TransitionSpec::after_computed`](crate::TransitionSpec::after_computed)),
    /// when its state is entered (after the state's entry actions). The timer is then stored
    /// like a fixed one: its due time is fixed at entry. The default, for hosts whose charts have
    /// no computed delays, is 0.
    fn delay(&mut self, delay: DelayId, context: &Self::Context) -> u64 {
        let _ = (delay, context);
        0
    }
}

/// A host with no custom guards or actions (every custom guard is false, every custom action a
/// no-op); for charts that only use the built-in vocabulary.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NoHost;

impl Host for NoHost {
    type Context = ();

    fn guard(&mut self, _: GuardId, _: &(), _: &EventRef<'_>) -> bool {
        false
    }

    fn action(&mut self, _: ActionId, _: &mut (), _: &EventRef<'_>) {}
}
