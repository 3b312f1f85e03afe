//! The packet reader gives the same packets (and the same errors) whether a packet arrives
//! whole in the buffer (the copy-out path) or a few bytes at a time (the waiting path); the
//! writer sends the same bytes whether packets are copied or sent from where they lie.

use std::pin::Pin;
use std::task::{Context, Poll};

use proptest::prelude::*;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use super::framing::{FrameError, PacketReader, PacketWriter, MAX_CHUNK};

/// A stream that hands out at most `chunk` bytes per read.
struct Chunked {
    data: Vec<u8>,
    pos: usize,
    chunk: usize,
}

impl AsyncRead for Chunked {
    fn poll_read(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let n = (self.data.len() - self.pos)
            .min(self.chunk)
            .min(buf.remaining());
        let start = self.pos;
        buf.put_slice(&self.data[start..start + n]);
        self.pos += n;
        Poll::Ready(Ok(()))
    }
}

/// `payload` framed as one logical packet from sequence id `seq` (continuations included).
fn frame(payload: &[u8], seq: &mut u8, out: &mut Vec<u8>) {
    let mut rest = payload;
    loop {
        let n = rest.len().min(MAX_CHUNK);
        out.extend_from_slice(&(n as u32).to_le_bytes()[..3]);
        out.push(*seq);
        *seq = seq.wrapping_add(1);
        out.extend_from_slice(&rest[..n]);
        rest = &rest[n..];
        if n < MAX_CHUNK {
            return;
        }
    }
}

fn reader(data: Vec<u8>, chunk: usize, limit: usize) -> PacketReader<Chunked> {
    PacketReader::new(
        Chunked {
            data,
            pos: 0,
            chunk,
        },
        limit,
    )
}

fn read_all(r: &mut PacketReader<Chunked>, count: usize) -> Vec<Vec<u8>> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let mut got = Vec::new();
        for _ in 0..count {
            let mut p = Vec::new();
            r.read(&mut p).await.expect("packet");
            got.push(p);
            // Each packet of these streams starts a new command.
            r.seq = 0;
        }
        got
    })
}

/// As `read_all`, taking each packet without waiting when it is buffered whole; also how many
/// were so taken.
fn read_all_buffered_first(r: &mut PacketReader<Chunked>, count: usize) -> (Vec<Vec<u8>>, usize) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let (mut got, mut taken) = (Vec::new(), 0);
        for _ in 0..count {
            let mut p = vec![1, 2, 3];
            if r.read_buffered(&mut p).expect("packet") {
                taken += 1;
            } else {
                r.read(&mut p).await.expect("packet");
            }
            got.push(p);
            r.seq = 0;
        }
        (got, taken)
    })
}

#[test]
fn a_continued_packet_is_left_to_the_waiting_read() {
    let big: Vec<u8> = (0..MAX_CHUNK + 10).map(|i| i as u8).collect();
    let mut data = Vec::new();
    frame(b"first", &mut 0, &mut data);
    frame(b"second", &mut 0, &mut data);
    frame(&big, &mut 0, &mut data);
    frame(b"next", &mut 0, &mut data);
    let mut r = reader(data, 64 * 1024, 64 << 20);
    let (got, taken) = read_all_buffered_first(&mut r, 4);
    assert_eq!(got[0], b"first");
    assert_eq!(got[1], b"second");
    assert!(got[2] == big, "the joined payload differs");
    assert_eq!(got[3], b"next");
    // The first packet and the continued one need the waiting read; the second and the last
    // come from the buffer.
    assert_eq!(taken, 2);
}

#[test]
fn a_walk_over_buffered_packets_stops_where_read_has_work_and_takes_what_it_passed() {
    let mut data = Vec::new();
    let mut seq = 0;
    frame(b"first", &mut seq, &mut data);
    frame(b"second", &mut seq, &mut data);
    frame(&[7; 100], &mut seq, &mut data); // over the limit below
    frame(b"after", &mut seq, &mut data);
    let mut r = reader(data, 64 * 1024, 50);
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime");
    rt.block_on(r.fill()).expect("bytes");
    let buffered = r.buffered();
    let mut walk = r.buffered_packets();
    assert_eq!(walk.next(), Some(&b"first"[..]));
    assert_eq!(walk.next(), Some(&b"second"[..]));
    assert_eq!(
        walk.next(),
        None,
        "the packet over the limit is read's to report"
    );
    let walked = walk.walked();
    // Looking took nothing; taking takes exactly the packets walked past.
    assert_eq!(r.buffered(), buffered);
    r.take_walked(walked);
    assert_eq!(r.buffered(), buffered - (4 + 5) - (4 + 6));
    assert_eq!(r.seq, 2);
    let mut p = Vec::new();
    let e = rt.block_on(r.read(&mut p)).expect_err("over the limit");
    assert!(matches!(e, FrameError::TooLarge { .. }), "{e}");

    // A continued packet and one out of sequence end a walk too.
    let mut data = Vec::new();
    frame(&vec![1; MAX_CHUNK + 1], &mut 0, &mut data);
    let mut r = reader(data, 64 * 1024, 64 << 20);
    rt.block_on(r.fill()).expect("bytes");
    assert_eq!(r.buffered_packets().next(), None);
    let mut data = Vec::new();
    frame(b"late", &mut 3, &mut data);
    let mut r = reader(data, 64 * 1024, 64 << 20);
    rt.block_on(r.fill()).expect("bytes");
    assert_eq!(r.buffered_packets().next(), None);
}

