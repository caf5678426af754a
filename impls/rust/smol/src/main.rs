//! corobench on smol (id "rust-smol"): one smol::Executor, leaked as a
//! StaticExecutor, run by N worker threads (smol's documented multi-thread
//! pattern: each thread runs `block_on(ex.run(shutdown))`), smol::channel
//! bounded channels (async-channel) for the chain, spawn + smol::Timer for
//! tasks, and two blocking variants: "unblock" (std::fs inside smol::unblock,
//! the manifest's only one) and "fs" (smol::fs, i.e. async-fs, kept for
//! experiments). --threads sets N (default: one per core). The scenarios'
//! bodies are common's (`batch`), over the calls below; echo and http
//! servers in `server.rs`.

use std::future::Future;
use std::thread;
use std::time::Duration;

use async_executor::StaticExecutor;
use corobench_common::{self as common, batch, Spec, ThreadsMode};
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

fn main() {
    if let Some(a) = common::server::server_args(&SPEC, &common::server::futures_io::SERVERS) {
        server::run(a);
    }
    let cmd = common::parse_args(&SPEC);
    let workers = cmd.threads().unwrap_or_else(common::available_cores);

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

    // blocking: smol::fs (async-fs, each operation on the blocking pool), or
    // std::fs in smol::unblock.
    let open = |path: &'static str, write: bool| smol::fs::OpenOptions::new().read(!write).write(write).open(path);
    let pool_body =
        |mut buf: Vec<u8>| async move { smol::unblock(move || (common::copy_urandom_to_null(&mut buf), buf)).await };
    batch::run_futures_io(&Smol(ex), Channel, cmd, workers, open, pool_body);
    drop(stop);
    for h in pool {
        let _ = h.join();
    }
}

/// The leaked executor that the pool threads run.
pub struct Smol(&'static StaticExecutor);

impl batch::Runtime for Smol {
    type Task<T: Send + 'static> = smol::Task<T>;

    fn spawn<F: Future<Output: Send + 'static> + Send + 'static>(&self, f: F) -> Self::Task<F::Output> {
        self.0.spawn(f)
    }
    /// A smol task is cancelled when its handle drops: detach it instead.
    fn spawn_detached<F: Future<Output = ()> + Send + 'static>(&self, f: F) {
        self.0.spawn(f).detach();
    }
    fn sleep(d: Duration) -> impl Future + Send + 'static {
        Timer::after(d)
    }
    fn block_on<F: Future>(&self, f: F) -> F::Output {
        smol::block_on(f)
    }
}

common::async_channel_chan!(Channel, smol::channel);
