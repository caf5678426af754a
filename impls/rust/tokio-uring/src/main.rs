//! corobench servers on tokio-uring (id "rust-tokio-uring"), thread per
//! core: `--threads N` executors (default: the CPUs the process may use),
//! each a std thread running its own `tokio_uring::Runtime` (a current-thread
//! tokio runtime driving one io_uring) with its own SO_REUSEPORT listener on
//! the same port. Executors are not pinned: tokio-uring has no placement
//! setting, and the kernel places the threads as it does tokio's workers.
//!
//! Each accepted connection is a `tokio_uring::spawn`ed task on the executor
//! that accepted it; reads and writes are io_uring operations on owned
//! buffers, allocated once per connection and passed back and forth. Counts
//! stay in the executor ([`LocalTotals`]) and are added up by the main thread
//! at stop (`server::serve_per_core`).

use std::rc::Rc;
use std::thread;
use std::time::Instant;

use corobench_common::server::{
    self, Counts, Echo, HttpConn, HttpNext, LocalTotals, Scenario, ServerArgs, Servers, Shard, STOP_POLL, STOP_WAIT,
};
use corobench_common::{self as common, Spec, ThreadsMode};
use tokio_uring::buf::BoundedBuf;
use tokio_uring::net::{TcpListener, TcpStream};

#[global_allocator]
static ALLOC: common::ReportingAlloc = common::ReportingAlloc;

const SPEC: Spec = Spec { id: "rust-tokio-uring", threads: ThreadsMode::Flag, variants: &[], cpuprofile: false, channels: &[] };
const SERVERS: Servers = Servers { echo: Some(&[]), http: Some(&[]) };

fn main() {
    let a = server::server_args_only(&SPEC, &SERVERS);
    let n = a.threads.unwrap_or_else(common::available_cores);
    server::raise_memlock();
    server::serve_per_core(&a, n, |shard| {
        let a = a.clone();
        thread::Builder::new().name(format!("uring-{}", shard.index)).spawn(move || executor(a, shard)).map(drop)
    })
}

fn executor(a: ServerArgs, mut shard: Shard) {
    let rt = match tokio_uring::Runtime::new(&tokio_uring::builder()) {
        Ok(rt) => rt,
        Err(e) => return shard.refused(server::io_uring_reason(&e)),
    };
    rt.block_on(async move {
        let listener = TcpListener::from_std(shard.listener.take().expect("listener"));
        shard.ready();
        let local = Rc::new(LocalTotals::default());
        let echo = Echo::new(&a);
        let mut accepted = 0u64;
        loop {
            match listener.accept().await {
                Ok((stream, _)) => {
                    accepted += 1;
                    let _ = stream.set_nodelay(true);
                    local.opened();
                    let local = Rc::clone(&local);
                    match a.scenario {
                        Scenario::Echo => tokio_uring::spawn(echo_conn(stream, echo, local)),
                        Scenario::Http => tokio_uring::spawn(http_conn(stream, local)),
                    };
                }
                Err(_) if server::stopping() => break,
                Err(e) => server::accept_error(accepted, &e),
            }
        }
        let deadline = Instant::now() + STOP_WAIT;
        while local.open() > 0 && Instant::now() < deadline {
            tokio::time::sleep(STOP_POLL).await;
        }
        shard.done(accepted, local.counts(), local.open());
        // The main thread exits the process; tearing the ring down here
        // could wait on the connections still open.
        std::future::pending::<()>().await
    })
}

async fn echo_conn(s: TcpStream, e: Echo, local: Rc<LocalTotals>) {
    let mut buf = e.buffer();
    let mut c = Counts::default();
    'conn: loop {
        let mut got = 0;
        while got < e.size {
            let (r, slice) = s.read(buf.slice(got..e.size)).await;
            buf = slice.into_inner();
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

async fn http_conn(s: TcpStream, local: Rc<LocalTotals>) {
    let mut h = HttpConn::new();
    loop {
        let range = h.read_range();
        let (r, slice) = s.read(std::mem::take(&mut h.inbuf).slice(range)).await;
        h.inbuf = slice.into_inner();
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
