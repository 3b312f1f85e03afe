//! Who may see the console: anyone on this host when the admin listener is on a loopback
//! address (as for `/metrics`); otherwise an idgate user with `admin: true`, by HTTP Basic,
//! under the login throttle the MySQL port and the ID service share.

use std::net::SocketAddr;

use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};

use super::Console;

/// `None` when the request may see the console; otherwise the answer that refuses it.
pub fn refusal(c: &Console, headers: &HeaderMap, peer: &SocketAddr) -> Option<Response> {
    if c.loopback {
        return None;
    }
    let proxy = &c.control.proxy;
    let host = peer.ip().to_string();
    let throttle = &proxy.auth_throttle;
    if let Some(wait) = throttle.wait(&host) {
        let ms = wait.as_millis().max(1);
        return Some(
            (
                StatusCode::TOO_MANY_REQUESTS,
                [(header::RETRY_AFTER, ms.div_ceil(1000).to_string())],
                format!("too many failed logins from this host; try again in {ms} ms\n"),
            )
                .into_response(),
        );
    }
    let Some(value) = headers.get(header::AUTHORIZATION) else {
        // A question, not a guess: the browser asks for the credentials.
        return Some(ask("the console needs an idgate admin user's credentials"));
    };
    let user = crate::admin::auth::basic(value)
        .ok()
        .and_then(|(name, password)| crate::admin::auth::check(proxy, &name, &password));
    let Some(user) = user else {
        throttle.failed(&host);
        return Some(ask("wrong user name or password"));
    };
    throttle.succeeded(&host);
    if !user.admin {
        return Some(
            (
                StatusCode::FORBIDDEN,
                format!(
                    "`{}` is not an idgate admin (admin: true); the console is for admins\n",
                    user.name
                ),
            )
                .into_response(),
        );
    }
    None
}

fn ask(why: &str) -> Response {
    (
        StatusCode::UNAUTHORIZED,
        [(
            header::WWW_AUTHENTICATE,
            "Basic realm=\"idgate console\", charset=\"UTF-8\"",
        )],
        format!("{why}\n"),
    )
        .into_response()
}
