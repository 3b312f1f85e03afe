//! The ID service against idgate on a real MariaDB: Leaf's HTTP API and `/ids` with curl, the
//! Redis protocol with redis-cli and the redis Python package (RESP2 and RESP3), and ids taken
//! at once over SQL, HTTP and RESP, checked for duplicates and contiguous blocks.

mod common;

use std::process::Command;
use std::time::Duration;

use common::clients::{assert_has, require_python_modules, require_tool, run, source_dir};
use common::idgate_proc::{APP_PASSWORD, APP_USER};
use common::{free_port, shared_db, Idgate, PASSWORD, USER};
use serde_json::Value;

const LIMITED: &str = "limited";
const LIMITED_PASSWORD: &str = "limited-pw";

struct Service {
    g: Idgate,
    http: u16,
    resp: u16,
}

/// idgate on the shared MariaDB with segment, snowflake, biased and uuidv7 generators, `app`
/// (every generator) and `limited` (only `snow`), and both ID-service listeners.
fn service(extra: &str) -> Service {
    let db = shared_db();
    let (http, resp) = (free_port().unwrap(), free_port().unwrap());
    let tag = format!("ids_{}", free_port().unwrap());
    let g = Idgate::start_with(|port| {
        format!(
            "listen: 127.0.0.1:{port}
allow_plaintext_passwords: true
users:
  - name: {APP_USER}
    password: {APP_PASSWORD}
  - name: {LIMITED}
    password: {LIMITED_PASSWORD}
    generators: [snow]
backends:
  shard0:
    port: {}
    user: {USER}
    password: {PASSWORD}
default_backend: shard0
generators:
  seq:
    kind: segment
    tag: {tag}
    step: 1000
  snow:
    kind: snowflake
    lease_group: {tag}
  bias:
    kind: biased
    lease_group: {tag}b
    slot_bits: 4
    bias_column: user_id
  uuid:
    kind: uuidv7
id_service:
  http: 127.0.0.1:{http}
  resp: 127.0.0.1:{resp}
{extra}",
            db.port
        )
    });
    g.conn();
    Service { g, http, resp }
}

/// (status, body) of a GET with curl; `auth` is `user:password` for HTTP Basic.
fn curl(port: u16, path: &str, auth: Option<&str>) -> (u16, String) {
    let mut cmd = Command::new(require_tool("curl", "curl"));
    cmd.args(["-sS", "--max-time", "20", "-w", "\n%{http_code}"]);
    if let Some(a) = auth {
        cmd.args(["-u", a]);
    }
    let out = cmd
        .arg(format!("http://127.0.0.1:{port}{path}"))
        .output()
        .expect("run curl");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (body, code) = text.rsplit_once('\n').unwrap_or(("", &text));
    (code.trim().parse().unwrap_or(0), body.to_string())
}

fn app() -> Option<&'static str> {
    Some("app:app-secret")
}

fn json(body: &str) -> Value {
    serde_json::from_str(body).unwrap_or_else(|e| panic!("not JSON ({e}): {body}"))
}

