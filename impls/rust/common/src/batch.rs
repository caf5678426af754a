//! The batch scenarios (chain, tasks, blocking) written once for every async
//! runtime (tokio, async-std, smol). A runtime crate implements [`Runtime`]
//! and [`Chan`] over its own calls (spawn, sleep, block_on, its bounded
//! channel) and calls [`chain`], [`tasks`] and [`blocking`] (async-std and
//! smol: [`blocking_futures_io`] for blocking).
//!
//! Everything here is generic, never `dyn`: each runtime's build gets its own
//! copy of these bodies with its calls inlined, the same loops it would have
//! with the calls written out.

use std::future::Future;
use std::io;
use std::time::{Duration, Instant};

#[cfg(feature = "futures-io")]
use futures_lite::{AsyncReadExt, AsyncWriteExt};

use crate::{
    check_chain, elapsed_ns, failed, io_failure, open_profile, print_blocking, print_chain, print_tasks,
    start_profile, BlockingArgs, ChainArgs, Event, EventSource, TasksArgs, TaskBuf,
};

/// An async runtime as the batch scenarios use it.
pub trait Runtime {
    /// A spawned task's handle: awaiting it gives the task's output (a
    /// runtime whose handle reports a panicked or cancelled task ends the
    /// process there, exit 1).
    type Task<T: Send + 'static>: Future<Output = T>;

    fn spawn<F: Future<Output: Send + 'static> + Send + 'static>(&self, f: F) -> Self::Task<F::Output>;

    /// Spawns a task nobody awaits. Dropping the handle detaches the task in
    /// tokio and async-std; a runtime whose handle cancels its task when
    /// dropped (smol) overrides this.
    fn spawn_detached<F: Future<Output = ()> + Send + 'static>(&self, f: F) {
        drop(self.spawn(f));
    }

    /// The runtime's timer; its output is ignored (smol's `Timer` gives an
    /// `Instant`), so no wrapper is needed around it.
    fn sleep(d: Duration) -> impl Future + Send + 'static;

    fn block_on<F: Future>(&self, f: F) -> F::Output;
}

/// A bounded channel as the chain uses it (one sender, one receiver). An
/// impl turns the channel's result into a bool or an Option in a small async
/// fn: handing back kanal's own futures, whose outputs are Results, made
/// tokio's chain take 15-25 % more CPU for int and str_ptr (measured).
pub trait Chan {
    type Tx: Send + 'static;
    type Rx: Send + 'static;
    fn channel(capacity: usize) -> (Self::Tx, Self::Rx);
    /// False when the receiver is gone.
    fn send(tx: &mut Self::Tx, ev: Event) -> impl Future<Output = bool> + Send;
    /// None when the sender is gone.
    fn recv(rx: &mut Self::Rx) -> impl Future<Output = Option<Event>> + Send;
}

/// Implements [`Chan`] for a new unit struct over an async-channel module:
/// `async_channel_chan!(pub Name, smol::channel)`. async-std and smol
/// re-export different major versions of async-channel (1 and 2), the same
/// API in two crates, so a macro serves both where a generic impl cannot.
#[macro_export]
macro_rules! async_channel_chan {
    ($vis:vis $name:ident, $($module:ident)::+) => {
        #[doc = concat!("The chain's bounded channel: `", stringify!($($module)::+), "` (async-channel).")]
        $vis struct $name;

        impl $crate::batch::Chan for $name {
            type Tx = $($module)::+::Sender<$crate::Event>;
            type Rx = $($module)::+::Receiver<$crate::Event>;
            fn channel(capacity: usize) -> (Self::Tx, Self::Rx) {
                $($module)::+::bounded(capacity)
            }
            async fn send(tx: &mut Self::Tx, ev: $crate::Event) -> bool {
                tx.send(ev).await.is_ok()
            }
            async fn recv(rx: &mut Self::Rx) -> Option<$crate::Event> {
                rx.recv().await.ok()
            }
        }
    };
}

// ---------------------------------------------------------------- chain

