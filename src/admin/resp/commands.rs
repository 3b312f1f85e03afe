//! What one Redis-protocol connection may ask, answered as Redis words it: `AUTH`, `HELLO`,
//! `PING`, `QUIT`, and on generators `INCR` (one id), `INCRBY` (a contiguous block, answered
//! with its last id), `GET` (the last id this connection got).

use std::collections::HashMap;
use std::sync::Arc;

use prometheus_client::metrics::counter::Counter;

use super::frame::Reply;
use crate::admin::ids::{self, IdError};
use crate::config::User;
use crate::metrics::IdServiceLabels;
use crate::proxy::Proxy;

/// The state of one connection.
pub struct Conn<'p> {
    proxy: &'p Proxy,
    pub id: u64,
    /// 2 or 3 (after `HELLO 3`).
    pub proto: u8,
    user: Option<Arc<User>>,
    /// The client's address, as the login throttle counts it.
    host: String,
    /// The last id each generator gave this connection.
    last: HashMap<String, u64>,
    max_count: u64,
    /// This protocol's request counters, looked up once: a pipelined burst counts each
    /// request without a label lookup.
    counts: Outcomes,
}

/// `idgate_id_service_requests_total{protocol="resp"}` by outcome.
struct Outcomes {
    ok: Counter,
    refused: Counter,
    failed: Counter,
    denied: Counter,
}

impl Outcomes {
    fn new(proxy: &Proxy) -> Outcomes {
        let get = |outcome: &'static str| {
            proxy
                .metrics
                .id_service_requests
                .get_or_create(&IdServiceLabels {
                    protocol: "resp",
                    outcome,
                })
                .clone()
        };
        Outcomes {
            ok: get("ok"),
            refused: get("refused"),
            failed: get("failed"),
            denied: get("denied"),
        }
    }
}

/// What the connection does after answering.
#[derive(Debug, PartialEq, Eq)]
pub enum Then {
    Continue,
    Close,
}

const NOAUTH: &str = "NOAUTH Authentication required.";
const WRONGPASS: &str = "WRONGPASS invalid username-password pair or user is disabled.";

