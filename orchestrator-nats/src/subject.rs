//! How topics become NATS subjects and consumer names, and events message ids.
//!
//! # Topics as subjects
//!
//! The events of topic `t` travel on subject `<prefix>.t.<encoded t>`, its dead letters on
//! `<prefix>.dead.<encoded t>`. A topic is split on its dots (NATS's hierarchy: `com.example.add`
//! becomes the three tokens `com`, `example`, `add`) and each part is encoded on its own:
//!
//! * ASCII letters, digits, `-` and `_` stay as they are;
//! * every other byte of its UTF-8 (a space, `*`, `>`, `$`, `~`, non-ASCII letters, control
//!   characters) becomes `~` and two upper-case hexadecimal digits (`a b` → `a~20b`);
//! * an empty part (a topic that starts or ends with a dot, or holds two in a row, or the empty
//!   topic) becomes the lone token `~`.
//!
//! So every token is valid and never a wildcard, and the mapping is one-to-one:
//! [`topic_of_subject`] reverses it.

use sha2::{Digest, Sha256};

/// Whether `c` stays as it is in a subject token.
fn is_plain(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'-' || c == b'_'
}

/// `topic` as subject tokens (see the [module documentation](self)).
pub fn encode_topic(topic: &str) -> String {
    let mut out = String::with_capacity(topic.len() + 8);
    for (i, part) in topic.split('.').enumerate() {
        if i > 0 {
            out.push('.');
        }
        if part.is_empty() {
            out.push('~');
            continue;
        }
        for &byte in part.as_bytes() {
            if is_plain(byte) {
                out.push(char::from(byte));
            } else {
                out.push('~');
                out.push_str(&format!("{byte:02X}"));
            }
        }
    }
    out
}

/// The topic encoded as `tokens` by [`encode_topic`]; `None` when `tokens` is not such an
/// encoding.
pub fn decode_topic(tokens: &str) -> Option<String> {
    let mut bytes = Vec::with_capacity(tokens.len());
    for (i, token) in tokens.split('.').enumerate() {
        if i > 0 {
            bytes.push(b'.');
        }
        if token == "~" {
            continue;
        }
        if token.is_empty() {
            return None;
        }
        let raw = token.as_bytes();
        let mut at = 0;
        while at < raw.len() {
            match raw[at] {
                b'~' => {
                    let hex = token.get(at + 1..at + 3)?;
                    if !hex.bytes().all(|b| b.is_ascii_digit() || (b'A'..=b'F').contains(&b)) {
                        return None;
                    }
                    bytes.push(u8::from_str_radix(hex, 16).ok()?);
                    at += 3;
                }
                byte if is_plain(byte) => {
                    bytes.push(byte);
                    at += 1;
                }
                _ => return None,
            }
        }
    }
    String::from_utf8(bytes).ok()
}

/// The subject of `topic`'s events under `prefix`.
pub fn event_subject(prefix: &str, topic: &str) -> String {
    format!("{prefix}.t.{}", encode_topic(topic))
}

/// The subject of `topic`'s dead letters under `prefix`.
pub fn dead_subject(prefix: &str, topic: &str) -> String {
    format!("{prefix}.dead.{}", encode_topic(topic))
}

/// The topic of event subject `subject` under `prefix`, if it is one.
pub fn topic_of_subject(prefix: &str, subject: &str) -> Option<String> {
    let tokens = subject.strip_prefix(prefix)?.strip_prefix(".t.")?;
    decode_topic(tokens)
}

/// The durable consumer of `topic` (`None`: every topic): readable where the topic allows
/// (at most 32 of its characters, others as `_`) and unique by a hash of the whole topic.
pub fn consumer_name(topic: Option<&str>) -> String {
    match topic {
        None => "all-topics".to_owned(),
        Some(topic) => {
            let readable: String =
                topic.bytes().take(32).map(|b| if is_plain(b) { char::from(b) } else { '_' }).collect();
            format!("t_{readable}_{}", &hex_digest(topic.as_bytes())[..16])
        }
    }
}

