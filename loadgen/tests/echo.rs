//! echo mode against fake servers that answer right and wrong in every way the client must
//! notice.

mod common;

use std::net::TcpStream;
use std::thread;
use std::time::Duration;

use common::*;
use corobench_load::stats::Cause;

const LIMIT: Duration = Duration::from_secs(20);

/// Serve until EOF: read S bytes, reply with `reply(request, ctx, n)`; count full replies.
fn serve(mut sock: TcpStream, ctx: &Ctx, reply: fn(&[u8], &Ctx, u64) -> Vec<u8>) -> u64 {
    let mut req = vec![0u8; ctx.size];
    let mut n = 0;
    while read_full(&mut sock, &mut req) {
        if !write_all(&mut sock, &reply(&req, ctx, n)) {
            break;
        }
        n += 1;
    }
    n
}

fn good(sock: TcpStream, ctx: &Ctx) -> u64 {
    serve(sock, ctx, |req, ctx, _| [req, &uuid_lines(ctx.uuids)].concat())
}

#[test]
fn correct_server_is_all_ok_and_counts_match() {
    let server = Server::start(good, 17, 5);
    let (_, r) = load(&format!("echo --target {} --connections 500 --concurrency 20 --threads 2", server.target()), LIMIT);
    let st = &r.stats;
    assert_eq!((st.connections, st.requests, st.ok, st.mismatched), (500, 500, 500, 0));
    assert_eq!(errors(&r), [0; 5], "{}", first_error(&r));
    assert_eq!(server.settle(), (500, 500));
    assert_eq!((st.win_connections, st.win_requests, st.win_ok), (500, 500, 500));
    assert_eq!(st.hist.len(), 500);
    assert!(r.window_end > r.window_start);
}

#[test]
fn several_exchanges_per_connection_and_odd_sizes() {
    for (size, uuids, per) in [(1, 0, 3), (5000, 3, 4), (200_000, 1, 2)] {
        let server = Server::start(good, size, uuids);
        let (_, r) = load(
            &format!(
                "echo --target {} --connections 30 --concurrency 7 --per-connection {per} --size {size} --uuids {uuids}",
                server.target()
            ),
            LIMIT,
        );
        let st = &r.stats;
        assert_eq!((st.connections, st.requests, st.ok), (30, 30 * per, 30 * per), "size {size}: {}", first_error(&r));
        assert_eq!(server.settle(), (30, 30 * per));
    }
}

#[test]
fn every_request_differs() {
    // the server remembers every request it saw: none may repeat
    fn remember(mut sock: TcpStream, ctx: &Ctx) -> u64 {
        static SEEN: std::sync::Mutex<Vec<Vec<u8>>> = std::sync::Mutex::new(Vec::new());
        let mut req = vec![0u8; ctx.size];
        let mut n = 0;
        while read_full(&mut sock, &mut req) {
            {
                let mut seen = SEEN.lock().unwrap();
                assert!(!seen.contains(&req), "request {:?} sent twice", String::from_utf8_lossy(&req));
                seen.push(req.clone());
            }
            let reply = [&req[..], &uuid_lines(ctx.uuids)].concat();
            if !write_all(&mut sock, &reply) {
                break;
            }
            n += 1;
        }
        n
    }
    let server = Server::start(remember, 17, 1);
    let (_, r) = load(&format!("echo --target {} --connections 200 --concurrency 10 --per-connection 3 --uuids 1", server.target()), LIMIT);
    assert_eq!(r.stats.ok, 600, "{}", first_error(&r));
    assert_eq!(server.settle(), (200, 600));
}

#[test]
fn one_wrong_echoed_byte_is_a_mismatch() {
    fn wrong(sock: TcpStream, ctx: &Ctx) -> u64 {
        serve(sock, ctx, |req, ctx, n| {
            let mut r = [req, &uuid_lines(ctx.uuids)].concat();
            if ctx.index == 3 && n == 1 {
                r[5] ^= 0x20;
            }
            r
        })
    }
    let server = Server::start(wrong, 17, 5);
    let (_, r) = load(&format!("echo --target {} --connections 10 --concurrency 1 --per-connection 2", server.target()), LIMIT);
    let st = &r.stats;
    assert_eq!((st.requests, st.ok, st.mismatched), (20, 19, 1));
    assert_eq!(errors(&r), [0; 5]);
    let e = first_error(&r);
    assert!(e.contains("mismatch") && e.contains("reply byte 5"), "{e}");
    // the framing held: the connection went on to its second exchange
    assert_eq!(server.settle(), (10, 20));
}

