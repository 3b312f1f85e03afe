//! The ID service over HTTP. Meituan Leaf's paths answer as Leaf does (the id as plain text,
//! HTTP 500 with Spring's error body when no id can be given), so Leaf clients switch by
//! changing the address; `/ids/{generator}?count=n` hands out a contiguous block as JSON.
//! Every request authenticates with HTTP Basic as an idgate user whose generator rights apply;
//! with `id_service.anonymous_user` (a loopback listener only) a request without credentials,
//! as Leaf's clients send, gets that user's rights.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{ConnectInfo, Path, Query, State};
use axum::http::{header, HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde_json::json;

use super::http_conn::Peer;
use super::ids::{self, IdError};
use crate::config::User;
use crate::idgen::IdBlock;
use crate::metrics::IdServiceLabels;
use crate::proxy::Proxy;

struct HttpState {
    proxy: Arc<Proxy>,
    max_count: u64,
}

pub fn router(proxy: Arc<Proxy>, max_count: u64) -> Router {
    Router::new()
        .route("/api/segment/get/{tag}", get(leaf_segment))
        .route("/api/snowflake/get/{key}", get(leaf_snowflake))
        .route("/ids/{generator}", get(block))
        .with_state(Arc::new(HttpState { proxy, max_count }))
}

/// A refusal before any generator is asked.
enum Refusal {
    /// No or wrong credentials.
    Unauthenticated(&'static str),
    /// The client's host failed to log in too often (on any listener) and must wait this long.
    Throttled(Duration),
    Id(IdError),
}

impl HttpState {
    fn count(&self, outcome: &'static str) {
        self.proxy
            .metrics
            .id_service_requests
            .get_or_create(&IdServiceLabels {
                protocol: "http",
                outcome,
            })
            .inc();
    }

    /// The user named by the request's Basic credentials, under the login throttle shared with
    /// the MySQL port and the Redis protocol.
    fn caller(&self, headers: &HeaderMap, peer: &SocketAddr) -> Result<User, Refusal> {
        let host = peer.ip().to_string();
        let throttle = &self.proxy.auth_throttle;
        if let Some(wait) = throttle.wait(&host) {
            return Err(Refusal::Throttled(wait));
        }
        let r = self.credentials(headers);
        match &r {
            Ok(_) => throttle.succeeded(&host),
            // A request without credentials is a question, not a guess.
            Err(_) if headers.contains_key(header::AUTHORIZATION) => throttle.failed(&host),
            Err(_) => {}
        }
        r
    }

    fn credentials(&self, headers: &HeaderMap) -> Result<User, Refusal> {
        let Some(value) = headers.get(header::AUTHORIZATION) else {
            // Leaf's clients send no credentials: an opted-in user's rights apply to them.
            let anonymous = self
                .proxy
                .config
                .id_service
                .as_ref()
                .and_then(|s| s.anonymous_user.as_deref());
            if let Some(user) = anonymous.and_then(|name| self.proxy.user(name.as_bytes())) {
                return Ok(user);
            }
            return Err(Refusal::Unauthenticated(
                "send the credentials of an idgate user with HTTP Basic authentication",
            ));
        };
        let bad = Refusal::Unauthenticated("wrong user name or password");
        let (user, password) = super::auth::basic(value).map_err(Refusal::Unauthenticated)?;
        super::auth::check(&self.proxy, &user, &password).ok_or(bad)
    }

    async fn serve(
        &self,
        headers: &HeaderMap,
        peer: &SocketAddr,
        generator: &str,
        n: u64,
    ) -> Result<IdBlock, Refusal> {
        let user = self.caller(headers, peer)?;
        ids::take(&self.proxy, &user, generator, n)
            .await
            .map_err(Refusal::Id)
    }

    fn record(&self, r: &Result<IdBlock, Refusal>) {
        self.count(match r {
            Ok(_) => "ok",
            Err(Refusal::Unauthenticated(_))
            | Err(Refusal::Throttled(_))
            | Err(Refusal::Id(IdError::Denied { .. })) => "denied",
            Err(Refusal::Id(IdError::Generator(_))) => "failed",
            Err(Refusal::Id(_)) => "refused",
        });
    }
}

fn unauthenticated(why: &str) -> Response {
    (
        StatusCode::UNAUTHORIZED,
        [(
            header::WWW_AUTHENTICATE,
            "Basic realm=\"idgate\", charset=\"UTF-8\"",
        )],
        Json(json!({ "error": why })),
    )
        .into_response()
}

/// 429 with the wait in `Retry-After` (whole seconds, rounded up) and in the body (ms).
fn throttled(wait: Duration) -> Response {
    let ms = wait.as_millis().max(1);
    let secs = ms.div_ceil(1000).to_string();
    (
        StatusCode::TOO_MANY_REQUESTS,
        [(header::RETRY_AFTER, secs)],
        Json(json!({
            "error": format!("too many failed logins from this host; try again in {ms} ms (max_auth_failures)")
        })),
    )
        .into_response()
}

fn status_of(e: &IdError) -> StatusCode {
    match e {
        IdError::Denied { .. } => StatusCode::FORBIDDEN,
        IdError::UnknownGenerator(_) => StatusCode::NOT_FOUND,
        IdError::WrongKind { .. } | IdError::BadCount { .. } | IdError::TooLarge(_) => {
            StatusCode::BAD_REQUEST
        }
        IdError::Generator(_) => StatusCode::SERVICE_UNAVAILABLE,
    }
}

async fn leaf_segment(
    State(s): State<Arc<HttpState>>,
    ConnectInfo(Peer(peer)): ConnectInfo<Peer>,
    Path(tag): Path<String>,
    headers: HeaderMap,
    uri: Uri,
) -> Response {
    leaf(&s, &headers, &peer, &uri, &tag, "segment").await
}

async fn leaf_snowflake(
    State(s): State<Arc<HttpState>>,
    ConnectInfo(Peer(peer)): ConnectInfo<Peer>,
    Path(key): Path<String>,
    headers: HeaderMap,
    uri: Uri,
) -> Response {
    leaf(&s, &headers, &peer, &uri, &key, "snowflake").await
}

/// One id as Leaf's controller answers it. `key` names a generator of the path's kind (for
/// segment paths also a segment generator's `tag`, Leaf's biz_tag).
async fn leaf(
    s: &HttpState,
    headers: &HeaderMap,
    peer: &SocketAddr,
    uri: &Uri,
    key: &str,
    kind: &str,
) -> Response {
    let generator = resolve_leaf_key(&s.proxy, key, kind);
    let r = match generator {
        Ok(g) => s.serve(headers, peer, &g, 1).await,
        Err(e) => match s.caller(headers, peer) {
            Err(r) => Err(r),
            // Users with a list learn nothing about names outside it.
            Ok(u) if !u.may_call(key) => Err(Refusal::Id(IdError::Denied {
                user: u.name.clone(),
                generator: key.to_string(),
            })),
            Ok(_) => Err(Refusal::Id(e)),
        },
    };
    s.record(&r);
    match r {
        Ok(b) => (
            [(header::CONTENT_TYPE, "text/plain;charset=UTF-8")],
            b.first.to_string(),
        )
            .into_response(),
        Err(Refusal::Unauthenticated(why)) => unauthenticated(why),
        Err(Refusal::Throttled(wait)) => throttled(wait),
        Err(Refusal::Id(e @ IdError::Denied { .. })) => (
            StatusCode::FORBIDDEN,
            Json(json!({ "error": e.to_string() })),
        )
            .into_response(),
        Err(Refusal::Id(e)) => {
            // Leaf's result codes: -2 the key does not exist, -3 no id could be given now.
            let code = match e {
                IdError::Generator(_) => -3,
                _ => -2,
            };
            let body = json!({
                "timestamp": crate::idgen::snowflake::layout::format_ms(now_ms()),
                "status": 500,
                "error": "Internal Server Error",
                "message": format!("Result{{id={code}, status=EXCEPTION}}: {e}"),
                "path": uri.path(),
            });
            (StatusCode::INTERNAL_SERVER_ERROR, Json(body)).into_response()
        }
    }
}

/// The generator a Leaf key names on a path of `kind`.
fn resolve_leaf_key(proxy: &Proxy, key: &str, kind: &str) -> Result<String, IdError> {
    if let Ok(g) = proxy.idgen.get(key) {
        return if g.kind() == kind {
            Ok(key.to_string())
        } else {
            Err(IdError::WrongKind {
                generator: key.to_string(),
                kind: g.kind(),
            })
        };
    }
    if kind == "segment" {
        let by_tag = proxy
            .idgen
            .iter()
            .find(|(_, g)| g.as_segment().is_some_and(|s| s.tag() == key));
        if let Some((name, _)) = by_tag {
            return Ok(name.clone());
        }
    }
    Err(IdError::UnknownGenerator(key.to_string()))
}

/// `GET /ids/{generator}?count=n`: `{"generator", "first", "last", "count"}`.
async fn block(
    State(s): State<Arc<HttpState>>,
    ConnectInfo(Peer(peer)): ConnectInfo<Peer>,
    Path(generator): Path<String>,
    Query(q): Query<HashMap<String, String>>,
    headers: HeaderMap,
) -> Response {
    let r = match q.get("count").map(|c| ids::parse_count(c, s.max_count)) {
        Some(Err(e)) => match s.caller(&headers, &peer) {
            Err(r) => Err(r),
            Ok(_) => Err(Refusal::Id(e)),
        },
        Some(Ok(n)) => s.serve(&headers, &peer, &generator, n).await,
        None => s.serve(&headers, &peer, &generator, 1).await,
    };
    s.record(&r);
    match r {
        Ok(b) => Json(json!({
            "generator": generator,
            "first": b.first,
            "last": b.last(),
            "count": b.count,
        }))
        .into_response(),
        Err(Refusal::Unauthenticated(why)) => unauthenticated(why),
        Err(Refusal::Throttled(wait)) => throttled(wait),
        Err(Refusal::Id(e)) => {
            (status_of(&e), Json(json!({ "error": e.to_string() }))).into_response()
        }
    }
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}
