//! The [`Catalog`] implementation of [`SqliteMemory`]: table `catalog` (schema version 7),
//! written by the writer thread, read on the read pool.

use orchestrator::memory::{Catalog, Definition, DefinitionKind, MemoryError, Recorded};
use rusqlite::{Connection, params};

use crate::SqliteMemory;
use crate::error::{SqliteError, backend};
use crate::reads::{decode, read};
use crate::store::encode;
use crate::time::from_ms;

/// The key of catalog operations in errors.
const KEY: &str = "(catalog)";

impl<R: Send + Sync> Catalog for SqliteMemory<R> {
    async fn record(&self, definitions: &[Definition]) -> Result<(), MemoryError> {
        if definitions.is_empty() {
            return Ok(());
        }
        let rows = definitions
            .iter()
            .map(|d| {
                let document = encode(KEY, "catalog document", &d.document)?;
                Ok((d.kind.as_str(), d.name.clone(), d.version.clone(), document))
            })
            .collect::<Result<Vec<_>, MemoryError>>()?;
        self.writer.submit(KEY, move |conn, now| upsert(conn, &rows, now)).await
    }

    async fn definitions(&self) -> Result<Vec<Recorded>, MemoryError> {
        read(&self.readers, KEY, |conn, _| all(conn)).await
    }
}

fn sql(e: rusqlite::Error) -> MemoryError {
    backend(KEY, SqliteError::Sqlite(e))
}

fn upsert(conn: &Connection, rows: &[(&str, String, String, String)], now: i64) -> Result<(), MemoryError> {
    let mut insert = conn
        .prepare_cached(
            "INSERT INTO catalog (kind, name, version, document, recorded_at_ms) VALUES (?1, ?2, ?3, ?4, ?5) \
             ON CONFLICT (kind, name, version) DO UPDATE SET document = excluded.document, \
             recorded_at_ms = excluded.recorded_at_ms",
        )
        .map_err(sql)?;
    for (kind, name, version, document) in rows {
        insert.execute(params![kind, name, version, document, now]).map_err(sql)?;
    }
    Ok(())
}

fn all(conn: &Connection) -> Result<Vec<Recorded>, MemoryError> {
    let mut select = conn
        .prepare_cached(
            "SELECT kind, name, version, document, recorded_at_ms FROM catalog ORDER BY kind, name, version",
        )
        .map_err(sql)?;
    let rows = select
        .query_map([], |r| {
            Ok((r.get::<_, String>(0)?, r.get(1)?, r.get(2)?, r.get::<_, String>(3)?, r.get::<_, i64>(4)?))
        })
        .map_err(sql)?;
    let mut recorded = Vec::new();
    for row in rows {
        let (kind, name, version, document, at): (String, String, String, String, i64) = row.map_err(sql)?;
        let Some(kind) = DefinitionKind::parse(&kind) else {
            continue; // A kind a newer library writes: not this one's to show.
        };
        let document = decode(KEY, "catalog document", 0, &document)?;
        let recorded_at = from_ms("catalog time", at).map_err(|e| backend(KEY, e))?;
        recorded.push(Recorded { definition: Definition { kind, name, version, document }, recorded_at });
    }
    Ok(recorded)
}
