//! The main example's order workflow with its services in separate processes over NATS
//! JetStream (the roles are in `orchestrator_examples::nats_order`).
//!
//! `cargo run --example nats_order` starts the three roles as child processes of its own (this
//! binary again), waits for the client, stops the others and deletes the deployment's streams.
//! Each role can run by hand instead, in a terminal of its own, with the same `--deployment`:
//!
//! ```sh
//! cargo run --example nats_order -- --role services     --deployment shop
//! cargo run --example nats_order -- --role orchestrator --deployment shop   # store: orchestrator-data/nats_order.sqlite
//! cargo run --example nats_order -- --role client       --deployment shop --orders 10
//! ```
//!
//! Options: `--role services|orchestrator|client|all` (default `all`), `--deployment NAME` (the
//! stream's name; default `ORDERS_<pid>`, one per run), `--store PATH` (the orchestrator's
//! SQLite file), `--orders N` (default 3), `--timeout SECONDS` (the client's, default 60). The
//! server's URL is `NATS_URL` (default `nats://127.0.0.1:4222`). SIGINT or SIGTERM stops a role
//! after the events in hand; the client exits with 1 if an order did not complete in time.

use std::path::PathBuf;
use std::process::{Child, Command, ExitCode};
use std::time::{Duration, Instant};

use orchestrator_examples::nats_order::{self, Error};

const USAGE: &str = "usage: nats_order [--role services|orchestrator|client|all] [--deployment NAME] \
                     [--store PATH] [--orders N] [--timeout SECONDS]";

/// The command line.
struct Args {
    role: String,
    deployment: String,
    store: PathBuf,
    orders: usize,
    timeout: Duration,
}

fn parse() -> Result<Args, Error> {
    let mut args = Args {
        role: "all".into(),
        deployment: format!("ORDERS_{}", std::process::id()),
        store: PathBuf::from("orchestrator-data/nats_order.sqlite"),
        orders: 3,
        timeout: Duration::from_secs(60),
    };
    let mut words = std::env::args().skip(1);
    while let Some(flag) = words.next() {
        let mut value = || words.next().ok_or_else(|| format!("{flag} needs a value\n{USAGE}"));
        match flag.as_str() {
            "--role" => args.role = value()?,
            "--deployment" => args.deployment = value()?,
            "--store" => args.store = value()?.into(),
            "--orders" => {
                args.orders = value()?.parse().map_err(|_| format!("--orders takes a number\n{USAGE}"))?
            }
            "--timeout" => {
                args.timeout = Duration::from_secs(
                    value()?.parse().map_err(|_| format!("--timeout takes seconds\n{USAGE}"))?,
                );
            }
            "-h" | "--help" => return Err(USAGE.into()),
            other => return Err(format!("unknown argument {other}\n{USAGE}").into()),
        }
    }
    if !matches!(args.role.as_str(), "services" | "orchestrator" | "client" | "all") {
        return Err(format!("unknown role {}\n{USAGE}", args.role).into());
    }
    Ok(args)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> ExitCode {
    match run().await {
        Ok(code) => code,
        Err(e) => {
            eprintln!("nats_order: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run() -> Result<ExitCode, Error> {
    let args = parse()?;
    // Before anything else, so that a signal never kills a role halfway.
    let stop = nats_order::stop_signal()?;
    let url = nats_order::nats_url();
    let transport = nats_order::connect(&url, &args.deployment).await?;
    let pid = std::process::id();
    match args.role.as_str() {
        "services" => {
            println!("[services] pid {pid}, NATS {url}");
            nats_order::services(transport, stopping("services", stop)).await?;
        }
        "orchestrator" => {
            println!("[orchestrator] pid {pid}, NATS {url}");
            nats_order::orchestrator(transport, &args.store, stopping("orchestrator", stop)).await?;
        }
        "client" => {
            println!("[client] pid {pid}, NATS {url}");
            let tag = pid.to_string();
            let report = tokio::select! {
                report = nats_order::client(transport, args.orders, args.timeout, &tag) => report?,
                () = stopping("client", stop) => return Ok(ExitCode::FAILURE),
            };
            if !report.missing.is_empty() {
                return Ok(ExitCode::FAILURE);
            }
        }
        _ => return all(&args, transport, stop).await,
    }
    Ok(ExitCode::SUCCESS)
}

/// Completes when `stop` does, saying so.
async fn stopping(role: &str, stop: impl std::future::Future<Output = &'static str>) {
    let signal = stop.await;
    println!("[{role}] {signal}: stopping after the events in hand");
}

/// `--role all`: the three roles as child processes, then the deployment's streams deleted.
async fn all(
    args: &Args,
    transport: orchestrator_nats::NatsTransport,
    stop: impl std::future::Future<Output = &'static str>,
) -> Result<ExitCode, Error> {
    println!(
        "[all] deployment {} on {}: services, orchestrator and client in three processes",
        args.deployment,
        nats_order::nats_url()
    );
    let exe = std::env::current_exe()?;
    let spawn = |role: &str, extra: &[String]| -> Result<Child, Error> {
        let child = Command::new(&exe)
            .args(["--role", role, "--deployment", &args.deployment])
            .args(extra)
            .spawn()
            .map_err(|e| format!("cannot start the {role} process: {e}"))?;
        Ok(child)
    };
    let mut children = Vec::new();
    let mut result = (|| -> Result<Child, Error> {
        children.push(("services", spawn("services", &[])?));
        children.push((
            "orchestrator",
            spawn("orchestrator", &["--store".into(), args.store.display().to_string()])?,
        ));
        spawn(
            "client",
            &[
                "--orders".into(),
                args.orders.to_string(),
                "--timeout".into(),
                args.timeout.as_secs().to_string(),
            ],
        )
    })();
    let code = match &mut result {
        Ok(client) => {
            tokio::pin!(stop);
            loop {
                if let Some(status) = client.try_wait()? {
                    break if status.success() { ExitCode::SUCCESS } else { ExitCode::FAILURE };
                }
                tokio::select! {
                    signal = &mut stop => {
                        println!("[all] {signal}: stopping every role");
                        terminate("client", client).await;
                        break ExitCode::FAILURE;
                    }
                    () = tokio::time::sleep(Duration::from_millis(50)) => {}
                }
            }
        }
        Err(e) => {
            eprintln!("nats_order: {e}");
            ExitCode::FAILURE
        }
    };
    for (role, child) in children.iter_mut().rev() {
        terminate(role, child).await;
    }
    match transport.delete_streams().await {
        Ok(()) => println!("[all] deleted the streams {0} and {0}_DEAD", args.deployment),
        Err(e) => eprintln!("[all] could not delete the streams of {}: {e}", args.deployment),
    }
    Ok(code)
}

/// Asks `child` to stop (SIGTERM), waits up to 30 s, then kills it.
async fn terminate(role: &str, child: &mut Child) {
    if let Ok(Some(_)) = child.try_wait() {
        return;
    }
    let asked = if cfg!(unix) {
        Command::new("kill").args(["-TERM", &child.id().to_string()]).status().is_ok_and(|s| s.success())
    } else {
        false
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    while asked && Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    println!("[all] killing the {role} process");
    let _ = child.kill();
    let _ = child.wait();
}
