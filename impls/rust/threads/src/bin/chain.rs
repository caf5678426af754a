//! corobench-threads-chain: 2×W OS threads over std::sync::mpsc::sync_channel(Q).

use std::sync::mpsc::sync_channel;
use std::time::Instant;

use corobench_common::{self as common, ChainArgs, Command, Event, EventSource};
use corobench_threads::{join, spawn, BINARIES, SPEC};

fn main() {
    common::hand_off("corobench-threads-chain", BINARIES);
    let Command::Chain(a) = common::parse_args(&SPEC) else {
        unreachable!("only chain reaches corobench-threads-chain")
    };
    chain(&a)
}

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
