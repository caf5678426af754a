//! corobench servers on glommio (id "rust-glommio"), thread per core:
//! `--threads N` `LocalExecutor`s (default: the CPUs the process may use),
//! each made on a std thread of its own with its own SO_REUSEPORT listener
//! on the same port. Executor i is pinned to the i-th CPU of the affinity
//! mask (`Placement::Fixed`, round robin when N exceeds the CPUs): placement
//! is part of glommio's API and its documented model is one pinned executor
//! per core (what `PoolPlacement::MaxSpread` does on this machine).
//!
//! Each accepted connection is a `spawn_local`ed task on the executor that
//! accepted it. echo and http `httparse` run common's connection loops
//! (`server::conn`) over glommio's `TcpStream` as a futures-io stream; http `hyper` serves hyper 1.x's http1 over a small
//! `hyper::rt` adapter ([`GlommioIo`]). Counts stay in the executor
//! ([`LocalTotals`]) and are added up by the main thread at stop.

use std::io;
use std::os::fd::IntoRawFd;
use std::os::fd::FromRawFd;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};
use std::thread;
use std::time::Instant;

use corobench_common::server::hyper_ping::Ping;
use corobench_common::server::conn;
use corobench_common::server::futures_io::FuturesIo;
use corobench_common::server::{self, Counts, Echo, LocalTotals, Scenario, ServerArgs, Servers, Shard, STOP_POLL, STOP_WAIT};
use corobench_common::{self as common, Spec, ThreadsMode};
use futures_lite::{AsyncRead, AsyncWrite};
use glommio::net::{TcpListener, TcpStream};
use glommio::{LocalExecutorBuilder, Placement};

#[global_allocator]
static ALLOC: common::ReportingAlloc = common::ReportingAlloc;

const SPEC: Spec = Spec { id: "rust-glommio", threads: ThreadsMode::Flag, variants: &[], cpuprofile: false, channels: &[] };
const SERVERS: Servers = Servers { echo: Some(&[]), http: Some(&["httparse", "hyper"]) };

fn main() {
    let a = server::server_args_only(&SPEC, &SERVERS);
    let n = a.threads.unwrap_or_else(common::available_cores);
    server::raise_memlock();
    let cpus = server::affinity_cpus();
    server::serve_per_core(&a, n, |shard| {
        let a = a.clone();
        let cpu = cpus[shard.index % cpus.len()];
        thread::Builder::new().name(format!("glommio-{}", shard.index)).spawn(move || executor(a, shard, cpu)).map(drop)
    })
}

fn executor(a: ServerArgs, mut shard: Shard, cpu: usize) {
    // glommio panics when io_uring is refused: ask the kernel first.
    if let Err(e) = server::probe_io_uring() {
        return shard.refused(server::io_uring_reason(&e));
    }
    // make() sets glommio up on this thread: pins it, creates its rings.
    let ex = match LocalExecutorBuilder::new(Placement::Fixed(cpu)).name(&format!("glommio-{}", shard.index)).make() {
        Ok(ex) => ex,
        Err(e) => return shard.refused(server::io_uring_reason(&e)),
    };
    ex.run(async move {
        let fd = shard.listener.take().expect("listener").into_raw_fd();
        // SAFETY: a listening TCP socket whose ownership moves here.
        let listener = unsafe { TcpListener::from_raw_fd(fd) };
        shard.ready();
        let local = Rc::new(LocalTotals::default());
        let echo = Echo::new(&a);
        let hyper = a.scenario == Scenario::Http && a.variant == "hyper";
        let mut accepted = 0u64;
        loop {
            match listener.accept().await {
                Ok(stream) => {
                    accepted += 1;
                    let _ = stream.set_nodelay(true);
                    local.opened();
                    let local = Rc::clone(&local);
                    match a.scenario {
                        Scenario::Echo => glommio::spawn_local(echo_conn(stream, echo, local)).detach(),
                        Scenario::Http if hyper => glommio::spawn_local(http_hyper_conn(stream, local)).detach(),
                        Scenario::Http => glommio::spawn_local(http_conn(stream, local)).detach(),
                    };
                }
                Err(_) if server::stopping() => break,
                Err(e) => server::accept_error(accepted, &io::Error::from(e)),
            }
        }
        let deadline = Instant::now() + STOP_WAIT;
        while local.open() > 0 && Instant::now() < deadline {
            glommio::timer::sleep(STOP_POLL).await;
        }
        shard.done(accepted, local.counts(), local.open());
        // The main thread exits the process; the executor is not torn down.
        std::future::pending::<()>().await
    })
}

async fn echo_conn(s: TcpStream, e: Echo, local: Rc<LocalTotals>) {
    local.closed(&conn::echo(&mut FuturesIo(s), e).await);
}

async fn http_conn(s: TcpStream, local: Rc<LocalTotals>) {
    local.closed(&conn::http(&mut FuturesIo(s)).await);
}

/// hyper's http1 server on one connection; the shared `Ping` service hands
/// the connection's counts to the executor when hyper drops it at the end.
async fn http_hyper_conn(s: TcpStream, local: Rc<LocalTotals>) {
    let ping = Ping::new(move |c: &Counts| local.closed(c));
    // Keep-alive is hyper's default; errors only end this connection.
    let _ = hyper::server::conn::http1::Builder::new().serve_connection(GlommioIo(s), ping).await;
}

/// glommio's stream as hyper's I/O (hyper 1.x has its own Read/Write traits;
/// glommio has no adapter of its own). glommio reads into initialized
/// slices, so the part of hyper's buffer handed to it is zeroed first, as in
/// glommio's hyper example.
struct GlommioIo(TcpStream);

impl hyper::rt::Read for GlommioIo {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        mut buf: hyper::rt::ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        // SAFETY: the slice is zeroed before it is viewed as bytes, and only
        // the n bytes the read filled are marked filled.
        let n = unsafe {
            let spare = buf.as_mut();
            std::ptr::write_bytes(spare.as_mut_ptr(), 0, spare.len());
            let bytes = std::slice::from_raw_parts_mut(spare.as_mut_ptr().cast::<u8>(), spare.len());
            match Pin::new(&mut self.0).poll_read(cx, bytes) {
                Poll::Ready(Ok(n)) => n,
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => return Poll::Pending,
            }
        };
        // SAFETY: n bytes were written by the read.
        unsafe { buf.advance(n) };
        Poll::Ready(Ok(()))
    }
}

impl hyper::rt::Write for GlommioIo {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.0).poll_write(cx, buf)
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_flush(cx)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_close(cx)
    }
}
