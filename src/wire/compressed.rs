//! The compressed protocol (CLIENT_COMPRESS) between a client and idgate, under the packet reader
//! and writer: each direction becomes a stream of frames (a 7-byte header, then zlib data or
//! plain bytes) carrying the usual packets. Frames are read with mysql_common's `CompDecoder`;
//! they are written here with flate2, because mysql_common's `compress` cuts short a frame whose
//! data does not shrink (its output buffer is sized by the input), which a client then cannot
//! inflate.
//!
//! Frame sequence ids run across both directions as on MariaDB: a client's command starts at 0,
//! and idgate's answer continues from the last frame it read. Frames are decoded only when the
//! packet reader asks for bytes, so the counter follows the command being answered.

use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::task::{ready, Context, Poll};

use bytes::{Buf, BytesMut};
use flate2::write::ZlibEncoder;
use flate2::Compression;
use mysql_common::constants::{MAX_PAYLOAD_LEN, MIN_COMPRESS_LENGTH};
use mysql_common::proto::codec::{ChunkInfo, CompDecoder};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// The read half: frames in, the packets they carry out.
pub struct CompressedRead<R> {
    inner: R,
    /// Frames as received, up to one whole frame (its size is checked against `limit` as soon
    /// as its header is in).
    raw: BytesMut,
    /// What the last frame carried, not yet handed out.
    plain: BytesMut,
    decoder: CompDecoder,
    limit: usize,
    next_seq: Arc<AtomicU8>,
}

/// The write half: packets in, frames out when flushed.
pub struct CompressedWrite<W> {
    inner: W,
    /// Packets written since the last flush.
    pending: BytesMut,
    /// Frames not yet taken by the socket.
    out: BytesMut,
    next_seq: Arc<AtomicU8>,
}

/// Wraps a connection's two halves; `limit` bounds a frame (compressed or not) as it bounds a
/// packet.
pub fn wrap<R, W>(r: R, w: W, limit: usize) -> (CompressedRead<R>, CompressedWrite<W>) {
    let next_seq = Arc::new(AtomicU8::new(0));
    let read = CompressedRead {
        inner: r,
        raw: BytesMut::new(),
        plain: BytesMut::new(),
        decoder: CompDecoder::Idle,
        limit,
        next_seq: next_seq.clone(),
    };
    let write = CompressedWrite {
        inner: w,
        pending: BytesMut::new(),
        out: BytesMut::new(),
        next_seq,
    };
    (read, write)
}

impl<R> CompressedRead<R> {
    pub fn get_ref(&self) -> &R {
        &self.inner
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for CompressedRead<R> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let me = self.get_mut();
        loop {
            if !me.plain.is_empty() {
                let n = buf.remaining().min(me.plain.len());
                buf.put_slice(&me.plain[..n]);
                me.plain.advance(n);
                if me.plain.is_empty() && me.plain.capacity() > 1 << 20 {
                    me.plain = BytesMut::new();
                }
                return Poll::Ready(Ok(()));
            }
            match me.decoder.decode(&mut me.raw, &mut me.plain, me.limit) {
                Ok(Some(ChunkInfo::Last(seq) | ChunkInfo::Middle(seq))) => {
                    me.next_seq.store(seq.wrapping_add(1), Ordering::Relaxed);
                    continue;
                }
                Ok(None) => {}
                Err(e) => {
                    return Poll::Ready(Err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        format!("compressed frame: {e}"),
                    )))
                }
            }
            let mut chunk = [0u8; 16 * 1024];
            let mut got = ReadBuf::new(&mut chunk);
            ready!(Pin::new(&mut me.inner).poll_read(cx, &mut got))?;
            if got.filled().is_empty() {
                // The peer closed: the reader above sees the end (mid-frame, mid-packet).
                return Poll::Ready(Ok(()));
            }
            me.raw.extend_from_slice(got.filled());
        }
    }
}

impl<W: AsyncWrite + Unpin> CompressedWrite<W> {
    fn frame_pending(&mut self) -> io::Result<()> {
        let mut seq = self.next_seq.load(Ordering::Relaxed);
        for chunk in self.pending.chunks(MAX_PAYLOAD_LEN) {
            put_frame(&mut self.out, seq, chunk)?;
            seq = seq.wrapping_add(1);
        }
        self.next_seq.store(seq, Ordering::Relaxed);
        self.pending.clear();
        if self.pending.capacity() > 1 << 20 {
            self.pending = BytesMut::new();
        }
        Ok(())
    }
}

