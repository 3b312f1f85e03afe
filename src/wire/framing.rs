//! MySQL packet framing over any byte stream: 3-byte length, 1-byte sequence id, payloads of
//! 16 MiB - 1 and more split into continuation packets. Used on both sides of idgate (clients and
//! backends). Writes are buffered and only reach the socket on `flush` or when the buffer is large,
//! so a result set costs a few syscalls, not one per row.

use std::io;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};

/// Largest payload a single physical packet carries; a payload of exactly this size or more is
/// continued in the next packet.
pub const MAX_CHUNK: usize = 0xff_ffff;

/// Payloads up to this size are read into a buffer sized from the header at once; larger ones
/// grow as their bytes arrive.
const PRESIZE: usize = 64 * 1024;

/// Buffered bytes after which the writer flushes on its own while a response is being streamed.
const FLUSH_AT: usize = 64 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    #[error("connection closed")]
    Closed,
    #[error("i/o: {0}")]
    Io(#[from] io::Error),
    /// The peer sent a packet larger than `limit`; the payload was skipped.
    #[error("packet of {size} bytes is larger than the {limit}-byte limit")]
    TooLarge { size: usize, limit: usize },
    #[error("packets out of order: expected sequence id {expected}, got {got}")]
    OutOfOrder { expected: u8, got: u8 },
}

/// Whether a packet numbered `got` breaks the sequence `seq` expects (never over compressed
/// frames, where the sequence continues from it).
fn out_of_order(seq: &mut u8, compressed: bool, got: u8) -> bool {
    if compressed {
        *seq = got;
        return false;
    }
    got != *seq
}

pub struct PacketReader<R> {
    inner: BufReader<R>,
    /// Sequence id the next packet from the peer must carry.
    pub seq: u8,
    limit: usize,
    /// Compressed frames underneath (CLIENT_COMPRESS): packets' sequence ids are not checked,
    /// as MariaDB does not (clients renumber them with each frame), and `closed` does not watch
    /// (it would decode the client's next command early and restart the frames' numbering).
    compressed: bool,
}

impl<R: AsyncRead + Unpin> PacketReader<R> {
    pub fn new(inner: R, limit: usize) -> Self {
        PacketReader {
            inner: BufReader::with_capacity(64 * 1024, inner),
            seq: 0,
            limit,
            compressed: false,
        }
    }

    /// The stream underneath now carries compressed frames (see `compressed`).
    pub fn set_compressed(&mut self) {
        self.compressed = true;
    }

    pub fn set_limit(&mut self, limit: usize) {
        self.limit = limit;
    }

    /// Resolves once the peer has closed its side (or its socket failed) with nothing left
    /// unread. While it is connected, or once it has sent bytes (they stay buffered for the
    /// next `read`, at most the buffer's capacity), it never resolves. Cancel-safe.
    pub async fn closed(&mut self) {
        std::future::poll_fn(|cx| self.poll_closed(cx)).await
    }

    /// `closed`, polled by hand.
    pub fn poll_closed(&mut self, cx: &mut std::task::Context<'_>) -> std::task::Poll<()> {
        use std::task::Poll;
        use tokio::io::AsyncBufRead;
        if self.compressed {
            return Poll::Pending;
        }
        match std::pin::Pin::new(&mut self.inner).poll_fill_buf(cx) {
            // Bytes stay buffered, and are found again at every later look: never resolves.
            Poll::Ready(Ok(bytes)) if !bytes.is_empty() => Poll::Pending,
            Poll::Ready(_) => Poll::Ready(()),
            Poll::Pending => Poll::Pending,
        }
    }

    /// Whether the peer sent something or closed while nobody asked it anything (a server that
    /// killed an idle connection sends its error and closes). Looks without waiting: costs no
    /// system call while the runtime knows the socket is not readable.
    pub fn spoke_unasked(&mut self) -> bool {
        if !self.inner.buffer().is_empty() {
            return true;
        }
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        !self.compressed && self.poll_closed_or_spoke(&mut cx)
    }

