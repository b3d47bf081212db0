//! `acquire`, `commit` and `Outbox::advance` are one round trip each: a proxy between the store and the server
//! counts the client's `Sync` and `Query` messages (each ends one round trip).

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, SystemTime};

use orchestrator::event::Event;
use orchestrator::memory::{Commit, EventKey, JournalEntry, Memory, Retention, WriteMeta};
use orchestrator::outbox::Outbox;
use orchestrator_postgres::PgStore;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use common::{config, database_url, drop_schema, fresh_schema};

/// Forwards client bytes to the server, counting the round trips the client starts.
async fn forward_counting(
    mut client: tokio::net::tcp::OwnedReadHalf,
    mut server: tokio::net::tcp::OwnedWriteHalf,
    count: Arc<AtomicUsize>,
) -> std::io::Result<()> {
    // The startup packet has no type byte: a length (itself included), then the content.
    let len = client.read_u32().await?;
    let mut startup = vec![0; usize::try_from(len).unwrap_or(0).saturating_sub(4)];
    client.read_exact(&mut startup).await?;
    server.write_u32(len).await?;
    server.write_all(&startup).await?;
    loop {
        let kind = client.read_u8().await?;
        let len = client.read_u32().await?;
        let mut body = vec![0; usize::try_from(len).unwrap_or(0).saturating_sub(4)];
        client.read_exact(&mut body).await?;
        if kind == b'S' || kind == b'Q' {
            count.fetch_add(1, Ordering::SeqCst);
        }
        server.write_u8(kind).await?;
        server.write_u32(len).await?;
        server.write_all(&body).await?;
    }
}

/// A proxy to `upstream` on a free local port; returns the port and the counter.
async fn proxy(upstream: String) -> (u16, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("address").port();
    let count = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&count);
    tokio::spawn(async move {
        while let Ok((client, _)) = listener.accept().await {
            let server = TcpStream::connect(&upstream).await.expect("connect upstream");
            let (client_read, mut client_write) = client.into_split();
            let (mut server_read, server_write) = server.into_split();
            tokio::spawn(forward_counting(client_read, server_write, Arc::clone(&counter)));
            tokio::spawn(async move { tokio::io::copy(&mut server_read, &mut client_write).await });
        }
    });
    (port, count)
}

fn event(source: &str, id: &str) -> Event {
    Event::builder()
        .id(id)
        .source(source)
        .r#type("com.round.trip")
        .subject("round-trip")
        .data_json(serde_json::json!({ "id": id }))
        .build()
        .expect("event")
}

/// One step of workflow `wf` (the `n`th, finishing at 3): the round trips of its acquire and
/// of its commit.
async fn step(store: &PgStore<String>, count: &AtomicUsize, wf: &str, n: u64) -> (usize, usize) {
    let consumed = event("com.round.client", &format!("{wf}-{n}"));
    let produced = [event("com.round.suite", &format!("{wf}-p-{n}"))];
    let key = EventKey::of(&consumed);
    let before = count.load(Ordering::SeqCst);
    let acquired = store.acquire(wf, key, true).await.expect("acquire").expect("free");
    let after_acquire = count.load(Ordering::SeqCst);
    let lease = acquired.lease.expect("lease");
    let prev = acquired.stored.map(|s| s.version);
    let entry = JournalEntry { at: SystemTime::now(), consumed: Some(&consumed), produced: &produced };
    let commit = Commit {
        release: true,
        finished: n == 3,
        ..Commit::new(wf, format!("v{n}"), prev, WriteMeta { entry: Some(entry), ..WriteMeta::new(wf, "me") })
            .lease(Some(&lease))
    };
    store.commit(commit).await.expect("commit");
    let after_commit = count.load(Ordering::SeqCst);
    (after_acquire - before, after_commit - after_acquire)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acquire_and_commit_are_one_round_trip_each() {
    let Some(url) = database_url() else { return };
    let parsed: tokio_postgres::Config = url.parse().expect("DATABASE_URL");
    let host = match parsed.get_hosts().first() {
        Some(tokio_postgres::config::Host::Tcp(host)) => host.clone(),
        _ => {
            println!("skipping: DATABASE_URL does not name a TCP host");
            return;
        }
    };
    let port = parsed.get_ports().first().copied().unwrap_or(5432);
    let (proxy_port, count) = proxy(format!("{host}:{port}")).await;
    let user = parsed.get_user().unwrap_or("postgres");
    let password =
        parsed.get_password().map(|p| format!(":{}", String::from_utf8_lossy(p))).unwrap_or_default();
    let dbname = parsed.get_dbname().unwrap_or(user);
    let proxied = format!("postgres://{user}{password}@127.0.0.1:{proxy_port}/{dbname}?sslmode=disable");

    let schema = fresh_schema();
    let mut cfg = config(&proxied, &schema, Duration::from_secs(30), Retention::Keep);
    cfg.pool_size = 1;
    let store: PgStore<String> = PgStore::open(cfg).await.expect("open through the proxy");

    // Three steps first, so that every statement is prepared on the pooled connection.
    step(&store, &count, "warm", 1).await;
    step(&store, &count, "warm", 2).await;
    step(&store, &count, "warm", 3).await;
    for n in 1..=3 {
        let (acquire, commit) = step(&store, &count, "measured", n).await;
        assert_eq!(acquire, 1, "acquire (step {n}) is one round trip");
        assert_eq!(commit, 1, "commit (step {n}) is one round trip");
    }
    let events = [event("com.round.suite", "o-1"), event("com.round.suite", "o-2")];
    store.advance(None, &events).await.expect("warm the outbox statement");
    let before = count.load(Ordering::SeqCst);
    store.advance(Some("o-1"), &[event("com.round.suite", "o-3")]).await.expect("advance");
    assert_eq!(count.load(Ordering::SeqCst) - before, 1, "an outbox step is one round trip");
    drop(store);
    drop_schema(&url, &schema).await;
}
