//! corobench-load: see docs/loadgen.md. Exit 0 when the load ran (the counts say how the
//! server did), 2 with one line for bad input, 1 with one line for an internal failure.

use std::io::Write;
use std::process::ExitCode;

use corobench_load::{args, report_json, run, sys};

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let cfg = match args::parse(&argv, sys::affinity_cpus(), sys::fd_limit()) {
        Ok(c) => c,
        Err(msg) => {
            eprintln!("corobench-load: {msg}");
            return ExitCode::from(2);
        }
    };
    // A server that resets a connection must not kill the client with SIGPIPE on the next write
    // (EPIPE is counted instead). Rust's runtime ignores SIGPIPE already; the client relies on
    // it, so it says so. SAFETY: setting a disposition to ignore before any thread starts.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) };
    match run(&cfg) {
        Ok(report) => {
            let line = report_json(&cfg, &report);
            let mut out = std::io::stdout().lock();
            if writeln!(out, "{line}").and_then(|_| out.flush()).is_err() {
                return ExitCode::from(1);
            }
            ExitCode::SUCCESS
        }
        Err(msg) => {
            eprintln!("corobench-load: {msg}");
            ExitCode::from(1)
        }
    }
}
