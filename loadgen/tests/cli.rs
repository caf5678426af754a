//! The binary: exit codes, the one stderr line for bad input, the one JSON line on stdout.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;

const BIN: &str = env!("CARGO_BIN_EXE_corobench-load");

fn run(args: &str) -> (i32, String, String) {
    let out = Command::new(BIN).args(args.split_whitespace()).output().expect("run corobench-load");
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stdout).into(), String::from_utf8_lossy(&out.stderr).into())
}

#[test]
fn bad_input_is_exit_2_and_one_line() {
    for args in [
        "",
        "ping --target 127.0.0.1:1",
        "echo",
        "echo --target localhost:80",
        "echo --target 127.0.0.1",
        "echo --target 127.0.0.1:80 --connections 0",
        "echo --target 127.0.0.1:80 --concurrency -5",
        "echo --target 127.0.0.1:80 --duration 3 --connections 10",
        "echo --target 127.0.0.1:80 --warmup-s 1",
        "echo --target 127.0.0.1:80 --size 0",
        "echo --target 127.0.0.1:80 --uuids 1001",
        "echo --target 127.0.0.1:80 --threads 0",
        "echo --target 127.0.0.1:80 --threads 1 --threads 1",
        "echo --target 127.0.0.1:80 --nope 1",
        "http --target 127.0.0.1:80 --requests 5 --duration 1",
        "http --target 127.0.0.1:80 --size 5",
        "http --target 127.0.0.1:80 --rate -1",
        "http --target 127.0.0.1:80 --timeout-ms 0",
        "http --target 127.0.0.1:80 --connections 100000",
        "http --target 127.0.0.1:80 --rate 0.5",
        "http --target 127.0.0.1:80 --requests 100000 --rate 1",
        "http --target 127.0.0.1:80 --threads 1025",
        "http --target 127.0.0.1:80 --duration 0.05",
        "http --target 127.0.0.1:80 --timeout-ms 600001",
        "http --target 127.0.0.1:80 --interval-ms 50",
        "http --target 127.0.0.1:80 --requests 10 --interval-ms 500",
        "http --target 127.0.0.1:80 --requests 10 --start-at 1000",
        "http --target 127.0.0.1:80 --connections 2 --agent 0/3",
        "http --target 127.0.0.1:80 --agent 3/3",
        "http --target 127.0.0.1:80 --sources ::1",
        "http --target 127.0.0.1:80 --watch-stdin=1",
        "info now",
        "clock --fast",
    ] {
        let (code, out, err) = run(args);
        assert_eq!(code, 2, "{args:?}: exit {code}, stderr {err:?}");
        assert!(out.is_empty(), "{args:?}: stdout {out:?}");
        assert_eq!(err.lines().count(), 1, "{args:?}: stderr {err:?}");
    }
}

fn good_http(mut sock: TcpStream, _: &Ctx) -> u64 {
    use std::io::Read;
    let mut buf = Vec::new();
    let mut n = 0;
    loop {
        while let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).into_owned();
            buf.drain(..end + 4);
            let token = head.split(' ').nth(1).unwrap().trim_start_matches("/ping/").to_string();
            let resp = format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{token}", token.len());
            if !write_all(&mut sock, resp.as_bytes()) {
                return n;
            }
            n += 1;
        }
        let mut chunk = [0u8; 1024];
        match sock.read(&mut chunk) {
            Ok(0) | Err(_) => return n,
            Ok(k) => buf.extend_from_slice(&chunk[..k]),
        }
    }
}

#[test]
fn one_json_line_with_every_field() {
    let server = Server::start(good_http, 0, 0);
    let (code, out, err) = run(&format!("http --target {} --requests 50 --connections 2 --threads 1", server.target()));
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.lines().count(), 1, "{out:?}");
    let v: serde_json::Value = serde_json::from_str(out.trim()).expect("JSON");
    assert_eq!(v["tool"], "corobench-load");
    assert_eq!(v["scenario"], "http");
    assert_eq!(v["target"], server.target());
    assert_eq!(v["mode"], "closed");
    assert_eq!(v["threads"], 1);
    assert_eq!(v["requests"], 50);
    assert_eq!(v["ok"], 50);
    assert_eq!(v["mismatched"], 0);
    assert_eq!(v["connections"], 2);
    for k in ["connect", "reset", "eof", "timeout", "other"] {
        assert_eq!(v["errors"][k], 0, "{k}");
    }
    assert!(v["first_error"].is_null());
    let w = &v["window"];
    assert!(w["end_ns"].as_u64().unwrap() > w["start_ns"].as_u64().unwrap());
    assert_eq!(w["requests"], 50);
    assert_eq!(v["latency_us"]["count"], 50);
    for k in ["mean", "p50", "p90", "p99", "p999", "max"] {
        assert!(v["latency_us"][k].as_f64().unwrap() > 0.0, "{k}");
    }
    assert!(v["histogram"].as_str().unwrap().starts_with("HISTF"));
    assert!(v["cpu"]["user_s"].as_f64().is_some() && v["cpu"]["sys_s"].as_f64().is_some());
}

