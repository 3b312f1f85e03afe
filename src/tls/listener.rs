//! A whole connection of the ID-service and admin listeners, plain TCP or TLS (those listeners
//! never split a connection into halves, unlike the MySQL port), and the bounded handshake.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio_rustls::server::TlsStream;
use tokio_rustls::TlsAcceptor;

use super::rotation::RotatingCert;

use super::TlsError;
use crate::config::TlsFiles;

pub enum Stream {
    Plain(TcpStream),
    Tls(Box<TlsStream<TcpStream>>),
}

/// The TLS handshake if the listener has a certificate, within `limit`: a client that starts
/// one and stops cannot hold the connection longer.
pub async fn accept(
    acceptor: Option<&TlsAcceptor>,
    stream: TcpStream,
    limit: Duration,
) -> io::Result<Stream> {
    let Some(acceptor) = acceptor else {
        return Ok(Stream::Plain(stream));
    };
    match tokio::time::timeout(limit, acceptor.accept(stream)).await {
        Ok(tls) => Ok(Stream::Tls(Box::new(tls?))),
        Err(_) => Err(io::Error::new(
            io::ErrorKind::TimedOut,
            "TLS handshake not finished in time",
        )),
    }
}

/// An acceptor for a listener's own certificate files, offering `alpn` (e.g. `http/1.1`), and
/// the certificate it serves (read again on reload).
pub fn acceptor(
    files: &TlsFiles,
    alpn: &[&[u8]],
) -> Result<(TlsAcceptor, std::sync::Arc<RotatingCert>), TlsError> {
    let cert = RotatingCert::from_files(files)?;
    let what = format!("{} with {}", files.cert.display(), files.key.display());
    let cfg = super::server::server_config(cert.clone(), alpn, &what)?;
    Ok((TlsAcceptor::from(std::sync::Arc::new(cfg)), cert))
}

impl AsyncRead for Stream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Stream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_flush(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}
