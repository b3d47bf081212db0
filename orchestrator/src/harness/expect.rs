//! What a step expects: events matched by type and by predicates ([`Expect`]), or a violation
//! ([`ExpectViolation`]).

use std::fmt;
use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::event::Event;
use crate::violation::Violation;

type CheckFn = Arc<dyn Fn(&Event) -> Result<(), String> + Send + Sync>;

/// One predicate of an [`Expect`], with the description the report shows when it fails.
#[derive(Clone)]
struct Check {
    description: String,
    check: CheckFn,
}

/// An expected event: its type, and predicates on its data and fields, all of which must hold
/// for an emitted event to match.
///
/// ```
/// use orchestrator::harness::Expect;
/// use serde_json::json;
///
/// let expect = Expect::event_type("evt.calc.add.success")
///     .field("sum", json!(3.0))
///     .data(|data| data["sum"].as_f64().is_some_and(|s| s > 0.0));
/// assert_eq!(expect.to_string(), "`evt.calc.add.success` where data.sum == 3.0, data predicate #2");
/// ```
#[derive(Clone)]
pub struct Expect {
    event_type: String,
    checks: Vec<Check>,
}

impl Expect {
    /// An event of type `event_type`.
    pub fn event_type(event_type: impl Into<String>) -> Self {
        Self { event_type: event_type.into(), checks: Vec::new() }
    }

    /// The expected event type.
    pub fn expected_type(&self) -> &str {
        &self.event_type
    }

    fn push(mut self, description: String, check: CheckFn) -> Self {
        self.checks.push(Check { description, check });
        self
    }

    /// The data's `key` (a top-level key, or a JSON pointer such as `/items/0/price`) equals
    /// `value`.
    #[must_use]
    pub fn field(self, key: impl Into<String>, value: Value) -> Self {
        let key = key.into();
        let pointer = if key.starts_with('/') { key.clone() } else { format!("/{key}") };
        let shown = key.trim_start_matches('/').replace('/', ".");
        let description = format!("data.{shown} == {value}");
        self.push(
            description,
            Arc::new(move |event| match event.data_value().pointer(&pointer) {
                Some(actual) if *actual == value => Ok(()),
                Some(actual) => Err(format!("data.{shown}: expected {value}, got {actual}")),
                None => Err(format!("data.{shown}: expected {value}, but it is absent")),
            }),
        )
    }

    /// `predicate` holds for the event's data (a JSON object).
    #[must_use]
    pub fn data(self, predicate: impl Fn(&Value) -> bool + Send + Sync + 'static) -> Self {
        let description = format!("data predicate #{}", self.checks.len() + 1);
        let shown = description.clone();
        self.push(
            description,
            Arc::new(move |event| {
                if predicate(event.data_value()) {
                    Ok(())
                } else {
                    Err(format!("{shown} is false for data {}", event.data_value()))
                }
            }),
        )
    }

    /// The data deserializes as `P` and `predicate` holds for it.
    #[must_use]
    pub fn payload<P: DeserializeOwned>(
        self,
        predicate: impl Fn(&P) -> bool + Send + Sync + 'static,
    ) -> Self {
        let description = format!("payload predicate #{}", self.checks.len() + 1);
        let shown = description.clone();
        self.push(
            description,
            Arc::new(move |event| match serde_json::from_value::<P>(event.data_value().clone()) {
                Ok(payload) if predicate(&payload) => Ok(()),
                Ok(_) => Err(format!("{shown} is false for data {}", event.data_value())),
                Err(e) => Err(format!("{shown}: the data is not a {}: {e}", std::any::type_name::<P>())),
            }),
        )
    }

    /// `predicate` holds for the whole event (any field), described in the report as
    /// `description`.
    #[must_use]
    pub fn check(
        self,
        description: impl Into<String>,
        predicate: impl Fn(&Event) -> bool + Send + Sync + 'static,
    ) -> Self {
        let description = description.into();
        let shown = description.clone();
        self.push(
            description,
            Arc::new(move |event| if predicate(event) { Ok(()) } else { Err(format!("`{shown}` is false")) }),
        )
    }

    /// The event is addressed to `to`.
    #[must_use]
    pub fn to(self, to: impl Into<String>) -> Self {
        let to = to.into();
        let description = format!("to == {to:?}");
        self.push(
            description,
            Arc::new(move |event| match event.to() {
                Some(actual) if actual == to => Ok(()),
                actual => Err(format!("to: expected {to:?}, got {actual:?}")),
            }),
        )
    }

    /// Whether `event` has the expected type (not whether its predicates hold).
    pub(crate) fn type_matches(&self, event: &Event) -> bool {
        event.r#type() == self.event_type
    }

    /// The predicates `event` fails (empty: it matches). Assumes the type matches.
    pub(crate) fn mismatches(&self, event: &Event) -> Vec<String> {
        self.checks.iter().filter_map(|c| (c.check)(event).err()).collect()
    }
}

impl fmt::Display for Expect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "`{}`", self.event_type)?;
        for (i, check) in self.checks.iter().enumerate() {
            f.write_str(if i == 0 { " where " } else { ", " })?;
            f.write_str(&check.description)?;
        }
        Ok(())
    }
}

impl fmt::Debug for Expect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Expect({self})")
    }
}

/// An expected violation: any, or one of a kind (`Contract`, `Config`, `Execution`,
/// `Transaction`) and/or whose message contains a text.
#[derive(Debug, Clone, Default)]
pub struct ExpectViolation {
    kind: Option<String>,
    contains: Option<String>,
}

impl ExpectViolation {
    /// Any violation.
    pub fn any() -> Self {
        Self::default()
    }

    /// A violation of kind `kind` ([`Violation::kind`]: `Contract`, `Config`, `Execution` or
    /// `Transaction`).
    pub fn kind(kind: impl Into<String>) -> Self {
        Self { kind: Some(kind.into()), contains: None }
    }

    /// Whose message contains `text`.
    #[must_use]
    pub fn message_contains(mut self, text: impl Into<String>) -> Self {
        self.contains = Some(text.into());
        self
    }

    /// What differs between this expectation and `violation` (`None`: it matches).
    pub(crate) fn mismatch(&self, violation: &Violation) -> Option<String> {
        let mut problems = Vec::new();
        if let Some(kind) = &self.kind
            && violation.kind() != kind
        {
            problems.push(format!("kind: expected {kind}, got {}", violation.kind()));
        }
        if let Some(text) = &self.contains
            && !violation.message().contains(text.as_str())
        {
            problems.push(format!("message does not contain {text:?}"));
        }
        (!problems.is_empty()).then(|| problems.join("; "))
    }
}

impl fmt::Display for ExpectViolation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            Some(kind) => write!(f, "a ViolationError<{kind}>")?,
            None => f.write_str("a violation")?,
        }
        if let Some(text) = &self.contains {
            write!(f, " whose message contains {text:?}")?;
        }
        Ok(())
    }
}