/// The `Nats-Msg-Id` of an event: 32 hexadecimal digits of the SHA-256 of its source, a unit
/// separator (U+001F) and its id. Any length and any characters of source and id make a valid
/// header value, and two events share a message id only if they share `(source, id)`.
pub fn message_id(source: &str, id: &str) -> String {
    let mut bytes = Vec::with_capacity(source.len() + id.len() + 1);
    bytes.extend_from_slice(source.as_bytes());
    bytes.push(0x1f);
    bytes.extend_from_slice(id.as_bytes());
    hex_digest(&bytes)[..32].to_owned()
}

fn hex_digest(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// Whether `name` is a valid stream name: not empty, at most 255 bytes, without `.`, `*`,
/// `>`, path separators, whitespace or control characters.
pub fn valid_stream_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 255
        && name
            .chars()
            .all(|c| !matches!(c, '.' | '*' | '>' | '/' | '\\') && !c.is_whitespace() && !c.is_control())
}

/// Whether `prefix` is a valid subject prefix: dot-separated, non-empty tokens without
/// wildcards, whitespace or control characters.
pub fn valid_prefix(prefix: &str) -> bool {
    !prefix.is_empty()
        && prefix.split('.').all(|token| {
            !token.is_empty()
                && token != "*"
                && token != ">"
                && token.chars().all(|c| !c.is_whitespace() && !c.is_control() && c != '*' && c != '>')
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_topics_keep_their_hierarchy() {
        assert_eq!(encode_topic("com.example.add"), "com.example.add");
        assert_eq!(event_subject("orc", "arvo.orc.calc-avg_1"), "orc.t.arvo.orc.calc-avg_1");
    }

    #[test]
    fn forbidden_characters_are_escaped_and_round_trip() {
        for topic in [
            "a b",
            "*",
            ">",
            "a.*.>",
            "",
            ".",
            "a..b",
            ".a.",
            "~",
            "~20",
            "é.ü",
            "tab\there",
            "$JS.API",
            "a\r\nb",
        ] {
            let tokens = encode_topic(topic);
            for token in tokens.split('.') {
                assert!(!token.is_empty() && token != "*" && token != ">", "{topic:?} → {tokens:?}");
                assert!(
                    token.bytes().all(|b| is_plain(b) || b == b'~'),
                    "{topic:?} → {tokens:?}: only plain bytes and escapes"
                );
            }
            assert_eq!(decode_topic(&tokens).as_deref(), Some(topic), "{topic:?} → {tokens:?}");
            let subject = event_subject("p.q", topic);
            assert_eq!(topic_of_subject("p.q", &subject).as_deref(), Some(topic));
        }
        assert_eq!(encode_topic("a b"), "a~20b");
        assert_eq!(encode_topic("a..b"), "a.~.b");
    }

    #[test]
    fn distinct_topics_get_distinct_subjects_and_consumers() {
        let topics = ["a.b", "a~2Eb", "a_b", "a b", "a-b", "a..b", "a.~.b"];
        let subjects: std::collections::HashSet<_> = topics.iter().map(|t| encode_topic(t)).collect();
        assert_eq!(subjects.len(), topics.len());
        let consumers: std::collections::HashSet<_> = topics.iter().map(|t| consumer_name(Some(t))).collect();
        assert_eq!(consumers.len(), topics.len());
        for name in consumers {
            assert!(valid_stream_name(&name), "{name}");
        }
    }

    #[test]
    fn not_an_encoding_is_refused() {
        for tokens in ["a~2", "a~zz", "a~2e", "a..b", "a*b", "a b"] {
            assert_eq!(decode_topic(tokens), None, "{tokens:?}");
        }
        assert_eq!(topic_of_subject("p", "q.t.a"), None);
    }

    #[test]
    fn message_ids_separate_source_from_id() {
        assert_ne!(message_id("ab", "c"), message_id("a", "bc"));
        assert_eq!(message_id("a", "b"), message_id("a", "b"));
        assert_eq!(message_id("a", &"x".repeat(10_000)).len(), 32);
    }

    #[test]
    fn names_and_prefixes_are_checked() {
        assert!(valid_stream_name("ORCHESTRATOR"));
        assert!(!valid_stream_name("A.B") && !valid_stream_name("") && !valid_stream_name("a b"));
        assert!(valid_prefix("orchestrator") && valid_prefix("acme.orc"));
        assert!(!valid_prefix("a.*") && !valid_prefix("a..b") && !valid_prefix("") && !valid_prefix("a b"));
    }
}