#[test]
fn leaf_api_and_id_blocks_over_http() {
    assert_eq!(format!("{APP_USER}:{APP_PASSWORD}"), app().unwrap());
    let s = service("");
    let p = s.http;
    // Leaf: the id as plain text; consecutive calls on a segment tag are consecutive ids.
    let (code, a) = curl(p, "/api/segment/get/seq", app());
    assert_eq!(code, 200, "{a}");
    let (_, b) = curl(p, "/api/segment/get/seq", app());
    let (a, b): (u64, u64) = (a.parse().unwrap(), b.parse().unwrap());
    assert_eq!(b, a + 1);
    let (code, id) = curl(p, "/api/snowflake/get/snow", app());
    assert_eq!(code, 200, "{id}");
    assert!(id.parse::<u64>().unwrap() > 1 << 22, "{id}");
    // Leaf's failure answer: HTTP 500 with Spring's error body and Leaf's result code.
    let (code, body) = curl(p, "/api/segment/get/nope", app());
    assert_eq!(code, 500, "{body}");
    let e = json(&body);
    assert_eq!(e["status"], 500);
    assert_eq!(e["path"], "/api/segment/get/nope");
    let msg = e["message"].as_str().unwrap();
    assert!(msg.starts_with("Result{id=-2, status=EXCEPTION}"), "{msg}");
    assert!(msg.contains("no generator named `nope`"), "{msg}");
    let (code, body) = curl(p, "/api/segment/get/snow", app());
    assert_eq!(code, 500, "{body}");
    assert!(body.contains("snowflake"), "{body}");

    // Authentication and rights.
    let (code, body) = curl(p, "/api/segment/get/seq", None);
    assert_eq!(code, 401, "{body}");
    assert!(body.contains("HTTP Basic"), "{body}");
    let (code, _) = curl(p, "/ids/seq", Some("app:wrong"));
    assert_eq!(code, 401);
    let (code, _) = curl(p, "/ids/seq", Some("ghost:app-secret"));
    assert_eq!(code, 401);
    let limited = format!("{LIMITED}:{LIMITED_PASSWORD}");
    let (code, body) = curl(p, "/ids/seq", Some(&limited));
    assert_eq!(code, 403, "{body}");
    assert!(body.contains("may not call generator `seq`"), "{body}");
    let (code, body) = curl(p, "/api/segment/get/seq", Some(&limited));
    assert_eq!(code, 403, "{body}");
    // Names outside the user's list are refused alike, existing or not.
    let (code, body) = curl(p, "/api/segment/get/nope", Some(&limited));
    assert_eq!(code, 403, "{body}");
    let (code, _) = curl(p, "/ids/snow?count=3", Some(&limited));
    assert_eq!(code, 200);

    // Blocks: contiguous, bounded.
    let (code, body) = curl(p, "/ids/seq?count=5000", app());
    assert_eq!(code, 200, "{body}");
    let blk = json(&body);
    assert_eq!(blk["generator"], "seq");
    assert_eq!(blk["count"], 5000);
    let (first, last) = (
        blk["first"].as_u64().unwrap(),
        blk["last"].as_u64().unwrap(),
    );
    assert_eq!(last - first, 4999);
    assert!(first > b);
    let (code, body) = curl(p, "/ids/snow?count=4096", app());
    assert_eq!(code, 200, "{body}");
    let blk = json(&body);
    assert_eq!(
        blk["last"].as_u64().unwrap() - blk["first"].as_u64().unwrap(),
        4095
    );
    for (path, want, says) in [
        ("/ids/seq?count=100001", 400, "from 1 to 100000"),
        ("/ids/seq?count=0", 400, "from 1 to 100000"),
        ("/ids/seq?count=-3", 400, "from 1 to 100000"),
        ("/ids/seq?count=ten", 400, "from 1 to 100000"),
        ("/ids/snow?count=5000", 400, "at most 4096"),
        ("/ids/bias", 400, "biased"),
        ("/ids/uuid", 400, "uuidv7"),
        ("/ids/nope", 404, "no generator named `nope`"),
    ] {
        let (code, body) = curl(p, path, app());
        assert_eq!(code, want, "{path}: {body}");
        let e = json(&body);
        assert!(
            e["error"].as_str().unwrap().contains(says),
            "{path}: {body}"
        );
    }
}

