//! Incoming contract/version resolution: which of some contract versions an incoming event's
//! `dataschema` names. Every handler resolves through [`resolve`] and turns the answer into its
//! own behaviour (a version to run, a check, a service to validate against).

use super::VersionedContract;
use crate::dataschema::{self, Dataschema};
use crate::event::Event;

/// What an event's `dataschema` names among some contract versions.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Resolution<'e, 'c> {
    /// The event has no dataschema.
    Absent,
    /// The dataschema is not `<uri>/<X.Y.Z>`.
    Invalid(&'e str),
    /// A candidate with the dataschema's URI and version.
    Exact(&'c VersionedContract),
    /// No candidate has the version, but this one (the first) has the URI.
    SameUri(&'c VersionedContract, Dataschema<'e>),
    /// No candidate has the URI.
    OtherUri(Dataschema<'e>),
}

/// Resolves `event`'s dataschema among `candidates`: an exact `<uri>/<version>` match first (by
/// string, then parsed), else the first candidate with the URI.
pub(crate) fn resolve<'e, 'c>(
    event: &'e Event,
    candidates: impl IntoIterator<Item = &'c VersionedContract> + Clone,
) -> Resolution<'e, 'c> {
    let Some(ds) = event.dataschema() else { return Resolution::Absent };
    // Usually the dataschema is exactly one of the versions' `<uri>/<version>`.
    if let Some(vc) = candidates.clone().into_iter().find(|vc| vc.dataschema() == ds) {
        return Resolution::Exact(vc);
    }
    let Some(parsed) = dataschema::parse(ds) else { return Resolution::Invalid(ds) };
    if let Some(vc) =
        candidates.clone().into_iter().find(|vc| vc.uri() == parsed.uri && vc.version() == parsed.version)
    {
        return Resolution::Exact(vc);
    }
    match candidates.into_iter().find(|vc| vc.uri() == parsed.uri) {
        Some(vc) => Resolution::SameUri(vc, parsed),
        None => Resolution::OtherUri(parsed),
    }
}
