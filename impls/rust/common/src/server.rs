//! The server scenarios, echo and http (docs/protocol.md, "Servers"): what
//! every Rust server shares, so that the runtimes only do the I/O.
//!
//! - flags: `--host` (an IP literal, loopback unless `--allow-remote`),
//!   `--port`, `--size`, `--uuids`, `--threads`, `--variant`; bad input exits
//!   2 with one line, like the batch scenarios' parser;
//! - the ready line and the final line;
//! - echo: the reply (the S request bytes, then U × "\n" + a UUID v4 from
//!   `uuid::Uuid::new_v4`, written in place into the connection's buffer);
//! - http: one HTTP/1.1 connection over `httparse` ([`HttpConn`], no I/O in
//!   it), the `/ping/<token>` route shared by the library-based variants;
//! - counts: a [`Counts`] per connection (plain fields, no sharing), added to
//!   the process's [`Totals`] once when the connection ends;
//! - SIGTERM/SIGINT ([`StopSignal`]), listeners (SO_REUSEPORT groups for the
//!   thread-per-core runtimes), RLIMIT_MEMLOCK, the affinity mask, and the
//!   exit-3 messages.

use std::collections::HashMap;
use std::io::{self, Write};
use std::net::{IpAddr, SocketAddr, TcpListener};
use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use super::{bad_input, error_text, failed, parse_count, refused, Flags, Spec, ThreadsMode};

pub mod conn;
#[cfg(feature = "futures-io")]
pub mod futures_io;
#[cfg(feature = "hyper")]
pub mod hyper_ping;

/// How long a stopping server waits for its open connections to end.
pub const STOP_WAIT: Duration = Duration::from_secs(2);
/// How often a stopping server looks whether its connections have ended.
pub const STOP_POLL: Duration = Duration::from_millis(5);

// ---------------------------------------------------------------- args

/// The server scenarios' names, defined once for the servers and the load
/// generator (corobench-wire).
pub use corobench_wire::{Scenario, HTTP_PING_PREFIX};

/// The server scenarios a program serves and their variants (the first is
/// the default). `None`: the scenario is not served; `Some(&[])`: served,
/// without variants (a `--variant` is then bad input).
#[derive(Clone, Copy, Debug)]
pub struct Servers {
    pub echo: Option<&'static [&'static str]>,
    pub http: Option<&'static [&'static str]>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerArgs {
    pub scenario: Scenario,
    pub host: IpAddr,
    pub port: u16,
    /// echo: request bytes (S); 0 for http.
    pub size: usize,
    /// echo: UUIDs per reply (U); 0 for http.
    pub uuids: usize,
    /// echo: replies after which the server closes a connection (R); 0:
    /// serve it until the client closes it (and 0 for http).
    pub per_connection: u64,
    pub threads: Option<usize>,
    /// The variant served: the one given, else the first listed ("" when the
    /// scenario has none).
    pub variant: &'static str,
    /// Whether `--variant` was given: the ready and final lines echo it only then.
    pub variant_given: bool,
    pub allow_remote: bool,
}

impl ServerArgs {
    pub fn addr(&self) -> SocketAddr {
        SocketAddr::new(self.host, self.port)
    }
    /// Reply bytes of one echo exchange: S + 37 × U.
    pub fn reply_len(&self) -> usize {
        self.size + UUID_LINE * self.uuids
    }
}

const ECHO_FLAGS: &[&str] = &["host", "port", "size", "uuids", "per-connection", "threads", "variant"];
const HTTP_FLAGS: &[&str] = &["host", "port", "threads", "variant"];
/// The one flag without a value.
const ALLOW_REMOTE: &str = "allow-remote";

const MAX_SIZE: u64 = 1 << 20;
const MAX_UUIDS: u64 = 1000;
const MAX_PER_CONNECTION: u64 = 1_000_000_000;

