//! Event timestamps: RFC 3339 with an explicit offset, generated in correct UTC.

/// The current time in UTC, as arvo-core formats it (`2025-01-31T12:34:56.789+00:00`), but really
/// in UTC (arvo-core writes local wall-clock time labelled `+00:00`).
pub fn now_utc() -> String {
    // chrono writes a UTC offset as `+00:00` unless asked for `Z`; this is the format
    // `%Y-%m-%dT%H:%M:%S%.3f+00:00` without parsing a format string for every event.
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, false)
}

/// `at` in UTC as RFC 3339 with milliseconds and `Z` (`2026-11-21T08:30:00.125Z`), for journals,
/// timelines and wake-up events.
pub fn format_utc(at: std::time::SystemTime) -> String {
    chrono::DateTime::<chrono::Utc>::from(at).to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// True when `value` is a date-time as zod's `datetime({ offset: true })` accepts it (what
/// arvo-core checks): `YYYY-MM-DDTHH:MM[:SS[.fraction]]` naming a real calendar date, followed by
/// `Z` or an offset `±HH:MM` / `±HHMM`.
pub fn is_valid_timestamp(value: &str) -> bool {
    let b = value.as_bytes();
    let num = |range: std::ops::Range<usize>| -> Option<u32> {
        let digits = b.get(range)?;
        digits
            .iter()
            .all(u8::is_ascii_digit)
            .then(|| digits.iter().fold(0, |n, d| n * 10 + u32::from(d - b'0')))
    };
    let (Some(year), Some(month), Some(day)) = (num(0..4), num(5..7), num(8..10)) else { return false };
    if b.get(4) != Some(&b'-') || b.get(7) != Some(&b'-') || b.get(10) != Some(&b'T') {
        return false;
    }
    let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    let days_in_month = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    if day == 0 || day > days_in_month {
        return false;
    }
    let (Some(hour), Some(minute)) = (num(11..13), num(14..16)) else { return false };
    if b.get(13) != Some(&b':') || hour > 23 || minute > 59 {
        return false;
    }
    let mut i = 16;
    if b.get(i) == Some(&b':') {
        match num(i + 1..i + 3) {
            Some(second) if second <= 59 => i += 3,
            _ => return false,
        }
        if b.get(i) == Some(&b'.') {
            let start = i + 1;
            i = start;
            while b.get(i).is_some_and(u8::is_ascii_digit) {
                i += 1;
            }
            if i == start {
                return false;
            }
        }
    }
    let offset = &b[i..];
    match offset {
        b"Z" => true,
        [sign, rest @ ..] if *sign == b'+' || *sign == b'-' => {
            let digits = |d: &[u8]| d.iter().all(u8::is_ascii_digit);
            match rest {
                [h1, h2, b':', m1, m2] | [h1, h2, m1, m2] => digits(&[*h1, *h2, *m1, *m2]),
                _ => false,
            }
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_time_is_valid_utc() {
        let t = now_utc();
        assert!(is_valid_timestamp(&t), "{t}");
        assert!(t.ends_with("+00:00"));
        let parsed = chrono::DateTime::parse_from_rfc3339(&t).unwrap();
        let drift = (chrono::Utc::now() - parsed.to_utc()).num_seconds().abs();
        assert!(drift < 5, "generated time must be UTC now, drift {drift}s");
    }

    #[test]
    fn generated_time_has_arvo_format() {
        let instants =
            [(0, 0), (1_643_723_400, 123_456_789), (1_700_000_000, 999_999_999), (951_782_400, 1_000_000)];
        for now in instants
            .map(|(s, n)| chrono::DateTime::from_timestamp(s, n).unwrap())
            .into_iter()
            .chain([chrono::Utc::now()])
        {
            let ours = now.to_rfc3339_opts(chrono::SecondsFormat::Millis, false);
            assert_eq!(ours, now.format("%Y-%m-%dT%H:%M:%S%.3f+00:00").to_string());
        }
        let t = now_utc();
        assert_eq!(t.len(), "2025-01-31T12:34:56.789+00:00".len(), "{t}");
    }

    #[test]
    fn accepts_and_rejects() {
        for ok in [
            "2024-01-01T00:00:00Z",
            "2024-01-01T00:00:00.123+05:30",
            "2024-02-29T23:59:59-08:00",
            "2024-01-01T00:00:00+0530",
            "2024-01-01T12:30+05:30",
            "2000-02-29T00:00:00.123456789Z",
        ] {
            assert!(is_valid_timestamp(ok), "{ok}");
        }
        for bad in [
            "2024-01-01T00:00:00",
            "2024-01-01 00:00:00Z",
            "2024-13-01T00:00:00Z",
            "2023-02-29T00:00:00Z",
            "2024-01-01T00:00:00.Z",
            "2024-01-01T00:00:00+05",
            "2024-01-01t00:00:00Z",
            "2024-01-01T00:00:00z",
            "2024-01-01T24:00:00Z",
            "2024-01-01T00:00:60Z",
            "2024-02-30T00:00:00Z",
            "1900-02-29T00:00:00Z",
            "yesterday",
            "",
        ] {
            assert!(!is_valid_timestamp(bad), "{bad}");
        }
    }
}
