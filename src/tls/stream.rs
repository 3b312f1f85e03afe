//! A connection's read and write halves, plain TCP or TLS, either of them carrying compressed
//! frames once a client asked for CLIENT_COMPRESS. Plain halves are tokio's owned TCP
//! halves (no lock between them); only a TLS stream, which reads and writes one shared state, is
//! split with a lock. Sessions and backend connections are one type either way, so the code
//! above is compiled once.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use rustls::pki_types::{CertificateDer, ServerName};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf, ReadHalf, WriteHalf};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpStream;
use tokio_rustls::{TlsAcceptor, TlsConnector, TlsStream};

use crate::wire::compressed::{self, CompressedRead, CompressedWrite};

pub enum NetRead {
    Plain(OwnedReadHalf),
    Tls(ReadHalf<TlsStream<TcpStream>>),
    Compressed(Box<CompressedRead<NetRead>>),
    /// Only while the connection is being switched to TLS (or after that failed).
    Detached,
}

pub enum NetWrite {
    Plain(OwnedWriteHalf),
    Tls(WriteHalf<TlsStream<TcpStream>>),
    Compressed(Box<CompressedWrite<NetWrite>>),
    Detached,
}

fn detached() -> io::Error {
    io::Error::new(
        io::ErrorKind::NotConnected,
        "connection closed during TLS setup",
    )
}

impl AsyncRead for NetRead {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            NetRead::Plain(s) => Pin::new(s).poll_read(cx, buf),
            other => other.poll_read_layered(cx, buf),
        }
    }
}

impl NetRead {
    /// The TLS and compressed reads, kept out of line: inlined, their buffers gave every plain
    /// read a 16 KiB stack frame to probe.
    #[cold]
    #[inline(never)]
    fn poll_read_layered(
        &mut self,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self {
            NetRead::Plain(s) => Pin::new(s).poll_read(cx, buf),
            NetRead::Tls(s) => Pin::new(s).poll_read(cx, buf),
            NetRead::Compressed(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
            NetRead::Detached => Poll::Ready(Err(detached())),
        }
    }
}

impl AsyncWrite for NetWrite {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            NetWrite::Plain(s) => Pin::new(s).poll_write(cx, buf),
            other => other.poll_write_layered(cx, buf),
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            NetWrite::Plain(s) => Pin::new(s).poll_write_vectored(cx, bufs),
            NetWrite::Tls(s) => Pin::new(s).poll_write_vectored(cx, bufs),
            NetWrite::Compressed(s) => Pin::new(s.as_mut()).poll_write_vectored(cx, bufs),
            NetWrite::Detached => Poll::Ready(Err(detached())),
        }
    }

    fn is_write_vectored(&self) -> bool {
        match self {
            NetWrite::Plain(s) => s.is_write_vectored(),
            NetWrite::Tls(s) => s.is_write_vectored(),
            NetWrite::Compressed(_) => false,
            NetWrite::Detached => false,
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            NetWrite::Plain(s) => Pin::new(s).poll_flush(cx),
            other => other.poll_flush_layered(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            NetWrite::Plain(s) => Pin::new(s).poll_shutdown(cx),
            NetWrite::Tls(s) => Pin::new(s).poll_shutdown(cx),
            NetWrite::Compressed(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
            NetWrite::Detached => Poll::Ready(Ok(())),
        }
    }
}

impl NetWrite {
    /// The TLS and compressed writes and flushes, kept out of line as the reads are: inlined,
    /// they gave every plain write the registers and stack of theirs to save and restore.
    #[cold]
    #[inline(never)]
    fn poll_write_layered(&mut self, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        match self {
            NetWrite::Plain(s) => Pin::new(s).poll_write(cx, buf),
            NetWrite::Tls(s) => Pin::new(s).poll_write(cx, buf),
            NetWrite::Compressed(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
            NetWrite::Detached => Poll::Ready(Err(detached())),
        }
    }

    #[cold]
    #[inline(never)]
    fn poll_flush_layered(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self {
            NetWrite::Plain(s) => Pin::new(s).poll_flush(cx),
            NetWrite::Tls(s) => Pin::new(s).poll_flush(cx),
            NetWrite::Compressed(s) => Pin::new(s.as_mut()).poll_flush(cx),
            NetWrite::Detached => Poll::Ready(Err(detached())),
        }
    }
}

impl NetRead {
    pub fn is_tls(&self) -> bool {
        match self {
            NetRead::Tls(_) => true,
            NetRead::Compressed(c) => c.get_ref().is_tls(),
            _ => false,
        }
    }
}

/// Takes the plain halves back out as one socket; both ends are left `Detached`.
fn take_tcp(r: &mut NetRead, w: &mut NetWrite) -> io::Result<TcpStream> {
    match (
        std::mem::replace(r, NetRead::Detached),
        std::mem::replace(w, NetWrite::Detached),
    ) {
        (NetRead::Plain(r), NetWrite::Plain(w)) => r
            .reunite(w)
            .map_err(|_| io::Error::other("read and write halves of different sockets")),
        _ => Err(io::Error::other("the connection is not plain TCP")),
    }
}

/// Puts compressed frames under both halves (after the login's OK, as MariaDB does); `limit`
/// bounds a frame. Nothing may be buffered above the read half.
pub fn compress(r: &mut NetRead, w: &mut NetWrite, limit: usize) {
    let (cr, cw) = compressed::wrap(
        std::mem::replace(r, NetRead::Detached),
        std::mem::replace(w, NetWrite::Detached),
        limit,
    );
    *r = NetRead::Compressed(Box::new(cr));
    *w = NetWrite::Compressed(Box::new(cw));
}

fn put_tls(r: &mut NetRead, w: &mut NetWrite, tls: TlsStream<TcpStream>) {
    let (tr, tw) = tokio::io::split(tls);
    *r = NetRead::Tls(tr);
    *w = NetWrite::Tls(tw);
}

/// Server side: runs the TLS handshake on the socket, which then carries the rest encrypted,
/// and returns the certificate the client presented (verified against `tls.ca`), if any.
/// Nothing may be buffered above the halves (the client's ClientHello must still be in the
/// socket).
pub async fn accept(
    r: &mut NetRead,
    w: &mut NetWrite,
    acceptor: &TlsAcceptor,
) -> io::Result<Option<CertificateDer<'static>>> {
    let tcp = take_tcp(r, w)?;
    let tls = acceptor.accept(tcp).await?;
    let peer = tls
        .get_ref()
        .1
        .peer_certificates()
        .and_then(|c| c.first())
        .map(|c| c.clone().into_owned());
    put_tls(r, w, TlsStream::Server(tls));
    Ok(peer)
}

/// Client side (to a backend), as `accept`.
pub async fn connect(
    r: &mut NetRead,
    w: &mut NetWrite,
    connector: &TlsConnector,
    name: ServerName<'static>,
) -> io::Result<()> {
    let tcp = take_tcp(r, w)?;
    let tls = connector.connect(name, tcp).await?;
    put_tls(r, w, TlsStream::Client(tls));
    Ok(())
}
