//! Arvo semantic versions: exactly `MAJOR.MINOR.PATCH` with decimal numbers, compared numerically.

use std::fmt;
use std::str::FromStr;

/// A version `MAJOR.MINOR.PATCH` as Arvo accepts it (`^\d+\.\d+\.\d+$`).
///
/// Ordering is numeric, so `1.10.0 > 1.9.0`.
///
/// ```
/// use orchestrator::semver::SemVer;
/// let a: SemVer = "1.10.0".parse().unwrap();
/// let b: SemVer = "1.9.0".parse().unwrap();
/// assert!(a > b);
/// assert!("1.0".parse::<SemVer>().is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SemVer {
    /// Major version.
    pub major: u64,
    /// Minor version.
    pub minor: u64,
    /// Patch version.
    pub patch: u64,
}

/// The wildcard version `0.0.0`, reserved for system-error dataschemas; contracts may not declare it.
pub const WILDCARD: SemVer = SemVer { major: 0, minor: 0, patch: 0 };

/// The textual form of [`WILDCARD`].
pub const WILDCARD_STR: &str = "0.0.0";

/// A string that is not a valid Arvo semantic version.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "invalid semantic version '{value}': must be MAJOR.MINOR.PATCH with decimal numbers (^\\d+\\.\\d+\\.\\d+$)"
)]
pub struct SemVerError {
    /// The rejected value.
    pub value: String,
}

impl SemVer {
    /// Builds a version from its three numbers.
    pub const fn new(major: u64, minor: u64, patch: u64) -> Self {
        Self { major, minor, patch }
    }

    /// True for the reserved wildcard `0.0.0`.
    pub const fn is_wildcard(&self) -> bool {
        self.major == 0 && self.minor == 0 && self.patch == 0
    }
}

/// True when `value` matches `^\d+\.\d+\.\d+$` and each number fits in 64 bits.
pub fn is_valid(value: &str) -> bool {
    value.parse::<SemVer>().is_ok()
}

impl FromStr for SemVer {
    type Err = SemVerError;

    fn from_str(value: &str) -> Result<Self, Self::Err> {
        orchestrator_rules::version::parse(value)
            .map(|(major, minor, patch)| SemVer { major, minor, patch })
            .ok_or_else(|| SemVerError { value: value.to_owned() })
    }
}

impl fmt::Display for SemVer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)
    }
}

impl serde::Serialize for SemVer {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for SemVer {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_orders() {
        let v: SemVer = "1.2.3".parse().unwrap();
        assert_eq!(v, SemVer::new(1, 2, 3));
        assert_eq!(v.to_string(), "1.2.3");
        assert!("1.10.0".parse::<SemVer>().unwrap() > "1.9.0".parse().unwrap());
        for bad in ["", "1", "1.2", "1.2.3.4", "v1.2.3", "1.2.x", "1..3", "-1.2.3", "1.2.3-beta", " 1.2.3"] {
            assert!(bad.parse::<SemVer>().is_err(), "{bad}");
        }
        assert!(WILDCARD.is_wildcard());
    }
}
