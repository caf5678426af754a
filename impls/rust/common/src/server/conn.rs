//! One echo connection and one HTTP/1.1 connection, written once over the two operations a
//! readiness-based runtime's socket offers: read some bytes into a buffer, write all of one.
//! tokio's socket (`AsyncReadExt`/`AsyncWriteExt`) and the futures-io sockets of async-std, smol
//! and glommio each reach these loops through a one-struct adapter, so every one of them runs
//! the same exchange with its own primitives (the loops are generic: monomorphised, no dynamic
//! dispatch). The completion-based runtimes (monoio, tokio-uring) hand buffers over by value and
//! keep loops of their own.

use std::future::Future;
use std::io;

use super::{Counts, Echo, HttpConn, HttpNext};

/// A connection's byte stream as the loops below use it.
pub trait ByteStream {
    /// Read at least one byte into `buf`, or 0 at the end of the stream.
    fn read<'a>(&'a mut self, buf: &'a mut [u8]) -> impl Future<Output = io::Result<usize>> + 'a;
    /// Write the whole of `buf`.
    fn write_all<'a>(&'a mut self, buf: &'a [u8]) -> impl Future<Output = io::Result<()>> + 'a;
}

/// Serve echo requests until the client closes (or, with `per_connection`, until the R-th
/// reply); the connection's counts, for the caller to add to its totals once.
pub async fn echo<S: ByteStream>(s: &mut S, e: Echo) -> Counts {
    let mut buf = e.buffer();
    let mut c = Counts::default();
    'conn: loop {
        let mut got = 0;
        while got < e.size {
            match s.read(&mut buf[got..e.size]).await {
                Ok(0) | Err(_) => {
                    e.ended(got, &mut c);
                    break 'conn;
                }
                Ok(n) => got += n,
            }
        }
        e.make_reply(&mut buf, &mut c);
        if s.write_all(&buf).await.is_err() {
            break;
        }
        if e.replied(&mut c) {
            break;
        }
    }
    c
}

/// Serve HTTP/1.1 requests until either side closes; the connection's counts.
pub async fn http<S: ByteStream>(s: &mut S) -> Counts {
    let mut h = HttpConn::new();
    loop {
        match s.read(h.read_buf()).await {
            Ok(0) | Err(_) => break,
            Ok(n) => h.received(n),
        }
        let next = h.process();
        if !h.out.is_empty() {
            if s.write_all(&h.out).await.is_err() {
                break;
            }
            h.written();
        }
        if next == HttpNext::Close {
            break;
        }
    }
    h.counts
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::VecDeque;
    use std::future::ready;
    use std::pin::pin;
    use std::task::{Context, Poll, Waker};

    /// A client scripted as the chunks it sends (each read returns at most one) and then its
    /// close; what the server writes is kept. Every operation is ready at once.
    struct Scripted {
        chunks: VecDeque<Vec<u8>>,
        written: Vec<u8>,
        writes_fail: bool,
    }

    impl Scripted {
        fn new(chunks: &[&[u8]]) -> Scripted {
            Scripted { chunks: chunks.iter().map(|c| c.to_vec()).collect(), written: Vec::new(), writes_fail: false }
        }
    }

    impl ByteStream for Scripted {
        fn read<'a>(&'a mut self, buf: &'a mut [u8]) -> impl Future<Output = io::Result<usize>> + 'a {
            let n = match self.chunks.front_mut() {
                None => 0,
                Some(chunk) => {
                    let n = chunk.len().min(buf.len());
                    buf[..n].copy_from_slice(&chunk[..n]);
                    chunk.drain(..n);
                    if chunk.is_empty() {
                        self.chunks.pop_front();
                    }
                    n
                }
            };
            ready(Ok(n))
        }
        fn write_all<'a>(&'a mut self, buf: &'a [u8]) -> impl Future<Output = io::Result<()>> + 'a {
            if self.writes_fail {
                return ready(Err(io::Error::from(io::ErrorKind::BrokenPipe)));
            }
            self.written.extend_from_slice(buf);
            ready(Ok(()))
        }
    }

    /// Runs a future that never waits (every operation above is ready).
    fn now<T>(f: impl Future<Output = T>) -> T {
        match pin!(f).poll(&mut Context::from_waker(Waker::noop())) {
            Poll::Ready(v) => v,
            Poll::Pending => panic!("the scripted stream never waits"),
        }
    }

    const ECHO: Echo = Echo { size: 4, uuids: 2, per_connection: 0 };

    #[test]
    fn echo_reassembles_split_requests_and_counts_each_reply() {
        let mut s = Scripted::new(&[b"ab", b"cdwx", b"y", b"z"]);
        let c = now(echo(&mut s, ECHO));
        assert_eq!((c.requests, c.bytes_in, c.bytes_out, c.uuids_generated, c.partial), (2, 8, 2 * 78, 4, 0));
        assert_eq!(s.written.len(), 2 * ECHO.reply_len());
        assert_eq!((&s.written[..4], &s.written[78..82]), (&b"abcd"[..], &b"wxyz"[..]));
        assert_eq!(s.written[4], b'\n');
    }

    #[test]
    fn echo_counts_a_request_cut_off_by_the_close_as_partial() {
        let mut s = Scripted::new(&[b"abcd", b"ab"]);
        let c = now(echo(&mut s, ECHO));
        assert_eq!((c.requests, c.partial, c.bytes_in), (1, 1, 6));
    }

    #[test]
    fn echo_closes_after_per_connection_replies_and_stops_on_a_failed_write() {
        let mut s = Scripted::new(&[b"abcdabcdabcd"]);
        let c = now(echo(&mut s, Echo { per_connection: 2, ..ECHO }));
        assert_eq!(c.requests, 2);
        assert_eq!(s.chunks.len(), 1, "the third request is left unread");
        let mut s = Scripted::new(&[b"abcd"]);
        s.writes_fail = true;
        let c = now(echo(&mut s, ECHO));
        assert_eq!((c.requests, c.bytes_out), (0, 0));
    }

    #[test]
    fn http_answers_pipelined_and_split_requests() {
        let get = |t: &str| format!("GET /ping/{t} HTTP/1.1\r\nHost: x\r\n\r\n");
        let two = get("a") + &get("bb");
        let third = get("ccc");
        let (head, tail) = third.split_at(7);
        let mut s = Scripted::new(&[two.as_bytes(), head.as_bytes(), tail.as_bytes()]);
        let c = now(http(&mut s));
        assert_eq!(c.requests, 3);
        let out = String::from_utf8(s.written).unwrap();
        assert_eq!(out.matches("HTTP/1.1 200").count(), 3, "{out}");
        assert!(out.ends_with("ccc"), "{out}");
    }
}
