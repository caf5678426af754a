//! corobench-load: see docs/loadgen.md. Exit 0 when the load ran (the counts say how the
//! server did), 2 with one line for bad input, 1 with one line for an internal failure (or a
//! start time already past), 4 when `--watch-stdin` saw stdin close.

use std::io::Write;
use std::process::ExitCode;

use corobench_load::{args, clock, report_json, run, sys, watch};

fn main() -> ExitCode {
    let mut argv: Vec<String> = std::env::args().skip(1).collect();
    // `--pin CPUS` before the scenario: the agent pins itself (a client host needs no taskset)
    if argv.first().map(String::as_str) == Some("--pin") {
        let Some(list) = argv.get(1).cloned() else { return fail(2, "--pin needs a CPU list") };
        if let Err(msg) = sys::pin(&list) {
            return fail(2, &msg);
        }
        argv.drain(..2);
    }
    match argv.first().map(String::as_str) {
        Some("clock") => return tool(&argv, || clock::serve(std::io::stdin().lock(), std::io::stdout().lock())),
        Some("info") => return tool(&argv, || writeln!(std::io::stdout().lock(), "{}", info())),
        _ => {}
    }
    let cfg = match args::parse(&argv, sys::affinity_cpus(), sys::fd_limit()) {
        Ok(c) => c,
        Err(msg) => return fail(2, &msg),
    };
    if let Some(at) = cfg.start_at_ns {
        if let Err(msg) = args::check_start_at(at, sys::now_ns()) {
            return fail(2, &msg);
        }
    }
    if cfg.watch_stdin {
        if let Err(e) = watch::watch_stdin() {
            return fail(1, &format!("starting the stdin watcher: {e}"));
        }
    }
    // Open-loop latency counts from the scheduled send time, so a late wake-up of the client is
    // counted against the server: take the kernel's default 50 µs timer slack off every thread's
    // sleeps (threads inherit it). SAFETY: prctl with an integer argument.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong) };
    // A server that resets a connection must not kill the client with SIGPIPE on the next write
    // (EPIPE is counted instead). Rust's runtime ignores SIGPIPE already; the client relies on
    // it, so it says so. SAFETY: setting a disposition to ignore before the load's threads start.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) };
    match run(&cfg, &mut std::io::stdout()) {
        Ok(report) => {
            let line = report_json(&cfg, &report);
            let mut out = std::io::stdout().lock();
            watch::load_finished();
            if writeln!(out, "{line}").and_then(|_| out.flush()).is_err() {
                return ExitCode::from(1);
            }
            ExitCode::SUCCESS
        }
        Err(msg) => fail(1, &msg),
    }
}

fn fail(code: u8, msg: &str) -> ExitCode {
    eprintln!("corobench-load: {msg}");
    ExitCode::from(code)
}

/// A subcommand without flags: run it, exit 0, or 1 when its I/O failed.
fn tool(argv: &[String], body: impl FnOnce() -> std::io::Result<()>) -> ExitCode {
    if let Some(extra) = argv.get(1) {
        return fail(2, &format!("{} takes no arguments, got {extra:?}", argv[0]));
    }
    match body() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(1, &format!("{}: {e}", argv[0])),
    }
}

/// `info`: what the harness checks before it copies this binary to a client host.
fn info() -> String {
    format!(
        r#"{{"tool":"corobench-load","version":"{}","arch":"{}","os":"{}","static":{}}}"#,
        env!("CARGO_PKG_VERSION"),
        std::env::consts::ARCH,
        std::env::consts::OS,
        cfg!(target_feature = "crt-static"),
    )
}
