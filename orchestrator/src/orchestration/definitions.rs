//! The [`Definition`]s of a workflow version and its contracts, as a node records them in its
//! store's [catalog](crate::memory::Catalog).

use orchestrator_chart::Chart;
use orchestrator_chart::export::{self, NameTable};
use serde_json::{Value, json};

use crate::contract::VersionedContract;
use crate::memory::{Definition, DefinitionKind};

/// The definition of contract version `contract`: Arvo's `toJsonSchema()` of that version.
pub(crate) fn contract(contract: &VersionedContract) -> Definition {
    Definition {
        kind: DefinitionKind::Contract,
        name: contract.accepts().event_type().to_owned(),
        version: contract.version_str().to_owned(),
        document: contract.to_json_schema(),
    }
}

/// A `machine!`'s chart and its display names.
pub(crate) struct ChartOf<'a> {
    /// The machine's name.
    pub(crate) machine: &'a str,
    /// Its chart.
    pub(crate) chart: &'a Chart,
    /// Its guards' and actions' names.
    pub(crate) names: NameTable,
}

/// The definitions of one workflow version: the orchestrator (its machine and chart, when it is
/// a `machine!`, and the contracts it uses), its own contract and each service's.
pub(crate) fn workflow(
    own: &VersionedContract,
    services: &[(&str, &VersionedContract)],
    chart: Option<ChartOf<'_>>,
) -> Vec<Definition> {
    let reference = |c: &VersionedContract| json!({ "type": c.accepts().event_type(), "uri": c.uri(), "version": c.version_str() });
    let document = json!({
        "machine": chart.as_ref().map(|c| c.machine),
        "resumable": chart.is_none(),
        "contract": reference(own),
        "services": services
            .iter()
            .map(|(name, c)| {
                let mut service = reference(c);
                service["name"] = json!(name);
                service
            })
            .collect::<Vec<Value>>(),
        "chart": chart.as_ref().map(|c| json!({
            "xstate": export::to_xstate_json(c.chart, &c.names),
            "mermaid": export::to_mermaid(c.chart, &c.names),
            "dot": export::to_dot(c.chart, &c.names),
        })),
    });
    let mut definitions = vec![Definition {
        kind: DefinitionKind::Orchestrator,
        name: own.accepts().event_type().to_owned(),
        version: own.version_str().to_owned(),
        document,
    }];
    definitions.push(contract(own));
    definitions.extend(services.iter().map(|(_, c)| contract(c)));
    definitions
}
