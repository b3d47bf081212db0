//! [`Tool`]: the `orchestrator` command, with what a user's own program teaches it.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io::{self, Read, Write};
use std::process::ExitCode;
use std::sync::Arc;

use clap::Parser;
use orchestrator::contract::{ArvoContract, ContractVersion};
use orchestrator::machine::Machine;
use orchestrator::memory::InMemory;
use orchestrator::orchestration::{Orchestrator, OrchestratorBuilder, WorkflowRecord};

use crate::cli::{Cli, run};
use crate::error::CliError;

/// The builder of the orchestrators `replay` re-runs, over an in-memory store.
type Replayer = OrchestratorBuilder<Arc<InMemory<WorkflowRecord>>>;

/// Adds one machine to a [`Replayer`].
type AddMachine = Box<dyn Fn(Replayer) -> Replayer + Send + Sync>;

/// The `orchestrator` command as a library: the plain binary is `Tool::new().main()`; a user's
/// own binary registers its machines and contracts first, so that `replay` re-runs its
/// workflows' machines and `contract` and `event validate --contract` know its contracts
/// without a store.
///
/// Without registration the tool still reads what a node recorded in a store's catalog
/// (`contract list STORE`, `contract schema STORE TYPE`, `chart export STORE --workflow NAME`).
///
/// ```no_run
/// use std::process::ExitCode;
/// use orchestrator::contract::ArvoContract;
///
/// /// The program's contracts (declared with `simple_contract!` or `orchestrator_contract!`).
/// fn my_contracts() -> Vec<&'static ArvoContract> {
///     Vec::new()
/// }
///
/// fn main() -> ExitCode {
///     orchestrator_cli::Tool::new()
///         .contracts(my_contracts())
///         // .machine::<my_app::OrderFlow>()
///         .main()
/// }
/// ```
#[derive(Default)]
pub struct Tool {
    contracts: Vec<&'static ArvoContract>,
    machines: BTreeMap<String, Vec<AddMachine>>,
}

impl std::fmt::Debug for Tool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tool")
            .field("contracts", &self.contracts.iter().map(|c| c.r#type()).collect::<Vec<_>>())
            .field("orchestrators", &self.machines.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl Tool {
    /// The tool knowing no machine and no contract of its own.
    pub fn new() -> Self {
        Self::default()
    }

    /// Teaches the tool a contract (every version of it).
    #[must_use]
    pub fn contract(mut self, contract: &'static ArvoContract) -> Self {
        if !self.contracts.iter().any(|c| std::ptr::eq(*c, contract)) {
            self.contracts.push(contract);
        }
        self
    }

    /// Teaches the tool several contracts.
    #[must_use]
    pub fn contracts(self, contracts: impl IntoIterator<Item = &'static ArvoContract>) -> Self {
        contracts.into_iter().fold(self, Self::contract)
    }

    /// Teaches the tool a `machine!`: `replay` re-runs it on the workflows of its orchestrator
    /// (several versions of one orchestrator are registered one machine each).
    #[must_use]
    pub fn machine<M: Machine>(mut self) -> Self {
        let name = <M::Contract as ContractVersion>::versioned().accepts().event_type().to_owned();
        self.machines.entry(name).or_default().push(Box::new(|builder: Replayer| builder.machine::<M>()));
        self
    }

    /// The contracts the tool was taught.
    pub(crate) fn known_contracts(&self) -> &[&'static ArvoContract] {
        &self.contracts
    }

    /// The orchestrator named `name` (its contract's accepted type) over an empty in-memory
    /// store, when the tool was taught its machines.
    pub(crate) fn orchestrator(
        &self,
        name: &str,
    ) -> Option<Result<Orchestrator<Arc<InMemory<WorkflowRecord>>>, CliError>> {
        let machines = self.machines.get(name)?;
        let builder =
            machines.iter().fold(Orchestrator::builder(Arc::new(InMemory::default())), |b, add| add(b));
        Some(builder.build().map_err(|e| CliError::Input(format!("cannot build orchestrator {name}: {e}"))))
    }

    /// The names of the orchestrators the tool can re-run.
    pub(crate) fn orchestrator_names(&self) -> impl Iterator<Item = &str> {
        self.machines.keys().map(String::as_str)
    }

    /// Runs the command line of this process and returns its exit status: 0 on success, 1 for
    /// invalid input, 2 for usage errors (clap prints help and usage errors itself).
    pub fn main(&self) -> ExitCode {
        let cli = Cli::parse();
        let result = run(self, &cli, &mut io::stdin().lock(), &mut io::stdout().lock());
        match result {
            Ok(()) => ExitCode::SUCCESS,
            // The reader went away (`orchestrator … | head`): nothing left to say.
            Err(err) if err.is_broken_pipe() => ExitCode::SUCCESS,
            Err(err) => {
                eprintln!("error: {err}");
                ExitCode::from(err.exit_code())
            }
        }
    }

    /// Runs the command line `args` (the program's name first) with `stdin` and `out`, and
    /// returns the exit status and what would go to standard error (for tests and embedding).
    pub fn run_args<I, S>(&self, args: I, stdin: &mut dyn Read, out: &mut dyn Write) -> (u8, String)
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString> + Clone,
    {
        let cli = match Cli::try_parse_from(args) {
            Ok(cli) => cli,
            Err(e) => {
                let code = u8::try_from(e.exit_code()).unwrap_or(2);
                let text = e.render().to_string();
                if code == 0 {
                    let _ = out.write_all(text.as_bytes());
                    return (0, String::new());
                }
                return (code, text);
            }
        };
        match run(self, &cli, stdin, out) {
            Ok(()) => (0, String::new()),
            Err(err) if err.is_broken_pipe() => (0, String::new()),
            Err(err) => (err.exit_code(), format!("error: {err}\n")),
        }
    }
}
