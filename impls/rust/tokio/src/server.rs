//! The server scenarios on tokio's multi-thread runtime: one accept loop
//! (a `tokio::net::TcpListener`) spawning a task per connection. echo reads
//! and writes with `AsyncReadExt`/`AsyncWriteExt`; http is either the shared
//! httparse connection (`httparse`, the default) or hyper 1.x's http1 server
//! (`hyper`, keep-alive, over hyper-util's `TokioIo`).
//!
//! Counts: each connection task keeps its own [`Counts`] and adds them to
//! [`TOTALS`] when it ends (with hyper: when hyper drops the connection's
//! service, `corobench_common::server::hyper_ping::Ping`). On SIGTERM/SIGINT (tokio::signal) the listener is dropped, the
//! accept loop waits up to 2 s for the connections still open, prints the
//! final line and exits.

use std::time::Instant;

use corobench_common::server::hyper_ping::Ping;
use corobench_common::server::{
    self, Counts, Echo, HttpConn, HttpNext, Scenario, ServerArgs, Totals, STOP_POLL, STOP_WAIT,
};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::signal::unix::{signal, SignalKind};

use corobench_common as common;

/// Counts of the connections that ended, added once per connection.
static TOTALS: Totals = Totals::new();

pub fn run(a: ServerArgs) -> ! {
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    if let Some(n) = a.threads {
        builder.worker_threads(n);
    }
    let rt = builder
        .enable_io()
        .enable_time()
        .build()
        .unwrap_or_else(|e| common::io_failure("cannot start the tokio runtime", &e));
    let workers = rt.metrics().num_workers();
    rt.block_on(serve(a, workers))
}

async fn serve(a: ServerArgs, workers: usize) -> ! {
    // Caught from here on, before the ready line.
    let mut term = signal(SignalKind::terminate()).unwrap_or_else(|e| common::io_failure("cannot catch SIGTERM", &e));
    let mut int = signal(SignalKind::interrupt()).unwrap_or_else(|e| common::io_failure("cannot catch SIGINT", &e));
    let listener = TcpListener::bind(a.addr()).await.unwrap_or_else(|e| server::bind_refused(a.addr(), &e));
    let port = listener.local_addr().unwrap_or_else(|e| server::bind_refused(a.addr(), &e)).port();
    server::print_ready(&a, port, workers);

    let echo = Echo::new(&a);
    let hyper = a.scenario == Scenario::Http && a.variant == "hyper";
    let mut accepted = 0u64;
    loop {
        tokio::select! {
            r = listener.accept() => match r {
                Ok((stream, _)) => {
                    accepted += 1;
                    let _ = stream.set_nodelay(true);
                    match a.scenario {
                        Scenario::Echo => tokio::spawn(echo_conn(stream, echo)),
                        Scenario::Http if hyper => tokio::spawn(http_hyper_conn(stream)),
                        Scenario::Http => tokio::spawn(http_conn(stream)),
                    };
                }
                Err(e) => server::accept_error(accepted, &e),
            },
            _ = term.recv() => break,
            _ = int.recv() => break,
        }
    }
    drop(listener);
    let deadline = Instant::now() + STOP_WAIT;
    while TOTALS.ended() < accepted && Instant::now() < deadline {
        tokio::time::sleep(STOP_POLL).await;
    }
    let open = accepted - TOTALS.ended();
    server::finish(&a, workers, Some(accepted), &TOTALS.counts(), open)
}

// ---------------------------------------------------------------- echo

async fn echo_conn(mut s: TcpStream, e: Echo) {
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
        e.replied(&mut c);
    }
    TOTALS.add(&c);
}

// ---------------------------------------------------------------- http

async fn http_conn(mut s: TcpStream) {
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
    TOTALS.add(&h.counts);
}

/// hyper's http1 server on one connection; the shared `Ping` service adds
/// the connection's counts to the totals when hyper drops it at the end.
async fn http_hyper_conn(s: TcpStream) {
    let ping = Ping::new(|c: &Counts| TOTALS.add(c));
    // Keep-alive is hyper's default; errors (a client gone, a malformed
    // request that hyper answered 400) only end this connection.
    let _ = hyper::server::conn::http1::Builder::new()
        .serve_connection(TokioIo::new(s), ping)
        .await;
}
