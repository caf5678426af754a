//! corobench on plain OS threads (id "rust-threads"): one std::thread per
//! task, std::sync::mpsc::sync_channel(Q) for the chain. There is no
//! worker-thread pool to size, so --threads is refused; the `threads` field
//! reports the OS threads the scenario starts (chain 2×W, tasks N, blocking
//! T per iteration). echo and http servers in `server.rs`.

use std::io;
use std::sync::mpsc::sync_channel;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use corobench_common::{
    self as common, BlockingArgs, ChainArgs, Command, Event, EventSource, Spec, TasksArgs, ThreadsMode,
};

mod server;

#[global_allocator]
static ALLOC: common::ReportingAlloc = common::ReportingAlloc;

const SPEC: Spec = Spec {
    id: "rust-threads",
    threads: ThreadsMode::None,
    variants: &["thread"],
    cpuprofile: true,
    channels: &[],
};

/// Stack size of every thread started here. The bodies need a few KiB;
/// 64 KiB (instead of std's 2 MiB default) keeps tens of thousands of
/// threads cheap in address space and page tables.
const STACK: usize = 64 * 1024;

const SERVERS: common::server::Servers =
    common::server::Servers { echo: Some(&["concurrent", "serial"]), http: Some(&[]) };

fn main() {
    if let Some(a) = common::server::server_args(&SPEC, &SERVERS) {
        server::run(a);
    }
    match common::parse_args(&SPEC) {
        Command::Chain(a) => chain(&a),
        Command::Tasks(a) => tasks(&a),
        Command::Blocking(a) => blocking(&a),
    }
}

/// Starts a thread or exits 3 saying how many of `total` were started.
fn spawn<T: Send + 'static>(
    started: usize,
    total: u64,
    f: impl FnOnce() -> T + Send + 'static,
) -> JoinHandle<T> {
    let h = thread::Builder::new()
        .stack_size(STACK)
        .spawn(f)
        .unwrap_or_else(|e: io::Error| {
            common::refused(format_args!(
                "started {started} of {total} threads: {}",
                common::error_text(&e)
            ))
        });
    common::threads_progress(started as u64 + 1, total);
    h
}

fn join<T>(h: JoinHandle<T>) -> T {
    h.join().unwrap_or_else(|_| common::failed("a thread panicked"))
}

// ---------------------------------------------------------------- chain

fn chain_pass(a: &ChainArgs, source: EventSource) -> (u64, u64, u64) {
    let (workers, events) = (a.workers as usize, a.events);
    let capacity = usize::try_from(a.queue).unwrap_or(usize::MAX);
    let total = 2 * a.workers;
    let mut receivers = Vec::with_capacity(workers);
    let mut senders = Vec::with_capacity(workers);

    let start = Instant::now();
    for i in 0..workers {
        let (tx, rx) = sync_channel::<Event>(capacity);
        receivers.push(spawn(2 * i, total, move || {
            let mut sum = 0u64;
            for _ in 0..events {
                match rx.recv() {
                    Ok(ev) => sum += ev.weight(),
                    Err(_) => common::failed("chain: a queue closed before all events arrived"),
                }
            }
            sum
        }));
        senders.push(spawn(2 * i + 1, total, move || {
            for _ in 0..events {
                if tx.send(source.make()).is_err() {
                    common::failed("chain: a receiver went away");
                }
            }
        }));
    }
    let mut checksum = 0u64;
    for r in receivers {
        checksum += join(r);
    }
    let elapsed = common::elapsed_ns(start);
    senders.into_iter().for_each(join);
    (a.workers * events, checksum, elapsed)
}

fn chain(a: &ChainArgs) {
    let profile = common::open_profile(a.cpuprofile.as_deref());
    let source = EventSource::new(a.etype, a.esize);
    for _ in 0..a.warmup {
        let (received, checksum, _) = chain_pass(a, source);
        common::check_chain(a, received, checksum);
    }
    let profiler = common::start_profile(profile);
    let (received, checksum, elapsed) = chain_pass(a, source);
    if let Some(p) = profiler {
        p.finish();
    }
    common::check_chain(a, received, checksum);
    let threads = usize::try_from(2 * a.workers).unwrap_or(usize::MAX);
    common::print_chain(a, threads, received, checksum, elapsed);
}

// ---------------------------------------------------------------- tasks

fn tasks(a: &TasksArgs) {
    let n = a.tasks as usize;
    let sleep = Duration::from_millis(a.sleep_ms);
    let mut handles = Vec::with_capacity(n);
    let start = Instant::now();
    for i in 0..n {
        handles.push(spawn(i, a.tasks, move || {
            thread::sleep(sleep);
            1u64
        }));
    }
    let spawn_ns = common::elapsed_ns(start);
    let checksum: u64 = handles.into_iter().map(join).sum();
    let elapsed = common::elapsed_ns(start);
    common::print_tasks(a, n, checksum, spawn_ns, elapsed);
}

// ---------------------------------------------------------------- blocking

type Handles = Vec<JoinHandle<(u64, Vec<u8>)>>;

/// One iteration: a thread per buffer in `bufs`; every buffer comes back.
fn blocking_iteration(a: &BlockingArgs, bufs: &mut Vec<Vec<u8>>, handles: &mut Handles) -> u64 {
    for (i, mut buf) in bufs.drain(..).enumerate() {
        handles.push(spawn(i, a.tasks, move || (common::copy_urandom_to_null(&mut buf), buf)));
    }
    let mut sum = 0u64;
    for h in handles.drain(..) {
        let (n, buf) = join(h);
        sum += n;
        bufs.push(buf);
    }
    sum
}

fn blocking(a: &BlockingArgs) {
    let mut bufs = common::task_buffers(a);
    let mut handles = Vec::with_capacity(bufs.len());
    blocking_iteration(a, &mut bufs, &mut handles); // unmeasured warm-up iteration
    let start = Instant::now();
    let mut checksum = 0u64;
    for _ in 0..a.iterations {
        checksum += blocking_iteration(a, &mut bufs, &mut handles);
    }
    let elapsed = common::elapsed_ns(start);
    // A thread per task: the blocking calls use T threads per iteration.
    common::print_blocking(a, a.tasks as usize, a.tasks, checksum, elapsed);
}
