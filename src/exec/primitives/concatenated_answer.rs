//! A statement every shard runs whole (a SELECT whose rows need no merge, a write that reaches
//! several shards): sent to all of them, their answers relayed to the client as one, in the
//! order the backends are given.

use crate::exec::scatter;
use crate::exec::RelayCursor;

/// Sends `packet` to every backend and relays their answers as one. `Ok(false)`: the client got
/// an error (a connection could not be had, or a shard refused).
pub async fn run<C: RelayCursor>(
    c: &mut C,
    backends: &[String],
    packet: &[u8],
    more: bool,
) -> Result<bool, C::End> {
    let Some(idx) = c.send_to_all_or_tell(backends, packet).await? else {
        return Ok(false);
    };
    let relayed = {
        let (mut conns, mut client) = c.relay_parts(&idx);
        scatter::relay_concat(&mut conns, &mut client, scatter::more_results(more)).await
    };
    match relayed {
        Ok(r) => Ok(!r.error),
        Err(e) => Err(c.failed(e)),
    }
}
