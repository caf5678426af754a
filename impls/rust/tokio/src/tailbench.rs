//! Diagnostic build only (`--features tailbench`, `RUSTFLAGS="--cfg
//! tokio_unstable"`): which part of tokio's multi-thread scheduler makes the
//! http server's p99 tail (../README.md, "tokio's tail"). The servers'
//! runtime comes from `COROBENCH_TOKIO_RUNTIME`:
//!
//! - `multi` (or unset): what rust-tokio runs, the multi-thread runtime;
//! - `current`: the current-thread runtime (one FIFO run queue);
//! - `nolifo`: multi-thread with the LIFO slot disabled (unstable switch);
//! - `gqi=N`: multi-thread, the global (inject) queue checked every N ticks;
//! - `events=N`: multi-thread, the I/O driver polled every N ticks.
//!
//! Options combine with `+` (`nolifo+gqi=8`). At stop, the counters of the
//! scheduler go to stderr as one JSON line.

use std::sync::OnceLock;

static RT: OnceLock<tokio::runtime::Handle> = OnceLock::new();

pub fn runtime(threads: Option<usize>) -> (tokio::runtime::Runtime, usize) {
    let shape = std::env::var("COROBENCH_TOKIO_RUNTIME").unwrap_or_else(|_| "multi".into());
    let mut builder = if shape == "current" {
        tokio::runtime::Builder::new_current_thread()
    } else {
        let mut b = tokio::runtime::Builder::new_multi_thread();
        if let Some(n) = threads {
            b.worker_threads(n);
        }
        for option in shape.split('+') {
            match option.split_once('=') {
                None if option == "multi" => {}
                None if option == "nolifo" => {
                    b.disable_lifo_slot();
                }
                Some(("gqi", n)) => {
                    b.global_queue_interval(n.parse().expect("gqi=N"));
                }
                Some(("events", n)) => {
                    b.event_interval(n.parse().expect("events=N"));
                }
                _ => panic!("COROBENCH_TOKIO_RUNTIME: unknown option {option:?}"),
            }
        }
        b
    };
    let rt = builder.enable_io().enable_time().build().expect("tokio runtime");
    let _ = RT.set(rt.handle().clone());
    let workers = rt.metrics().num_workers();
    (rt, workers)
}

/// The scheduler's counters, summed over workers, on stderr.
pub fn report() {
    let Some(h) = RT.get() else { return };
    let m = h.metrics();
    let workers = m.num_workers();
    let sum = |f: &dyn Fn(usize) -> u64| (0..workers).map(f).sum::<u64>();
    eprintln!(
        "{{\"tailbench\":{:?},\"workers\":{},\"polls\":{},\"local_schedules\":{},\"overflows\":{},\"steals\":{},\"parks\":{},\"remote_schedules\":{},\"budget_forced_yields\":{},\"io_ready\":{}}}",
        std::env::var("COROBENCH_TOKIO_RUNTIME").unwrap_or_else(|_| "multi".into()),
        workers,
        sum(&|w| m.worker_poll_count(w)),
        sum(&|w| m.worker_local_schedule_count(w)),
        sum(&|w| m.worker_overflow_count(w)),
        sum(&|w| m.worker_steal_count(w)),
        sum(&|w| m.worker_park_count(w)),
        m.remote_schedule_count(),
        m.budget_forced_yield_count(),
        m.io_driver_ready_count(),
    );
}
