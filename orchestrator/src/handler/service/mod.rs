//! Service handlers: stateless, contract-bound event handlers (Arvo's `ArvoEventHandler`).
//!
//! A [`ServiceHandler<C>`] serves contract `C` with one async function per contract version, and
//! **every** version must have one ([`ServiceHandlerBuilder::build`] refuses otherwise). Its
//! [`source`](crate::handler::EventHandler::source) is the contract's accepted type.
//!
//! ```
//! use orchestrator::handler::EventHandler;
//! use orchestrator::handler::service::{Emit, ServiceHandler, ServiceInput};
//! use orchestrator::prelude::*;
//!
//! #[derive(Serialize, Deserialize, JsonSchema)]
//! pub struct Operands { pub a: f64, pub b: f64 }
//! #[derive(Serialize, Deserialize, JsonSchema)]
//! pub struct Sum { pub sum: f64 }
//!
//! orchestrator::simple_contract! {
//!     pub contract Add {
//!         uri: "#/calc/add",
//!         type: "calc.add",
//!         versions: { AddV1 = "1.0.0" { accepts: Operands, emits: Sum } },
//!     }
//! }
//!
//! let add = ServiceHandler::<Add>::builder()
//!     .version(|input: ServiceInput<AddV1>| async move {
//!         let Operands { a, b } = input.payload;
//!         Ok(Emit::new(Sum { sum: a + b })) // Emit<AddV1>: only payloads AddV1 declares compile
//!     })
//!     .execution_units(1.0)
//!     .build()?;
//! assert_eq!(add.source(), "com.calc.add");
//!
//! let request = EventFactory::<AddV1>::new()
//!     .accepts(Operands { a: 1.0, b: 2.0 }, Event::builder().source("com.test.client"))?;
//! let rt = tokio::runtime::Builder::new_current_thread().build()?;
//! let out = rt.block_on(add.execute(&request))?;
//!
//! let response = &out[0];
//! assert_eq!(response.r#type(), "evt.calc.add.success");
//! assert_eq!(response.to(), Some("com.test.client")); // back to the requester
//! assert_eq!(response.parentid(), Some(request.id()));
//! assert_eq!(response.dataschema(), Some("#/calc/add/1.0.0"));
//! assert_eq!(response.data()["sum"], 3.0);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Execution (`EventHandler::execute`)
//!
//! 1. The event's type must be the contract's accepted type, else [`Violation::Config`]
//!    `Event type mismatch: Received 'X', expected 'Y'`.
//! 2. The version is picked by the event's `dataschema` (`<uri>/<version>`):
//!    * no dataschema, or one whose last segment is not `X.Y.Z` → the **latest** version;
//!    * a dataschema naming another contract URI → [`Violation::Contract`];
//!    * a version the contract does not have → [`Violation::Config`].
//! 3. The payload must satisfy that version's accepts schema, else [`Violation::Contract`] (with
//!    every schema error in its metadata).
//! 4. The version's function runs with a [`ServiceInput`]: the decoded payload, the event, the
//!    versioned contract and the handler's source.
//! 5. Each returned [`Emit`] becomes one event per **unique** resolved domain of its
//!    [`domains`](Emit::domains) (default: the handler's emit domains, `[OrchestrationContext]`):
//!
//!    | Field | Value |
//!    |---|---|
//!    | type, data | from the payload type, checked against its emit schema |
//!    | source | the contract's accepted type |
//!    | subject | the input's subject |
//!    | parentid | the input's id (cannot be overridden) |
//!    | to | emit `to` ?? input `redirectto` ?? input `source` |
//!    | redirectto | emit `redirectto`, else none |
//!    | accesscontrol | emit ?? input |
//!    | executionunits | emit ?? handler |
//!    | dataschema | `<uri>/<version used>` |
//!    | id, time | emit's when set (every domain copy shares the id), else new |
//!    | domain | resolved ([`crate::domain`]) with self and event contract = this contract, no parent subject |
//!    | traceparent, tracestate | the handler span's ([`crate::telemetry`]; without the `opentelemetry` feature, the input's) |
//!
//!    An event that cannot be built (a payload failing its emit schema, a bad extension key, a
//!    non-finite `executionunits`, …) is a [`Violation::Contract`]; nothing is emitted.
//! 6. Errors of the function:
//!    * a [`Violation`] (boxed into the [`BoxError`]) is returned as is;
//!    * any other error, a panic, and a result JSON cannot represent (a payload holding NaN or
//!      an infinity, which serde_json would write as `null`) become `sys.<type>.error` events
//!      ([`crate::emit::system_error_events`]): to the input's source, subject = the input's,
//!      parentid = the input's id, dataschema `<uri>/0.0.0`, accesscontrol = the input's,
//!      executionunits = the handler's, one copy per unique resolved domain of the handler's
//!      system-error domains (`[OrchestrationContext]`).
//!
//! Each execution is a `Handler<uri>` span (kind CONSUMER) with Arvo's attributes, parented on
//! the input's trace context; see [`crate::telemetry`].

