//! `/generators`: what each generator holds and has done, as JSON.

use serde_json::{json, Map, Value};

use crate::idgen::metrics::Metrics as GenMetrics;
use crate::idgen::{Generator, IdGen};

/// The worker id a snowflake-kind generator issues under.
pub fn worker_id(g: &Generator) -> Option<u64> {
    g.as_snowflake()
        .map(|s| s.worker_id())
        .or_else(|| g.as_biased().map(|b| b.worker_id()))
}

/// For a leased worker id: ms of lease left and, when the generator may not issue now, why.
pub fn lease_status(g: &Generator) -> Option<(u64, Option<String>)> {
    g.as_snowflake()
        .and_then(|s| s.lease_status())
        .or_else(|| g.as_biased().and_then(|b| b.lease_status()))
}

/// How far a snowflake-kind generator's timestamps run ahead of the clock (ms).
pub fn borrowed_ms(g: &Generator) -> Option<u64> {
    g.as_snowflake()
        .map(|s| s.borrowed_ms())
        .or_else(|| g.as_biased().map(|b| b.borrowed_ms()))
}

/// One object per generator, by name.
pub fn report(idgen: &IdGen) -> Value {
    let mut out = Map::new();
    for (name, g) in idgen.iter() {
        out.insert(name.clone(), one(g));
    }
    Value::Object(out)
}

fn one(g: &Generator) -> Value {
    let m = g.metrics();
    let c = GenMetrics::get;
    let mut v = json!({
        "kind": g.kind(),
        "ids_issued": c(&m.ids_issued),
        "wasted_ids": c(&m.wasted_ids),
        "store_errors": c(&m.store_errors),
    });
    let Value::Object(o) = &mut v else {
        return v;
    };
    if let Some(s) = g.as_segment() {
        let (current, standby) = s.buffered();
        let fetches = c(&m.ranges_fetched);
        let last_error = s.last_error();
        o.insert("tag".into(), json!(s.tag()));
        o.insert("step".into(), json!(s.current_step()));
        o.insert(
            "buffers".into(),
            json!({ "current_left": current, "standby_left": standby }),
        );
        o.insert(
            "fetches".into(),
            json!({
                "count": fetches,
                "last_unix_ms": c(&m.last_fetch_unix_ms),
                "last_latency_us": c(&m.last_fetch_us),
                "max_latency_us": c(&m.fetch_latency_us_max),
                "mean_latency_us": c(&m.fetch_latency_us_sum).checked_div(fetches),
                "empty_buffer_waits": c(&m.empty_buffer_waits),
                "last_error": (!last_error.is_empty()).then_some(last_error),
            }),
        );
    }
    if let Some(w) = worker_id(g) {
        let lease = lease_status(g);
        o.insert("worker_id".into(), json!(w));
        o.insert(
            "lease".into(),
            match lease {
                None => json!({ "fixed": true }),
                Some((left_ms, why)) => json!({
                    "fixed": false,
                    "valid_for_ms": left_ms,
                    "renewals": c(&m.lease_renewals),
                    "losses": c(&m.lease_reacquisitions),
                    "problem": why,
                }),
            },
        );
        o.insert(
            "clock".into(),
            json!({
                "borrowed_ms": borrowed_ms(g),
                "backwards_events": c(&m.clock_backwards),
                "borrowed_ticks": c(&m.borrowed_ticks),
            }),
        );
        let last = g.as_snowflake().map(|s| s.last_issued_ms());
        if let Some(last) = last {
            o.insert("last_issued_unix_ms".into(), json!(last));
        }
    }
    v
}