/// Flags as the batch parser reads them (long only here: `--long V`,
/// `--long=V`, any order, each at most once), plus the value-less
/// `--allow-remote`.
fn parse_server_flags(args: &[String], names: &[&'static str]) -> Result<(Flags, bool), String> {
    let mut out: HashMap<&'static str, String> = HashMap::new();
    let mut allow_remote = false;
    let mut i = 0;
    while i < args.len() {
        let arg = &args[i];
        i += 1;
        let Some(rest) = arg.strip_prefix("--") else {
            if arg.starts_with('-') && arg.len() > 1 {
                return Err(format!("unknown flag '{arg}'"));
            }
            return Err(format!("unexpected argument '{arg}'"));
        };
        let (name, inline) = match rest.split_once('=') {
            Some((n, v)) => (n, Some(v)),
            None => (rest, None),
        };
        if name == ALLOW_REMOTE {
            if allow_remote {
                return Err(format!("flag --{ALLOW_REMOTE} given more than once"));
            }
            if inline.is_some() {
                return Err(format!("flag --{ALLOW_REMOTE} takes no value"));
            }
            allow_remote = true;
            continue;
        }
        let Some(&name) = names.iter().find(|n| **n == name) else {
            return Err(format!("unknown flag '{arg}'"));
        };
        if out.contains_key(name) {
            return Err(format!("flag --{name} given more than once"));
        }
        let value = match inline {
            Some(v) => v.to_string(),
            None => {
                if i >= args.len() {
                    return Err(format!("flag {arg} needs a value"));
                }
                i += 1;
                args[i - 1].clone()
            }
        };
        if value.is_empty() {
            return Err(format!("flag --{name} needs a value"));
        }
        out.insert(name, value);
    }
    Ok((Flags(out), allow_remote))
}

fn parse_host(text: &str, allow_remote: bool) -> Result<IpAddr, String> {
    let ip: IpAddr = text
        .parse()
        .map_err(|_| format!("--host must be an IPv4 or IPv6 address literal, got '{text}'"))?;
    if !allow_remote && !ip.is_loopback() {
        return Err(format!(
            "--host {text} is not a loopback address (127.0.0.0/8 or ::1); add --allow-remote to bind it"
        ));
    }
    Ok(ip)
}

fn bounded(f: &Flags, name: &str, default: u64, min: u64, max: u64) -> Result<u64, String> {
    let Some(text) = f.0.get(name) else { return Ok(default) };
    let n = parse_count(name, text, min == 0)?;
    if n < min || n > max {
        return Err(format!("--{name} must be {min} … {max}, got {n}"));
    }
    Ok(n)
}

/// Parses `echo|http [flags]`. `Ok(None)`: another scenario (the batch
/// parser's business).
pub fn parse_server_from(spec: &Spec, servers: &Servers, args: &[String]) -> Result<Option<ServerArgs>, String> {
    let Some(scenario) = args.first().and_then(|name| Scenario::from_name(name)) else {
        return Ok(None);
    };
    let variants = match scenario {
        Scenario::Echo => servers.echo,
        Scenario::Http => servers.http,
    };
    let Some(variants) = variants else {
        return Err(format!("scenario '{}' is not served by {}", scenario.name(), spec.id));
    };
    let names = if scenario == Scenario::Echo { ECHO_FLAGS } else { HTTP_FLAGS };
    let (f, allow_remote) = parse_server_flags(&args[1..], names)?;
    let host = match f.0.get("host") {
        Some(h) => parse_host(h, allow_remote)?,
        None => IpAddr::from([127, 0, 0, 1]),
    };
    let port = bounded(&f, "port", 0, 0, 65535)? as u16;
    let (size, uuids, per_connection) = match scenario {
        Scenario::Echo => (
            bounded(&f, "size", 17, 1, MAX_SIZE)?,
            bounded(&f, "uuids", 5, 0, MAX_UUIDS)?,
            bounded(&f, "per-connection", 0, 0, MAX_PER_CONNECTION)?,
        ),
        Scenario::Http => (0, 0, 0),
    };
    let (variant, variant_given) = match f.0.get("variant") {
        None => (variants.first().copied().unwrap_or(""), false),
        Some(v) => match variants.iter().find(|n| **n == v.as_str()) {
            Some(n) => (*n, true),
            None if variants.is_empty() => {
                return Err(format!("{} {} has no variants, got --variant '{v}'", spec.id, scenario.name()))
            }
            None => {
                return Err(format!(
                    "unknown --variant '{v}' for {} {} (one of {})",
                    spec.id,
                    scenario.name(),
                    variants.join(", ")
                ))
            }
        },
    };
    Ok(Some(ServerArgs {
        scenario,
        host,
        port,
        size: size as usize,
        uuids: uuids as usize,
        per_connection,
        threads: f.threads(spec)?,
        variant,
        variant_given,
        allow_remote,
    }))
}

fn process_args() -> Vec<String> {
    match std::env::args_os().skip(1).map(|a| a.into_string()).collect::<Result<Vec<_>, _>>() {
        Ok(a) => a,
        Err(a) => bad_input(format_args!("argument is not UTF-8: {a:?}")),
    }
}

fn accept_parsed(spec: &Spec, a: ServerArgs) -> ServerArgs {
    super::install_panic_hook();
    install_server_panic_hook();
    if let (ThreadsMode::Env(var), Some(n)) = (spec.threads, a.threads) {
        // Still single-threaded here: no runtime has started yet.
        std::env::set_var(var, n.to_string());
    }
    a
}

/// The server arguments of an echo or http binary: any other scenario is
/// bad input.
pub fn server_args_only(spec: &Spec, servers: &Servers) -> ServerArgs {
    let args = process_args();
    match parse_server_from(spec, servers, &args) {
        Ok(Some(a)) => accept_parsed(spec, a),
        Ok(None) => {
            let served: Vec<&str> = [("echo", servers.echo), ("http", servers.http)]
                .iter()
                .filter(|(_, v)| v.is_some())
                .map(|(n, _)| *n)
                .collect();
            match args.first() {
                None => bad_input(format_args!("usage: {} <{}> [flags] (see docs/protocol.md)", spec.id, served.join("|"))),
                Some(s) => bad_input(format_args!("unknown scenario '{s}' ({} serves {})", spec.id, served.join(", "))),
            }
        }
        Err(msg) => bad_input(msg),
    }
}

// ---------------------------------------------------------------- lines

/// One JSON object on one line, field by field (keys and string values are
/// identifiers and IP literals: nothing to escape).
struct Line(String);

impl Line {
    fn new() -> Line {
        Line(String::from("{"))
    }
    fn raw(mut self, key: &str, value: impl std::fmt::Display) -> Line {
        use std::fmt::Write as _;
        if self.0.len() > 1 {
            self.0.push(',');
        }
        let _ = write!(self.0, "\"{key}\":{value}");
        self
    }
    fn text(self, key: &str, value: &str) -> Line {
        self.raw(key, format_args!("\"{value}\""))
    }
    fn print(mut self) {
        self.0.push_str("}\n");
        let mut out = io::stdout().lock();
        if out.write_all(self.0.as_bytes()).and_then(|_| out.flush()).is_err() {
            failed("cannot write to stdout");
        }
    }
}

/// The ready line: every listener is bound and listening. `port` is the bound
/// port, `threads` the worker threads or executors really used.
pub fn print_ready(a: &ServerArgs, port: u16, threads: usize) {
    let mut l = Line::new()
        .raw("ready", true)
        .text("scenario", a.scenario.name())
        .text("host", &a.host.to_string())
        .raw("port", port);
    if a.scenario == Scenario::Echo {
        l = l.raw("size", a.size).raw("uuids", a.uuids).raw("per_connection", a.per_connection);
    }
    l = l.raw("threads", threads);
    if a.variant_given {
        l = l.text("variant", a.variant);
    }
    l.print();
}

/// The echo final line. `c` holds the counts of every connection that ended.
pub fn print_echo_final(a: &ServerArgs, threads: usize, connections: u64, c: &Counts, open_at_stop: u64) {
    let mut l = Line::new()
        .text("scenario", "echo")
        .raw("size", a.size)
        .raw("uuids", a.uuids)
        .raw("per_connection", a.per_connection)
        .raw("threads", threads);
    if a.variant_given {
        l = l.text("variant", a.variant);
    }
    l.raw("connections", connections)
        .raw("requests", c.requests)
        .raw("uuids_generated", c.uuids_generated)
        .raw("bytes_in", c.bytes_in)
        .raw("bytes_out", c.bytes_out)
        .raw("partial", c.partial)
        .raw("open_at_stop", open_at_stop)
        .print();
}

/// The http final line. `connections`: `None` where the HTTP library does not
/// expose accepts (printed as null); `open_at_stop`: `None` where unknown.
pub fn print_http_final(a: &ServerArgs, threads: usize, connections: Option<u64>, c: &Counts, open_at_stop: Option<u64>) {
    let mut l = Line::new().text("scenario", "http").raw("threads", threads);
    if a.variant_given {
        l = l.text("variant", a.variant);
    }
    l = l
        .raw("requests", c.requests)
        .raw("connections", opt(connections))
        .raw("not_found", c.not_found)
        .raw("bad_requests", c.bad_requests);
    if let Some(open) = open_at_stop {
        l = l.raw("open_at_stop", open);
    }
    l.print();
}

fn opt(v: Option<u64>) -> String {
    v.map_or_else(|| "null".to_string(), |n| n.to_string())
}

/// Prints the scenario's final line and exits 0 (the runtime and whatever it
/// still holds are not torn down: the kernel closes what is left).
pub fn finish(a: &ServerArgs, threads: usize, connections: Option<u64>, c: &Counts, open_at_stop: u64) -> ! {
    match a.scenario {
        Scenario::Echo => print_echo_final(a, threads, connections.unwrap_or(0), c, open_at_stop),
        Scenario::Http => print_http_final(a, threads, connections, c, Some(open_at_stop)),
    }
    std::process::exit(0)
}

// ---------------------------------------------------------------- counts

/// One connection's counts (or one executor's): plain fields, owned by the
/// task or thread that serves it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// echo: replies written in full; http: 200 responses to /ping/ written.
    pub requests: u64,
    pub uuids_generated: u64,
    pub bytes_in: u64,
    pub bytes_out: u64,
    /// echo: connections that ended inside a request.
    pub partial: u64,
    pub not_found: u64,
    pub bad_requests: u64,
}

