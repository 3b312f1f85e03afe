//! A client that goes away while its statement runs on a backend: MariaDB stops the statement of
//! a vanished client (a `GET_LOCK` wait, a long `SELECT`), so idgate does too instead of leaving
//! it running, holding its locks, until it ends by itself.

use std::future::Future;

use tokio::io::AsyncRead;

use crate::wire::framing::PacketReader;

/// Runs `work` (a backend's answer being relayed); `None` if the client closed its connection
/// before `work` finished (then `work` is dropped mid-answer and its backend connection must not
/// be used again). The client's socket is watched from the start: while it has nothing to say,
/// looking costs no system call (the runtime knows it is not readable) and no timer.
pub async fn unless_client_leaves<R, T>(
    reader: &mut PacketReader<R>,
    work: impl Future<Output = T>,
) -> Option<T>
where
    R: AsyncRead + Unpin,
{
    tokio::select! {
        biased;
        out = work => Some(out),
        () = reader.closed() => None,
    }
}
