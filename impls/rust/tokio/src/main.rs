//! corobench on tokio's multi-thread runtime (id "rust-tokio").
//!
//! chain: kanal's async bounded channels (chosen by measurement against
//! tokio::sync::mpsc and three others, see ../README.md); tasks: tokio::spawn + tokio::time::sleep; blocking: four
//! variants (tokio::fs, block_in_place, plain std::fs in the task,
//! spawn_blocking); echo and http servers in `server.rs`.

use std::future::Future;
use std::time::{Duration, Instant};

use corobench_common::{
    self as common, BlockingArgs, ChainArgs, Command, Event, EventSource, Spec, TasksArgs,
    ThreadsMode,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::runtime::Runtime;

#[cfg(feature = "chanbench")]
mod chanbench;
mod server;

#[global_allocator]
static ALLOC: common::ReportingAlloc = common::ReportingAlloc;

const SPEC: Spec = Spec {
    id: "rust-tokio",
    threads: ThreadsMode::Flag,
    variants: &["fs", "block_in_place", "sync", "spawn_blocking"],
    cpuprofile: true,
    #[cfg(not(feature = "chanbench"))]
    channels: &[],
    #[cfg(feature = "chanbench")]
    channels: chanbench::CHANNELS,
};

const SERVERS: common::server::Servers =
    common::server::Servers { echo: Some(&[]), http: Some(&["httparse", "hyper"]) };

fn main() {
    if let Some(a) = common::server::server_args(&SPEC, &SERVERS) {
        server::run(a);
    }
    let cmd = common::parse_args(&SPEC);
    let threads = match &cmd {
        Command::Chain(a) => a.threads,
        Command::Tasks(a) => a.threads,
        Command::Blocking(a) => a.threads,
    };
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    if let Some(n) = threads {
        builder.worker_threads(n);
    }
    let rt = builder
        .enable_time()
        .build()
        .unwrap_or_else(|e| common::io_failure("cannot start the tokio runtime", &e));
    let workers = rt.metrics().num_workers();
    match cmd {
        Command::Chain(a) => chain(&rt, &a, workers),
        Command::Tasks(a) => tasks(&rt, &a, workers),
        Command::Blocking(a) => blocking(&rt, &a, workers),
    }
}

// ---------------------------------------------------------------- chain

/// A bounded channel as the chain uses it (one sender, one receiver).
pub trait Chan {
    type Tx: Send + 'static;
    type Rx: Send + 'static;
    fn channel(capacity: usize) -> (Self::Tx, Self::Rx);
    /// False when the receiver is gone.
    fn send(tx: &mut Self::Tx, ev: Event) -> impl Future<Output = bool> + Send;
    /// None when the sender is gone.
    fn recv(rx: &mut Self::Rx) -> impl Future<Output = Option<Event>> + Send;
}

/// kanal's async bounded channel: the shipped choice, the fastest of the
/// five bounded channels measured (see ../README.md).
pub struct Kanal;

impl Chan for Kanal {
    type Tx = kanal::AsyncSender<Event>;
    type Rx = kanal::AsyncReceiver<Event>;
    fn channel(capacity: usize) -> (Self::Tx, Self::Rx) {
        kanal::bounded_async(capacity)
    }
    async fn send(tx: &mut Self::Tx, ev: Event) -> bool {
        tx.send(ev).await.is_ok()
    }
    async fn recv(rx: &mut Self::Rx) -> Option<Event> {
        rx.recv().await.ok()
    }
}

/// One pass: returns (received, checksum, elapsed_ns).
async fn chain_pass<C: Chan>(a: &ChainArgs, source: EventSource) -> (u64, u64, u64) {
    let (workers, events) = (a.workers as usize, a.events);
    let capacity = usize::try_from(a.queue).unwrap_or(usize::MAX);
    let mut receivers = Vec::with_capacity(workers);

    let start = Instant::now();
    for _ in 0..workers {
        let (mut tx, mut rx) = C::channel(capacity);
        receivers.push(tokio::spawn(async move {
            let mut sum = 0u64;
            for _ in 0..events {
                match C::recv(&mut rx).await {
                    Some(ev) => sum += ev.weight(),
                    None => common::failed("chain: a queue closed before all events arrived"),
                }
            }
            sum
        }));
        tokio::spawn(async move {
            for _ in 0..events {
                if !C::send(&mut tx, source.make()).await {
                    common::failed("chain: a receiver went away");
                }
            }
        });
    }
    let mut checksum = 0u64;
    for r in receivers {
        checksum += r.await.unwrap_or_else(|e| common::failed(format_args!("chain: {e}")));
    }
    let elapsed = common::elapsed_ns(start);
    (a.workers * events, checksum, elapsed)
}

fn chain_with<C: Chan>(rt: &Runtime, a: &ChainArgs, workers: usize) {
    let profile = common::open_profile(a.cpuprofile.as_deref());
    let source = EventSource::new(a.etype, a.esize);
    for _ in 0..a.warmup {
        let (received, checksum, _) = rt.block_on(chain_pass::<C>(a, source));
        common::check_chain(a, received, checksum);
    }
    let profiler = common::start_profile(profile);
    let (received, checksum, elapsed) = rt.block_on(chain_pass::<C>(a, source));
    if let Some(p) = profiler {
        p.finish();
    }
    common::check_chain(a, received, checksum);
    common::print_chain(a, workers, received, checksum, elapsed);
}

fn chain(rt: &Runtime, a: &ChainArgs, workers: usize) {
    #[cfg(feature = "chanbench")]
    if let Some(name) = a.channel {
        return chanbench::chain(rt, a, workers, name);
    }
    chain_with::<Kanal>(rt, a, workers)
}

// ---------------------------------------------------------------- tasks

fn tasks(rt: &Runtime, a: &TasksArgs, workers: usize) {
    let n = a.tasks as usize;
    let sleep = Duration::from_millis(a.sleep_ms);
    let (checksum, spawn_ns, elapsed) = rt.block_on(async move {
        let mut handles = Vec::with_capacity(n);
        let start = Instant::now();
        for _ in 0..n {
            handles.push(tokio::spawn(async move {
                tokio::time::sleep(sleep).await;
                1u64
            }));
        }
        let spawn_ns = common::elapsed_ns(start);
        let mut sum = 0u64;
        for h in handles {
            sum += h.await.unwrap_or_else(|e| common::failed(format_args!("tasks: {e}")));
        }
        (sum, spawn_ns, common::elapsed_ns(start))
    });
    common::print_tasks(a, workers, checksum, spawn_ns, elapsed);
}

// ---------------------------------------------------------------- blocking

/// tokio::fs: each operation runs on tokio's blocking pool.
async fn copy_tokio_fs(mut buf: Vec<u8>) -> (u64, Vec<u8>) {
    let mut src = tokio::fs::File::open("/dev/urandom")
        .await
        .unwrap_or_else(|e| common::io_failure("open /dev/urandom", &e));
    src.read_exact(&mut buf)
        .await
        .unwrap_or_else(|e| common::io_failure("read /dev/urandom", &e));
    drop(src);
    let mut dst = tokio::fs::OpenOptions::new()
        .write(true)
        .open("/dev/null")
        .await
        .unwrap_or_else(|e| common::io_failure("open /dev/null", &e));
    dst.write_all(&buf)
        .await
        .unwrap_or_else(|e| common::io_failure("write /dev/null", &e));
    // tokio::fs::File writes in the background; flush waits for the write.
    dst.flush()
        .await
        .unwrap_or_else(|e| common::io_failure("write /dev/null", &e));
    drop(dst);
    (buf.len() as u64, buf)
}

type Handles = Vec<tokio::task::JoinHandle<(u64, Vec<u8>)>>;

/// One iteration: a task per buffer in `bufs`; every buffer comes back.
async fn blocking_iteration(variant: &str, bufs: &mut Vec<Vec<u8>>, handles: &mut Handles) -> u64 {
    for mut buf in bufs.drain(..) {
        handles.push(match variant {
            "fs" => tokio::spawn(copy_tokio_fs(buf)),
            "block_in_place" => tokio::spawn(async move {
                let n = tokio::task::block_in_place(|| common::copy_urandom_to_null(&mut buf));
                (n, buf)
            }),
            "sync" => tokio::spawn(async move { (common::copy_urandom_to_null(&mut buf), buf) }),
            "spawn_blocking" => tokio::spawn(async move {
                tokio::task::spawn_blocking(move || (common::copy_urandom_to_null(&mut buf), buf))
                    .await
                    .unwrap_or_else(|e| common::failed(format_args!("blocking: {e}")))
            }),
            v => unreachable!("variant {v}"),
        });
    }
    let mut sum = 0u64;
    for h in handles.drain(..) {
        let (n, buf) = h.await.unwrap_or_else(|e| common::failed(format_args!("blocking: {e}")));
        sum += n;
        bufs.push(buf);
    }
    sum
}

/// Threads that may run the variant's blocking calls with tokio's defaults:
/// the blocking pool's limit (`max_blocking_threads`, 512) for tokio::fs and
/// spawn_blocking; for block_in_place the call runs on the worker thread
/// itself while its core moves to a thread from the same pool, whose cap is
/// 512 plus the worker threads (the workers are launched from it); none
/// beyond the workers for sync.
fn pool_threads(variant: &str, workers: usize) -> u64 {
    const MAX_BLOCKING_THREADS: u64 = 512;
    match variant {
        "fs" | "spawn_blocking" => MAX_BLOCKING_THREADS,
        "block_in_place" => MAX_BLOCKING_THREADS + workers as u64,
        "sync" => 0,
        v => unreachable!("variant {v}"),
    }
}

fn blocking(rt: &Runtime, a: &BlockingArgs, workers: usize) {
    let mut bufs = common::task_buffers(a);
    let mut handles = Vec::with_capacity(bufs.len());
    let (checksum, elapsed) = rt.block_on(async {
        // unmeasured warm-up iteration
        blocking_iteration(a.variant, &mut bufs, &mut handles).await;
        let start = Instant::now();
        let mut sum = 0u64;
        for _ in 0..a.iterations {
            sum += blocking_iteration(a.variant, &mut bufs, &mut handles).await;
        }
        (sum, common::elapsed_ns(start))
    });
    common::print_blocking(a, workers, pool_threads(a.variant, workers), checksum, elapsed);
}