    fn poll_closed_or_spoke(&mut self, cx: &mut std::task::Context<'_>) -> bool {
        use tokio::io::AsyncBufRead;
        std::pin::Pin::new(&mut self.inner)
            .poll_fill_buf(cx)
            .is_ready()
    }

    /// Reads one logical packet (joining continuations) into `buf`, replacing its content.
    /// A packet over the limit is read to its end and discarded, so the stream stays in step.
    pub async fn read(&mut self, buf: &mut Vec<u8>) -> Result<(), FrameError> {
        use tokio::io::AsyncBufReadExt;
        buf.clear();
        let mut total = 0usize;
        let mut first = true;
        if self.inner.buffer().is_empty() {
            // Wait for bytes once: a whole packet then usually sits in the buffer.
            match self.inner.fill_buf().await {
                Ok([]) => return Err(FrameError::Closed),
                Ok(_) => {}
                Err(e) => return Err(FrameError::Io(e)),
            }
        }
        loop {
            if let Some(more) = self.take_buffered(buf, &mut total)? {
                if !more {
                    return Ok(());
                }
                first = false;
                continue;
            }
            let mut header = [0u8; 4];
            if let Err(e) = self.inner.read_exact(&mut header).await {
                return Err(if first && e.kind() == io::ErrorKind::UnexpectedEof {
                    FrameError::Closed
                } else {
                    FrameError::Io(e)
                });
            }
            first = false;
            let len = u32::from_le_bytes([header[0], header[1], header[2], 0]) as usize;
            if out_of_order(&mut self.seq, self.compressed, header[3]) {
                return Err(FrameError::OutOfOrder {
                    expected: self.seq,
                    got: header[3],
                });
            }
            self.seq = self.seq.wrapping_add(1);
            total += len;
            if total > self.limit {
                self.skip(len).await?;
                buf.clear();
                if len == MAX_CHUNK {
                    continue; // keep skipping the continuation
                }
                return Err(FrameError::TooLarge {
                    size: total,
                    limit: self.limit,
                });
            }
            if len <= PRESIZE {
                let start = buf.len();
                buf.resize(start + len, 0);
                self.inner.read_exact(&mut buf[start..]).await?;
            } else {
                // The buffer grows with the bytes that arrive, not with what the header claims:
                // a peer announcing 16 MiB and sending nothing costs no memory.
                let got = (&mut self.inner).take(len as u64).read_to_end(buf).await?;
                if got < len {
                    return Err(FrameError::Io(io::ErrorKind::UnexpectedEof.into()));
                }
            }
            if len < MAX_CHUNK {
                return Ok(());
            }
        }
    }

    /// A whole packet already in the buffer (one that no continuation follows) into `buf`,
    /// without a future: `Ok(false)` when there is none (`buf` cleared, nothing taken from the
    /// stream; `read` then waits).
    /// Most packets of an answer arrive together, and only its first needs to wait.
    pub fn read_buffered(&mut self, buf: &mut Vec<u8>) -> Result<bool, FrameError> {
        let Some(header) = self.inner.buffer().get(..4) else {
            return Ok(false);
        };
        let len = u32::from_le_bytes([header[0], header[1], header[2], 0]) as usize;
        if len >= MAX_CHUNK {
            return Ok(false);
        }
        buf.clear();
        Ok(self.take_buffered(buf, &mut 0)?.is_some())
    }

    /// Waits until bytes are buffered (at once when some are): the start of a peer's answer.
    pub async fn fill(&mut self) -> Result<(), FrameError> {
        std::future::poll_fn(|cx| self.poll_fill(cx)).await
    }

    /// `fill`, polled by hand.
    pub fn poll_fill(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), FrameError>> {
        use std::task::Poll;
        use tokio::io::AsyncBufRead;
        if !self.inner.buffer().is_empty() {
            return Poll::Ready(Ok(()));
        }
        match std::pin::Pin::new(&mut self.inner).poll_fill_buf(cx) {
            Poll::Ready(Ok([])) => Poll::Ready(Err(FrameError::Closed)),
            Poll::Ready(Ok(_)) => Poll::Ready(Ok(())),
            Poll::Ready(Err(e)) => Poll::Ready(Err(FrameError::Io(e))),
            Poll::Pending => Poll::Pending,
        }
    }

