//! Event descriptors: which event names a transition reacts to.
//!
//! * `foo.bar`: exactly that name (`foo` does not match `foo.bar`: SCXML's bare-prefix rule is
//!   not part of this format);
//! * `foo.*`: token prefix: `foo`, `foo.bar`, `foo.bar.baz`, but not `foobar`;
//! * `*`: every event.
//!
//! `done.state.<path>` names are built by [`done_event_name`].

use std::fmt;

use thiserror::Error;

/// Why a descriptor string was rejected.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("invalid event descriptor {descriptor:?}: {reason}")]
pub struct DescriptorError {
    /// The rejected text.
    pub descriptor: String,
    /// What is wrong with it.
    pub reason: &'static str,
}

/// A parsed event descriptor.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum EventDescriptor {
    /// `*`: matches every event.
    Any,
    /// `prefix.*`: matches `prefix` and every name whose dot-separated tokens start with it.
    Prefix(Box<str>),
    /// An exact event name.
    Exact(Box<str>),
}

impl EventDescriptor {
    /// Parses `*`, `foo.*` or an exact name. Empty tokens (`foo..bar`, `.foo`) and a `*` anywhere
    /// else (`foo*`, `foo.*.bar`) are rejected rather than silently never matching.
    pub fn parse(text: &str) -> Result<Self, DescriptorError> {
        let err = |reason| DescriptorError { descriptor: text.to_owned(), reason };
        if text == "*" {
            return Ok(Self::Any);
        }
        let (body, prefix) = match text.strip_suffix(".*") {
            Some(body) => (body, true),
            None => (text, false),
        };
        if body.is_empty() {
            return Err(err("empty event name"));
        }
        if body.contains('*') {
            return Err(err("'*' is only allowed alone or as a final '.*' token"));
        }
        if body.split('.').any(str::is_empty) {
            return Err(err("empty token between dots"));
        }
        if body.chars().any(char::is_whitespace) {
            return Err(err("whitespace in an event name"));
        }
        Ok(if prefix { Self::Prefix(body.into()) } else { Self::Exact(body.into()) })
    }

    /// Whether an event called `name` matches.
    #[inline]
    pub fn matches(&self, name: &str) -> bool {
        match self {
            Self::Any => true,
            Self::Exact(exact) => **exact == *name,
            Self::Prefix(prefix) => {
                name.len() >= prefix.len()
                    && name.as_bytes()[..prefix.len()] == *prefix.as_bytes()
                    && (name.len() == prefix.len() || name.as_bytes()[prefix.len()] == b'.')
            }
        }
    }
}

impl fmt::Display for EventDescriptor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Any => f.write_str("*"),
            Self::Prefix(p) => write!(f, "{p}.*"),
            Self::Exact(e) => f.write_str(e),
        }
    }
}

/// The name of the event raised when the state at `path` is done: `done.state.<path>`.
pub fn done_event_name(path: &str) -> String {
    format!("done.state.{path}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(s: &str) -> EventDescriptor {
        EventDescriptor::parse(s).unwrap()
    }

    #[test]
    fn exact_matches_only_itself() {
        assert!(d("foo").matches("foo"));
        assert!(!d("foo").matches("foo.bar"));
        assert!(!d("foo").matches("foobar"));
        assert!(!d("foo.bar").matches("foo"));
    }

    #[test]
    fn prefix_matches_tokens() {
        assert!(d("foo.*").matches("foo"));
        assert!(d("foo.*").matches("foo.bar"));
        assert!(d("foo.*").matches("foo.bar.baz"));
        assert!(!d("foo.*").matches("foobar"));
        assert!(!d("foo.*").matches("fo"));
        assert!(!d("foo.bar.*").matches("foo"));
        assert!(d("foo.bar.*").matches("foo.bar"));
        assert!(!d("foo.bar.*").matches("foo.barn"));
        assert!(d("done.state.*").matches(&done_event_name("p.a")));
    }

    #[test]
    fn any_matches_all() {
        assert!(d("*").matches("x"));
        assert!(d("*").matches("done.state.a"));
    }

    #[test]
    fn rejects_malformed() {
        for bad in ["", ".*", "foo*", "foo.*.bar", "a..b", ".a", "a.", "a b"] {
            assert!(EventDescriptor::parse(bad).is_err(), "{bad:?} accepted");
        }
        assert_eq!(d("a.b.*").to_string(), "a.b.*");
    }
}