mod input;
mod output;

use std::any::Any;
use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use serde::Deserialize;
use serde_json::Number;

pub use crate::emit::BoxError;
pub use input::ServiceInput;
pub use output::{Emissions, Emit};

pub(crate) use self::output::RawEmit;
use super::EventHandler;
use crate::contract::{
    ArvoContract, Contract, ContractVersion, Resolution, VersionSelector, VersionedContract, resolve,
};
use crate::domain::Domain;
use crate::emit::{
    NamedError, SystemErrorSpec, schema_errors_json, service_events, system_error_events_within,
    system_error_payload,
};
use crate::event::Event;
use crate::semver::SemVer;
use crate::telemetry::{Execution, ExecutionKind, Telemetry, TraceHeaders};
use crate::violation::Violation;

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

/// One version's function, without its types.
type VersionFn = Box<
    dyn Fn(&Event, &'static VersionedContract, &TraceHeaders) -> BoxFuture<Result<Vec<RawEmit>, BoxError>>
        + Send
        + Sync,
>;

/// A stateless handler for contract `C`, one function per contract version. Cheap to clone.
///
/// See the [module documentation](self) for what `execute` does.
pub struct ServiceHandler<C> {
    inner: Arc<Inner>,
    _contract: PhantomData<fn() -> C>,
}

struct Inner {
    contract: &'static ArvoContract,
    executionunits: Option<Number>,
    emit_domains: Vec<Domain>,
    system_error_domains: Vec<Domain>,
    versions: BTreeMap<SemVer, VersionFn>,
    telemetry: Telemetry,
    max_event_bytes: usize,
}

impl<C: Contract> ServiceHandler<C> {
    /// Starts declaring a handler for contract `C`.
    pub fn builder() -> ServiceHandlerBuilder<C> {
        ServiceHandlerBuilder {
            versions: Vec::new(),
            executionunits: None,
            emit_domains: None,
            system_error_domains: None,
            telemetry: Telemetry::default(),
            max_event_bytes: crate::event::DEFAULT_MAX_EVENT_BYTES,
            _contract: PhantomData,
        }
    }
}

impl<C> ServiceHandler<C> {
    /// The contract served.
    pub fn contract(&self) -> &'static ArvoContract {
        self.inner.contract
    }

    /// The default execution units of emitted events.
    pub fn executionunits(&self) -> Option<&Number> {
        self.inner.executionunits.as_ref()
    }

    /// The default domains of emitted events.
    pub fn emit_domains(&self) -> &[Domain] {
        &self.inner.emit_domains
    }

    /// The domains of system-error events.
    pub fn system_error_domains(&self) -> &[Domain] {
        &self.inner.system_error_domains
    }
}

impl<C> Clone for ServiceHandler<C> {
    fn clone(&self) -> Self {
        Self { inner: Arc::clone(&self.inner), _contract: PhantomData }
    }
}

impl<C> fmt::Debug for ServiceHandler<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServiceHandler")
            .field("contract", &self.inner.contract.uri())
            .field("source", &self.inner.contract.r#type())
            .field("versions", &self.inner.versions.keys().map(ToString::to_string).collect::<Vec<_>>())
            .field("executionunits", &self.inner.executionunits)
            .field("emit_domains", &self.inner.emit_domains)
            .field("system_error_domains", &self.inner.system_error_domains)
            .finish()
    }
}

