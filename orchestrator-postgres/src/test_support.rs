//! What the crate's own tests share.

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
