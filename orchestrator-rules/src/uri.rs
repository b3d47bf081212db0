//! URI encoding exactly as JavaScript's `encodeURI` / `decodeURI`, and Arvo's `validateURI`.
//!
//! Arvo requires `source`, `subject`, `to`, `redirectto` and `dataschema` to be *properly encoded URIs*:
//! a value `v` is valid when `v == encodeURI(decodeURI(v))`. Arvo's `createArvoEvent` then runs
//! `encodeURI` on values that are already encoded, so `a%20b` becomes `a%2520b`. We never do that:
//! [`encode_uri_once`] encodes a value only when it is not already a valid encoded URI.
//!
//! ```
//! use orchestrator_rules::uri::{encode_uri, encode_uri_once, is_valid_uri};
//! assert_eq!(encode_uri("a b"), "a%20b");
//! assert!(is_valid_uri("a%20b"));
//! assert!(!is_valid_uri("100%"));
//! assert_eq!(encode_uri_once("a%20b"), "a%20b"); // no double encoding
//! assert_eq!(encode_uri_once("a b"), "a%20b");
//! ```

use std::borrow::Cow;

/// Characters `encodeURI` leaves as they are, besides ASCII letters and digits.
const UNESCAPED_MARKS: &[u8] = b";,/?:@&=+$-_.!~*'()#";
/// Characters whose escape sequences `decodeURI` keeps escaped.
const RESERVED: &[u8] = b";/?:@&=+$,#";

/// `UNESCAPED[b]`: whether `encodeURI` leaves byte `b` as it is (a table, so that checking a long
/// value costs one load per byte).
const UNESCAPED: [bool; 256] = {
    let mut table = [false; 256];
    let mut b = 0;
    while b < 256 {
        table[b] = (b as u8).is_ascii_alphanumeric();
        b += 1;
    }
    let mut i = 0;
    while i < UNESCAPED_MARKS.len() {
        table[UNESCAPED_MARKS[i] as usize] = true;
        i += 1;
    }
    table
};

fn is_unescaped(b: u8) -> bool {
    UNESCAPED[b as usize]
}

/// JavaScript's `encodeURI`: percent-encodes every byte of the UTF-8 form except letters, digits
/// and `;,/?:@&=+$-_.!~*'()#`.
pub fn encode_uri(value: &str) -> String {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    let mut out = String::with_capacity(value.len());
    for &b in value.as_bytes() {
        if is_unescaped(b) {
            out.push(b as char);
        } else {
            out.push('%');
            out.push(HEX[(b >> 4) as usize] as char);
            out.push(HEX[(b & 0x0f) as usize] as char);
        }
    }
    out
}

/// Why [`decode_uri`] refused a value (JavaScript throws `URIError: URI malformed`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UriError {
    /// Byte offset of the offending escape sequence.
    pub position: usize,
    /// What is wrong there.
    pub reason: &'static str,
}

impl std::fmt::Display for UriError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "URI malformed at byte {}: {}", self.position, self.reason)
    }
}

impl std::error::Error for UriError {}

