//! The traits a `machine!` declaration implements.

use std::fmt::Debug;

use orchestrator_chart::export::NameTable;
use orchestrator_chart::{ActionId, Chart, DelayId, GuardId, StateSet};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::completion::Completion;
use super::fallible::ActionError;
use super::init_meta::InitMeta;
use super::requests::Requests;
use crate::contract::{ContractVersion, OrchestratorVersion, Payload, VersionedContract};
use crate::event::Event;
use crate::orchestration::RetryPolicy;
use crate::violation::Violation;

/// A service a machine declared: its key in `services: { … }` and its contract version.
#[derive(Debug, Clone)]
pub struct ServiceInfo {
    /// The key (`add` in `services: { add: AddV1 }`), also the name of its outbox method.
    pub name: &'static str,
    /// The contract version.
    pub contract: &'static VersionedContract,
    /// How a failed call is retried (`pay: PayV1 { retry: { … } }`), if at all.
    pub retry: Option<RetryPolicy>,
}

impl ServiceInfo {
    /// The service `name` with contract version `V`.
    pub fn of<V: ContractVersion>(name: &'static str) -> Self {
        Self { name, contract: V::versioned(), retry: None }
    }

    /// The same service, with a retry policy.
    #[must_use]
    pub fn with_retry(mut self, policy: RetryPolicy) -> Self {
        self.retry = Some(policy);
        self
    }
}

/// A statechart declared with [`machine!`](crate::machine!): its chart, contracts, typed events
/// and states, and the user's guards and actions, dispatched by id.
///
/// Implemented by the macro; run it with [`MachineInstance`](super::MachineInstance).
pub trait Machine: Sized + Send + Sync + 'static {
    /// The self contract: accepts the init event, completes with the output.
    type Contract: OrchestratorVersion<Init = Self::Input, Complete = Self::Output>;
    /// The init payload (the self contract's `Init`).
    type Input: Payload;
    /// The completion payload (the self contract's `Complete`).
    type Output: Payload;
    /// The machine's context (XState `context`), persisted with the machine state.
    type Context: Serialize + DeserializeOwned + Clone + Send + 'static;
    /// The typed events guards and actions see.
    type Event: MachineEvent;
    /// The typed active configuration.
    type State: Debug + Clone + PartialEq + Eq + Send + 'static;

    /// The machine's name (the chart's machine id).
    const NAME: &'static str;

    /// The chart, built once per machine type.
    fn chart() -> &'static Chart;

    /// The declared services, in declaration order.
    fn services() -> Vec<ServiceInfo>;

    /// The declared signals (`signals: { … }`), in declaration order: events the workflow accepts
    /// from outside, each of the contract's accepted type.
    fn signals() -> Vec<ServiceInfo> {
        Vec::new()
    }

    /// The declared notifications (`notifications: { … }`), in declaration order: events the
    /// workflow emits that expect no reply.
    fn notifications() -> Vec<ServiceInfo> {
        Vec::new()
    }

    /// Display names of the custom guards, by `GuardId`: the name given with `name = closure`, a
    /// function's path, or `guard<N>` for an unnamed closure.
    fn guard_names() -> &'static [&'static str];

    /// Display names of the custom actions, by `ActionId`: the name given with `name = closure`,
    /// a function's path, or `action<N>` for an unnamed closure.
    fn action_names() -> &'static [&'static str];

    /// The guard and action names, for the chart exporters
    /// (`orchestrator_chart::export::to_mermaid(M::chart(), &M::names())`).
    fn names() -> NameTable {
        NameTable::from_lists(Self::guard_names().iter().copied(), Self::action_names().iter().copied())
    }

    /// The initial context, from the init payload and where the workflow starts from (the
    /// generated code passes `meta` on to a two-argument `init: |input, meta| …` only).
    fn init(input: &Self::Input, meta: &InitMeta) -> Self::Context;

    /// The completion payload and its event's options, from the final context (what `output`
    /// returns: a payload, or a [`Completion`] of it).
    fn completion(context: &Self::Context) -> Completion<Self::Output>;

    /// The completion payload, from the final context.
    fn output(context: &Self::Context) -> Self::Output {
        Self::completion(context).into_parts().0
    }

    /// The event guards and actions see while the machine starts.
    fn init_event(input: Self::Input) -> Self::Event;

    /// Decodes a wire event into a typed event: the self contract's init event, an event a
    /// service emits (including its system error), each validated against its contract schema.
    fn decode(event: &Event) -> Result<Self::Event, Violation>;

    /// Computes `after` delay `id` in ms, when its state is entered (after its entry actions);
    /// the timer is then stored with its due time like a fixed one.
    fn delay(id: DelayId, context: &Self::Context) -> u64;

    /// Evaluates guard `id` (an `Err` when a fallible guard failed).
    fn guard(id: GuardId, context: &Self::Context, event: &Self::Event) -> Result<bool, ActionError>;

    /// Runs action `id` (an `Err` when a fallible action failed).
    fn action(
        id: ActionId,
        context: &mut Self::Context,
        event: &Self::Event,
        outbox: &mut Requests,
    ) -> Result<(), ActionError>;

    /// The typed state of an active configuration (`None` if it is not a legal one).
    fn state_of(active: &StateSet) -> Option<Self::State>;

    /// The self contract and the service contracts as JSON Schema documents:
    /// `{"self": {…}, "services": {"<name>": {…}, …}}` (each Arvo's `toJsonSchema()` of that version).
    fn contracts_json() -> Value {
        let mut services = Map::new();
        for s in Self::services() {
            services.insert(s.name.to_owned(), s.contract.to_json_schema());
        }
        let mut out = serde_json::json!({
            "self": <Self::Contract as ContractVersion>::versioned().to_json_schema(),
            "services": services,
        });
        for (key, list) in [("signals", Self::signals()), ("notifications", Self::notifications())] {
            if !list.is_empty() {
                let map: Map<String, Value> =
                    list.into_iter().map(|s| (s.name.to_owned(), s.contract.to_json_schema())).collect();
                out[key] = Value::Object(map);
            }
        }
        out
    }
}

/// The typed event enum of a machine (`<Name>Event`).
pub trait MachineEvent: Debug + 'static {
    /// The event name the chart matches: the event type, or the name of an internal event.
    fn name(&self) -> &str;

    /// An event known only by its name (the `Internal` variant): raised, sent, `done.state.*` and
    /// `after` events.
    fn named(name: &str) -> Self;
}

/// Contract version `Self` is a service declared by machine `M`: `out.request(Self, payload)`
/// compiles in `M`'s actions.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a service of machine `{M}`",
    label = "not among the services of `{M}`",
    note = "declare it in the machine's `services: {{ name: {Self} }}`"
)]
pub trait ServiceOf<M: Machine>: ContractVersion {
    /// The service's key in `services: { … }`.
    const SERVICE: &'static str;
}