#[test]
fn a_dead_server_still_exits_0_with_counts() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let (code, out, _) = run(&format!("echo --target 127.0.0.1:{port} --connections 20 --concurrency 2"));
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(out.trim()).expect("JSON");
    assert_eq!(v["errors"]["connect"], 20);
    assert_eq!(v["requests"], 0);
    assert!(v["first_error"].as_str().unwrap().contains("refused"), "{}", v["first_error"]);
}

fn json(line: &str) -> serde_json::Value {
    serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line:?}"))
}

#[test]
fn info_says_what_the_binary_is() {
    let (code, out, err) = run("info");
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.lines().count(), 1);
    let v = json(out.trim());
    assert_eq!(v["tool"], "corobench-load");
    assert_eq!(v["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(v["arch"], std::env::consts::ARCH);
    assert_eq!(v["os"], "linux");
    // built like the tests (loadgen/.cargo/config.toml): statically linked against glibc
    assert_eq!(v["static"], cfg!(target_feature = "crt-static"));
    assert_eq!(v["static"], true, "loadgen/.cargo/config.toml builds a static binary");
    assert_eq!(v.as_object().unwrap().len(), 5);
}

#[test]
fn clock_answers_every_line_with_this_hosts_monotonic_clock() {
    let mut child = Command::new(BIN).arg("clock").stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut last = 0;
    for probe in 0..20 {
        let before = corobench_load::sys::now_ns();
        // one probe at a time: the answer must come without more input (no buffering)
        writeln!(stdin, "probe {probe}").unwrap();
        stdin.flush().unwrap();
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        let after = corobench_load::sys::now_ns();
        let t: u64 = line.trim_end_matches('\n').parse().unwrap_or_else(|_| panic!("{line:?}"));
        assert!(before <= t && t <= after && t >= last, "{before} {t} {after}");
        last = t;
    }
    drop(stdin);
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stdout, &mut rest).unwrap();
    assert!(rest.is_empty(), "{rest:?}");
    assert_eq!(child.wait().unwrap().code(), Some(0));
}

#[test]
fn a_start_time_already_past_is_a_failure() {
    let server = Server::start(good_http, 0, 0);
    let past = corobench_load::sys::now_ns() - 2_000_000_000;
    let (code, out, err) = run(&format!("http --target {} --duration 1 --warmup-s 0.5 --start-at {past}", server.target()));
    assert_eq!(code, 1, "{err}");
    assert!(out.is_empty(), "{out:?}");
    assert_eq!(err.lines().count(), 1, "{err:?}");
    // 2 s ago, and the warm-up should have started 0.5 s before that
    let ms: u64 = err.trim().strip_prefix("corobench-load: start time passed ").and_then(|r| r.strip_suffix(" ms ago")).unwrap().parse().unwrap();
    assert!((2500..10_000).contains(&ms), "{err}");
    // and one far ahead is bad input
    let ahead = corobench_load::sys::now_ns() + 4_000 * 1_000_000_000;
    let (code, _, err) = run(&format!("http --target {} --duration 1 --start-at {ahead}", server.target()));
    assert_eq!(code, 2, "{err}");
}

