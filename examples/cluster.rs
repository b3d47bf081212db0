//! The main example's order workflow on one PostgreSQL database shared by several processes
//! (the logic is in `orchestrator_examples::cluster`).
//!
//! ```sh
//! # one or more workers, each in a terminal of its own (or on another machine), until SIGTERM/Ctrl-C:
//! cargo run --release --example cluster -- worker --database-url postgres://postgres@127.0.0.1:5432/test --name w1
//! cargo run --release --example cluster -- worker --database-url postgres://postgres@127.0.0.1:5432/test --name w2
//! # then start workflows and wait for them (a progress bar, then a summary):
//! cargo run --release --example cluster -- start --database-url postgres://postgres@127.0.0.1:5432/test --workflows 10000
//! ```
//!
//! `worker` options: `--name NAME` (the worker's node id; restart a dead worker under its name
//! and what it held is freed at once; default `worker-<pid>`), `--order-workers N`,
//! `--inventory-workers N`, `--payment-workers N`, `--shipping-workers N` (pool sizes, default
//! 32, 8, 8, 8), `--connections N` (default 8), `--committers N` (default 1), `--visibility SECS`
//! (how long a claim lasts, default 30), `--status-every SECS` (default 1; 0: no status line).
//!
//! `start` options: `--workflows N` (default 100), `--rate N` (workflows started per second,
//! default as fast as possible), `--in-flight N` (at most N workflows running at once, the next
//! starting when one completes; default no limit), `--timeout SECS` (default 300), `--tag TAG` (names the run),
//! `--no-progress`. It exits with 1 when a workflow failed or is missing.
//!
//! Both take `--database-url URL` (default: `DATABASE_URL`) and `--schema NAME` (default
//! `cluster`).

use std::process::ExitCode;
use std::time::Duration;

use orchestrator_examples::cluster::{self, StartOptions, WorkerOptions};
use orchestrator_examples::nats_order::stop_signal;

const USAGE: &str = "usage: cluster worker [--database-url URL] [--schema NAME] [--name NAME] \
                     [--order-workers N] [--inventory-workers N] [--payment-workers N] [--shipping-workers N] \
                     [--connections N] [--committers N] [--visibility SECS] [--status-every SECS]\n       \
                     cluster start [--database-url URL] [--schema NAME] [--workflows N] [--rate N] \
                     [--in-flight N] [--timeout SECS] [--tag TAG] [--no-progress]";

/// A command line.
enum Command {
    Worker(WorkerOptions),
    Start(StartOptions),
}

fn number<T: std::str::FromStr>(flag: &str, value: Option<String>) -> Result<T, String> {
    let value = value.ok_or_else(|| format!("{flag} needs a value\n{USAGE}"))?;
    value.parse().map_err(|_| format!("{flag} takes a number, not {value:?}\n{USAGE}"))
}

fn seconds(flag: &str, value: Option<String>) -> Result<Duration, String> {
    let secs: f64 = number(flag, value)?;
    Duration::try_from_secs_f64(secs).map_err(|_| format!("{flag} takes seconds, not {secs}\n{USAGE}"))
}

fn parse(args: Vec<String>) -> Result<Command, String> {
    let mut words = args.into_iter();
    let command = words.next().ok_or_else(|| USAGE.to_owned())?;
    let url = std::env::var("DATABASE_URL").unwrap_or_default();
    let mut worker = WorkerOptions::new(url.clone());
    let mut start = StartOptions::new(url, 100);
    while let Some(flag) = words.next() {
        let mut value = || words.next();
        match (command.as_str(), flag.as_str()) {
            (_, "--database-url") => {
                let url = value().ok_or_else(|| format!("--database-url needs a value\n{USAGE}"))?;
                worker.database_url.clone_from(&url);
                start.database_url = url;
            }
            (_, "--schema") => {
                let schema = value().ok_or_else(|| format!("--schema needs a value\n{USAGE}"))?;
                worker.schema.clone_from(&schema);
                start.schema = schema;
            }
            ("worker", "--name") => {
                worker.name = value().ok_or_else(|| format!("--name needs a value\n{USAGE}"))?
            }
            ("worker", "--order-workers") => worker.pools.orders = number(&flag, value())?,
            ("worker", "--inventory-workers") => worker.pools.inventory = number(&flag, value())?,
            ("worker", "--payment-workers") => worker.pools.payment = number(&flag, value())?,
            ("worker", "--shipping-workers") => worker.pools.shipping = number(&flag, value())?,
            ("worker", "--connections") => worker.connections = number(&flag, value())?,
            ("worker", "--committers") => worker.committers = number(&flag, value())?,
            ("worker", "--visibility") => worker.visibility = seconds(&flag, value())?,
            ("worker", "--status-every") => {
                let every = seconds(&flag, value())?;
                worker.status_every = (!every.is_zero()).then_some(every);
            }
            ("start", "--workflows") => start.workflows = number(&flag, value())?,
            ("start", "--rate") => start.rate = Some(number(&flag, value())?),
            ("start", "--in-flight") => start.in_flight = Some(number(&flag, value())?),
            ("start", "--timeout") => start.timeout = seconds(&flag, value())?,
            ("start", "--tag") => {
                start.tag = value().ok_or_else(|| format!("--tag needs a value\n{USAGE}"))?
            }
            ("start", "--no-progress") => start.progress = false,
            (_, "-h" | "--help") => return Err(USAGE.to_owned()),
            (_, other) => return Err(format!("unknown argument {other} for {command}\n{USAGE}")),
        }
    }
    if worker.database_url.is_empty() {
        return Err(format!("no database: pass --database-url or set DATABASE_URL\n{USAGE}"));
    }
    match command.as_str() {
        "worker" => Ok(Command::Worker(worker)),
        "start" => Ok(Command::Start(start)),
        "-h" | "--help" => Err(USAGE.to_owned()),
        other => Err(format!("unknown command {other}\n{USAGE}")),
    }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> ExitCode {
    let command = match parse(std::env::args().skip(1).collect()) {
        Ok(command) => command,
        Err(message) => {
            eprintln!("{message}");
            return ExitCode::from(2);
        }
    };
    // Before anything else, so that a signal never kills the process halfway.
    let stop = match stop_signal() {
        Ok(stop) => stop,
        Err(e) => {
            eprintln!("cluster: cannot handle signals: {e}");
            return ExitCode::FAILURE;
        }
    };
    match command {
        Command::Worker(options) => match cluster::worker(options, stop).await {
            Ok(_) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("cluster worker: {e}");
                ExitCode::FAILURE
            }
        },
        Command::Start(options) => match cluster::start(options, stop).await {
            Ok(report) if report.failed() == 0 && report.missing() == 0 => ExitCode::SUCCESS,
            Ok(_) => ExitCode::FAILURE,
            Err(e) => {
                eprintln!("cluster start: {e}");
                ExitCode::FAILURE
            }
        },
    }
}
