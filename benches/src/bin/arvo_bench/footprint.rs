//! What workflows occupy: the resident set of this process (memory per workflow in flight) and the
//! bytes a store keeps per workflow (the SQLite file, the PostgreSQL schema's relations).

use std::path::Path;

use serde_json::{Map, Value, json};

use super::BoxError;

/// A field of `/proc/self/status` in kB (`VmRSS`, `RssAnon`, …).
fn status_kb(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status.lines().find_map(|l| {
        l.strip_prefix(field)?.strip_prefix(':')?.trim().strip_suffix("kB")?.trim().parse().ok()
    })
}

/// The resident set of this process now (`VmRSS`), in kB.
pub(crate) fn vm_rss_kb() -> Option<u64> {
    status_kb("VmRSS")
}

/// The resident set sampled while a batch of `workflows` workflows runs.
#[derive(Debug, Clone, Default)]
pub(crate) struct RssProbe {
    /// `VmRSS` before the first of them started.
    pub(crate) before_kb: Option<u64>,
    /// `VmRSS` at the end of each round of the batch; the first when all of them were open (every
    /// init delivered, none completed).
    pub(crate) rounds_kb: Vec<Option<u64>>,
    /// How many were open.
    pub(crate) workflows: usize,
}

impl RssProbe {
    /// The probe's fields for `params`: `rss_per_workflow_kb` = (`VmRSS` once all are open −
    /// before) / workflows, `rss_per_workflow_peak_kb` the same with the highest sample of the
    /// batch (the workflows grow as their journals do), and the raw samples.
    pub(crate) fn json(&self) -> Value {
        let per_workflow = |sample: Option<u64>| match (self.before_kb, sample) {
            (Some(before), Some(sample)) if self.workflows > 0 => {
                let kb = (sample as f64 - before as f64) / self.workflows as f64;
                json!((kb * 1000.0).round() / 1000.0)
            }
            _ => Value::Null,
        };
        let open = self.rounds_kb.first().copied().flatten();
        let peak = self.rounds_kb.iter().copied().max().flatten();
        json!({
            "rss_per_workflow_kb": per_workflow(open),
            "rss_per_workflow_peak_kb": per_workflow(peak),
            "rss_probe": {
                "before_kb": self.before_kb,
                "open_kb": open,
                "rounds_kb": self.rounds_kb,
                "workflows_open": self.workflows,
            },
        })
    }
}

/// What the SQLite database at `path` holds once the run is over and the store closed: the file
/// after `PRAGMA wal_checkpoint(TRUNCATE)` (so the WAL is empty and everything is in the file),
/// the workflows and journal entries kept, and per table and index (`dbstat`) the bytes of its
/// pages and of its payload. `bytes_per_workflow` = file bytes / workflows kept.
pub(crate) fn sqlite(path: &Path) -> Result<Value, BoxError> {
    let mut wal = path.as_os_str().to_owned();
    wal.push("-wal");
    let wal = std::path::PathBuf::from(wal);
    let wal_before = std::fs::metadata(&wal).map_or(0, |m| m.len());
    let conn = rusqlite::Connection::open(path)?;
    conn.busy_timeout(std::time::Duration::from_secs(10))?;
    let (busy, _, _): (i64, i64, i64) =
        conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
    if busy != 0 {
        return Err("the WAL checkpoint could not complete (the database is busy)".into());
    }
    let db_bytes = std::fs::metadata(path)?.len();
    let wal_bytes = std::fs::metadata(&wal).map_or(0, |m| m.len());
    let workflows: i64 = conn.query_row("SELECT COUNT(*) FROM workflows", [], |r| r.get(0))?;
    let journal: i64 = conn.query_row("SELECT COUNT(*) FROM journal", [], |r| r.get(0))?;
    let page_size: i64 = conn.query_row("PRAGMA page_size", [], |r| r.get(0))?;
    let free_pages: i64 = conn.query_row("PRAGMA freelist_count", [], |r| r.get(0))?;
    let mut pages = Map::new();
    let mut payload = Map::new();
    let mut stmt = conn.prepare(
        "SELECT name, SUM(pgsize), SUM(payload) FROM dbstat GROUP BY name ORDER BY SUM(pgsize) DESC, name",
    )?;
    let rows =
        stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?, r.get::<_, i64>(2)?)))?;
    for row in rows {
        let (name, size, used) = row?;
        pages.insert(name.clone(), json!(size));
        payload.insert(name, json!(used));
    }
    let total = db_bytes + wal_bytes;
    Ok(json!({
        "bytes_per_workflow": if workflows > 0 { json!(total / workflows as u64) } else { Value::Null },
        "store_bytes": total,
        "wal_bytes_before_checkpoint": wal_before,
        "workflows_kept": workflows,
        "journal_rows": journal,
        "page_size": page_size,
        "free_pages": free_pages,
        "bytes_by_table": pages,
        "payload_by_table": payload,
    }))
}

/// What the PostgreSQL schema `schema` holds after the run: `pg_total_relation_size` (heap,
/// indexes, TOAST) of each of its tables, the workflows and journal entries kept, and
/// `bytes_per_workflow` = the sum over the tables / workflows kept. First as the run left them:
/// dead rows (the queue's acked events, superseded workflow rows) still take their space, as on
/// a live node between two autovacuum runs; then after `VACUUM FULL` of each table (rewritten
/// with the live rows only): `bytes_per_workflow_compacted`, `bytes_by_table_compacted`.
pub(crate) async fn postgres(url: &str, schema: &str) -> Result<Value, BoxError> {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls).await?;
    let task = tokio::spawn(connection);
    let sizes = "SELECT c.relname::text, pg_total_relation_size(c.oid)::int8 FROM pg_class c \
                 JOIN pg_namespace n ON n.oid = c.relnamespace \
                 WHERE n.nspname = $1 AND c.relkind IN ('r', 'p') ORDER BY 2 DESC, 1";
    let rows = client.query(sizes, &[&schema]).await?;
    for row in &rows {
        let table: String = row.get(0);
        client.batch_execute(&format!("VACUUM FULL \"{schema}\".\"{table}\"")).await?;
    }
    let compacted = client.query(sizes, &[&schema]).await?;
    let workflows: i64 =
        client.query_one(&format!("SELECT COUNT(*) FROM \"{schema}\".workflows"), &[]).await?.get(0);
    let journal: i64 =
        client.query_one(&format!("SELECT COUNT(*) FROM \"{schema}\".journal"), &[]).await?.get(0);
    drop(client);
    let _ = task.await;
    let sum_up = |rows: Vec<tokio_postgres::Row>| {
        let mut by_table = Map::new();
        let mut total = 0i64;
        for row in rows {
            let (name, size): (String, i64) = (row.get(0), row.get(1));
            total += size;
            by_table.insert(name, json!(size));
        }
        let per_workflow = if workflows > 0 { json!(total / workflows) } else { Value::Null };
        (by_table, total, per_workflow)
    };
    let (by_table, total, per_workflow) = sum_up(rows);
    let (by_table_compacted, total_compacted, per_workflow_compacted) = sum_up(compacted);
    Ok(json!({
        "bytes_per_workflow": per_workflow,
        "bytes_per_workflow_compacted": per_workflow_compacted,
        "store_bytes": total,
        "store_bytes_compacted": total_compacted,
        "workflows_kept": workflows,
        "journal_rows": journal,
        "bytes_by_table": by_table,
        "bytes_by_table_compacted": by_table_compacted,
    }))
}
