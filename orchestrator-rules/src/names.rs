//! The string rules Arvo applies to event types, domains, extension keys and names.
//!
//! Each check is a small hand-written scanner equivalent to Arvo's regular expression; no regex
//! engine runs on the hot path.

/// Arvo's event-type rule `^[a-z0-9]+(\.[a-z0-9]+)+\.[a-z0-9]+$`: lowercase alphanumeric segments
/// separated by dots, at least three segments (a reverse-DNS name).
///
/// ```
/// use orchestrator_rules::names::is_reverse_dns;
/// assert!(is_reverse_dns("com.calc.add"));
/// assert!(!is_reverse_dns("com.app"));
/// assert!(!is_reverse_dns("com.my-app.add"));
/// ```
pub fn is_reverse_dns(value: &str) -> bool {
    // One pass over the bytes: no empty segment (a leading, trailing or doubled dot).
    let mut segments = 1usize;
    let mut after_dot = true;
    for b in value.bytes() {
        if b == b'.' {
            if after_dot {
                return false;
            }
            segments += 1;
            after_dot = true;
        } else if is_lower_alnum(b) {
            after_dot = false;
        } else {
            return false;
        }
    }
    !after_dot && segments >= 3
}

/// Arvo's domain rule `^[a-z0-9.]+$` (non-empty).
pub fn is_domain(value: &str) -> bool {
    !value.is_empty() && value.bytes().all(|b| is_lower_alnum(b) || b == b'.')
}

/// CloudEvents extension-name rule `^[a-z0-9]+$` (non-empty).
pub fn is_extension_key(value: &str) -> bool {
    !value.is_empty() && value.bytes().all(is_lower_alnum)
}

/// Orchestrator-contract name rule `^[a-z0-9.]+$` (the same characters as a domain).
pub fn is_orchestrator_name(value: &str) -> bool {
    is_domain(value)
}

fn is_lower_alnum(b: u8) -> bool {
    b.is_ascii_lowercase() || b.is_ascii_digit()
}

/// Human-readable statement of the reverse-DNS rule, used in error messages.
pub const REVERSE_DNS_RULE: &str = "must be a reverse-DNS name: at least three dot-separated segments of lowercase letters and digits (^[a-z0-9]+(\\.[a-z0-9]+)+\\.[a-z0-9]+$)";
/// Human-readable statement of the domain rule.
pub const DOMAIN_RULE: &str =
    "must be non-empty and contain only lowercase letters, digits and dots (^[a-z0-9.]+$)";
/// Human-readable statement of the extension-key rule.
pub const EXTENSION_KEY_RULE: &str =
    "extension names must contain only lowercase letters and digits (^[a-z0-9]+$)";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reverse_dns() {
        for ok in ["com.calc.add", "a.b.c", "evt.calc.add.success", "arvo.orc.x", "1.2.3"] {
            assert!(is_reverse_dns(ok), "{ok}");
        }
        for bad in [
            "",
            "com",
            "com.app",
            "com..app",
            ".com.a.b",
            "com.a.b.",
            "Com.a.b",
            "com.a_b.c",
            "com.a-b.c",
            "com.a b.c",
        ] {
            assert!(!is_reverse_dns(bad), "{bad}");
        }
    }

    #[test]
    fn reverse_dns_agrees_with_the_segment_rule() {
        // Every string of up to 7 characters over `a1.-` against the rule stated per segment.
        fn by_segments(value: &str) -> bool {
            let segments: Vec<&str> = value.split('.').collect();
            segments.len() >= 3 && segments.iter().all(|s| !s.is_empty() && s.bytes().all(is_lower_alnum))
        }
        let alphabet = ['a', '1', '.', '-'];
        let mut words = vec![String::new()];
        for _ in 0..7 {
            words = words
                .iter()
                .flat_map(|w| alphabet.iter().map(move |c| format!("{w}{c}")))
                .chain(words.iter().cloned())
                .collect();
            words.sort();
            words.dedup();
        }
        for w in &words {
            assert_eq!(is_reverse_dns(w), by_segments(w), "{w:?}");
        }
    }

    #[test]
    fn domains_and_keys() {
        assert!(is_domain("human.interaction"));
        assert!(is_domain("external"));
        assert!(!is_domain(""));
        assert!(!is_domain("Human"));
        assert!(is_extension_key("myext1"));
        assert!(!is_extension_key("my-ext"));
        assert!(!is_extension_key("myExt"));
        assert!(!is_extension_key(""));
    }
}
