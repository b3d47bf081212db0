//! HTML: the one escaping function every piece of stored content goes through, URL encoding,
//! and the page layout.

use std::fmt::Write as _;
use std::time::SystemTime;

use orchestrator::event::time::format_utc;

/// `text` as HTML text or a quoted attribute value: `&`, `<`, `>`, `"` and `'` become character
/// references, so stored content (event payloads, ids, meta) can never become markup.
pub(crate) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// `text` percent-encoded for a URL's path segment or query value (everything but the
/// unreserved characters `A-Z a-z 0-9 - . _ ~`).
pub(crate) fn encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

/// The link to a workflow's page (its full id, encoded), as an escaped attribute value.
pub(crate) fn workflow_href(id: &str) -> String {
    escape(&format!("/workflows/{}", encode(id)))
}

/// A time as the console shows it (RFC 3339, UTC, milliseconds), escaped, in a `<time>`.
pub(crate) fn time(at: SystemTime) -> String {
    let text = escape(&format_utc(at));
    format!("<time datetime=\"{text}\">{text}</time>")
}

/// A status badge: `<span class="status status-done">done</span>`.
pub(crate) fn status(name: &str) -> String {
    let name = escape(name);
    format!("<span class=\"status status-{name}\">{name}</span>")
}

/// A whole page: `title` (text, escaped here) and `body` (markup, already escaped). The
/// stylesheet and the script come from the binary (`/assets/…`): the console needs nothing
/// else.
pub(crate) fn page(title: &str, body: &str) -> String {
    let title = escape(title);
    format!(
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{title} · orchestrator console</title>\n\
         <link rel=\"stylesheet\" href=\"/assets/console.css\">\n\
         <script src=\"/assets/console.js\" defer></script>\n</head>\n<body>\n\
         <header><a class=\"brand\" href=\"/\">orchestrator console</a>\
         <span class=\"readonly\">read-only</span></header>\n<main>\n{body}\n</main>\n</body>\n</html>\n"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_in_content_stays_text() {
        assert_eq!(escape("<script>alert(1)</script>"), "&lt;script&gt;alert(1)&lt;/script&gt;");
        assert_eq!(escape("a & b"), "a &amp; b");
        assert_eq!(escape("\"x\" 'y'"), "&quot;x&quot; &#39;y&#39;");
        assert_eq!(escape("plain ünïcode"), "plain ünïcode");
        assert_eq!(escape("&lt;"), "&amp;lt;", "escaping is not idempotent: it is applied once");
    }

    #[test]
    fn attributes_cannot_be_broken_out_of() {
        let hostile = "\" onmouseover=\"alert(1)";
        let attr = format!("<a title=\"{}\">", escape(hostile));
        assert_eq!(attr, "<a title=\"&quot; onmouseover=&quot;alert(1)\">");
    }

    #[test]
    fn urls_are_percent_encoded() {
        assert_eq!(encode("a b/c?d=e&f"), "a%20b%2Fc%3Fd%3De%26f");
        assert_eq!(encode("Az09-._~"), "Az09-._~");
        assert_eq!(encode("é"), "%C3%A9");
        assert_eq!(workflow_href("x\"<y>"), "/workflows/x%22%3Cy%3E");
    }

    #[test]
    fn the_title_is_escaped_and_assets_are_local() {
        let html = page("<b>", "<p>body</p>");
        assert!(html.contains("<title>&lt;b&gt; · orchestrator console</title>"), "{html}");
        assert!(!html.contains("http://") && !html.contains("https://"), "{html}");
    }
}
