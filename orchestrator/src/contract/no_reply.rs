//! [`NoReply`]: contract versions that emit nothing, whose events expect no reply.

use super::ContractVersion;

/// A contract version that declares no emitted event (`emits: {}`): an event it accepts
/// expects no reply, so a workflow may send it as a one-off notification (the `notifications`
/// of [`machine!`](crate::machine!), Arvo's `enqueueArvoEvent`).
///
/// Implemented by [`contract!`](crate::contract!) for each version with no emits.
///
/// ```
/// use orchestrator::contract::NoReply;
/// use orchestrator::prelude::*;
/// #[derive(Serialize, Deserialize, JsonSchema)]
/// pub struct Audit { pub note: String }
/// orchestrator::contract! {
///     pub contract AuditLog { uri: "#/audit", type: "com.audit.log",
///         versions: { AuditLogV1 = "1.0.0" { accepts: Audit, emits: {} } } }
/// }
/// fn expects_no_reply<V: NoReply>() {}
/// expects_no_reply::<AuditLogV1>();
/// ```
#[diagnostic::on_unimplemented(
    message = "contract version `{Self}` declares emitted events, so its events expect a reply",
    label = "not a contract that emits nothing",
    note = "a notification is of a contract with `emits: {{}}`; call a contract that answers as a service"
)]
pub trait NoReply: ContractVersion {}