fn hex_val(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

fn escaped_byte(bytes: &[u8], at: usize) -> Result<u8, UriError> {
    let malformed = UriError { position: at, reason: "'%' must be followed by two hex digits" };
    if bytes.get(at) != Some(&b'%') {
        return Err(UriError { position: at, reason: "incomplete UTF-8 escape sequence" });
    }
    let hi = bytes.get(at + 1).copied().and_then(hex_val).ok_or(malformed.clone())?;
    let lo = bytes.get(at + 2).copied().and_then(hex_val).ok_or(malformed)?;
    Ok(hi << 4 | lo)
}

/// JavaScript's `decodeURI`: decodes escape sequences, except those of reserved characters
/// (`;/?:@&=+$,#`), which stay escaped. Malformed sequences are an error, as in JavaScript.
pub fn decode_uri(value: &str) -> Result<Cow<'_, str>, UriError> {
    if !value.contains('%') {
        return Ok(Cow::Borrowed(value));
    }
    let bytes = value.as_bytes();
    let mut out: Vec<u8> = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'%' {
            out.push(bytes[i]);
            i += 1;
            continue;
        }
        let first = escaped_byte(bytes, i)?;
        if first < 0x80 {
            if RESERVED.contains(&first) {
                out.extend_from_slice(&bytes[i..i + 3]);
            } else {
                out.push(first);
            }
            i += 3;
            continue;
        }
        let len = match first {
            0xC2..=0xDF => 2,
            0xE0..=0xEF => 3,
            0xF0..=0xF4 => 4,
            _ => return Err(UriError { position: i, reason: "invalid UTF-8 lead byte" }),
        };
        let mut seq = [first, 0, 0, 0];
        for (k, slot) in seq.iter_mut().enumerate().take(len).skip(1) {
            *slot = escaped_byte(bytes, i + 3 * k)?;
        }
        let decoded = std::str::from_utf8(&seq[..len])
            .map_err(|_| UriError { position: i, reason: "escape sequence is not valid UTF-8" })?;
        out.extend_from_slice(decoded.as_bytes());
        i += 3 * len;
    }
    // Only complete UTF-8 sequences were inserted into a valid UTF-8 string.
    String::from_utf8(out)
        .map(Cow::Owned)
        .map_err(|_| UriError { position: 0, reason: "decoded value is not valid UTF-8" })
}

/// Arvo's `validateURI`: `value == encodeURI(decodeURI(value))`, false when decoding fails.
pub fn is_valid_uri(value: &str) -> bool {
    if value.bytes().all(is_unescaped) {
        return true;
    }
    match decode_uri(value) {
        Ok(decoded) => encode_uri(&decoded) == value,
        Err(_) => false,
    }
}

/// Encodes `value` with [`encode_uri`] unless it already is a valid encoded URI, so a value is
/// never encoded twice (unlike Arvo's `createArvoEvent`).
pub fn encode_uri_once(value: &str) -> Cow<'_, str> {
    if is_valid_uri(value) { Cow::Borrowed(value) } else { Cow::Owned(encode_uri(value)) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_like_javascript() {
        assert_eq!(encode_uri("a b"), "a%20b");
        assert_eq!(encode_uri("é"), "%C3%A9");
        assert_eq!(encode_uri("100%"), "100%25");
        assert_eq!(encode_uri("http://x/y?a=b&c=d#f"), "http://x/y?a=b&c=d#f");
        assert_eq!(encode_uri("[]{}|\\^`\""), "%5B%5D%7B%7D%7C%5C%5E%60%22");
        assert_eq!(encode_uri("😀"), "%F0%9F%98%80");
    }

    #[test]
    fn decodes_like_javascript() {
        assert_eq!(decode_uri("a%20b").unwrap(), "a b");
        assert_eq!(decode_uri("%23").unwrap(), "%23", "reserved characters stay escaped");
        assert_eq!(decode_uri("%C3%A9").unwrap(), "é");
        assert!(decode_uri("%").is_err());
        assert!(decode_uri("%zz").is_err());
        assert!(decode_uri("%C3").is_err());
        assert!(decode_uri("%FF").is_err());
        assert!(decode_uri("%ED%A0%80").is_err(), "surrogates are not valid UTF-8");
    }

    #[test]
    fn validates_like_arvo() {
        assert!(is_valid_uri("com.example.source"));
        assert!(is_valid_uri("a%20b"));
        assert!(!is_valid_uri("a b"));
        assert!(!is_valid_uri("%"));
        assert!(!is_valid_uri("%23"), "decodeURI keeps %23, encodeURI then escapes the %");
        assert!(!is_valid_uri("é"));
    }

    #[test]
    fn the_table_is_encode_uri_unescaped_set() {
        for b in 0..=u8::MAX {
            assert_eq!(is_unescaped(b), b.is_ascii_alphanumeric() || UNESCAPED_MARKS.contains(&b), "{b}");
        }
    }

    #[test]
    fn encodes_once() {
        assert_eq!(encode_uri_once("a b"), "a%20b");
        assert_eq!(encode_uri_once("a%20b"), "a%20b");
        assert_eq!(encode_uri_once("50%"), "50%25");
    }
}
