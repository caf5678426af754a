//! In-process fake servers on loopback for the client's tests: a thread per connection running
//! a behaviour, counting what it did the way the protocol asks of a server.

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use corobench_load::args::{self, Config};
use corobench_load::{run, Report};

#[derive(Default)]
pub struct Counts {
    pub accepted: AtomicU64,
    pub finished: AtomicU64,
    /// Replies written in full.
    pub replies: AtomicU64,
}

/// What a connection handler reports when it ends: replies written in full.
pub type Handler = fn(TcpStream, &Ctx) -> u64;

pub struct Ctx {
    /// Index of the connection (0, 1, …) in accept order.
    pub index: u64,
    pub size: usize,
    pub uuids: usize,
}

pub struct Server {
    pub addr: SocketAddr,
    pub counts: Arc<Counts>,
    stop: Arc<AtomicBool>,
    accept: Option<thread::JoinHandle<()>>,
}

impl Server {
    pub fn start(handler: Handler, size: usize, uuids: usize) -> Server {
        Server::start_on("127.0.0.1:0", handler, size, uuids)
    }

    pub fn start_on(bind: &str, handler: Handler, size: usize, uuids: usize) -> Server {
        Server::serve(TcpListener::bind(bind).expect("bind loopback"), handler, size, uuids)
    }

    /// A server on 127.0.0.1 whose connections have a receive buffer of `rcvbuf` bytes from
    /// the start (set on the listener before listen, so the window is advertised to match).
    pub fn start_small_rcvbuf(handler: Handler, size: usize, uuids: usize, rcvbuf: i32) -> Server {
        use std::os::fd::FromRawFd;
        // SAFETY: plain socket/setsockopt/bind/listen on a fresh socket we own.
        let listener = unsafe {
            let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
            assert!(fd >= 0);
            let v: libc::c_int = rcvbuf;
            libc::setsockopt(fd, libc::SOL_SOCKET, libc::SO_RCVBUF, &v as *const _ as *const libc::c_void, 4);
            let mut sa: libc::sockaddr_in = std::mem::zeroed();
            sa.sin_family = libc::AF_INET as libc::sa_family_t;
            sa.sin_addr = libc::in_addr { s_addr: u32::from(std::net::Ipv4Addr::LOCALHOST).to_be() };
            let len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
            assert_eq!(libc::bind(fd, &sa as *const _ as *const libc::sockaddr, len), 0);
            assert_eq!(libc::listen(fd, 128), 0);
            TcpListener::from_raw_fd(fd)
        };
        Server::serve(listener, handler, size, uuids)
    }

    fn serve(listener: TcpListener, handler: Handler, size: usize, uuids: usize) -> Server {
        let addr = listener.local_addr().unwrap();
        let counts = Arc::new(Counts::default());
        let stop = Arc::new(AtomicBool::new(false));
        let (c, s) = (counts.clone(), stop.clone());
        let accept = thread::spawn(move || {
            for (index, sock) in listener.incoming().enumerate() {
                if s.load(Ordering::Acquire) {
                    break;
                }
                let Ok(sock) = sock else { continue };
                sock.set_nodelay(true).unwrap();
                c.accepted.fetch_add(1, Ordering::AcqRel);
                let c = c.clone();
                thread::spawn(move || {
                    let ctx = Ctx { index: index as u64, size, uuids };
                    let n = handler(sock, &ctx);
                    c.replies.fetch_add(n, Ordering::AcqRel);
                    c.finished.fetch_add(1, Ordering::AcqRel);
                });
            }
        });
        Server { addr, counts, stop, accept: Some(accept) }
    }

    pub fn target(&self) -> String {
        self.addr.to_string()
    }

    /// Wait (bounded) until every accepted connection has ended, then (accepted, replies).
    pub fn settle(&self) -> (u64, u64) {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let a = self.counts.accepted.load(Ordering::Acquire);
            let f = self.counts.finished.load(Ordering::Acquire);
            if a == f || Instant::now() > deadline {
                return (a, self.counts.replies.load(Ordering::Acquire));
            }
            thread::sleep(Duration::from_millis(5));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        let _ = TcpStream::connect(self.addr); // wake the accept loop
        if let Some(h) = self.accept.take() {
            let _ = h.join();
        }
    }
}

