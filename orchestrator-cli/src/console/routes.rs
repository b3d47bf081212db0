//! The console's routes and handlers (all `GET`), and the guard every request passes: the
//! `Host` check and the security headers.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::extract::{Path, RawQuery, Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{Html, IntoResponse, Json, Response};
use axum::routing::get;
use orchestrator::event::time::format_utc;
use orchestrator::memory::WorkflowIndex;

use super::html::{self, escape};
use super::list::{self, ListQuery};
use super::workflow::WorkflowView;
use crate::error::CliError;
use crate::resolve::{Resolved, redact, resolve};
use crate::store::Store;

/// What the handlers share.
pub(crate) struct Console {
    store: Store,
    /// The store's location for messages (a URL's password hidden).
    location: String,
    /// The `Host` values accepted (empty: any, with `--allow-remote`).
    hosts: Vec<String>,
}

/// The stylesheet, inside the binary.
const CSS: &str = include_str!("assets/console.css");
/// The script (live refresh), inside the binary.
const JS: &str = include_str!("assets/console.js");

/// The Content-Security-Policy of every response: only this origin's script and stylesheet,
/// no inline script, no frame.
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; \
                   connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

/// The console's router over `store` (named `location`), served at `addr`; `remote`: any
/// `Host` is accepted.
pub(crate) fn router(store: Store, location: &str, addr: SocketAddr, remote: bool) -> Router {
    let port = addr.port();
    let hosts = if remote {
        Vec::new()
    } else {
        vec![
            format!("127.0.0.1:{port}"),
            format!("localhost:{port}"),
            format!("[::1]:{port}"),
            addr.to_string(),
        ]
    };
    let console = Arc::new(Console { store, location: redact(location), hosts });
    Router::new()
        .route("/", get(list_page))
        .route("/workflows/{id}", get(workflow_page))
        .route("/api/workflows", get(list_json))
        .route("/api/workflows/{id}", get(workflow_json))
        .route(
            "/assets/console.css",
            get(|| async { ([(header::CONTENT_TYPE, "text/css; charset=utf-8")], CSS) }),
        )
        .route(
            "/assets/console.js",
            get(|| async { ([(header::CONTENT_TYPE, "text/javascript; charset=utf-8")], JS) }),
        )
        .fallback(|| async { error(StatusCode::NOT_FOUND, "No such page.") })
        .layer(middleware::from_fn_with_state(Arc::clone(&console), guard))
        .with_state(console)
}

/// Refuses requests addressed to another host (DNS rebinding) and adds the security headers.
async fn guard(State(console): State<Arc<Console>>, request: Request, next: Next) -> Response {
    if !console.hosts.is_empty() {
        let host = request.headers().get(header::HOST).and_then(|h| h.to_str().ok()).unwrap_or_default();
        if !console.hosts.iter().any(|h| h == host) {
            return error(
                StatusCode::FORBIDDEN,
                "This console answers only requests addressed to its loopback address.",
            );
        }
    }
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP));
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// An error page (`message` is escaped).
fn error(status: StatusCode, message: &str) -> Response {
    let body = format!(
        "<h1>{}</h1><p class=\"error\">{}</p><p><a href=\"/\">All workflows</a></p>",
        status,
        escape(message)
    );
    (status, Html(html::page(status.canonical_reason().unwrap_or("Error"), &body))).into_response()
}

/// A store failure as a page.
fn failed(e: impl std::fmt::Display) -> Response {
    error(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string())
}

/// A failure to find a workflow: 404 when there is none, 400 for a malformed id.
fn not_resolved(e: &CliError) -> Response {
    match e {
        CliError::Usage(m) => error(StatusCode::BAD_REQUEST, m),
        CliError::Input(m) if m.starts_with("no workflow") => error(StatusCode::NOT_FOUND, m),
        other => failed(other),
    }
}

async fn list_data(
    console: &Console,
    raw: Option<&str>,
) -> Result<
    (ListQuery, list::Counts, orchestrator::memory::Page<orchestrator::memory::WorkflowSummary>),
    Response,
> {
    let query = ListQuery::parse(raw);
    let counts = list::counts(&console.store, &query).await.map_err(failed)?;
    let page = console.store.list(&query.filter()).await.map_err(failed)?;
    Ok((query, counts, page))
}

async fn list_page(State(console): State<Arc<Console>>, RawQuery(raw): RawQuery) -> Response {
    match list_data(&console, raw.as_deref()).await {
        Ok((query, counts, page)) => {
            let body = list::body(&query, &counts, &page.items, page.next.as_ref());
            Html(html::page("Workflows", &body)).into_response()
        }
        Err(response) => response,
    }
}