impl<C: Contract> EventHandler for ServiceHandler<C> {
    fn source(&self) -> &str {
        self.inner.contract.r#type()
    }

    async fn execute(&self, event: &Event) -> Result<Vec<Event>, Violation> {
        self.inner.execute(event).await
    }
}

/// Declares a [`ServiceHandler`]: a function for every contract version, then options.
#[must_use]
pub struct ServiceHandlerBuilder<C> {
    versions: Vec<(SemVer, VersionFn)>,
    executionunits: Option<f64>,
    emit_domains: Option<Vec<Domain>>,
    system_error_domains: Option<Vec<Domain>>,
    telemetry: Telemetry,
    max_event_bytes: usize,
    _contract: PhantomData<fn() -> C>,
}

impl<C: Contract> ServiceHandlerBuilder<C> {
    /// The function handling version `V` of the contract (`V` is usually inferred from the
    /// closure's `ServiceInput<V>` argument).
    ///
    /// It returns anything that converts into [`Emissions<V>`] (an [`Emit<V>`], a `Vec` of
    /// them, `()`, …) or an error: a boxed [`Violation`] is returned by `execute` as is; any other
    /// error becomes system-error events.
    pub fn version<V, F, Fut, O>(mut self, handler: F) -> Self
    where
        V: ContractVersion<Contract = C>,
        F: Fn(ServiceInput<V>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<O, BoxError>> + Send + 'static,
        O: Into<Emissions<V>>,
    {
        let handler = Arc::new(handler);
        let erased: VersionFn = Box::new(move |event: &Event, vc, headers: &TraceHeaders| {
            let handler = Arc::clone(&handler);
            let input = V::Accepts::deserialize(event.data_value()).map(|payload| {
                let source = <C as Contract>::contract().r#type();
                ServiceInput::<V>::new(payload, event.clone(), vc, source, headers.clone())
            });
            let decode_error = |e: serde_json::Error| -> BoxError {
                Box::new(Violation::contract(format!(
                    "Event (id={}, type={}) data passed its schema but does not decode as {}: {e}",
                    event.id(),
                    event.r#type(),
                    std::any::type_name::<V::Accepts>()
                )))
            };
            let input = input.map_err(decode_error);
            Box::pin(async move {
                // The function is called inside the future, so a panic in its synchronous part
                // is caught like one in its asynchronous part.
                let output = (*handler)(input?).await?;
                Ok(output.into().into_raw())
            })
        });
        self.versions.push((V::versioned().version(), erased));
        self
    }

    /// The default execution units of emitted and system-error events (default: none).
    pub fn execution_units(mut self, units: f64) -> Self {
        self.executionunits = Some(units);
        self
    }

    /// The default domains of emitted events (default: `[OrchestrationContext]`).
    pub fn emit_domains(mut self, domains: impl IntoIterator<Item = Domain>) -> Self {
        self.emit_domains = Some(domains.into_iter().collect());
        self
    }

    /// The largest event the handler may answer with, once serialized (default
    /// [`DEFAULT_MAX_EVENT_BYTES`](crate::event::DEFAULT_MAX_EVENT_BYTES), the parsers' limit
    /// and a [`Node`](crate::runtime::Node)'s default). An answer with a larger event is the
    /// function's failure: the handler answers with a `sys.<type>.error` event named
    /// `EventTooLarge` instead, saying which event, its size and the limit. Run by a
    /// [`Node`](crate::runtime::Node) or a [`Broker`](crate::broker::Broker) whose limit is
    /// smaller, the handler applies theirs.
    pub fn max_event_bytes(mut self, max: usize) -> Self {
        self.max_event_bytes = max;
        self
    }

    /// The domains of system-error events (default: `[OrchestrationContext]`).
    pub fn system_error_domains(mut self, domains: impl IntoIterator<Item = Domain>) -> Self {
        self.system_error_domains = Some(domains.into_iter().collect());
        self
    }

    /// Sets the OpenTelemetry settings (default: the global tracer provider, spans parented on
    /// the input's trace context).
    pub fn telemetry(mut self, telemetry: Telemetry) -> Self {
        self.telemetry = telemetry;
        self
    }

    /// Uses `tracer` for this handler's spans instead of the global provider's.
    #[cfg(feature = "opentelemetry")]
    pub fn tracer<T>(mut self, tracer: T) -> Self
    where
        T: opentelemetry::trace::Tracer + Send + Sync + 'static,
        T::Span: Send + Sync + 'static,
    {
        self.telemetry = self.telemetry.with_tracer(tracer);
        self
    }

    /// Sets where this handler's spans' parents come from (default: the input's trace context).
    #[cfg(feature = "opentelemetry")]
    pub fn trace_inheritance(mut self, inheritance: crate::telemetry::TraceInheritance) -> Self {
        self.telemetry = self.telemetry.with_inheritance(inheritance);
        self
    }

    /// The handler, or a [`Violation::Config`] listing every problem: each contract version
    /// without a function, a version given two functions, non-finite execution units, an empty
    /// domain list.
    pub fn build(self) -> Result<ServiceHandler<C>, Violation> {
        let contract = C::contract();
        let mut problems = Vec::new();
        let mut versions = BTreeMap::new();
        let mut duplicates = Vec::new();
        for (version, f) in self.versions {
            if versions.insert(version, f).is_some() {
                duplicates.push(version.to_string());
            }
        }
        let missing: Vec<String> = contract
            .version_numbers()
            .into_iter()
            .filter(|v| !versions.contains_key(v))
            .map(|v| v.to_string())
            .collect();
        if !missing.is_empty() {
            problems.push(format!(
                "contract (uri={}) requires a handler for every version; missing: {}",
                contract.uri(),
                missing.join(", ")
            ));
        }
        if !duplicates.is_empty() {
            problems.push(format!("more than one handler for version(s): {}", duplicates.join(", ")));
        }
        let executionunits = match self.executionunits {
            None => None,
            Some(units) => {
                let number = Number::from_f64(units);
                if number.is_none() {
                    problems.push(format!("execution units must be a finite number, got {units}"));
                }
                number
            }
        };
        let default_domains = || vec![Domain::OrchestrationContext];
        let emit_domains = self.emit_domains.unwrap_or_else(default_domains);
        let system_error_domains = self.system_error_domains.unwrap_or_else(default_domains);
        if emit_domains.is_empty() {
            problems.push("the default emit domains must not be empty".to_owned());
        }
        if system_error_domains.is_empty() {
            problems.push("the system-error domains must not be empty".to_owned());
        }
        if !problems.is_empty() {
            return Err(Violation::config(format!(
                "Invalid service handler for contract (uri={}): {}",
                contract.uri(),
                problems.join("; ")
            ))
            .with_metadata(
                serde_json::json!({ "missingVersions": missing, "duplicateVersions": duplicates }),
            ));
        }
        Ok(ServiceHandler {
            inner: Arc::new(Inner {
                contract,
                executionunits,
                emit_domains,
                system_error_domains,
                versions,
                telemetry: self.telemetry,
                max_event_bytes: self.max_event_bytes,
            }),
            _contract: PhantomData,
        })
    }
}

impl Inner {
    async fn execute(&self, event: &Event) -> Result<Vec<Event>, Violation> {
        let exec =
            self.telemetry.start(ExecutionKind::Handler, self.contract.uri(), self.contract.r#type(), event);
        let result = self.run(event, &exec).await;
        match &result {
            Ok(events) => exec.emittables(events),
            Err(violation) => exec.violation(violation),
        }
        result
    }

    async fn run(&self, event: &Event, exec: &Execution) -> Result<Vec<Event>, Violation> {
        let contract = self.contract;
        if event.r#type() != contract.r#type() {
            return Err(Violation::config(format!(
                "Event type mismatch: Received '{}', expected '{}'",
                event.r#type(),
                contract.r#type()
            )));
        }
        let vc = self.select_version(event)?;
        vc.accepts().validate(event.data_value()).map_err(|errors| {
            Violation::contract(format!(
                "Input event payload validation failed: event (id={}, type={}) does not match {}: {errors}",
                event.id(),
                event.r#type(),
                vc.dataschema()
            ))
            .with_metadata(schema_errors_json(&errors))
        })?;
        let Some(function) = self.versions.get(&vc.version()) else {
            // Unreachable: `build` requires a function for every version.
            return Err(Violation::config(format!(
                "no handler for version {} of contract (uri={})",
                vc.version_str(),
                contract.uri()
            )));
        };
        let call = std::pin::pin!(exec.instrument(function(event, vc, exec.headers())));
        let payload = match CatchUnwind(call).await {
            // A result JSON cannot represent is the function's failure, not the contract's.
            Ok(Ok(emits)) if output::not_representable(&emits).is_some() => {
                match output::not_representable(&emits) {
                    Some(error) => system_error_payload(error),
                    None => unreachable!("checked by the guard"),
                }
            }
            Ok(Ok(emits)) => {
                let events = service_events(
                    self.contract.r#type(),
                    event,
                    vc,
                    emits,
                    self.executionunits.as_ref(),
                    &self.emit_domains,
                    exec.headers(),
                )?;
                // An answer too large to send is the function's failure, like one JSON cannot
                // represent.
                match events
                    .iter()
                    .find_map(|e| e.check_size(crate::event::effective_limit(self.max_event_bytes)).err())
                {
                    None => return Ok(events),
                    Some(too_large) => {
                        system_error_payload(&NamedError::new("EventTooLarge", too_large.to_string()))
                    }
                }
            }
            Ok(Err(error)) => match error.downcast::<Violation>() {
                Ok(violation) => return Err(*violation),
                Err(error) => system_error_payload(&*error),
            },
            Err(panic) => panic_payload(&*panic),
        };
        exec.failure(&payload.error_name, &payload.error_message);
        self.system_errors(event, vc, &payload, exec)
    }

