//! Completion options: what a workflow's output may set on its completion event.

use serde_json::Number;

use crate::domain::Domain;

/// A workflow's completion payload with what its completion event sets instead of the
/// orchestrator's defaults: the event id, the execution units and the domains.
///
/// A machine's `output` (and a resumable's [`ResumableOutput::complete`](crate::orchestration::resumable::ResumableOutput::complete))
/// returns either the payload itself or a `Completion` of it ([`IntoCompletion`]).
///
/// ```
/// use orchestrator::domain::Domain;
/// use orchestrator::machine::Completion;
/// let done = Completion::new("total: 3")
///     .id("order-42-done")
///     .execution_units(2.5)
///     .domains([Domain::named("audit")?, Domain::OrchestrationContext]);
/// assert_eq!(done.options().id.as_deref(), Some("order-42-done"));
/// assert_eq!(done.payload(), &"total: 3");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Completion<P> {
    payload: P,
    options: CompletionOptions,
}

/// What a completion event sets instead of the orchestrator's defaults (see [`Completion`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CompletionOptions {
    /// The event id (a deduplication key): every domain copy gets it. Default: a new UUID per
    /// copy. An empty id fails the step ([`InvalidCompletion::EmptyId`]).
    pub id: Option<String>,
    /// Execution units. Default: the orchestrator's.
    pub executionunits: Option<Number>,
    /// The domains to emit in: one copy per unique resolved domain (a domain given twice, or two
    /// resolving to the same one, gives one copy). Default: the orchestrator's completion
    /// domains. An empty list fails the step ([`InvalidCompletion::NoDomain`]): the completion
    /// would be lost.
    pub domains: Option<Vec<Domain>>,
}

impl CompletionOptions {
    /// Checks the options: a non-empty id, at least one domain when domains are given.
    pub fn validate(&self) -> Result<(), InvalidCompletion> {
        if self.id.as_deref().is_some_and(str::is_empty) {
            return Err(InvalidCompletion::EmptyId);
        }
        if self.domains.as_ref().is_some_and(Vec::is_empty) {
            return Err(InvalidCompletion::NoDomain);
        }
        Ok(())
    }
}

/// Completion options that cannot be applied: the step fails (the workflow gets a system error
/// with this message), nothing is emitted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvalidCompletion {
    /// [`Completion::id`] was given an empty id.
    #[error("the completion event id is empty")]
    EmptyId,
    /// [`Completion::domains`] was given no domain.
    #[error("the completion has an empty list of domains: it would not be emitted")]
    NoDomain,
}

impl<P> Completion<P> {
    /// `payload` with the orchestrator's defaults.
    pub fn new(payload: P) -> Self {
        Self { payload, options: CompletionOptions::default() }
    }

    /// Sets the completion event's id (every domain copy gets it).
    #[must_use]
    pub fn id(mut self, id: impl Into<String>) -> Self {
        self.options.id = Some(id.into());
        self
    }

    /// Sets the execution units (a non-finite number is ignored, as in
    /// [`RequestOptions::executionunits`](super::RequestOptions::executionunits)).
    #[must_use]
    pub fn execution_units(mut self, units: f64) -> Self {
        self.options.executionunits = Number::from_f64(units);
        self
    }

    /// Sets the domains (one event per unique resolved domain).
    #[must_use]
    pub fn domains(mut self, domains: impl IntoIterator<Item = Domain>) -> Self {
        self.options.domains = Some(domains.into_iter().collect());
        self
    }

    /// The payload.
    pub fn payload(&self) -> &P {
        &self.payload
    }

    /// The options.
    pub fn options(&self) -> &CompletionOptions {
        &self.options
    }

    /// The payload and the options.
    pub fn into_parts(self) -> (P, CompletionOptions) {
        (self.payload, self.options)
    }
}

impl<P> From<P> for Completion<P> {
    fn from(payload: P) -> Self {
        Self::new(payload)
    }
}

/// What a machine's `output` (or a resumable's completion) may return: the completion payload
/// `P`, or a [`Completion<P>`].
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a completion of `{P}`",
    label = "expected `{P}` or `Completion<{P}>`",
    note = "`output` returns the self contract's completion payload, or `orchestrator::machine::Completion::new(payload)` with options"
)]
pub trait IntoCompletion<P> {
    /// The completion.
    fn into_completion(self) -> Completion<P>;
}

impl<P> IntoCompletion<P> for P {
    fn into_completion(self) -> Completion<P> {
        Completion::new(self)
    }
}

impl<P> IntoCompletion<P> for Completion<P> {
    fn into_completion(self) -> Completion<P> {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_are_checked() {
        assert_eq!(Completion::new(1).options().validate(), Ok(()));
        assert_eq!(Completion::new(1).id("").options().validate(), Err(InvalidCompletion::EmptyId));
        assert_eq!(Completion::new(1).domains([]).options().validate(), Err(InvalidCompletion::NoDomain));
        assert_eq!(Completion::new(1).execution_units(f64::NAN).options().executionunits, None);
    }

    #[test]
    fn a_payload_and_a_completion_both_convert() {
        assert_eq!(IntoCompletion::<u32>::into_completion(5_u32), Completion::new(5_u32));
        let completion = IntoCompletion::<u32>::into_completion(Completion::new(5_u32).id("x"));
        assert_eq!(completion.options().id.as_deref(), Some("x"));
    }
}