/// Parse a command line as main does (2 CPUs, 20000 fds) and run it; the test fails after
/// `limit` (every test is bounded in time).
pub fn load(cmd: &str, limit: Duration) -> (Config, Report) {
    let argv: Vec<String> = cmd.split_whitespace().map(String::from).collect();
    let cfg = args::parse(&argv, 2, 20000).expect("valid arguments");
    // the run goes on a thread of its own so that a hang fails the test instead of stalling it
    let (tx, rx) = std::sync::mpsc::channel();
    let c = cfg.clone();
    thread::spawn(move || {
        let _ = tx.send(run(&c, &mut std::io::sink()));
    });
    match rx.recv_timeout(limit) {
        Ok(report) => (cfg, report.expect("the load ran")),
        Err(_) => panic!("{cmd:?} did not finish within {limit:?}"),
    }
}

pub fn errors(r: &Report) -> [u64; 5] {
    r.stats.errors
}

pub fn first_error(r: &Report) -> String {
    r.stats.first_error.as_ref().map(|(_, s)| s.clone()).unwrap_or_default()
}

/// Read exactly `buf.len()` bytes; false on EOF or error.
pub fn read_full(sock: &mut TcpStream, buf: &mut [u8]) -> bool {
    sock.read_exact(buf).is_ok()
}

pub fn write_all(sock: &mut TcpStream, data: &[u8]) -> bool {
    sock.write_all(data).is_ok()
}

pub fn uuid_lines(n: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(37 * n);
    for _ in 0..n {
        out.push(b'\n');
        out.extend_from_slice(uuid::Uuid::new_v4().hyphenated().to_string().as_bytes());
    }
    out
}

/// Drop the connection with a reset (SO_LINGER 0) instead of a FIN.
pub fn reset(sock: TcpStream) {
    let l = libc::linger { l_onoff: 1, l_linger: 0 };
    // SAFETY: plain setsockopt on an open socket.
    unsafe {
        use std::os::fd::AsRawFd;
        libc::setsockopt(
            sock.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            &l as *const _ as *const libc::c_void,
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        );
    }
    drop(sock);
}

/// Run several agents' command lines at once (as the harness starts them), each bounded by
/// `limit`; their reports in the order given.
pub fn load_agents(cmds: &[String], limit: Duration) -> Vec<Report> {
    let handles: Vec<_> = cmds
        .iter()
        .map(|c| {
            let c = c.clone();
            thread::spawn(move || load(&c, limit).1)
        })
        .collect();
    handles.into_iter().map(|h| h.join().expect("an agent's load")).collect()
}

/// The interval records tile the window and add up to its counts and its histogram.
pub fn check_intervals(cfg: &Config, r: &Report) {
    let st = &r.stats;
    let len = cfg.interval_ms * 1_000_000;
    let iv = &r.intervals;
    assert_eq!(iv.len() as u64, (r.window_end - r.window_start).div_ceil(len), "one record per interval");
    for (k, rec) in iv.iter().enumerate() {
        assert_eq!(rec.index, k as u64);
        assert_eq!(rec.start_ns, r.window_start + k as u64 * len);
        assert_eq!(rec.end_ns, (rec.start_ns + len).min(r.window_end));
        assert_eq!(rec.requests, rec.ok + rec.mismatched);
        assert_eq!(rec.latency_count, rec.ok);
    }
    let sum = |f: fn(&corobench_load::interval::Summary) -> u64| iv.iter().map(f).sum::<u64>();
    assert_eq!(sum(|i| i.requests), st.win_requests);
    assert_eq!(sum(|i| i.ok), st.win_ok);
    assert_eq!(sum(|i| i.mismatched), st.win_mismatched);
    assert_eq!(sum(|i| i.connections), st.win_connections);
    assert_eq!(sum(|i| i.latency_count), st.hist.len());
    for c in 0..5 {
        assert_eq!(iv.iter().map(|i| i.errors[c]).sum::<u64>(), st.win_errors[c], "errors of cause {c}");
    }
}

/// The sequence number a token encodes (base 64 over [A-Za-z0-9-_], most significant first).
pub fn token_seq(token: &str) -> u64 {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    token.bytes().fold(0u64, |n, c| n << 6 | ALPHABET.iter().position(|&a| a == c).expect("a token character") as u64)
}
