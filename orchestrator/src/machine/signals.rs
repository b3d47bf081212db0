//! The compile-time face of a machine's signals (see [Signals](super#signals)).

use crate::contract::ContractVersion;

/// `P` is the payload signal contract `Self` accepts: the trigger `signal::P` of a machine
/// compiles only then, and its events have type [`SignalPayload::EVENT_TYPE`].
#[diagnostic::on_unimplemented(
    message = "signal `{Self}` does not accept payload `{P}`",
    label = "not the payload `{Self}` accepts",
    note = "a signal trigger names the payload its contract accepts: `key::<Accepted>`"
)]
pub trait SignalPayload<P>: ContractVersion {
    /// The signal's event type: the contract's accepted type.
    const EVENT_TYPE: &'static str;
}

impl<V: ContractVersion> SignalPayload<V::Accepts> for V {
    const EVENT_TYPE: &'static str = V::TYPE;
}
