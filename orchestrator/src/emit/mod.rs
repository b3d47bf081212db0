//! Building the events handlers emit: the pieces shared by service handlers and orchestrators.
//!
//! * [`system_error_events`]: Arvo's `createSystemErrorEvents`, the `sys.<type>.error` events an
//!   ordinary (non-violation) failure becomes, one copy per unique resolved domain;
//! * [`system_error_payload`]: the `{errorName, errorMessage, errorStack}` payload of an error;
//! * [`NamedError`]: an error with an explicit `errorName`;
//! * [`BoxError`]: the error type user handler code returns.
//!
//! The other outgoing events are built here too (crate-internal): a service handler's emits
//! (`service`), an orchestrator's service requests and child subjects (`requests`) and its
//! completion (`completion`).
//!
//! ```
//! use orchestrator::contract::ContractVersion;
//! use orchestrator::emit::{SystemErrorSpec, system_error_events, system_error_payload, BoxError};
//! use orchestrator::event::Event;
//! # orchestrator::simple_contract! {
//! #     pub contract Add { uri: "#/calc/add", type: "calc.add",
//! #         versions: { AddV1 = "1.0.0" { accepts: In, emits: Out } } }
//! # }
//! # #[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)] pub struct In { a: f64 }
//! # #[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)] pub struct Out { sum: f64 }
//!
//! let request = Event::builder()
//!     .source("com.test.client")
//!     .r#type("com.calc.add")
//!     .subject("request-subject")
//!     .data_json(serde_json::json!({"a": 1}))
//!     .build()?;
//! let error: BoxError = "the adder is broken".into();
//! let events = system_error_events(
//!     &SystemErrorSpec::for_handler(AddV1::versioned(), "com.calc.add", &request),
//!     &system_error_payload(&*error),
//! )?;
//! assert_eq!(events.len(), 1);
//! let sys = &events[0];
//! assert_eq!(sys.r#type(), "sys.com.calc.add.error");
//! assert_eq!(sys.to(), Some("com.test.client"));
//! assert_eq!(sys.parentid(), Some(request.id()));
//! assert_eq!(sys.dataschema(), Some("#/calc/add/0.0.0"));
//! assert_eq!(sys.data()["errorMessage"], "the adder is broken");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod completion;
mod requests;
mod service;

use std::error::Error as StdError;
use std::fmt;

use serde_json::{Number, Value};

use crate::contract::{SystemErrorPayload, VersionedContract};
use crate::domain::{Domain, DomainContext, resolve_all};
use crate::event::Event;
use crate::violation::Violation;

pub(crate) use completion::completion_events;
pub(crate) use requests::request_events;
pub(crate) use service::{schema_errors_json, service_events};

/// The error type user handler code returns: any error, boxed.
///
/// Returning a [`Violation`] (boxed) makes the handler return that violation; any other error
/// becomes `sys.<type>.error` events.
pub type BoxError = Box<dyn StdError + Send + Sync + 'static>;

/// The default domains of system-error events: `[OrchestrationContext]`.
pub const DEFAULT_SYSTEM_ERROR_DOMAINS: &[Domain] = &[Domain::OrchestrationContext];

/// An error with an explicit `errorName` for its system-error event.
///
/// Rust errors have no runtime name: a system-error event's `errorName` is `"Error"` (the name
/// of a plain JavaScript `Error`) unless the error is a `NamedError`.
///
/// ```
/// use orchestrator::emit::{NamedError, system_error_payload};
/// let err = NamedError::new("InsufficientFunds", "balance 3 < 10")
///     .with_source(std::io::Error::other("ledger offline"));
/// let payload = system_error_payload(&err);
/// assert_eq!(payload.error_name, "InsufficientFunds");
/// assert_eq!(payload.error_message, "balance 3 < 10");
/// assert_eq!(payload.error_stack.as_deref(), Some("caused by: ledger offline"));
/// ```
#[derive(Debug)]
pub struct NamedError {
    name: String,
    message: String,
    source: Option<BoxError>,
}

