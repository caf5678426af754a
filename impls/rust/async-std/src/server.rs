//! The server scenarios on async-std: one accept loop on an
//! `async_std::net::TcpListener` (in `task::block_on`, as `#[async_std::main]`
//! runs main) spawning a task per connection onto the global executor
//! (ASYNC_STD_THREAD_COUNT threads). echo reads and writes with async-std's
//! `ReadExt`/`WriteExt`; http uses the shared httparse connection.
//!
//! Counts: each connection task keeps its own [`Counts`] and adds them to
//! [`TOTALS`] when it ends. SIGTERM/SIGINT arrive through async-signal (on
//! async-io, async-std's reactor); then the listener is dropped, the loop
//! waits up to 2 s for open connections, prints the final line and exits.

use std::time::Instant;

use async_signal::{Signal, Signals};
use async_std::net::TcpListener;
use async_std::task;
use corobench_common::server::{self, futures_io, Echo, Scenario, ServerArgs, Totals, STOP_POLL, STOP_WAIT};
use corobench_common::{self as common};
use futures_lite::{future, StreamExt};

/// Counts of the connections that ended, added once per connection.
static TOTALS: Totals = Totals::new();

/// `workers`: the executor's threads (ASYNC_STD_THREAD_COUNT, exported by
/// the parser from --threads, or one per core).
pub fn run(a: ServerArgs, workers: usize) -> ! {
    task::block_on(serve(a, workers))
}

async fn serve(a: ServerArgs, workers: usize) -> ! {
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
                // Dropping the handle detaches the task.
                match a.scenario {
                    Scenario::Echo => task::spawn(futures_io::echo_conn(stream, echo, &TOTALS)),
                    Scenario::Http => task::spawn(futures_io::http_conn(stream, &TOTALS)),
                };
            }
            Some(Err(e)) => server::accept_error(accepted, &e),
        }
    }
    drop(listener);
    let deadline = Instant::now() + STOP_WAIT;
    while TOTALS.ended() < accepted && Instant::now() < deadline {
        task::sleep(STOP_POLL).await;
    }
    let open = accepted - TOTALS.ended();
    server::finish(&a, workers, Some(accepted), &TOTALS.counts(), open)
}
