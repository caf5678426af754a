//! Command line (docs/loadgen.md, "Invocation"): parsed strictly, every problem is one line.

use std::net::{IpAddr, SocketAddr};

pub use corobench_wire::Scenario;

use crate::agent::Agent;

/// What ends the load.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Bound {
    /// echo: K connections in total; http: N requests in total.
    Count(u64),
    /// Seconds of measured load after `warmup_s`.
    Duration(f64),
}

/// The command line as given: counts, connections and rate are totals over all agents (see
/// `share` for this agent's part).
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    pub scenario: Scenario,
    pub target: SocketAddr,
    /// The target as given, for the Host header and the output.
    pub target_text: String,
    pub bound: Bound,
    /// Connections in flight at once (echo `--concurrency`, http `--connections`).
    pub concurrency: usize,
    /// echo: exchanges per connection (http: unused, 0).
    pub per_connection: u64,
    pub size: usize,
    pub uuids: usize,
    pub rate: Option<f64>,
    pub warmup_s: f64,
    /// Client threads asked for (the default: the CPUs of the affinity mask).
    pub threads: usize,
    pub timeout_ms: u64,
    pub agent: Agent,
    /// CLOCK_MONOTONIC ns on this host at which the measured window starts.
    pub start_at_ns: Option<u64>,
    /// Length of the per-interval records of a duration-bounded run.
    pub interval_ms: u64,
    /// Stop everything (exit 4) when stdin reaches EOF.
    pub watch_stdin: bool,
    /// Source addresses to spread connections over (`None`: the loopback default).
    pub sources: Option<Vec<IpAddr>>,
}

/// This agent's part of the load (docs/loadgen.md, "Agents").
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Share {
    /// Connections in flight (echo `--concurrency`, http `--connections`).
    pub concurrency: usize,
    /// Global index of its first worker among all agents' (for the open-loop schedule).
    pub first_worker: usize,
    /// echo `--connections`, http `--requests` (count-bounded runs).
    pub count: Option<u64>,
    /// Requests/s: the total rate × this agent's share of the connections, so that every
    /// connection of every agent is offered the same rate.
    pub rate: Option<f64>,
}

impl Config {
    pub fn share(&self) -> Share {
        let a = self.agent;
        let concurrency = a.share(self.concurrency as u64) as usize;
        Share {
            concurrency,
            first_worker: a.offset(self.concurrency as u64) as usize,
            count: match self.bound {
                Bound::Count(k) => Some(a.share(k)),
                Bound::Duration(_) => None,
            },
            rate: self.rate.map(|x| x * concurrency as f64 / self.concurrency as f64),
        }
    }

    /// The flags of the two totals an agent divides, as this scenario names them.
    fn count_flag(&self) -> &'static str {
        if self.scenario == Scenario::Echo {
            "connections"
        } else {
            "requests"
        }
    }

    fn concurrency_flag(&self) -> &'static str {
        if self.scenario == Scenario::Echo {
            "concurrency"
        } else {
            "connections"
        }
    }
}

pub const USAGE: &str =
    "usage: corobench-load echo|http --target HOST:PORT [flags] | corobench-load clock | corobench-load info (see docs/loadgen.md)";

/// Flags both scenarios take.
const COMMON_FLAGS: &[&str] = &[
    "target", "connections", "duration", "rate", "warmup-s", "threads", "timeout-ms", "agent", "start-at", "interval-ms",
    "watch-stdin", "sources",
];
const ECHO_FLAGS: &[&str] = &["concurrency", "per-connection", "size", "uuids"];
const HTTP_FLAGS: &[&str] = &["requests"];
/// Flags without a value.
const SWITCHES: &[&str] = &["watch-stdin"];