/// redis-cli with `script` on its stdin (one command per line), as `user` if given.
fn redis_cli(port: u16, user: Option<(&str, &str)>, script: &str) -> String {
    let cli = require_tool("redis-cli", "redis-tools");
    let dir = common::clients::scratch_dir("id_service", "redis_cli");
    let file = dir.join(format!("{port}-{}.txt", script.len()));
    std::fs::write(&file, script).unwrap();
    let mut line = format!("{} -h 127.0.0.1 -p {port}", cli.display());
    if let Some((u, pw)) = user {
        line.push_str(&format!(" --user {u} --pass {pw} --no-auth-warning"));
    }
    line.push_str(&format!(" < {}", file.display()));
    let mut cmd = Command::new("sh");
    cmd.arg("-c").arg(line);
    let r = run(cmd, "redis-cli", Duration::from_secs(30));
    assert_eq!(
        r.code,
        Some(0),
        "redis-cli failed: {}{}",
        r.stdout,
        r.stderr
    );
    // Without a terminal redis-cli prints an empty line after each error; a nil is empty too.
    let mut out = String::new();
    let mut after_error = false;
    for line in r.stdout.lines() {
        if after_error && line.is_empty() {
            after_error = false;
            continue;
        }
        after_error = line
            .split(' ')
            .next()
            .is_some_and(|w| w.len() > 1 && w.chars().all(|c| c.is_ascii_uppercase()))
            && line.contains(' ');
        out.push_str(line);
        out.push('\n');
    }
    out
}

#[test]
fn redis_cli_commands_and_errors() {
    let s = service("");
    let p = s.resp;
    let out = redis_cli(
        p,
        None,
        "PING\nINCR seq\nAUTH app wrong\nAUTH app app-secret\nPING\nPING hello\n",
    );
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines,
        [
            "NOAUTH Authentication required.",
            "NOAUTH Authentication required.",
            "WRONGPASS invalid username-password pair or user is disabled.",
            "OK",
            "PONG",
            "hello"
        ],
        "{out}"
    );

    let out = redis_cli(
        p,
        Some(("app", "app-secret")),
        "GET seq\nINCR seq\nINCRBY seq 10\nGET seq\nINCRBY seq abc\nINCRBY seq 100001\nINCR\nINCR bias\nINCR nope\nFOO bar\nHELLO 3\nGET snow\nHELLO 4\n",
    );
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "", "nil: {out}");
    let one: u64 = lines[1].parse().unwrap();
    let last: u64 = lines[2].parse().unwrap();
    assert_eq!(last, one + 10, "INCRBY answers its block's last id: {out}");
    assert_eq!(lines[3], last.to_string());
    assert_eq!(lines[4], "ERR value is not an integer or out of range");
    assert!(
        lines[5].starts_with("ERR count must be a whole number from 1 to 100000"),
        "{out}"
    );
    assert_eq!(lines[6], "ERR wrong number of arguments for 'incr' command");
    assert!(
        lines[7].starts_with("ERR generator `bias` is biased"),
        "{out}"
    );
    assert!(
        lines[8].starts_with("ERR no generator named `nope`"),
        "{out}"
    );
    assert_eq!(
        lines[9],
        "ERR unknown command 'foo', with args beginning with: 'bar' "
    );
    // HELLO 3: a map (redis-cli prints a pair per line), then nil in RESP3.
    let hello = &lines[10..17];
    assert_eq!(hello[0], "server idgate", "{out}");
    assert_eq!(hello[2], "proto 3", "{out}");
    assert_eq!(hello[4], "mode standalone", "{out}");
    assert_eq!(lines[17], "", "{out}");
    assert_eq!(lines[18], "NOPROTO unsupported protocol version");

    let out = redis_cli(
        p,
        Some((LIMITED, LIMITED_PASSWORD)),
        "INCR seq\nINCR snow\nPING\n",
    );
    let lines: Vec<&str> = out.lines().collect();
    assert!(
        lines[0].starts_with("NOPERM user `limited` may not call generator `seq`"),
        "{out}"
    );
    assert!(lines[1].parse::<u64>().is_ok(), "{out}");
    assert_eq!(lines[2], "PONG");
}

