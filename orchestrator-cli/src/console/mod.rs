//! `orchestrator serve STORE`: a local, read-only web console over a store's workflows.
//!
//! - `GET /`: the workflows, newest first, with filters (status, orchestrator, meta, since),
//!   counts per status and pages (`limit`, 50 by default); the counts and the table refresh
//!   every 2 s;
//! - `GET /workflows/{id}`: a workflow (its full id or a short id): summary, statechart with
//!   the active states highlighted, pending timers, parent and children, dead letters, and its
//!   timeline; refreshed while it changes;
//! - `GET /api/workflows` and `GET /api/workflows/{id}`: the same as JSON;
//! - `GET /assets/console.css|console.js`: the console's only assets, inside the binary.
//!
//! Every piece of stored content is escaped by [`html::escape`] on the server (an event payload
//! holding `<script>` stays text), and every page carries a Content-Security-Policy that allows
//! no inline script and no other origin. The console only reads: it has no route but `GET`
//! (and `HEAD`). It listens on a loopback address (a non-loopback `--bind` needs
//! `--allow-remote`), and there it answers only requests addressed to a loopback name (a
//! defence against DNS rebinding).

mod chart;
mod dead_letters;
mod html;
mod list;
mod routes;
mod workflow;

use std::io::Write;
use std::net::SocketAddr;

use clap::Args;

use crate::error::CliError;
use crate::store::Store;

/// `orchestrator serve STORE [--bind ADDR] [--schema S] [--allow-remote]`.
#[derive(Debug, Args)]
pub(crate) struct ServeArgs {
    /// The store: a SQLite file (`sqlite:PATH` or a plain path; it must exist), or a
    /// `postgres://` URL.
    store: String,
    /// The address to listen on; port 0 picks a free port. A non-loopback address needs
    /// --allow-remote.
    #[arg(long, default_value = "127.0.0.1:8080", value_name = "ADDR")]
    bind: SocketAddr,
    /// The PostgreSQL schema holding the tables.
    #[arg(long, default_value = "orchestrator")]
    schema: String,
    /// Allow listening on a non-loopback address: the console has no authentication, so anyone
    /// who reaches the address reads every workflow and payload of the store.
    #[arg(long)]
    allow_remote: bool,
}

/// Runs the console until Ctrl-C (or SIGTERM), after writing the URL it serves on to `out`.
pub(crate) fn serve(args: &ServeArgs, out: &mut dyn Write) -> Result<(), CliError> {
    let loopback = args.bind.ip().is_loopback();
    if !loopback && !args.allow_remote {
        return Err(CliError::Usage(format!(
            "refusing to listen on {}: not a loopback address, and the console has no authentication; \
             use --bind 127.0.0.1:PORT, or add --allow-remote to expose every workflow of the store to whoever \
             reaches that address",
            args.bind
        )));
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| CliError::Io { context: "cannot start the async runtime".to_owned(), source: e })?;
    rt.block_on(async {
        let store = Store::open(&args.store, &args.schema).await?;
        let listener = tokio::net::TcpListener::bind(args.bind)
            .await
            .map_err(|e| CliError::Io { context: format!("cannot listen on {}", args.bind), source: e })?;
        let addr = listener
            .local_addr()
            .map_err(|e| CliError::Io { context: "cannot read the bound address".to_owned(), source: e })?;
        if !loopback {
            eprintln!(
                "warning: the console listens on {addr}, not only on loopback: it has no authentication, \
                 anyone who reaches it reads every workflow of the store"
            );
        }
        let app = routes::router(store, &args.store, addr, !loopback);
        writeln!(
            out,
            "orchestrator console for {} on http://{addr}/ (read-only; Ctrl-C stops it)",
            crate::resolve::redact(&args.store)
        )
        .and_then(|()| out.flush())
        .map_err(CliError::output)?;
        axum::serve(listener, app)
            .with_graceful_shutdown(stopped())
            .await
            .map_err(|e| CliError::Io { context: "the console stopped".to_owned(), source: e })
    })
}

/// Resolves on Ctrl-C or SIGTERM.
async fn stopped() {
    let interrupt = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(term) => term,
            Err(_) => {
                let _ = interrupt.await;
                return;
            }
        };
        tokio::select! {
            _ = interrupt => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = interrupt.await;
    }
}
