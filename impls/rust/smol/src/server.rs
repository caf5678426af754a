//! The server scenarios on smol: one `smol::Executor` run by N threads (the
//! same pattern as the batch scenarios), the accept loop on a
//! `smol::net::TcpListener` in `smol::block_on` on the main thread, a task
//! per connection (`Executor::spawn(..).detach()`). echo reads and writes
//! with smol's `AsyncReadExt`/`AsyncWriteExt`; http uses the shared httparse
//! connection.
//!
//! Counts: each connection task keeps its own [`Counts`] and adds them to
//! [`TOTALS`] when it ends. SIGTERM/SIGINT arrive through async-signal (on
//! async-io, smol's reactor); then the listener is dropped, the loop waits up
//! to 2 s for open connections, prints the final line and exits.

use std::thread;
use std::time::Instant;

use async_executor::StaticExecutor;
use async_signal::{Signal, Signals};
use corobench_common::server::{self, Counts, Echo, HttpConn, HttpNext, Scenario, ServerArgs, Totals, STOP_POLL, STOP_WAIT};
use corobench_common::{self as common};
use smol::io::{AsyncReadExt, AsyncWriteExt};
use smol::net::{TcpListener, TcpStream};
use smol::stream::StreamExt;
use smol::{future, Executor, Timer};

/// Counts of the connections that ended, added once per connection.
static TOTALS: Totals = Totals::new();

pub fn run(a: ServerArgs) -> ! {
    let workers = a.threads.unwrap_or_else(common::available_cores);
    // The executor lives for the whole process (leaked as a StaticExecutor, as in main.rs:
    // no lock or refcount per spawn); its threads run until exit.
    let ex: &'static StaticExecutor = Executor::new().leak();
    for i in 0..workers {
        let started = thread::Builder::new()
            .name(format!("smol-{i}"))
            .spawn(move || smol::block_on(ex.run(future::pending::<()>())));
        if let Err(e) = started {
            common::refused(format_args!("started {i} of {workers} threads: {}", common::error_text(&e)));
        }
    }
    smol::block_on(serve(ex, a, workers))
}

async fn serve(ex: &'static StaticExecutor, a: ServerArgs, workers: usize) -> ! {
    // Caught from here on, before the ready line.
    let mut signals =
        Signals::new([Signal::Term, Signal::Int]).unwrap_or_else(|e| common::io_failure("cannot catch SIGTERM", &e));
    let listener = TcpListener::bind(a.addr()).await.unwrap_or_else(|e| server::bind_refused(a.addr(), &e));
    let port = listener.local_addr().unwrap_or_else(|e| server::bind_refused(a.addr(), &e)).port();
    server::print_ready(&a, port, workers);

    let echo = Echo::new(&a);
    let mut accepted = 0u64;
    loop {
        let next = future::or(async { Some(listener.accept().await) }, async {
            signals.next().await;
            None
        })
        .await;
        match next {
            None => break,
            Some(Ok((stream, _))) => {
                accepted += 1;
                let _ = stream.set_nodelay(true);
                match a.scenario {
                    Scenario::Echo => ex.spawn(echo_conn(stream, echo)).detach(),
                    Scenario::Http => ex.spawn(http_conn(stream)).detach(),
                }
            }
            Some(Err(e)) => server::accept_error(accepted, &e),
        }
    }
    drop(listener);
    let deadline = Instant::now() + STOP_WAIT;
    while TOTALS.ended() < accepted && Instant::now() < deadline {
        Timer::after(STOP_POLL).await;
    }
    let open = accepted - TOTALS.ended();
    server::finish(&a, workers, Some(accepted), &TOTALS.counts(), open)
}

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
