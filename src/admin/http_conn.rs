//! Bounds for the HTTP listeners: at most `max` connections at once (further clients wait in the
//! kernel's backlog until one closes), and a connection that moves no byte for `idle` is closed,
//! so slow or silent clients cannot pile up.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::{Instant, Sleep};

pub struct BoundedListener {
    inner: TcpListener,
    slots: Arc<Semaphore>,
    idle: Duration,
}

impl BoundedListener {
    pub fn new(inner: TcpListener, max: usize, idle: Duration) -> BoundedListener {
        BoundedListener {
            inner,
            slots: Arc::new(Semaphore::new(max.max(1))),
            idle,
        }
    }
}

impl axum::serve::Listener for BoundedListener {
    type Io = BoundedConn;
    type Addr = std::net::SocketAddr;

    async fn accept(&mut self) -> (BoundedConn, std::net::SocketAddr) {
        loop {
            let Ok(slot) = self.slots.clone().acquire_owned().await else {
                // The semaphore is never closed; wait rather than spin if it were.
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            };
            match self.inner.accept().await {
                Ok((stream, addr)) => {
                    let _ = stream.set_nodelay(true);
                    let conn = BoundedConn {
                        stream,
                        _slot: slot,
                        idle: self.idle,
                        deadline: Box::pin(tokio::time::sleep(self.idle)),
                    };
                    return (conn, addr);
                }
                Err(e) => {
                    tracing::warn!(error = %e, "HTTP accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
        }
    }

    fn local_addr(&self) -> io::Result<std::net::SocketAddr> {
        self.inner.local_addr()
    }
}

/// The client's address, handed to handlers as `ConnectInfo<Peer>` (the login throttle counts
/// failures per host).
#[derive(Debug, Clone, Copy)]
pub struct Peer(pub std::net::SocketAddr);

impl axum::extract::connect_info::Connected<axum::serve::IncomingStream<'_, BoundedListener>>
    for Peer
{
    fn connect_info(stream: axum::serve::IncomingStream<'_, BoundedListener>) -> Peer {
        Peer(*stream.remote_addr())
    }
}

/// A connection holding its slot, closed after `idle` without progress.
pub struct BoundedConn {
    stream: TcpStream,
    _slot: OwnedSemaphorePermit,
    idle: Duration,
    deadline: Pin<Box<Sleep>>,
}

impl BoundedConn {
    fn progressed(&mut self) {
        let next = Instant::now() + self.idle;
        self.deadline.as_mut().reset(next);
    }

    /// After the inner operation is pending: an error once the idle deadline passed.
    fn check_idle<T>(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<T>> {
        match self.deadline.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "HTTP connection idle too long",
            ))),
            Poll::Pending => Poll::Pending,
        }
    }
}

use std::future::Future;

impl AsyncRead for BoundedConn {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        match Pin::new(&mut this.stream).poll_read(cx, buf) {
            Poll::Ready(r) => {
                this.progressed();
                Poll::Ready(r)
            }
            Poll::Pending => this.check_idle(cx),
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