pub const MAX_SIZE: usize = 1 << 20;
pub const MAX_UUIDS: usize = 1000;
/// Longest run: `--duration`, `--warmup-s`, and a count-bounded open loop's count ÷ rate.
pub const MAX_SECONDS: f64 = 86_400.0;
pub const MIN_DURATION: f64 = 0.1;
pub const MIN_RATE: f64 = 1.0;
const MAX_RATE: f64 = 1e9;
/// A fixed ceiling rather than one per CPU: a thread per connection beyond this is a mistake on
/// any machine (each thread has its own epoll loop and histograms).
pub const MAX_THREADS: u64 = 1024;
pub const MAX_TIMEOUT_MS: u64 = 600_000;
pub const INTERVAL_MS: (u64, u64) = (100, 60_000);
const MAX_SOURCES: usize = 1024;
/// `--start-at` further ahead than this is taken for a mistake (another clock, other units).
pub const MAX_START_AHEAD_NS: u64 = 3_600_000_000_000;

/// Parse argv (without the program name). `cpus` is the default thread count; `fd_limit` the
/// open-file limit the connections in flight must fit in. Err is the one line for stderr.
pub fn parse(argv: &[String], cpus: usize, fd_limit: u64) -> Result<Config, String> {
    let Some(first) = argv.first() else {
        return Err(format!("missing scenario; {USAGE}"));
    };
    let scenario = Scenario::from_name(first).ok_or_else(|| format!("unknown scenario {first:?}; {USAGE}"))?;
    let own = if scenario == Scenario::Echo { ECHO_FLAGS } else { HTTP_FLAGS };
    let mut given: Vec<(&'static str, String)> = Vec::new();
    let mut i = 1;
    while i < argv.len() {
        let arg = &argv[i];
        let Some(body) = arg.strip_prefix("--") else {
            return Err(format!("unexpected argument {arg:?}; {USAGE}"));
        };
        let (name, inline) = match body.split_once('=') {
            Some((n, v)) => (n, Some(v.to_string())),
            None => (body, None),
        };
        let Some(&flag) = COMMON_FLAGS.iter().chain(own).find(|f| **f == name) else {
            return Err(format!("unknown flag --{name} for {}", scenario.name()));
        };
        if given.iter().any(|(f, _)| *f == flag) {
            return Err(format!("--{flag} given more than once"));
        }
        let value = if SWITCHES.contains(&flag) {
            if inline.is_some() {
                return Err(format!("--{flag} takes no value"));
            }
            String::new()
        } else {
            match inline {
                Some(v) => v,
                None => {
                    i += 1;
                    match argv.get(i) {
                        Some(v) if !v.starts_with("--") => v.clone(),
                        _ => return Err(format!("--{flag} needs a value")),
                    }
                }
            }
        };
        given.push((flag, value));
        i += 1;
    }
    let get = |flag: &str| given.iter().find(|(f, _)| *f == flag).map(|(_, v)| v.as_str());

    let target_text = get("target").ok_or_else(|| "--target HOST:PORT is required".to_string())?.to_string();
    let target: SocketAddr = target_text
        .parse()
        .map_err(|_| format!("--target {target_text:?} is not an IP address literal with a port (e.g. 127.0.0.1:8080 or [::1]:8080)"))?;
    if target.port() == 0 {
        return Err(format!("--target {target_text:?}: port 0 cannot be connected to"));
    }

    let threads = match get("threads") {
        Some(v) => count("threads", v, MAX_THREADS)? as usize,
        None => cpus.clamp(1, MAX_THREADS as usize),
    };
    let timeout_ms = match get("timeout-ms") {
        Some(v) => count("timeout-ms", v, MAX_TIMEOUT_MS)?,
        None => 5000,
    };
    let rate = get("rate").map(|v| bounded_number("rate", v, MIN_RATE, MAX_RATE, "requests/s")).transpose()?;
    let duration = get("duration").map(|v| bounded_number("duration", v, MIN_DURATION, MAX_SECONDS, "s")).transpose()?;
    let warmup = get("warmup-s").map(|v| non_negative_seconds("warmup-s", v)).transpose()?;
    let agent = get("agent").map(|v| Agent::parse(v).map_err(|e| format!("--agent {e}"))).transpose()?.unwrap_or(Agent::SOLE);
    let start_at_ns = get("start-at").map(|v| count("start-at", v, i64::MAX as u64)).transpose()?;
    let interval_ms = get("interval-ms").map(|v| bounded_int("interval-ms", v, INTERVAL_MS.0, INTERVAL_MS.1)).transpose()?;
    let sources = get("sources").map(|v| source_list(v, &target)).transpose()?;

    let (bound, concurrency, per_connection, size, uuids) = match scenario {
        Scenario::Echo => {
            let k = get("connections").map(|v| count("connections", v, u64::MAX >> 1)).transpose()?;
            let bound = match (k, duration) {
                (Some(_), Some(_)) => return Err("echo: --duration and --connections exclude each other (a duration makes the count unbounded)".into()),
                (None, Some(d)) => Bound::Duration(d),
                (Some(k), None) => Bound::Count(k),
                (None, None) => Bound::Count(50_000),
            };
            let concurrency = get("concurrency").map(|v| count("concurrency", v, 1 << 24)).transpose()?.unwrap_or(100) as usize;
            let per = get("per-connection").map(|v| count("per-connection", v, u64::MAX >> 1)).transpose()?.unwrap_or(1);
            let size = match get("size") {
                Some(v) => count("size", v, MAX_SIZE as u64)? as usize,
                None => 17,
            };
            let uuids = match get("uuids") {
                Some(v) => bounded_int("uuids", v, 0, MAX_UUIDS as u64)? as usize,
                None => 5,
            };
            (bound, concurrency, per, size, uuids)
        }
        Scenario::Http => {
            let n = get("requests").map(|v| count("requests", v, u64::MAX >> 1)).transpose()?;
            let bound = match (n, duration) {
                (Some(_), Some(_)) => return Err("http: --duration and --requests exclude each other".into()),
                (Some(n), None) => Bound::Count(n),
                (None, Some(d)) => Bound::Duration(d),
                (None, None) => Bound::Duration(10.0),
            };
            let c = get("connections").map(|v| count("connections", v, 1 << 24)).transpose()?.unwrap_or(80) as usize;
            (bound, c, 0, 0, 0)
        }
    };
    let cfg = Config {
        scenario,
        target,
        target_text,
        bound,
        concurrency,
        per_connection,
        size,
        uuids,
        rate,
        warmup_s: warmup.unwrap_or(0.0),
        threads,
        timeout_ms,
        agent,
        start_at_ns,
        interval_ms: interval_ms.unwrap_or(1000),
        watch_stdin: get("watch-stdin").is_some(),
        sources,
    };
    if let Bound::Count(k) = cfg.bound {
        // what only a window of fixed length has
        for (flag, given) in [("warmup-s", warmup.is_some()), ("start-at", start_at_ns.is_some()), ("interval-ms", interval_ms.is_some())] {
            if given {
                return Err(format!("--{flag} needs a duration-bounded run (not --{})", cfg.count_flag()));
            }
        }
        if let Some(x) = cfg.rate {
            // echo's count is of connections, each carrying R exchanges at the rate
            let exchanges = k as f64 * if scenario == Scenario::Echo { per_connection as f64 } else { 1.0 };
            if exchanges / x > MAX_SECONDS {
                return Err(format!(
                    "--{} {k} at --rate {x} would take {:.0} h, more than {} h",
                    cfg.count_flag(),
                    exchanges / x / 3600.0,
                    MAX_SECONDS / 3600.0
                ));
            }
        }
        if k < agent.count as u64 {
            return Err(format!("--{} {k} is fewer than the {} agents: each needs at least one", cfg.count_flag(), agent.count));
        }
    }
    if concurrency < agent.count as usize {
        return Err(format!(
            "--{} {concurrency} is fewer than the {} agents: each needs at least one connection",
            cfg.concurrency_flag(),
            agent.count
        ));
    }
    // Each connection in flight is a socket; beyond the open-file limit connect would fail
    // with EMFILE in the middle of the run, so refuse the parameters up front. Only this
    // agent's connections are on this host.
    let reserve = 32u64;
    let here = cfg.share().concurrency;
    if here as u64 + reserve > fd_limit {
        return Err(format!("{here} connections in flight need more file descriptors than the limit {fd_limit} (ulimit -n) allows"));
    }
    Ok(cfg)
}

/// `--start-at` against this host's clock now: further ahead than MAX_START_AHEAD_NS is bad
/// input (a time in the past is found later, when the agent is ready, and is a failure).
pub fn check_start_at(start_at_ns: u64, now_ns: u64) -> Result<(), String> {
    if start_at_ns > now_ns.saturating_add(MAX_START_AHEAD_NS) {
        return Err(format!(
            "--start-at {start_at_ns} is {:.0} s ahead of this host's CLOCK_MONOTONIC ({now_ns}); at most {} s",
            (start_at_ns - now_ns) as f64 / 1e9,
            MAX_START_AHEAD_NS / 1_000_000_000
        ));
    }
    Ok(())
}

/// `A,B,…`: distinct IP address literals of the target's family.
fn source_list(v: &str, target: &SocketAddr) -> Result<Vec<IpAddr>, String> {
    let mut out: Vec<IpAddr> = Vec::new();
    for item in v.split(',') {
        let ip: IpAddr = item.parse().map_err(|_| format!("--sources: {item:?} is not an IP address literal"))?;
        if ip.is_ipv4() != target.is_ipv4() {
            return Err(format!("--sources: {ip} is not of the target's address family ({})", target.ip()));
        }
        if ip.is_unspecified() || ip.is_multicast() {
            return Err(format!("--sources: {ip} cannot be a connection's source"));
        }
        if out.contains(&ip) {
            return Err(format!("--sources: {ip} is listed twice"));
        }
        out.push(ip);
    }
    if out.len() > MAX_SOURCES {
        return Err(format!("--sources: {} addresses, at most {MAX_SOURCES}", out.len()));
    }
    Ok(out)
}

fn bounded_int(flag: &str, v: &str, min: u64, max: u64) -> Result<u64, String> {
    let n: i128 = v.trim().parse().map_err(|_| format!("--{flag} {v:?} is not a whole number"))?;
    if n < min as i128 || n > max as i128 {
        return Err(format!("--{flag} {v} is out of range {min} … {max}"));
    }
    Ok(n as u64)
}

/// A count: a whole number >= 1.
fn count(flag: &str, v: &str, max: u64) -> Result<u64, String> {
    let n: i128 = v.trim().parse().map_err(|_| format!("--{flag} {v:?} is not a whole number"))?;
    if n <= 0 {
        return Err(format!("--{flag} must be at least 1, got {v}"));
    }
    if n > max as i128 {
        return Err(format!("--{flag} {v} is too large (at most {max})"));
    }
    Ok(n as u64)
}

fn number(flag: &str, v: &str) -> Result<f64, String> {
    let x: f64 = v.trim().parse().map_err(|_| format!("--{flag} {v:?} is not a number"))?;
    if !x.is_finite() {
        return Err(format!("--{flag} {v:?} is not a finite number"));
    }
    Ok(x)
}

/// A number in min … max (`unit` for the message).
fn bounded_number(flag: &str, v: &str, min: f64, max: f64, unit: &str) -> Result<f64, String> {
    let x = number(flag, v)?;
    if x < min {
        return Err(format!("--{flag} must be at least {min} {unit}, got {v}"));
    }
    if x > max {
        return Err(format!("--{flag} {v} is too large (at most {max} {unit})"));
    }
    Ok(x)
}

fn non_negative_seconds(flag: &str, v: &str) -> Result<f64, String> {
    let x = number(flag, v)?;
    if x < 0.0 {
        return Err(format!("--{flag} must not be negative, got {v}"));
    }
    if x > MAX_SECONDS {
        return Err(format!("--{flag} {v} is too large (at most {MAX_SECONDS})"));
    }
    Ok(x)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(args: &str) -> Result<Config, String> {
        let argv: Vec<String> = args.split_whitespace().map(String::from).collect();
        parse(&argv, 2, 20000)
    }

    fn bad(args: &str) -> String {
        match p(args) {
            Ok(c) => panic!("{args:?} was accepted: {c:?}"),
            Err(e) => {
                assert!(!e.contains('\n'), "error is more than one line: {e:?}");
                e
            }
        }
    }

    #[test]
    fn echo_defaults() {
        let c = p("echo --target 127.0.0.1:4000").unwrap();
        assert_eq!(c.scenario, Scenario::Echo);
        assert_eq!(c.bound, Bound::Count(50_000));
        assert_eq!((c.concurrency, c.per_connection, c.size, c.uuids), (100, 1, 17, 5));
        assert_eq!((c.rate, c.warmup_s, c.threads, c.timeout_ms), (None, 0.0, 2, 5000));
        assert_eq!(c.target_text, "127.0.0.1:4000");
    }

    #[test]
    fn http_defaults() {
        let c = p("http --target [::1]:8080").unwrap();
        assert_eq!(c.bound, Bound::Duration(10.0));
        assert_eq!(c.concurrency, 80);
        assert!(c.target.is_ipv6());
    }

    #[test]
    fn forms_and_modes() {
        let c = p("echo --target=127.0.0.1:1 --duration=2.5 --warmup-s 1 --concurrency 7 --per-connection 3 --size 1 --uuids 0 --rate 1000 --threads 1 --timeout-ms 50").unwrap();
        assert_eq!(c.bound, Bound::Duration(2.5));
        assert_eq!((c.concurrency, c.per_connection, c.size, c.uuids, c.threads, c.timeout_ms), (7, 3, 1, 0, 1, 50));
        assert_eq!((c.rate, c.warmup_s), (Some(1000.0), 1.0));
        let c = p("http --requests 5 --connections 2 --target 127.0.0.1:9").unwrap();
        assert_eq!((c.bound, c.concurrency), (Bound::Count(5), 2));
        let c = p("echo --target 127.0.0.1:9 --size 1048576 --uuids 1000").unwrap();
        assert_eq!((c.size, c.uuids), (1 << 20, 1000));
    }

    #[test]
    fn bad_targets() {
        bad("echo");
        bad("echo --connections 5");
        bad("echo --target localhost:80");
        bad("echo --target 127.0.0.1");
        bad("echo --target 127.0.0.1:0");
        bad("echo --target 127.0.0.1:70000");
        bad("echo --target ::1:80");
        bad("echo --target 127.0.0.1:80/x");
        bad("ping --target 127.0.0.1:80");
    }

    #[test]
    fn bad_counts() {
        for flag in ["connections", "concurrency", "per-connection", "size", "threads", "timeout-ms"] {
            bad(&format!("echo --target 127.0.0.1:80 --{flag} 0"));
            bad(&format!("echo --target 127.0.0.1:80 --{flag} -1"));
            bad(&format!("echo --target 127.0.0.1:80 --{flag} x"));
            bad(&format!("echo --target 127.0.0.1:80 --{flag} 1.5"));
        }
        for flag in ["connections", "requests", "threads"] {
            bad(&format!("http --target 127.0.0.1:80 --{flag} 0"));
            bad(&format!("http --target 127.0.0.1:80 --{flag} -3"));
        }
        bad("echo --target 127.0.0.1:80 --size 1048577");
        bad("echo --target 127.0.0.1:80 --uuids -1");
        bad("echo --target 127.0.0.1:80 --uuids 1001");
        bad("echo --target 127.0.0.1:80 --duration 0");
        bad("echo --target 127.0.0.1:80 --duration -2");
        bad("echo --target 127.0.0.1:80 --duration nan");
        bad("http --target 127.0.0.1:80 --rate 0");
        bad("http --target 127.0.0.1:80 --rate inf");
        bad("http --target 127.0.0.1:80 --duration 1 --warmup-s -1");
    }

    #[test]
    fn bad_combinations() {
        bad("echo --target 127.0.0.1:80 --duration 5 --connections 100");
        bad("echo --target 127.0.0.1:80 --warmup-s 1");
        bad("echo --target 127.0.0.1:80 --connections 10 --warmup-s 1");
        bad("http --target 127.0.0.1:80 --duration 5 --requests 100");
        bad("http --target 127.0.0.1:80 --requests 100 --warmup-s 1");
        // echo's flags are not http's
        bad("http --target 127.0.0.1:80 --concurrency 5");
        bad("http --target 127.0.0.1:80 --size 5");
        bad("http --target 127.0.0.1:80 --per-connection 5");
        bad("echo --target 127.0.0.1:80 --requests 5");
    }

    #[test]
    fn bad_syntax() {
        bad("echo --target 127.0.0.1:80 --bogus 1");
        bad("echo --target 127.0.0.1:80 --size 5 --size 6");
        bad("echo --target 127.0.0.1:80 --size=5 --size 5");
        bad("echo --target 127.0.0.1:80 --size");
        bad("echo --target 127.0.0.1:80 --size --uuids 3");
        bad("echo --target 127.0.0.1:80 stray");
        bad("echo -t 127.0.0.1:80");
    }

    #[test]
    fn floors_and_ceilings() {
        let t = "http --target 127.0.0.1:80";
        bad(&format!("{t} --rate 0.99"));
        assert_eq!(p(&format!("{t} --rate 1")).unwrap().rate, Some(1.0));
        bad(&format!("{t} --rate 1000000001"));
        bad(&format!("{t} --threads 1025"));
        assert_eq!(p(&format!("{t} --threads 1024")).unwrap().threads, 1024);
        // the default is the CPUs, capped too
        let argv: Vec<String> = t.split_whitespace().map(String::from).collect();
        assert_eq!(parse(&argv, 5000, 20000).unwrap().threads, 1024);
        bad(&format!("{t} --duration 0.09"));
        bad(&format!("{t} --duration 0.0999"));
        assert_eq!(p(&format!("{t} --duration 0.1")).unwrap().bound, Bound::Duration(0.1));
        bad(&format!("{t} --duration 86401"));
        bad(&format!("{t} --duration 5 --warmup-s 86401"));
        bad(&format!("{t} --timeout-ms 600001"));
        assert_eq!(p(&format!("{t} --timeout-ms 600000")).unwrap().timeout_ms, 600_000);
        assert_eq!(p(&format!("{t} --timeout-ms 1")).unwrap().timeout_ms, 1);
        for v in ["99", "60001", "0", "-1", "1.5", "x"] {
            bad(&format!("{t} --interval-ms {v}"));
        }
        assert_eq!(p(&format!("{t} --interval-ms 100")).unwrap().interval_ms, 100);
        assert_eq!(p(&format!("{t} --interval-ms 60000")).unwrap().interval_ms, 60_000);
        assert_eq!(p(t).unwrap().interval_ms, 1000);
        // a count-bounded open loop longer than a day
        bad(&format!("{t} --requests 86401 --rate 1"));
        assert!(p(&format!("{t} --requests 86400 --rate 1")).is_ok());
        bad("echo --target 127.0.0.1:80 --connections 43201 --per-connection 2 --rate 1");
        assert!(p("echo --target 127.0.0.1:80 --connections 43200 --per-connection 2 --rate 1").is_ok());
    }

    #[test]
    fn agents_split_every_total() {
        let c = p("http --target 127.0.0.1:80 --connections 80 --requests 1001 --rate 1000 --agent 2/3").unwrap();
        assert_eq!(c.agent, Agent { index: 2, count: 3 });
        let s = c.share();
        assert_eq!((s.concurrency, s.first_worker, s.count), (26, 54, Some(333)));
        assert!((s.rate.unwrap() - 1000.0 * 26.0 / 80.0).abs() < 1e-9);
        let shares: Vec<Share> = (0..3)
            .map(|i| p(&format!("http --target 127.0.0.1:80 --connections 80 --requests 1001 --rate 1000 --agent {i}/3")).unwrap().share())
            .collect();
        assert_eq!(shares.iter().map(|s| s.concurrency).sum::<usize>(), 80);
        assert_eq!(shares.iter().map(|s| s.count.unwrap()).sum::<u64>(), 1001);
        assert!((shares.iter().map(|s| s.rate.unwrap()).sum::<f64>() - 1000.0).abs() < 1e-9);

        let c = p("echo --target 127.0.0.1:80 --connections 10 --concurrency 4 --agent 1/4").unwrap();
        let s = c.share();
        assert_eq!((s.concurrency, s.first_worker, s.count, s.rate), (1, 1, Some(3), None));
        let c = p("echo --target 127.0.0.1:80 --duration 2 --concurrency 4").unwrap();
        assert_eq!(c.share(), Share { concurrency: 4, first_worker: 0, count: None, rate: None });

        // every agent needs a connection (and, count-bounded, something to do)
        bad("http --target 127.0.0.1:80 --connections 2 --agent 0/3");
        bad("http --target 127.0.0.1:80 --connections 8 --requests 2 --agent 0/3");
        bad("echo --target 127.0.0.1:80 --concurrency 2 --duration 1 --agent 2/3");
        bad("echo --target 127.0.0.1:80 --connections 2 --agent 0/3");
        for v in ["3/3", "1", "0/1025", "x/2"] {
            bad(&format!("http --target 127.0.0.1:80 --agent {v}"));
        }
        // the file descriptor limit is for this agent's connections only
        let argv: Vec<String> = "http --target 127.0.0.1:80 --connections 30000 --agent 0/2".split_whitespace().map(String::from).collect();
        assert!(parse(&argv, 1, 20000).is_ok());
    }

    #[test]
    fn start_at_interval_and_stdin() {
        let c = p("http --target 127.0.0.1:80 --duration 2 --warmup-s 1 --start-at 123456789 --interval-ms 250 --watch-stdin").unwrap();
        assert_eq!((c.start_at_ns, c.interval_ms, c.watch_stdin), (Some(123_456_789), 250, true));
        let c = p("echo --target 127.0.0.1:80").unwrap();
        assert_eq!((c.start_at_ns, c.watch_stdin, c.agent), (None, false, Agent::SOLE));
        bad("http --target 127.0.0.1:80 --requests 10 --start-at 5");
        bad("echo --target 127.0.0.1:80 --start-at 5");
        bad("echo --target 127.0.0.1:80 --connections 10 --interval-ms 500");
        bad("http --target 127.0.0.1:80 --start-at 0");
        bad("http --target 127.0.0.1:80 --start-at -5");
        bad("http --target 127.0.0.1:80 --start-at 1.5");
        bad("http --target 127.0.0.1:80 --start-at 9223372036854775808");
        bad("http --target 127.0.0.1:80 --watch-stdin=yes");
        bad("http --target 127.0.0.1:80 --watch-stdin --watch-stdin");
        // a switch does not swallow the next flag
        assert!(p("http --watch-stdin --target 127.0.0.1:80").unwrap().watch_stdin);
        assert!(check_start_at(5_000_000_000, 10_000_000_000).is_ok(), "past: found later");
        assert!(check_start_at(10_000_000_000 + MAX_START_AHEAD_NS, 10_000_000_000).is_ok());
        assert!(check_start_at(10_000_000_001 + MAX_START_AHEAD_NS, 10_000_000_000).is_err());
    }

    #[test]
    fn sources() {
        let c = p("http --target 127.0.0.1:80 --sources 127.0.0.2,127.0.0.3").unwrap();
        assert_eq!(c.sources, Some(vec!["127.0.0.2".parse().unwrap(), "127.0.0.3".parse().unwrap()]));
        let c = p("http --target [::1]:80 --sources ::1").unwrap();
        assert_eq!(c.sources.unwrap().len(), 1);
        assert_eq!(p("http --target 127.0.0.1:80").unwrap().sources, None);
        for v in ["::1", "127.0.0.1,::1", "127.0.0.1,", "localhost", "127.0.0.1,127.0.0.1", "0.0.0.0", "224.0.0.1", "127.0.0.1:5"] {
            bad(&format!("http --target 127.0.0.1:80 --sources {v}"));
        }
        bad("http --target [::1]:80 --sources 127.0.0.1");
    }

    #[test]
    fn fd_limit_is_checked() {
        let argv: Vec<String> = "echo --target 127.0.0.1:80 --concurrency 19990".split_whitespace().map(String::from).collect();
        assert!(parse(&argv, 1, 20000).is_err());
        let argv: Vec<String> = "echo --target 127.0.0.1:80 --concurrency 19000".split_whitespace().map(String::from).collect();
        assert!(parse(&argv, 1, 20000).is_ok());
    }
}
