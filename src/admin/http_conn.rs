//! One HTTP connection's socket under the listener's bounds: a connection must send its first
//! byte within the login timeout, then is closed after `idle` without progress; it is marked
//! idle (so the connection table may close it to make room) while no request is being read or
//! answered, and reads end as at EOF once the table closed it.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::{Instant, Sleep};

use crate::limits::conn_table::Slot;
use crate::tls::listener::Stream;

/// The client's address, handed to handlers as `ConnectInfo<Peer>` (the login throttle counts
/// failures per host).
#[derive(Debug, Clone, Copy)]
pub struct Peer(pub std::net::SocketAddr);

/// A connection holding its slot in the listener's table.
pub struct BoundedConn {
    stream: Stream,
    slot: Slot,
    idle: Duration,
    /// Until the first byte: the login timeout; then `idle` after the last progress.
    deadline: Pin<Box<Sleep>>,
    spoke: bool,
}

impl BoundedConn {
    /// `first_by`: when the first byte must have come (the login timeout from the accept).
    pub fn new(stream: Stream, slot: Slot, idle: Duration, first_by: Instant) -> BoundedConn {
        let first_by = first_by.min(Instant::now() + idle);
        BoundedConn {
            stream,
            slot,
            idle,
            deadline: Box::pin(tokio::time::sleep_until(first_by)),
            spoke: false,
        }
    }

    fn progressed(&mut self) {
        let next = Instant::now() + self.idle;
        self.deadline.as_mut().reset(next);
    }

    /// After the inner operation is pending: an error once the deadline passed.
    fn check_idle<T>(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<T>> {
        match self.deadline.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(io::Error::new(
                io::ErrorKind::TimedOut,
                if self.spoke {
                    "HTTP connection idle too long"
                } else {
                    "HTTP connection sent no request in time"
                },
            ))),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl AsyncRead for BoundedConn {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        if this.slot.handle.is_evicted() {
            // Closed to make room: as if the client had hung up.
            return Poll::Ready(Ok(()));
        }
        let before = buf.filled().len();
        match Pin::new(&mut this.stream).poll_read(cx, buf) {
            Poll::Ready(r) => {
                if buf.filled().len() > before {
                    this.slot.handle.set_idle(false);
                    this.spoke = true;
                }
                this.progressed();
                Poll::Ready(r)
            }
            Poll::Pending => {
                if this.slot.handle.poll_evicted(cx).is_ready() {
                    return Poll::Ready(Ok(()));
                }
                this.check_idle(cx)
            }
        }
    }
}

impl AsyncWrite for BoundedConn {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        match Pin::new(&mut this.stream).poll_write(cx, buf) {
            Poll::Ready(r) => {
                // An answer went out: until the next request's first byte, nothing is lost by
                // closing this connection.
                this.slot.handle.set_idle(true);
                this.progressed();
                Poll::Ready(r)
            }
            Poll::Pending => this.check_idle(cx),
        }
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = &mut *self;
        match Pin::new(&mut this.stream).poll_flush(cx) {
            Poll::Pending => this.check_idle(cx),
            ready => ready,
        }
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}