    /// The whole packets already buffered, looked at in place; none is taken until
    /// `take_walked`.
    pub fn buffered_packets(&self) -> BufferedPackets<'_> {
        BufferedPackets {
            buf: self.inner.buffer(),
            at: 0,
            seq: self.seq,
            limit: self.limit,
            compressed: self.compressed,
        }
    }

    /// Takes the packets a walk went past (they were used where they lay).
    pub fn take_walked(&mut self, walked: Walked) {
        use tokio::io::AsyncBufRead;
        std::pin::Pin::new(&mut self.inner).consume(walked.bytes);
        self.seq = walked.seq;
    }

    /// One whole physical packet out of the buffer without waiting (one copy, no zeroing):
    /// `Some(true)` when a continuation follows; `None` when it has not all arrived or is over
    /// the limit (the waiting path reads or skips it).
    fn take_buffered(
        &mut self,
        buf: &mut Vec<u8>,
        total: &mut usize,
    ) -> Result<Option<bool>, FrameError> {
        use tokio::io::AsyncBufRead;
        let avail = self.inner.buffer();
        let Some(header) = avail.get(..4) else {
            return Ok(None);
        };
        let len = u32::from_le_bytes([header[0], header[1], header[2], 0]) as usize;
        let Some(payload) = avail.get(4..4 + len) else {
            return Ok(None);
        };
        if *total + len > self.limit {
            return Ok(None);
        }
        if out_of_order(&mut self.seq, self.compressed, header[3]) {
            return Err(FrameError::OutOfOrder {
                expected: self.seq,
                got: header[3],
            });
        }
        buf.extend_from_slice(payload);
        std::pin::Pin::new(&mut self.inner).consume(4 + len);
        self.seq = self.seq.wrapping_add(1);
        *total += len;
        Ok(Some(len == MAX_CHUNK))
    }

    /// Reads one packet straight from the stream, never past its end, so whatever follows stays
    /// in the socket (the TLS ClientHello a client sends right after its SSLRequest). Only for a
    /// packet under the limit with nothing buffered; anything else is an error.
    pub async fn read_unbuffered(&mut self, buf: &mut Vec<u8>) -> Result<(), FrameError> {
        if !self.inner.buffer().is_empty() {
            return Err(FrameError::Io(io::Error::other(
                "bytes already buffered before an unbuffered read",
            )));
        }
        let stream = self.inner.get_mut();
        let mut header = [0u8; 4];
        if let Err(e) = stream.read_exact(&mut header).await {
            return Err(if e.kind() == io::ErrorKind::UnexpectedEof {
                FrameError::Closed
            } else {
                FrameError::Io(e)
            });
        }
        let len = u32::from_le_bytes([header[0], header[1], header[2], 0]) as usize;
        if out_of_order(&mut self.seq, self.compressed, header[3]) {
            return Err(FrameError::OutOfOrder {
                expected: self.seq,
                got: header[3],
            });
        }
        if len > self.limit || len == MAX_CHUNK {
            return Err(FrameError::TooLarge {
                size: len,
                limit: self.limit,
            });
        }
        self.seq = self.seq.wrapping_add(1);
        buf.clear();
        buf.resize(len, 0);
        stream.read_exact(buf).await?;
        Ok(())
    }

    /// The stream underneath, to replace it (by an encrypted one) between packets; `buffered`
    /// must be 0 then.
    pub fn stream_mut(&mut self) -> &mut R {
        self.inner.get_mut()
    }

    /// Bytes read from the stream and not yet returned as packets.
    pub fn buffered(&self) -> usize {
        self.inner.buffer().len()
    }

    /// Discards `len` bytes from the reader's own buffer. No buffer of its own: an array here
    /// would live in every `read` future and be copied each time one moves.
    async fn skip(&mut self, mut len: usize) -> Result<(), FrameError> {
        use tokio::io::AsyncBufReadExt;
        while len > 0 {
            let n = self.inner.fill_buf().await?.len().min(len);
            if n == 0 {
                return Err(FrameError::Io(io::ErrorKind::UnexpectedEof.into()));
            }
            self.inner.consume(n);
            len -= n;
        }
        Ok(())
    }
}