    fn select_version(&self, event: &Event) -> Result<&'static VersionedContract, Violation> {
        let contract = self.contract;
        let parsed = match resolve(event, contract.versions()) {
            Resolution::Exact(vc) => return Ok(vc),
            Resolution::Absent | Resolution::Invalid(_) => {
                // OpenTelemetry: log a WARNING "Version resolution failed for event with dataschema
                // '…'. Defaulting to the latest version".
                return contract.version(VersionSelector::Latest).ok_or_else(|| {
                    Violation::config(format!("contract (uri={}) has no version", contract.uri()))
                });
            }
            Resolution::SameUri(_, parsed) | Resolution::OtherUri(parsed) => parsed,
        };
        if parsed.uri != contract.uri() {
            return Err(Violation::contract(format!(
                "Contract URI mismatch: handler for contract (uri={}) cannot process event (id={}) whose dataschema '{}' names contract uri '{}'",
                contract.uri(),
                event.id(),
                event.dataschema().unwrap_or_default(),
                parsed.uri
            )));
        }
        Err(Violation::config(format!(
            "Invalid contract version: event (id={}) dataschema names version {} of contract (uri={}), which has [{}]",
            event.id(),
            parsed.version,
            contract.uri(),
            contract.version_numbers().iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")
        )))
    }

