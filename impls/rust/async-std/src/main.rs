//! corobench-async-std: tasks and blocking; every other scenario is handed to
//! its own binary (lib.rs).

use async_std::task;
use corobench_async_std::{AsyncStd, BINARIES, SPEC};
use corobench_common::{self as common, batch, Command, TaskBuf};

fn main() {
    common::hand_off("corobench-async-std", BINARIES);
    let cmd = common::parse_args(&SPEC);
    // async-std reads the variable (validated by parse_args) when its
    // runtime starts, which the first block_on does, before any timing.
    let workers = cmd.threads().unwrap_or_else(common::available_cores);
    match cmd {
        Command::Tasks(a) => batch::tasks(&AsyncStd, &a, workers),
        Command::Blocking(a) => {
            // async_std::fs (each operation on the blocking pool), or std::fs
            // in spawn_blocking.
            let open = |path: &'static str, write: bool| {
                async_std::fs::OpenOptions::new().read(!write).write(write).open(path)
            };
            let pool_body = |mut buf: TaskBuf| async move {
                task::spawn_blocking(move || {
                    common::copy_urandom_to_null(&mut buf);
                    buf
                })
                .await
            };
            batch::blocking_futures_io(&AsyncStd, &a, workers, open, pool_body)
        }
        Command::Chain(_) => unreachable!("chain runs in corobench-async-std-chain"),
    }
}
