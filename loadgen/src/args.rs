//! Command line (docs/loadgen.md, "Invocation"): parsed strictly, every problem is one line.

use std::net::SocketAddr;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scenario {
    Echo,
    Http,
}

impl Scenario {
    pub fn name(self) -> &'static str {
        match self {
            Scenario::Echo => "echo",
            Scenario::Http => "http",
        }
    }
}

/// What ends the load.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Bound {
    /// echo: K connections in total; http: N requests in total.
    Count(u64),
    /// Seconds of measured load after `warmup_s`.
    Duration(f64),
}

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
}

pub const USAGE: &str = "usage: corobench-load echo|http --target HOST:PORT [flags] (see docs/loadgen.md)";

const ECHO_FLAGS: &[&str] = &[
    "target", "connections", "duration", "concurrency", "per-connection", "size", "uuids", "rate", "warmup-s",
    "threads", "timeout-ms",
];
const HTTP_FLAGS: &[&str] = &["target", "connections", "duration", "requests", "rate", "warmup-s", "threads", "timeout-ms"];

pub const MAX_SIZE: usize = 1 << 20;
pub const MAX_UUIDS: usize = 1000;
const MAX_SECONDS: f64 = 1e6;
const MAX_RATE: f64 = 1e9;

/// Parse argv (without the program name). `cpus` is the default thread count; `fd_limit` the
/// open-file limit the connections in flight must fit in. Err is the one line for stderr.
pub fn parse(argv: &[String], cpus: usize, fd_limit: u64) -> Result<Config, String> {
    let Some(first) = argv.first() else {
        return Err(format!("missing scenario; {USAGE}"));
    };
    let scenario = match first.as_str() {
        "echo" => Scenario::Echo,
        "http" => Scenario::Http,
        other => return Err(format!("unknown scenario {other:?}; {USAGE}")),
    };
    let known = if scenario == Scenario::Echo { ECHO_FLAGS } else { HTTP_FLAGS };
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
        let Some(&flag) = known.iter().find(|f| **f == name) else {
            return Err(format!("unknown flag --{name} for {}", scenario.name()));
        };
        if given.iter().any(|(f, _)| *f == flag) {
            return Err(format!("--{flag} given more than once"));
        }
        let value = match inline {
            Some(v) => v,
            None => {
                i += 1;
                match argv.get(i) {
                    Some(v) if !v.starts_with("--") => v.clone(),
                    _ => return Err(format!("--{flag} needs a value")),
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
        Some(v) => count("threads", v, usize::MAX as u64)? as usize,
        None => cpus.max(1),
    };
    let timeout_ms = match get("timeout-ms") {
        Some(v) => count("timeout-ms", v, 86_400_000)?,
        None => 5000,
    };
    let rate = get("rate").map(|v| positive_seconds_like("rate", v, MAX_RATE)).transpose()?;
    let duration = get("duration").map(|v| positive_seconds_like("duration", v, MAX_SECONDS)).transpose()?;
    let warmup = get("warmup-s").map(|v| non_negative_seconds("warmup-s", v)).transpose()?;

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
    if warmup.is_some() && matches!(bound, Bound::Count(_)) {
        return Err(format!(
            "--warmup-s needs a duration-bounded run (not --{})",
            if scenario == Scenario::Echo { "connections" } else { "requests" }
        ));
    }
    // Each connection in flight is a socket; beyond the open-file limit connect would fail
    // with EMFILE in the middle of the run, so refuse the parameters up front.
    let reserve = 32u64;
    if concurrency as u64 + reserve > fd_limit {
        return Err(format!(
            "{} connections in flight need more file descriptors than the limit {fd_limit} (ulimit -n) allows",
            concurrency
        ));
    }
    Ok(Config {
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
    })
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

fn positive_seconds_like(flag: &str, v: &str, max: f64) -> Result<f64, String> {
    let x = number(flag, v)?;
    if x <= 0.0 {
        return Err(format!("--{flag} must be positive, got {v}"));
    }
    if x > max {
        return Err(format!("--{flag} {v} is too large (at most {max})"));
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
    fn fd_limit_is_checked() {
        let argv: Vec<String> = "echo --target 127.0.0.1:80 --concurrency 19990".split_whitespace().map(String::from).collect();
        assert!(parse(&argv, 1, 20000).is_err());
        let argv: Vec<String> = "echo --target 127.0.0.1:80 --concurrency 19000".split_whitespace().map(String::from).collect();
        assert!(parse(&argv, 1, 20000).is_ok());
    }
}