/// One pass: returns (received, checksum, elapsed_ns).
async fn chain_pass<R: Runtime, C: Chan>(rt: &R, a: &ChainArgs, source: EventSource) -> (u64, u64, u64) {
    let (workers, events) = (a.workers as usize, a.events);
    let capacity = usize::try_from(a.queue).unwrap_or(usize::MAX);
    let mut receivers = Vec::with_capacity(workers);

    let start = Instant::now();
    for _ in 0..workers {
        let (mut tx, mut rx) = C::channel(capacity);
        receivers.push(rt.spawn(async move {
            let mut sum = 0u64;
            for _ in 0..events {
                match C::recv(&mut rx).await {
                    Some(ev) => sum += ev.weight(),
                    None => failed("chain: a queue closed before all events arrived"),
                }
            }
            sum
        }));
        rt.spawn_detached(async move {
            for _ in 0..events {
                if !C::send(&mut tx, source.make()).await {
                    failed("chain: a receiver went away");
                }
            }
        });
    }
    let mut checksum = 0u64;
    for r in receivers {
        checksum += r.await;
    }
    let elapsed = elapsed_ns(start);
    (a.workers * events, checksum, elapsed)
}

/// The chain scenario over channel `C`: the warm-up passes, the measured
/// pass (profiled with `--cpuprofile`), the check and the result line.
pub fn chain<R: Runtime, C: Chan>(rt: &R, a: &ChainArgs, workers: usize) {
    let profile = open_profile(a.cpuprofile.as_deref());
    let source = EventSource::new(a.etype, a.esize);
    for _ in 0..a.warmup {
        let (received, checksum, _) = rt.block_on(chain_pass::<R, C>(rt, a, source));
        check_chain(a, received, checksum);
    }
    let (received, checksum, elapsed) = rt.block_on(async {
        // Sampling starts inside block_on: async-std starts its runtime on
        // first use, and that start-up is no part of the pass.
        let profiler = start_profile(profile);
        let result = chain_pass::<R, C>(rt, a, source).await;
        if let Some(p) = profiler {
            p.finish();
        }
        result
    });
    check_chain(a, received, checksum);
    print_chain(a, workers, received, checksum, elapsed);
}

// ---------------------------------------------------------------- tasks

/// The tasks scenario: N spawned tasks, each sleeping D ms and returning 1.
pub fn tasks<R: Runtime>(rt: &R, a: &TasksArgs, workers: usize) {
    let n = a.tasks as usize;
    let sleep = Duration::from_millis(a.sleep_ms);
    let (checksum, spawn_ns, elapsed) = rt.block_on(async move {
        let mut handles = Vec::with_capacity(n);
        let start = Instant::now();
        for _ in 0..n {
            handles.push(rt.spawn(async move {
                R::sleep(sleep).await;
                1u64
            }));
        }
        let spawn_ns = elapsed_ns(start);
        let mut sum = 0u64;
        for h in handles {
            sum += h.await;
        }
        (sum, spawn_ns, elapsed_ns(start))
    });
    print_tasks(a, workers, checksum, spawn_ns, elapsed);
}

// ---------------------------------------------------------------- blocking

/// One iteration: a task per buffer in `bufs`, spawned by `spawn`; every
/// buffer comes back.
async fn blocking_iteration<T: Future<Output = TaskBuf>>(
    spawn: &impl Fn(TaskBuf) -> T,
    bufs: &mut Vec<TaskBuf>,
    handles: &mut Vec<T>,
) -> u64 {
    for buf in bufs.drain(..) {
        handles.push(spawn(buf));
    }
    let mut sum = 0u64;
    for h in handles.drain(..) {
        let buf = h.await;
        // The task wrote all of its buffer (TaskBuf).
        sum += buf.len() as u64;
        bufs.push(buf);
    }
    sum
}

/// The blocking scenario: `spawn(buf)` spawns the variant's task, which
/// fills `buf` from /dev/urandom, writes all of it to /dev/null, and returns
/// the buffer ([`TaskBuf`]: its length is the bytes written). One closure picks the body for every
/// variant (their handles share one type), so that this loop is compiled
/// once per runtime, not once per variant. `pool_threads` is reported as
/// given (docs/protocol.md).
pub fn blocking<R: Runtime>(
    rt: &R,
    a: &BlockingArgs,
    workers: usize,
    pool_threads: u64,
    spawn: impl Fn(TaskBuf) -> R::Task<TaskBuf>,
) {
    let mut bufs = crate::task_buffers(a);
    let mut handles = Vec::with_capacity(bufs.len());
    let (checksum, elapsed) = rt.block_on(async {
        // unmeasured warm-up iteration
        blocking_iteration(&spawn, &mut bufs, &mut handles).await;
        let start = Instant::now();
        let mut sum = 0u64;
        for _ in 0..a.iterations {
            sum += blocking_iteration(&spawn, &mut bufs, &mut handles).await;
        }
        (sum, elapsed_ns(start))
    });
    print_blocking(a, workers, pool_threads, checksum, elapsed);
}

