//! The events a service handler's function emits ([`Emit`](crate::handler::service::Emit)).

use serde_json::{Number, Value};

use crate::contract::{SchemaErrors, VersionedContract};
use crate::domain::{Domain, DomainContext, resolve_all};
use crate::event::Event;
use crate::factory::FactoryError;
use crate::handler::service::RawEmit;
use crate::telemetry::TraceHeaders;
use crate::violation::Violation;

/// The events of the emits a service handler's function returned for `event`, handled by
/// version `vc`: source = `source` (the contract type), subject = the event's, parentid = the
/// event's id, to = the emit's ?? the event's `redirectto` ?? its source, access control = the
/// emit's ?? the event's, execution units = the emit's ?? `executionunits`, trace headers =
/// `trace`; one event per unique resolved domain of the emit's domains (default
/// `emit_domains`).
pub(crate) fn service_events(
    source: &str,
    event: &Event,
    vc: &'static VersionedContract,
    emits: Vec<RawEmit>,
    executionunits: Option<&Number>,
    emit_domains: &[Domain],
    trace: &TraceHeaders,
) -> Result<Vec<Event>, Violation> {
    let ctx = DomainContext::for_event(event).contract_domain(vc.domain());
    let mut out = Vec::with_capacity(emits.len());
    for mut emit in emits {
        let fail = |reason: String| {
            Violation::contract(format!(
                "Emitted event creation failed: '{}' from handler for {} (input event id={}): {reason}",
                emit.event_type,
                vc.dataschema(),
                event.id()
            ))
        };
        let data = std::mem::replace(&mut emit.data, Ok(serde_json::Map::new()))
            .map_err(|e| fail(format!("the payload cannot be serialized: {e}")))?;
        let executionunits = match emit.executionunits {
            None => executionunits.cloned(),
            Some(units) => Some(
                Number::from_f64(units)
                    .ok_or_else(|| fail(format!("executionunits must be a finite number, got {units}")))?,
            ),
        };
        let mut base = Event::builder()
            .source(source)
            .subject_of(event)
            .parentid(event.id())
            .to(emit.to.as_deref().or(event.redirectto()).unwrap_or(event.source()))
            .redirectto_opt(emit.redirectto.as_deref())
            .accesscontrol_opt(emit.accesscontrol.as_deref().or(event.accesscontrol()))
            .executionunits_opt(executionunits)
            .id_opt(emit.id.as_deref())
            .time_opt(emit.time.as_deref())
            .traceparent_opt(trace.traceparent())
            .tracestate_opt(trace.tracestate())
            // As arvo-core's createArvoEvent (without its double encoding).
            .encode_uris(true);
        for (key, value) in &emit.extensions {
            base = base.extension(key.clone(), value.clone());
        }
        let domains = emit.domains.as_deref().unwrap_or(emit_domains);
        let domains = resolve_all(domains, &ctx);
        let count = domains.len();
        let mut data = Value::Object(data);
        for (i, domain) in domains.into_iter().enumerate() {
            // The last (usually the only) domain's event takes the payload and the builder.
            let (data, base) = if i + 1 == count {
                (std::mem::take(&mut data), std::mem::take(&mut base))
            } else {
                (data.clone(), base.clone())
            };
            let built = vc.event_from_json(emit.event_type, data, base.domain_opt(domain));
            out.push(built.map_err(|e| {
                let metadata = match &e {
                    FactoryError::Data { errors, .. } => Some(schema_errors_json(errors)),
                    _ => None,
                };
                let violation = fail(e.to_string());
                match metadata {
                    Some(m) => violation.with_metadata(m),
                    None => violation,
                }
            })?);
        }
    }
    Ok(out)
}

/// The `{"errors": [{path, message}…]}` metadata of a schema violation.
pub(crate) fn schema_errors_json(errors: &SchemaErrors) -> Value {
    serde_json::json!({
        "errors": errors
            .errors
            .iter()
            .map(|e| serde_json::json!({"path": e.path, "message": e.message}))
            .collect::<Vec<_>>()
    })
}