impl Counts {
    pub fn add(&mut self, o: &Counts) {
        self.requests += o.requests;
        self.uuids_generated += o.uuids_generated;
        self.bytes_in += o.bytes_in;
        self.bytes_out += o.bytes_out;
        self.partial += o.partial;
        self.not_found += o.not_found;
        self.bad_requests += o.bad_requests;
    }
}

/// The process's totals for the multi-thread runtimes, where a connection
/// may end on any thread. Touched once per connection, when it ends (one
/// relaxed add per non-zero count, then the release add of `ended`); never
/// per request.
#[repr(align(64))]
pub struct Totals {
    requests: AtomicU64,
    uuids_generated: AtomicU64,
    bytes_in: AtomicU64,
    bytes_out: AtomicU64,
    partial: AtomicU64,
    not_found: AtomicU64,
    bad_requests: AtomicU64,
    ended: AtomicU64,
}

impl Default for Totals {
    fn default() -> Self {
        Self::new()
    }
}

impl Totals {
    pub const fn new() -> Totals {
        Totals {
            requests: AtomicU64::new(0),
            uuids_generated: AtomicU64::new(0),
            bytes_in: AtomicU64::new(0),
            bytes_out: AtomicU64::new(0),
            partial: AtomicU64::new(0),
            not_found: AtomicU64::new(0),
            bad_requests: AtomicU64::new(0),
            ended: AtomicU64::new(0),
        }
    }

    /// A connection ended with these counts.
    pub fn add(&self, c: &Counts) {
        for (total, n) in [
            (&self.requests, c.requests),
            (&self.uuids_generated, c.uuids_generated),
            (&self.bytes_in, c.bytes_in),
            (&self.bytes_out, c.bytes_out),
            (&self.partial, c.partial),
            (&self.not_found, c.not_found),
            (&self.bad_requests, c.bad_requests),
        ] {
            if n != 0 {
                total.fetch_add(n, Ordering::Relaxed);
            }
        }
        // Release: whoever sees the connection ended sees its counts.
        self.ended.fetch_add(1, Ordering::Release);
    }

    /// Connections that ended so far.
    pub fn ended(&self) -> u64 {
        self.ended.load(Ordering::Acquire)
    }

    pub fn counts(&self) -> Counts {
        let _ = self.ended();
        Counts {
            requests: self.requests.load(Ordering::Relaxed),
            uuids_generated: self.uuids_generated.load(Ordering::Relaxed),
            bytes_in: self.bytes_in.load(Ordering::Relaxed),
            bytes_out: self.bytes_out.load(Ordering::Relaxed),
            partial: self.partial.load(Ordering::Relaxed),
            not_found: self.not_found.load(Ordering::Relaxed),
            bad_requests: self.bad_requests.load(Ordering::Relaxed),
        }
    }
}

// ---------------------------------------------------------------- echo

/// Bytes per UUID in a reply: "\n" + 36 characters.
pub const UUID_LINE: usize = 37;

/// The echo exchange, without the I/O. A connection owns one buffer of
/// S + 37U bytes ([`Echo::buffer`]): the request is read into its first S
/// bytes, the UUIDs are written after them, and the whole buffer is the reply.
/// After R replies (`per_connection`, when not 0) the server closes the
/// connection ([`Echo::replied`] says so).
#[derive(Clone, Copy, Debug)]
pub struct Echo {
    pub size: usize,
    pub uuids: usize,
    pub per_connection: u64,
}

impl Echo {
    pub fn new(a: &ServerArgs) -> Echo {
        Echo { size: a.size, uuids: a.uuids, per_connection: a.per_connection }
    }
    pub fn reply_len(&self) -> usize {
        self.size + UUID_LINE * self.uuids
    }
    /// The connection's buffer (allocated once per connection).
    pub fn buffer(&self) -> Vec<u8> {
        vec![0u8; self.reply_len()]
    }
    /// The S request bytes are in `buf[..S]`: generates the U UUIDs into the
    /// rest of the buffer and counts the request's bytes and UUIDs.
    pub fn make_reply(&self, buf: &mut [u8], c: &mut Counts) {
        put_uuids(&mut buf[self.size..self.reply_len()]);
        c.bytes_in += self.size as u64;
        c.uuids_generated += self.uuids as u64;
    }
    /// The reply was written in full. True when the connection has had its
    /// R replies and the server closes it now.
    #[must_use]
    pub fn replied(&self, c: &mut Counts) -> bool {
        c.requests += 1;
        c.bytes_out += self.reply_len() as u64;
        c.requests == self.per_connection
    }
    /// The connection ended (EOF or error) after `got` bytes of a request
    /// (0: between requests, the normal end).
    pub fn ended(&self, got: usize, c: &mut Counts) {
        if got > 0 {
            c.partial += 1;
            c.bytes_in += got as u64;
        }
    }
}

/// Fills `tail` (37 × U bytes) with U × ("\n" + a new UUID v4, lowercase,
/// hyphenated), formatted in place: no allocation.
pub fn put_uuids(tail: &mut [u8]) {
    debug_assert_eq!(tail.len() % UUID_LINE, 0);
    for line in tail.chunks_exact_mut(UUID_LINE) {
        line[0] = b'\n';
        uuid::Uuid::new_v4().hyphenated().encode_lower(&mut line[1..]);
    }
}

// ---------------------------------------------------------------- http

/// The token of `GET /ping/<token>` (1 … 64 of `[A-Za-z0-9_-]`), or `None`
/// for any other method or path (answered 404).
pub fn ping_token<'a>(method: &str, path: &'a str) -> Option<&'a str> {
    if method != "GET" {
        return None;
    }
    let token = path.strip_prefix(HTTP_PING_PREFIX)?;
    valid_token(token).then_some(token)
}

pub fn valid_token(t: &str) -> bool {
    (1..=64).contains(&t.len()) && t.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// A connection's input buffer starts at this size...
const HTTP_BUF: usize = 4096;
/// ... and grows up to this for a long request head; longer is answered 431.
const HTTP_MAX_HEAD: usize = 64 * 1024;
/// Headers parsed per request; more is answered 431.
const HTTP_MAX_HEADERS: usize = 32;

/// What the connection does after the responses in `out` are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HttpNext {
    /// Read more (keep-alive, or a request is incomplete).
    Read,
    /// Close the connection (`Connection: close`, HTTP/1.0, a 400).
    Close,
}

