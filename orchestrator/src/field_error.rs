//! [`FieldError`]: one broken rule, naming the field, the rule and the offending value.

use std::borrow::Cow;
use std::fmt;

/// Longest rendering of an offending value kept in an error message.
const MAX_VALUE_CHARS: usize = 120;

/// One rule broken by one field: what is wrong and where.
///
/// ```
/// use orchestrator::FieldError;
/// let e = FieldError::new("type", "must be a reverse-DNS name", Some("com.app"));
/// assert_eq!(e.to_string(), "`type` must be a reverse-DNS name (got \"com.app\")");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError {
    /// Path of the field, such as `type`, `execution.initiator` or `extensions.myext`.
    pub field: Cow<'static, str>,
    /// The rule that was broken, in words.
    pub rule: Cow<'static, str>,
    /// The offending value, rendered as JSON and shortened, when there is one.
    pub value: Option<String>,
}

impl FieldError {
    /// A broken rule on `field`, with the offending value (shortened to keep messages readable).
    pub fn new(
        field: impl Into<Cow<'static, str>>,
        rule: impl Into<Cow<'static, str>>,
        value: Option<&str>,
    ) -> Self {
        Self { field: field.into(), rule: rule.into(), value: value.map(render_str) }
    }

    /// A broken rule whose offending value is an arbitrary JSON value.
    pub fn with_json(
        field: impl Into<Cow<'static, str>>,
        rule: impl Into<Cow<'static, str>>,
        value: &serde_json::Value,
    ) -> Self {
        Self { field: field.into(), rule: rule.into(), value: Some(shorten(value.to_string())) }
    }
}

fn render_str(value: &str) -> String {
    shorten(serde_json::Value::String(value.to_owned()).to_string())
}

fn shorten(mut text: String) -> String {
    if text.chars().count() > MAX_VALUE_CHARS {
        let cut = text.char_indices().nth(MAX_VALUE_CHARS).map_or(text.len(), |(i, _)| i);
        text.truncate(cut);
        text.push('…');
    }
    text
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "`{}` {}", self.field, self.rule)?;
        if let Some(value) = &self.value {
            write!(f, " (got {value})")?;
        }
        Ok(())
    }
}

/// Every rule an input broke, in field order. Display lists them all, one per line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{what} breaks {} rule(s):\n{}", .errors.len(), list(.errors))]
pub struct FieldErrors {
    /// What was validated (`event`, `orchestration subject`, …).
    pub what: Cow<'static, str>,
    /// The broken rules; never empty.
    pub errors: Vec<FieldError>,
}

fn list(errors: &[FieldError]) -> String {
    errors.iter().map(|e| format!("  - {e}")).collect::<Vec<_>>().join("\n")
}

impl FieldErrors {
    /// `Ok(())` when `errors` is empty, else the error listing them.
    pub fn check(what: impl Into<Cow<'static, str>>, errors: Vec<FieldError>) -> Result<(), Self> {
        if errors.is_empty() { Ok(()) } else { Err(Self { what: what.into(), errors }) }
    }

    /// True when some broken rule concerns `field`.
    pub fn has_field(&self, field: &str) -> bool {
        self.errors.iter().any(|e| e.field == field)
    }
}
