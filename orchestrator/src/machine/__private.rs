//! Helpers for the code `machine!` generates. Not a public API.

use std::fmt;

use orchestrator_chart::{BuildError, Chart};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::Machine;
use crate::contract::{ContractVersion, Resolution, resolve};
use crate::event::Event;
use crate::violation::Violation;

pub use orchestrator_chart as chart;

/// The context of a machine that declares none.
pub type NoContext = ();
pub use std::sync::{Arc, LazyLock};

/// The chart built by the generated code. The macro built the same chart when it expanded and
/// checked it, so a failure here is a bug of the macro, reported with the machine's name.
pub fn finish_chart(machine: &str, fingerprint: u64, built: Result<Chart, BuildError>) -> Chart {
    match built {
        Ok(chart) => {
            assert_eq!(
                chart.fingerprint(),
                fingerprint,
                "machine `{machine}`: the chart differs from the one checked at compile time"
            );
            chart
        }
        Err(e) => panic!("machine `{machine}`: the chart checked at compile time fails to build: {e}"),
    }
}

/// A `Duration` in whole ms (`u64::MAX` when it does not fit).
pub fn duration_ms(d: std::time::Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// What a computed `after` delay that is not a closure may be: a `Duration`, a `u64` of ms, or a
/// function `fn(&Context) -> Duration`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an `after` delay of a machine with context `{C}`",
    label = "expected a `Duration`, a `u64` of milliseconds or a `fn(&{C}) -> Duration`",
    note = "a closure is written `name = |ctx| Duration::from_millis(ctx.timeout_ms)`"
)]
pub trait AfterDelay<C> {
    /// The delay in ms, for this context.
    fn delay_ms(&self, context: &C) -> u64;
}

impl<C> AfterDelay<C> for std::time::Duration {
    fn delay_ms(&self, _: &C) -> u64 {
        duration_ms(*self)
    }
}

impl<C> AfterDelay<C> for u64 {
    fn delay_ms(&self, _: &C) -> u64 {
        *self
    }
}

impl<C, F: Fn(&C) -> std::time::Duration> AfterDelay<C> for F {
    fn delay_ms(&self, context: &C) -> u64 {
        duration_ms(self(context))
    }
}

/// `a == b` in const context.
pub const fn str_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// `sys.<type>.error` of service `V`.
pub fn system_error_type<V: ContractVersion>() -> &'static str {
    V::versioned().system_error().event_type()
}

/// Whether `event` may come from service `V`: no dataschema, or one naming `V`'s URI.
pub fn is_from<V: ContractVersion>(event: &Event) -> bool {
    match resolve(event, [V::versioned()]) {
        Resolution::Absent | Resolution::Exact(_) | Resolution::SameUri(..) => true,
        Resolution::Invalid(_) | Resolution::OtherUri(_) => false,
    }
}

/// Validates an event of contract `V` arriving at the machine (the init event of its own
/// contract, or a response or system error of service `V`: type, dataschema, payload schema, as
/// [`VersionedContract::validate_orchestration_input`](crate::contract::VersionedContract::validate_orchestration_input))
/// and decodes its payload.
pub fn decode_payload<V: ContractVersion, P: DeserializeOwned>(event: &Event) -> Result<P, Violation> {
    V::versioned().validate_orchestration_input(event)?;
    P::deserialize(event.data_value()).map_err(|e| {
        Violation::contract(format!(
            "Event (id={}, type={}) data passed its schema but does not decode as {}: {e}",
            event.id(),
            event.r#type(),
            std::any::type_name::<P>()
        ))
    })
}

/// An event type service `V` emits that no transition names: validated, then known by its name.
pub fn other_emitted<V: ContractVersion>(event: &Event) -> Option<Result<(), Violation>> {
    let vc = V::versioned();
    let t = event.r#type();
    (t != vc.accepts().event_type() && vc.schema_for_type(t).is_some())
        .then(|| vc.validate_orchestration_input(event))
}

/// Validates the self contract's init event of machine `M` and returns its payload.
pub fn decode_init<M: Machine>(event: &Event) -> Result<M::Input, Violation> {
    type Accepts<M> = <<M as Machine>::Contract as ContractVersion>::Accepts;
    Ok(decode_payload::<M::Contract, Accepts<M>>(event)?.data)
}

/// Whether `event` has the type of the init event of machine `M`.
pub fn is_init<M: Machine>(event: &Event) -> bool {
    event.r#type() == <M::Contract as ContractVersion>::TYPE
}

/// The init event type of machine `M`.
pub fn init_type<M: Machine>() -> &'static str {
    <M::Contract as ContractVersion>::TYPE
}

/// An event no service of machine `M` took: a [`Violation::Contract`] when a declared service
/// has its type but its dataschema names another contract or is malformed (as a resumable
/// answers it), a [`Violation::Config`] when no contract of the machine declares its type.
pub fn unresolved<M: Machine>(machine: &str, event: &Event) -> Violation {
    let t = event.r#type();
    for service in M::services() {
        let vc = service.contract;
        if vc.accepts().event_type() != t
            && vc.schema_for_type(t).is_some()
            && let Err(violation) = vc.validate_orchestration_input(event)
        {
            return violation;
        }
    }
    Violation::config(format!(
        "Contract validation failed - Event (id={}, type={}) does not match any registered contract schemas in the machine `{machine}`",
        event.id(),
        event.r#type()
    ))
}

/// Debug-formats a payload as its JSON.
pub fn debug_payload<P: Serialize>(f: &mut fmt::Formatter<'_>, variant: &str, payload: &P) -> fmt::Result {
    match serde_json::to_string(payload) {
        Ok(json) => write!(f, "{variant}({json})"),
        Err(_) => write!(f, "{variant}(..)"),
    }
}
