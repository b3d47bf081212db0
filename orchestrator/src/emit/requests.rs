//! The events of an orchestrator's service requests (Arvo's 2.6), shared by every kind of
//! orchestrator, and the subjects of child orchestrations.

use std::fmt;

use crate::contract::{ContractKind, VersionedContract};
use crate::domain::{Domain, DomainContext, resolve_all};
use crate::event::{Event, EventBuilder};
use crate::machine::ServiceRequest;
use crate::orchestration::StepInput;
use crate::subject::Subject;
use crate::violation::Violation;

/// The base of every event an orchestrator emits: source, redirectto, accesscontrol, execution
/// units, trace headers.
pub(super) fn base(source: &'static str, input: &StepInput<'_>) -> EventBuilder {
    let event = input.event;
    Event::builder()
        .source(source)
        .redirectto(source)
        .accesscontrol_opt(event.accesscontrol())
        .executionunits_opt(input.executionunits.cloned())
        .traceparent_opt(input.trace.traceparent())
        .tracestate_opt(input.trace.tracestate())
}

/// The events of service requests emitted by orchestrator `source` (Arvo's 2.6): one per unique
/// resolved domain of `service_domains`; a child subject for an orchestrator-contract service.
/// Shared by every kind of orchestrator.
pub(crate) fn request_events(
    source: &'static str,
    service_domains: &[Domain],
    input: &StepInput<'_>,
    self_contract: &VersionedContract,
    requests: &[ServiceRequest],
) -> Result<Vec<Event>, Violation> {
    let event = input.event;
    let mut out = Vec::with_capacity(requests.len());
    for request in requests {
        let ctx = DomainContext::for_event(event)
            .parent_subject(input.parent_subject)
            .self_contract_domain(self_contract.domain())
            .event_contract_domain(request.contract.domain());
        let is_child = matches!(request.contract.kind(), ContractKind::Orchestrator { .. });
        let options = &request.options;
        let redirectto = options.redirectto.as_deref().unwrap_or(source);
        for domain in resolve_all(options.domains.as_deref().unwrap_or(service_domains), &ctx) {
            // The event shares the parsed subject, so its consumer need not decode it again.
            let subject = if is_child {
                &child_subject(source, request, redirectto, domain.as_deref())?
            } else {
                input.subject
            };
            let mut base = base(source, input)
                .orchestration_subject(subject)
                .to(options.to.as_deref().unwrap_or(request.event_type))
                .redirectto(redirectto)
                .parentid(event.id())
                .domain_opt(domain);
            if let Some(id) = &options.id {
                base = base.id(id.as_str());
            }
            if let Some(accesscontrol) = &options.accesscontrol {
                base = base.accesscontrol(accesscontrol.as_str());
            }
            if let Some(units) = &options.executionunits {
                base = base.executionunits(units.clone());
            }
            out.push(request.to_event(base).map_err(|e| {
                Violation::contract(format!(
                    "[Emittable Event Creation] Invalid event data: the request to service '{}' ({}) from orchestrator {} (event id={}) cannot be built: {e}",
                    request.service,
                    request.event_type,
                    source,
                    event.id()
                ))
            })?);
        }
    }
    Ok(out)
}

/// The subject of a child orchestration: `from(parentSubject$$)` (or a new root when the
/// request has none) with orchestrator = the child's type and the service contract's version,
/// `meta.redirectto` = the request's `redirectto` (this orchestrator by default).
fn child_subject(
    source: &'static str,
    request: &ServiceRequest,
    redirectto: &str,
    domain: Option<&str>,
) -> Result<Subject, Violation> {
    let fail = |e: &dyn fmt::Display| {
        Violation::execution(format!(
            "[Emittable Event Creation] Invalid parentSubject$$ for the child orchestration '{}' requested by {}: {e}",
            request.event_type, source
        ))
    };
    let builder = match request.parent_subject() {
        Some(parent) => Subject::parse(parent)
            .map_err(|e| fail(&e))?
            .child(request.event_type, request.contract.version_str()),
        None => Subject::builder(request.event_type, request.contract.version_str(), source),
    };
    let builder = match domain {
        Some(domain) => builder.domain(domain),
        None => builder,
    };
    builder.meta("redirectto", redirectto).build().map_err(|e| fail(&e))
}
