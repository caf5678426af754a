//! The binary: exit codes, the one stderr line for bad input, the one JSON line on stdout.

mod common;

use std::net::TcpStream;
use std::process::Command;

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
