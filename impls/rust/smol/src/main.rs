//! corobench on smol (id "rust-smol"): one smol::Executor, leaked as a
//! StaticExecutor, run by N worker threads (smol's documented multi-thread
//! pattern: each thread runs `block_on(ex.run(shutdown))`), smol::channel
//! bounded channels (async-channel) for the chain, spawn + smol::Timer for
//! tasks, and two blocking variants: "unblock" (std::fs inside smol::unblock,
//! the manifest's only one) and "fs" (smol::fs, i.e. async-fs, kept for
//! experiments). --threads sets N (default: one per core). echo and http
//! servers in `server.rs`.

use std::thread;
use std::time::{Duration, Instant};

use corobench_common::{
    self as common, BlockingArgs, ChainArgs, Command, EventSource, Spec, TasksArgs, ThreadsMode,
};
use smol::io::{AsyncReadExt, AsyncWriteExt};
use async_executor::StaticExecutor;
use smol::{channel, Executor, Timer};

mod server;

#[global_allocator]
static ALLOC: common::ReportingAlloc = common::ReportingAlloc;

const SPEC: Spec = Spec {
    id: "rust-smol",
    threads: ThreadsMode::Flag,
    // "fs" works but is not in the manifest: see ../README.md (async-fs reads
    // ahead up to 8 MiB from /dev/urandom per open file).
    variants: &["unblock", "fs"],
    cpuprofile: true,
    channels: &[],
};

const SERVERS: common::server::Servers = common::server::Servers { echo: Some(&[]), http: Some(&[]) };

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
    let workers = threads.unwrap_or_else(common::available_cores);

    // The executor lives for the whole process: `leak` makes it a
    // StaticExecutor (async-executor's "static" feature), which spawns and
    // finishes tasks without the active-task registry (a mutex taken on
    // every spawn and every completion) that a droppable Executor needs.
    let ex: &'static StaticExecutor = Executor::new().leak();
    let (stop, stopped) = channel::unbounded::<()>();
    let mut pool = Vec::with_capacity(workers);
    for i in 0..workers {
        let stopped = stopped.clone();
        let started = thread::Builder::new()
            .name(format!("smol-{i}"))
            .spawn(move || smol::block_on(ex.run(stopped.recv())));
        match started {
            Ok(h) => pool.push(h),
            Err(e) => common::refused(format_args!(
                "started {i} of {workers} threads: {}",
                common::error_text(&e)
            )),
        }
    }

    match cmd {
        Command::Chain(a) => chain(ex, &a, workers),
        Command::Tasks(a) => tasks(ex, &a, workers),
        Command::Blocking(a) => blocking(ex, &a, workers),
    }
    drop(stop);
    for h in pool {
        let _ = h.join();
    }
}

// ---------------------------------------------------------------- chain

async fn chain_pass(ex: &'static StaticExecutor, a: &ChainArgs, source: EventSource) -> (u64, u64, u64) {
    let (workers, events) = (a.workers as usize, a.events);
    let capacity = usize::try_from(a.queue).unwrap_or(usize::MAX);
    let mut receivers = Vec::with_capacity(workers);

    let start = Instant::now();
    for _ in 0..workers {
        let (tx, rx) = channel::bounded(capacity);
        receivers.push(ex.spawn(async move {
            let mut sum = 0u64;
            for _ in 0..events {
                match rx.recv().await {
                    Ok(ev) => sum += common::Event::weight(&ev),
                    Err(_) => common::failed("chain: a queue closed before all events arrived"),
                }
            }
            sum
        }));
        ex.spawn(async move {
            for _ in 0..events {
                if tx.send(source.make()).await.is_err() {
                    common::failed("chain: a receiver went away");
                }
            }
        })
        .detach();
    }
    let mut checksum = 0u64;
    for r in receivers {
        checksum += r.await;
    }
    let elapsed = common::elapsed_ns(start);
    (a.workers * events, checksum, elapsed)
}

