//! corobench-async-std-chain: the chain scenario over async_std::channel.

use corobench_async_std::{AsyncStd, BINARIES, SPEC};
use corobench_common::{self as common, batch, Command};

fn main() {
    common::hand_off("corobench-async-std-chain", BINARIES);
    let Command::Chain(a) = common::parse_args(&SPEC) else {
        unreachable!("only chain reaches corobench-async-std-chain")
    };
    let workers = a.threads.unwrap_or_else(common::available_cores);
    batch::chain::<_, Channel>(&AsyncStd, &a, workers)
}

common::async_channel_chan!(Channel, async_std::channel);