/// The payloads of the whole packets in a reader's buffer, in order, without taking them. The
/// walk ends where `read` has something to do: a packet not all arrived, one continued (16 MiB
/// or more) or over the limit, or one out of sequence (`read` reports it).
pub struct BufferedPackets<'a> {
    buf: &'a [u8],
    at: usize,
    seq: u8,
    limit: usize,
    compressed: bool,
}

/// How far a walk over buffered packets went: what `PacketReader::take_walked` takes.
#[derive(Debug, Clone, Copy)]
pub struct Walked {
    bytes: usize,
    seq: u8,
}

impl<'a> BufferedPackets<'a> {
    pub fn walked(&self) -> Walked {
        Walked {
            bytes: self.at,
            seq: self.seq,
        }
    }

    /// Where the walk stands: the end of the last packet it passed.
    pub fn at(&self) -> usize {
        self.at
    }

    /// The packets passed between two points of the walk, framed as they arrived.
    pub fn framed(&self, from: usize, to: usize) -> &'a [u8] {
        self.buf.get(from..to).unwrap_or_default()
    }
}

impl<'a> Iterator for BufferedPackets<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        let header = self.buf.get(self.at..self.at + 4)?;
        let len = u32::from_le_bytes([header[0], header[1], header[2], 0]) as usize;
        if len >= MAX_CHUNK || len > self.limit {
            return None;
        }
        let mut seq = self.seq;
        if out_of_order(&mut seq, self.compressed, header[3]) {
            return None;
        }
        let payload = self.buf.get(self.at + 4..self.at + 4 + len)?;
        self.seq = seq.wrapping_add(1);
        self.at += 4 + len;
        Some(payload)
    }
}

pub struct PacketWriter<W> {
    inner: W,
    buf: Vec<u8>,
    /// How much of `buf` a flush under way has written.
    sent: usize,
    /// Sequence id of the next packet written.
    pub seq: u8,
    /// Longest a flush may wait for the peer to take the bytes (MariaDB's net_write_timeout).
    timeout: Option<crate::limits::Deadline>,
    /// Counts every ERR packet written (a client connection's writer; see `count_errors`).
    errors: Option<std::sync::Arc<crate::metrics::client_errors::ClientErrors>>,
    /// The peer agreed on MariaDB's extended column metadata: the column definitions idgate
    /// writes itself carry the (empty) field too.
    pub extended_metadata: bool,
}

impl<W: AsyncWrite + Unpin> PacketWriter<W> {
    pub fn new(inner: W) -> Self {
        PacketWriter {
            inner,
            buf: Vec::with_capacity(16 * 1024),
            sent: 0,
            seq: 0,
            timeout: None,
            errors: None,
            extended_metadata: false,
        }
    }

    /// Counts the code of every ERR packet this writer sends from now on. An ERR packet is the
    /// only one whose payload starts with 0xFF (no row, column count or greeting can), so the
    /// writer sees every error a client gets, idgate's own and relayed ones alike.
    pub fn count_errors(
        &mut self,
        sink: std::sync::Arc<crate::metrics::client_errors::ClientErrors>,
    ) {
        self.errors = Some(sink);
    }

    /// The stream underneath, to replace it between packets (flush first).
    pub fn stream_mut(&mut self) -> &mut W {
        &mut self.inner
    }

    /// Bounds every flush: a peer that stops reading gets a `TimedOut` error instead of
    /// holding the writer forever.
    pub fn set_timeout(&mut self, timeout: std::time::Duration) {
        self.timeout = Some(crate::limits::Deadline::new(timeout));
    }

    /// The underlying stream (tests read what was written to a `Vec<u8>`).
    pub fn inner(&self) -> &W {
        &self.inner
    }

    /// Where the writer is now, to `rollback` to.
    pub fn mark(&self) -> (usize, u8) {
        (self.buf.len(), self.seq)
    }