/// A runtime's async file, as the `fs` variants use it.
pub trait AsyncFile: Send {
    fn read_exact(&mut self, buf: &mut [u8]) -> impl Future<Output = io::Result<()>> + Send;
    /// Writes all of `buf` and waits until it is written: the runtimes'
    /// files write in the background.
    fn write_all(&mut self, buf: &[u8]) -> impl Future<Output = io::Result<()>> + Send;
}

/// The `fs` variants' task body: [`crate::copy_urandom_to_null`] through
/// the runtime's async files, which `open(path, write)` opens (read-only, or
/// write-only when `write`).
pub async fn copy_urandom_to_null_async<F, O>(
    mut buf: TaskBuf,
    open: impl Fn(&'static str, bool) -> O,
) -> TaskBuf
where
    F: AsyncFile,
    O: Future<Output = io::Result<F>>,
{
    let mut src = open("/dev/urandom", false)
        .await
        .unwrap_or_else(|e| io_failure("open /dev/urandom", &e));
    src.read_exact(&mut buf)
        .await
        .unwrap_or_else(|e| io_failure("read /dev/urandom", &e));
    drop(src);
    let mut dst = open("/dev/null", true)
        .await
        .unwrap_or_else(|e| io_failure("open /dev/null", &e));
    dst.write_all(&buf)
        .await
        .unwrap_or_else(|e| io_failure("write /dev/null", &e));
    drop(dst);
    buf
}

// ---------------------------------------------------------------- futures-io runtimes

/// The blocking scenario on a runtime whose files implement the futures-io
/// traits and whose blocking calls run on the `blocking` crate's pool
/// (async-std, smol): variant `fs` copies through the runtime's files, which
/// `open(path, write)` opens (read-only, or write-only when `write`), and any
/// other variant runs `pool_body`: std::fs on the runtime's blocking pool.
#[cfg(feature = "futures-io")]
pub fn blocking_futures_io<R, O, OF, F, B, BF>(rt: &R, a: &BlockingArgs, workers: usize, open: O, pool_body: B)
where
    R: Runtime,
    O: Fn(&'static str, bool) -> OF + Copy + Send + 'static,
    OF: Future<Output = io::Result<F>> + Send + 'static,
    F: futures_lite::AsyncRead + futures_lite::AsyncWrite + Unpin + Send + 'static,
    B: Fn(TaskBuf) -> BF,
    BF: Future<Output = TaskBuf> + Send + 'static,
{
    // Both variants' calls run on that pool (each file operation too).
    let pool_threads = crate::blocking_crate_max_threads();
    let fs = a.variant == "fs";
    let open = move |path, write| {
        let file = open(path, write);
        async move { file.await.map(FuturesFile) }
    };
    blocking(rt, a, workers, pool_threads, |buf| {
        if fs {
            rt.spawn(copy_urandom_to_null_async(buf, open))
        } else {
            rt.spawn(pool_body(buf))
        }
    });
}

/// A futures-io file as an [`AsyncFile`]; flushing waits for the write that
/// async_std::fs and async-fs do in the background.
#[cfg(feature = "futures-io")]
struct FuturesFile<F>(F);

#[cfg(feature = "futures-io")]
impl<F> AsyncFile for FuturesFile<F>
where
    F: futures_lite::AsyncRead + futures_lite::AsyncWrite + Unpin + Send,
{
    // (The calls name their traits: the methods share AsyncFile's names.)
    async fn read_exact(&mut self, buf: &mut [u8]) -> io::Result<()> {
        AsyncReadExt::read_exact(&mut self.0, buf).await
    }
    async fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        AsyncWriteExt::write_all(&mut self.0, buf).await?;
        AsyncWriteExt::flush(&mut self.0).await
    }
}