#[test]
fn interval_lines_come_first_and_add_up_to_the_summary() {
    use base64::Engine as _;
    use hdrhistogram::serialization::Deserializer;
    use hdrhistogram::Histogram;
    let decode = |v: &serde_json::Value| -> Histogram<u64> {
        let bytes = base64::engine::general_purpose::STANDARD.decode(v.as_str().unwrap()).unwrap();
        Deserializer::new().deserialize(&mut &bytes[..]).unwrap()
    };
    let server = Server::start(good_http, 0, 0);
    let (code, out, err) = run(&format!(
        "http --target {} --duration 0.45 --warmup-s 0.1 --interval-ms 100 --connections 4 --rate 2000 --threads 2",
        server.target()
    ));
    assert_eq!(code, 0, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 6, "{out}");
    let summary = json(lines[5]);
    assert_eq!(summary["tool"], "corobench-load");
    assert_eq!(summary["agent"], serde_json::json!([0, 1]));
    assert_eq!(summary["share"], serde_json::json!({"connections": 4, "requests": null, "rate": 2000.0}));
    assert_eq!(summary["interval_ms"], 100);
    let w = &summary["window"];
    let mut merged: Histogram<u64> = Histogram::new_with_bounds(1, 3_600_000_000_000, 3).unwrap();
    let mut sums = [0u64; 5];
    let mut start = w["start_ns"].as_u64().unwrap();
    for (k, line) in lines[..5].iter().enumerate() {
        assert!(line.starts_with(&format!("{{\"interval\":{k},")), "{line}");
        let v = json(line);
        assert_eq!(v["start_ns"].as_u64().unwrap(), start);
        start = v["end_ns"].as_u64().unwrap();
        for (i, key) in ["requests", "ok", "mismatched", "connections"].iter().enumerate() {
            sums[i] += v[key].as_u64().unwrap();
        }
        sums[4] += v["errors"].as_object().unwrap().values().map(|e| e.as_u64().unwrap()).sum::<u64>();
        let h = decode(&v["histogram"]);
        assert_eq!(h.len(), v["latency_us"]["count"].as_u64().unwrap());
        merged.add(&h).unwrap();
    }
    assert_eq!(start, w["end_ns"].as_u64().unwrap(), "the last interval ends with the window");
    let errors: u64 = w["errors"].as_object().unwrap().values().map(|e| e.as_u64().unwrap()).sum();
    let want = [&w["requests"], &w["ok"], &w["mismatched"], &w["connections"]].map(|v| v.as_u64().unwrap());
    assert_eq!(sums, [want[0], want[1], want[2], want[3], errors]);
    let total = decode(&summary["histogram"]);
    assert_eq!(merged, total, "the summary's histogram is the merge of the intervals'");
    assert_eq!(total.len(), summary["latency_us"]["count"].as_u64().unwrap());
    assert!(total.len() > 100);
}

/// The harness's side of an agent: read its lines as they come, then let its stdin go.
#[test]
fn lines_stream_and_stdin_eof_stops_the_load() {
    let server = Server::start(good_http, 0, 0);
    let mut child = Command::new(BIN)
        .args(format!("http --target {} --duration 60 --interval-ms 100 --connections 3 --watch-stdin", server.target()).split_whitespace())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    for k in 0..3 {
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        assert!(line.starts_with(&format!("{{\"interval\":{k},")), "{line:?}");
    }
    let closed = Instant::now();
    drop(stdin);
    let status = child.wait().unwrap();
    assert!(closed.elapsed() < Duration::from_secs(2), "{:?} to stop", closed.elapsed());
    assert_eq!(status.code(), Some(4));
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    assert_eq!(err, "corobench-load: stdin closed: load stopped\n");
    // whole lines only, and no summary: the load did not end
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stdout, &mut rest).unwrap();
    assert!(rest.lines().all(|l| l.starts_with("{\"interval\":") && l.ends_with('}')), "{rest}");
    // the server saw its connections end
    assert_eq!(server.settle().0, 3);
}

#[test]
fn without_the_flag_stdin_is_ignored_and_with_it_an_empty_stdin_stops_at_once() {
    let server = Server::start(good_http, 0, 0);
    // `run` gives the child an empty stdin (/dev/null)
    let (code, out, err) = run(&format!("http --target {} --duration 0.2 --connections 2", server.target()));
    assert_eq!(code, 0, "{err}");
    assert!(json(out.lines().last().unwrap())["ok"].as_u64().unwrap() > 0);
    let (code, _, err) = run(&format!("http --target {} --duration 30 --connections 2 --watch-stdin", server.target()));
    assert_eq!((code, err.as_str()), (4, "corobench-load: stdin closed: load stopped\n"));
}

#[test]
fn pin_sets_the_affinity_before_anything_runs_and_refuses_bad_lists() {
    let (code, out, _) = run("--pin 0 info");
    assert_eq!(code, 0);
    assert!(out.contains("\"tool\":\"corobench-load\""));
    for bad in ["--pin", "--pin x info", "--pin 3-1 info", "--pin 5000 info"] {
        let (code, out, err) = run(bad);
        assert_eq!(code, 2, "{bad}: {err}");
        assert!(out.is_empty() && err.lines().count() == 1, "{bad}: {err}");
    }
}
