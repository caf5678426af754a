//! http mode against fake servers: right answers, wrong status/body/Content-Length, split and
//! trailing bytes, closes, resets, stalls; count- and duration-bounded runs; the open loop.

mod common;

use std::io::Read;
use std::net::TcpStream;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use common::*;
use corobench_load::stats::Cause;

const LIMIT: Duration = Duration::from_secs(20);

/// Read one request head (up to the blank line); returns its path, or None at EOF.
fn read_request(sock: &mut TcpStream, buf: &mut Vec<u8>) -> Option<String> {
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).into_owned();
            buf.drain(..end + 4);
            let line = head.lines().next().unwrap_or("");
            let mut parts = line.split(' ');
            assert_eq!(parts.next(), Some("GET"), "{head:?}");
            let path = parts.next().unwrap_or("").to_string();
            assert_eq!(parts.next(), Some("HTTP/1.1"), "{head:?}");
            assert!(head.contains("\r\nHost: 127.0.0.1:"), "{head:?}");
            return Some(path);
        }
        let mut chunk = [0u8; 4096];
        match sock.read(&mut chunk) {
            Ok(0) | Err(_) => return None,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
}

fn token_of(path: &str) -> &str {
    let t = path.strip_prefix("/ping/").expect("a /ping/ path");
    assert!(!t.is_empty() && t.len() <= 64 && t.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_'), "{t:?}");
    t
}

fn ok_response(token: &str) -> Vec<u8> {
    format!("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nServer: fake\r\nContent-Length: {}\r\n\r\n{token}", token.len()).into_bytes()
}

/// Serve until EOF with `respond(token, ctx, n)`.
fn serve(mut sock: TcpStream, ctx: &Ctx, respond: fn(&str, &Ctx, u64) -> Vec<u8>) -> u64 {
    let mut buf = Vec::new();
    let mut n = 0;
    while let Some(path) = read_request(&mut sock, &mut buf) {
        if !write_all(&mut sock, &respond(token_of(&path), ctx, n)) {
            break;
        }
        n += 1;
    }
    n
}

fn good(sock: TcpStream, ctx: &Ctx) -> u64 {
    serve(sock, ctx, |t, _, _| ok_response(t))
}

#[test]
fn exactly_n_requests_over_c_connections() {
    let server = Server::start(good, 0, 0);
    let (_, r) = load(&format!("http --target {} --requests 1001 --connections 7 --threads 2", server.target()), LIMIT);
    let st = &r.stats;
    assert_eq!((st.connections, st.requests, st.ok, st.mismatched), (7, 1001, 1001, 0), "{}", first_error(&r));
    assert_eq!(errors(&r), [0; 5]);
    assert_eq!(server.settle(), (7, 1001));
    assert_eq!(st.hist.len(), 1001);
}

#[test]
fn fewer_requests_than_connections() {
    let server = Server::start(good, 0, 0);
    let (_, r) = load(&format!("http --target {} --requests 3 --connections 10", server.target()), LIMIT);
    assert_eq!((r.stats.connections, r.stats.ok), (3, 3));
    assert_eq!(server.settle(), (3, 3));
}

#[test]
fn tokens_differ_per_request() {
    fn unique(mut sock: TcpStream, _: &Ctx) -> u64 {
        static SEEN: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
        let mut buf = Vec::new();
        let mut n = 0;
        while let Some(path) = read_request(&mut sock, &mut buf) {
            let t = token_of(&path).to_string();
            {
                let mut seen = SEEN.lock().unwrap();
                assert!(!seen.contains(&t), "token {t} sent twice");
                seen.push(t.clone());
            }
            if !write_all(&mut sock, &ok_response(&t)) {
                break;
            }
            n += 1;
        }
        n
    }
    let server = Server::start(unique, 0, 0);
    let (_, r) = load(&format!("http --target {} --requests 3000 --connections 6", server.target()), LIMIT);
    assert_eq!(r.stats.ok, 3000, "{}", first_error(&r));
}

#[test]
fn wrong_status_body_and_length_are_mismatches() {
    fn status(sock: TcpStream, ctx: &Ctx) -> u64 {
        serve(sock, ctx, |t, _, _| format!("HTTP/1.1 404 Not Found\r\nContent-Length: {}\r\n\r\n{t}", t.len()).into_bytes())
    }
    fn body(sock: TcpStream, ctx: &Ctx) -> u64 {
        serve(sock, ctx, |t, _, _| {
            let wrong: String = t.chars().map(|c| if c == 'x' { 'y' } else { 'x' }).collect();
            ok_response(&wrong)
        })
    }
    fn length(sock: TcpStream, ctx: &Ctx) -> u64 {
        serve(sock, ctx, |t, _, _| {
            let longer = format!("{t}!");
            ok_response(&longer)
        })
    }
    fn missing_length(sock: TcpStream, ctx: &Ctx) -> u64 {
        serve(sock, ctx, |t, _, _| format!("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\n{t}").into_bytes())
    }
    for (name, handler, want, conns) in [
        ("status", status as Handler, "status 404", 1),
        ("body", body, "body differs", 1),
        ("length", length, "Content-Length", 1),
        // no framing: each response ends its connection
        ("missing length", missing_length, "without Content-Length", 5),
    ] {
        let server = Server::start(handler, 0, 0);
        let (_, r) = load(&format!("http --target {} --requests 5 --connections 1", server.target()), LIMIT);
        let st = &r.stats;
        assert_eq!((st.requests, st.ok, st.mismatched), (5, 0, 5), "{name}");
        assert_eq!(st.connections, conns, "{name}");
        assert!(first_error(&r).contains(want), "{name}: {}", first_error(&r));
        assert!(st.hist.is_empty(), "{name}");
        assert_eq!(server.settle().0, conns, "{name}");
    }
}

#[test]
fn response_split_over_many_writes() {
    fn dribble(mut sock: TcpStream, _: &Ctx) -> u64 {
        let mut buf = Vec::new();
        let mut n = 0;
        while let Some(path) = read_request(&mut sock, &mut buf) {
            for piece in ok_response(token_of(&path)).chunks(9) {
                if !write_all(&mut sock, piece) {
                    return n;
                }
                thread::sleep(Duration::from_micros(300));
            }
            n += 1;
        }
        n
    }
    let server = Server::start(dribble, 0, 0);
    let (_, r) = load(&format!("http --target {} --requests 20 --connections 3", server.target()), LIMIT);
    assert_eq!((r.stats.ok, r.stats.mismatched, r.stats.connections), (20, 0, 3), "{}", first_error(&r));
}

#[test]
fn extra_bytes_are_a_mismatch_and_the_client_reconnects() {
    fn extra(sock: TcpStream, ctx: &Ctx) -> u64 {
        serve(sock, ctx, |t, _, _| [ok_response(t), b"HTTP/1.1 200 OK\r\n".to_vec()].concat())
    }
    let server = Server::start(extra, 0, 0);
    let (_, r) = load(&format!("http --target {} --requests 4 --connections 1", server.target()), LIMIT);
    assert_eq!((r.stats.requests, r.stats.mismatched, r.stats.connections), (4, 4, 4));
    assert!(first_error(&r).contains("unexpected bytes"), "{}", first_error(&r));
    assert_eq!(server.settle(), (4, 4));
}

#[test]
fn server_close_is_an_error_and_the_client_reconnects() {
    fn one_then_close(mut sock: TcpStream, _: &Ctx) -> u64 {
        let mut buf = Vec::new();
        match read_request(&mut sock, &mut buf) {
            Some(path) if write_all(&mut sock, &ok_response(token_of(&path))) => 1,
            _ => 0,
        }
    }
    let server = Server::start(one_then_close, 0, 0);
    let (_, r) = load(&format!("http --target {} --requests 10 --connections 1", server.target()), LIMIT);
    let e = errors(&r);
    // every second attempt meets the closed connection (eof, or reset when the write raced the close)
    assert_eq!(r.stats.ok, 5, "{e:?} {}", first_error(&r));
    assert_eq!(e[Cause::Eof as usize] + e[Cause::Reset as usize], 5, "{e:?}");
    assert_eq!(r.stats.connections, 5);
    assert_eq!(server.settle(), (5, 5));
}

#[test]
fn reset_is_counted_as_reset() {
    fn rst(mut sock: TcpStream, _: &Ctx) -> u64 {
        let mut buf = Vec::new();
        if read_request(&mut sock, &mut buf).is_some() {
            reset(sock);
        }
        0
    }
    let server = Server::start(rst, 0, 0);
    let (_, r) = load(&format!("http --target {} --requests 4 --connections 2", server.target()), LIMIT);
    assert_eq!(r.stats.requests, 0);
    assert_eq!(errors(&r)[Cause::Reset as usize], 4, "{:?} {}", errors(&r), first_error(&r));
}

#[test]
fn stall_past_the_timeout() {
    fn stall(mut sock: TcpStream, _: &Ctx) -> u64 {
        let mut buf = Vec::new();
        if read_request(&mut sock, &mut buf).is_some() {
            let _ = sock.set_read_timeout(Some(Duration::from_secs(5)));
            let _ = sock.read(&mut [0u8; 1]);
        }
        0
    }
    let server = Server::start(stall, 0, 0);
    let started = Instant::now();
    let (_, r) = load(&format!("http --target {} --requests 4 --connections 2 --timeout-ms 150", server.target()), LIMIT);
    assert_eq!(errors(&r)[Cause::Timeout as usize], 4, "{}", first_error(&r));
    assert!(first_error(&r).starts_with("timeout"), "{}", first_error(&r));
    // two rounds of 150 ms on each connection
    let took = started.elapsed();
    assert!(took >= Duration::from_millis(300) && took < Duration::from_secs(10), "{took:?}");
}

#[test]
fn duration_mode_with_warmup_counts_match_the_server() {
    let server = Server::start(good, 0, 0);
    let (_, r) = load(&format!("http --target {} --duration 0.5 --warmup-s 0.25 --connections 8", server.target()), LIMIT);
    let st = &r.stats;
    assert!(st.ok > 0 && st.ok == st.requests, "{}", first_error(&r));
    assert_eq!(r.window_end - r.window_start, 500_000_000);
    assert!(st.win_ok > 0 && st.win_ok < st.ok);
    assert_eq!(st.win_connections, 0, "connections opened in the warm-up");
    assert_eq!(st.connections, 8);
    assert_eq!(server.settle(), (8, st.requests));
}

/// One response of the run held back 300 ms: in the open loop the requests scheduled during
/// the stall are late and their latency says so (counted from their scheduled time); the closed
/// loop sees one slow request only.
#[test]
fn open_loop_counts_the_stall_for_every_request_scheduled_in_it() {
    fn stall_once(sock: TcpStream, ctx: &Ctx) -> u64 {
        serve(sock, ctx, |t, _, n| {
            if n == 10 {
                thread::sleep(Duration::from_millis(300));
            }
            ok_response(t)
        })
    }
    let server = Server::start(stall_once, 0, 0);
    let started = Instant::now();
    let (_, open) = load(&format!("http --target {} --requests 60 --connections 1 --rate 100", server.target()), LIMIT);
    let took = started.elapsed();
    assert_eq!(open.stats.ok, 60, "{}", first_error(&open));
    // 60 requests at 100/s: 0.59 s of schedule (+ the stall is absorbed by catching up)
    assert!(took >= Duration::from_millis(580), "{took:?}");
    let slow_open = open.stats.hist.count_between(100_000_000, 10_000_000_000);
    assert!(slow_open >= 15, "only {slow_open} requests over 100 ms in the open loop");
    assert!(open.stats.hist.max() >= 290_000_000);

    let server = Server::start(stall_once, 0, 0);
    let (_, closed) = load(&format!("http --target {} --requests 60 --connections 1", server.target()), LIMIT);
    let slow_closed = closed.stats.hist.count_between(100_000_000, 10_000_000_000);
    // one, or a few more when this busy machine stalls the test itself
    assert!((1..=3).contains(&slow_closed), "{slow_closed} requests over 100 ms in the closed loop");
}

#[test]
fn open_loop_keeps_the_rate() {
    let server = Server::start(good, 0, 0);
    let started = Instant::now();
    let (_, r) = load(&format!("http --target {} --requests 400 --connections 4 --rate 2000 --threads 2", server.target()), LIMIT);
    let took = started.elapsed();
    assert_eq!(r.stats.ok, 400, "{}", first_error(&r));
    // the last request is scheduled at 399/2000 s = 0.1995 s
    assert!(took >= Duration::from_millis(199), "{took:?}");
    assert!(took < Duration::from_secs(5), "{took:?}");
}

#[test]
fn open_loop_duration_mode() {
    let server = Server::start(good, 0, 0);
    let (_, r) = load(&format!("http --target {} --duration 0.5 --warmup-s 0.1 --connections 5 --rate 1000", server.target()), LIMIT);
    let st = &r.stats;
    // 600 slots in 0.6 s; none starts after the stop, so a worker that is behind then (a busy
    // machine) leaves its last slots out
    assert!(st.requests >= 250 && st.requests <= 600, "{}", st.requests);
    assert!(st.win_ok > 0 && st.win_ok < st.requests, "{}", st.win_ok);
    assert_eq!(st.ok, st.requests, "{}", first_error(&r));
    assert_eq!(server.settle(), (5, st.requests));
}

#[test]
fn intervals_add_up_to_the_window_closed_and_open_loop() {
    let server = Server::start(good, 0, 0);
    for extra in ["", "--rate 2000"] {
        let (cfg, r) = load(
            &format!("http --target {} --duration 0.55 --warmup-s 0.1 --connections 6 --interval-ms 100 {extra}", server.target()),
            LIMIT,
        );
        assert_eq!(r.stats.ok, r.stats.requests, "{extra}: {}", first_error(&r));
        // 0.55 s in 100 ms intervals: five whole and a last one of 50 ms
        assert_eq!(r.intervals.len(), 6, "{extra}");
        assert_eq!(r.intervals[5].end_ns - r.intervals[5].start_ns, 50_000_000);
        check_intervals(&cfg, &r);
        assert!(r.intervals.iter().filter(|i| i.ok > 0).count() >= 4, "{extra}: {:?}", r.intervals);
    }
}

/// Little's law: C connections always busy at λ exchanges/s each take C/λ on average. The
/// client's latency runs from the send to the read that completed the reply, including the time
/// a reply waited while the client thread served other connections, so the identity holds for
/// what it reports (wrk's latency, which leaves that wait out, would come out lower).
#[test]
fn little_law_holds_in_a_closed_loop() {
    let server = Server::start(good, 0, 0);
    let c = 8;
    let (_, r) = load(&format!("http --target {} --duration 1 --warmup-s 0.2 --connections {c} --threads 2", server.target()), LIMIT);
    let st = &r.stats;
    assert_eq!(st.ok, st.requests, "{}", first_error(&r));
    let seconds = (r.window_end - r.window_start) as f64 / 1e9;
    let lambda = st.win_ok as f64 / seconds;
    let mean_ns = st.hist.mean();
    let implied_ns = c as f64 / lambda * 1e9;
    assert!(st.win_ok > 100, "only {} exchanges", st.win_ok);
    assert!((mean_ns / implied_ns - 1.0).abs() < 0.15, "mean {mean_ns:.0} ns, C/λ {implied_ns:.0} ns ({c} at {lambda:.0}/s)");
    let p50 = st.hist.value_at_quantile(0.5) as f64;
    assert!(p50 <= 2.0 * mean_ns, "p50 {p50} mean {mean_ns}");
    assert!(st.hist.value_at_quantile(0.5) <= st.hist.value_at_quantile(0.99));
    assert!(st.hist.value_at_quantile(0.99) <= st.hist.max());
}

/// Remembers every token and which connection sent it.
static AGENT_TOKENS: std::sync::Mutex<Vec<(u64, String)>> = std::sync::Mutex::new(Vec::new());

fn record_tokens(mut sock: TcpStream, ctx: &Ctx) -> u64 {
    let mut buf = Vec::new();
    let mut n = 0;
    while let Some(path) = read_request(&mut sock, &mut buf) {
        let t = token_of(&path).to_string();
        AGENT_TOKENS.lock().unwrap().push((ctx.index, t.clone()));
        if !write_all(&mut sock, &ok_response(&t)) {
            break;
        }
        n += 1;
    }
    n
}

#[test]
fn agents_split_the_totals_and_keep_their_tokens_apart() {
    let server = Server::start(record_tokens, 0, 0);
    let cmds: Vec<String> =
        (0..3).map(|i| format!("http --target {} --requests 1001 --connections 7 --agent {i}/3", server.target())).collect();
    let reports = load_agents(&cmds, LIMIT);
    let got: Vec<(u64, u64, usize)> = reports.iter().map(|r| (r.stats.connections, r.stats.ok, r.share.concurrency)).collect();
    assert_eq!(got, [(3, 334, 3), (2, 334, 2), (2, 333, 2)]);
    for r in &reports {
        assert_eq!(r.stats.ok, r.stats.requests, "{}", first_error(r));
    }
    assert_eq!(server.settle(), (7, 1001));
    let seen = AGENT_TOKENS.lock().unwrap();
    let mut tokens: Vec<&str> = seen.iter().map(|(_, t)| t.as_str()).collect();
    tokens.sort_unstable();
    tokens.dedup();
    assert_eq!(tokens.len(), 1001, "a token was sent twice");
    // agent I's tokens encode sequence numbers ≡ I (mod 3): each connection keeps one residue,
    // and the residues' counts are the agents' shares
    let mut by_residue = [0u64; 3];
    for conn in 0..7 {
        let residues: Vec<u64> = seen.iter().filter(|(c, _)| *c == conn).map(|(_, t)| token_seq(t) % 3).collect();
        assert!(residues.windows(2).all(|w| w[0] == w[1]), "connection {conn}: {residues:?}");
        by_residue[residues[0] as usize] += residues.len() as u64;
    }
    assert_eq!(by_residue, [334, 334, 333]);
}

#[test]
fn start_at_opens_the_connections_first_and_measures_from_the_start_time() {
    static FIRST_REQUEST: AtomicU64 = AtomicU64::new(u64::MAX);
    fn note_first(sock: TcpStream, ctx: &Ctx) -> u64 {
        serve(sock, ctx, |t, _, _| {
            FIRST_REQUEST.fetch_min(corobench_load::sys::now_ns(), Ordering::AcqRel);
            ok_response(t)
        })
    }
    let server = Server::start(note_first, 0, 0);
    let start_at = corobench_load::sys::now_ns() + 1_500_000_000;
    let t0 = start_at - 300_000_000;
    let target = server.target();
    let run = thread::spawn(move || {
        load(
            &format!("http --target {target} --connections 4 --duration 0.4 --warmup-s 0.3 --interval-ms 100 --start-at {start_at}"),
            LIMIT,
        )
    });
    // before the load's start (t0 = start − warm-up) the connections are open and idle
    thread::sleep(Duration::from_millis(400));
    assert!(corobench_load::sys::now_ns() < t0, "the test itself was too slow to look before the start");
    assert_eq!(server.counts.accepted.load(Ordering::Acquire), 4);
    assert_eq!(FIRST_REQUEST.load(Ordering::Acquire), u64::MAX, "a request before the start");
    let (cfg, r) = run.join().unwrap();
    let st = &r.stats;
    assert_eq!(st.ok, st.requests, "{}", first_error(&r));
    assert!(FIRST_REQUEST.load(Ordering::Acquire) >= t0, "the load began before NS − W");
    assert_eq!((r.window_start, r.window_end), (start_at, start_at + 400_000_000));
    assert_eq!((st.connections, st.win_connections), (4, 0));
    assert!(st.win_ok > 0 && st.win_ok < st.ok);
    assert_eq!(r.intervals.len(), 4);
    assert_eq!(r.intervals[0].start_ns, start_at);
    check_intervals(&cfg, &r);
    assert_eq!(server.settle(), (4, st.requests));
}

#[test]
fn open_loop_rate_is_shared_by_the_agents() {
    let server = Server::start(good, 0, 0);
    // 5 connections over 2 agents (3 + 2) at 1000/s: 600 and 400 requests/s, 200 per connection
    let cmds: Vec<String> = (0..2)
        .map(|i| format!("http --target {} --requests 300 --connections 5 --rate 1000 --agent {i}/2", server.target()))
        .collect();
    let started = Instant::now();
    let reports = load_agents(&cmds, LIMIT);
    let took = started.elapsed();
    let shares: Vec<(usize, u64, f64)> = reports.iter().map(|r| (r.share.concurrency, r.share.count.unwrap(), r.share.rate.unwrap())).collect();
    assert_eq!(shares, [(3, 150, 600.0), (2, 150, 400.0)]);
    assert_eq!(reports.iter().map(|r| r.stats.ok).sum::<u64>(), 300);
    // each connection sends every 5 ms: agent 1's 75 per connection take 0.37 s
    assert!(took >= Duration::from_millis(370), "{took:?}");
    assert_eq!(server.settle(), (5, 300));
}

#[test]
fn sources_spread_the_connections() {
    static PEERS: std::sync::Mutex<Vec<std::net::IpAddr>> = std::sync::Mutex::new(Vec::new());
    fn note_peer(sock: TcpStream, ctx: &Ctx) -> u64 {
        PEERS.lock().unwrap().push(sock.peer_addr().unwrap().ip());
        good(sock, ctx)
    }
    let server = Server::start(note_peer, 0, 0);
    let (_, r) = load(&format!("http --target {} --requests 40 --connections 4 --sources 127.0.0.2,127.0.0.3", server.target()), LIMIT);
    assert_eq!(r.stats.ok, 40, "{}", first_error(&r));
    assert_eq!(r.sources.len(), 2);
    server.settle();
    let mut peers = PEERS.lock().unwrap().clone();
    peers.sort();
    let want: Vec<std::net::IpAddr> = ["127.0.0.2", "127.0.0.2", "127.0.0.3", "127.0.0.3"].iter().map(|a| a.parse().unwrap()).collect();
    assert_eq!(peers, want);
}
