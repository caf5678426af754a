//! corobench on async-std (id "rust-async-std"): its global multi-thread
//! executor, async_std::channel bounded channels for the chain,
//! task::spawn + task::sleep for tasks, and two blocking variants
//! (async_std::fs; std::fs inside task::spawn_blocking). Worker threads come
//! from ASYNC_STD_THREAD_COUNT (default: one per core). The scenarios'
//! bodies are common's (`batch`), over the calls below.
//!
//! One binary per scenario group (`common::hand_off`): `corobench-async-std`
//! (tasks, blocking; src/main.rs), `corobench-async-std-chain`,
//! `corobench-async-std-echo` and `corobench-async-std-http` (src/bin/).

use std::future::Future;
use std::time::Duration;

use async_std::task;
use corobench_common::{self as common, batch, Binaries, Spec, ThreadsMode};

pub mod server;

#[global_allocator]
static ALLOC: common::ReportingAlloc = common::ReportingAlloc;

pub const SPEC: Spec = Spec {
    id: "rust-async-std",
    threads: ThreadsMode::Env("ASYNC_STD_THREAD_COUNT"),
    variants: &["fs", "spawn_blocking"],
    cpuprofile: true,
    channels: &[],
};

/// The binary that runs each scenario.
pub const BINARIES: Binaries = &[
    ("tasks", "corobench-async-std"),
    ("blocking", "corobench-async-std"),
    ("chain", "corobench-async-std-chain"),
    ("echo", "corobench-async-std-echo"),
    ("http", "corobench-async-std-http"),
];

/// async-std's global executor.
pub struct AsyncStd;

impl batch::Runtime for AsyncStd {
    type Task<T: Send + 'static> = task::JoinHandle<T>;

    fn spawn<F: Future<Output: Send + 'static> + Send + 'static>(&self, f: F) -> Self::Task<F::Output> {
        task::spawn(f)
    }
    fn sleep(d: Duration) -> impl Future + Send + 'static {
        task::sleep(d)
    }
    fn block_on<F: Future>(&self, f: F) -> F::Output {
        task::block_on(f)
    }
}
