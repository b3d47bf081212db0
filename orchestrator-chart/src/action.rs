//! The action and guard vocabulary.
//!
//! The core executes [`ActionKind::Raise`], [`ActionKind::Send`] and [`ActionKind::Cancel`]
//! itself and evaluates the built-in guards ([`Guard::In`], [`Guard::NotIn`], [`Guard::Const`]);
//! [`ActionKind::Custom`] and [`Guard::Custom`] are handed to the embedding's
//! [`Host`](crate::Host) by id.
//!
//! Resolved forms ([`Action`], [`Guard`]) name states by [`StateId`]; the builder forms
//! ([`ActionSpec`], [`GuardSpec`]) name them by absolute path and are resolved by
//! [`ChartBuilder::build`](crate::ChartBuilder::build).

use std::sync::Arc;

use crate::model::StateId;

/// An event name shared between the chart and the queues (cloning is a reference-count bump).
pub type EventName = Arc<str>;

/// A host-defined guard, evaluated by [`Host::guard`](crate::Host::guard).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GuardId(pub u32);

/// A host-computed `after` delay, evaluated by [`Host::delay`](crate::Host::delay) when its state
/// is entered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DelayId(pub u32);

/// A host-defined action, executed by [`Host::action`](crate::Host::action).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ActionId(pub u32);

/// A resolved guard.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Guard {
    /// Evaluated by the host.
    Custom(GuardId),
    /// True while the state is active (SCXML `In()`, XState `stateIn`).
    In(StateId),
    /// True while the state is not active.
    NotIn(StateId),
    /// A constant.
    Const(bool),
}

/// A guard as given to the builder: states by absolute path.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum GuardSpec {
    /// Evaluated by the host.
    Custom(GuardId),
    /// True while the state at this absolute path is active.
    In(String),
    /// True while the state at this absolute path is not active.
    NotIn(String),
    /// A constant.
    Const(bool),
}

/// What an action does.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ActionKind {
    /// Puts the event on the internal queue (SCXML `<raise>`).
    Raise(EventName),
    /// Sends the event to this machine: on the external queue when `delay_ms` is `None` or 0,
    /// otherwise as a pending timer due `delay_ms` after now. A delayed send is **not** cancelled
    /// when the sending state is exited; only [`ActionKind::Cancel`] with its `id` stops it.
    Send {
        /// The event name.
        event: EventName,
        /// The delay; `None` (or 0) means the external queue.
        delay_ms: Option<u64>,
        /// Id for [`ActionKind::Cancel`].
        id: Option<EventName>,
    },
    /// Cancels every pending delayed send with this id.
    Cancel(EventName),
    /// Executed by the host.
    Custom(ActionId),
}

/// A resolved action with its optional guard (evaluated when the action runs).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Action {
    /// What the action does.
    pub kind: ActionKind,
    /// The action runs only if this holds when it is reached.
    pub guard: Option<Guard>,
}

/// An action as given to the builder.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ActionSpec {
    /// What the action does.
    pub kind: ActionKind,
    /// The action runs only if this holds when it is reached.
    pub guard: Option<GuardSpec>,
}

impl ActionSpec {
    /// `raise(event)`: internal queue.
    pub fn raise(event: &str) -> Self {
        Self { kind: ActionKind::Raise(event.into()), guard: None }
    }

    /// Undelayed self-send: external queue.
    pub fn send(event: &str) -> Self {
        Self { kind: ActionKind::Send { event: event.into(), delay_ms: None, id: None }, guard: None }
    }

    /// Delayed self-send, optionally with a cancel id.
    pub fn send_delayed(event: &str, delay_ms: u64, id: Option<&str>) -> Self {
        Self {
            kind: ActionKind::Send { event: event.into(), delay_ms: Some(delay_ms), id: id.map(Into::into) },
            guard: None,
        }
    }

    /// Cancels pending delayed sends with this id.
    pub fn cancel(id: &str) -> Self {
        Self { kind: ActionKind::Cancel(id.into()), guard: None }
    }

    /// A host action.
    pub fn custom(id: ActionId) -> Self {
        Self { kind: ActionKind::Custom(id), guard: None }
    }

    /// Runs the action only if `guard` holds when the action is reached.
    pub fn when(mut self, guard: GuardSpec) -> Self {
        self.guard = Some(guard);
        self
    }
}