#[test]
fn resp_limits_frames_and_connections() {
    use std::io::{Read, Write};
    let admin = free_port().unwrap();
    // The idle timeout is long enough that a pause of this test (a curl started on a busy
    // machine) never reaches it, so only the checks below close silent connections.
    let s = service(&format!(
        "  max_connections: 2\n  idle_timeout_ms: 2000\n  max_frame_bytes: 1024\n\
         admin:\n  listen: 127.0.0.1:{admin}\n"
    ));
    let connect = || {
        let c = std::net::TcpStream::connect(("127.0.0.1", s.resp)).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        c
    };
    let read_all = |mut c: std::net::TcpStream| {
        let mut out = Vec::new();
        let _ = c.read_to_end(&mut out);
        String::from_utf8_lossy(&out).into_owned()
    };
    // A request larger than max_frame_bytes: an error, then the connection closes.
    let mut c = connect();
    c.write_all(format!("*2\r\n$4\r\nPING\r\n$5000\r\n{}", "x".repeat(2000)).as_bytes())
        .unwrap();
    assert_eq!(read_all(c), "-ERR Protocol error: invalid bulk length\r\n");
    // Each string within the cap, the request over it.
    let mut c = connect();
    c.write_all(format!("*2\r\n$600\r\n{}\r\n$600\r\n", "x".repeat(600)).as_bytes())
        .unwrap();
    assert_eq!(
        read_all(c),
        "-ERR Protocol error: request larger than 1024 bytes (id_service.max_frame_bytes)\r\n"
    );
    let mut c = connect();
    c.write_all(b"*100000000\r\n").unwrap();
    assert_eq!(
        read_all(c),
        "-ERR Protocol error: invalid multibulk length\r\n"
    );
    // Two logged-in connections fill the listener: the third is refused with Redis's words.
    let (mut a, mut b) = (connect(), connect());
    a.write_all(b"AUTH app app-secret\r\n").unwrap();
    b.write_all(b"AUTH app app-secret\r\n").unwrap();
    let mut buf = [0u8; 64];
    let n = a.read(&mut buf).unwrap();
    assert_eq!(&buf[..n], b"+OK\r\n");
    let n = b.read(&mut buf).unwrap();
    assert_eq!(&buf[..n], b"+OK\r\n");
    assert_eq!(
        read_all(connect()),
        "-ERR max number of clients reached\r\n"
    );
    // Silent connections are closed after idle_timeout_ms, freeing their slots.
    let t0 = std::time::Instant::now();
    assert_eq!(read_all(a), "");
    assert!(t0.elapsed() < Duration::from_secs(5), "{:?}", t0.elapsed());
    drop(b);
    std::thread::sleep(Duration::from_millis(700));
    let mut c = connect();
    c.write_all(b"AUTH app app-secret\r\nINCR seq\r\nQUIT\r\n")
        .unwrap();
    let out = read_all(c);
    assert!(
        out.starts_with("+OK\r\n:") && out.ends_with("\r\n+OK\r\n"),
        "{out}"
    );
    // A connection that has not logged in is closed to make room for a new one.
    let idle = connect();
    std::thread::sleep(Duration::from_millis(100));
    let _busy = connect();
    let mut c = connect();
    c.write_all(b"AUTH app app-secret\r\nQUIT\r\n").unwrap();
    assert_eq!(read_all(c), "+OK\r\n+OK\r\n");
    assert_eq!(read_all(idle), "", "the oldest idle connection made room");

    // HTTP: two silent connections fill the slots; a request closes the older one to make
    // room and is served at once.
    let silent: Vec<_> = (0..2)
        .map(|_| std::net::TcpStream::connect(("127.0.0.1", s.http)).unwrap())
        .collect();
    std::thread::sleep(Duration::from_millis(100));
    let t0 = std::time::Instant::now();
    let (code, body) = curl(s.http, "/ids/seq?count=2", app());
    assert_eq!(code, 200, "{body}");
    assert!(t0.elapsed() < Duration::from_secs(2), "{:?}", t0.elapsed());
    for c in silent {
        c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        assert_eq!(read_all(c), "", "a silent HTTP connection is closed");
    }
    // Every connection closed for room and every refusal is counted, per listener.
    let metrics = common::prometheus::scrape(admin);
    let closed = |listener: &str, reason: &str| {
        common::prometheus::must_sample(
            &metrics,
            &format!(
                "idgate_listener_connections_closed_total{{listener=\"{listener}\",reason=\"{reason}\"}}"
            ),
        )
    };
    assert_eq!(closed("id_resp", "full"), 1.0, "{metrics}");
    assert!(closed("id_resp", "made_room") >= 1.0, "{metrics}");
    assert!(closed("id_http", "made_room") >= 1.0, "{metrics}");
    assert_eq!(closed("admin", "full"), 0.0, "{metrics}");
}

