//! The operator's console on the admin listener: `GET /` is one server-rendered page of
//! generators, backends, traffic, migrations, sessions and this idgate's version and reloads;
//! `GET /console/section/NAME` renders one section again for the page's refresh. Everything
//! shown is read when a page or section is asked for, from what idgate publishes anyway (the
//! traffic ring is filled by a background task), so nobody looking costs the statement path
//! nothing. Off a loopback address the console asks for an admin user's credentials.

mod access;
pub mod escape;
pub mod page;
pub mod sections;
pub mod svg;
pub mod traffic_ring;

use std::sync::Arc;
use std::time::Duration;

use axum::extract::{ConnectInfo, Path, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;

use super::http_conn::Peer;
use super::ready::Checker;
use super::Control;
use sections::{about, backends, generators, migrations, sessions, traffic};
use traffic_ring::TrafficRing;

/// Longest wait for the migration jobs from the store.
const STORE_WAIT: Duration = Duration::from_secs(3);

/// The page's sections, in page order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Section {
    Generators,
    Backends,
    Traffic,
    Migrations,
    Sessions,
    About,
}

impl Section {
    pub const ALL: [Section; 6] = [
        Section::Generators,
        Section::Backends,
        Section::Traffic,
        Section::Migrations,
        Section::Sessions,
        Section::About,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Section::Generators => "generators",
            Section::Backends => "backends",
            Section::Traffic => "traffic",
            Section::Migrations => "migrations",
            Section::Sessions => "sessions",
            Section::About => "about",
        }
    }

    fn named(name: &str) -> Option<Section> {
        Section::ALL.into_iter().find(|s| s.name() == name)
    }
}

/// What the console reads.
pub struct Console {
    pub control: Arc<Control>,
    pub checker: Arc<Checker>,
    pub ring: Arc<TrafficRing>,
    /// The admin listener is on a loopback address: this host's users are trusted.
    pub loopback: bool,
}

pub fn router(console: Console) -> Router {
    Router::new()
        .route("/", get(page))
        .route("/console/section/{name}", get(section))
        .with_state(Arc::new(console))
}

async fn page(
    State(c): State<Arc<Console>>,
    ConnectInfo(Peer(peer)): ConnectInfo<Peer>,
    headers: HeaderMap,
) -> Response {
    if let Some(r) = access::refusal(&c, &headers, &peer) {
        return r;
    }
    use Section::*;
    let (g, b, t, m, s, a) = tokio::join!(
        render(&c, Generators),
        render(&c, Backends),
        render(&c, Traffic),
        render(&c, Migrations),
        render(&c, Sessions),
        render(&c, About),
    );
    let rendered = [
        (Generators, g),
        (Backends, b),
        (Traffic, t),
        (Migrations, m),
        (Sessions, s),
        (About, a),
    ];
    html(page::render(&rendered))
}

async fn section(
    State(c): State<Arc<Console>>,
    ConnectInfo(Peer(peer)): ConnectInfo<Peer>,
    Path(name): Path<String>,
    headers: HeaderMap,
) -> Response {
    if let Some(r) = access::refusal(&c, &headers, &peer) {
        return r;
    }
    match Section::named(&name) {
        Some(s) => html(render(&c, s).await),
        None => (
            StatusCode::NOT_FOUND,
            format!(
                "no console section `{}`; there are {}\n",
                name.chars().take(64).collect::<String>(),
                Section::ALL.map(|s| s.name()).join(", ")
            ),
        )
            .into_response(),
    }
}

fn html(body: String) -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CACHE_CONTROL, "no-store"),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
            // Only this page's own inline style and script; nothing from elsewhere.
            (
                header::CONTENT_SECURITY_POLICY,
                "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; \
                 connect-src 'self'; img-src data:; frame-ancestors 'none'",
            ),
        ],
        body,
    )
        .into_response()
}

/// One section's fragment, from what it reads now.
async fn render(c: &Console, s: Section) -> String {
    let proxy = &c.control.proxy;
    let mut out = String::new();
    match s {
        Section::Generators => {
            generators::render(&generators::gather(&proxy.idgen, &c.ring), &mut out)
        }
        Section::Backends => {
            let (rows, ready) =
                tokio::join!(super::backend_rows::rows(proxy), c.checker.check(proxy));
            backends::render(&backends::cap(rows, ready), &mut out)
        }
        Section::Traffic => traffic::render(
            &traffic::View {
                samples: c.ring.samples(),
            },
            &mut out,
        ),
        Section::Migrations => {
            let jobs = crate::migrate::status_rows::jobs(&c.control.migrations, None);
            let jobs = match tokio::time::timeout(STORE_WAIT, jobs).await {
                Ok(r) => r,
                Err(_) => Err(format!(
                    "the sequence store did not answer within {} s",
                    STORE_WAIT.as_secs()
                )),
            };
            migrations::render(&migrations::View { jobs }, &mut out)
        }
        Section::Sessions => sessions::render(
            &sessions::gather(
                proxy.sessions.rows(),
                super::slow_log::recent(),
                proxy.config.slow_statement_ms,
            ),
            &mut out,
        ),
        Section::About => about::render(&about::gather(&c.control), &mut out),
    }
    out
}

#[cfg(test)]
mod tests;