fn chain(ex: &'static StaticExecutor, a: &ChainArgs, workers: usize) {
    let profile = common::open_profile(a.cpuprofile.as_deref());
    let source = EventSource::new(a.etype, a.esize);
    for _ in 0..a.warmup {
        let (received, checksum, _) = smol::block_on(chain_pass(ex, a, source));
        common::check_chain(a, received, checksum);
    }
    let profiler = common::start_profile(profile);
    let (received, checksum, elapsed) = smol::block_on(chain_pass(ex, a, source));
    if let Some(p) = profiler {
        p.finish();
    }
    common::check_chain(a, received, checksum);
    common::print_chain(a, workers, received, checksum, elapsed);
}

// ---------------------------------------------------------------- tasks

fn tasks(ex: &'static StaticExecutor, a: &TasksArgs, workers: usize) {
    let n = a.tasks as usize;
    let sleep = Duration::from_millis(a.sleep_ms);
    let (checksum, spawn_ns, elapsed) = smol::block_on(async move {
        let mut handles = Vec::with_capacity(n);
        let start = Instant::now();
        for _ in 0..n {
            handles.push(ex.spawn(async move {
                Timer::after(sleep).await;
                1u64
            }));
        }
        let spawn_ns = common::elapsed_ns(start);
        let mut sum = 0u64;
        for h in handles {
            sum += h.await;
        }
        (sum, spawn_ns, common::elapsed_ns(start))
    });
    common::print_tasks(a, workers, checksum, spawn_ns, elapsed);
}

// ---------------------------------------------------------------- blocking

/// smol::fs (async-fs): each operation runs on the `blocking` thread pool.
async fn copy_async_fs(mut buf: Vec<u8>) -> (u64, Vec<u8>) {
    let mut src = smol::fs::File::open("/dev/urandom")
        .await
        .unwrap_or_else(|e| common::io_failure("open /dev/urandom", &e));
    src.read_exact(&mut buf)
        .await
        .unwrap_or_else(|e| common::io_failure("read /dev/urandom", &e));
    drop(src);
    let mut dst = smol::fs::OpenOptions::new()
        .write(true)
        .open("/dev/null")
        .await
        .unwrap_or_else(|e| common::io_failure("open /dev/null", &e));
    dst.write_all(&buf)
        .await
        .unwrap_or_else(|e| common::io_failure("write /dev/null", &e));
    // async-fs buffers writes; flush waits for the write.
    dst.flush()
        .await
        .unwrap_or_else(|e| common::io_failure("write /dev/null", &e));
    drop(dst);
    (buf.len() as u64, buf)
}

type Handles = Vec<smol::Task<(u64, Vec<u8>)>>;

/// One iteration: a task per buffer in `bufs`; every buffer comes back.
async fn blocking_iteration(
    ex: &'static StaticExecutor,
    variant: &str,
    bufs: &mut Vec<Vec<u8>>,
    handles: &mut Handles,
) -> u64 {
    for mut buf in bufs.drain(..) {
        handles.push(match variant {
            "fs" => ex.spawn(copy_async_fs(buf)),
            "unblock" => ex.spawn(async move {
                smol::unblock(move || (common::copy_urandom_to_null(&mut buf), buf)).await
            }),
            v => unreachable!("variant {v}"),
        });
    }
    let mut sum = 0u64;
    for h in handles.drain(..) {
        let (n, buf) = h.await;
        sum += n;
        bufs.push(buf);
    }
    sum
}

fn blocking(ex: &'static StaticExecutor, a: &BlockingArgs, workers: usize) {
    let mut bufs = common::task_buffers(a);
    let mut handles = Vec::with_capacity(bufs.len());
    let (checksum, elapsed) = smol::block_on(async {
        // unmeasured warm-up iteration
        blocking_iteration(ex, a.variant, &mut bufs, &mut handles).await;
        let start = Instant::now();
        let mut sum = 0u64;
        for _ in 0..a.iterations {
            sum += blocking_iteration(ex, a.variant, &mut bufs, &mut handles).await;
        }
        (sum, common::elapsed_ns(start))
    });
    // smol::unblock and smol::fs (async-fs) both run on the `blocking` crate's pool.
    let pool_threads = common::blocking_crate_max_threads();
    common::print_blocking(a, workers, pool_threads, checksum, elapsed);
}
