//! The checkpointer: copies committed WAL frames back into the database file on its own thread
//! and connection, so that the writer thread only appends and commits. A `PASSIVE` checkpoint
//! never blocks the writer nor readers; it copies what no reader still needs.

use std::sync::mpsc::{RecvTimeoutError, Sender};
use std::thread::JoinHandle;
use std::time::Duration;

use rusqlite::Connection;

/// The WAL size (pages) at which the writer checkpoints by itself, should the checkpointer
/// fall behind: a safety net, about 40 MiB with 4 KiB pages.
pub(crate) const WRITER_AUTOCHECKPOINT: i64 = 10_000;

/// The handle on the checkpointer thread; dropping it stops the thread.
pub(crate) struct Checkpointer {
    stop: Option<Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Checkpointer {
    /// Starts checkpointing with `conn` every `every`.
    pub(crate) fn start(conn: Connection, every: Duration) -> std::io::Result<Self> {
        let (stop, stopped) = std::sync::mpsc::channel::<()>();
        let thread = std::thread::Builder::new().name("sqlite-checkpoint".to_owned()).spawn(move || {
            while let Err(RecvTimeoutError::Timeout) = stopped.recv_timeout(every) {
                // A busy or failed pass is retried at the next tick; the writer's own
                // auto-checkpoint bounds the WAL meanwhile.
                let _ = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()));
            }
        })?;
        Ok(Self { stop: Some(stop), thread: Some(thread) })
    }
}

impl Drop for Checkpointer {
    fn drop(&mut self) {
        self.stop = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
