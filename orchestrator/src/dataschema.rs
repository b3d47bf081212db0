//! Dataschema strings `<uri>/<version>` (arvo-core's `EventDataschemaUtil`).
//!
//! ```
//! use orchestrator::dataschema;
//! assert_eq!(dataschema::build("#/calc/add", "1.0.0"), "#/calc/add/1.0.0");
//! let parsed = dataschema::parse("#/calc/add/1.0.0").unwrap();
//! assert_eq!((parsed.uri, parsed.version.to_string().as_str()), ("#/calc/add", "1.0.0"));
//! assert!(dataschema::parse("#/calc/add/latest").is_none());
//! ```

use crate::semver::{self, SemVer};

/// A parsed dataschema.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dataschema<'a> {
    /// The contract URI.
    pub uri: &'a str,
    /// The contract version.
    pub version: SemVer,
}

impl Dataschema<'_> {
    /// True for the wildcard version `0.0.0` used by system errors.
    pub fn is_wildcard(&self) -> bool {
        self.version.is_wildcard()
    }
}

/// `<uri>/<version>`.
pub fn build(uri: &str, version: &str) -> String {
    let mut s = String::with_capacity(uri.len() + version.len() + 1);
    s.push_str(uri);
    s.push('/');
    s.push_str(version);
    s
}

/// `<uri>/0.0.0`, the dataschema of system-error events.
pub fn wildcard(uri: &str) -> String {
    build(uri, semver::WILDCARD_STR)
}

/// Splits at the last `/`; the last segment must be `X.Y.Z`, else `None`. The URI is what comes
/// before, possibly empty (`/1.0.0` and `1.0.0` name the empty URI), as arvo-core's
/// `EventDataschemaUtil.parse`: no contract has the empty URI, so such a dataschema is a URI
/// mismatch, never a missing dataschema.
///
/// ```
/// use orchestrator::dataschema;
/// assert_eq!(dataschema::parse("/1.0.0").unwrap().uri, "");
/// assert_eq!(dataschema::parse("1.0.0").unwrap().uri, "");
/// ```
pub fn parse(value: &str) -> Option<Dataschema<'_>> {
    let (uri, version) = value.rsplit_once('/').unwrap_or(("", value));
    Some(Dataschema { uri, version: version.parse().ok()? })
}

/// True when [`parse`] succeeds.
pub fn is_valid(value: &str) -> bool {
    parse(value).is_some()
}