    /// Forgets what was written since `mark` (none of it was flushed: flushing is async, and
    /// the caller wrote in one go). An ERR packet written meanwhile stays counted: roll back
    /// only what holds none.
    pub fn rollback(&mut self, (len, seq): (usize, u8)) {
        self.buf.truncate(len);
        self.seq = seq;
    }

    /// Starts a packet whose payload the caller appends to the returned buffer; finish with `end`.
    pub fn begin(&mut self) -> usize {
        let start = self.buf.len();
        self.buf.extend_from_slice(&[0; 4]);
        start
    }

    pub fn payload(&mut self) -> &mut Vec<u8> {
        &mut self.buf
    }

    /// Completes the packet opened at `start`, splitting it if it reached 16 MiB.
    pub fn end(&mut self, start: usize) {
        let len = self.buf.len() - start - 4;
        self.count_error(start + 4);
        if len < MAX_CHUNK {
            self.buf[start..start + 3].copy_from_slice(&(len as u32).to_le_bytes()[..3]);
            self.buf[start + 3] = self.seq;
            self.seq = self.seq.wrapping_add(1);
        } else {
            let payload = self.buf.split_off(start + 4);
            self.buf.truncate(start);
            self.write_chunks(&payload);
        }
    }

    /// Counts the ERR packet whose payload starts at `at`, if it is one.
    fn count_error(&self, at: usize) {
        if let (Some(sink), Some(&[0xff, lo, hi])) = (&self.errors, self.buf.get(at..at + 3)) {
            sink.record(u16::from_le_bytes([lo, hi]));
        }
    }

    /// Appends whole packets framed elsewhere (none continued), renumbered to go on with this
    /// writer's sequence, in one copy; ERR packets among them are counted as `write` counts.
    pub fn write_framed(&mut self, framed: &[u8]) {
        let mut at = self.buf.len();
        self.buf.extend_from_slice(framed);
        while let Some(header) = self.buf.get_mut(at..at + 4) {
            let len = u32::from_le_bytes([header[0], header[1], header[2], 0]) as usize;
            header[3] = self.seq;
            self.seq = self.seq.wrapping_add(1);
            // A shorter payload is no ERR, and the next packet's header follows it.
            if len >= 3 {
                self.count_error(at + 4);
            }
            at += 4 + len;
        }
    }

    /// As `write_framed`, for the last packets of an answer: when nothing written before them
    /// waits to be sent and they are numbered as this writer goes on (as a relayed answer
    /// usually is), they are sent from where they lie without waiting, and only what the peer
    /// does not take at once is copied, for the next flush (which bounds the wait for the
    /// rest). A relayed answer that arrived whole then costs no copy.
    pub fn write_framed_now(&mut self, framed: &[u8]) {
        if !self.buf.is_empty() {
            self.write_framed(framed);
            return;
        }
        // One pass over the headers: the numbering, and whether any packet is an ERR.
        let (mut at, mut seq, mut errors) = (0, self.seq, false);
        while let Some(header) = framed.get(at..at + 4) {
            if header[3] != seq {
                self.write_framed(framed);
                return;
            }
            seq = seq.wrapping_add(1);
            let len = u32::from_le_bytes([header[0], header[1], header[2], 0]) as usize;
            // A shorter payload is no ERR, and the next packet's header follows it.
            errors |= len >= 3 && framed.get(at + 4) == Some(&0xff);
            at += 4 + len;
        }
        if errors && self.errors.is_some() {
            // Rare (an answer ending in an error): counted as `write_framed` counts them.
            let mut at = 0;
            while let Some(header) = framed.get(at..at + 4) {
                let len = u32::from_le_bytes([header[0], header[1], header[2], 0]) as usize;
                if let (true, Some(sink), Some(&[0xff, lo, hi])) =
                    (len >= 3, &self.errors, framed.get(at + 4..at + 7))
                {
                    sink.record(u16::from_le_bytes([lo, hi]));
                }
                at += 4 + len;
            }
        }
        self.seq = seq;
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        let sent = match std::pin::Pin::new(&mut self.inner).poll_write(&mut cx, framed) {
            std::task::Poll::Ready(Ok(n)) => n,
            // Left to the flush, which waits for the peer. A failed stream took nothing its
            // peer will see (TLS may have taken the plaintext, never to send it): the flush
            // fails the same way and reports it.
            _ => 0,
        };
        if let Some(rest) = framed.get(sent..).filter(|r| !r.is_empty()) {
            self.buf.extend_from_slice(rest);
        }
    }

