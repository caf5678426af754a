//! corobench-smol-chain: the chain scenario over smol::channel.

use corobench_common::{self as common, batch, Command};
use corobench_smol::{batch_run, BINARIES, SPEC};

fn main() {
    common::hand_off("corobench-smol-chain", BINARIES);
    let Command::Chain(a) = common::parse_args(&SPEC) else {
        unreachable!("only chain reaches corobench-smol-chain")
    };
    let workers = a.threads.unwrap_or_else(common::available_cores);
    batch_run(workers, |rt| batch::chain::<_, Channel>(rt, &a, workers));
}

common::async_channel_chan!(Channel, smol::channel);
