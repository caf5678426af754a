//! corobench on tokio's multi-thread runtime (id "rust-tokio").
//!
//! chain: kanal's async bounded channels (chosen by measurement against
//! tokio::sync::mpsc and three others, see ../README.md); tasks: tokio::spawn + tokio::time::sleep; blocking: four
//! variants (tokio::fs, block_in_place, plain std::fs in the task,
//! spawn_blocking). The scenarios' bodies are common's (`batch`), over the
//! calls below; echo and http servers in `server.rs`.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use corobench_common::batch::{self, AsyncFile, Chan, Runtime as _};
use corobench_common::{self as common, Command, Event, Spec, ThreadsMode};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

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
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    if let Some(n) = cmd.threads() {
        builder.worker_threads(n);
    }
    let rt = builder
        .enable_time()
        .build()
        .unwrap_or_else(|e| common::io_failure("cannot start the tokio runtime", &e));
    let workers = rt.metrics().num_workers();
    let rt = Tokio(rt);
    match cmd {
        Command::Chain(a) => {
            #[cfg(feature = "chanbench")]
            if let Some(name) = a.channel {
                return chanbench::chain(&rt, &a, workers, name);
            }
            batch::chain::<_, Kanal>(&rt, &a, workers)
        }
        Command::Tasks(a) => batch::tasks(&rt, &a, workers),
        Command::Blocking(a) => blocking(&rt, &a, workers),
    }
}

/// tokio's multi-thread runtime; tasks spawn with tokio::spawn (the calls
/// run inside block_on, in the runtime's context).
pub struct Tokio(tokio::runtime::Runtime);

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

// ---------------------------------------------------------------- chain

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

// ---------------------------------------------------------------- blocking

/// tokio::fs::File, for the `fs` variant's shared task body.
struct TokioFile(tokio::fs::File);

impl AsyncFile for TokioFile {
    async fn read_exact(&mut self, buf: &mut [u8]) -> io::Result<()> {
        self.0.read_exact(buf).await.map(drop)
    }
    async fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.0.write_all(buf).await?;
        // tokio::fs::File writes in the background; flush waits for the write.
        self.0.flush().await
    }
}

/// Threads that may run the variant's blocking calls with tokio's defaults:
/// the blocking pool's limit (`max_blocking_threads`, 512) for tokio::fs
/// (each operation runs on the pool) and spawn_blocking; for block_in_place
/// the call runs on the worker thread itself while its core moves to a
/// thread from the same pool, whose cap is 512 plus the worker threads (the
/// workers are launched from it); none beyond the workers for sync.
fn pool_threads(variant: &str, workers: usize) -> u64 {
    const MAX_BLOCKING_THREADS: u64 = 512;
    match variant {
        "fs" | "spawn_blocking" => MAX_BLOCKING_THREADS,
        "block_in_place" => MAX_BLOCKING_THREADS + workers as u64,
        "sync" => 0,
        v => unreachable!("variant {v}"),
    }
}

fn blocking(rt: &Tokio, a: &common::BlockingArgs, workers: usize) {
    let copy = common::copy_urandom_to_null;
    let open = |path, write: bool| async move {
        let file = tokio::fs::OpenOptions::new().read(!write).write(write).open(path).await?;
        Ok(TokioFile(file))
    };
    batch::blocking(rt, a, workers, pool_threads(a.variant, workers), |mut buf| match a.variant {
        "fs" => rt.spawn(batch::copy_urandom_to_null_async(buf, open)),
        "block_in_place" => rt.spawn(async move { (tokio::task::block_in_place(|| copy(&mut buf)), buf) }),
        "sync" => rt.spawn(async move { (copy(&mut buf), buf) }),
        "spawn_blocking" => rt.spawn(async move {
            tokio::task::spawn_blocking(move || (copy(&mut buf), buf))
                .await
                .unwrap_or_else(|e| common::failed(format_args!("blocking: {e}")))
        }),
        v => unreachable!("variant {v}"),
    });
}
