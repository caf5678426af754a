//! corobench-threads: tasks and blocking; every other scenario is handed to
//! its own binary (lib.rs).

use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use corobench_common::{self as common, BlockingArgs, Command, TaskBuf, TasksArgs};
use corobench_threads::{join, spawn, BINARIES, SPEC};

fn main() {
    common::hand_off("corobench-threads", BINARIES);
    match common::parse_args(&SPEC) {
        Command::Tasks(a) => tasks(&a),
        Command::Blocking(a) => blocking(&a),
        Command::Chain(_) => unreachable!("chain runs in corobench-threads-chain"),
    }
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

type Handles = Vec<JoinHandle<TaskBuf>>;

/// One iteration: a thread per buffer in `bufs`; every buffer comes back,
/// written in full (its length is the bytes written: `TaskBuf`).
fn blocking_iteration(a: &BlockingArgs, bufs: &mut Vec<TaskBuf>, handles: &mut Handles) -> u64 {
    for (i, mut buf) in bufs.drain(..).enumerate() {
        handles.push(spawn(i, a.tasks, move || {
            common::copy_urandom_to_null(&mut buf);
            buf
        }));
    }
    let mut sum = 0u64;
    for h in handles.drain(..) {
        let buf = join(h);
        sum += buf.len() as u64;
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
