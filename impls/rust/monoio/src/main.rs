//! corobench servers on monoio (id "rust-monoio"), thread per core:
//! `--threads N` executors (default: the CPUs the process may use), each a
//! std thread running its own monoio runtime on the io_uring driver
//! (`RuntimeBuilder::<IoUringDriver>`, timers on) with its own SO_REUSEPORT
//! listener on the same port. Executors are not pinned: monoio leaves
//! placement to the application (its `utils::bind_to_cpu_set` is opt-in)
//! and the kernel places the threads as it does tokio's workers.
//!
//! Each accepted connection is a `monoio::spawn`ed task on the executor
//! that accepted it. echo and http `httparse` read and write through
//! monoio's owned-buffer API (`AsyncReadRent`/`AsyncWriteRentExt`), one
//! buffer per connection passed back and forth; http `hyper` serves hyper
//! 1.x's http1 over `monoio_compat::hyper::MonoioIo` on the stream's
//! poll-io form (monoio's documented way to run hyper). Counts stay in the
//! executor ([`LocalTotals`]) and are added up by the main thread at stop.

use std::io;
use std::ops::Range;
use std::rc::Rc;
use std::thread;
use std::time::Instant;

use corobench_common::server::hyper_ping::Ping;
use corobench_common::server::{
    self, Counts, Echo, HttpConn, HttpNext, LocalTotals, Scenario, ServerArgs, Servers, Shard, STOP_POLL, STOP_WAIT,
};
use corobench_common::{self as common, Spec, ThreadsMode};
use monoio::buf::IoBufMut;
use monoio::io::{AsyncReadRent, AsyncWriteRentExt, IntoPollIo};
use monoio::net::{TcpListener, TcpStream};
use monoio::{IoUringDriver, RuntimeBuilder};
use monoio_compat::hyper::MonoioIo;

#[global_allocator]
static ALLOC: common::ReportingAlloc = common::ReportingAlloc;

const SPEC: Spec = Spec { id: "rust-monoio", threads: ThreadsMode::Flag, variants: &[], cpuprofile: false, channels: &[] };
const SERVERS: Servers = Servers { echo: Some(&[]), http: Some(&["httparse", "hyper"]) };

fn main() {
    let a = server::server_args_only(&SPEC, &SERVERS);
    let n = a.threads.unwrap_or_else(common::available_cores);
    server::raise_memlock();
    server::serve_per_core(&a, n, |shard| {
        let a = a.clone();
        thread::Builder::new().name(format!("monoio-{}", shard.index)).spawn(move || executor(a, shard)).map(drop)
    })
}

fn executor(a: ServerArgs, mut shard: Shard) {
    let mut rt = match RuntimeBuilder::<IoUringDriver>::new().enable_timer().build() {
        Ok(rt) => rt,
        Err(e) => return shard.refused(server::io_uring_reason(&e)),
    };
    rt.block_on(async move {
        let listener = match TcpListener::from_std(shard.listener.take().expect("listener")) {
            Ok(l) => l,
            Err(e) => return shard.refused(server::io_uring_reason(&e)),
        };
        shard.ready();
        let local = Rc::new(LocalTotals::default());
        let echo = Echo::new(&a);
        let hyper = a.scenario == Scenario::Http && a.variant == "hyper";
        let mut accepted = 0u64;
        loop {
            match listener.accept().await {
                Ok((stream, _)) => {
                    accepted += 1;
                    let _ = stream.set_nodelay(true);
                    local.opened();
                    let local = Rc::clone(&local);
                    match a.scenario {
                        Scenario::Echo => monoio::spawn(echo_conn(stream, echo, local)),
                        Scenario::Http if hyper => monoio::spawn(http_hyper_conn(stream, local)),
                        Scenario::Http => monoio::spawn(http_conn(stream, local)),
                    };
                }
                Err(_) if server::stopping() => break,
                Err(e) => server::accept_error(accepted, &e),
            }
        }
        let deadline = Instant::now() + STOP_WAIT;
        while local.open() > 0 && Instant::now() < deadline {
            monoio::time::sleep(STOP_POLL).await;
        }
        shard.done(accepted, local.counts(), local.open());
        // The main thread exits the process; the runtime is not torn down.
        std::future::pending::<()>().await
    })
}

/// Reads into `buf[range]`. monoio sets a `Vec`'s length to the end of what
/// it read; the length is put back, so the buffer keeps its size.
async fn read_at(s: &mut TcpStream, buf: Vec<u8>, range: Range<usize>) -> (io::Result<usize>, Vec<u8>) {
    let len = buf.len();
    let (r, slice) = s.read(buf.slice_mut(range)).await;
    let mut buf = slice.into_inner();
    // SAFETY: `len` is within the capacity and every byte below it was
    // initialized when the buffer was made (vec![0; n] / resize), and u8 has
    // no destructor.
    unsafe { buf.set_len(len) };
    (r, buf)
}

async fn echo_conn(mut s: TcpStream, e: Echo, local: Rc<LocalTotals>) {
    let mut buf = e.buffer();
    let mut c = Counts::default();
    'conn: loop {
        let mut got = 0;
        while got < e.size {
            let (r, b) = read_at(&mut s, buf, got..e.size).await;
            buf = b;
            match r {
                Ok(0) | Err(_) => {
                    e.ended(got, &mut c);
                    break 'conn;
                }
                Ok(n) => got += n,
            }
        }
        e.make_reply(&mut buf, &mut c);
        let (r, b) = s.write_all(buf).await;
        buf = b;
        if r.is_err() {
            break;
        }
        if e.replied(&mut c) {
            break;
        }
    }
    local.closed(&c);
}

async fn http_conn(mut s: TcpStream, local: Rc<LocalTotals>) {
    let mut h = HttpConn::new();
    loop {
        let range = h.read_range();
        let (r, b) = read_at(&mut s, std::mem::take(&mut h.inbuf), range).await;
        h.inbuf = b;
        match r {
            Ok(0) | Err(_) => break,
            Ok(n) => h.received(n),
        }
        let next = h.process();
        if !h.out.is_empty() {
            let (r, out) = s.write_all(std::mem::take(&mut h.out)).await;
            h.out = out;
            if r.is_err() {
                break;
            }
            h.written();
        }
        if next == HttpNext::Close {
            break;
        }
    }
    local.closed(&h.counts);
}

/// hyper's http1 server on one connection; the shared `Ping` service hands
/// the connection's counts to the executor when hyper drops it at the end.
async fn http_hyper_conn(s: TcpStream, local: Rc<LocalTotals>) {
    let io = match s.into_poll_io() {
        Ok(io) => io,
        Err(_) => return local.closed(&Counts::default()),
    };
    let ping = Ping::new(move |c: &Counts| local.closed(c));
    // Keep-alive is hyper's default; errors only end this connection.
    let _ = hyper::server::conn::http1::Builder::new()
        .serve_connection(MonoioIo::new(io), ping)
        .await;
}
