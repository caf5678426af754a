//! corobench on smol (id "rust-smol"): one smol::Executor, leaked as a
//! StaticExecutor, run by N worker threads (smol's documented multi-thread
//! pattern: each thread runs `block_on(ex.run(shutdown))`), smol::channel
//! bounded channels (async-channel) for the chain, spawn + smol::Timer for
//! tasks, and two blocking variants: "unblock" (std::fs inside smol::unblock,
//! the manifest's only one) and "fs" (smol::fs, i.e. async-fs, kept for
//! experiments). --threads sets N (default: one per core). The scenarios'
//! bodies are common's (`batch`), over the calls below.
//!
//! One binary per scenario group (`common::hand_off`): `corobench-smol`
//! (tasks, blocking; src/main.rs), `corobench-smol-chain`,
//! `corobench-smol-echo` and `corobench-smol-http` (src/bin/).

use std::future::Future;
use std::thread;
use std::time::Duration;

use async_executor::StaticExecutor;
use corobench_common::{self as common, batch, Binaries, Spec, ThreadsMode};
use smol::{Executor, Timer};

pub mod server;

#[global_allocator]
static ALLOC: common::ReportingAlloc = common::ReportingAlloc;

pub const SPEC: Spec = Spec {
    id: "rust-smol",
    threads: ThreadsMode::Flag,
    // "fs" works but is not in the manifest: see ../README.md (async-fs reads
    // ahead up to 8 MiB from /dev/urandom per open file).
    variants: &["unblock", "fs"],
    cpuprofile: true,
    channels: &[],
};

/// The binary that runs each scenario.
pub const BINARIES: Binaries = &[
    ("tasks", "corobench-smol"),
    ("blocking", "corobench-smol"),
    ("chain", "corobench-smol-chain"),
    ("echo", "corobench-smol-echo"),
    ("http", "corobench-smol-http"),
];

/// The executor, run by `workers` threads until `until` resolves (on each
/// thread). It lives for the whole process: `leak` makes it a
/// StaticExecutor (async-executor's "static" feature), which spawns and
/// finishes tasks without the active-task registry (a mutex taken on every
/// spawn and every completion) that a droppable Executor needs.
pub fn executor<F>(workers: usize, until: impl Fn() -> F) -> (&'static StaticExecutor, Vec<thread::JoinHandle<()>>)
where
    F: Future<Output = ()> + Send + 'static,
{
    let ex: &'static StaticExecutor = Executor::new().leak();
    let mut pool = Vec::with_capacity(workers);
    for i in 0..workers {
        let until = until();
        let started = thread::Builder::new()
            .name(format!("smol-{i}"))
            .spawn(move || smol::block_on(ex.run(until)));
        match started {
            Ok(h) => pool.push(h),
            Err(e) => common::refused(format_args!("started {i} of {workers} threads: {}", common::error_text(&e))),
        }
    }
    (ex, pool)
}

/// The leaked executor that the pool threads run.
pub struct Smol(pub &'static StaticExecutor);

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

/// Runs a batch scenario's `body` on the executor's `workers` threads, which
/// are stopped and joined after it.
pub fn batch_run(workers: usize, body: impl FnOnce(&Smol)) {
    let (stop, stopped) = smol::channel::unbounded::<()>();
    let (ex, pool) = executor(workers, || {
        let stopped = stopped.clone();
        async move {
            let _ = stopped.recv().await;
        }
    });
    body(&Smol(ex));
    drop(stop);
    for h in pool {
        let _ = h.join();
    }
}
