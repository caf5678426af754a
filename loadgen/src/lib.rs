//! corobench-load: the load generator of corobench's echo and http scenarios
//! (docs/loadgen.md). `run` drives the load and returns the report; main prints it.

pub mod agent;
pub mod args;
pub mod clock;
pub mod echo;
pub mod engine;
pub mod http;
pub mod interval;
pub mod proto;
pub mod schedule;
pub mod stats;
pub mod sys;
pub mod watch;

use std::io::Write;
use std::net::{IpAddr, Ipv4Addr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Barrier};

use args::{Bound, Config, Scenario, Share};
use engine::{Engine, Plan, Times};
use interval::{Grid, Recorder};
use stats::Stats;

/// Source addresses 127.0.0.1 … 127.0.0.N that connections to an IPv4 loopback target are
/// spread over (loadgen/README.md says how this was chosen).
pub const SOURCE_ADDRESSES: u8 = 16;

/// SOURCE_ADDRESSES, or COROBENCH_LOAD_SOURCES when set (0: no spreading, the kernel picks
/// the source as usual): the knob the measurements in loadgen/README.md used.
fn source_count() -> u8 {
    std::env::var("COROBENCH_LOAD_SOURCES").ok().and_then(|v| v.parse().ok()).unwrap_or(SOURCE_ADDRESSES)
}

pub struct Report {
    pub threads: usize,
    pub share: Share,
    /// The source addresses connections were spread over (empty: the kernel chose).
    pub sources: Vec<IpAddr>,
    pub stats: Stats,
    pub window_start: u64,
    pub window_end: u64,
    /// The interval lines printed (duration-bounded runs), without their histograms.
    pub intervals: Vec<interval::Summary>,
    pub user_s: f64,
    pub sys_s: f64,
}

/// The source addresses for a target: 127.0.0.1 … 127.0.0.N when the target is an IPv4
/// loopback address (Linux routes all of 127/8 to lo and accepts any of it as a source);
/// none otherwise (IPv6 has one loopback address; elsewhere the kernel chooses).
pub fn source_addresses(target: IpAddr, n: u8) -> Vec<IpAddr> {
    match target {
        IpAddr::V4(a) if a.is_loopback() && n > 0 => (1..=n).map(|k| IpAddr::V4(Ipv4Addr::new(127, 0, 0, k))).collect(),
        _ => Vec::new(),
    }
}

/// `total` split into `parts` shares proportional to the cumulative `weights` boundaries:
/// share t = floor(total·cum[t+1]/sum) − floor(total·cum[t]/sum).
fn proportional(total: u64, weights: &[usize]) -> Vec<u64> {
    let sum: u128 = weights.iter().map(|&w| w as u128).sum();
    let mut cum: u128 = 0;
    let mut out = Vec::with_capacity(weights.len());
    for &w in weights {
        let lo = (total as u128 * cum / sum) as u64;
        cum += w as u128;
        let hi = (total as u128 * cum / sum) as u64;
        out.push(hi - lo);
    }
    out
}

/// The run's clock once every thread is ready: when the load starts (`t0`), or why it cannot.
fn start_time(cfg: &Config, warmup_ns: u64, now: u64) -> Result<u64, String> {
    let Some(at) = cfg.start_at_ns else { return Ok(now) };
    // the load (warm-up included) starts W before the window; it must still be ahead
    match at.checked_sub(warmup_ns) {
        Some(t0) if t0 > now => Ok(t0),
        _ => {
            let late_ns = now as i128 - (at as i128 - warmup_ns as i128);
            Err(format!("start time passed {} ms ago", (late_ns + 999_999) / 1_000_000))
        }
    }
}

