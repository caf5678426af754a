// The public tokio-goroutine-perf blocking program's work, for design/compare-blocking.py:
// 1000 tasks per iteration, each reads 10 bytes of /dev/urandom and writes them to /dev/null
// through tokio::fs (`fs`) or std::fs inside block_in_place (anything else); one warm-up
// iteration, then 1000 timed; prints "<total> total, <avg> avg per iteration".
use std::time::Instant;

async fn iteration(mode: &str) {
    let mut tasks = Vec::with_capacity(1000);
    for _ in 0..1000 {
        let fs = mode == "fs";
        tasks.push(tokio::spawn(async move {
            let mut buf = [0u8; 10];
            if fs {
                use tokio::io::{AsyncReadExt, AsyncWriteExt};
                let mut src = tokio::fs::File::open("/dev/urandom").await.unwrap();
                src.read(&mut buf).await.unwrap();
                let mut dst = tokio::fs::File::create("/dev/null").await.unwrap();
                dst.write(&buf).await.unwrap();
            } else {
                use std::io::{Read, Write};
                tokio::task::block_in_place(|| {
                    std::fs::File::open("/dev/urandom").unwrap().read(&mut buf).unwrap();
                });
                tokio::task::block_in_place(|| {
                    std::fs::File::create("/dev/null").unwrap().write(&buf).unwrap();
                });
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
}

#[tokio::main]
async fn main() {
    let mode = std::env::args().nth(1).unwrap_or_else(|| "fs".into());
    iteration(&mode).await;
    let start = Instant::now();
    for _ in 0..1000 {
        iteration(&mode).await;
    }
    let e = start.elapsed();
    println!("{:?} total, {:?} avg per iteration", e, e / 1000);
}