/// One HTTP/1.1 connection over httparse, without the I/O: read into
/// [`HttpConn::read_range`] of `inbuf`, call [`HttpConn::received`], then
/// [`HttpConn::process`], write `out` in full, call [`HttpConn::written`],
/// and read again or close as `process` said. Every complete request in the input is answered,
/// so two requests in one read get two responses in one write. Buffers are
/// allocated once per connection and reused.
pub struct HttpConn {
    /// Input; the unparsed bytes are `inbuf[start..end]`.
    pub inbuf: Vec<u8>,
    start: usize,
    end: usize,
    /// Body bytes of the last request still to be discarded.
    skip: u64,
    /// Responses to write.
    pub out: Vec<u8>,
    /// Counts of the responses in `out`, moved to `counts` once written.
    pending: Counts,
    /// Counts of the responses written.
    pub counts: Counts,
}

impl Default for HttpConn {
    fn default() -> Self {
        Self::new()
    }
}

impl HttpConn {
    pub fn new() -> HttpConn {
        HttpConn {
            inbuf: vec![0u8; HTTP_BUF],
            start: 0,
            end: 0,
            skip: 0,
            out: Vec::with_capacity(256),
            pending: Counts::default(),
            counts: Counts::default(),
        }
    }

    /// Where the next read goes (never empty): the free space after the
    /// unparsed bytes, moved to the front or grown when needed.
    pub fn read_range(&mut self) -> Range<usize> {
        if self.end == self.inbuf.len() {
            if self.start > 0 {
                self.inbuf.copy_within(self.start..self.end, 0);
                self.end -= self.start;
                self.start = 0;
            } else {
                // process() answers 431 before the head outgrows the limit.
                let len = (self.inbuf.len() * 2).min(HTTP_MAX_HEAD);
                self.inbuf.resize(len, 0);
            }
        }
        self.end..self.inbuf.len()
    }

    /// The slice form of [`HttpConn::read_range`].
    pub fn read_buf(&mut self) -> &mut [u8] {
        let r = self.read_range();
        &mut self.inbuf[r]
    }

    /// `n` bytes were read into the range [`HttpConn::read_range`] gave.
    pub fn received(&mut self, n: usize) {
        self.end += n;
        debug_assert!(self.end <= self.inbuf.len());
    }

    /// `out` was written in full: counts its responses and empties it.
    pub fn written(&mut self) {
        self.out.clear();
        self.counts.add(&self.pending);
        self.pending = Counts::default();
    }

    /// Answers every complete request in the input (into `out`).
    pub fn process(&mut self) -> HttpNext {
        loop {
            if self.skip > 0 {
                let k = self.skip.min((self.end - self.start) as u64);
                self.start += k as usize;
                self.skip -= k;
                if self.skip > 0 {
                    return HttpNext::Read;
                }
            }
            if self.start == self.end {
                self.start = 0;
                self.end = 0;
                return HttpNext::Read;
            }
            let mut headers = [httparse::EMPTY_HEADER; HTTP_MAX_HEADERS];
            let mut req = httparse::Request::new(&mut headers);
            match req.parse(&self.inbuf[self.start..self.end]) {
                Ok(httparse::Status::Complete(head)) => {
                    let r = answer(&req, &mut self.out, &mut self.pending);
                    self.start += head;
                    match r {
                        Some(body) => self.skip = body,
                        None => return HttpNext::Close,
                    }
                }
                Ok(httparse::Status::Partial) => {
                    if self.end - self.start >= HTTP_MAX_HEAD {
                        reject(&mut self.out, &mut self.pending, "431 Request Header Fields Too Large");
                        return HttpNext::Close;
                    }
                    return HttpNext::Read;
                }
                Err(httparse::Error::TooManyHeaders) => {
                    reject(&mut self.out, &mut self.pending, "431 Request Header Fields Too Large");
                    return HttpNext::Close;
                }
                Err(_) => {
                    reject(&mut self.out, &mut self.pending, "400 Bad Request");
                    return HttpNext::Close;
                }
            }
        }
    }
}