/// Drive the load described by `cfg` (this agent's share of it) and return what happened; the
/// interval lines of a duration-bounded run go to `intervals_out` as they complete. Err: the
/// client could not set itself up or start in time (an internal failure, exit 1).
pub fn run(cfg: &Config, intervals_out: &mut (dyn Write + Send)) -> Result<Report, String> {
    let share = cfg.share();
    let workers = share.concurrency;
    let threads = cfg.threads.min(workers).max(1);
    let per_thread: Vec<usize> = (0..threads).map(|t| workers / threads + usize::from(t < workers % threads)).collect();
    let sources = match &cfg.sources {
        Some(list) => list.clone(),
        None => source_addresses(cfg.target.ip(), source_count()),
    };
    let timeout_ns = cfg.timeout_ms * 1_000_000;
    let pools = match (cfg.scenario, share.count) {
        (Scenario::Echo, Some(k)) => Some(proportional(k, &per_thread)),
        _ => None,
    };
    let (agent, agents) = (cfg.agent.index as u64, cfg.agent.count as u64);

    let mut plans = Vec::with_capacity(threads);
    let mut first = 0;
    for (t, &n) in per_thread.iter().enumerate() {
        let requests = match (cfg.scenario, share.count) {
            (Scenario::Http, Some(total)) => Some(
                (first..first + n)
                    .map(|w| total / workers as u64 + u64::from((w as u64) < total % workers as u64))
                    .collect(),
            ),
            _ => None,
        };
        plans.push(Plan {
            target: cfg.target,
            thread: t,
            first_worker: share.first_worker + first,
            workers: n,
            total_workers: cfg.concurrency,
            connections: pools.as_ref().map(|p| p[t]),
            per_connection: (cfg.scenario == Scenario::Echo).then_some(cfg.per_connection),
            requests,
            rate: cfg.rate,
            timeout_ns,
            sources: sources.clone(),
            // agent I's sequence numbers are ≡ I (mod N): tokens and echo requests differ
            // across agents too
            seq_first: agent + agents * t as u64,
            seq_stride: agents * threads as u64,
        });
        first += n;
    }

    // 0 until the main thread has decided; then t0, or ABORT when the start time passed
    const ABORT: u64 = u64::MAX;
    let t0_cell = AtomicU64::new(0);
    let ready = Barrier::new(threads + 1);
    let go = Barrier::new(threads + 1);
    let (warmup_ns, duration_ns) = match cfg.bound {
        Bound::Duration(d) => ((cfg.warmup_s * 1e9) as u64, Some((d * 1e9) as u64)),
        Bound::Count(_) => (0, None),
    };
    // the window of a run with a start time opens exactly there
    let window_of = |t0: u64| cfg.start_at_ns.unwrap_or(t0 + warmup_ns);
    let (tally_tx, tally_rx) = mpsc::channel();
    // http connections are opened before a start time, so that the first requests find them up
    let preconnect = cfg.start_at_ns.is_some() && cfg.scenario == Scenario::Http;
    let mut late = None;

    let (results, intervals) = std::thread::scope(|scope| {
        let mut handles = Vec::with_capacity(threads);
        for plan in plans {
            let (t0_cell, ready, go, window_of) = (&t0_cell, &ready, &go, &window_of);
            let scenario = cfg.scenario;
            let (size, uuids, host) = (cfg.size, cfg.uuids, cfg.target_text.clone());
            let recorder = duration_ns.map(|_| Recorder::new(tally_tx.clone()));
            let interval_ns = cfg.interval_ms * 1_000_000;
            let handle = std::thread::Builder::new()
                .name(format!("load-{}", plan.thread))
                .spawn_scoped(scope, move || -> Result<Option<Stats>, String> {
                    // set up (every allocation, and the connections of a timed start) before
                    // the common start
                    let mut result = match scenario {
                        Scenario::Echo => Engine::new(plan, recorder, || echo::EchoExchange::new(size, uuids)).map(Either::Echo),
                        Scenario::Http => Engine::new(plan, recorder, || http::HttpExchange::new(&host)).map(Either::Http),
                    };
                    if preconnect {
                        if let Ok(Either::Http(e)) = &mut result {
                            if let Err(err) = e.preconnect() {
                                result = Err(err);
                            }
                        }
                    }
                    ready.wait();
                    go.wait();
                    let t0 = t0_cell.load(Ordering::Acquire);
                    if t0 == ABORT {
                        return Ok(None);
                    }
                    let window_start = window_of(t0);
                    let times = Times { t0, window_start, stop_at: duration_ns.map_or(u64::MAX, |d| window_start + d) };
                    let grid = duration_ns.map(|d| Grid { start: window_start, end: window_start + d, len: interval_ns });
                    let mut engine = result.map_err(|e| format!("setting up a client thread: {e}"))?;
                    sys::sleep_until(t0);
                    let res = match &mut engine {
                        Either::Echo(e) => e.run(times, grid),
                        Either::Http(e) => e.run(times, grid),
                    };
                    res.map_err(|e| format!("event loop: {e}"))?;
                    Ok(Some(match engine {
                        Either::Echo(e) => e.stats,
                        Either::Http(e) => e.stats,
                    }))
                })
                .map_err(|e| format!("spawning a client thread: {e}"));
            match handle {
                Ok(h) => handles.push(h),
                Err(e) => {
                    // the threads already waiting cannot be released cleanly: report and go
                    eprintln!("corobench-load: {e}");
                    std::process::exit(1);
                }
            }
        }
        // the reporter ends when the last engine (holding the last sender) is gone
        drop(tally_tx);
        ready.wait();
        let t0 = match start_time(cfg, warmup_ns, sys::now_ns()) {
            Ok(t0) => t0,
            Err(e) => {
                late = Some(e);
                ABORT
            }
        };
        t0_cell.store(t0, Ordering::Release);
        go.wait();
        let reporter = duration_ns.filter(|_| t0 != ABORT).map(|d| {
            let grid = Grid { start: window_of(t0), end: window_of(t0) + d, len: cfg.interval_ms * 1_000_000 };
            scope.spawn(move || interval::report(tally_rx, threads, grid, intervals_out))
        });
        let results: Vec<Result<Option<Stats>, String>> =
            handles.into_iter().map(|h| h.join().unwrap_or_else(|_| Err("a client thread panicked".into()))).collect();
        let intervals = reporter.map(|r| r.join().unwrap_or_default()).unwrap_or_default();
        (results, intervals)
    });
    if let Some(e) = late {
        return Err(e);
    }

    let t0 = t0_cell.load(Ordering::Acquire);
    let mut total = Stats::new();
    for r in results {
        if let Some(st) = r? {
            total.merge(st);
        }
    }
    let (window_start, window_end) = match duration_ns {
        Some(d) => (window_of(t0), window_of(t0) + d),
        None => (t0, total.end_ns.max(t0)),
    };
    let (user_s, sys_s) = sys::cpu_times();
    Ok(Report { threads, share, sources, stats: total, window_start, window_end, intervals, user_s, sys_s })
}

