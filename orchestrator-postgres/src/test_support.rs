//! What the crate's own database tests share: the URL, a schema of their own, its removal.

/// `DATABASE_URL`, or none after saying the test is skipped (under `CI`, a missing URL fails the
/// test instead: the PostgreSQL tests are mandatory there).
pub(crate) fn database_url() -> Option<String> {
    match std::env::var("DATABASE_URL") {
        Ok(url) if !url.is_empty() => Some(url),
        _ => {
            assert!(std::env::var_os("CI").is_none(), "DATABASE_URL is not set, and CI makes it mandatory");
            println!("skipping: DATABASE_URL is not set");
            None
        }
    }
}

/// A schema name of its own for one test.
pub(crate) fn fresh_schema() -> String {
    format!("t_{:016x}", fastrand::u64(..))
}

/// Drops `schema` and everything in it.
pub(crate) async fn drop_schema(url: &str, schema: &str) {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls).await.expect("connect");
    tokio::spawn(connection);
    client.batch_execute(&format!("DROP SCHEMA \"{schema}\" CASCADE")).await.expect("drop the schema");
}
