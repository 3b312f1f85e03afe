//! `IDGATE SWITCHOVER <backend> TO '<host:port>'` for admin users: makes that node of the
//! backend's replication group its primary (`exec::topology` does the steps).

use super::statements::Answer;
use crate::proxy::Proxy;
use crate::sql::admin_switchover::SwitchoverStatement;
use crate::wire::errors::{self, SqlError};

pub async fn answer(proxy: &Proxy, stmt: SwitchoverStatement) -> Answer {
    let (backend, node) = match stmt {
        SwitchoverStatement::To { backend, node } => (backend, node),
        SwitchoverStatement::Malformed(why) => {
            return Answer::Err(SqlError::new(
                crate::sql::ER_PARSE_ERROR,
                b"42000",
                format!("idgate: {why}"),
            ))
        }
    };
    let refused = |why: String| {
        Answer::Err(SqlError::new(
            errors::ER_UNKNOWN_ERROR,
            b"HY000",
            format!("idgate: switchover of backend `{backend}` refused: {why}"),
        ))
    };
    let Some(pool) = proxy.pools.get(&backend) else {
        return refused(format!(
            "no backend of that name (the backends: {})",
            proxy.backend_names.join(", ")
        ));
    };
    let Some(topology) = pool.topology() else {
        return refused(format!(
            "it is one server; list its other nodes in backends.{backend}.replicas"
        ));
    };
    match topology.switchover(&pool.config(), &node).await {
        Ok(s) => {
            let mut info = format!(
                "backend `{backend}`: the primary is now {} (was {}); its statements were held \
                 {} ms",
                s.to,
                s.from,
                s.held.as_millis()
            );
            if !s.not_following.is_empty() {
                info.push_str(&format!(
                    "; not replicating from the new primary, fix by hand: {}",
                    s.not_following.join("; ")
                ));
            }
            Answer::Ok(info)
        }
        Err(why) => refused(why),
    }
}
