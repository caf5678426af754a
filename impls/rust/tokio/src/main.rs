//! corobench-tokio: tasks and blocking; every other scenario is handed to its
//! own binary (lib.rs).

use std::io;

use corobench_common::batch::{self, AsyncFile, Runtime as _};
use corobench_common::{self as common, Command};
use corobench_tokio::{runtime, Tokio, BINARIES, SPEC};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn main() {
    common::hand_off("corobench-tokio", BINARIES);
    let cmd = common::parse_args(&SPEC);
    let (rt, workers) = runtime(cmd.threads(), false);
    let rt = Tokio(rt);
    match cmd {
        Command::Tasks(a) => batch::tasks(&rt, &a, workers),
        Command::Blocking(a) => blocking(&rt, &a, workers),
        Command::Chain(_) => unreachable!("chain runs in corobench-tokio-chain"),
    }
}

/// tokio::fs::File, for the `fs` variant's shared task body.
struct TokioFile(tokio::fs::File);

impl AsyncFile for TokioFile {
    async fn read_exact(&mut self, buf: &mut [u8]) -> io::Result<()> {
        self.0.read_exact(buf).await.map(drop)
    }
    async fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.0.write_all(buf).await?;
        // tokio::fs::File writes in the background; flush waits for the write.
        self.0.flush().await
    }
}

/// Threads that may run the variant's blocking calls with tokio's defaults:
/// the blocking pool's limit (`max_blocking_threads`, 512) for tokio::fs
/// (each operation runs on the pool) and spawn_blocking; for block_in_place
/// the call runs on the worker thread itself while its core moves to a
/// thread from the same pool, whose cap is 512 plus the worker threads (the
/// workers are launched from it); none beyond the workers for sync.
fn pool_threads(variant: &str, workers: usize) -> u64 {
    const MAX_BLOCKING_THREADS: u64 = 512;
    match variant {
        "fs" | "spawn_blocking" => MAX_BLOCKING_THREADS,
        "block_in_place" => MAX_BLOCKING_THREADS + workers as u64,
        "sync" => 0,
        v => unreachable!("variant {v}"),
    }
}

fn blocking(rt: &Tokio, a: &common::BlockingArgs, workers: usize) {
    let copy = common::copy_urandom_to_null;
    let open = |path, write: bool| async move {
        let file = tokio::fs::OpenOptions::new().read(!write).write(write).open(path).await?;
        Ok(TokioFile(file))
    };
    batch::blocking(rt, a, workers, pool_threads(a.variant, workers), |mut buf| match a.variant {
        "fs" => rt.spawn(batch::copy_urandom_to_null_async(buf, open)),
        "block_in_place" => rt.spawn(async move {
            tokio::task::block_in_place(|| copy(&mut buf));
            buf
        }),
        "sync" => rt.spawn(async move {
            copy(&mut buf);
            buf
        }),
        "spawn_blocking" => rt.spawn(async move {
            tokio::task::spawn_blocking(move || {
                copy(&mut buf);
                buf
            })
                .await
                .unwrap_or_else(|e| common::failed(format_args!("blocking: {e}")))
        }),
        v => unreachable!("variant {v}"),
    });
}