proptest! {
    #[test]
    fn same_packets_however_the_bytes_arrive(
        payloads in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..300), 1..20),
        chunk in 1usize..700,
    ) {
        let mut data = Vec::new();
        for p in &payloads {
            frame(p, &mut 0, &mut data);
        }
        let mut r = reader(data.clone(), chunk, 1 << 20);
        prop_assert_eq!(read_all(&mut r, payloads.len()), payloads.clone());
        // Taking the packets already buffered without waiting gives the same ones.
        let mut r = reader(data, chunk, 1 << 20);
        prop_assert_eq!(read_all_buffered_first(&mut r, payloads.len()).0, payloads);
    }
}

#[test]
fn continuations_are_joined_buffered_or_not() {
    let big: Vec<u8> = (0..MAX_CHUNK + 10).map(|i| i as u8).collect();
    for chunk in [64 * 1024, 7, MAX_CHUNK + 100] {
        let mut data = Vec::new();
        frame(&big, &mut 0, &mut data);
        frame(b"next", &mut 0, &mut data);
        let mut r = reader(data, chunk, 64 << 20);
        let got = read_all(&mut r, 2);
        assert!(got[0] == big, "chunk {chunk}: the joined payload differs");
        assert_eq!(got[1], b"next");
    }
}

#[test]
fn out_of_order_and_over_limit_are_reported_on_both_paths() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime");
    for chunk in [1, 1024] {
        let mut data = Vec::new();
        frame(b"abc", &mut 5, &mut data);
        let mut r = reader(data, chunk, 1024);
        let mut p = Vec::new();
        let e = rt.block_on(r.read(&mut p));
        assert!(matches!(
            e,
            Err(FrameError::OutOfOrder {
                expected: 0,
                got: 5
            })
        ));

        // Too large: skipped to its end, so the next packet reads in step.
        let mut data = Vec::new();
        frame(&[7u8; 100], &mut 0, &mut data);
        frame(b"ok", &mut 0, &mut data);
        let mut r = reader(data, chunk, 50);
        let e = rt.block_on(r.read(&mut p));
        assert!(matches!(
            e,
            Err(FrameError::TooLarge {
                size: 100,
                limit: 50
            })
        ));
        r.seq = 0;
        rt.block_on(r.read(&mut p)).expect("the packet after");
        assert_eq!(p, b"ok");

        let mut r = reader(Vec::new(), chunk, 50);
        assert!(matches!(
            rt.block_on(r.read(&mut p)),
            Err(FrameError::Closed)
        ));
    }
}

/// A peer that takes `first` bytes of the first write (none: it is not ready, once), then
/// everything.
struct Slow {
    out: Vec<u8>,
    first: Option<usize>,
    writes: usize,
}

impl AsyncWrite for Slow {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        self.writes += 1;
        let n = match (self.writes, self.first) {
            (1, None) => {
                cx.waker().wake_by_ref();
                return Poll::Pending;
            }
            (1, Some(n)) => n.min(buf.len()),
            _ => buf.len(),
        };
        self.out.extend_from_slice(&buf[..n]);
        Poll::Ready(Ok(n))
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

#[test]
fn packets_sent_from_where_they_lie_reach_the_peer_as_copied_ones() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime");
    let mut answer = Vec::new();
    let mut seq = 1;
    // An empty packet before one whose header starts with 0xFF (255 bytes long): no ERR.
    let long = [7; 255];
    for p in [
        &b"\x01"[..],
        b"",
        &long,
        b"row",
        b"\xff\x28\x04#HY000killed",
    ] {
        frame(p, &mut seq, &mut answer);
    }
    // (the writer's sequence id, a packet written before, how the peer takes the first write)
    let cases = [
        (1, false, Some(usize::MAX)),
        (1, false, Some(5)),
        (1, false, None),
        // Numbered otherwise: renumbered in a copy.
        (7, false, Some(usize::MAX)),
        // Something already waits to be sent: the answer goes after it.
        (0, true, Some(usize::MAX)),
    ];
    for (seq, before, first) in cases {
        let sent = |now: bool| {
            let errors =
                std::sync::Arc::new(crate::metrics::client_errors::ClientErrors::default());
            let mut w = PacketWriter::new(Slow {
                out: Vec::new(),
                first,
                writes: 0,
            });
            w.count_errors(errors.clone());
            w.seq = seq;
            if before {
                w.write(b"first");
            }
            if now {
                w.write_framed_now(&answer);
            } else {
                w.write_framed(&answer);
            }
            if now && (seq, before, first) == (1, false, Some(usize::MAX)) {
                assert_eq!(w.inner().out, answer, "sent before any flush");
            }
            let seq_after = w.seq;
            rt.block_on(w.flush()).expect("flushed");
            (w.inner().out.clone(), seq_after, errors.snapshot())
        };
        let copied = sent(false);
        assert_eq!(copied.2 .0, vec![(1064, 1)], "the ERR packet is counted");
        assert_eq!(
            sent(true),
            copied,
            "seq {seq}, written before {before}, first write {first:?}"
        );
    }
}
