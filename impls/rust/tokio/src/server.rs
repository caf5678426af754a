//! The server scenarios' accept loop on tokio's multi-thread runtime: a
//! `tokio::net::TcpListener` whose loop runs in `Runtime::block_on` on the
//! main thread (as `#[tokio::main]` runs it) and spawns a task per
//! connection; the echo and http binaries choose its body (common's
//! connection loops over [`TokioStream`], or hyper's).
//!
//! Counts: each connection task keeps its own `Counts` and adds them to the
//! binary's `Totals` when it ends. On SIGTERM/SIGINT (tokio::signal) the
//! listener is dropped, the loop waits up to 2 s for the connections still
//! open, prints the final line and exits.

use std::future::Future;
use std::io;
use std::time::Instant;

use corobench_common::server::conn::ByteStream;
use corobench_common::server::{self, ServerArgs, Totals, STOP_POLL, STOP_WAIT};
use corobench_common::{self as common};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::signal::unix::{signal, SignalKind};

/// Serves `a` until SIGTERM/SIGINT: `conn` is each accepted connection's
/// task (it adds its counts to `totals` when it ends).
pub fn run<F, C>(a: ServerArgs, totals: &'static Totals, conn: C) -> !
where
    C: Fn(TcpStream) -> F,
    F: Future<Output = ()> + Send + 'static,
{
    let (rt, workers) = crate::runtime(a.threads, true);
    rt.block_on(serve(a, workers, totals, conn))
}

async fn serve<F, C>(a: ServerArgs, workers: usize, totals: &'static Totals, conn: C) -> !
where
    C: Fn(TcpStream) -> F,
    F: Future<Output = ()> + Send + 'static,
{
    // Caught from here on, before the ready line.
    let mut term = signal(SignalKind::terminate()).unwrap_or_else(|e| common::io_failure("cannot catch SIGTERM", &e));
    let mut int = signal(SignalKind::interrupt()).unwrap_or_else(|e| common::io_failure("cannot catch SIGINT", &e));
    let listener = TcpListener::bind(a.addr()).await.unwrap_or_else(|e| server::bind_refused(a.addr(), &e));
    let port = listener.local_addr().unwrap_or_else(|e| server::bind_refused(a.addr(), &e)).port();
    server::print_ready(&a, port, workers);

    let mut accepted = 0u64;
    loop {
        tokio::select! {
            r = listener.accept() => match r {
                Ok((stream, _)) => {
                    accepted += 1;
                    let _ = stream.set_nodelay(true);
                    tokio::spawn(conn(stream));
                }
                Err(e) => server::accept_error(accepted, &e),
            },
            _ = term.recv() => break,
            _ = int.recv() => break,
        }
    }
    drop(listener);
    let deadline = Instant::now() + STOP_WAIT;
    while totals.ended() < accepted && Instant::now() < deadline {
        tokio::time::sleep(STOP_POLL).await;
    }
    let open = accepted - totals.ended();
    #[cfg(feature = "tailbench")]
    crate::tailbench::report();
    server::finish(&a, workers, Some(accepted), &totals.counts(), open)
}

/// tokio's socket for common's connection loops (`server::conn`), read and
/// written with `AsyncReadExt`/`AsyncWriteExt`.
pub struct TokioStream(pub TcpStream);

impl ByteStream for TokioStream {
    fn read<'a>(&'a mut self, buf: &'a mut [u8]) -> impl Future<Output = io::Result<usize>> + 'a {
        AsyncReadExt::read(&mut self.0, buf)
    }
    fn write_all<'a>(&'a mut self, buf: &'a [u8]) -> impl Future<Output = io::Result<()>> + 'a {
        AsyncWriteExt::write_all(&mut self.0, buf)
    }
}
