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
use corobench_common::server::{self, futures_io, Echo, Scenario, ServerArgs, Totals, STOP_POLL, STOP_WAIT};
use corobench_common::{self as common};
use smol::net::TcpListener;
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
                    Scenario::Echo => ex.spawn(futures_io::echo_conn(stream, echo, &TOTALS)).detach(),
                    Scenario::Http => ex.spawn(futures_io::http_conn(stream, &TOTALS)).detach(),
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
