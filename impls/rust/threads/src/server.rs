//! The server scenarios' accept loop on plain OS threads: a blocking
//! `std::net::TcpListener` whose loop runs on the main thread and either
//! starts a thread (64 KiB stack) per connection or, for echo's `serial`
//! variant, serves each connection itself before accepting the next. The
//! connection bodies are in the echo and http binaries.
//!
//! Counts: each connection keeps its own `Counts` and adds them to the
//! binary's `Totals` when it ends.
//!
//! Stop without a thread of its own: SIGTERM and SIGINT run a handler
//! ([`on_stop`]) that marks the server stopping and shuts the listener down,
//! so that the blocked `accept` fails and the main thread takes the stop
//! from there: it waits up to 2 s for the open connections, prints the final
//! line and exits. A signal thread (signal-hook) did this before, and it
//! cost the serial server, which otherwise has no thread but the main one,
//! a second malloc arena: 2 × 64 MiB of peak virtual size, 131.7 MiB in all
//! against 2.9 MiB for the public program (../README.md, "Servers"). The
//! handler is installed without SA_RESTART, so a blocking read that it
//! interrupts returns EINTR, which the connections retry; the serial
//! server's connection in service gets a 2 s read timeout from the handler,
//! so that a client that keeps it open cannot hold the stop.

use std::io;
use std::net::TcpStream;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicI32, Ordering};
use std::thread;
use std::time::Instant;

use corobench_common::server::{self, ServerArgs, Totals, STOP_POLL, STOP_WAIT};
use corobench_common::{self as common};

/// The listener, for the handler to shut down (-1 before it exists).
static LISTENER: AtomicI32 = AtomicI32::new(-1);
/// The serial server's connection in service (-1: none).
static SERVING: AtomicI32 = AtomicI32::new(-1);

/// SIGTERM/SIGINT. Only async-signal-safe calls: atomics, shutdown(2) and
/// setsockopt(2); errno is kept for the code it interrupted.
extern "C" fn on_stop(_: libc::c_int) {
    // SAFETY: errno is thread-local; the fds are the listener and the
    // connection in service, or -1 (then nothing is called).
    unsafe {
        let errno = *libc::__errno_location();
        server::set_stopping();
        let l = LISTENER.load(Ordering::SeqCst);
        if l >= 0 {
            libc::shutdown(l, libc::SHUT_RDWR);
        }
        let c = SERVING.load(Ordering::SeqCst);
        if c >= 0 {
            stop_timeout(c);
        }
        *libc::__errno_location() = errno;
    }
}

/// The 2 s the protocol gives a connection still open at stop: the socket's
/// blocking reads and writes time out after it.
fn stop_timeout(fd: libc::c_int) {
    let t = libc::timeval { tv_sec: STOP_WAIT.as_secs() as libc::time_t, tv_usec: 0 };
    // SAFETY: setsockopt on a descriptor with a timeval of its size.
    unsafe {
        for opt in [libc::SO_RCVTIMEO, libc::SO_SNDTIMEO] {
            libc::setsockopt(
                fd,
                libc::SOL_SOCKET,
                opt,
                (&t as *const libc::timeval).cast(),
                std::mem::size_of::<libc::timeval>() as libc::socklen_t,
            );
        }
    }
}

fn catch_stop_signals() {
    // SAFETY: a zeroed sigaction with a plain handler, no SA_RESTART.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_stop as extern "C" fn(libc::c_int) as libc::sighandler_t;
        libc::sigemptyset(&mut sa.sa_mask);
        for sig in [libc::SIGTERM, libc::SIGINT] {
            if libc::sigaction(sig, &sa, std::ptr::null_mut()) != 0 {
                common::failed(format_args!("cannot catch signal {sig}: {}", common::error_text(&io::Error::last_os_error())));
            }
        }
    }
}

/// What a connection's read error means. Interrupted: read again (the stop
/// handler ran on this thread). Timed out while stopping: the serial
/// server's connection is still open after the 2 s, and is left so (counted
/// in `open_at_stop`, its counts unreported, as any connection open at stop).
pub enum ReadError {
    Retry,
    LeftOpen,
    Ended,
}

pub fn read_error(e: &io::Error) -> ReadError {
    match e.kind() {
        io::ErrorKind::Interrupted => ReadError::Retry,
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut if server::stopping() => ReadError::LeftOpen,
        _ => ReadError::Ended,
    }
}

/// Serves `a` until SIGTERM/SIGINT: `conn` serves one connection to its end
/// (and adds its counts to `totals`), on a thread of its own or, `serial`,
/// on the accepting thread. The `threads` field is 1 (the accepting thread),
/// as the protocol says for a thread-per-connection server.
pub fn run<C>(a: &ServerArgs, totals: &'static Totals, serial: bool, conn: C) -> !
where
    C: Fn(TcpStream) + Copy + Send + 'static,
{
    // Caught from here on, before the ready line.
    catch_stop_signals();
    let listener = std::net::TcpListener::bind(a.addr()).unwrap_or_else(|e| server::bind_refused(a.addr(), &e));
    LISTENER.store(listener.as_raw_fd(), Ordering::SeqCst);
    if server::stopping() {
        // A signal came before the listener was there to shut down.
        server::shutdown_listener(listener.as_raw_fd());
    }
    server::print_ready(a, server::local_port(&listener), 1);

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
        let _ = stream.set_nodelay(true);
        if serial {
            let fd = stream.as_raw_fd();
            SERVING.store(fd, Ordering::SeqCst);
            if server::stopping() {
                // The handler ran before it could see this connection.
                stop_timeout(fd);
            }
            conn(stream);
            SERVING.store(-1, Ordering::SeqCst);
            continue;
        }
        server::note_accepted(accepted);
        // std's default stack (2 MiB), as `thread::spawn` gives it: a connection thread exits
        // when its connection ends, and glibc keeps up to 40 MiB of exited threads' stacks, with
        // the pages they touched, for reuse; at 64 KiB a stack that is 640 stacks, at 2 MiB 20
        // (../README.md, "rust-threads"): the small stack raised echo's peak RSS by a fifth.
        let started = thread::Builder::new().spawn(move || conn(stream));
        if let Err(e) = started {
            common::refused(format_args!(
                "accepted {accepted} connections, then thread spawn failed: {}",
                common::error_text(&e)
            ));
        }
    }
    // Serial: the connection in service has ended or was left open; else
    // wait for the connection threads.
    let deadline = Instant::now() + STOP_WAIT;
    while !serial && totals.ended() < accepted && Instant::now() < deadline {
        thread::sleep(STOP_POLL);
    }
    let open = accepted - totals.ended();
    server::finish(a, 1, Some(accepted), &totals.counts(), open)
}
