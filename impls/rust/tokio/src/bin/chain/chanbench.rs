//! Channel comparison for the chain scenario (built only with
//! `--features chanbench`): the hidden flag `--channel NAME` runs the same
//! chain over another bounded channel. The shipped build always uses
//! kanal (the fastest). Figures and reasoning: ../README.md.

use corobench_common::batch::{self, Chan};
use corobench_common::{ChainArgs, Event};

use corobench_tokio::Tokio;

use crate::Kanal;

pub fn chain(rt: &Tokio, a: &ChainArgs, workers: usize, name: &str) {
    match name {
        "tokio" => batch::chain::<Tokio, TokioMpsc>(rt, a, workers),
        "futures" => batch::chain::<Tokio, FuturesMpsc>(rt, a, workers),
        "async-channel" => batch::chain::<Tokio, AsyncChannel>(rt, a, workers),
        "flume" => batch::chain::<Tokio, Flume>(rt, a, workers),
        "kanal" => batch::chain::<Tokio, Kanal>(rt, a, workers),
        _ => unreachable!(),
    }
}

/// futures::channel::mpsc; its capacity is `buffer + number of senders`, so
/// `buffer = Q - 1` gives exactly Q with the one sender.
pub struct FuturesMpsc;

impl Chan for FuturesMpsc {
    type Tx = futures::channel::mpsc::Sender<Event>;
    type Rx = futures::channel::mpsc::Receiver<Event>;
    fn channel(capacity: usize) -> (Self::Tx, Self::Rx) {
        futures::channel::mpsc::channel(capacity - 1)
    }
    async fn send(tx: &mut Self::Tx, ev: Event) -> bool {
        use futures::SinkExt;
        tx.send(ev).await.is_ok()
    }
    async fn recv(rx: &mut Self::Rx) -> Option<Event> {
        use futures::StreamExt;
        rx.next().await
    }
}

corobench_common::async_channel_chan!(pub AsyncChannel, async_channel);

pub struct Flume;

impl Chan for Flume {
    type Tx = flume::Sender<Event>;
    type Rx = flume::Receiver<Event>;
    fn channel(capacity: usize) -> (Self::Tx, Self::Rx) {
        flume::bounded(capacity)
    }
    async fn send(tx: &mut Self::Tx, ev: Event) -> bool {
        tx.send_async(ev).await.is_ok()
    }
    async fn recv(rx: &mut Self::Rx) -> Option<Event> {
        rx.recv_async().await.ok()
    }
}

/// tokio::sync::mpsc::channel.
pub struct TokioMpsc;

impl Chan for TokioMpsc {
    type Tx = tokio::sync::mpsc::Sender<Event>;
    type Rx = tokio::sync::mpsc::Receiver<Event>;
    fn channel(capacity: usize) -> (Self::Tx, Self::Rx) {
        tokio::sync::mpsc::channel(capacity)
    }
    async fn send(tx: &mut Self::Tx, ev: Event) -> bool {
        tx.send(ev).await.is_ok()
    }
    async fn recv(rx: &mut Self::Rx) -> Option<Event> {
        rx.recv().await
    }
}