#[test]
fn bad_uuids_are_mismatches() {
    fn v1(sock: TcpStream, ctx: &Ctx) -> u64 {
        serve(sock, ctx, |req, _, _| {
            let mut r = req.to_vec();
            r.extend_from_slice(b"\n0f8fad5b-d9cb-169f-a165-70867728950e"); // version 1
            r
        })
    }
    fn upper(sock: TcpStream, ctx: &Ctx) -> u64 {
        serve(sock, ctx, |req, _, _| [req, uuid_lines(1).to_ascii_uppercase().as_slice()].concat())
    }
    fn no_newline(sock: TcpStream, ctx: &Ctx) -> u64 {
        serve(sock, ctx, |req, _, _| {
            let mut r = [req, &uuid_lines(1)].concat();
            r[req.len()] = b' ';
            r
        })
    }
    for (name, handler) in [("version 1", v1 as Handler), ("uppercase", upper), ("no newline", no_newline)] {
        let server = Server::start(handler, 17, 1);
        let (_, r) = load(&format!("echo --target {} --connections 5 --concurrency 2 --uuids 1", server.target()), LIMIT);
        assert_eq!((r.stats.ok, r.stats.mismatched), (0, 5), "{name}");
        assert!(first_error(&r).contains("UUID line 0"), "{name}: {}", first_error(&r));
    }
}

#[test]
fn duplicate_uuids_are_mismatches() {
    fn dup(sock: TcpStream, ctx: &Ctx) -> u64 {
        serve(sock, ctx, |req, _, _| {
            let one = uuid_lines(1);
            [req, &uuid_lines(2), &one, &uuid_lines(1), &one].concat()
        })
    }
    let server = Server::start(dup, 17, 5);
    let (_, r) = load(&format!("echo --target {} --connections 4 --concurrency 2", server.target()), LIMIT);
    assert_eq!((r.stats.ok, r.stats.mismatched), (0, 4));
    assert!(first_error(&r).contains("UUID lines 2 and 4"), "{}", first_error(&r));
}

#[test]
fn extra_bytes_are_a_mismatch_and_end_the_connection() {
    fn extra(sock: TcpStream, ctx: &Ctx) -> u64 {
        serve(sock, ctx, |req, ctx, _| [req, &uuid_lines(ctx.uuids), b"!"].concat())
    }
    let server = Server::start(extra, 17, 2);
    let (_, r) = load(&format!("echo --target {} --connections 3 --concurrency 1 --per-connection 3 --uuids 2", server.target()), LIMIT);
    assert_eq!((r.stats.connections, r.stats.requests, r.stats.mismatched), (3, 3, 3));
    assert!(first_error(&r).contains("more bytes"), "{}", first_error(&r));
}

#[test]
fn short_reply_then_close_is_eof() {
    fn short(mut sock: TcpStream, ctx: &Ctx) -> u64 {
        let mut req = vec![0u8; ctx.size];
        if read_full(&mut sock, &mut req) {
            write_all(&mut sock, &req[..ctx.size / 2]);
        }
        0
    }
    let server = Server::start(short, 17, 5);
    let (_, r) = load(&format!("echo --target {} --connections 6 --concurrency 3", server.target()), LIMIT);
    assert_eq!((r.stats.connections, r.stats.requests), (6, 0));
    assert_eq!(errors(&r)[Cause::Eof as usize], 6);
    assert!(first_error(&r).starts_with("eof"), "{}", first_error(&r));
    assert!(first_error(&r).contains("8 bytes of it received"), "{}", first_error(&r));
}

#[test]
fn reset_is_counted_as_reset() {
    fn rst(mut sock: TcpStream, ctx: &Ctx) -> u64 {
        let mut req = vec![0u8; ctx.size];
        if read_full(&mut sock, &mut req) {
            reset(sock);
        }
        0
    }
    let server = Server::start(rst, 17, 5);
    let (_, r) = load(&format!("echo --target {} --connections 6 --concurrency 2", server.target()), LIMIT);
    assert_eq!(r.stats.requests, 0);
    assert_eq!(errors(&r)[Cause::Reset as usize], 6, "{:?} {}", errors(&r), first_error(&r));
    assert!(first_error(&r).starts_with("reset"), "{}", first_error(&r));
}

