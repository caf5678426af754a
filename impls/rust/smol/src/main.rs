//! corobench-smol: tasks and blocking; every other scenario is handed to its
//! own binary (lib.rs).

use corobench_common::{self as common, batch, Command, TaskBuf};
use corobench_smol::{batch_run, BINARIES, SPEC};

fn main() {
    common::hand_off("corobench-smol", BINARIES);
    let cmd = common::parse_args(&SPEC);
    let workers = cmd.threads().unwrap_or_else(common::available_cores);
    batch_run(workers, |rt| match cmd {
        Command::Tasks(a) => batch::tasks(rt, &a, workers),
        Command::Blocking(a) => {
            // smol::fs (async-fs, each operation on the blocking pool), or
            // std::fs in smol::unblock.
            let open =
                |path: &'static str, write: bool| smol::fs::OpenOptions::new().read(!write).write(write).open(path);
            let pool_body = |mut buf: TaskBuf| async move {
                smol::unblock(move || {
                    common::copy_urandom_to_null(&mut buf);
                    buf
                })
                .await
            };
            batch::blocking_futures_io(rt, &a, workers, open, pool_body)
        }
        Command::Chain(_) => unreachable!("chain runs in corobench-smol-chain"),
    });
}
