//! corobench-tokio-chain: the chain scenario over kanal's async bounded
//! channel (the fastest of five measured, ../README.md); with `--features
//! chanbench`, a hidden `--channel NAME` runs it over another channel.

use corobench_common::batch::{self, Chan};
use corobench_common::{self as common, Command, Event};
use corobench_tokio::{runtime, Tokio, BINARIES, SPEC};

#[cfg(feature = "chanbench")]
mod chanbench;

fn main() {
    common::hand_off("corobench-tokio-chain", BINARIES);
    let Command::Chain(a) = common::parse_args(&SPEC) else {
        unreachable!("only chain reaches corobench-tokio-chain")
    };
    let (rt, workers) = runtime(a.threads, false);
    let rt = Tokio(rt);
    #[cfg(feature = "chanbench")]
    if let Some(name) = a.channel {
        return chanbench::chain(&rt, &a, workers, name);
    }
    batch::chain::<_, Kanal>(&rt, &a, workers)
}

/// kanal's async bounded channel: the shipped choice.
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
