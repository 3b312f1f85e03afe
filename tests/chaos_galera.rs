//! Fault scenario: the sequence store on a three-node Galera cluster (Debian's `galera-4`), the
//! recommended HA setup. Under insert load (segment ids, leased snowflake ids, XA decisions, all
//! kept in the store) the node idgate uses is killed: idgate moves to the next node of
//! `failover_addresses`, ids keep flowing, nothing is lost and no id repeats; the killed node
//! rejoins.

mod common;

use std::time::Duration;

use common::history::{self};
use common::idgate_proc::{config_for_ports, Idgate};
use common::scenario;
use common::start_db;
use common::writers::{self, monotonic_now, Writers};
use idgate::testbed::galera::Galera;

const NAMES: [&str; 2] = ["seg_orders", "snow_orders"];

/// The generators, and the tables sharded by id over shard0 and shard1.
fn tables() -> String {
    let generators = "sequence_store:
  backend: store
generators:
  seg:
    kind: segment
    step: 20
    dynamic_step: false
    max_wait_ms: 3000
  snow:
    kind: snowflake
    lease_ttl_ms: 8000
    heartbeat_ms: 1000
    lease_safety_ms: 2000
";
    format!(
        "{generators}{}",
        scenario::tables_mod2(&[("seg_orders", "seg", false), ("snow_orders", "snow", false)])
    )
}

#[test]
fn store_on_galera_survives_a_node_kill() {
    let cluster = Galera::start(3).unwrap_or_else(|e| panic!("{e}"));
    let dbs = [start_db(), start_db()];
    for db in &dbs {
        writers::create_tables(db, &NAMES);
    }
    let ports: Vec<u16> = cluster.nodes.iter().map(|n| n.port).collect();
    // The store backend is node 0; the other nodes are its failover addresses.
    let failover: Vec<String> = ports[1..]
        .iter()
        .map(|p| format!("\"127.0.0.1:{p}\""))
        .collect();
    let g = Idgate::start_with(|port| {
        config_for_ports(
            port,
            &[
                ("shard0", dbs[0].port),
                ("shard1", dbs[1].port),
                ("store", ports[0]),
            ],
            &tables(),
        )
        .replacen(
            &format!("port: {}\n", ports[0]),
            &format!(
                "port: {}\n    failover_addresses: [{}]\n",
                ports[0],
                failover.join(", ")
            ),
            1,
        )
    });
    let w = Writers::start("chaos-galera", g.port, &NAMES, 4, 2);
    let pause = |ms| std::thread::sleep(Duration::from_millis(ms));
    pause(2000);
    let killed = monotonic_now();
    cluster.kill(0);
    // Long enough to use up the buffered segment ranges many times over and to renew the
    // snowflake lease several times on the other nodes.
    pause(7000);
    cluster.restart(0).expect("node 0 rejoins");
    pause(2000);
    let attempts = w.stop();

    let (_, summary) = scenario::check_history(
        "Galera store node killed for 7 s, then rejoined",
        &attempts,
        &[&dbs[0], &dbs[1]],
        &NAMES,
        scenario::seg_snow_order,
    );
    // Segment ranges kept coming from the other nodes: more ids than the two buffers held at
    // the kill (a small step, so a slow machine's writers still use them up many times). The
    // cluster itself holds writes until it evicts the killed node (evs.suspect_timeout), and
    // idgate stays on the node it moved to after the killed one rejoins, so every id from 2 s
    // after the kill on came from a range the other nodes gave.
    let after: Vec<&history::Attempt> = attempts
        .iter()
        .filter(|a| a.ok && a.t == "seg_orders" && a.ts > killed + 2.0)
        .collect();
    let ids: usize = after.iter().map(|a| a.notes.len()).sum();
    assert!(
        ids > 2 * 20,
        "only {ids} segment ids after the kill: {summary}\nidgate log:\n{}",
        g.log()
    );
    assert!(
        attempts
            .iter()
            .any(|a| a.ok && a.t == "snow_orders" && a.notes.len() > 1 && a.ts > killed + 2.0),
        "no multi-shard INSERT (XA decision in the store) after the kill: {summary}"
    );
    assert!(g.log().contains("moved to another node"), "{}", g.log());
}
