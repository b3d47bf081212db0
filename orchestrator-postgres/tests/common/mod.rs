//! Shared by the tests: the database URL (mandatory under CI) and fresh schemas.

#![allow(dead_code, unreachable_pub)]

pub mod child;
pub mod cluster;
pub mod journal;
pub mod workload;

use std::sync::Mutex;
use std::time::Duration;

use orchestrator::memory::{NodeId, Retention};
use orchestrator_postgres::{PgConfig, PgStore};

/// The URL in `DATABASE_URL`; `None` (after saying why) when unset outside CI. Under CI (`CI`
/// set) a missing URL fails the test.
pub fn database_url() -> Option<String> {
    match std::env::var("DATABASE_URL") {
        Ok(url) if !url.is_empty() => Some(url),
        _ => {
            assert!(
                std::env::var_os("CI").is_none(),
                "DATABASE_URL is not set, and CI makes the PostgreSQL tests mandatory"
            );
            println!("skipping: DATABASE_URL is not set");
            None
        }
    }
}

/// A fresh schema name.
pub fn fresh_schema() -> String {
    format!("t_{:016x}", fastrand::u64(..))
}

/// A configuration for `url` in `schema`.
pub fn config(url: &str, schema: &str, lease_ttl: Duration, retention: Retention) -> PgConfig {
    PgConfig {
        url: url.to_owned(),
        schema: schema.to_owned(),
        lease_ttl,
        retention,
        pool_size: 8,
        committers: 1,
        node: NodeId::new(format!("test-{schema}")),
    }
}

/// Runs SQL on a fresh connection.
pub async fn run_sql(url: &str, sql: &str) -> Result<(), tokio_postgres::Error> {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls).await?;
    let task = tokio::spawn(connection);
    let result = client.batch_execute(sql).await;
    drop(client);
    let _ = task.await;
    result
}

/// Drops `schema` (best effort).
pub async fn drop_schema(url: &str, schema: &str) {
    if let Err(e) = run_sql(url, &format!("DROP SCHEMA IF EXISTS \"{schema}\" CASCADE")).await {
        eprintln!("could not drop schema {schema}: {e}");
    }
}

/// Schemas made by a synchronous factory, dropped by [`Schemas::drop_all`].
#[derive(Default)]
pub struct Schemas(Mutex<Vec<String>>);

impl Schemas {
    /// Opens a store in a fresh schema from inside a multi-thread runtime, synchronously.
    pub fn open<R>(&self, url: &str, lease_ttl: Duration, retention: Retention) -> PgStore<R> {
        let schema = fresh_schema();
        self.0.lock().expect("schemas").push(schema.clone());
        let config = config(url, &schema, lease_ttl, retention);
        tokio::task::block_in_place(|| {
            tokio::runtime::Handle::current().block_on(PgStore::open(config)).expect("open the store")
        })
    }

    /// Drops every schema made.
    pub async fn drop_all(&self, url: &str) {
        let schemas = std::mem::take(&mut *self.0.lock().expect("schemas"));
        for schema in schemas {
            drop_schema(url, &schema).await;
        }
    }
}
