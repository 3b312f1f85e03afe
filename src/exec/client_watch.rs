//! A client that goes away while its statement runs on a backend: MariaDB stops the statement of
//! a vanished client (a `GET_LOCK` wait, a long `SELECT`), so idgate does too instead of leaving
//! it running, holding its locks, until it ends by itself.

use std::future::Future;
use std::time::Duration;

use tokio::io::AsyncRead;

use crate::wire::framing::PacketReader;

/// Statements answered sooner are not watched at all: the watch costs a timer only, and the
/// client's socket is looked at only for statements that run longer than this.
const WATCH_AFTER: Duration = Duration::from_millis(50);

/// Runs `work` (a backend's answer being relayed); `None` if the client closed its connection
/// before `work` finished (then `work` is dropped mid-answer and its backend connection must not
/// be used again).
pub async fn unless_client_leaves<R, T>(
    reader: &mut PacketReader<R>,
    work: impl Future<Output = T>,
) -> Option<T>
where
    R: AsyncRead + Unpin,
{
    let watch = async {
        tokio::time::sleep(WATCH_AFTER).await;
        reader.closed().await;
    };
    tokio::select! {
        biased;
        out = work => Some(out),
        () = watch => None,
    }
}