#[test]
fn python_redis_client_and_ids_unique_across_sql_http_and_resp() {
    let python = require_tool("python3", "python3");
    require_python_modules("redis, pymysql", "redis pymysql");
    // redis-py retries a refused login (AuthenticationError is a ConnectionError to it), so
    // its two wrong-password checks count many failures against the shared login throttle.
    let s = service("max_auth_failures: 100\n");
    let mut cmd = Command::new(python);
    cmd.arg(source_dir().join("py_id_service.py"))
        .arg(s.g.port.to_string())
        .arg(s.http.to_string())
        .arg(s.resp.to_string())
        .args([APP_USER, APP_PASSWORD, LIMITED, LIMITED_PASSWORD]);
    let r = run(cmd, "py_id_service", Duration::from_secs(120));
    let t = format!("{}{}", r.stdout, r.stderr);
    assert_eq!(r.code, Some(0), "{t}");
    for protocol in [2, 3] {
        for line in [
            format!("resp{protocol} ping True"),
            format!("resp{protocol} incrby after incr 10"),
            format!("resp{protocol} get True"),
            format!("resp{protocol} get unused None"),
            format!("resp{protocol} snowflake True"),
            format!("resp{protocol} bad count ResponseError: count must be a whole number from 1 to 100000 (got 0); ask for fewer ids per request"),
            format!("resp{protocol} biased ResponseError: generator `bias` is biased: its ids depend on the row (biased) or are not integers (uuidv7), so the ID service cannot hand them out; use a segment or snowflake generator"),
            format!("resp{protocol} unknown ResponseError: unknown command 'set', with args beginning with: 'seq' '1' "),
            format!("resp{protocol} limited NoPermissionError: user `limited` may not call generator `seq`; add it to the user's `generators:` list in the idgate config"),
            format!("resp{protocol} wrong password AuthenticationError: invalid username-password pair or user is disabled."),
        ] {
            assert_has(&t, &line);
        }
    }
    // The package opens with HELLO; Redis refuses it without credentials in these words.
    assert_has(&t, "anonymous AuthenticationError: HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time");
    assert_has(&t, "concurrent problems []");
    assert_has(&t, "concurrent blocks 180 ids 9180 unique True");
    assert_has(&t, "done");
}

/// A raw Redis-protocol connection: send a request line, read the reply line.
struct Resp {
    w: std::net::TcpStream,
    r: std::io::BufReader<std::net::TcpStream>,
}

impl Resp {
    fn connect(port: u16) -> Resp {
        let w = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        w.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let r = std::io::BufReader::new(w.try_clone().unwrap());
        Resp { w, r }
    }

    fn ask(&mut self, line: &str) -> String {
        use std::io::{BufRead, Write};
        self.w.write_all(format!("{line}\r\n").as_bytes()).unwrap();
        let mut out = String::new();
        self.r.read_line(&mut out).unwrap();
        out.trim_end().to_string()
    }
}

