//! Writing results to the command's output: lines and JSON documents.

use std::io::Write;

use serde_json::Value;

use crate::error::CliError;

/// How JSON documents are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum JsonStyle {
    /// Indented over several lines (the default).
    Pretty,
    /// On one line, with no whitespace.
    Compact,
}

impl JsonStyle {
    /// [`JsonStyle::Compact`] when `compact` is set, else [`JsonStyle::Pretty`].
    pub(crate) fn from_compact_flag(compact: bool) -> Self {
        if compact { Self::Compact } else { Self::Pretty }
    }
}

/// Writes `text` followed by a newline.
pub(crate) fn write_line(out: &mut dyn Write, text: &str) -> Result<(), CliError> {
    writeln!(out, "{text}").map_err(CliError::output)
}

/// Writes a JSON value in `style`, followed by a newline. Objects keep their key order (serde_json
/// preserves insertion order in this workspace).
pub(crate) fn write_json(out: &mut dyn Write, value: &Value, style: JsonStyle) -> Result<(), CliError> {
    let text = match style {
        JsonStyle::Pretty => serde_json::to_string_pretty(value),
        JsonStyle::Compact => serde_json::to_string(value),
    }
    .map_err(|e| CliError::Input(format!("cannot render JSON: {e}")))?;
    write_line(out, &text)
}

/// Writes a JSON value pretty-printed, followed by a newline.
pub(crate) fn write_pretty(out: &mut dyn Write, value: &Value) -> Result<(), CliError> {
    write_json(out, value, JsonStyle::Pretty)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_both_styles() {
        let value = serde_json::json!({"b": 1, "a": [true]});
        let mut out = Vec::new();
        write_json(&mut out, &value, JsonStyle::Compact).expect("write");
        write_pretty(&mut out, &value).expect("write");
        let text = String::from_utf8(out).expect("utf-8");
        assert_eq!(text, "{\"b\":1,\"a\":[true]}\n{\n  \"b\": 1,\n  \"a\": [\n    true\n  ]\n}\n");
    }
}
