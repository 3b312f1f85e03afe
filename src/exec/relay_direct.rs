//! The usual relayed statement in one future: the command queued on a backend connection is
//! sent, its answer awaited while the client is watched, and the answer relayed in one pass
//! (`relay_whole`) when it arrived whole. Polling one future instead of the general path's
//! nested ones (send, watch, relay, wait, bound) is most of what a relayed statement costs
//! idgate itself. Anything else (an answer not all arrived, a file request, a malformed
//! packet) is left where it lies for the general path.

use std::future::Future;
use std::task::Poll;

use tokio::io::{AsyncRead, AsyncWrite};

use super::backend::{BackendConn, BackendError};
use super::relay::{Client, Relayed};
use crate::wire::framing::PacketReader;

/// What `send_and_relay` came to.
pub enum Direct {
    Relayed(Relayed),
    /// The answer needs the general path (`relay::relay` continues from where it lies, with
    /// `Adjust::whole_tried`).
    Undone,
    /// The client closed its connection before the answer came: the backend connection is
    /// mid-answer and must not be used again (as with `client_watch::unless_client_leaves`).
    ClientLeft,
    /// The backend failed or did not answer in time; the connection is marked broken.
    Failed(BackendError),
}

/// Sends the command queued on `be` and relays its answer to `client`, watching `watched` (the
/// client's reader) once the command is sent, as the general path does. For answers
/// `relay_whole::applies` to only. A plain `poll_fn`, not an `async fn`: each layer of state
/// machine is one more place every poll of the session's task reads.
pub fn send_and_relay<'a, R: AsyncRead + Unpin, W: AsyncWrite + Unpin>(
    be: &'a mut BackendConn,
    watched: &'a mut PacketReader<R>,
    mut client: Client<'a, W>,
) -> impl Future<Output = Direct> + 'a {
    be.next_response();
    let mut sent = false;
    let mut until = None;
    std::future::poll_fn(move |cx| {
        if !sent {
            match be.poll_send(cx, &mut until) {
                Poll::Ready(Ok(())) => {
                    sent = true;
                    // The answer's wait has a bound of its own.
                    until = None;
                }
                Poll::Ready(Err(e)) => return Poll::Ready(Direct::Failed(e)),
                Poll::Pending => return Poll::Pending,
            }
        }
        match be.poll_answer(cx, &mut until) {
            Poll::Ready(Ok(())) => Poll::Ready(
                match super::relay_whole::relay_whole(be.unread(), &mut client, true) {
                    Some(relayed) => Direct::Relayed(relayed),
                    None => Direct::Undone,
                },
            ),
            Poll::Ready(Err(e)) => Poll::Ready(Direct::Failed(e)),
            Poll::Pending => watched.poll_closed(cx).map(|()| Direct::ClientLeft),
        }
    })
}