/// One frame of `chunk` (at most 16 MiB - 1), deflated when that makes it smaller, as MariaDB
/// writes them (short or incompressible data goes as is, with an uncompressed length of 0).
fn put_frame(out: &mut BytesMut, seq: u8, chunk: &[u8]) -> io::Result<()> {
    let header = |out: &mut BytesMut, len: usize, plain: usize| {
        out.extend_from_slice(&(len as u32).to_le_bytes()[..3]);
        out.extend_from_slice(&[seq]);
        out.extend_from_slice(&(plain as u32).to_le_bytes()[..3]);
    };
    if chunk.len() >= MIN_COMPRESS_LENGTH {
        let mut z = ZlibEncoder::new(Vec::with_capacity(chunk.len() / 2), Compression::default());
        io::Write::write_all(&mut z, chunk)?;
        let z = z.finish()?;
        if z.len() < chunk.len() {
            header(out, z.len(), chunk.len());
            out.extend_from_slice(&z);
            return Ok(());
        }
    }
    header(out, chunk.len(), 0);
    out.extend_from_slice(chunk);
    Ok(())
}

impl<W: AsyncWrite + Unpin> AsyncWrite for CompressedWrite<W> {
    fn poll_write(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        // Framed at the flush: the packet writer flushes after each answer (and while a long
        // one streams), so its buffer bounds what waits here.
        self.get_mut().pending.extend_from_slice(buf);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let me = self.get_mut();
        me.frame_pending()?;
        while !me.out.is_empty() {
            let n = ready!(Pin::new(&mut me.inner).poll_write(cx, &me.out))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            me.out.advance(n);
        }
        if me.out.capacity() > 1 << 20 {
            me.out = BytesMut::new();
        }
        Pin::new(&mut me.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        ready!(self.as_mut().poll_flush(cx))?;
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    fn rt() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime")
    }

    #[test]
    fn what_one_side_writes_the_other_reads_with_sequences_continuing() {
        rt().block_on(async {
            let (a, b) = tokio::io::duplex(1 << 20);
            let (ar, aw) = tokio::io::split(a);
            let (br, bw) = tokio::io::split(b);
            let (mut client_r, mut client_w) = wrap(ar, aw, 1 << 24);
            let (mut server_r, mut server_w) = wrap(br, bw, 1 << 24);
            // A command (frame 0), then an answer long enough to be deflated.
            client_w
                .write_all(b"\x05\x00\x00\x00\x03hello")
                .await
                .unwrap();
            client_w.flush().await.unwrap();
            let mut got = [0u8; 10];
            server_r.read_exact(&mut got).await.unwrap();
            assert_eq!(&got, b"\x05\x00\x00\x00\x03hello");
            let answer = vec![b'x'; 5000];
            server_w.write_all(&answer).await.unwrap();
            server_w.flush().await.unwrap();
            assert_eq!(
                server_w.next_seq.load(Ordering::Relaxed),
                2,
                "frame 1 was sent"
            );
            let mut back = vec![0u8; answer.len()];
            client_r.read_exact(&mut back).await.unwrap();
            assert_eq!(back, answer);
            assert!(server_w.out.is_empty());
        });
    }

    #[test]
    fn data_that_does_not_shrink_goes_uncompressed_and_whole() {
        let mut out = BytesMut::new();
        // 59 bytes of no pattern: zlib's output would be longer.
        let chunk: Vec<u8> = (0..59u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        put_frame(&mut out, 1, &chunk).unwrap();
        assert_eq!(&out[..7], &[59, 0, 0, 1, 0, 0, 0]);
        assert_eq!(&out[7..], &chunk[..]);
        // Repetitive data shrinks and inflates back to itself.
        let mut out = BytesMut::new();
        put_frame(&mut out, 2, &[b'a'; 500]).unwrap();
        let len = u32::from_le_bytes([out[0], out[1], out[2], 0]) as usize;
        assert_eq!((out[3], &out[4..7]), (2, &[0xf4, 0x01, 0x00][..]));
        let mut plain = Vec::new();
        io::Read::read_to_end(
            &mut flate2::read::ZlibDecoder::new(&out[7..7 + len]),
            &mut plain,
        )
        .unwrap();
        assert_eq!(plain, vec![b'a'; 500]);
    }

    #[test]
    fn a_frame_over_the_limit_is_refused_before_its_body_arrives() {
        rt().block_on(async {
            let (a, mut b) = tokio::io::duplex(1024);
            let (ar, aw) = tokio::io::split(a);
            let (mut r, _w) = wrap(ar, aw, 1000);
            // Claims 4000 bytes compressed into 2000: refused from the header alone.
            b.write_all(&[0xd0, 0x07, 0x00, 0x00, 0xa0, 0x0f, 0x00])
                .await
                .unwrap();
            let mut one = [0u8; 1];
            let err = r.read(&mut one).await.unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::InvalidData);
        });
    }

    #[test]
    fn garbage_in_a_frame_is_an_error_not_a_panic() {
        rt().block_on(async {
            let (a, mut b) = tokio::io::duplex(1024);
            let (ar, aw) = tokio::io::split(a);
            let (mut r, _w) = wrap(ar, aw, 1 << 20);
            // 10 bytes said to inflate to 100, which are not zlib data.
            let mut frame = vec![0x0a, 0x00, 0x00, 0x00, 0x64, 0x00, 0x00];
            frame.extend_from_slice(&[0x55; 10]);
            b.write_all(&frame).await.unwrap();
            let mut one = [0u8; 1];
            assert!(r.read(&mut one).await.is_err());
        });
    }
}
