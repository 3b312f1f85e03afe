//! DDL about a table that lives on several backends: run on each in turn, so a refusal stops
//! it where it happened and names that backend.

use crate::exec::collect::{collect, Collected};
use crate::exec::RelayCursor;
use crate::wire::errors::SqlError;
use crate::wire::packets::parse_err;

/// Runs the DDL in `packet` on each of `backends`, one after the other. `Ok(false)`: the client
/// got an error (a connection could not be had, or a backend refused, named in the message);
/// `Ok(true)`: every one of them took it, and the caller runs it where the client's answer
/// comes from.
pub async fn run_on<C: RelayCursor>(
    c: &mut C,
    backends: &[String],
    packet: &[u8],
) -> Result<bool, C::End> {
    for b in backends {
        let i = match c.connection(b).await? {
            Ok(i) => i,
            Err(e) => {
                c.send_error(&e);
                return Ok(false);
            }
        };
        let be = c.conn(i);
        be.write_command(packet);
        if let Err(e) = be.flush().await {
            return Err(c.failed(e));
        }
        match collect(c.conn(i)).await {
            Ok(Collected::Err(e)) => {
                let (code, state, msg) = parse_err(&e);
                c.send_error(&SqlError::new(
                    code,
                    &state,
                    format!("{} (on backend `{b}`)", String::from_utf8_lossy(msg)),
                ));
                return Ok(false);
            }
            Ok(_) => {}
            Err(e) => return Err(c.failed(e)),
        }
    }
    Ok(true)
}
