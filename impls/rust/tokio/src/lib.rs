//! corobench on tokio's multi-thread runtime (id "rust-tokio"), built as one
//! binary per scenario group (`common::hand_off`): `corobench-tokio` (tasks,
//! blocking; src/main.rs), `corobench-tokio-chain`, `corobench-tokio-echo`
//! and `corobench-tokio-http` (src/bin/). This library holds what they share:
//! the runtime as the batch scenarios use it, and the servers' accept loop.
//!
//! chain: kanal's async bounded channels (chosen by measurement against
//! tokio::sync::mpsc and three others, see ../README.md); tasks:
//! tokio::spawn and tokio::time::sleep; blocking: four variants (tokio::fs,
//! block_in_place, plain std::fs in the task, spawn_blocking). The
//! scenarios' bodies are common's (`batch`).

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use corobench_common::{self as common, batch, Binaries, Spec, ThreadsMode};

pub mod server;
#[cfg(feature = "tailbench")]
pub mod tailbench;

#[global_allocator]
static ALLOC: common::ReportingAlloc = common::ReportingAlloc;

pub const SPEC: Spec = Spec {
    id: "rust-tokio",
    threads: ThreadsMode::Flag,
    variants: &["fs", "block_in_place", "sync", "spawn_blocking"],
    cpuprofile: true,
    #[cfg(not(feature = "chanbench"))]
    channels: &[],
    #[cfg(feature = "chanbench")]
    channels: &["tokio", "futures", "async-channel", "flume", "kanal"],
};

pub const SERVERS: common::server::Servers =
    common::server::Servers { echo: Some(&[]), http: Some(&["httparse", "hyper"]) };

/// The binary that runs each scenario.
pub const BINARIES: Binaries = &[
    ("tasks", "corobench-tokio"),
    ("blocking", "corobench-tokio"),
    ("chain", "corobench-tokio-chain"),
    ("echo", "corobench-tokio-echo"),
    ("http", "corobench-tokio-http"),
];

/// The multi-thread runtime with `threads` workers (tokio's default: one per
/// core), and the workers it really has.
pub fn runtime(threads: Option<usize>, io: bool) -> (tokio::runtime::Runtime, usize) {
    #[cfg(feature = "tailbench")]
    if io {
        return tailbench::runtime(threads);
    }
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    if let Some(n) = threads {
        builder.worker_threads(n);
    }
    if io {
        builder.enable_io();
    }
    let rt = builder
        .enable_time()
        .build()
        .unwrap_or_else(|e| common::io_failure("cannot start the tokio runtime", &e));
    let workers = rt.metrics().num_workers();
    (rt, workers)
}

/// tokio's multi-thread runtime; tasks spawn with tokio::spawn (the calls
/// run inside block_on, in the runtime's context).
pub struct Tokio(pub tokio::runtime::Runtime);

impl batch::Runtime for Tokio {
    type Task<T: Send + 'static> = Joined<T>;

    fn spawn<F: Future<Output: Send + 'static> + Send + 'static>(&self, f: F) -> Self::Task<F::Output> {
        Joined(tokio::spawn(f))
    }
    fn sleep(d: Duration) -> impl Future + Send + 'static {
        tokio::time::sleep(d)
    }
    fn block_on<F: Future>(&self, f: F) -> F::Output {
        self.0.block_on(f)
    }
}

/// A JoinHandle whose output is the task's: a panicked or cancelled task
/// ends the process (exit 1).
pub struct Joined<T>(tokio::task::JoinHandle<T>);

impl<T> Future for Joined<T> {
    type Output = T;
    #[inline]
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        Pin::new(&mut self.0)
            .poll(cx)
            .map(|r| r.unwrap_or_else(|e| common::failed(format_args!("a task failed: {e}"))))
    }
}
