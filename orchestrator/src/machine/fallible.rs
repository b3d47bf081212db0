//! Fallible actions and guards: what they may return, and the error that fails the step.

use crate::contract::SystemErrorPayload;
use crate::emit::{BoxError, system_error_payload};
use crate::violation::Violation;

/// Why an action or guard failed: the user's error, kept as is.
///
/// A workflow whose action or guard fails gets the same `sys.<orchestrator>.error` event a
/// service handler failing with that error would emit: `errorName` is the
/// [`NamedError`](crate::emit::NamedError)'s name (else `"Error"`), `errorMessage` the error's
/// `Display`, `errorStack` its chain of sources (see
/// [`system_error_payload`](crate::emit::system_error_payload)). An error that is a
/// [`Violation`] (returned as is, or made with [`ActionError::violation`]) is a violation
/// instead: nothing is persisted and the event is returned to the deliverer.
///
/// ```
/// use orchestrator::emit::NamedError;
/// use orchestrator::machine::ActionError;
///
/// let error = ActionError::new(NamedError::new("OutOfStock", "no widget left"));
/// assert_eq!(error.payload().error_name, "OutOfStock");
/// assert_eq!(error.to_string(), "no widget left");
/// assert!(!error.is_violation());
/// assert!(ActionError::violation("the basket is not ours").is_violation());
/// ```
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct ActionError(BoxError);

impl ActionError {
    /// The error `error` (a boxed `ActionError` is unwrapped, not nested).
    pub fn new(error: impl Into<BoxError>) -> Self {
        let error: BoxError = error.into();
        match error.downcast::<ActionError>() {
            Ok(inner) => *inner,
            Err(error) => Self(error),
        }
    }

    /// Makes the step a [`Violation::Execution`] with `message`, instead of failing the workflow.
    pub fn violation(message: impl Into<String>) -> Self {
        Self(Box::new(Violation::execution(message)))
    }

    /// Whether the error is a [`Violation`].
    pub fn is_violation(&self) -> bool {
        self.0.is::<Violation>()
    }

    /// The system-error payload the workflow's failure carries.
    pub fn payload(&self) -> SystemErrorPayload {
        system_error_payload(&*self.0)
    }

    /// The user's error.
    pub fn into_inner(self) -> BoxError {
        self.0
    }

    /// The violation, or the error when it is none.
    pub(crate) fn into_violation(self) -> Result<Violation, Self> {
        self.0.downcast::<Violation>().map(|v| *v).map_err(Self)
    }
}

/// What an action may return: `()`, or `Result<(), E>` for any error `E` that converts into a
/// [`BoxError`] (an error type, a `String`, a [`Violation`], an [`ActionError`]).
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not what an action returns",
    label = "an action returns `()` or `Result<(), E>`",
    note = "an action is `fn(&mut Context, &Event, &mut Outbox<'_>)`, optionally returning `Result<(), E>` where `E: Into<BoxError>` (any error type)"
)]
pub trait IntoActionResult {
    /// The action's outcome.
    fn into_action_result(self) -> Result<(), ActionError>;
}

impl IntoActionResult for () {
    fn into_action_result(self) -> Result<(), ActionError> {
        Ok(())
    }
}

impl<E: Into<BoxError>> IntoActionResult for Result<(), E> {
    fn into_action_result(self) -> Result<(), ActionError> {
        self.map_err(ActionError::new)
    }
}

/// What a guard may return: `bool`, or `Result<bool, E>` for any error `E` that converts into a
/// [`BoxError`] (an error type, a `String`, a [`Violation`], an [`ActionError`]).
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not what a guard returns",
    label = "a guard returns `bool` or `Result<bool, E>`",
    note = "a guard is `fn(&Context, &Event) -> bool`, or `-> Result<bool, E>` where `E: Into<BoxError>` (any error type)"
)]
pub trait IntoGuardResult {
    /// Whether the guard holds.
    fn into_guard_result(self) -> Result<bool, ActionError>;
}

impl IntoGuardResult for bool {
    fn into_guard_result(self) -> Result<bool, ActionError> {
        Ok(self)
    }
}

impl<E: Into<BoxError>> IntoGuardResult for Result<bool, E> {
    fn into_guard_result(self) -> Result<bool, ActionError> {
        self.map_err(ActionError::new)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::emit::NamedError;

    #[test]
    fn the_payload_is_the_service_handlers() {
        let named =
            ActionError::new(NamedError::new("Bad", "bad input").with_source(std::io::Error::other("io")));
        let direct = system_error_payload(
            &NamedError::new("Bad", "bad input").with_source(std::io::Error::other("io")),
        );
        assert_eq!(named.payload(), direct);
        let plain = ActionError::new("plain text");
        assert_eq!(plain.payload().error_name, "Error");
        assert_eq!(plain.payload().error_message, "plain text");
    }

    #[test]
    fn a_boxed_action_error_is_not_nested() {
        let inner = ActionError::violation("no");
        let outer = ActionError::new(inner);
        assert!(outer.is_violation());
        assert!(matches!(outer.into_violation(), Ok(Violation::Execution { .. })));
    }

    #[test]
    fn results_convert() {
        assert!(().into_action_result().is_ok());
        assert!(Err::<(), _>("x").into_action_result().is_err());
        assert_eq!(true.into_guard_result().ok(), Some(true));
        assert!(Err::<bool, _>(Violation::config("c")).into_guard_result().is_err_and(|e| e.is_violation()));
    }
}
