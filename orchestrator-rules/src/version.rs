//! Arvo's semantic-version rule `^\d+\.\d+\.\d+$`.

/// Parses `MAJOR.MINOR.PATCH` (decimal digits only, each fitting in 64 bits).
///
/// ```
/// assert_eq!(orchestrator_rules::version::parse("1.10.0"), Some((1, 10, 0)));
/// assert_eq!(orchestrator_rules::version::parse("1.0"), None);
/// ```
pub fn parse(value: &str) -> Option<(u64, u64, u64)> {
    let mut parts = value.split('.');
    let mut next = || -> Option<u64> {
        let part = parts.next()?;
        if part.is_empty() || !part.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        part.parse().ok()
    };
    let version = (next()?, next()?, next()?);
    parts.next().is_none().then_some(version)
}

/// The wildcard version `0.0.0`, reserved for system-error dataschemas.
pub const WILDCARD: &str = "0.0.0";

/// Human-readable statement of the rule.
pub const RULE: &str =
    "must be a semantic version MAJOR.MINOR.PATCH with decimal numbers (^\\d+\\.\\d+\\.\\d+$)";
