//! corobench on async-std (id "rust-async-std"): its global multi-thread
//! executor, async_std::channel bounded channels for the chain,
//! task::spawn + task::sleep for tasks, and two blocking variants
//! (async_std::fs; std::fs inside task::spawn_blocking). Worker threads come
//! from ASYNC_STD_THREAD_COUNT (default: one per core). echo and http
//! servers in `server.rs`.

use std::time::{Duration, Instant};

use async_std::channel;
use async_std::io::{ReadExt, WriteExt};
use async_std::task;
use corobench_common::{
    self as common, BlockingArgs, ChainArgs, Command, EventSource, Spec, TasksArgs, ThreadsMode,
};

mod server;

#[global_allocator]
static ALLOC: common::ReportingAlloc = common::ReportingAlloc;

const SPEC: Spec = Spec {
    id: "rust-async-std",
    threads: ThreadsMode::Env("ASYNC_STD_THREAD_COUNT"),
    variants: &["fs", "spawn_blocking"],
    cpuprofile: true,
    channels: &[],
};

const SERVERS: common::server::Servers = common::server::Servers { echo: Some(&[]), http: Some(&[]) };

fn main() {
    if let Some(a) = common::server::server_args(&SPEC, &SERVERS) {
        // As below: the variable is set (or not) before the runtime starts.
        let workers = a.threads.unwrap_or_else(common::available_cores);
        server::run(a, workers);
    }
    let cmd = common::parse_args(&SPEC);
    let threads = match &cmd {
        Command::Chain(a) => a.threads,
        Command::Tasks(a) => a.threads,
        Command::Blocking(a) => a.threads,
    };
    // async-std reads the variable (validated by parse_args) when its
    // runtime starts, which the first block_on does, before any timing.
    let workers = threads.unwrap_or_else(common::available_cores);
    match cmd {
        Command::Chain(a) => chain(&a, workers),
        Command::Tasks(a) => tasks(&a, workers),
        Command::Blocking(a) => blocking(&a, workers),
    }
}

// ---------------------------------------------------------------- chain

async fn chain_pass(a: &ChainArgs, source: EventSource) -> (u64, u64, u64) {
    let (workers, events) = (a.workers as usize, a.events);
    let capacity = usize::try_from(a.queue).unwrap_or(usize::MAX);
    let mut receivers = Vec::with_capacity(workers);

    let start = Instant::now();
    for _ in 0..workers {
        let (tx, rx) = channel::bounded(capacity);
        receivers.push(task::spawn(async move {
            let mut sum = 0u64;
            for _ in 0..events {
                match rx.recv().await {
                    Ok(ev) => sum += common::Event::weight(&ev),
                    Err(_) => common::failed("chain: a queue closed before all events arrived"),
                }
            }
            sum
        }));
        task::spawn(async move {
            for _ in 0..events {
                if tx.send(source.make()).await.is_err() {
                    common::failed("chain: a receiver went away");
                }
            }
        });
    }
    let mut checksum = 0u64;
    for r in receivers {
        checksum += r.await;
    }
    let elapsed = common::elapsed_ns(start);
    (a.workers * events, checksum, elapsed)
}

fn chain(a: &ChainArgs, workers: usize) {
    let profile = common::open_profile(a.cpuprofile.as_deref());
    let source = EventSource::new(a.etype, a.esize);
    for _ in 0..a.warmup {
        let (received, checksum, _) = task::block_on(chain_pass(a, source));
        common::check_chain(a, received, checksum);
    }
    let (received, checksum, elapsed) = task::block_on(async {
        let profiler = common::start_profile(profile);
        let result = chain_pass(a, source).await;
        if let Some(p) = profiler {
            p.finish();
        }
        result
    });
    common::check_chain(a, received, checksum);
    common::print_chain(a, workers, received, checksum, elapsed);
}

// ---------------------------------------------------------------- tasks

fn tasks(a: &TasksArgs, workers: usize) {
    let n = a.tasks as usize;
    let sleep = Duration::from_millis(a.sleep_ms);
    let (checksum, spawn_ns, elapsed) = task::block_on(async move {
        let mut handles = Vec::with_capacity(n);
        let start = Instant::now();
        for _ in 0..n {
            handles.push(task::spawn(async move {
                task::sleep(sleep).await;
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

/// async_std::fs: each operation runs on the blocking thread pool.
async fn copy_async_fs(mut buf: Vec<u8>) -> (u64, Vec<u8>) {
    let mut src = async_std::fs::File::open("/dev/urandom")
        .await
        .unwrap_or_else(|e| common::io_failure("open /dev/urandom", &e));
    src.read_exact(&mut buf)
        .await
        .unwrap_or_else(|e| common::io_failure("read /dev/urandom", &e));
    drop(src);
    let mut dst = async_std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/null")
        .await
        .unwrap_or_else(|e| common::io_failure("open /dev/null", &e));
    dst.write_all(&buf)
        .await
        .unwrap_or_else(|e| common::io_failure("write /dev/null", &e));
    // async_std::fs::File buffers writes; flush waits for the write.
    dst.flush()
        .await
        .unwrap_or_else(|e| common::io_failure("write /dev/null", &e));
    drop(dst);
    (buf.len() as u64, buf)
}

type Handles = Vec<task::JoinHandle<(u64, Vec<u8>)>>;

/// One iteration: a task per buffer in `bufs`; every buffer comes back.
async fn blocking_iteration(variant: &str, bufs: &mut Vec<Vec<u8>>, handles: &mut Handles) -> u64 {
    for mut buf in bufs.drain(..) {
        handles.push(match variant {
            "fs" => task::spawn(copy_async_fs(buf)),
            "spawn_blocking" => task::spawn(async move {
                task::spawn_blocking(move || (common::copy_urandom_to_null(&mut buf), buf)).await
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

fn blocking(a: &BlockingArgs, workers: usize) {
    let mut bufs = common::task_buffers(a);
    let mut handles = Vec::with_capacity(bufs.len());
    let (checksum, elapsed) = task::block_on(async {
        // unmeasured warm-up iteration
        blocking_iteration(a.variant, &mut bufs, &mut handles).await;
        let start = Instant::now();
        let mut sum = 0u64;
        for _ in 0..a.iterations {
            sum += blocking_iteration(a.variant, &mut bufs, &mut handles).await;
        }
        (sum, common::elapsed_ns(start))
    });
    // Both variants' calls run on the `blocking` crate's pool (async_std::fs
    // through task::spawn_blocking, which is blocking::unblock).
    let pool_threads = common::blocking_crate_max_threads();
    common::print_blocking(a, workers, pool_threads, checksum, elapsed);
}