/// A MySQL login to idgate: Ok, or the server's error code.
fn mysql_login(port: u16, password: &str) -> Result<(), u16> {
    let opts = mysql::OptsBuilder::new()
        .ip_or_hostname(Some("127.0.0.1"))
        .tcp_port(port)
        .user(Some(APP_USER))
        .pass(Some(password));
    match mysql::Conn::new(opts) {
        Ok(_) => Ok(()),
        Err(mysql::Error::MySqlError(e)) => Err(e.code),
        Err(e) => panic!("MySQL login: {e}"),
    }
}

/// (status, response headers and body) of a GET with curl, as `auth` (`user:password`).
fn curl_with_headers(port: u16, path: &str, auth: &str) -> (u16, String) {
    let out = Command::new(require_tool("curl", "curl"))
        .args([
            "-sS",
            "-i",
            "--max-time",
            "20",
            "-w",
            "\n%{http_code}",
            "-u",
            auth,
        ])
        .arg(format!("http://127.0.0.1:{port}{path}"))
        .output()
        .expect("run curl");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (all, code) = text.rsplit_once('\n').unwrap_or(("", &text));
    (code.trim().parse().unwrap_or(0), all.to_ascii_lowercase())
}

#[test]
fn failed_logins_count_together_on_mysql_http_and_resp() {
    let s = service("max_auth_failures: 3\nauth_backoff_ms: 3000\n");
    let wrong = "app:wrong";
    // One failure on each protocol: three failures from 127.0.0.1.
    let mut r = Resp::connect(s.resp);
    assert_eq!(
        r.ask("AUTH app wrong"),
        "-WRONGPASS invalid username-password pair or user is disabled."
    );
    assert_eq!(curl(s.http, "/ids/seq", Some(wrong)).0, 401);
    assert_eq!(mysql_login(s.g.port, "wrong"), Err(1045));
    // Now the host waits, on every protocol, even with the right password.
    let t0 = std::time::Instant::now();
    let blocked = "-ERR too many failed logins from host '127.0.0.1'; try again in ";
    for _ in 0..50 {
        let a = r.ask("AUTH app guess");
        assert!(a.starts_with(blocked), "{a}");
        assert!(a.ends_with(" ms (max_auth_failures)"), "{a}");
    }
    let a = r.ask("AUTH app app-secret");
    assert!(a.starts_with(blocked), "{a}");
    let a = r.ask("HELLO 3 AUTH app app-secret");
    assert!(a.starts_with(blocked), "{a}");
    assert_eq!(r.ask("INCR seq"), "-NOAUTH Authentication required.");
    let (code, head) = curl_with_headers(s.http, "/ids/seq", "app:app-secret");
    assert_eq!(code, 429, "{head}");
    assert!(head.contains("\r\nretry-after: 3\r\n"), "{head}");
    assert!(head.contains("too many failed logins"), "{head}");
    assert_eq!(mysql_login(s.g.port, APP_PASSWORD), Err(1129));
    // All of it while the host waited (a slower run would not have tested the block).
    assert!(
        t0.elapsed() < Duration::from_millis(2500),
        "{:?}",
        t0.elapsed()
    );
    // After the backoff the right password works again on each of them.
    std::thread::sleep(Duration::from_millis(3300).saturating_sub(t0.elapsed()));
    assert_eq!(r.ask("AUTH app app-secret"), "+OK");
    assert!(r.ask("INCR seq").starts_with(':'));
    let (code, body) = curl(s.http, "/ids/seq", app());
    assert_eq!(code, 200, "{body}");
    assert_eq!(mysql_login(s.g.port, APP_PASSWORD), Ok(()));
    // A request without credentials is no failed login.
    for _ in 0..5 {
        assert_eq!(curl(s.http, "/ids/seq", None).0, 401);
    }
    assert_eq!(curl(s.http, "/ids/seq", app()).0, 200);
}

/// `n` connections to `port` that send nothing.
fn idle_sockets(port: u16, n: usize) -> Vec<std::net::TcpStream> {
    (0..n)
        .map(|i| {
            let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
            std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(10))
                .unwrap_or_else(|e| panic!("idle socket {i} to {port}: {e}"))
        })
        .collect()
}

