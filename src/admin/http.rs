//! The admin HTTP listener: `/health`, `/ready`, `/generators`, `/metrics`, `POST /reload`, and
//! the operator's console (`/`, `/console/section/NAME`).

use std::sync::Arc;

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};

use super::ready::Checker;
use super::Control;
use crate::proxy::Proxy;

struct AdminState {
    proxy: Arc<Proxy>,
    control: Arc<Control>,
    checker: Arc<Checker>,
    registry: prometheus_client::registry::Registry,
}

pub fn router(
    control: Arc<Control>,
    checker: Checker,
    ring: Arc<super::console::traffic_ring::TrafficRing>,
    loopback: bool,
) -> Router {
    let proxy = control.proxy.clone();
    let checker = Arc::new(checker);
    let console = super::console::router(super::console::Console {
        control: control.clone(),
        checker: checker.clone(),
        ring,
        loopback,
    });
    Router::new()
        .route("/health", get(health))
        .route("/ready", get(ready))
        .route("/generators", get(generators))
        .route("/metrics", get(metrics))
        .route("/reload", post(reload))
        .with_state(Arc::new(AdminState {
            registry: super::metrics::registry(&proxy, &control.migrations),
            proxy,
            control,
            checker,
        }))
        .merge(console)
}

async fn health() -> &'static str {
    "ok\n"
}

async fn ready(State(s): State<Arc<AdminState>>) -> Response {
    let r = s.checker.check(&s.proxy).await;
    let status = if r.ready() {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (status, Json(r.to_json())).into_response()
}

async fn generators(State(s): State<Arc<AdminState>>) -> Response {
    Json(super::generators::report(&s.proxy.idgen)).into_response()
}

async fn metrics(State(s): State<Arc<AdminState>>) -> Response {
    match super::metrics::render(&s.registry) {
        Ok(text) => (
            [(
                header::CONTENT_TYPE,
                "application/openmetrics-text; version=1.0.0; charset=utf-8",
            )],
            text,
        )
            .into_response(),
        Err(_) => (StatusCode::INTERNAL_SERVER_ERROR, "cannot encode metrics\n").into_response(),
    }
}

/// `POST /reload`: as SIGHUP; 200 with the generation and the changed keys, or 409 with why not.
async fn reload(State(s): State<Arc<AdminState>>) -> Response {
    match crate::reload::reload(&s.proxy, &s.control.reloads, "POST /reload").await {
        Ok(a) => Json(serde_json::json!({
            "applied": true,
            "generation": a.generation,
            "changed": a.changed,
        }))
        .into_response(),
        Err(e) => (
            StatusCode::CONFLICT,
            Json(serde_json::json!({ "applied": false, "error": e.to_string() })),
        )
            .into_response(),
    }
}