impl<'p> Conn<'p> {
    pub fn new(proxy: &'p Proxy, id: u64, max_count: u64, host: String) -> Conn<'p> {
        Conn {
            proxy,
            id,
            proto: 2,
            user: None,
            host,
            last: HashMap::new(),
            max_count,
            counts: Outcomes::new(proxy),
        }
    }

    pub fn authenticated(&self) -> bool {
        self.user.is_some()
    }

    /// Answers one request.
    pub async fn run(&mut self, args: &[&[u8]]) -> (Reply, Then) {
        let Some(name) = args.first() else {
            return (Reply::err("ERR empty command"), Then::Continue);
        };
        let rest = &args[1..];
        let Some(cmd) = Command::of(name) else {
            let cmd = String::from_utf8_lossy(name).to_ascii_lowercase();
            return (unknown(&cmd, rest), Then::Continue);
        };
        let reply = match cmd {
            Command::Quit => return (Reply::Simple("OK"), Then::Close),
            Command::Auth => self.auth(rest),
            Command::Hello => self.hello(rest),
            _ if self.user.is_none() => Reply::err(NOAUTH),
            Command::Ping => match rest {
                [] => Reply::Simple("PONG"),
                [msg] => Reply::Bulk(msg.to_vec()),
                _ => arity("ping"),
            },
            Command::Incr => match rest {
                [g] => self.incr(g, None).await,
                _ => arity("incr"),
            },
            Command::IncrBy => match rest {
                [g, n] => self.incr(g, Some(n)).await,
                _ => arity("incrby"),
            },
            Command::Get => match rest {
                [g] => match self.last.get(&*String::from_utf8_lossy(g)) {
                    Some(id) => Reply::Bulk(id.to_string().into_bytes()),
                    None => Reply::Nil,
                },
                _ => arity("get"),
            },
        };
        (reply, Then::Continue)
    }

    fn auth(&mut self, rest: &[&[u8]]) -> Reply {
        let (user, pass) = match rest {
            // Redis 6: a lone password is the `default` user's.
            [pass] => ("default".into(), pass),
            [user, pass] => (String::from_utf8_lossy(user), pass),
            _ => return arity("auth"),
        };
        self.login(&user, pass)
    }

    /// Checks a password under the login throttle shared with the MySQL port and HTTP.
    fn login(&mut self, user: &str, pass: &[u8]) -> Reply {
        let throttle = &self.proxy.auth_throttle;
        if let Some(wait) = throttle.wait(&self.host) {
            // Not even a right password is checked while the host waits, so guessing learns
            // nothing during the backoff.
            self.counts.denied.inc();
            return Reply::err(format!(
                "ERR too many failed logins from host '{}'; try again in {} ms (max_auth_failures)",
                self.host,
                wait.as_millis().max(1)
            ));
        }
        let checked = std::str::from_utf8(pass)
            .ok()
            .and_then(|pass| crate::admin::auth::check(self.proxy, user, pass));
        match checked {
            Some(u) => {
                throttle.succeeded(&self.host);
                self.user = Some(Arc::new(u));
                Reply::Simple("OK")
            }
            None => {
                throttle.failed(&self.host);
                self.counts.denied.inc();
                Reply::err(WRONGPASS)
            }
        }
    }

    /// `HELLO [protover [AUTH user pass] [SETNAME name]]`.
    fn hello(&mut self, rest: &[&[u8]]) -> Reply {
        let mut proto = self.proto;
        let mut i = 0;
        if let Some(v) = rest.first() {
            match std::str::from_utf8(v)
                .ok()
                .and_then(|s| s.parse::<i64>().ok())
            {
                Some(2) => proto = 2,
                Some(3) => proto = 3,
                Some(_) => return Reply::err("NOPROTO unsupported protocol version"),
                None => {
                    return Reply::err("ERR Protocol version is not an integer or out of range")
                }
            }
            i = 1;
        }
        while i < rest.len() {
            let opt = String::from_utf8_lossy(rest[i]).to_ascii_lowercase();
            match (opt.as_str(), rest.get(i + 1), rest.get(i + 2)) {
                ("auth", Some(user), Some(pass)) => {
                    let user = String::from_utf8_lossy(user).into_owned();
                    if let e @ Reply::Error(_) = self.login(&user, pass) {
                        return e;
                    }
                    i += 3;
                }
                ("setname", Some(_), _) => i += 2,
                _ => {
                    return Reply::err(format!(
                        "ERR Syntax error in HELLO option '{}'",
                        String::from_utf8_lossy(rest[i])
                    ))
                }
            }
        }
        if self.user.is_none() {
            return Reply::err(
                "NOAUTH HELLO must be called with the client already authenticated, otherwise the \
                 HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and \
                 select the RESP protocol version at the same time",
            );
        }
        self.proto = proto;
        Reply::Map(vec![
            ("server", Reply::Bulk(b"idgate".to_vec())),
            (
                "version",
                Reply::Bulk(env!("CARGO_PKG_VERSION").as_bytes().to_vec()),
            ),
            ("proto", Reply::Int(i64::from(proto))),
            ("id", Reply::Int(self.id as i64)),
            ("mode", Reply::Bulk(b"standalone".to_vec())),
            ("role", Reply::Bulk(b"master".to_vec())),
            ("modules", Reply::Array(Vec::new())),
        ])
    }

    /// `INCR g` (`count` None) or `INCRBY g n`: the last id of a fresh contiguous block.
    async fn incr(&mut self, generator: &[u8], count: Option<&[u8]>) -> Reply {
        let Some(user) = self.user.clone() else {
            return Reply::err(NOAUTH);
        };
        let generator = String::from_utf8_lossy(generator);
        let n = match count {
            None => 1,
            Some(n) => {
                let text = String::from_utf8_lossy(n);
                if text.parse::<i64>().is_err() {
                    self.counts.refused.inc();
                    return Reply::err("ERR value is not an integer or out of range");
                }
                match ids::parse_count(&text, self.max_count) {
                    Ok(n) => n,
                    Err(e) => {
                        self.counts.refused.inc();
                        return Reply::err(format!("ERR {e}"));
                    }
                }
            }
        };
        match ids::take(self.proxy, &user, &generator, n).await {
            Ok(block) => {
                let last = block.last();
                let Ok(reply) = i64::try_from(last) else {
                    self.counts.failed.inc();
                    return Reply::err(format!(
                        "ERR id {last} does not fit a Redis integer (above 2^63-1)"
                    ));
                };
                self.counts.ok.inc();
                match self.last.get_mut(&*generator) {
                    Some(l) => *l = last,
                    None => {
                        self.last.insert(generator.into_owned(), last);
                    }
                }
                Reply::Int(reply)
            }
            Err(e) => {
                let (counter, code) = match &e {
                    IdError::Denied { .. } => (&self.counts.denied, "NOPERM"),
                    IdError::Generator(_) => (&self.counts.failed, "ERR"),
                    _ => (&self.counts.refused, "ERR"),
                };
                counter.inc();
                Reply::err(format!("{code} {e}"))
            }
        }
    }
}

/// The commands this listener knows, matched without regard to case as Redis does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Command {
    Quit,
    Auth,
    Hello,
    Ping,
    Incr,
    IncrBy,
    Get,
}

impl Command {
    fn of(name: &[u8]) -> Option<Command> {
        const ALL: [(&[u8], Command); 7] = [
            (b"incr", Command::Incr),
            (b"incrby", Command::IncrBy),
            (b"get", Command::Get),
            (b"ping", Command::Ping),
            (b"auth", Command::Auth),
            (b"hello", Command::Hello),
            (b"quit", Command::Quit),
        ];
        ALL.iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, c)| *c)
    }
}

fn arity(cmd: &str) -> Reply {
    Reply::err(format!("ERR wrong number of arguments for '{cmd}' command"))
}

/// Redis's words for a command it does not know.
fn unknown(cmd: &str, rest: &[&[u8]]) -> Reply {
    let mut msg = format!(
        "ERR unknown command '{}', with args beginning with: ",
        clip(cmd.as_bytes())
    );
    for a in rest.iter().take(8) {
        msg.push_str(&format!("'{}' ", clip(a)));
    }
    Reply::err(msg)
}

fn clip(b: &[u8]) -> String {
    String::from_utf8_lossy(&b[..b.len().min(128)]).into_owned()
}
