//! corobench on async-std (id "rust-async-std"): its global multi-thread
//! executor, async_std::channel bounded channels for the chain,
//! task::spawn + task::sleep for tasks, and two blocking variants
//! (async_std::fs; std::fs inside task::spawn_blocking). Worker threads come
//! from ASYNC_STD_THREAD_COUNT (default: one per core). The scenarios'
//! bodies are common's (`batch`), over the calls below; echo and http
//! servers in `server.rs`.

use std::future::Future;
use std::time::Duration;

use async_std::task;
use corobench_common::{self as common, batch, Spec, ThreadsMode};

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

fn main() {
    if let Some(a) = common::server::server_args(&SPEC, &common::server::futures_io::SERVERS) {
        // As below: the variable is set (or not) before the runtime starts.
        let workers = a.threads.unwrap_or_else(common::available_cores);
        server::run(a, workers);
    }
    let cmd = common::parse_args(&SPEC);
    // async-std reads the variable (validated by parse_args) when its
    // runtime starts, which the first block_on does, before any timing.
    let workers = cmd.threads().unwrap_or_else(common::available_cores);
    // blocking: async_std::fs (each operation on the blocking pool), or
    // std::fs in spawn_blocking.
    let open = |path: &'static str, write: bool| {
        async_std::fs::OpenOptions::new().read(!write).write(write).open(path)
    };
    let pool_body = |mut buf: Vec<u8>| async move {
        task::spawn_blocking(move || (common::copy_urandom_to_null(&mut buf), buf)).await
    };
    batch::run_futures_io(&AsyncStd, Channel, cmd, workers, open, pool_body);
}

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

common::async_channel_chan!(Channel, async_std::channel);