enum Either {
    Echo(Engine<echo::EchoExchange>),
    Http(Engine<http::HttpExchange>),
}

/// The one output line (docs/loadgen.md, "Output").
pub fn report_json(cfg: &Config, r: &Report) -> String {
    use serde_json::{json, Map, Value};
    let st = &r.stats;
    let seconds = (r.window_end - r.window_start) as f64 / 1e9;
    let mut out = Map::new();
    out.insert("tool".into(), json!("corobench-load"));
    out.insert("scenario".into(), json!(cfg.scenario.name()));
    out.insert("target".into(), json!(cfg.target_text));
    out.insert("mode".into(), json!(if cfg.rate.is_some() { "open" } else { "closed" }));
    out.insert("rate".into(), json!(cfg.rate));
    out.insert("threads".into(), json!(r.threads));
    out.insert("concurrency".into(), json!(cfg.concurrency));
    if cfg.scenario == Scenario::Echo {
        out.insert("per_connection".into(), json!(cfg.per_connection));
        out.insert("size".into(), json!(cfg.size));
        out.insert("uuids".into(), json!(cfg.uuids));
    }
    let (duration, warmup) = match cfg.bound {
        Bound::Duration(d) => (json!(d), json!(cfg.warmup_s)),
        Bound::Count(_) => (Value::Null, Value::Null),
    };
    out.insert("duration_s".into(), duration);
    out.insert("warmup_s".into(), warmup);
    out.insert("timeout_ms".into(), json!(cfg.timeout_ms));
    let duration_bound = matches!(cfg.bound, Bound::Duration(_));
    out.insert("interval_ms".into(), if duration_bound { json!(cfg.interval_ms) } else { Value::Null });
    out.insert("start_at_ns".into(), json!(cfg.start_at_ns));
    out.insert("agent".into(), json!([cfg.agent.index, cfg.agent.count]));
    // this agent's part of each total, named as the flags that gave the totals
    let sh = &r.share;
    let share = match cfg.scenario {
        Scenario::Echo => json!({"connections": sh.count, "concurrency": sh.concurrency, "rate": sh.rate}),
        Scenario::Http => json!({"connections": sh.concurrency, "requests": sh.count, "rate": sh.rate}),
    };
    out.insert("share".into(), share);
    out.insert("sources".into(), json!(r.sources.iter().map(|a| a.to_string()).collect::<Vec<_>>()));
    out.insert("connections".into(), json!(st.connections));
    out.insert("requests".into(), json!(st.requests));
    out.insert("ok".into(), json!(st.ok));
    out.insert("mismatched".into(), json!(st.mismatched));
    out.insert("errors".into(), stats::errors_json(&st.errors));
    out.insert("first_error".into(), json!(st.first_error.as_ref().map(|(_, s)| s)));
    out.insert(
        "window".into(),
        json!({
            "start_ns": r.window_start, "end_ns": r.window_end, "seconds": seconds,
            "connections": st.win_connections, "requests": st.win_requests, "ok": st.win_ok,
            "mismatched": st.win_mismatched, "errors": stats::errors_json(&st.win_errors),
        }),
    );
    out.insert("latency_us".into(), stats::latency_json(&st.hist));
    out.insert("histogram".into(), json!(stats::encode_histogram(&st.hist)));
    out.insert("cpu".into(), json!({"user_s": r.user_s, "sys_s": r.sys_s}));
    Value::Object(out).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_add_up() {
        assert_eq!(proportional(10, &[1, 1]), vec![5, 5]);
        assert_eq!(proportional(50_000, &[2, 1]), vec![33_333, 16_667]);
        assert_eq!(proportional(1, &[50, 50]), vec![0, 1]);
        let s = proportional(99_999, &[3, 3, 3, 4]);
        assert_eq!(s.iter().sum::<u64>(), 99_999);
    }

    #[test]
    fn a_start_time_must_leave_room_for_the_warm_up() {
        let argv: Vec<String> =
            "http --target 127.0.0.1:9 --duration 1 --warmup-s 2 --start-at 10000000000".split_whitespace().map(String::from).collect();
        let cfg = args::parse(&argv, 1, 1000).unwrap();
        let w = 2_000_000_000;
        assert_eq!(start_time(&cfg, w, 7_000_000_000), Ok(8_000_000_000));
        assert_eq!(start_time(&cfg, w, 8_000_000_000), Err("start time passed 0 ms ago".into()));
        assert_eq!(start_time(&cfg, w, 8_000_000_001), Err("start time passed 1 ms ago".into()));
        assert_eq!(start_time(&cfg, w, 9_500_000_000), Err("start time passed 1500 ms ago".into()));
        // a start time earlier than the warm-up is long
        let argv: Vec<String> = "http --target 127.0.0.1:9 --duration 1 --warmup-s 2 --start-at 1000".split_whitespace().map(String::from).collect();
        let cfg = args::parse(&argv, 1, 1000).unwrap();
        assert!(start_time(&cfg, w, 5).unwrap_err().starts_with("start time passed"));
        // without one, now
        let argv: Vec<String> = "http --target 127.0.0.1:9".split_whitespace().map(String::from).collect();
        assert_eq!(start_time(&args::parse(&argv, 1, 1000).unwrap(), w, 42), Ok(42));
    }

    #[test]
    fn sources_only_for_ipv4_loopback() {
        assert_eq!(source_addresses("127.0.0.1".parse().unwrap(), 3).len(), 3);
        assert_eq!(source_addresses("127.0.0.1".parse().unwrap(), 3)[2], IpAddr::V4(Ipv4Addr::new(127, 0, 0, 3)));
        assert!(source_addresses("::1".parse().unwrap(), 3).is_empty());
        assert!(source_addresses("10.1.2.3".parse().unwrap(), 3).is_empty());
    }
}
