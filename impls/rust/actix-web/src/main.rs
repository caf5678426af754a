//! corobench http server on actix-web 4 (id "rust-actix-web"): one
//! `HttpServer` with `--threads N` workers (default: the CPUs the process may
//! use); actix-server's accept thread hands connections to the workers, each
//! a thread with its own single-threaded tokio runtime. One handler serves
//! `GET /ping/{token}`; everything else goes to a 404 default service;
//! actix answers malformed requests with 400 and closes.
//!
//! Counts: per worker, in a [`Worker`] made by the app factory (which actix
//! calls once on each worker thread) and reached through a thread local;
//! only that worker's thread writes it (plain load + store, no read-modify-
//! write, no lock). `connections` and their ends are counted from
//! `on_connect` and a guard in the connection's extensions. At stop the main
//! thread adds up the workers' counts.
//!
//! Stop: `shutdown_signal` on SIGTERM/SIGINT starts actix's graceful stop
//! (listener closed, workers given `shutdown_timeout` = 2 s for their
//! connections, then dropped); when the server future returns, the final
//! line is printed.

use std::cell::RefCell;
use std::future::poll_fn;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::Poll;

use actix_web::http::KeepAlive;
use actix_web::{web, App, HttpRequest, HttpResponse, HttpServer};
use corobench_common::server::{self, Counts, ServerArgs, Servers};
use corobench_common::{self as common, Spec, ThreadsMode};
use tokio::signal::unix::{signal, SignalKind};

#[global_allocator]
static ALLOC: common::ReportingAlloc = common::ReportingAlloc;

const SPEC: Spec = Spec { id: "rust-actix-web", threads: ThreadsMode::Flag, variants: &[], cpuprofile: false, channels: &[] };
const SERVERS: Servers = Servers { echo: None, http: Some(&[]) };

/// One worker's counts. Written only by its worker thread, read by the main
/// thread at stop.
#[derive(Default)]
struct Worker {
    requests: AtomicU64,
    not_found: AtomicU64,
    connections: AtomicU64,
    ended: AtomicU64,
}

/// Adds one to a count that only the calling worker thread writes.
#[inline]
fn bump(c: &AtomicU64) {
    c.store(c.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
}

/// Every worker's counts, registered once per worker at start.
static WORKERS: Mutex<Vec<Arc<Worker>>> = Mutex::new(Vec::new());

thread_local! {
    /// This worker thread's counts (set by the app factory).
    static WORKER: RefCell<Option<Arc<Worker>>> = const { RefCell::new(None) };
}

fn with_worker(f: impl FnOnce(&Worker)) {
    WORKER.with(|w| {
        if let Some(w) = &*w.borrow() {
            f(w)
        }
    })
}

/// Lives in a connection's extensions: dropped when the connection ends.
struct ConnectionEnd;

impl Drop for ConnectionEnd {
    fn drop(&mut self) {
        with_worker(|w| bump(&w.ended));
    }
}

async fn ping(req: HttpRequest) -> HttpResponse {
    let token = req.match_info().get("token").unwrap_or("");
    // Same rule as the other servers: a token of [A-Za-z0-9_-], no query.
    if !server::valid_token(token) || !req.query_string().is_empty() {
        return not_found().await;
    }
    with_worker(|w| bump(&w.requests));
    HttpResponse::Ok().content_type("text/plain").body(token.to_owned())
}

async fn not_found() -> HttpResponse {
    with_worker(|w| bump(&w.not_found));
    HttpResponse::NotFound().finish()
}

fn main() {
    let a = server::server_args_only(&SPEC, &SERVERS);
    let n = a.threads.unwrap_or_else(common::available_cores);
    actix_web::rt::System::new().block_on(serve(a, n))
}

async fn serve(a: ServerArgs, n: usize) -> ! {
    // Caught from here on, before the ready line.
    let mut term = signal(SignalKind::terminate()).unwrap_or_else(|e| common::io_failure("cannot catch SIGTERM", &e));
    let mut int = signal(SignalKind::interrupt()).unwrap_or_else(|e| common::io_failure("cannot catch SIGINT", &e));
    let stop = poll_fn(move |cx| {
        if term.poll_recv(cx).is_ready() || int.poll_recv(cx).is_ready() {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    });
    let route = format!("{}{{token}}", server::HTTP_PING_PREFIX);
    let http = HttpServer::new(move || {
        let w = Arc::new(Worker::default());
        WORKERS.lock().unwrap_or_else(|e| e.into_inner()).push(Arc::clone(&w));
        WORKER.with(|c| *c.borrow_mut() = Some(w));
        App::new().route(&route, web::get().to(ping)).default_service(web::to(not_found))
    })
    .workers(n)
    // No idle timeout: a keep-alive connection stays open until the client
    // closes it (actix's default closes it after 5 s without a request).
    .keep_alive(KeepAlive::Os)
    .shutdown_timeout(server::STOP_WAIT.as_secs())
    .shutdown_signal(stop)
    .on_connect(|_, ext| {
        with_worker(|w| bump(&w.connections));
        ext.insert(ConnectionEnd);
    })
    .bind(a.addr())
    .unwrap_or_else(|e| server::bind_refused(a.addr(), &e));
    let port = http.addrs().first().map(|s| s.port()).unwrap_or_else(|| common::failed("no bound address"));
    let running = http.run();
    server::print_ready(&a, port, n);
    if let Err(e) = running.await {
        common::io_failure("server failed", &e);
    }

    let (mut c, mut connections, mut ended) = (Counts::default(), 0, 0);
    for w in WORKERS.lock().unwrap_or_else(|e| e.into_inner()).iter() {
        c.requests += w.requests.load(Ordering::Acquire);
        c.not_found += w.not_found.load(Ordering::Relaxed);
        connections += w.connections.load(Ordering::Relaxed);
        ended += w.ended.load(Ordering::Relaxed);
    }
    server::finish(&a, n, Some(connections), &c, connections.saturating_sub(ended))
}