#[test]
fn stall_past_the_timeout() {
    fn stall(mut sock: TcpStream, ctx: &Ctx) -> u64 {
        let mut req = vec![0u8; ctx.size];
        if read_full(&mut sock, &mut req) {
            // hold the connection without answering until the client gives up and closes
            let mut rest = [0u8; 1];
            let _ = sock.set_read_timeout(Some(Duration::from_secs(5)));
            let _ = std::io::Read::read(&mut sock, &mut rest);
        }
        0
    }
    let server = Server::start(stall, 17, 5);
    let started = std::time::Instant::now();
    let (_, r) = load(&format!("echo --target {} --connections 4 --concurrency 4 --timeout-ms 200", server.target()), LIMIT);
    let took = started.elapsed();
    assert_eq!(errors(&r)[Cause::Timeout as usize], 4, "{}", first_error(&r));
    assert_eq!(r.stats.requests, 0);
    assert!(took >= Duration::from_millis(200) && took < Duration::from_secs(10), "{took:?}");
    assert!(first_error(&r).contains("200 ms"), "{}", first_error(&r));
}

#[test]
fn reply_split_over_many_writes() {
    fn dribble(mut sock: TcpStream, ctx: &Ctx) -> u64 {
        let mut req = vec![0u8; ctx.size];
        let mut n = 0;
        while read_full(&mut sock, &mut req) {
            let reply = [&req[..], &uuid_lines(ctx.uuids)].concat();
            for piece in reply.chunks(7) {
                if !write_all(&mut sock, piece) {
                    return n;
                }
                thread::sleep(Duration::from_micros(300));
            }
            n += 1;
        }
        n
    }
    let server = Server::start(dribble, 40, 3);
    let (_, r) = load(&format!("echo --target {} --connections 8 --concurrency 4 --per-connection 2 --size 40 --uuids 3", server.target()), LIMIT);
    assert_eq!((r.stats.ok, r.stats.mismatched), (16, 0), "{}", first_error(&r));
    assert_eq!(errors(&r), [0; 5]);
}

#[test]
fn refused_connections_are_connect_errors() {
    // a port nobody listens on: bind one, note it, close it
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let (_, r) = load(&format!("echo --target 127.0.0.1:{port} --connections 50 --concurrency 5"), LIMIT);
    assert_eq!((r.stats.connections, r.stats.requests), (0, 0));
    assert_eq!(errors(&r)[Cause::Connect as usize], 50);
    assert!(first_error(&r).starts_with("connect"), "{}", first_error(&r));
    assert!(r.stats.hist.is_empty());
}

#[test]
fn duration_mode_with_warmup() {
    let server = Server::start(good, 17, 5);
    let (_, r) = load(&format!("echo --target {} --duration 0.4 --warmup-s 0.2 --concurrency 4 --per-connection 2", server.target()), LIMIT);
    let st = &r.stats;
    assert!(st.ok > 0 && st.ok == st.requests, "{}", first_error(&r));
    assert_eq!(r.window_end - r.window_start, 400_000_000);
    assert!(st.win_ok > 0 && st.win_ok < st.ok, "window {} of {}", st.win_ok, st.ok);
    assert_eq!(st.hist.len(), st.win_ok);
    // every exchange in flight at the stop was finished: the server's counts equal the client's
    assert_eq!(server.settle(), (st.connections, st.requests));
}

#[test]
fn ipv6_loopback() {
    if std::net::TcpListener::bind("[::1]:0").is_err() {
        eprintln!("no IPv6 loopback here; skipped");
        return;
    }
    let server = Server::start_on("[::1]:0", good, 17, 5);
    let (_, r) = load(&format!("echo --target {} --connections 50 --concurrency 5", server.target()), LIMIT);
    assert_eq!(r.stats.ok, 50, "{}", first_error(&r));
    assert_eq!(server.settle(), (50, 50));
}