impl NamedError {
    /// An error named `name` with `message`.
    pub fn new(name: impl Into<String>, message: impl Into<String>) -> Self {
        Self { name: name.into(), message: message.into(), source: None }
    }

    /// Sets the underlying cause (reported in `errorStack`).
    #[must_use]
    pub fn with_source(mut self, source: impl Into<BoxError>) -> Self {
        self.source = Some(source.into());
        self
    }

    /// The `errorName`.
    pub fn name(&self) -> &str {
        &self.name
    }
}

impl fmt::Display for NamedError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl StdError for NamedError {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        self.source.as_deref().map(|e| e as &(dyn StdError + 'static))
    }
}

/// What ends a system error message shortened to fit the event size limit.
pub const TRUNCATED: &str = " … [truncated]";

/// [`system_error_events`], made to fit `max` bytes each: a system error must reach the
/// workflow's initiator even when what failed was a too-large event with a long message. When
/// an event is larger than `max`, its `errorStack` is left out, then its `errorMessage` is cut
/// (at a character boundary) and ends with [`TRUNCATED`]. A limit too small for even the
/// envelope gives the events as they are (the runtime then dead-letters them with the reason).
pub fn system_error_events_within(
    spec: &SystemErrorSpec<'_>,
    payload: &SystemErrorPayload,
    max: usize,
) -> Result<Vec<Event>, Violation> {
    let largest = |events: &[Event]| events.iter().map(Event::encoded_len).max().unwrap_or(0);
    let events = system_error_events(spec, payload)?;
    if largest(&events) <= max {
        return Ok(events);
    }
    let mut fitted = payload.clone();
    fitted.error_stack = None;
    fitted.error_message = TRUNCATED.to_owned();
    if largest(&system_error_events(spec, &fitted)?) > max {
        // Not even the envelope fits: the whole error is more use in a dead letter.
        return Ok(events);
    }
    fitted.error_message.clone_from(&payload.error_message);
    let mut events = system_error_events(spec, &fitted)?;
    let message = payload.error_message.as_str();
    // JSON escaping may take more than a byte per byte cut: cut more until it fits.
    let mut cut = largest(&events).saturating_sub(max) + TRUNCATED.len();
    while largest(&events) > max {
        let mut keep = message.len().saturating_sub(cut);
        while !message.is_char_boundary(keep) {
            keep -= 1;
        }
        fitted.error_message = format!("{}{TRUNCATED}", &message[..keep]);
        events = system_error_events(spec, &fitted)?;
        if keep == 0 {
            break;
        }
        cut = cut.saturating_mul(2);
    }
    Ok(events)
}

/// The system-error payload of an error (arvo-core's `createArvoError`):
/// * `errorName`: the [`NamedError`]'s name, else `"Error"`;
/// * `errorMessage`: the error's `Display`;
/// * `errorStack`: its chain of sources, one `caused by: …` line each, or null when it has none.
pub fn system_error_payload(error: &(dyn StdError + 'static)) -> SystemErrorPayload {
    let name = error.downcast_ref::<NamedError>().map_or("Error", NamedError::name);
    let mut stack = Vec::new();
    let mut source = error.source();
    while let Some(cause) = source {
        stack.push(format!("caused by: {cause}"));
        source = cause.source();
    }
    SystemErrorPayload {
        error_name: name.to_owned(),
        error_message: error.to_string(),
        error_stack: (!stack.is_empty()).then(|| stack.join("\n")),
    }
}

/// Everything [`system_error_events`] needs besides the payload. Service handlers use
/// [`SystemErrorSpec::for_handler`]; orchestrators set the parent subject, init event id and
/// initiator of the workflow.
#[derive(Debug, Clone, Copy)]
pub struct SystemErrorSpec<'a> {
    /// The emitter's own contract version (type `sys.<type>.error`, dataschema `<uri>/0.0.0`,
    /// domain for [`Domain::FromSelfContract`] and [`Domain::FromEventContract`]).
    pub contract: &'a VersionedContract,
    /// The emitter's source (its topic).
    pub source: &'a str,
    /// The event whose handling failed.
    pub triggering_event: &'a Event,
    /// The workflow's parent subject: the error is addressed to it when set (a child
    /// workflow's error lands on its parent). `None` for handlers and root workflows.
    pub parent_subject: Option<&'a str>,
    /// The workflow's init event id, used as `parentid` when set (else the triggering event's id).
    pub init_event_id: Option<&'a str>,
    /// The workflow's initiator (`execution.initiator` of the parsed subject), used as `to` when
    /// set (else the triggering event's source). `None` for handlers.
    pub initiator: Option<&'a str>,
    /// The emitter's execution units.
    pub executionunits: Option<&'a Number>,
    /// Domains to emit in; one copy per unique resolved domain. Empty means
    /// [`DEFAULT_SYSTEM_ERROR_DOMAINS`]: a system error is never dropped.
    pub domains: &'a [Domain],
    /// W3C `traceparent` to stamp on the events.
    pub traceparent: Option<&'a str>,
    /// W3C `tracestate` to stamp on the events.
    pub tracestate: Option<&'a str>,
}

impl<'a> SystemErrorSpec<'a> {
    /// A service handler's system error: no parent subject, init id or initiator, the default
    /// domains, the triggering event's trace headers.
    pub fn for_handler(
        contract: &'a VersionedContract,
        source: &'a str,
        triggering_event: &'a Event,
    ) -> Self {
        Self {
            contract,
            source,
            triggering_event,
            parent_subject: None,
            init_event_id: None,
            initiator: None,
            executionunits: None,
            domains: DEFAULT_SYSTEM_ERROR_DOMAINS,
            // Handlers replace them with their execution span's headers.
            traceparent: triggering_event.traceparent(),
            tracestate: triggering_event.tracestate(),
        }
    }
}

/// Arvo's `createSystemErrorEvents`: the `sys.<type>.error` events of one failure, one per unique
/// resolved domain of `spec.domains`.
///
/// | Field | Value |
/// |---|---|
/// | type | `sys.<contract type>.error` |
/// | source | `spec.source` |
/// | subject | `spec.parent_subject` ?? the triggering event's subject |
/// | to | `spec.initiator` ?? the triggering event's source (`meta.redirectto` is ignored, as in Arvo) |
/// | parentid | `spec.init_event_id` ?? the triggering event's id |
/// | data / dataschema | `payload` / `<uri>/0.0.0` |
/// | accesscontrol | the triggering event's |
/// | executionunits | `spec.executionunits` |
/// | domain | resolved with parent = `spec.parent_subject`, current = the triggering event's subject, self and event contract = `spec.contract` |
/// | traceparent / tracestate | `spec.traceparent` / `spec.tracestate` |
///
/// A build failure (which valid inputs cannot cause) is a [`Violation::Contract`].
pub fn system_error_events(
    spec: &SystemErrorSpec<'_>,
    payload: &SystemErrorPayload,
) -> Result<Vec<Event>, Violation> {
    let event = spec.triggering_event;
    let vc = spec.contract;
    let sys_type = vc.system_error().event_type();
    let data = serde_json::to_value(payload).unwrap_or(Value::Null);
    let ctx =
        DomainContext::for_event(event).parent_subject(spec.parent_subject).contract_domain(vc.domain());
    let domains = if spec.domains.is_empty() { DEFAULT_SYSTEM_ERROR_DOMAINS } else { spec.domains };
    let base = Event::builder()
        .source(spec.source)
        .subject(spec.parent_subject.unwrap_or(event.subject()))
        .to(spec.initiator.unwrap_or(event.source()))
        .parentid(spec.init_event_id.unwrap_or(event.id()))
        .accesscontrol_opt(event.accesscontrol())
        .executionunits_opt(spec.executionunits.cloned())
        .traceparent_opt(spec.traceparent)
        .tracestate_opt(spec.tracestate);
    resolve_all(domains, &ctx)
        .into_iter()
        .map(|domain| {
            vc.event_from_json(sys_type, data.clone(), base.clone().domain_opt(domain)).map_err(|e| {
                Violation::contract(format!(
                    "cannot build the system error event '{sys_type}' for event (id={}): {e}",
                    event.id()
                ))
            })
        })
        .collect()
}
