//! The journal's index of consumed events (schema 14): a journal row keeps, instead of the
//! consumed event's id and source as text (about 50 bytes, then again in the index), a 32-bit
//! hash of that identity (4 bytes in SQLite's record format). A lookup finds the workflow's rows
//! with the hash and keeps the one whose consumed event (in its encoded events) has that very
//! source and id: a collision can never make an event look consumed that was not, and, as only
//! the rows of one workflow are compared, it is rare and costs decoding one more row.

use orchestrator::memory::EventKey;

/// The hash of an event's identity stored in `journal.consumed_key`: the low 32 bits of XXH3
/// (64 bits, seed 0) of its source, a NUL byte, then its id, as a signed integer. Part of the
/// file format: changing it breaks redelivery lookups of rows already written.
pub(crate) fn consumed_key(key: EventKey<'_>) -> i64 {
    let mut hasher = xxhash_rust::xxh3::Xxh3::new();
    hasher.update(key.source.as_bytes());
    hasher.update(&[0]);
    hasher.update(key.id.as_bytes());
    let [a, b, c, d, ..] = hasher.digest().to_le_bytes();
    i64::from(i32::from_le_bytes([a, b, c, d]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_is_frozen_and_tells_source_from_id() {
        let key = |source, id| consumed_key(EventKey { source, id });
        // Part of the file format (rows already written are found by it).
        assert_eq!(key("com.test.client", "e-1"), key("com.test.client", "e-1"));
        assert_eq!(key("com.test.client", "e-1"), FROZEN);
        assert_ne!(key("ab", "c"), key("a", "bc"), "the separator keeps source and id apart");
        assert_ne!(key("com.a", "e-1"), key("com.b", "e-1"));
    }

    const FROZEN: i64 = -541_800_382;

    fn event(source: &str, id: &str) -> orchestrator::event::Event {
        orchestrator::event::Event::builder()
            .id(id)
            .source(source)
            .r#type("com.test.event")
            .subject("wf")
            .data_json(serde_json::json!({}))
            .build()
            .unwrap()
    }

    /// Two rows share a key (as a collision would make them): a lookup answers with the row
    /// whose consumed event is the one asked for, and with nothing for an event never consumed.
    #[test]
    fn a_collision_never_makes_an_event_look_consumed() {
        use orchestrator::memory::journal_codec;

        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("keys.db");
        let mut conn = rusqlite::Connection::open(&path).unwrap();
        crate::schema::migrate(&mut conn, &path).unwrap();
        conn.execute(
            "INSERT INTO workflows (seq, id, version, record, source, created_at_ms, updated_at_ms, status) \
             VALUES (1, 'wf', 2, '{}', 's', 0, 0, 'active')",
            [],
        )
        .unwrap();
        let asked = EventKey { source: "com.client", id: "e-asked" };
        for (version, consumed) in [(1, event("com.client", "e-other")), (2, event("com.client", "e-asked"))]
        {
            let produced = [event("wf", &format!("out-{version}"))];
            let events = journal_codec::encode_events(Some(&consumed), &produced, "wf").unwrap();
            conn.execute(
                "INSERT INTO journal (wf, version, at_ms, consumed_key, events, record) VALUES (1, ?1, 0, ?2, ?3, X'00')",
                rusqlite::params![version, consumed_key(asked), events],
            )
            .unwrap();
        }
        let found = crate::ops::produced(&conn, "wf", asked.source, asked.id).unwrap();
        assert_eq!(
            found.map(|(version, _)| version),
            Some(2),
            "the row that consumed it, not the first with its key"
        );
        conn.execute("DELETE FROM journal WHERE version = 2", []).unwrap();
        assert!(
            crate::ops::produced(&conn, "wf", asked.source, asked.id).unwrap().is_none(),
            "only a collision left"
        );
    }
}
