//! The list of workflows: its filters (from the query string), counts per status, a page of
//! workflows, as HTML or JSON.

use std::time::SystemTime;

use orchestrator::memory::{
    WorkflowCursor, WorkflowFilter, WorkflowIndex, WorkflowState, WorkflowSummary, from_unix_ms, unix_ms,
};

use super::html::{self, encode, escape};
use crate::store::Store;
use crate::workflows_cmd::{orchestrator_at, parse_since};

/// How many workflows a page lists unless `limit` says otherwise.
pub(crate) const PAGE_SIZE: usize = 50;
/// The most workflows a page lists.
const MAX_PAGE_SIZE: usize = 500;

/// The statuses, in the order the console shows them.
pub(crate) const STATUSES: [WorkflowState; 5] = [
    WorkflowState::Active,
    WorkflowState::Waiting,
    WorkflowState::Done,
    WorkflowState::Failed,
    WorkflowState::Cancelled,
];

/// The list's filters, as the query string gives them: `status`, `orchestrator`, `meta`
/// (`k=v`, several separated by commas, or repeated), `since` (RFC 3339 or an age: `30m`,
/// `12h`, `7d`), `limit` (workflows per page, 1 to 500; 50 by default) and `after` (the cursor
/// of the next page: `UNIX_MS:ID`).
#[derive(Debug, Default, Clone)]
pub(crate) struct ListQuery {
    pub(crate) status: Option<WorkflowState>,
    pub(crate) orchestrator: Option<String>,
    pub(crate) meta: Vec<(String, String)>,
    pub(crate) since_text: Option<String>,
    pub(crate) since: Option<SystemTime>,
    pub(crate) after: Option<WorkflowCursor>,
    /// Workflows per page (`None`: [`PAGE_SIZE`]).
    pub(crate) limit: Option<usize>,
    /// What could not be understood (shown above the list, which ignores it).
    pub(crate) errors: Vec<String>,
}

impl ListQuery {
    /// Reads a raw query string (`None`: no filter).
    pub(crate) fn parse(raw: Option<&str>) -> Self {
        let mut q = Self::default();
        for (key, value) in pairs(raw.unwrap_or_default()) {
            let value = value.trim().to_owned();
            if value.is_empty() {
                continue;
            }
            match key.as_str() {
                "status" => match WorkflowState::parse(&value) {
                    Some(status) => q.status = Some(status),
                    None => q.errors.push(format!("`{value}` is not a status")),
                },
                "orchestrator" => q.orchestrator = Some(value),
                "meta" => {
                    for item in value.split(',').map(str::trim).filter(|s| !s.is_empty()) {
                        match crate::subject_cmd::parse_meta(item) {
                            Ok(pair) => q.meta.push(pair),
                            Err(e) => q.errors.push(e),
                        }
                    }
                }
                "since" => match parse_since(&value) {
                    Ok(at) => {
                        q.since = Some(at);
                        q.since_text = Some(value);
                    }
                    Err(e) => q.errors.push(e),
                },
                "limit" => match value.parse::<usize>() {
                    Ok(n) if (1..=MAX_PAGE_SIZE).contains(&n) => q.limit = Some(n),
                    _ => q.errors.push(format!("`{value}` is not a page size (1 to {MAX_PAGE_SIZE})")),
                },
                "after" => match value.split_once(':').and_then(|(ms, id)| Some((ms.parse().ok()?, id))) {
                    Some((ms, id)) => {
                        q.after = Some(WorkflowCursor { created_at: from_unix_ms(ms), id: id.to_owned() })
                    }
                    None => q.errors.push(format!("`{value}` is not a page cursor")),
                },
                _ => {}
            }
        }
        q
    }

    /// The store's filter (with `status`, which [`counts`] replaces).
    pub(crate) fn filter(&self) -> WorkflowFilter {
        let mut filter = WorkflowFilter {
            orchestrator: self.orchestrator.clone(),
            status: self.status,
            meta: self.meta.clone(),
            limit: self.limit.unwrap_or(PAGE_SIZE),
            after: self.after.clone(),
            ..WorkflowFilter::new()
        };
        filter.created.since = self.since;
        filter
    }