/// Answers one parsed request into `out`. `Some(body)`: keep the connection
/// and discard the `body` bytes that follow the head; `None`: close it.
fn answer(req: &httparse::Request<'_, '_>, out: &mut Vec<u8>, c: &mut Counts) -> Option<u64> {
    // Complete requests always have these three.
    let (method, path, minor) = (req.method.unwrap_or(""), req.path.unwrap_or(""), req.version.unwrap_or(1));
    let (mut close_token, mut keep_alive_token, mut chunked) = (false, false, false);
    let mut length: Option<u64> = None;
    for h in req.headers.iter() {
        if h.name.eq_ignore_ascii_case("connection") {
            for t in h.value.split(|&b| b == b',') {
                let t = t.trim_ascii();
                close_token |= t.eq_ignore_ascii_case(b"close");
                keep_alive_token |= t.eq_ignore_ascii_case(b"keep-alive");
            }
        } else if h.name.eq_ignore_ascii_case("content-length") {
            let n = std::str::from_utf8(h.value.trim_ascii())
                .ok()
                .filter(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
                .and_then(|s| s.parse::<u64>().ok());
            match (n, length) {
                (Some(n), None) => length = Some(n),
                (Some(n), Some(m)) if n == m => {}
                _ => {
                    reject(out, c, "400 Bad Request");
                    return None;
                }
            }
        } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
            chunked = true;
        }
    }
    // HTTP/1.1 keeps the connection unless told to close; 1.0 closes unless
    // told to keep it. A body this server does not frame (Transfer-Encoding)
    // is answered, then the connection is closed.
    let keep = !chunked && if minor == 1 { !close_token } else { keep_alive_token };
    let connection: &[u8] = match (keep, minor) {
        (false, _) => b"Connection: close\r\n",
        (true, 0) => b"Connection: keep-alive\r\n",
        (true, _) => b"",
    };
    match ping_token(method, path) {
        Some(token) => {
            out.extend_from_slice(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: ");
            push_decimal(out, token.len());
            out.extend_from_slice(b"\r\n");
            out.extend_from_slice(connection);
            out.extend_from_slice(b"\r\n");
            out.extend_from_slice(token.as_bytes());
            c.requests += 1;
        }
        None => {
            out.extend_from_slice(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n");
            out.extend_from_slice(connection);
            out.extend_from_slice(b"\r\n");
            c.not_found += 1;
        }
    }
    keep.then_some(length.unwrap_or(0))
}

fn reject(out: &mut Vec<u8>, c: &mut Counts, status: &str) {
    out.extend_from_slice(b"HTTP/1.1 ");
    out.extend_from_slice(status.as_bytes());
    out.extend_from_slice(b"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
    c.bad_requests += 1;
}

fn push_decimal(out: &mut Vec<u8>, mut n: usize) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[i..]);
}

// ---------------------------------------------------------------- stop

/// SIGTERM and SIGINT, caught from the moment this is made (before the ready
/// line, so a signal right after it is not lost); [`StopSignal::wait`]
/// blocks the calling thread until one arrives. For the runtimes without a
/// signal API of their own: a plain thread waits, then tells the runtime.
pub struct StopSignal(signal_hook::iterator::Signals);

impl StopSignal {
    pub fn new() -> StopSignal {
        use signal_hook::consts::{SIGINT, SIGTERM};
        match signal_hook::iterator::Signals::new([SIGTERM, SIGINT]) {
            Ok(s) => StopSignal(s),
            Err(e) => failed(format_args!("cannot catch SIGTERM: {}", error_text(&e))),
        }
    }

    pub fn wait(mut self) {
        let _ = self.0.forever().next();
    }

    /// Starts a thread that waits for the signal, then runs `then`.
    pub fn spawn(self, then: impl FnOnce() + Send + 'static) {
        let started = std::thread::Builder::new()
            .name("stop-signal".into())
            .stack_size(64 * 1024)
            .spawn(move || {
                self.wait();
                then();
            });
        if let Err(e) = started {
            refused(format_args!("cannot start the signal thread: {}", error_text(&e)));
        }
    }
}

impl Default for StopSignal {
    fn default() -> Self {
        Self::new()
    }
}

/// Stops a listener from accepting: `shutdown(2)` on a listening socket
/// makes every accept waiting on it (blocking, epoll or io_uring) return
/// EINVAL, and new connections are refused. The descriptor stays open until
/// its owner drops it.
pub fn shutdown_listener(fd: std::os::fd::RawFd) {
    // SAFETY: plain syscall on a descriptor the caller keeps open.
    unsafe {
        libc::shutdown(fd, libc::SHUT_RDWR);
    }
}

/// Set when the server was told to stop: an accept error after it is the end
/// of accepting, not a failure.
static STOPPING: AtomicBool = AtomicBool::new(false);

pub fn set_stopping() {
    STOPPING.store(true, Ordering::SeqCst);
}

pub fn stopping() -> bool {
    STOPPING.load(Ordering::SeqCst)
}

// ---------------------------------------------------------------- failures

/// An accept error while serving. Out of descriptors or memory: exit 3 with
/// how far the server got. Anything else (a client that reset before its
/// connection was accepted, ...) only loses that connection: returns.
pub fn accept_error(accepted: u64, e: &io::Error) {
    if super::is_resource_error(e) || e.raw_os_error() == Some(libc::ENOBUFS) {
        refused(format_args!("accepted {accepted} connections, then accept failed: {}", error_text(e)));
    }
}

/// Binding or listening failed: exit 3 naming the address.
pub fn bind_refused(addr: SocketAddr, e: &io::Error) -> ! {
    refused(format_args!("cannot listen on {addr}: {}", error_text(e)))
}

/// Connections accepted so far, for the message when a thread-per-connection
/// server cannot start a thread (see [`note_accepted`]).
static ACCEPTED: AtomicU64 = AtomicU64::new(0);
static TRACKING: AtomicBool = AtomicBool::new(false);

/// A thread-per-connection server records its accepts here, so that a
/// connection thread that dies setting itself up (std panics when it cannot
/// map its signal stack) is reported as "accepted K connections, then ...".
#[inline]
pub fn note_accepted(accepted: u64) {
    TRACKING.store(true, Ordering::Relaxed);
    ACCEPTED.store(accepted, Ordering::Relaxed);
}

fn install_server_panic_hook() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if TRACKING.load(Ordering::Relaxed) {
            let payload = info.payload();
            let msg = payload
                .downcast_ref::<&str>()
                .copied()
                .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
                .unwrap_or("panic");
            if ["os error 11)", "os error 12)", "os error 23)", "os error 24)"].iter().any(|r| msg.contains(r)) {
                let reason = msg.rsplit(": ").next().unwrap_or(msg);
                let reason = reason.find(" (os error ").map_or(reason, |i| &reason[..i]);
                refused(format_args!(
                    "accepted {} connections, then a connection thread failed to start: {reason}",
                    ACCEPTED.load(Ordering::Relaxed)
                ));
            }
        }
        previous(info)
    }));
}

// ---------------------------------------------------------------- listeners

/// Listen backlog of the listeners made here (tokio's and monoio's default).
pub const BACKLOG: i32 = 1024;

/// Binds `n` listeners to `addr` for a thread-per-core server, one per
/// executor. With n > 1 each has SO_REUSEPORT (the kernel spreads new
/// connections over them): the first binds the port asked (0: the kernel
/// picks a free one), the others bind the port it got. Because SO_REUSEPORT
/// would also let this group join a port another server of the same user
/// holds with SO_REUSEPORT, a port given explicitly is first bound once
/// without it, so a busy port fails as it would for a single listener. Exits
/// 3 when the machine refuses. The listeners are blocking, as std makes them.
pub fn bind_group(addr: SocketAddr, n: usize) -> Vec<TcpListener> {
    use socket2::{Domain, Protocol, Socket, Type};
    if n > 1 && addr.port() != 0 {
        if let Err(e) = TcpListener::bind(addr) {
            bind_refused(addr, &e);
        }
    }
    let mut port = addr.port();
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let at = SocketAddr::new(addr.ip(), port);
        let made = (|| {
            let s = Socket::new(Domain::for_address(at), Type::STREAM.cloexec(), Some(Protocol::TCP))?;
            s.set_reuse_address(true)?;
            if n > 1 {
                s.set_reuse_port(true)?;
            }
            s.bind(&at.into())?;
            s.listen(BACKLOG)?;
            Ok::<TcpListener, io::Error>(s.into())
        })();
        match made {
            Ok(l) => {
                if port == 0 {
                    port = l.local_addr().map(|a| a.port()).unwrap_or_else(|e| bind_refused(at, &e));
                }
                out.push(l);
            }
            Err(e) => bind_refused(at, &e),
        }
    }
    out
}

/// The bound port of a listener.
pub fn local_port(l: &TcpListener) -> u16 {
    l.local_addr().map(|a| a.port()).unwrap_or_else(|e| failed(format_args!("cannot read the bound port: {}", error_text(&e))))
}

// ---------------------------------------------------------------- thread per core

enum ShardMsg {
    Ready,
    Refused(String),
    Done { accepted: u64, counts: Counts, open: u64 },
}

/// One executor of a thread-per-core server: its index, its own listener
/// (from [`bind_group`]) and the line back to the main thread, which prints
/// the ready line once every shard is ready and the final line once every
/// shard is done.
pub struct Shard {
    pub index: usize,
    pub listener: Option<TcpListener>,
    tx: std::sync::mpsc::Sender<(usize, ShardMsg)>,
}

