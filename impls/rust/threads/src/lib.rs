//! corobench on plain OS threads (id "rust-threads"): one std::thread per
//! task, std::sync::mpsc::sync_channel(Q) for the chain. There is no
//! worker-thread pool to size, so --threads is refused; the `threads` field
//! reports the OS threads the scenario starts (chain 2×W, tasks N, blocking
//! T per iteration).
//!
//! One binary per scenario group (`common::hand_off`): `corobench-threads`
//! (tasks, blocking; src/main.rs), `corobench-threads-chain`,
//! `corobench-threads-echo` and `corobench-threads-http` (src/bin/).

use std::io;
use std::thread::{self, JoinHandle};

use corobench_common::{self as common, Binaries, Spec, ThreadsMode};

pub mod server;

#[global_allocator]
static ALLOC: common::ReportingAlloc = common::ReportingAlloc;

pub const SPEC: Spec = Spec {
    id: "rust-threads",
    threads: ThreadsMode::None,
    variants: &["thread"],
    cpuprofile: true,
    channels: &[],
};

pub const SERVERS: common::server::Servers =
    common::server::Servers { echo: Some(&["concurrent", "serial"]), http: Some(&[]) };

/// The binary that runs each scenario.
pub const BINARIES: Binaries = &[
    ("tasks", "corobench-threads"),
    ("blocking", "corobench-threads"),
    ("chain", "corobench-threads-chain"),
    ("echo", "corobench-threads-echo"),
    ("http", "corobench-threads-http"),
];

/// Stack size of every thread started here. The bodies need a few KiB;
/// 64 KiB (instead of std's 2 MiB default) keeps tens of thousands of
/// threads cheap in address space and page tables.
pub const STACK: usize = 64 * 1024;

/// Starts a thread or exits 3 saying how many of `total` were started.
pub fn spawn<T: Send + 'static>(started: usize, total: u64, f: impl FnOnce() -> T + Send + 'static) -> JoinHandle<T> {
    let h = thread::Builder::new()
        .stack_size(STACK)
        .spawn(f)
        .unwrap_or_else(|e: io::Error| {
            common::refused(format_args!("started {started} of {total} threads: {}", common::error_text(&e)))
        });
    common::threads_progress(started as u64 + 1, total);
    h
}

pub fn join<T>(h: JoinHandle<T>) -> T {
    h.join().unwrap_or_else(|_| common::failed("a thread panicked"))
}
