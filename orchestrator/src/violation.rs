//! Violations: faults returned to the caller (a broker retries, dead-letters or alerts on them),
//! as opposed to ordinary handler failures, which become `sys.<type>.error` events.
//!
//! Mirrors arvo-core's `ViolationError` family: [`Violation::Contract`], [`Violation::Config`],
//! [`Violation::Execution`] and [`Violation::Transaction`] with its [`TransactionCause`].
//!
//! ```
//! use orchestrator::violation::{TransactionCause, Violation};
//! let v = Violation::transaction(TransactionCause::LockUnacquired, "subject=abc: lock held by another worker");
//! assert_eq!(v.kind(), "Transaction");
//! assert_eq!(v.to_string(), "ViolationError<Transaction> [LOCK_UNACQUIRED] subject=abc: lock held by another worker");
//! ```

use std::fmt;

use serde_json::Value;

/// Why a memory transaction failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TransactionCause {
    /// The lock is held by someone else (acquisition was denied).
    LockUnacquired,
    /// Acquiring the lock failed with an error.
    LockFailure,
    /// Reading the workflow state failed.
    ReadFailure,
    /// Writing the workflow state failed (including a lost compare-and-swap).
    WriteFailure,
}

impl TransactionCause {
    /// Arvo's name for the cause.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::LockUnacquired => "LOCK_UNACQUIRED",
            Self::LockFailure => "LOCK_FAILURE",
            Self::ReadFailure => "READ_FAILURE",
            Self::WriteFailure => "WRITE_FAILURE",
        }
    }
}

impl fmt::Display for TransactionCause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A violation: an infrastructure, configuration or contract fault that is returned to the caller
/// and never turned into an event. Every message says what was wrong and where.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Violation {
    /// An event or payload does not satisfy its contract.
    #[error("ViolationError<Contract> {message}")]
    Contract {
        /// What was wrong and where.
        message: String,
        /// Structured details (for example the schema errors).
        metadata: Option<Value>,
    },
    /// The handler or orchestrator is configured wrongly for this event.
    #[error("ViolationError<Config> {message}")]
    Config {
        /// What was wrong and where.
        message: String,
        /// Structured details.
        metadata: Option<Value>,
    },
    /// The event cannot be executed (for example, its subject is not an orchestration subject).
    #[error("ViolationError<Execution> {message}")]
    Execution {
        /// What was wrong and where.
        message: String,
        /// Structured details.
        metadata: Option<Value>,
    },
    /// A memory operation failed.
    #[error("ViolationError<Transaction> [{cause}] {message}")]
    Transaction {
        /// Which memory operation failed.
        cause: TransactionCause,
        /// What was wrong and where.
        message: String,
        /// Structured details.
        metadata: Option<Value>,
    },
}

impl Violation {
    /// A contract violation.
    pub fn contract(message: impl Into<String>) -> Self {
        Self::Contract { message: message.into(), metadata: None }
    }
    /// A config violation.
    pub fn config(message: impl Into<String>) -> Self {
        Self::Config { message: message.into(), metadata: None }
    }
    /// An execution violation.
    pub fn execution(message: impl Into<String>) -> Self {
        Self::Execution { message: message.into(), metadata: None }
    }
    /// A transaction violation with its cause.
    pub fn transaction(cause: TransactionCause, message: impl Into<String>) -> Self {
        Self::Transaction { cause, message: message.into(), metadata: None }
    }

    /// Attaches structured details.
    #[must_use]
    pub fn with_metadata(mut self, value: Value) -> Self {
        match &mut self {
            Self::Contract { metadata, .. }
            | Self::Config { metadata, .. }
            | Self::Execution { metadata, .. }
            | Self::Transaction { metadata, .. } => *metadata = Some(value),
        }
        self
    }

    /// Arvo's violation type: `Contract`, `Config`, `Execution` or `Transaction`.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Contract { .. } => "Contract",
            Self::Config { .. } => "Config",
            Self::Execution { .. } => "Execution",
            Self::Transaction { .. } => "Transaction",
        }
    }

    /// Arvo's error name, `ViolationError<KIND>`.
    pub fn name(&self) -> String {
        format!("ViolationError<{}>", self.kind())
    }

    /// The message without the `ViolationError<…>` prefix.
    pub fn message(&self) -> &str {
        match self {
            Self::Contract { message, .. }
            | Self::Config { message, .. }
            | Self::Execution { message, .. }
            | Self::Transaction { message, .. } => message,
        }
    }

    /// The transaction cause, for transaction violations.
    pub fn transaction_cause(&self) -> Option<TransactionCause> {
        match self {
            Self::Transaction { cause, .. } => Some(*cause),
            _ => None,
        }
    }
}
