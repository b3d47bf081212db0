//! The versioned schema: migrations applied on open, inside the configured PostgreSQL schema.

use tokio_postgres::Client;

use crate::error::OpenError;

/// The schema version this crate writes and reads. A database at a newer version is refused
/// with [`OpenError::NewerSchema`].
pub const SCHEMA_VERSION: i32 = 1;

/// The migrations, in order: entry `i` brings the schema from version `i` to `i + 1`. `{s}` is
/// replaced by the quoted schema name.
const MIGRATIONS: &[&str] = &[
    // 1: workflows, leases, journal, outbox, archive.
    "CREATE SEQUENCE {s}.lease_tokens;
     CREATE TABLE {s}.workflows (
         id TEXT PRIMARY KEY,
         seq BIGSERIAL NOT NULL,
         record JSONB NOT NULL,
         version BIGINT NOT NULL,
         parent TEXT,
         initiator TEXT,
         source TEXT NOT NULL,
         wake_at TIMESTAMPTZ,
         claimed_until TIMESTAMPTZ,
         finished_at TIMESTAMPTZ,
         created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
         updated_at TIMESTAMPTZ NOT NULL DEFAULT now()
     );
     CREATE INDEX workflows_wake_at ON {s}.workflows (wake_at) WHERE wake_at IS NOT NULL;
     CREATE INDEX workflows_parent ON {s}.workflows (parent, seq) WHERE parent IS NOT NULL;
     CREATE INDEX workflows_finished_at ON {s}.workflows (finished_at) WHERE finished_at IS NOT NULL;
     CREATE TABLE {s}.leases (
         id TEXT PRIMARY KEY,
         owner TEXT NOT NULL,
         token BIGINT NOT NULL,
         expires_at TIMESTAMPTZ NOT NULL
     );
     CREATE TABLE {s}.journal (
         wf TEXT NOT NULL,
         version BIGINT NOT NULL,
         at_ms BIGINT NOT NULL,
         consumed_source TEXT,
         consumed_id TEXT,
         consumed TEXT,
         produced TEXT NOT NULL,
         record JSONB NOT NULL,
         PRIMARY KEY (wf, version)
     );
     CREATE INDEX journal_consumed ON {s}.journal (wf, consumed_source, consumed_id)
         WHERE consumed_id IS NOT NULL;
     CREATE TABLE {s}.outbox (
         seq BIGSERIAL PRIMARY KEY,
         event_id TEXT NOT NULL UNIQUE,
         event TEXT NOT NULL
     );
     CREATE TABLE {s}.archive_workflows (LIKE {s}.workflows);
     CREATE TABLE {s}.archive_journal (LIKE {s}.journal);",
];

/// `name` quoted as an SQL identifier.
pub(crate) fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// Creates the schema if missing and applies the migrations it lacks, under an advisory lock
/// (several processes may open the same database at once).
pub(crate) async fn migrate(client: &mut Client, schema: &str) -> Result<(), OpenError> {
    let s = quote_ident(schema);
    let tx = client.transaction().await.map_err(OpenError::Migration)?;
    tx.execute("SELECT pg_advisory_xact_lock(hashtext('orchestrator-postgres:' || $1::text))", &[&schema])
        .await
        .map_err(OpenError::Migration)?;
    tx.batch_execute(&format!(
        "CREATE SCHEMA IF NOT EXISTS {s};
         CREATE TABLE IF NOT EXISTS {s}.schema_version (version INTEGER NOT NULL);"
    ))
    .await
    .map_err(OpenError::Migration)?;
    let row = tx
        .query_one(&format!("SELECT COALESCE(max(version), 0) FROM {s}.schema_version"), &[])
        .await
        .map_err(OpenError::Migration)?;
    let found: i32 = row.get(0);
    if found > SCHEMA_VERSION {
        return Err(OpenError::NewerSchema { found, supported: SCHEMA_VERSION });
    }
    let start = usize::try_from(found).unwrap_or(0);
    for migration in MIGRATIONS.iter().skip(start) {
        tx.batch_execute(&migration.replace("{s}", &s)).await.map_err(OpenError::Migration)?;
    }
    if found < SCHEMA_VERSION {
        tx.batch_execute(&format!(
            "DELETE FROM {s}.schema_version; INSERT INTO {s}.schema_version (version) VALUES ({SCHEMA_VERSION});"
        ))
        .await
        .map_err(OpenError::Migration)?;
    }
    tx.commit().await.map_err(OpenError::Migration)
}
