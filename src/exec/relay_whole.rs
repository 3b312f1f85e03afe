//! An answer that arrived whole (the usual case for an OK, an ERR or a small result set),
//! relayed in one pass over the backend connection's read buffer: the packets relayed as they
//! are are copied from where they lie straight into the client's buffer, a run of them at a
//! time (renumbered in the client's sequence), and nothing waits per packet; with `send_now`
//! (a relayed execute) the last run goes to the client's socket without the copy when it can
//! (`PacketWriter::write_framed_now`). Only
//! answers relayed as they are come here; whatever the pass cannot finish (an answer not all
//! arrived, a LOCAL INFILE request, a malformed packet) is left untouched for `relay`'s
//! packet-by-packet path, which deals with it.

use mysql_common::constants::StatusFlags;
use tokio::io::{AsyncRead, AsyncWrite};

use super::relay::{Adjust, Client, Relayed};
use crate::wire::framing::{BufferedPackets, PacketReader};
use crate::wire::packets;

/// Whether an answer relayed with `adj` is relayed as it is (nothing patched or held back).
pub(super) fn applies(adj: &Adjust) -> bool {
    adj.insert_id.is_none()
        && !adj.hold_ok
        && !adj.more_results
        && !adj.cursor_requested
        && !adj.whole_tried
}

/// Relays the answer to a COM_QUERY or COM_STMT_EXECUTE (`applies`) if all of it is buffered
/// in `backend`; `None` otherwise, with nothing taken from `backend` or left written for the
/// client. `send_now`: what the client has not been sent yet goes now, without waiting
/// (`PacketWriter::write_framed_now`); the caller flushes as usual.
pub(super) fn relay_whole<R: AsyncRead + Unpin, W: AsyncWrite + Unpin>(
    backend: &mut PacketReader<R>,
    client: &mut Client<'_, W>,
    send_now: bool,
) -> Option<Relayed> {
    let mark = client.writer.mark();
    let mut packets = backend.buffered_packets();
    match walk(&mut packets, client, send_now) {
        Some(out) => {
            let walked = packets.walked();
            backend.take_walked(walked);
            Some(out)
        }
        None => {
            // An answer still arriving: copying it was wasted, once, before the general path.
            client.writer.rollback(mark);
            None
        }
    }
}

