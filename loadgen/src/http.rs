//! http: `GET /ping/<token>` with a different token per request, and the check of the response
//! (parsed with httparse) as its bytes arrive.

use corobench_wire::HTTP_PING_PREFIX;

use crate::proto::{Exchange, Feed};

const TOKEN_ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
/// A response larger than this is not a ping response (ours are under 200 bytes with the
/// usual Date/Server headers); it is a mismatch and the connection is closed.
pub const MAX_RESPONSE: usize = 8192;
const MAX_HEADERS: usize = 32;

/// The token of request `seq`: its digits in base 64 over [A-Za-z0-9-_], 1 … 11 characters.
/// Returns the length written into `out`.
pub fn token(seq: u64, out: &mut [u8; 11]) -> usize {
    let mut n = seq;
    let mut len = 0;
    let mut rev = [0u8; 11];
    loop {
        rev[len] = TOKEN_ALPHABET[(n & 63) as usize];
        len += 1;
        n >>= 6;
        if n == 0 {
            break;
        }
    }
    for i in 0..len {
        out[i] = rev[len - 1 - i];
    }
    len
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Problem {
    Parse(httparse::Error),
    TooLarge,
    NoContentLength,
    BadContentLength,
    Status(u16),
    Length(usize),
    Body,
    Extra(usize),
}

pub struct HttpExchange {
    /// "GET " + HTTP_PING_PREFIX — the token is written after it.
    request: Vec<u8>,
    prefix_len: usize,
    /// " HTTP/1.1\r\nHost: <target>\r\n\r\n"
    suffix: Vec<u8>,
    token: [u8; 11],
    token_len: usize,
    buf: Box<[u8; MAX_RESPONSE]>,
    len: usize,
    problem: Option<Problem>,
}

impl HttpExchange {
    pub fn new(host: &str) -> HttpExchange {
        let prefix = format!("GET {HTTP_PING_PREFIX}").into_bytes();
        let suffix = format!(" HTTP/1.1\r\nHost: {host}\r\n\r\n").into_bytes();
        let mut request = Vec::with_capacity(prefix.len() + 11 + suffix.len());
        request.extend_from_slice(&prefix);
        HttpExchange {
            request,
            prefix_len: prefix.len(),
            suffix,
            token: [0; 11],
            token_len: 0,
            buf: Box::new([0; MAX_RESPONSE]),
            len: 0,
            problem: None,
        }
    }

    pub fn token(&self) -> &[u8] {
        &self.token[..self.token_len]
    }

    fn check(&mut self) -> Feed {
        let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut resp = httparse::Response::new(&mut headers);
        let head = match resp.parse(&self.buf[..self.len]) {
            Ok(httparse::Status::Complete(n)) => n,
            Ok(httparse::Status::Partial) => {
                if self.len == MAX_RESPONSE {
                    self.problem = Some(Problem::TooLarge);
                    return Feed::Desync;
                }
                return Feed::More;
            }
            Err(e) => {
                self.problem = Some(Problem::Parse(e));
                return Feed::Desync;
            }
        };
        let mut length: Option<usize> = None;
        for h in resp.headers.iter() {
            if h.name.eq_ignore_ascii_case("content-length") {
                let parsed = std::str::from_utf8(h.value).ok().map(str::trim).and_then(|v| {
                    if !v.is_empty() && v.bytes().all(|c| c.is_ascii_digit()) {
                        v.parse::<usize>().ok()
                    } else {
                        None
                    }
                });
                match (parsed, length) {
                    (None, _) => {
                        self.problem = Some(Problem::BadContentLength);
                        return Feed::Desync;
                    }
                    (Some(a), Some(b)) if a != b => {
                        self.problem = Some(Problem::BadContentLength);
                        return Feed::Desync;
                    }
                    (Some(a), _) => length = Some(a),
                }
            }
        }
        let Some(length) = length else {
            self.problem = Some(Problem::NoContentLength);
            return Feed::Desync;
        };
        let status = resp.code.unwrap_or(0);
        if head + length > MAX_RESPONSE {
            self.problem = Some(if status == 200 { Problem::Length(length) } else { Problem::Status(status) });
            return Feed::Desync;
        }
        if self.len < head + length {
            return Feed::More;
        }
        if self.len > head + length {
            // the client never pipelines: nothing may follow a response
            self.problem = Some(Problem::Extra(self.len - head - length));
            return Feed::Desync;
        }
        let problem = if status != 200 {
            Some(Problem::Status(status))
        } else if length != self.token_len {
            Some(Problem::Length(length))
        } else if &self.buf[head..head + length] != self.token() {
            Some(Problem::Body)
        } else {
            None
        };
        self.problem = problem;
        if problem.is_some() {
            Feed::Mismatch
        } else {
            Feed::Ok
        }
    }
}

impl Exchange for HttpExchange {
    fn begin(&mut self, seq: u64) {
        self.token_len = token(seq, &mut self.token);
        self.request.truncate(self.prefix_len);
        self.request.extend_from_slice(&self.token[..self.token_len]);
        self.request.extend_from_slice(&self.suffix);
        self.len = 0;
        self.problem = None;
    }

    fn request(&self) -> &[u8] {
        &self.request
    }

    fn recv_buf(&mut self) -> &mut [u8] {
        &mut self.buf[self.len..]
    }

    fn received(&mut self, n: usize) -> Feed {
        self.len += n;
        self.check()
    }

    fn received_bytes(&self) -> usize {
        self.len
    }

    fn describe(&self) -> String {
        let token = String::from_utf8_lossy(self.token());
        let what = match self.problem {
            Some(Problem::Parse(e)) => format!("unparseable response ({e})"),
            Some(Problem::TooLarge) => format!("response larger than {MAX_RESPONSE} bytes"),
            Some(Problem::NoContentLength) => "response without Content-Length".to_string(),
            Some(Problem::BadContentLength) => "invalid or conflicting Content-Length".to_string(),
            Some(Problem::Status(s)) => format!("status {s}, expected 200"),
            Some(Problem::Length(n)) => format!("Content-Length {n}, expected {}", self.token_len),
            Some(Problem::Body) => "body differs from the token".to_string(),
            Some(Problem::Extra(n)) => format!("{n} unexpected bytes after the response"),
            None => "no problem".to_string(),
        };
        let shown = &self.buf[..self.len.min(300)];
        format!("GET {HTTP_PING_PREFIX}{token}: {what}; response {:?}", String::from_utf8_lossy(shown))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::feed;

    #[test]
    fn tokens() {
        let mut t = [0u8; 11];
        let n = token(0, &mut t);
        assert_eq!(&t[..n], b"A");
        let n = token(63, &mut t);
        assert_eq!(&t[..n], b"_");
        let n = token(64, &mut t);
        assert_eq!(&t[..n], b"BA");
        let n = token(u64::MAX, &mut t);
        assert_eq!(n, 11);
        // distinct and in the alphabet
        let mut seen = std::collections::HashSet::new();
        for seq in 0..100_000u64 {
            let n = token(seq, &mut t);
            assert!((1..=64).contains(&n));
            assert!(t[..n].iter().all(|c| c.is_ascii_alphanumeric() || *c == b'-' || *c == b'_'));
            assert!(seen.insert(t[..n].to_vec()));
        }
    }

    #[test]
    fn request_bytes() {
        let mut ex = HttpExchange::new("127.0.0.1:8080");
        ex.begin(64 * 3 + 5);
        assert_eq!(ex.request(), b"GET /ping/DF HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n");
        ex.begin(1);
        assert_eq!(ex.request(), b"GET /ping/B HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n");
    }

    fn response(status: &str, length: usize, body: &str) -> Vec<u8> {
        format!("HTTP/1.1 {status}\r\nContent-Type: text/plain\r\nDate: Mon, 01 Jan 2024 00:00:00 GMT\r\ncontent-length: {length}\r\n\r\n{body}").into_bytes()
    }

    #[test]
    fn good_in_any_pieces() {
        let mut ex = HttpExchange::new("h");
        for piece in [1, 3, 20, 1000] {
            ex.begin(12345);
            let tok = String::from_utf8(ex.token().to_vec()).unwrap();
            assert_eq!(feed(&mut ex, &response("200 OK", tok.len(), &tok), piece), Feed::Ok, "piece {piece}");
        }
    }

    #[test]
    fn problems() {
        let mut ex = HttpExchange::new("h");
        ex.begin(12345);
        let tok = String::from_utf8(ex.token().to_vec()).unwrap();
        assert_eq!(feed(&mut ex, &response("404 Not Found", tok.len(), &tok), 1000), Feed::Mismatch);
        assert!(ex.describe().contains("status 404"), "{}", ex.describe());

        ex.begin(12345);
        let wrong: String = tok.chars().rev().collect::<String>() + "x";
        assert_eq!(feed(&mut ex, &response("200 OK", wrong.len(), &wrong), 1000), Feed::Mismatch);
        assert!(ex.describe().contains("Content-Length"), "{}", ex.describe());

        ex.begin(12345);
        let wrong = "A".repeat(tok.len());
        assert_eq!(feed(&mut ex, &response("200 OK", wrong.len(), &wrong), 7), Feed::Mismatch);
        assert!(ex.describe().contains("body differs"), "{}", ex.describe());

        ex.begin(12345);
        let mut r = response("200 OK", tok.len(), &tok);
        r.extend_from_slice(b"HTTP");
        assert_eq!(feed(&mut ex, &r, 1000), Feed::Desync);
        assert!(ex.describe().contains("unexpected bytes"), "{}", ex.describe());

        ex.begin(12345);
        assert_eq!(feed(&mut ex, b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", 1000), Feed::Desync);
        assert!(ex.describe().contains("without Content-Length"), "{}", ex.describe());

        ex.begin(12345);
        assert_eq!(feed(&mut ex, b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n", 1000), Feed::Desync);

        ex.begin(12345);
        assert_eq!(feed(&mut ex, b"HTTP/1.1 200 OK\r\nContent-Length: -3\r\n\r\n", 1000), Feed::Desync);

        ex.begin(12345);
        assert_eq!(feed(&mut ex, b"NOT HTTP AT ALL\r\n\r\n", 1000), Feed::Desync);
        assert!(ex.describe().contains("unparseable"), "{}", ex.describe());

        ex.begin(12345);
        let big = format!("HTTP/1.1 200 OK\r\nX: {}\r\n", "y".repeat(MAX_RESPONSE));
        assert_eq!(feed(&mut ex, big.as_bytes(), 100_000), Feed::Desync);
        assert!(ex.describe().contains("larger than"), "{}", ex.describe());

        ex.begin(12345);
        assert_eq!(feed(&mut ex, b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n", 1000), Feed::Desync);
    }
}
