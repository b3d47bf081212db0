//! System-error payloads: `sys.<type>.error` events carry `{errorName, errorMessage, errorStack}`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The payload of a `sys.<type>.error` event (arvo-core's `createArvoError` shape).
///
/// ```
/// use orchestrator::contract::SystemErrorPayload;
/// let io = std::io::Error::new(std::io::ErrorKind::Other, "disk full");
/// let payload = SystemErrorPayload::from_error(&io);
/// assert_eq!(payload.error_message, "disk full");
/// assert_eq!(
///     serde_json::to_string(&payload).unwrap(),
///     r#"{"errorName":"std::io::error::Error","errorMessage":"disk full","errorStack":null}"#
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SystemErrorPayload {
    /// The error's name (its type).
    pub error_name: String,
    /// The error's message.
    pub error_message: String,
    /// The chain of causes, one per line, or null.
    pub error_stack: Option<String>,
}

impl SystemErrorPayload {
    /// A payload with a name and message and no stack.
    pub fn new(name: impl Into<String>, message: impl Into<String>) -> Self {
        Self { error_name: name.into(), error_message: message.into(), error_stack: None }
    }

    /// Whether the event reports a cancellation ([`crate::orchestration::cancel`]: its
    /// `errorName` is [`CANCELLED_ERROR_NAME`](crate::orchestration::cancel::CANCELLED_ERROR_NAME))
    /// rather than a failure.
    ///
    /// ```
    /// use orchestrator::contract::SystemErrorPayload;
    /// assert!(SystemErrorPayload::new("WorkflowCancelled", "withdrawn").is_cancellation());
    /// assert!(!SystemErrorPayload::new("Error", "it broke").is_cancellation());
    /// ```
    pub fn is_cancellation(&self) -> bool {
        self.error_name == crate::orchestration::cancel::CANCELLED_ERROR_NAME
    }

    /// Describes a Rust error: its type name, its message, and its chain of sources as the stack.
    pub fn from_error<E: std::error::Error + ?Sized>(error: &E) -> Self {
        let mut stack = Vec::new();
        let mut source = error.source();
        while let Some(cause) = source {
            stack.push(format!("caused by: {cause}"));
            source = cause.source();
        }
        Self {
            error_name: std::any::type_name::<E>().to_owned(),
            error_message: error.to_string(),
            error_stack: (!stack.is_empty()).then(|| stack.join("\n")),
        }
    }
}

/// As arvo-core: all three keys are required, `errorStack` may be null.
impl JsonSchema for SystemErrorPayload {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "ArvoErrorSchema".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "The error payload of a system error event",
            "type": "object",
            "properties": {
                "errorName": { "type": "string", "description": "The name of the error." },
                "errorMessage": { "type": "string", "description": "A descriptive message for the error." },
                "errorStack": { "type": ["string", "null"], "description": "The stack trace of the error." },
            },
            "required": ["errorName", "errorMessage", "errorStack"],
        })
    }
}

/// `sys.<type>.error`, the system-error event type of a contract whose accepted type is `type`.
pub fn system_error_type(accepts_type: &str) -> String {
    format!("sys.{accepts_type}.error")
}
