//! The `orchestrator` command-line tool (see the [`orchestrator_cli`] library, whose [`Tool`]
//! a program can extend with its own machines and contracts).
//!
//! [`Tool`]: orchestrator_cli::Tool

use std::process::ExitCode;

fn main() -> ExitCode {
    orchestrator_cli::Tool::new().main()
}