    /// Writes a whole payload as one logical packet.
    pub fn write(&mut self, payload: &[u8]) {
        let len = payload.len();
        if len >= MAX_CHUNK {
            self.write_chunks(payload);
            return;
        }
        // Header and payload appended directly: relaying packets as they are is most of what
        // the writer does.
        let start = self.buf.len();
        self.buf.reserve(4 + len);
        self.buf
            .extend_from_slice(&[len as u8, (len >> 8) as u8, (len >> 16) as u8, self.seq]);
        self.buf.extend_from_slice(payload);
        self.seq = self.seq.wrapping_add(1);
        self.count_error(start + 4);
    }

    fn write_chunks(&mut self, payload: &[u8]) {
        let mut rest = payload;
        loop {
            let n = rest.len().min(MAX_CHUNK);
            self.buf.extend_from_slice(&(n as u32).to_le_bytes()[..3]);
            self.buf.push(self.seq);
            self.seq = self.seq.wrapping_add(1);
            self.buf.extend_from_slice(&rest[..n]);
            rest = &rest[n..];
            if n < MAX_CHUNK {
                return;
            }
        }
    }

    /// Flushes when enough is buffered; call between rows while streaming.
    pub async fn maybe_flush(&mut self) -> io::Result<()> {
        if self.buf.len() >= FLUSH_AT {
            self.flush().await?;
        }
        Ok(())
    }

    /// Sends what was written, within the writer's timeout if it has one. One `poll_fn`, no
    /// `async` layer: the session's loop flushes after every command.
    pub fn flush(&mut self) -> impl std::future::Future<Output = io::Result<()>> + '_ {
        let mut until = None;
        std::future::poll_fn(move |cx| {
            let flushed = poll_flush_now(&mut self.inner, &mut self.buf, &mut self.sent, cx);
            // A flush the peer takes at once never reads the clock.
            let (std::task::Poll::Pending, Some(deadline)) = (&flushed, self.timeout.as_mut())
            else {
                return flushed;
            };
            deadline.poll_expired(cx, &mut until).map(|()| {
                Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!(
                        "the peer took nothing for {} s",
                        deadline.duration().as_secs()
                    ),
                ))
            })
        })
    }

    /// Sends what was written, polled by hand and bounded by the caller (not by the writer's
    /// own timeout).
    pub fn poll_send(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<io::Result<()>> {
        poll_flush_now(&mut self.inner, &mut self.buf, &mut self.sent, cx)
    }

    pub async fn shutdown(&mut self) -> io::Result<()> {
        self.flush().await?;
        self.inner.shutdown().await
    }
}

/// Writes `buf` from `sent` on, emptying it once all of it went, then flushes `inner`.
fn poll_flush_now<W: AsyncWrite + Unpin>(
    inner: &mut W,
    buf: &mut Vec<u8>,
    sent: &mut usize,
    cx: &mut std::task::Context<'_>,
) -> std::task::Poll<io::Result<()>> {
    use std::task::Poll;
    if !buf.is_empty() {
        while let Some(rest) = buf.get(*sent..).filter(|r| !r.is_empty()) {
            match std::pin::Pin::new(&mut *inner).poll_write(cx, rest) {
                Poll::Ready(Ok(0)) => return Poll::Ready(Err(io::ErrorKind::WriteZero.into())),
                Poll::Ready(Ok(n)) => *sent += n,
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => return Poll::Pending,
            }
        }
        buf.clear();
        *sent = 0;
        if buf.capacity() > 4 * FLUSH_AT {
            buf.shrink_to(FLUSH_AT);
        }
    }
    std::pin::Pin::new(inner).poll_flush(cx)
}
