//! corobench-load: the load generator of corobench's echo and http scenarios
//! (docs/loadgen.md). `run` drives the load and returns the report; main prints it.

pub mod args;
pub mod echo;
pub mod engine;
pub mod http;
pub mod proto;
pub mod schedule;
pub mod stats;
pub mod sys;

use std::net::{IpAddr, Ipv4Addr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Barrier;

use args::{Bound, Config, Scenario};
use engine::{Engine, Plan, Times};
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
    pub stats: Stats,
    pub window_start: u64,
    pub window_end: u64,
    pub user_s: f64,
    pub sys_s: f64,
}

/// The source addresses for a target: 127.0.0.1 … 127.0.0.N when the target is an IPv4
/// loopback address (Linux routes all of 127/8 to lo and accepts any of it as a source);
/// none otherwise (IPv6 has one loopback address; elsewhere the kernel chooses).
pub fn source_addresses(target: IpAddr, n: u8) -> Vec<Ipv4Addr> {
    match target {
        IpAddr::V4(a) if a.is_loopback() && n > 0 => (1..=n).map(|k| Ipv4Addr::new(127, 0, 0, k)).collect(),
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

/// Drive the load described by `cfg` and return what happened. Err: the client could not set
/// itself up (an internal failure, exit 1).
pub fn run(cfg: &Config) -> Result<Report, String> {
    let workers = cfg.concurrency;
    let threads = cfg.threads.min(workers).max(1);
    let per_thread: Vec<usize> = (0..threads).map(|t| workers / threads + usize::from(t < workers % threads)).collect();
    let sources = source_addresses(cfg.target.ip(), source_count());
    let timeout_ns = cfg.timeout_ms * 1_000_000;
    let pools = match (cfg.scenario, cfg.bound) {
        (Scenario::Echo, Bound::Count(k)) => Some(proportional(k, &per_thread)),
        _ => None,
    };

    let mut plans = Vec::with_capacity(threads);
    let mut first = 0;
    for (t, &n) in per_thread.iter().enumerate() {
        let requests = match (cfg.scenario, cfg.bound) {
            (Scenario::Http, Bound::Count(total)) => Some(
                (first..first + n)
                    .map(|w| total / workers as u64 + u64::from((w as u64) < total % workers as u64))
                    .collect(),
            ),
            _ => None,
        };
        plans.push(Plan {
            target: cfg.target,
            thread: t,
            first_worker: first,
            workers: n,
            total_workers: workers,
            connections: pools.as_ref().map(|p| p[t]),
            per_connection: (cfg.scenario == Scenario::Echo).then_some(cfg.per_connection),
            requests,
            rate: cfg.rate,
            timeout_ns,
            sources: sources.clone(),
            seq_stride: threads as u64,
        });
        first += n;
    }

    let t0_cell = AtomicU64::new(0);
    let ready = Barrier::new(threads + 1);
    let go = Barrier::new(threads + 1);
    let (warmup_ns, duration_ns) = match cfg.bound {
        Bound::Duration(d) => ((cfg.warmup_s * 1e9) as u64, Some((d * 1e9) as u64)),
        Bound::Count(_) => (0, None),
    };

    let results: Vec<Result<Stats, String>> = std::thread::scope(|scope| {
        let mut handles = Vec::with_capacity(threads);
        for plan in plans {
            let (t0_cell, ready, go) = (&t0_cell, &ready, &go);
            let scenario = cfg.scenario;
            let (size, uuids, host) = (cfg.size, cfg.uuids, cfg.target_text.clone());
            let handle = std::thread::Builder::new()
                .name(format!("load-{}", plan.thread))
                .spawn_scoped(scope, move || {
                    // set up (every allocation) before the common start
                    let result = match scenario {
                        Scenario::Echo => Engine::new(plan, || echo::EchoExchange::new(size, uuids)).map(Either::Echo),
                        Scenario::Http => Engine::new(plan, || http::HttpExchange::new(&host)).map(Either::Http),
                    };
                    ready.wait();
                    go.wait();
                    let t0 = t0_cell.load(Ordering::Acquire);
                    let times = Times {
                        t0,
                        window_start: t0 + warmup_ns,
                        stop_at: duration_ns.map_or(u64::MAX, |d| t0 + warmup_ns + d),
                    };
                    let mut engine = result.map_err(|e| format!("setting up a client thread: {e}"))?;
                    let res = match &mut engine {
                        Either::Echo(e) => e.run(times),
                        Either::Http(e) => e.run(times),
                    };
                    res.map_err(|e| format!("event loop: {e}"))?;
                    Ok(match engine {
                        Either::Echo(e) => e.stats,
                        Either::Http(e) => e.stats,
                    })
                })
                .map_err(|e| format!("spawning a client thread: {e}"));
            match handle {
                Ok(h) => handles.push(h),
                Err(e) => {
                    // let the threads already waiting go (they will run), then report
                    eprintln!("corobench-load: {e}");
                    std::process::exit(1);
                }
            }
        }
        ready.wait();
        t0_cell.store(sys::now_ns(), Ordering::Release);
        go.wait();
        handles.into_iter().map(|h| h.join().unwrap_or_else(|_| Err("a client thread panicked".into()))).collect()
    });

    let t0 = t0_cell.load(Ordering::Acquire);
    let mut total = Stats::new();
    for r in results {
        total.merge(r?);
    }
    let (window_start, window_end) = match duration_ns {
        Some(d) => (t0 + warmup_ns, t0 + warmup_ns + d),
        None => (t0, total.end_ns.max(t0)),
    };
    let (user_s, sys_s) = sys::cpu_times();
    Ok(Report { threads, stats: total, window_start, window_end, user_s, sys_s })
}

enum Either {
    Echo(Engine<echo::EchoExchange>),
    Http(Engine<http::HttpExchange>),
}

/// The one output line (docs/loadgen.md, "Output").
pub fn report_json(cfg: &Config, r: &Report) -> String {
    use serde_json::{json, Map, Value};
    let st = &r.stats;
    let mut errors = Map::new();
    for (name, cause) in stats::CAUSES {
        errors.insert(name.into(), json!(st.errors[cause as usize]));
    }
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
    out.insert("connections".into(), json!(st.connections));
    out.insert("requests".into(), json!(st.requests));
    out.insert("ok".into(), json!(st.ok));
    out.insert("mismatched".into(), json!(st.mismatched));
    out.insert("errors".into(), Value::Object(errors));
    out.insert("first_error".into(), json!(st.first_error.as_ref().map(|(_, s)| s)));
    out.insert(
        "window".into(),
        json!({
            "start_ns": r.window_start, "end_ns": r.window_end, "seconds": seconds,
            "connections": st.win_connections, "requests": st.win_requests, "ok": st.win_ok,
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
    fn sources_only_for_ipv4_loopback() {
        assert_eq!(source_addresses("127.0.0.1".parse().unwrap(), 3).len(), 3);
        assert_eq!(source_addresses("127.0.0.1".parse().unwrap(), 3)[2], Ipv4Addr::new(127, 0, 0, 3));
        assert!(source_addresses("::1".parse().unwrap(), 3).is_empty());
        assert!(source_addresses("10.1.2.3".parse().unwrap(), 3).is_empty());
    }
}
