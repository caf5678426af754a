//! The echo and http connections of the runtimes whose sockets implement the futures-io traits
//! (async-std's and smol's TcpStream): the same loop for both, over the sans-I/O pieces above.

use futures_lite::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use super::{Counts, Echo, HttpConn, HttpNext, Servers, Totals};

/// What these handlers serve: echo and http, one way each (no variants).
pub const SERVERS: Servers = Servers { echo: Some(&[]), http: Some(&[]) };

/// Serve echo requests until the client closes; add the connection's counts once, at its end.
pub async fn echo_conn<S: AsyncRead + AsyncWrite + Unpin>(mut s: S, e: Echo, totals: &Totals) {
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
    totals.add(&c);
}

/// Serve HTTP/1.1 requests until either side closes; add the counts once, at the end.
pub async fn http_conn<S: AsyncRead + AsyncWrite + Unpin>(mut s: S, totals: &Totals) {
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
    totals.add(&h.counts);
}