#[test]
fn server_that_echoes_as_it_reads() {
    // not what the protocol asks (read all S bytes first), but the client must not deadlock on
    // it: reply bytes arriving while a large request is still being written are read at once
    fn streaming(mut sock: TcpStream, ctx: &Ctx) -> u64 {
        use std::io::Read;
        let mut n = 0;
        let mut chunk = vec![0u8; 4096];
        loop {
            let mut got = 0;
            while got < ctx.size {
                let want = (ctx.size - got).min(chunk.len());
                match sock.read(&mut chunk[..want]) {
                    Ok(0) | Err(_) => return n,
                    Ok(k) => {
                        if !write_all(&mut sock, &chunk[..k]) {
                            return n;
                        }
                        got += k;
                    }
                }
            }
            if !write_all(&mut sock, &uuid_lines(ctx.uuids)) {
                return n;
            }
            n += 1;
        }
    }
    let size = 1 << 20;
    // a small receive buffer on the server: the client's writes block, and it is in the middle
    // of writing a request when the first reply bytes arrive
    let server = Server::start_small_rcvbuf(streaming, size, 2, 16384);
    let (_, r) = load(&format!("echo --target {} --connections 6 --concurrency 3 --per-connection 2 --size {size} --uuids 2", server.target()), LIMIT);
    assert_eq!((r.stats.ok, r.stats.mismatched), (12, 0), "{:?} {}", errors(&r), first_error(&r));
    assert_eq!(server.settle(), (6, 12));
}

#[test]
fn agents_split_the_totals_and_send_different_requests() {
    static SEEN: std::sync::Mutex<Vec<Vec<u8>>> = std::sync::Mutex::new(Vec::new());
    fn remember(mut sock: TcpStream, ctx: &Ctx) -> u64 {
        let mut req = vec![0u8; ctx.size];
        let mut n = 0;
        while read_full(&mut sock, &mut req) {
            SEEN.lock().unwrap().push(req.clone());
            if !write_all(&mut sock, &[&req[..], &uuid_lines(ctx.uuids)].concat()) {
                break;
            }
            n += 1;
        }
        n
    }
    let server = Server::start(remember, 17, 1);
    let cmds: Vec<String> = (0..2)
        .map(|i| format!("echo --target {} --connections 101 --concurrency 5 --per-connection 2 --uuids 1 --agent {i}/2", server.target()))
        .collect();
    let reports = load_agents(&cmds, LIMIT);
    let got: Vec<(u64, u64, usize)> = reports.iter().map(|r| (r.stats.connections, r.stats.ok, r.share.concurrency)).collect();
    assert_eq!(got, [(51, 102, 3), (50, 100, 2)]);
    assert_eq!(server.settle(), (101, 202));
    let mut seen = SEEN.lock().unwrap().clone();
    // agent I's requests carry sequence numbers ≡ I (mod 2): the hex head's last digit
    let odd = seen.iter().filter(|r| {
        let head = r.split(|&b| b == b':').next().unwrap();
        u64::from_str_radix(std::str::from_utf8(head).unwrap(), 16).unwrap() % 2 == 1
    });
    assert_eq!(odd.count(), 100);
    seen.sort();
    seen.dedup();
    assert_eq!(seen.len(), 202, "a request was sent twice");
}

#[test]
fn intervals_add_up_to_the_window() {
    let server = Server::start(good, 17, 2);
    for extra in ["", "--rate 1500"] {
        let (cfg, r) = load(
            &format!("echo --target {} --duration 0.3 --warmup-s 0.1 --concurrency 4 --uuids 2 --interval-ms 100 {extra}", server.target()),
            LIMIT,
        );
        assert_eq!(r.stats.ok, r.stats.requests, "{extra}: {}", first_error(&r));
        assert_eq!(r.intervals.len(), 3);
        // short connections: every interval opens some
        assert!(r.intervals.iter().all(|i| i.connections > 0), "{extra}: {:?}", r.intervals);
        check_intervals(&cfg, &r);
    }
}

#[test]
fn ipv6_sources() {
    if std::net::TcpListener::bind("[::1]:0").is_err() {
        eprintln!("no IPv6 loopback here; skipped");
        return;
    }
    let server = Server::start_on("[::1]:0", good, 17, 5);
    let (_, r) = load(&format!("echo --target {} --connections 20 --concurrency 2 --sources ::1", server.target()), LIMIT);
    assert_eq!(r.stats.ok, 20, "{}", first_error(&r));
    assert_eq!(server.settle(), (20, 20));
}
