//! The completion events of an orchestrator (Arvo's 2.6), shared by every kind of orchestrator.

use std::fmt;

use serde_json::Value;

use super::requests::base;
use crate::contract::VersionedContract;
use crate::domain::{Domain, DomainContext, resolve_all};
use crate::event::Event;
use crate::machine::CompletionOptions;
use crate::orchestration::StepInput;
use crate::violation::Violation;

/// The completion events of orchestrator `source` (Arvo's 2.6): type `complete_type` of the self
/// contract `vc`, subject = the parent subject ?? the workflow's, to = `meta.redirectto` ?? the
/// initiator, parentid = the init event id, one per unique resolved domain of
/// `complete_domains`. `what` names the orchestrator in error messages. The workflow's
/// [`CompletionOptions`] replace the id, execution units and domains (checked by the caller).
// The emission's parts, each from a different owner: a struct would only rename them.
#[allow(clippy::too_many_arguments)]
pub(crate) fn completion_events(
    source: &'static str,
    complete_domains: &[Domain],
    input: &StepInput<'_>,
    vc: &VersionedContract,
    complete_type: &str,
    what: &dyn fmt::Display,
    output: Value,
    options: &CompletionOptions,
) -> Result<Vec<Event>, Violation> {
    let event = input.event;
    let ctx =
        DomainContext::for_event(event).parent_subject(input.parent_subject).contract_domain(vc.domain());
    let to = input.subject.meta("redirectto").unwrap_or(input.subject.initiator());
    let base = match input.parent_subject {
        Some(parent) => base(source, input).subject(parent),
        None => base(source, input).orchestration_subject(input.subject),
    };
    let mut base = base.to(to).parentid(input.init_event_id);
    if let Some(id) = &options.id {
        base = base.id(id.as_str());
    }
    if let Some(units) = &options.executionunits {
        base = base.executionunits(units.clone());
    }
    resolve_all(options.domains.as_deref().unwrap_or(complete_domains), &ctx)
        .into_iter()
        .map(|domain| {
            vc.event_from_json(complete_type, output.clone(), base.clone().domain_opt(domain)).map_err(|e| {
                Violation::contract(format!(
                    "[Emittable Event Creation] Invalid event data: the completion of {what} ({complete_type}) does not match {}: {e}",
                    vc.dataschema()
                ))
            })
        })
        .collect()
}
