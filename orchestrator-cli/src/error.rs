//! [`CliError`]: why a command failed, and which exit code that maps to.

use std::io;

use orchestrator::subject::SubjectError;

/// Exit code for input that is invalid (a malformed event, subject or payload).
pub(crate) const EXIT_INVALID: u8 = 1;
/// Exit code for a command used wrongly (clap uses the same code for its own usage errors).
pub(crate) const EXIT_USAGE: u8 = 2;

/// Why a command failed. `main` prints it to stderr after `error: ` and exits with
/// [`CliError::exit_code`].
#[derive(Debug, thiserror::Error)]
pub(crate) enum CliError {
    /// The command was used wrongly: an unknown contract or version, for example.
    #[error("{0}")]
    Usage(String),
    /// The input breaks one or more rules; every broken rule is listed, one per line.
    #[error("{what} breaks {} rule(s):\n{}", .rules.len(), bullet_list(.rules))]
    Invalid {
        /// What was checked (`event`, …).
        what: String,
        /// The broken rules, in words; never empty.
        rules: Vec<String>,
    },
    /// The input could not be read as what it should be (not JSON, too large, not a subject, …).
    #[error("{0}")]
    Input(String),
    /// An orchestration subject given on the command line is invalid, or the subject to create
    /// would be.
    #[error(transparent)]
    Subject(#[from] SubjectError),
    /// Reading the input or writing the output failed.
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The underlying error.
        source: io::Error,
    },
}

impl CliError {
    /// The process exit code for this error: [`EXIT_USAGE`] for usage errors, else
    /// [`EXIT_INVALID`].
    pub(crate) fn exit_code(&self) -> u8 {
        match self {
            Self::Usage(_) => EXIT_USAGE,
            Self::Invalid { .. } | Self::Input(_) | Self::Subject(_) | Self::Io { .. } => EXIT_INVALID,
        }
    }

    /// True when the error is a write to a closed pipe (`orchestrator … | head`), which is not
    /// worth reporting.
    pub(crate) fn is_broken_pipe(&self) -> bool {
        matches!(self, Self::Io { source, .. } if source.kind() == io::ErrorKind::BrokenPipe)
    }

    /// An I/O error while writing the command's output.
    pub(crate) fn output(source: io::Error) -> Self {
        Self::Io { context: "cannot write the output".to_owned(), source }
    }
}

/// `  - rule` lines, one per rule.
fn bullet_list(rules: &[String]) -> String {
    rules.iter().map(|rule| format!("  - {rule}")).collect::<Vec<_>>().join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invalid_lists_every_rule_on_its_own_line() {
        let err = CliError::Invalid { what: "event".into(), rules: vec!["a".into(), "b".into()] };
        assert_eq!(err.to_string(), "event breaks 2 rule(s):\n  - a\n  - b");
        assert_eq!(err.exit_code(), EXIT_INVALID);
    }

    #[test]
    fn usage_errors_exit_with_2() {
        assert_eq!(CliError::Usage("x".into()).exit_code(), EXIT_USAGE);
    }

    #[test]
    fn broken_pipes_are_recognised() {
        assert!(CliError::output(io::Error::from(io::ErrorKind::BrokenPipe)).is_broken_pipe());
        assert!(!CliError::output(io::Error::from(io::ErrorKind::Other)).is_broken_pipe());
    }
}
