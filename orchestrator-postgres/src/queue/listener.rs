//! The listening connection: `LISTEN orchestrator_queue`, waking this process's consumers when
//! another process enqueues in the same schema. A hint only: consumers poll anyway, so a lost
//! connection costs latency, not events (it reconnects with backoff).

use std::future::poll_fn;
use std::sync::Arc;
use std::time::Duration;

use super::signals::Signals;
use tokio_postgres::{AsyncMessage, NoTls};

/// Listens until aborted.
pub(super) async fn listen(pg: tokio_postgres::Config, schema: String, wake: Arc<Signals>) {
    let mut pause = Duration::from_millis(100);
    loop {
        match listen_once(&pg, &schema, &wake).await {
            Ok(()) => pause = Duration::from_millis(100),
            Err(e) => tracing::debug!(error = %e, "the queue's listening connection failed; reconnecting"),
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(Duration::from_secs(5));
    }
}

/// One connection's life: returns when it ends.
async fn listen_once(
    pg: &tokio_postgres::Config,
    schema: &str,
    wake: &Signals,
) -> Result<(), tokio_postgres::Error> {
    let (client, mut connection) = pg.connect(NoTls).await?;
    let listen = client.batch_execute("LISTEN orchestrator_queue");
    tokio::pin!(listen);
    let mut listening = false;
    loop {
        tokio::select! {
            done = &mut listen, if !listening => {
                done?;
                listening = true;
            }
            message = poll_fn(|cx| connection.poll_message(cx)) => match message {
                Some(Ok(AsyncMessage::Notification(n))) => {
                    if n.payload() == schema {
                        wake.notify_one();
                    }
                }
                Some(Ok(_)) => {}
                Some(Err(e)) => return Err(e),
                None => return Ok(()),
            },
        }
    }
}