#[test]
fn idle_sockets_from_one_host_leave_other_callers_served() {
    let fds = idgate::limits::rlimit::raise_nofile()
        .expect("raise RLIMIT_NOFILE")
        .0 as usize;
    let n = 2000.min(fds.saturating_sub(500) / 3);
    assert!(n >= 1000, "RLIMIT_NOFILE {fds} is too low for this test");
    let admin = free_port().unwrap();
    let s = service(&format!("admin:\n  listen: 127.0.0.1:{admin}\n"));
    // A caller already at work before the flood.
    let mut worker = Resp::connect(s.resp);
    assert_eq!(worker.ask("AUTH app app-secret"), "+OK");
    let mut held = Vec::new();
    for port in [s.http, s.resp, admin] {
        held.extend(idle_sockets(port, n));
    }
    std::thread::sleep(Duration::from_millis(200));
    // While they stay open, new callers from the same host are answered at once...
    let t0 = std::time::Instant::now();
    let (code, body) = curl(s.http, "/ids/seq?count=3", app());
    assert_eq!(code, 200, "{body}");
    let mut r = Resp::connect(s.resp);
    assert_eq!(r.ask("AUTH app app-secret"), "+OK");
    assert!(r.ask("INCR seq").starts_with(':'));
    assert_eq!(curl(admin, "/health", None), (200, "ok\n".to_string()));
    assert!(
        t0.elapsed() < Duration::from_secs(2),
        "answered in {:?} with {n} idle sockets on each listener",
        t0.elapsed()
    );
    // ...and the connection that was working keeps working.
    assert!(worker.ask("INCR seq").starts_with(':'));
    drop(held);
}

#[test]
fn requests_and_logins_have_deadlines() {
    use std::io::{Read, Write};
    let s = service("  request_timeout_ms: 1000\n  login_timeout_ms: 1500\n");
    // How long until the server closes `c` (reading whatever it sends).
    let closed_after = |mut c: std::net::TcpStream| {
        c.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        let t0 = std::time::Instant::now();
        let mut sink = Vec::new();
        let _ = c.read_to_end(&mut sink);
        t0.elapsed()
    };
    let connect = |port| std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    let within = |d: Duration, lo: u64, what: &str| {
        assert!(
            d >= Duration::from_millis(lo) && d < Duration::from_secs(6),
            "{what}: closed after {d:?}"
        );
    };
    // HTTP: headers begun but never finished.
    let mut c = connect(s.http);
    c.write_all(b"GET /ids/seq HTTP/1.1\r\nHost: x\r\n")
        .unwrap();
    within(closed_after(c), 500, "HTTP headers cut off");
    // HTTP: a connection that never sends a request.
    within(
        closed_after(connect(s.http)),
        1000,
        "silent HTTP connection",
    );
    // Redis protocol: silent before logging in.
    within(closed_after(connect(s.resp)), 1000, "RESP without AUTH");
    // Redis protocol: logged in, then a request cut off in the middle.
    let mut r = Resp::connect(s.resp);
    assert_eq!(r.ask("AUTH app app-secret"), "+OK");
    r.w.write_all(b"*2\r\n$4\r\nINCR\r\n").unwrap();
    within(closed_after(r.w), 500, "RESP frame cut off");
    // A logged-in connection that is merely quiet outlives both deadlines.
    let mut r = Resp::connect(s.resp);
    assert_eq!(r.ask("AUTH app app-secret"), "+OK");
    std::thread::sleep(Duration::from_millis(2500));
    assert_eq!(r.ask("PING"), "+PONG");
}

