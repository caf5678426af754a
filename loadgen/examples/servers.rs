//! Tiny echo and http servers of the protocol (docs/protocol.md, "Servers") on tokio, to try
//! corobench-load and wrk against by hand:
//!
//!     cargo run --release --example servers -- http [--port P] [--threads N]
//!     cargo run --release --example servers -- echo [--port P] [--size S] [--uuids U] [--threads N]
//!
//! `--threads 1` is a current-thread runtime (one core). Prints a ready line with the port,
//! serves until SIGTERM/SIGINT, then prints its counts. Loopback only.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

#[derive(Default)]
struct Counts {
    connections: AtomicU64,
    requests: AtomicU64,
}

fn main() {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let scenario = argv.first().cloned().unwrap_or_else(|| "http".into());
    let flag = |name: &str, default: usize| -> usize {
        argv.iter().position(|a| a == name).and_then(|i| argv.get(i + 1)).map_or(default, |v| v.parse().expect("a number"))
    };
    let port = flag("--port", 0);
    let threads = flag("--threads", 1);
    let size = flag("--size", 17);
    let uuids = flag("--uuids", 5);
    let rt = if threads == 1 {
        tokio::runtime::Builder::new_current_thread().enable_all().build()
    } else {
        tokio::runtime::Builder::new_multi_thread().worker_threads(threads).enable_all().build()
    }
    .expect("runtime");
    rt.block_on(async move {
        let listener = TcpListener::bind(("127.0.0.1", port as u16)).await.expect("bind");
        let port = listener.local_addr().unwrap().port();
        println!("{{\"ready\":true,\"scenario\":\"{scenario}\",\"host\":\"127.0.0.1\",\"port\":{port},\"threads\":{threads}}}");
        let counts = Arc::new(Counts::default());
        let c = counts.clone();
        let accept = async move {
            loop {
                let Ok((sock, _)) = listener.accept().await else { continue };
                let _ = sock.set_nodelay(true);
                c.connections.fetch_add(1, Ordering::Relaxed);
                let c = c.clone();
                if scenario == "echo" {
                    tokio::spawn(async move {
                        let n = serve_echo(sock, size, uuids).await;
                        c.requests.fetch_add(n, Ordering::Relaxed);
                    });
                } else {
                    tokio::spawn(async move {
                        let n = serve_http(sock).await;
                        c.requests.fetch_add(n, Ordering::Relaxed);
                    });
                }
            }
        };
        let stop = async {
            let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).unwrap();
            tokio::select! { _ = term.recv() => {}, _ = tokio::signal::ctrl_c() => {} }
        };
        tokio::select! { _ = accept => {}, _ = stop => {} }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        println!(
            "{{\"connections\":{},\"requests\":{}}}",
            counts.connections.load(Ordering::Relaxed),
            counts.requests.load(Ordering::Relaxed)
        );
    });
}

async fn serve_echo(mut sock: TcpStream, size: usize, uuids: usize) -> u64 {
    let mut req = vec![0u8; size];
    let mut reply = Vec::with_capacity(size + 37 * uuids);
    let mut n = 0;
    loop {
        if sock.read_exact(&mut req).await.is_err() {
            return n;
        }
        reply.clear();
        reply.extend_from_slice(&req);
        for _ in 0..uuids {
            reply.push(b'\n');
            let mut b = uuid::Uuid::encode_buffer();
            reply.extend_from_slice(uuid::Uuid::new_v4().hyphenated().encode_lower(&mut b).as_bytes());
        }
        if sock.write_all(&reply).await.is_err() {
            return n;
        }
        n += 1;
    }
}

async fn serve_http(mut sock: TcpStream) -> u64 {
    let mut buf = vec![0u8; 8192];
    let mut len = 0;
    let mut out = Vec::with_capacity(256);
    let mut n = 0;
    loop {
        let (consumed, path_ok, token_range) = loop {
            let mut headers = [httparse::EMPTY_HEADER; 32];
            let mut req = httparse::Request::new(&mut headers);
            match req.parse(&buf[..len]) {
                Ok(httparse::Status::Complete(c)) => {
                    let path = req.path.unwrap_or("");
                    let ok = req.method == Some("GET") && path.starts_with("/ping/") && path.len() > 6;
                    let start = path.as_ptr() as usize - buf.as_ptr() as usize + 6;
                    break (c, ok, start..start + path.len().saturating_sub(6));
                }
                Ok(httparse::Status::Partial) => {}
                Err(_) => {
                    let _ = sock.write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n").await;
                    return n;
                }
            }
            if len == buf.len() {
                return n;
            }
            match sock.read(&mut buf[len..]).await {
                Ok(0) | Err(_) => return n,
                Ok(k) => len += k,
            }
        };
        out.clear();
        if path_ok {
            let token = &buf[token_range];
            out.extend_from_slice(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: ");
            out.extend_from_slice(token.len().to_string().as_bytes());
            out.extend_from_slice(b"\r\n\r\n");
            out.extend_from_slice(token);
            n += 1;
        } else {
            out.extend_from_slice(b"HTTP/1.1 404 Not Found\r\nContent-Type: text/plain\r\nContent-Length: 0\r\n\r\n");
        }
        if sock.write_all(&out).await.is_err() {
            return n;
        }
        buf.copy_within(consumed..len, 0);
        len -= consumed;
    }
}