    /// The query string of these filters, with `status` replaced and without the cursor.
    fn query_with_status(&self, status: Option<WorkflowState>) -> String {
        let mut parts = Vec::new();
        if let Some(status) = status {
            parts.push(format!("status={}", status.as_str()));
        }
        if let Some(o) = &self.orchestrator {
            parts.push(format!("orchestrator={}", encode(o)));
        }
        if !self.meta.is_empty() {
            let meta: Vec<String> = self.meta.iter().map(|(k, v)| format!("{k}={v}")).collect();
            parts.push(format!("meta={}", encode(&meta.join(","))));
        }
        if let Some(since) = &self.since_text {
            parts.push(format!("since={}", encode(since)));
        }
        if let Some(limit) = self.limit {
            parts.push(format!("limit={limit}"));
        }
        if parts.is_empty() { String::new() } else { format!("?{}", parts.join("&")) }
    }
}

/// The `key=value` pairs of a query string, percent-decoded (`+` is a space).
pub(crate) fn pairs(raw: &str) -> Vec<(String, String)> {
    raw.split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (decode(k), decode(v))
        })
        .collect()
}

/// Percent-decodes a query component (`+` is a space; invalid escapes are kept as they are).
fn decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                match std::str::from_utf8(&bytes[i + 1..i + 3])
                    .ok()
                    .and_then(|h| u8::from_str_radix(h, 16).ok())
                {
                    Some(b) => {
                        out.push(b);
                        i += 2;
                    }
                    None => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// How many workflows match the filters, in all and per status (the `status` filter aside).
#[derive(Debug, Clone)]
pub(crate) struct Counts {
    pub(crate) total: u64,
    pub(crate) per_status: Vec<(WorkflowState, u64)>,
}

/// Counts the workflows matching `query`'s filters, per status.
pub(crate) async fn counts(
    store: &Store,
    query: &ListQuery,
) -> Result<Counts, orchestrator::memory::MemoryError> {
    let mut filter = query.filter();
    filter.after = None;
    filter.status = None;
    let total = store.count(&filter).await?;
    let mut per_status = Vec::new();
    for status in STATUSES {
        filter.status = Some(status);
        per_status.push((status, store.count(&filter).await?));
    }
    Ok(Counts { total, per_status })
}

/// The cursor of the next page as the `after` parameter: `UNIX_MS:ID`.
pub(crate) fn cursor_text(cursor: &WorkflowCursor) -> String {
    format!("{}:{}", unix_ms(cursor.created_at), cursor.id)
}

/// The list page's body: the filter form, then the live part ([`live`]).
pub(crate) fn body(
    query: &ListQuery,
    counts: &Counts,
    items: &[WorkflowSummary],
    next: Option<&WorkflowCursor>,
) -> String {
    let value = |v: Option<&str>| escape(v.unwrap_or_default());
    let meta: Vec<String> = query.meta.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let mut options = String::from("<option value=\"\">any</option>");
    for status in STATUSES {
        let selected = if query.status == Some(status) { " selected" } else { "" };
        options.push_str(&format!("<option value=\"{0}\"{selected}>{0}</option>", status.as_str()));
    }
    let errors: String =
        query.errors.iter().map(|e| format!("<p class=\"error\">{}</p>", escape(e))).collect();
    format!(
        "<h1>Workflows</h1>\n\
         <form id=\"filters\" class=\"filters\" method=\"get\" action=\"/\">\
         <label>status <select name=\"status\" id=\"filter-status\">{options}</select></label> \
         <label>orchestrator <input name=\"orchestrator\" id=\"filter-orchestrator\" value=\"{}\" placeholder=\"arvo.orc.shop.order\"></label> \
         <label>meta <input name=\"meta\" id=\"filter-meta\" value=\"{}\" placeholder=\"tenant=acme\"></label> \
         <label>since <input name=\"since\" id=\"filter-since\" value=\"{}\" placeholder=\"1h, 7d or RFC 3339\"></label> \
         <button type=\"submit\" id=\"filter-apply\">Filter</button> <a href=\"/\">clear</a></form>\n{errors}\
         <div id=\"live\" data-refresh=\"2000\">{}</div>",
        value(query.orchestrator.as_deref()),
        escape(&meta.join(", ")),
        value(query.since_text.as_deref()),
        live(query, counts, items, next),
    )
}

/// The part of the list page that refreshes: the counts, the table, the next page's link.
fn live(
    query: &ListQuery,
    counts: &Counts,
    items: &[WorkflowSummary],
    next: Option<&WorkflowCursor>,
) -> String {
    let mut out = String::from("<nav class=\"counts\" id=\"counts\">");
    let tab = |status: Option<WorkflowState>, count: u64| {
        let name = status.map_or("all", WorkflowState::as_str);
        let selected = if query.status == status { " selected" } else { "" };
        format!(
            "<a class=\"count count-{name}{selected}\" id=\"count-{name}\" href=\"/{}\">{name} <b>{count}</b></a>",
            escape(&query.query_with_status(status))
        )
    };
    out.push_str(&tab(None, counts.total));
    for (status, count) in &counts.per_status {
        out.push_str(&tab(Some(*status), *count));
    }
    out.push_str("</nav>\n");
    if items.is_empty() {
        out.push_str("<p class=\"empty\">No workflow matches.</p>");
        return out;
    }
    out.push_str(
        "<table class=\"workflows\" id=\"workflows\"><thead><tr><th>id</th><th>orchestrator</th><th>status</th>\
         <th>created</th><th>updated</th><th>initiator</th><th>meta</th><th>parent</th></tr></thead><tbody>",
    );
    for s in items {
        let parent = s.parent.as_deref().map_or_else(
            || "-".to_owned(),
            |p| format!("<a href=\"{}\">{}</a>", html::workflow_href(p), escape(&short(p))),
        );
        out.push_str(&format!(
            "<tr class=\"workflow\" data-id=\"{}\" data-status=\"{}\"><td><a class=\"open\" href=\"{}\"><code>{}</code></a></td>\
             <td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{parent}</td></tr>",
            escape(&s.id),
            s.status.as_str(),
            html::workflow_href(&s.id),
            escape(s.short_id()),
            escape(&orchestrator_at(s)),
            html::status(s.status.as_str()),
            html::time(s.created_at),
            html::time(s.updated_at),
            escape(s.initiator.as_deref().unwrap_or("-")),
            escape(&meta_text(s)),
        ));
    }
    out.push_str("</tbody></table>");
    if let Some(next) = next {
        let base = query.query_with_status(query.status);
        let sep = if base.is_empty() { "?" } else { "&" };
        out.push_str(&format!(
            "<p class=\"more\"><a id=\"next-page\" href=\"/{}\">next page →</a></p>",
            escape(&format!("{base}{sep}after={}", encode(&cursor_text(next))))
        ));
    }
    out
}

/// A workflow's meta as `k=v, k2=v2` (`-` when it has none).
fn meta_text(s: &WorkflowSummary) -> String {
    if s.meta.is_empty() {
        return "-".to_owned();
    }
    s.meta.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(", ")
}

/// A workflow id's short form for links: the first 8 characters of its execution id when the
/// id is a subject, else the id.
pub(crate) fn short(id: &str) -> String {
    orchestrator::memory::SubjectColumns::parse(id)
        .map_or_else(|| id.to_owned(), |c| c.execution_id.chars().take(8).collect())
}

/// The list as JSON: `{"counts": {"all", "active", …}, "workflows": [...], "next": cursor|null}`.
pub(crate) fn json(
    counts: &Counts,
    items: &[WorkflowSummary],
    next: Option<&WorkflowCursor>,
) -> serde_json::Value {
    let mut c = serde_json::Map::new();
    c.insert("all".into(), counts.total.into());
    for (status, n) in &counts.per_status {
        c.insert(status.as_str().into(), (*n).into());
    }
    serde_json::json!({
        "counts": c,
        "workflows": items.iter().map(crate::workflows_cmd::json).collect::<Vec<_>>(),
        "next": next.map(cursor_text),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_query_string_is_read() {
        let q = ListQuery::parse(Some(
            "status=done&orchestrator=arvo.orc.shop.order&meta=tenant%3Dacme%2C+x%3Dy&since=1h&after=1000%3Aabc",
        ));
        assert_eq!(q.status, Some(WorkflowState::Done));
        assert_eq!(q.orchestrator.as_deref(), Some("arvo.orc.shop.order"));
        assert_eq!(q.meta, [("tenant".to_owned(), "acme".to_owned()), ("x".to_owned(), "y".to_owned())]);
        assert!(q.since.is_some());
        assert_eq!(q.after.as_ref().map(|c| c.id.as_str()), Some("abc"));
        assert!(q.errors.is_empty(), "{:?}", q.errors);
        assert_eq!(
            q.query_with_status(None),
            "?orchestrator=arvo.orc.shop.order&meta=tenant%3Dacme%2Cx%3Dy&since=1h"
        );
    }

    #[test]
    fn bad_filters_are_reported_not_applied() {
        let q = ListQuery::parse(Some("status=sleeping&since=yesterday&meta=novalue&status="));
        assert_eq!(q.status, None);
        assert_eq!(q.errors.len(), 3, "{:?}", q.errors);
    }

    #[test]
    fn percent_decoding() {
        assert_eq!(decode("a%20b+c%3C%zz%"), "a b c<%zz%");
        assert_eq!(decode("%C3%A9"), "é");
    }
}