async fn list_json(State(console): State<Arc<Console>>, RawQuery(raw): RawQuery) -> Response {
    match list_data(&console, raw.as_deref()).await {
        Ok((query, counts, page)) if query.errors.is_empty() => {
            Json(list::json(&counts, &page.items, page.next.as_ref())).into_response()
        }
        Ok((query, ..)) => {
            (StatusCode::BAD_REQUEST, Json(serde_json::json!({ "errors": query.errors }))).into_response()
        }
        Err(response) => response,
    }
}

async fn find(console: &Console, id: &str) -> Result<Resolved, Response> {
    resolve(&console.store, &console.location, id).await.map_err(|e| not_resolved(&e))
}

async fn workflow_page(State(console): State<Arc<Console>>, Path(id): Path<String>) -> Response {
    let found = match find(&console, &id).await {
        Ok(found) => found,
        Err(response) => return response,
    };
    match WorkflowView::read(&console.store, found).await {
        Ok(view) => Html(html::page(&format!("Workflow {}", list::short(&view.found.id)), &view.body()))
            .into_response(),
        Err(e) => failed(e),
    }
}

async fn workflow_json(State(console): State<Arc<Console>>, Path(id): Path<String>) -> Response {
    let found = match find(&console, &id).await {
        Ok(found) => found,
        Err(response) => return response,
    };
    let view = match WorkflowView::read(&console.store, found).await {
        Ok(view) => view,
        Err(e) => return failed(e),
    };
    let last = view.entries.last();
    let mut doc = match &view.found.summary {
        Some(s) => crate::workflows_cmd::json(s),
        None => serde_json::json!({ "id": view.found.id, "listed": false }),
    };
    doc["active_states"] =
        last.map(|e| super::chart::active_paths(&e.record.state)).unwrap_or_default().into();
    doc["wake_at"] = last
        .and_then(|e| e.record.wake_at_ms)
        .map(|ms| format_utc(orchestrator::memory::from_unix_ms(ms)))
        .into();
    doc["children"] = view.children.iter().map(|c| c.id.clone()).collect::<Vec<_>>().into();
    doc["timeline"] = view
        .entries
        .iter()
        .map(|e| {
            serde_json::json!({
                "version": e.version,
                "at": format_utc(e.at),
                "consumed": e.consumed.as_ref().map(|c| c.r#type()),
                "produced": e.produced.iter().map(|p| p.r#type()).collect::<Vec<_>>(),
                "active_states": super::chart::active_paths(&e.record.state),
                "status": e.record.workflow_state().as_str(),
            })
        })
        .collect::<Vec<_>>()
        .into();
    Json(doc).into_response()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use std::path::Path as FsPath;

    use axum::body::Body;
    use axum::http::{Method, Request};
    use orchestrator::event::Event;
    use orchestrator::factory::EventFactory;
    use orchestrator::orchestration::{Orchestrator, WorkflowRecord};
    use orchestrator::runtime::Node;
    use orchestrator_examples::orders::{OrderFlow, OrderInput, OrderV1, services};
    use orchestrator_sqlite::SqliteMemory;
    use tower::ServiceExt;

    use super::*;

    const HOSTILE: &str = "<script>alert(1)</script>";

    /// Runs, on a durable node over a SQLite store at `db` (which records the chart), an order
    /// whose id is a script; returns its subject.
    async fn hostile_order(db: &FsPath) -> String {
        let store = Arc::new(SqliteMemory::<WorkflowRecord>::open_path(db).unwrap());
        let node = Node::builder(Arc::clone(&store))
            .durable()
            .client("com.test.console")
            .orchestrator(Orchestrator::builder(Arc::clone(&store)).machine::<OrderFlow>())
            .service(services::inventory().unwrap())
            .service(services::payment().unwrap())
            .service(services::shipping().unwrap())
            .without_timers()
            .build()
            .await
            .unwrap();
        let input =
            OrderInput { order_id: HOSTILE.into(), sku: "sku-1".into(), quantity: 1, amount_cents: 100 };
        let init =
            EventFactory::<OrderV1>::new().init(input, Event::builder().source("com.test.console")).unwrap();
        node.run(init.clone()).await.unwrap();
        node.shutdown().await;
        init.subject().to_owned()
    }

    async fn app(dir: &tempfile::TempDir) -> (Router, String) {
        let db = dir.path().join("store.sqlite");
        let subject = hostile_order(&db).await;
        let location = db.to_string_lossy().into_owned();
        let store = Store::open(&location, "orchestrator").await.unwrap();
        let addr: SocketAddr = "127.0.0.1:8080".parse().unwrap();
        (router(store, &location, addr, false), subject)
    }

    async fn call(
        app: &Router,
        method: Method,
        uri: &str,
        host: &str,
    ) -> (StatusCode, String, axum::http::HeaderMap) {
        let request =
            Request::builder().method(method).uri(uri).header("host", host).body(Body::empty()).unwrap();
        let response = app.clone().oneshot(request).await.unwrap();
        let status = response.status();
        let headers = response.headers().clone();
        let bytes = axum::body::to_bytes(response.into_body(), 10 << 20).await.unwrap();
        (status, String::from_utf8(bytes.to_vec()).unwrap(), headers)
    }

    async fn get(app: &Router, uri: &str) -> (StatusCode, String) {
        let (status, body, headers) = call(app, Method::GET, uri, "127.0.0.1:8080").await;
        assert_eq!(headers[header::CONTENT_SECURITY_POLICY], CSP);
        (status, body)
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn pages_escape_payloads_and_show_the_workflow() {
        let dir = tempfile::tempdir().unwrap();
        let (app, subject) = app(&dir).await;

        let (status, list) = get(&app, "/").await;
        assert_eq!(status, StatusCode::OK);
        assert!(list.contains("id=\"count-all\" href=\"/\">all <b>1</b>"), "{list}");
        assert!(list.contains("id=\"count-done\" href=\"/?status=done\">done <b>1</b>"), "{list}");
        assert!(list.contains(&html::workflow_href(&subject)), "{list}");
        let (_, filtered) = get(&app, "/?status=failed").await;
        assert!(filtered.contains("No workflow matches."), "{filtered}");

        let (status, page) = get(&app, &format!("/workflows/{}", html::encode(&subject))).await;
        assert_eq!(status, StatusCode::OK);
        assert!(!page.contains(HOSTILE), "the payload's script became markup");
        assert!(page.contains("&lt;script&gt;alert(1)&lt;/script&gt;"), "{page}");
        assert!(page.contains("<div class=\"state final active current\" data-state=\"shipped\">"), "{page}");
        assert!(page.contains("arvo.orc.shop.order"), "{page}");
        assert!(page.contains("<h2>Dead letters</h2><p class=\"empty\">None recorded.</p>"), "{page}");
        assert!(page.contains("No pending timer."), "{page}");
        // The only script is the console's own.
        assert_eq!(page.matches("<script").count(), 1, "{page}");

        // A short id finds it too.
        let short = list::short(&subject);
        let (status, by_short) = get(&app, &format!("/workflows/{short}")).await;
        assert_eq!(status, StatusCode::OK);
        assert!(by_short.contains(&escape(&subject)));
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn json_api_and_errors() {
        let dir = tempfile::tempdir().unwrap();
        let (app, subject) = app(&dir).await;
        let (status, text) = get(&app, "/api/workflows?status=done").await;
        assert_eq!(status, StatusCode::OK);
        let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(doc["counts"]["all"], 1);
        assert_eq!(doc["counts"]["done"], 1);
        assert_eq!(doc["workflows"][0]["id"], subject.as_str());
        let (status, text) = get(&app, &format!("/api/workflows/{}", html::encode(&subject))).await;
        assert_eq!(status, StatusCode::OK);
        let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(doc["active_states"], serde_json::json!(["shipped"]));
        assert_eq!(doc["timeline"][0]["consumed"], "arvo.orc.shop.order");

        let (status, text) = get(&app, "/api/workflows?status=sleeping").await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{text}");
        let (status, page) = get(&app, "/workflows/ffffffff").await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{page}");
        let (status, page) = get(&app, &format!("/workflows/{}", html::encode(HOSTILE))).await;
        assert!(status.is_client_error(), "{status}");
        assert!(!page.contains(HOSTILE), "{page}");
        let (status, _) = get(&app, "/nowhere").await;
        assert_eq!(status, StatusCode::NOT_FOUND);
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn read_only_loopback_and_local_assets() {
        let dir = tempfile::tempdir().unwrap();
        let (app, _) = app(&dir).await;
        for method in [Method::POST, Method::PUT, Method::DELETE, Method::PATCH] {
            let (status, ..) = call(&app, method.clone(), "/", "127.0.0.1:8080").await;
            assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED, "{method}");
        }
        let (status, ..) = call(&app, Method::GET, "/", "evil.example:8080").await;
        assert_eq!(status, StatusCode::FORBIDDEN);
        let (status, ..) = call(&app, Method::GET, "/", "localhost:8080").await;
        assert_eq!(status, StatusCode::OK);
        let (status, css) = get(&app, "/assets/console.css").await;
        assert_eq!(status, StatusCode::OK);
        assert!(css.contains(".state.current"));
        let (status, js) = get(&app, "/assets/console.js").await;
        assert_eq!(status, StatusCode::OK);
        assert!(js.contains("getElementById(\"live\")"));
        assert!(!css.contains("http") && !js.contains("http:") && !js.contains("https:"));
    }
}
