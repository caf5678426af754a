//! The server scenarios on plain OS threads: a blocking
//! `std::net::TcpListener` whose accept loop runs on the main thread.
//!
//! - echo `concurrent` (the default): one std::thread (64 KiB stack) per
//!   connection, the original's second round;
//! - echo `serial`: the accepting thread serves each connection itself, one
//!   at a time (the original's first round);
//! - http: one thread per connection over the shared httparse connection.
//!
//! Counts: each connection keeps its own [`Counts`] and adds them to
//! [`TOTALS`] when it ends. SIGTERM/SIGINT are caught by signal-hook; a
//! signal thread then shuts the listener down (which makes the blocked
//! `accept` return), waits up to 2 s for open connections, prints the final
//! line and exits. The `threads` field is 1 (the accepting thread), as the
//! protocol says for a thread-per-connection server.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::thread;
use std::time::Instant;

use corobench_common::server::{
    self, Counts, Echo, HttpConn, HttpNext, Scenario, ServerArgs, StopSignal, Totals, STOP_POLL, STOP_WAIT,
};
use corobench_common::{self as common};

/// Counts of the connections that ended, added once per connection.
static TOTALS: Totals = Totals::new();
/// Connections accepted so far (written by the accept loop only).
static ACCEPTED: AtomicU64 = AtomicU64::new(0);

pub fn run(a: ServerArgs) -> ! {
    let stop = StopSignal::new();
    let listener = std::net::TcpListener::bind(a.addr()).unwrap_or_else(|e| server::bind_refused(a.addr(), &e));
    let port = server::local_port(&listener);
    let serial = a.scenario == Scenario::Echo && a.variant == "serial";

    let (done, accept_ended) = mpsc::channel::<u64>();
    let fd = listener.as_raw_fd();
    let args = a.clone();
    stop.spawn(move || {
        server::set_stopping();
        server::shutdown_listener(fd);
        let deadline = Instant::now() + STOP_WAIT;
        // The accept loop ends at once, or (serial) after the connection it
        // is serving.
        let accepted = accept_ended.recv_timeout(STOP_WAIT).unwrap_or_else(|_| ACCEPTED.load(Ordering::Relaxed));
        while TOTALS.ended() < accepted && Instant::now() < deadline {
            thread::sleep(STOP_POLL);
        }
        let open = accepted - TOTALS.ended();
        server::finish(&args, 1, Some(accepted), &TOTALS.counts(), open)
    });
    server::print_ready(&a, port, 1);

    let echo = Echo::new(&a);
    let mut accepted = 0u64;
    loop {
        let stream = match listener.accept() {
            Ok((s, _)) => s,
            Err(_) if server::stopping() => break,
            Err(e) => {
                server::accept_error(accepted, &e);
                continue;
            }
        };
        accepted += 1;
        ACCEPTED.store(accepted, Ordering::Relaxed);
        let _ = stream.set_nodelay(true);
        if serial {
            echo_conn(stream, echo);
            continue;
        }
        server::note_accepted(accepted);
        let started = thread::Builder::new().stack_size(super::STACK).spawn(move || match a.scenario {
            Scenario::Echo => echo_conn(stream, echo),
            Scenario::Http => http_conn(stream),
        });
        if let Err(e) = started {
            common::refused(format_args!(
                "accepted {accepted} connections, then thread spawn failed: {}",
                common::error_text(&e)
            ));
        }
    }
    let _ = done.send(accepted);
    // The signal thread prints the final line and exits the process.
    loop {
        thread::park();
    }
}

fn echo_conn(mut s: TcpStream, e: Echo) {
    let mut buf = e.buffer();
    let mut c = Counts::default();
    'conn: loop {
        let mut got = 0;
        while got < e.size {
            match s.read(&mut buf[got..e.size]) {
                Ok(0) | Err(_) => {
                    e.ended(got, &mut c);
                    break 'conn;
                }
                Ok(n) => got += n,
            }
        }
        e.make_reply(&mut buf, &mut c);
        if s.write_all(&buf).is_err() {
            break;
        }
        e.replied(&mut c);
    }
    TOTALS.add(&c);
}

fn http_conn(mut s: TcpStream) {
    let mut h = HttpConn::new();
    loop {
        match s.read(h.read_buf()) {
            Ok(0) | Err(_) => break,
            Ok(n) => h.received(n),
        }
        let next = h.process();
        if !h.out.is_empty() {
            if s.write_all(&h.out).is_err() {
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