/// Writes `request` to `port` (from another thread, ignoring a server that stops reading) and
/// returns what the server sent before closing, and how long that took.
fn exchange(port: u16, request: Vec<u8>) -> (String, Duration) {
    use std::io::{Read, Write};
    let mut c = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut w = c.try_clone().unwrap();
    let t0 = std::time::Instant::now();
    let writer = std::thread::spawn(move || {
        let _ = w.write_all(&request);
    });
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    // Until EOF, a reset after the answer, or the read timeout (nothing more to come).
    while let Ok(n @ 1..) = c.read(&mut buf) {
        out.extend_from_slice(&buf[..n]);
    }
    let took = t0.elapsed();
    let _ = writer.join();
    (String::from_utf8_lossy(&out).into_owned(), took)
}

#[test]
fn oversized_frames_and_requests_are_refused_from_their_declared_length() {
    let s = service("");
    // Redis protocol (max_frame_bytes 65536): a declared length over the cap is refused with
    // Redis's words as soon as its header is in, none of its bytes awaited.
    for (request, answer) in [
        (
            &b"*2\r\n$4\r\nINCR\r\n$70000\r\n"[..],
            "-ERR Protocol error: invalid bulk length\r\n",
        ),
        (
            b"*1\r\n$999999999\r\n",
            "-ERR Protocol error: invalid bulk length\r\n",
        ),
        (
            b"*100000\r\n",
            "-ERR Protocol error: invalid multibulk length\r\n",
        ),
    ] {
        let (got, took) = exchange(s.resp, request.to_vec());
        assert_eq!(got, answer, "{}", String::from_utf8_lossy(request));
        assert!(took < Duration::from_secs(2), "closed after {took:?}");
    }
    // HTTP: headers over the cap get 431, a declared body over it 413 before it is sent.
    let mut big = b"GET /ids/seq HTTP/1.1\r\nHost: x\r\nX-Pad: ".to_vec();
    big.extend(std::iter::repeat_n(b'x', 70_000));
    big.extend_from_slice(b"\r\n\r\n");
    let (got, took) = exchange(s.http, big);
    assert!(got.starts_with("HTTP/1.1 431 "), "{got}");
    assert!(took < Duration::from_secs(2), "{took:?}");
    let body = b"POST /ids/seq HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n".to_vec();
    let (got, took) = exchange(s.http, body);
    assert!(got.starts_with("HTTP/1.1 413 "), "{got}");
    assert!(took < Duration::from_secs(2), "{took:?}");
    // Requests within the caps are served as before.
    let (code, body) = curl(s.http, "/ids/seq?count=2", app());
    assert_eq!(code, 200, "{body}");
}

/// Leaf's clients send no credentials: with `anonymous_user` (a loopback listener only) such a
/// request gets that user's generator rights, while wrong credentials are still refused.
#[test]
fn leaf_clients_without_credentials_get_the_anonymous_users_rights() {
    let s = service(&format!("  anonymous_user: {LIMITED}\n"));
    // As Leaf's Java client (OkHttp) sends it.
    let leaf = |path: &str| {
        exchange(
            s.http,
            format!(
                "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nConnection: close\r\n\
                 Accept-Encoding: gzip\r\nUser-Agent: okhttp/3.14.9\r\n\r\n",
                s.http
            )
            .into_bytes(),
        )
        .0
    };
    let snow = leaf("/api/snowflake/get/snow");
    assert!(snow.starts_with("HTTP/1.1 200"), "{snow}");
    let id = snow.rsplit("\r\n\r\n").next().unwrap_or("").trim();
    assert!(id.parse::<u64>().is_ok_and(|v| v > 0), "{snow}");
    // `limited` may not call `seq`: refused as for that user with credentials.
    let seq = leaf("/api/segment/get/seq");
    assert!(!seq.starts_with("HTTP/1.1 200"), "{seq}");
    let (code, _) = curl(s.http, "/api/segment/get/seq", Some("limited:wrong"));
    assert_eq!(code, 401);
    // Credentials still pick their own user.
    let (code, body) = curl(s.http, "/api/segment/get/seq", app());
    assert_eq!(code, 200, "{body}");
}