impl Shard {
    /// The executor runs and its listener is registered with it.
    pub fn ready(&self) {
        let _ = self.tx.send((self.index, ShardMsg::Ready));
    }
    /// The executor could not start (io_uring setup): the program exits 3
    /// with this reason.
    pub fn refused(&self, why: impl std::fmt::Display) {
        let _ = self.tx.send((self.index, ShardMsg::Refused(why.to_string())));
    }
    /// The executor stopped accepting and waited for its connections:
    /// `accepted` in all, `counts` of those that ended, `open` still open.
    /// The executor must not tear down after this (the main thread exits the
    /// process): it may park or wait forever.
    pub fn done(&self, accepted: u64, counts: Counts, open: u64) {
        let _ = self.tx.send((self.index, ShardMsg::Done { accepted, counts, open }));
    }
}

/// One executor's counts in a thread-per-core server: plain cells, touched
/// only by that executor's thread (share it with `Rc`). A connection calls
/// [`LocalTotals::opened`] when accepted and [`LocalTotals::closed`] with its
/// counts when it ends.
#[derive(Default)]
pub struct LocalTotals {
    counts: std::cell::Cell<Counts>,
    open: std::cell::Cell<u64>,
}

impl LocalTotals {
    pub fn opened(&self) {
        self.open.set(self.open.get() + 1);
    }
    pub fn closed(&self, c: &Counts) {
        let mut t = self.counts.get();
        t.add(c);
        self.counts.set(t);
        self.open.set(self.open.get() - 1);
    }
    /// Connections accepted and not yet ended.
    pub fn open(&self) -> u64 {
        self.open.get()
    }
    pub fn counts(&self) -> Counts {
        self.counts.get()
    }
}

/// Runs a thread-per-core server of `n` executors and never returns:
/// binds the SO_REUSEPORT group, calls `start` once per shard (it starts the
/// executor on a thread of its own and returns at once; an error is a thread
/// that could not start), prints the ready line when every shard said
/// ready, and on SIGTERM/SIGINT shuts every listener down (each executor's
/// pending accept fails, and it waits up to 2 s for its connections, then
/// reports), adds up the shards' counts, prints the final line and exits 0.
pub fn serve_per_core(a: &ServerArgs, n: usize, mut start: impl FnMut(Shard) -> io::Result<()>) -> ! {
    use std::os::fd::AsRawFd;
    use std::sync::mpsc;
    use std::time::Instant;

    let stop = StopSignal::new();
    let listeners = bind_group(a.addr(), n);
    let port = local_port(&listeners[0]);
    let fds: Vec<_> = listeners.iter().map(|l| l.as_raw_fd()).collect();
    let (tx, rx) = mpsc::channel();
    for (index, listener) in listeners.into_iter().enumerate() {
        if let Err(e) = start(Shard { index, listener: Some(listener), tx: tx.clone() }) {
            refused(format_args!("started {index} of {n} executors: {}", error_text(&e)));
        }
    }
    drop(tx);
    let mut ready = 0;
    while ready < n {
        match rx.recv() {
            Ok((_, ShardMsg::Ready)) => ready += 1,
            Ok((i, ShardMsg::Refused(why))) => refused(format_args!("executor {i} of {n}: {why}")),
            Ok((i, ShardMsg::Done { .. })) => failed(format_args!("executor {i} stopped before it was ready")),
            Err(_) => failed("an executor ended before it was ready"),
        }
    }
    print_ready(a, port, n);

    stop.wait();
    set_stopping();
    for fd in fds {
        shutdown_listener(fd);
    }
    // Each shard waits at most STOP_WAIT; allow it a little more to report.
    let deadline = Instant::now() + STOP_WAIT + Duration::from_millis(1500);
    let (mut accepted, mut counts, mut open, mut done) = (0u64, Counts::default(), 0u64, 0);
    while done < n {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok((_, ShardMsg::Done { accepted: k, counts: c, open: o })) => {
                accepted += k;
                counts.add(&c);
                open += o;
                done += 1;
            }
            Ok(_) => {}
            Err(_) => break,
        }
    }
    if done < n {
        let _ = writeln!(io::stderr(), "{} of {n} executors did not report at stop; their counts are missing", n - done);
    }
    finish(a, n, Some(accepted), &counts, open)
}

// ---------------------------------------------------------------- machine

/// The CPUs in the process's affinity mask, in order.
pub fn affinity_cpus() -> Vec<usize> {
    // SAFETY: sched_getaffinity fills the zeroed set it is given.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return (0..super::available_cores()).collect();
        }
        (0..libc::CPU_SETSIZE as usize).filter(|&c| libc::CPU_ISSET(c, &set)).collect()
    }
}

/// Raises RLIMIT_MEMLOCK for io_uring (rings and registered buffers are
/// locked memory on kernels that charge them to it): to unlimited where
/// allowed (root), else the soft limit to the hard one. Returns the limit now
/// in force, for messages, e.g. "unlimited" or "8192 KiB".
pub fn raise_memlock() -> String {
    // SAFETY: plain syscalls on a local struct.
    unsafe {
        let inf = libc::rlimit { rlim_cur: libc::RLIM_INFINITY, rlim_max: libc::RLIM_INFINITY };
        if libc::setrlimit(libc::RLIMIT_MEMLOCK, &inf) != 0 {
            let mut cur = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
            if libc::getrlimit(libc::RLIMIT_MEMLOCK, &mut cur) == 0 && cur.rlim_cur < cur.rlim_max {
                cur.rlim_cur = cur.rlim_max;
                libc::setrlimit(libc::RLIMIT_MEMLOCK, &cur);
            }
        }
        memlock_limit()
    }
}

/// RLIMIT_MEMLOCK's soft limit as text.
pub fn memlock_limit() -> String {
    // SAFETY: plain syscall on a local struct.
    unsafe {
        let mut cur = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
        if libc::getrlimit(libc::RLIMIT_MEMLOCK, &mut cur) != 0 {
            return "unknown".into();
        }
        if cur.rlim_cur == libc::RLIM_INFINITY {
            "unlimited".into()
        } else {
            format!("{} KiB", cur.rlim_cur / 1024)
        }
    }
}