    fn system_errors(
        &self,
        event: &Event,
        vc: &'static VersionedContract,
        payload: &crate::contract::SystemErrorPayload,
        exec: &Execution,
    ) -> Result<Vec<Event>, Violation> {
        let spec = SystemErrorSpec {
            executionunits: self.executionunits.as_ref(),
            domains: &self.system_error_domains,
            traceparent: exec.headers().traceparent(),
            tracestate: exec.headers().tracestate(),
            ..SystemErrorSpec::for_handler(vc, self.contract.r#type(), event)
        };
        system_error_events_within(&spec, payload, crate::event::effective_limit(self.max_event_bytes))
    }
}

/// The system-error payload of a panic in handler code: `errorName` `Panic`.
fn panic_payload(panic: &(dyn Any + Send)) -> crate::contract::SystemErrorPayload {
    let message = panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "handler panicked".to_owned());
    crate::contract::SystemErrorPayload::new("Panic", message)
}

/// Polls a future, turning a panic into an `Err` with the panic payload.
struct CatchUnwind<F>(F);

impl<F: Future + Unpin> Future for CatchUnwind<F> {
    type Output = Result<F::Output, Box<dyn Any + Send>>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let future = &mut self.0;
        match std::panic::catch_unwind(AssertUnwindSafe(|| Pin::new(&mut *future).poll(cx))) {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(value)) => Poll::Ready(Ok(value)),
            Err(panic) => Poll::Ready(Err(panic)),
        }
    }
}