/// Relays `packets` to the client as the general path would, up to the end of the answer:
/// `None` as soon as the answer goes past what is buffered or needs the general path.
fn walk<W: AsyncWrite + Unpin>(
    packets: &mut BufferedPackets<'_>,
    client: &mut Client<'_, W>,
    send_now: bool,
) -> Option<Relayed> {
    const MORE: u16 = StatusFlags::SERVER_MORE_RESULTS_EXISTS.bits();
    let mut out = Relayed::default();
    // The packets relayed as they are since here go to the client in one copy.
    let mut run_from = packets.at();
    loop {
        let p = packets.next()?;
        match *p.first()? {
            packets::OK_HEADER => {
                let ok = packets::parse_ok(p)?;
                out.status = ok.status;
                out.ok = Some(ok);
            }
            packets::ERR_HEADER => {
                out.error = true;
                break;
            }
            packets::LOCAL_INFILE_HEADER => return None,
            _ => {
                out.ok = None;
                let columns = packets::get_lenenc_int(&mut &p[..])?;
                for _ in 0..columns {
                    packets.next()?;
                }
                let before_eof = packets.at();
                let eof = packets.next()?;
                if !packets::is_eof(eof) {
                    return None;
                }
                if client.deprecate_eof {
                    // Dropped: the client reads the rows right after the column definitions.
                    client
                        .writer
                        .write_framed(packets.framed(run_from, before_eof));
                    run_from = packets.at();
                }
                loop {
                    let before = packets.at();
                    let p = packets.next()?;
                    if packets::is_eof(p) {
                        out.status = packets::parse_eof(p).1.bits();
                        if client.deprecate_eof {
                            client.writer.write_framed(packets.framed(run_from, before));
                            client.terminator(p, 0);
                            run_from = packets.at();
                        }
                        break;
                    }
                    if packets::is_err(p) {
                        out.error = true;
                        out.status = 0;
                        break;
                    }
                    out.rows += 1;
                }
            }
        }
        if out.error || out.status & MORE == 0 {
            break;
        }
    }
    let rest = packets.framed(run_from, packets.at());
    if send_now {
        client.writer.write_framed_now(rest);
    } else {
        client.writer.write_framed(rest);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::framing::PacketWriter;

    const MORE: u16 = StatusFlags::SERVER_MORE_RESULTS_EXISTS.bits();
    const AUTOCOMMIT: u16 = StatusFlags::SERVER_STATUS_AUTOCOMMIT.bits();

    /// `payloads` framed as a backend sends them, numbered from 1 (after the command).
    fn framed(payloads: &[Vec<u8>]) -> Vec<u8> {
        let mut out = Vec::new();
        for (i, p) in payloads.iter().enumerate() {
            out.extend_from_slice(&(p.len() as u32).to_le_bytes()[..3]);
            out.push(i as u8 + 1);
            out.extend_from_slice(p);
        }
        out
    }

    fn ok(status: u16) -> Vec<u8> {
        let mut p = vec![0x00, 0x01, 0x00];
        p.extend_from_slice(&status.to_le_bytes());
        p.extend_from_slice(&[0, 0]);
        p
    }

    fn eof(status: u16) -> Vec<u8> {
        let mut p = vec![0xfe, 0, 0];
        p.extend_from_slice(&status.to_le_bytes());
        p
    }

    fn row(value: &[u8]) -> Vec<u8> {
        let mut p = Vec::new();
        packets::put_lenenc_str(&mut p, value);
        p
    }

    /// One column, `rows`, then the closing EOF with `status`.
    fn result_set(rows: &[Vec<u8>], status: u16) -> Vec<Vec<u8>> {
        let mut ps = vec![
            vec![0x01],
            b"\x03def\x00\x01t\x00\x01c\x00\x0c\x21\x00".to_vec(),
        ];
        ps.push(eof(AUTOCOMMIT));
        ps.extend(rows.iter().cloned());
        ps.push(eof(status));
        ps
    }

    struct Outcome {
        relayed: Option<Relayed>,
        written: Vec<u8>,
        /// Of `written`, what reached the client before the flush.
        before_flush: usize,
        left: usize,
        seq: u8,
        client_seq: u8,
    }

    /// Relayed with its last packets copied and sent from where they lie: the same outcome.
    async fn relay(bytes: &[u8], deprecate_eof: bool) -> Outcome {
        let copied = relay_sending(bytes, deprecate_eof, false).await;
        let sent = relay_sending(bytes, deprecate_eof, true).await;
        assert_eq!(
            (&sent.written, sent.left, sent.seq, sent.client_seq),
            (&copied.written, copied.left, copied.seq, copied.client_seq)
        );
        assert_eq!(copied.before_flush, 0);
        if sent.relayed.is_some() && !deprecate_eof {
            // Numbered alike and nothing written before: all of it went out at once.
            assert_eq!(sent.before_flush, sent.written.len());
        }
        assert_eq!(
            format!("{:?}", sent.relayed),
            format!("{:?}", copied.relayed)
        );
        copied
    }

    async fn relay_sending(bytes: &[u8], deprecate_eof: bool, send_now: bool) -> Outcome {
        let mut backend = PacketReader::new(bytes, 1 << 20);
        backend.seq = 1;
        if !bytes.is_empty() {
            backend.fill().await.unwrap();
        }
        let mut writer = PacketWriter::new(Vec::new());
        writer.seq = 1;
        let relayed = relay_whole(
            &mut backend,
            &mut Client {
                writer: &mut writer,
                deprecate_eof,
            },
            send_now,
        );
        let before_flush = writer.inner().len();
        let client_seq = writer.seq;
        writer.flush().await.unwrap();
        Outcome {
            relayed,
            written: writer.inner().clone(),
            before_flush,
            left: backend.buffered(),
            seq: backend.seq,
            client_seq,
        }
    }

    #[tokio::test]
    async fn an_ok_or_an_err_is_relayed_as_it_came() {
        for (p, error) in [
            (ok(AUTOCOMMIT), false),
            (b"\xff\x28\x04#42000oops".to_vec(), true),
        ] {
            let bytes = framed(&[p]);
            let out = relay(&bytes, false).await;
            let r = out.relayed.unwrap();
            assert_eq!(r.error, error);
            assert_eq!(r.ok.is_some(), !error);
            assert_eq!(out.written, bytes);
            assert_eq!((out.left, out.seq), (0, 2));
        }
    }

    #[tokio::test]
    async fn a_result_set_is_relayed_and_its_rows_counted() {
        // A row may start with 0xfe when it is long enough not to be an EOF.
        let long = vec![0xfe; 12];
        let ps = result_set(&[row(b"a"), long, row(b"b")], AUTOCOMMIT);
        let bytes = framed(&ps);
        let out = relay(&bytes, false).await;
        let r = out.relayed.unwrap();
        assert_eq!((r.rows, r.status, r.error), (3, AUTOCOMMIT, false));
        assert_eq!(out.written, bytes);
        assert_eq!((out.left, out.seq), (0, ps.len() as u8 + 1));
    }

    #[tokio::test]
    async fn without_eof_packets_the_client_gets_an_ok_terminator() {
        let ps = result_set(&[row(b"a")], AUTOCOMMIT);
        let out = relay(&framed(&ps), true).await;
        assert_eq!(out.relayed.unwrap().rows, 1);
        let mut terminator = Vec::new();
        packets::terminator(
            &mut terminator,
            true,
            0,
            StatusFlags::from_bits_retain(AUTOCOMMIT),
        );
        // The EOF after the column definitions is dropped and the numbering closes up.
        let expected = framed(&[ps[0].clone(), ps[1].clone(), ps[3].clone(), terminator]);
        assert_eq!(out.written, expected);
    }

    #[tokio::test]
    async fn every_result_of_a_multi_result_answer_is_relayed() {
        let mut ps = result_set(&[row(b"a")], AUTOCOMMIT | MORE);
        ps.push(ok(AUTOCOMMIT));
        let bytes = framed(&ps);
        let out = relay(&bytes, false).await;
        let r = out.relayed.unwrap();
        assert_eq!((r.rows, r.status), (1, AUTOCOMMIT));
        assert!(r.ok.is_some());
        assert_eq!(out.written, bytes);
    }

    #[tokio::test]
    async fn an_error_among_the_rows_ends_the_answer() {
        let mut ps = result_set(&[row(b"a")], AUTOCOMMIT);
        let last = ps.len() - 1;
        ps[last] = b"\xff\x28\x04#HY000killed".to_vec();
        let bytes = framed(&ps);
        let out = relay(&bytes, false).await;
        let r = out.relayed.unwrap();
        assert_eq!((r.error, r.status, r.rows), (true, 0, 1));
        assert_eq!(out.written, bytes);
    }

    #[tokio::test]
    async fn packets_go_on_with_the_client_numbering_and_errors_are_counted() {
        // An error among the rows, relayed to a writer numbering from 5 (the backend's
        // answer is numbered from 1).
        let mut ps = result_set(&[row(b"a"), row(b"b")], AUTOCOMMIT);
        let last = ps.len() - 1;
        ps[last] = b"\xff\x28\x04#HY000killed".to_vec();
        let bytes = framed(&ps);
        let mut backend = PacketReader::new(&bytes[..], 1 << 20);
        backend.seq = 1;
        backend.fill().await.unwrap();
        let errors = std::sync::Arc::new(crate::metrics::client_errors::ClientErrors::default());
        let mut writer = PacketWriter::new(Vec::new());
        writer.count_errors(errors.clone());
        writer.seq = 5;
        let r = relay_whole(
            &mut backend,
            &mut Client {
                writer: &mut writer,
                deprecate_eof: false,
            },
            false,
        )
        .unwrap();
        assert_eq!((r.error, r.rows), (true, 2));
        writer.flush().await.unwrap();
        let mut expected = Vec::new();
        for (i, p) in ps.iter().enumerate() {
            expected.extend_from_slice(&(p.len() as u32).to_le_bytes()[..3]);
            expected.push(5 + i as u8);
            expected.extend_from_slice(p);
        }
        assert_eq!(writer.inner(), &expected);
        assert_eq!(writer.seq, 5 + ps.len() as u8);
        assert_eq!(errors.snapshot().0, vec![(0x0428, 1)]);
    }

    #[tokio::test]
    async fn what_follows_the_answer_stays_buffered() {
        let mut bytes = framed(&[ok(AUTOCOMMIT)]);
        let answer = bytes.len();
        bytes.extend_from_slice(&[9, 0, 0]);
        let out = relay(&bytes, false).await;
        assert!(out.relayed.is_some());
        assert_eq!(out.written, bytes[..answer]);
        assert_eq!(out.left, 3);
    }

    #[tokio::test]
    async fn an_answer_not_all_arrived_is_left_untouched() {
        let mut ps = result_set(&[row(b"a"), row(b"b")], AUTOCOMMIT | MORE);
        ps.push(ok(AUTOCOMMIT));
        let bytes = framed(&ps);
        for cut in 1..bytes.len() {
            let out = relay(&bytes[..cut], false).await;
            assert!(out.relayed.is_none(), "cut at {cut}");
            assert!(out.written.is_empty(), "cut at {cut}");
            assert_eq!((out.left, out.seq), (cut, 1), "cut at {cut}");
        }
    }

    #[tokio::test]
    async fn what_the_general_path_must_handle_is_left_to_it() {
        let file_request = framed(&[b"\xfbdata.csv".to_vec()]);
        let mut out_of_order = framed(&result_set(&[row(b"a")], AUTOCOMMIT));
        out_of_order[3] = 7;
        let no_eof_after_columns = framed(&[vec![0x01], b"\x03def".to_vec(), row(b"a")]);
        let short_ok = framed(&[vec![0x00, 0x01]]);
        let empty = framed(&[Vec::new()]);
        for bytes in [
            file_request,
            out_of_order,
            no_eof_after_columns,
            short_ok,
            empty,
        ] {
            let out = relay(&bytes, false).await;
            assert!(out.relayed.is_none(), "{bytes:?}");
            assert!(out.written.is_empty());
            assert_eq!(out.left, bytes.len());
        }
    }
}