/// Whether this process may create an io_uring: sets one up (one entry)
/// and closes it. For runtimes that panic instead of returning an error when
/// io_uring is refused (seccomp, io_uring_disabled, an old kernel).
pub fn probe_io_uring() -> io::Result<()> {
    // struct io_uring_params: 120 bytes, all zero = default setup.
    let mut params = [0u8; 120];
    // SAFETY: io_uring_setup(2) with a zeroed params struct of its size.
    let fd = unsafe { libc::syscall(libc::SYS_io_uring_setup, 1u32, params.as_mut_ptr()) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: closes the descriptor just made.
    unsafe { libc::close(fd as i32) };
    Ok(())
}

/// Why io_uring could not be set up (memlock, seccomp, an old kernel), for
/// [`Shard::refused`], e.g. "cannot set up io_uring: Operation not permitted
/// (RLIMIT_MEMLOCK unlimited)".
pub fn io_uring_reason(e: &dyn std::fmt::Display) -> String {
    let text = e.to_string();
    let text = match text.rfind(" (os error ") {
        Some(i) if text.ends_with(')') => text[..i].to_string(),
        _ => text,
    };
    format!("cannot set up io_uring: {text} (RLIMIT_MEMLOCK {})", memlock_limit())
}

// ---------------------------------------------------------------- tests

#[cfg(test)]
mod tests {
    use super::*;

    const SPEC: Spec = Spec { id: "rust-test", threads: ThreadsMode::Flag, variants: &["fs"], cpuprofile: false, channels: &[] };
    const NONE: Spec = Spec { threads: ThreadsMode::None, ..SPEC };
    const SERVERS: Servers = Servers { echo: Some(&["concurrent", "serial"]), http: Some(&[]) };
    const HTTP_ONLY: Servers = Servers { echo: None, http: Some(&["httparse", "hyper"]) };

    fn p(spec: &Spec, servers: &Servers, s: &str) -> Result<Option<ServerArgs>, String> {
        let args: Vec<String> = s.split_whitespace().map(String::from).collect();
        parse_server_from(spec, servers, &args)
    }
    fn ok(spec: &Spec, servers: &Servers, s: &str) -> ServerArgs {
        p(spec, servers, s).unwrap_or_else(|e| panic!("{s}: {e}")).unwrap_or_else(|| panic!("{s}: not a server"))
    }

    #[test]
    fn defaults_and_forms() {
        let a = ok(&SPEC, &SERVERS, "echo");
        assert_eq!((a.host.to_string().as_str(), a.port, a.size, a.uuids, a.per_connection), ("127.0.0.1", 0, 17, 5, 0));
        assert_eq!((a.threads, a.variant, a.variant_given, a.allow_remote), (None, "concurrent", false, false));
        assert_eq!(a.reply_len(), 17 + 37 * 5);
        let a = ok(&SPEC, &SERVERS, "echo --uuids=0 --size 1048576 --port=65535 --host ::1 --threads 3 --variant serial");
        assert_eq!((a.host.to_string().as_str(), a.port, a.size, a.uuids), ("::1", 65535, 1 << 20, 0));
        assert_eq!((a.threads, a.variant, a.variant_given), (Some(3), "serial", true));
        let a = ok(&SPEC, &SERVERS, "http --allow-remote --host 10.0.0.1 --port 8080");
        assert_eq!((a.host.to_string().as_str(), a.port, a.allow_remote, a.variant), ("10.0.0.1", 8080, true, ""));
        let a = ok(&SPEC, &SERVERS, "echo --host 127.5.6.7 --size 1 --uuids 1000 --per-connection 1000000000");
        assert_eq!((a.size, a.uuids, a.per_connection), (1, 1000, 1_000_000_000));
        assert_eq!(ok(&SPEC, &HTTP_ONLY, "http").variant, "httparse");
        assert_eq!(ok(&SPEC, &HTTP_ONLY, "http --variant hyper").variant, "hyper");
        assert_eq!(ok(&NONE, &SERVERS, "echo").threads, None);
        // other scenarios are the batch parser's
        assert_eq!(p(&SPEC, &SERVERS, "chain -w 1"), Ok(None));
        assert_eq!(p(&SPEC, &SERVERS, ""), Ok(None));
    }

    #[test]
    fn bad_inputs() {
        for s in [
            "echo --host localhost",
            "echo --host 10.0.0.1",
            "echo --host 0.0.0.0", // refused: not a loopback address
            "echo --host ::",
            "echo --host [::1]",
            "echo --host 127.1",
            "echo --host ::ffff:127.0.0.1",
            "echo --host",
            "echo --host=",
            "echo --port 70000",
            "echo --port 65536",
            "echo --port -1",
            "echo --port x",
            "echo --size 0",
            "echo --size 1048577",
            "echo --size -5",
            "echo --uuids -1",
            "echo --uuids 1001",
            "echo --per-connection -1",
            "echo --per-connection 1000000001",
            "echo --per-connection 1 --per-connection 1",
            "http --per-connection 1",
            "echo --threads 0",
            "echo --threads -2",
            "echo --nope 1",
            "echo -p 1",
            "echo --port 1 --port 2",
            "echo --port 1 --port=1",
            "echo --allow-remote --allow-remote",
            "echo --allow-remote=yes",
            "echo --variant nope",
            "echo stray",
            "http --size 17",
            "http --uuids 1",
            "http --variant httparse",
        ] {
            assert!(p(&SPEC, &SERVERS, s).is_err(), "accepted: {s}");
        }
        assert!(p(&NONE, &SERVERS, "echo --threads 2").is_err());
        assert!(p(&SPEC, &HTTP_ONLY, "echo").is_err());
        assert!(p(&SPEC, &HTTP_ONLY, "http --variant serial").is_err());
        assert_eq!(
            p(&SPEC, &SERVERS, "echo --host localhost").unwrap_err(),
            "--host must be an IPv4 or IPv6 address literal, got 'localhost'"
        );
        assert_eq!(p(&SPEC, &SERVERS, "echo --port 70000").unwrap_err(), "--port must be 0 … 65535, got 70000");
        assert_eq!(p(&SPEC, &SERVERS, "echo --uuids -1").unwrap_err(), "--uuids must not be negative, got -1");
        assert_eq!(p(&SPEC, &SERVERS, "echo --size 0").unwrap_err(), "--size must be positive, got 0");
    }

    #[test]
    fn echo_reply() {
        let e = Echo { size: 5, uuids: 3, per_connection: 2 };
        let mut buf = e.buffer();
        assert_eq!(buf.len(), 5 + 3 * 37);
        buf[..5].copy_from_slice(b"hello");
        let mut c = Counts::default();
        e.make_reply(&mut buf, &mut c);
        assert!(!e.replied(&mut c));
        let text = std::str::from_utf8(&buf).unwrap();
        let mut parts = text.split('\n');
        assert_eq!(parts.next(), Some("hello"));
        let ids: Vec<&str> = parts.collect();
        assert_eq!(ids.len(), 3);
        for id in &ids {
            let u = uuid::Uuid::parse_str(id).unwrap();
            assert_eq!(u.get_version_num(), 4);
            assert_eq!(u.get_variant(), uuid::Variant::RFC4122);
            assert_eq!(*id, u.hyphenated().to_string());
            assert!(!id.bytes().any(|b| b.is_ascii_uppercase()));
        }
        assert!(ids[0] != ids[1] && ids[1] != ids[2]);
        assert_eq!(c, Counts { requests: 1, uuids_generated: 3, bytes_in: 5, bytes_out: 116, ..Counts::default() });
        e.ended(2, &mut c);
        assert_eq!((c.partial, c.bytes_in), (1, 7));
        e.ended(0, &mut c);
        assert_eq!(c.partial, 1);
        // the R-th reply closes the connection (R = 0: none does)
        assert!(e.replied(&mut c));
        assert!(!Echo { per_connection: 0, ..e }.replied(&mut c));
        // U = 0: the reply is the request
        let e = Echo { size: 1, uuids: 0, per_connection: 0 };
        let mut buf = e.buffer();
        buf[0] = b'x';
        e.make_reply(&mut buf, &mut Counts::default());
        assert_eq!(buf, b"x");
    }

    #[test]
    fn totals() {
        let t = Totals::new();
        t.add(&Counts { requests: 2, bytes_in: 10, ..Counts::default() });
        t.add(&Counts { requests: 1, not_found: 1, ..Counts::default() });
        assert_eq!(t.ended(), 2);
        assert_eq!(t.counts(), Counts { requests: 3, bytes_in: 10, not_found: 1, ..Counts::default() });
    }

    /// Feeds `input` to a connection in pieces of `step` bytes; returns the
    /// output and whether the connection closed.
    fn feed(input: &[u8], step: usize) -> (String, HttpNext, Counts) {
        let mut c = HttpConn::new();
        let mut out = Vec::new();
        let mut next = HttpNext::Read;
        for piece in input.chunks(step) {
            let mut piece = piece;
            while !piece.is_empty() {
                let buf = c.read_buf();
                let n = buf.len().min(piece.len());
                buf[..n].copy_from_slice(&piece[..n]);
                c.received(n);
                piece = &piece[n..];
                next = c.process();
                out.extend_from_slice(&c.out);
                c.written();
                if next == HttpNext::Close {
                    return (String::from_utf8(out).unwrap(), next, c.counts);
                }
            }
        }
        (String::from_utf8(out).unwrap(), next, c.counts)
    }

    const OK_A: &str = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 3\r\n\r\nt-1";

    #[test]
    fn http_ping_and_keep_alive() {
        for step in [1, 7, 1000] {
            let (out, next, c) = feed(b"GET /ping/t-1 HTTP/1.1\r\nHost: 127.0.0.1:1\r\n\r\n", step);
            assert_eq!(out, OK_A);
            assert_eq!(next, HttpNext::Read);
            assert_eq!((c.requests, c.not_found, c.bad_requests), (1, 0, 0));
        }
        // two requests in one read: two responses
        let (out, next, c) = feed(b"GET /ping/t-1 HTTP/1.1\r\n\r\nGET /ping/Z_9 HTTP/1.1\r\nHost: x\r\n\r\n", 4096);
        assert_eq!(out, format!("{OK_A}HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 3\r\n\r\nZ_9"));
        assert_eq!((next, c.requests), (HttpNext::Read, 2));
        let long = "a".repeat(64);
        let (out, _, c) = feed(format!("GET /ping/{long} HTTP/1.1\r\n\r\n").as_bytes(), 4096);
        assert!(out.ends_with(&format!("Content-Length: 64\r\n\r\n{long}")));
        assert_eq!(c.requests, 1);
    }

    #[test]
    fn http_close_404_400() {
        let (out, next, _) = feed(b"GET /ping/t-1 HTTP/1.1\r\nConnection: Close\r\n\r\nGET /ping/x HTTP/1.1\r\n\r\n", 4096);
        assert_eq!(out, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 3\r\nConnection: close\r\n\r\nt-1");
        assert_eq!(next, HttpNext::Close);
        // HTTP/1.0 closes unless keep-alive
        let (_, next, _) = feed(b"GET /ping/t-1 HTTP/1.0\r\n\r\n", 4096);
        assert_eq!(next, HttpNext::Close);
        let (out, next, _) = feed(b"GET /ping/t-1 HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", 4096);
        assert!(out.contains("Connection: keep-alive\r\n"));
        assert_eq!(next, HttpNext::Read);
        // other paths and methods: 404, connection kept
        for req in [
            "GET /nothing-here HTTP/1.1\r\n\r\n",
            "GET /ping/ HTTP/1.1\r\n\r\n",
            "GET /ping/a.b HTTP/1.1\r\n\r\n",
            "GET /ping/a/b HTTP/1.1\r\n\r\n",
            "GET /ping/abc?x=1 HTTP/1.1\r\n\r\n",
            "HEAD /ping/abc HTTP/1.1\r\n\r\n",
        ] {
            let (out, next, c) = feed(req.as_bytes(), 4096);
            assert_eq!(out, "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n", "{req}");
            assert_eq!((next, c.not_found, c.requests), (HttpNext::Read, 1, 0));
        }
        let (out, _, _) = feed(format!("GET /ping/{} HTTP/1.1\r\n\r\n", "a".repeat(65)).as_bytes(), 4096);
        assert!(out.starts_with("HTTP/1.1 404"));
        // a body is skipped, then the next request is answered
        let (out, next, c) = feed(b"POST /ping/x HTTP/1.1\r\nContent-Length: 5\r\n\r\nhelloGET /ping/t-1 HTTP/1.1\r\n\r\n", 3);
        assert_eq!(out, format!("HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n{OK_A}"));
        assert_eq!((next, c.not_found, c.requests), (HttpNext::Read, 1, 1));
        // malformed: 400 and close
        for req in [
            &b"THIS IS NOT HTTP\r\n\r\n"[..],
            b"GET /ping/x HTTP/1.1\r\nbad header\r\n\r\n",
            b"GET /ping/x HTTP/1.1\r\nContent-Length: x\r\n\r\n",
            b"GET /ping/x HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
            b"\x00\x01\x02\r\n\r\n",
        ] {
            let (out, next, c) = feed(req, 4096);
            assert_eq!(out, "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
            assert_eq!((next, c.bad_requests), (HttpNext::Close, 1));
        }
        // a head that never ends: 431 once it passes the limit
        let mut huge = b"GET /ping/x HTTP/1.1\r\nX: ".to_vec();
        huge.resize(HTTP_MAX_HEAD + 10, b'a');
        let (out, next, _) = feed(&huge, 1000);
        assert!(out.starts_with("HTTP/1.1 431"));
        assert_eq!(next, HttpNext::Close);
    }

    #[test]
    fn tokens() {
        assert_eq!(ping_token("GET", "/ping/abc-_XYZ09"), Some("abc-_XYZ09"));
        assert_eq!(ping_token("POST", "/ping/abc"), None);
        assert_eq!(ping_token("GET", "/pingabc"), None);
        assert!(valid_token(&"x".repeat(64)) && !valid_token(&"x".repeat(65)) && !valid_token(""));
    }

    #[test]
    fn decimal() {
        for n in [0usize, 7, 10, 64, 12345] {
            let mut v = Vec::new();
            push_decimal(&mut v, n);
            assert_eq!(v, n.to_string().as_bytes());
        }
    }

    #[test]
    fn busy_port_and_group() {
        let group = bind_group("127.0.0.1:0".parse().unwrap(), 3);
        let port = local_port(&group[0]);
        assert!(group.iter().all(|l| local_port(l) == port));
        // a plain bind to a port the group holds fails (exit 3 in bind_group)
        assert!(TcpListener::bind(("127.0.0.1", port)).is_err());
        assert!(!affinity_cpus().is_empty());
    }
}
