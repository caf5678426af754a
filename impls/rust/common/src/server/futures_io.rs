//! The futures-io sockets (async-std's, smol's and glommio's TcpStream) as a [`ByteStream`] for the
//! shared connection loops (`conn`), and those loops with the totals the multi-thread runtimes add
//! each connection's counts to.

use std::future::Future;
use std::io;

use futures_lite::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use super::conn::{self, ByteStream};
use super::{Echo, Servers, Totals};

/// What these handlers serve: echo and http, one way each (no variants).
pub const SERVERS: Servers = Servers { echo: Some(&[]), http: Some(&[]) };

/// A futures-io socket, read and written with `AsyncReadExt`/`AsyncWriteExt`.
pub struct FuturesIo<S>(pub S);

impl<S: AsyncRead + AsyncWrite + Unpin> ByteStream for FuturesIo<S> {
    fn read<'a>(&'a mut self, buf: &'a mut [u8]) -> impl Future<Output = io::Result<usize>> + 'a {
        AsyncReadExt::read(&mut self.0, buf)
    }
    fn write_all<'a>(&'a mut self, buf: &'a [u8]) -> impl Future<Output = io::Result<()>> + 'a {
        AsyncWriteExt::write_all(&mut self.0, buf)
    }
}

/// Serve echo requests on `s`; add the connection's counts once, at its end.
pub async fn echo_conn<S: AsyncRead + AsyncWrite + Unpin>(s: S, e: Echo, totals: &Totals) {
    totals.add(&conn::echo(&mut FuturesIo(s), e).await);
}

/// Serve HTTP/1.1 requests on `s`; add the counts once, at the end.
pub async fn http_conn<S: AsyncRead + AsyncWrite + Unpin>(s: S, totals: &Totals) {
    totals.add(&conn::http(&mut FuturesIo(s)).await);
}
