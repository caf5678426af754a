//! The server scenarios' accept loop on async-std: an
//! `async_std::net::TcpListener` in `task::block_on` (as `#[async_std::main]`
//! runs main) spawning a task per connection onto the global executor
//! (ASYNC_STD_THREAD_COUNT threads); the connection bodies (common's
//! futures-io ones) are in the echo and http binaries.
//!
//! Counts: each connection task keeps its own `Counts` and adds them to the
//! binary's `Totals` when it ends. SIGTERM/SIGINT arrive through async-signal
//! (on async-io, async-std's reactor); then the listener is dropped, the loop
//! waits up to 2 s for open connections, prints the final line and exits.

use std::future::Future;
use std::time::Instant;

use async_signal::{Signal, Signals};
use async_std::net::{TcpListener, TcpStream};
use async_std::task;
use corobench_common::server::{self, ServerArgs, Totals, STOP_POLL, STOP_WAIT};
use corobench_common::{self as common};
use futures_lite::{future, StreamExt};

/// Serves `a` until SIGTERM/SIGINT: `conn` is each accepted connection's
/// task (it adds its counts to `totals` when it ends).
pub fn run<F, C>(a: ServerArgs, totals: &'static Totals, conn: C) -> !
where
    C: Fn(TcpStream) -> F,
    F: Future<Output = ()> + Send + 'static,
{
    // The parser exported --threads into ASYNC_STD_THREAD_COUNT before the
    // runtime starts (the first block_on).
    let workers = a.threads.unwrap_or_else(common::available_cores);
    task::block_on(serve(a, workers, totals, conn))
}

async fn serve<F, C>(a: ServerArgs, workers: usize, totals: &'static Totals, conn: C) -> !
where
    C: Fn(TcpStream) -> F,
    F: Future<Output = ()> + Send + 'static,
{
    // Caught from here on, before the ready line.
    let mut signals =
        Signals::new([Signal::Term, Signal::Int]).unwrap_or_else(|e| common::io_failure("cannot catch SIGTERM", &e));
    let listener = TcpListener::bind(a.addr()).await.unwrap_or_else(|e| server::bind_refused(a.addr(), &e));
    let port = listener.local_addr().unwrap_or_else(|e| server::bind_refused(a.addr(), &e)).port();
    server::print_ready(&a, port, workers);

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
                task::spawn(conn(stream));
            }
            Some(Err(e)) => server::accept_error(accepted, &e),
        }
    }
    drop(listener);
    let deadline = Instant::now() + STOP_WAIT;
    while totals.ended() < accepted && Instant::now() < deadline {
        task::sleep(STOP_POLL).await;
    }
    let open = accepted - totals.ended();
    server::finish(&a, workers, Some(accepted), &totals.counts(), open)
}
