//! Shared helper of the corobench Rust implementations (see docs/protocol.md):
//! flag parsing and validation, the event type, the one-line JSON result,
//! exit codes, and the `--cpuprofile` flame graph. The batch scenarios'
//! bodies for the async runtimes are in [`batch`]; the server scenarios
//! (echo, http) have their own module, [`server`].
//!
//! Every runtime crate calls [`parse_args`] first and prints its result with
//! [`Output`]. Bad input exits 2, a refused resource exits 3, anything else
//! that goes wrong exits 1; each with one line on stderr and nothing on stdout.

use std::collections::HashMap;
use std::fmt::Display;
use std::fs::File;
use std::io::{self, Write};
use std::sync::atomic::{AtomicU64, Ordering};

pub mod batch;
pub mod server;

// ---------------------------------------------------------------- exits

/// Set by the first thread that decides the process must end, so that only
/// one line ever reaches stderr (with one OS thread per task, several threads
/// can hit the same refusal at once).
static EXITING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

fn exit_with(code: i32, msg: std::fmt::Arguments<'_>) -> ! {
    if EXITING.swap(true, std::sync::atomic::Ordering::SeqCst) {
        // Another thread is already reporting and exiting.
        loop {
            std::thread::park();
        }
    }
    let _ = writeln!(io::stderr(), "{msg}");
    std::process::exit(code)
}

/// Bad input: one line on stderr, exit 2.
pub fn bad_input(msg: impl Display) -> ! {
    exit_with(2, format_args!("{msg}"))
}

/// The machine refused a resource: one line on stderr, exit 3.
pub fn refused(msg: impl Display) -> ! {
    exit_with(3, format_args!("{msg}"))
}

/// Any other failure: one line on stderr, exit 1.
pub fn failed(msg: impl Display) -> ! {
    exit_with(1, format_args!("{msg}"))
}

/// `io::Error` text without Rust's " (os error N)" suffix, e.g.
/// "Resource temporarily unavailable".
pub fn error_text(e: &io::Error) -> String {
    let s = e.to_string();
    match s.rfind(" (os error ") {
        Some(i) if s.ends_with(')') => s[..i].to_string(),
        _ => s,
    }
}

/// True when an I/O error means the machine ran out of something
/// (threads, processes, memory, file descriptors) rather than a bug.
pub fn is_resource_error(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc_errno::EAGAIN)
            | Some(libc_errno::ENOMEM)
            | Some(libc_errno::EMFILE)
            | Some(libc_errno::ENFILE)
            | Some(libc_errno::ENOSPC)
    ) || e.kind() == io::ErrorKind::OutOfMemory
}

/// Linux errno values (avoids a libc dependency for five constants).
mod libc_errno {
    pub const EAGAIN: i32 = 11;
    pub const ENOMEM: i32 = 12;
    pub const ENFILE: i32 = 23;
    pub const EMFILE: i32 = 24;
    pub const ENOSPC: i32 = 28;
}

/// Exit for an I/O error met while doing the benchmark's work: exit 3 when
/// the machine refused a resource, else exit 1. `what` names the operation.
pub fn io_failure(what: impl Display, e: &io::Error) -> ! {
    if is_resource_error(e) {
        refused(format_args!("{what}: {}", error_text(e)))
    } else {
        failed(format_args!("{what}: {}", error_text(e)))
    }
}

// ---------------------------------------------------------------- binaries

/// The binary that runs each scenario, for a runtime built as one binary per
/// scenario group (several `[[bin]]`s of one package, side by side in the
/// target folder): `(scenario, binary name)`.
pub type Binaries = &'static [(&'static str, &'static str)];

/// Hands this command line to the binary that runs its scenario, unless that
/// is `this` one (or the scenario is unknown: this binary's parser then says
/// so). By exec: the same process (pid, process group, cgroup, CPU pinning)
/// in another image, so the harness still sees one program; that binary
/// checks the flags. Why one binary per scenario: a process pays in peak RSS
/// for the pages of its binary that it touches, and the kernel maps the
/// binary in 64 KiB blocks around every page touched, so code that a
/// scenario never runs but that sits between the code it runs costs it
/// memory (../README.md, "One binary per scenario").
pub fn hand_off(this: &str, binaries: Binaries) {
    use std::os::unix::process::CommandExt;
    let mut args = std::env::args_os().skip(1);
    let Some(scenario) = args.next() else { return };
    let Some(&(_, binary)) = binaries.iter().find(|(s, _)| *s == scenario) else { return };
    if binary == this {
        return;
    }
    let path = match std::env::current_exe() {
        Ok(exe) => exe.with_file_name(binary),
        Err(e) => failed(format_args!("cannot locate {binary}: {}", error_text(&e))),
    };
    let e = std::process::Command::new(&path).arg(&scenario).args(args).exec();
    failed(format_args!("cannot run {}: {}", path.display(), error_text(&e)))
}

// ---------------------------------------------------------------- memory

/// The system allocator, except that a refused allocation ends the process
/// with exit 3 and one stderr line (Rust's default is to abort with a
/// backtrace). Each binary installs it with `#[global_allocator]`; the only
/// extra work on the allocation path is a null check.
pub struct ReportingAlloc;

unsafe impl std::alloc::GlobalAlloc for ReportingAlloc {
    #[inline]
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        let p = std::alloc::System.alloc(layout);
        if p.is_null() {
            out_of_memory(layout.size());
        }
        p
    }
    #[inline]
    unsafe fn alloc_zeroed(&self, layout: std::alloc::Layout) -> *mut u8 {
        let p = std::alloc::System.alloc_zeroed(layout);
        if p.is_null() {
            out_of_memory(layout.size());
        }
        p
    }
    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
        std::alloc::System.dealloc(ptr, layout)
    }
    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: std::alloc::Layout, new_size: usize) -> *mut u8 {
        let p = std::alloc::System.realloc(ptr, layout, new_size);
        if p.is_null() {
            out_of_memory(new_size);
        }
        p
    }
}

#[cold]
#[inline(never)]
fn out_of_memory(size: usize) -> ! {
    // Formatting into stderr does not allocate.
    exit_with(3, format_args!("cannot allocate {size} bytes: out of memory"))
}

// ---------------------------------------------------------------- spec

/// How `--threads` reaches the runtime (the manifest's `threads`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ThreadsMode {
    /// `--threads N` is accepted.
    Flag,
    /// The harness sets this environment variable; `--threads N` is also
    /// accepted and sets it before the runtime starts.
    Env(&'static str),
    /// No worker-thread knob: `--threads` is bad input.
    None,
}

/// What one implementation accepts.
#[derive(Clone, Copy, Debug)]
pub struct Spec {
    /// Manifest id, used in messages.
    pub id: &'static str,
    pub threads: ThreadsMode,
    /// Blocking variants; the first is the default.
    pub variants: &'static [&'static str],
    /// Whether `--cpuprofile` is supported.
    pub cpuprofile: bool,
    /// Names accepted by the hidden measuring flag `--channel` (chain);
    /// empty: the flag does not exist.
    pub channels: &'static [&'static str],
}

// ---------------------------------------------------------------- events

/// The chain scenario's event types.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EType {
    Int,
    Str,
    StrPtr,
    StrClone,
}

impl EType {
    pub fn name(self) -> &'static str {
        match self {
            EType::Int => "int",
            EType::Str => "str",
            EType::StrPtr => "str_ptr",
            EType::StrClone => "str_clone",
        }
    }

    fn parse(s: &str) -> Option<EType> {
        Some(match s {
            "0" | "int" => EType::Int,
            "1" | "str" => EType::Str,
            "2" | "str_ptr" => EType::StrPtr,
            "3" | "str_clone" => EType::StrClone,
            _ => return None,
        })
    }
}

/// A message that is one of several kinds: Rust's enum.
///
/// 24 bytes: `Str`'s `String` (capacity, pointer, length) is the largest
/// variant, and the others (at most two words each) fit beside the niche in
/// its capacity field, so no separate tag is needed. A second `String` variant
/// would make it 32 bytes; `StrClone` therefore holds a `Box<str>`, which is
/// also exactly one allocation of S bytes.
#[derive(Debug)]
pub enum Event {
    /// `int`: the value itself, no allocation.
    Int(u64),
    /// `str`: an owned `String`, made with `String::clone` of the template
    /// (one allocation and a copy of S bytes).
    Str(String),
    /// `str_ptr`: a pointer to the one template string, which lives for the
    /// whole process (leaked once); no allocation and no reference count.
    StrPtr(&'static str),
    /// `str_clone`: a new buffer holding a copy of the template's content
    /// (one allocation and a copy of S bytes).
    StrClone(Box<str>),
}

// The queues hold events by value: keep them three words (see `Event`).
const _: () = assert!(std::mem::size_of::<Event>() == 24);

impl Event {
    /// The event's weight: the int's value, or the string's length in bytes.
    #[inline(always)]
    pub fn weight(&self) -> u64 {
        match self {
            Event::Int(v) => *v,
            Event::Str(s) => s.len() as u64,
            Event::StrPtr(s) => s.len() as u64,
            Event::StrClone(s) => s.len() as u64,
        }
    }
}

/// Makes the events a sender sends: one per process, copied into every
/// sender (it is three words and `Copy`).
#[derive(Clone, Copy, Debug)]
pub struct EventSource {
    etype: EType,
    value: u64,
    /// The template string (S bytes of 'x'; empty for `int`), leaked so that
    /// `str_ptr` events can point at it for the whole process.
    text: &'static String,
}

impl EventSource {
    /// `esize` is the int's value or the strings' length in bytes. Leaks the
    /// template string: call it once per process, before any pass.
    pub fn new(etype: EType, esize: u64) -> EventSource {
        static EMPTY: String = String::new();
        let text: &'static String = if etype == EType::Int {
            &EMPTY
        } else {
            let len = usize::try_from(esize).unwrap_or(usize::MAX);
            let mut text = String::new();
            if text.try_reserve_exact(len).is_err() {
                refused(format_args!("cannot allocate a string of {esize} bytes: out of memory"));
            }
            text.extend(std::iter::repeat_n('x', len));
            Box::leak(Box::new(text))
        };
        EventSource { etype, value: esize, text }
    }

    /// A new event, made for each send.
    #[inline(always)]
    pub fn make(&self) -> Event {
        match self.etype {
            EType::Int => Event::Int(self.value),
            EType::Str => Event::Str(self.text.clone()),
            EType::StrPtr => Event::StrPtr(self.text.as_str()),
            EType::StrClone => Event::StrClone(Box::from(self.text.as_str())),
        }
    }
}

// ---------------------------------------------------------------- args

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChainArgs {
    pub workers: u64,
    pub events: u64,
    pub queue: u64,
    pub etype: EType,
    pub esize: u64,
    pub threads: Option<usize>,
    pub warmup: u64,
    pub cpuprofile: Option<String>,
    /// Hidden measuring flag (only where `Spec::channels` is non-empty).
    pub channel: Option<&'static str>,
}

impl ChainArgs {
    /// W×E×S, checked at parse time to fit in 0..=2^63-1.
    pub fn expected_checksum(&self) -> u64 {
        self.workers * self.events * self.esize
    }
    pub fn expected_received(&self) -> u64 {
        self.workers * self.events
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TasksArgs {
    pub tasks: u64,
    pub sleep_ms: u64,
    pub threads: Option<usize>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockingArgs {
    pub tasks: u64,
    pub iterations: u64,
    pub bytes: u64,
    pub variant: &'static str,
    pub threads: Option<usize>,
}

impl BlockingArgs {
    pub fn expected_checksum(&self) -> u64 {
        self.tasks * self.iterations * self.bytes
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Command {
    Chain(ChainArgs),
    Tasks(TasksArgs),
    Blocking(BlockingArgs),
}

impl Command {
    /// The `--threads` asked for (or the `ThreadsMode::Env` variable's value).
    pub fn threads(&self) -> Option<usize> {
        match self {
            Command::Chain(a) => a.threads,
            Command::Tasks(a) => a.threads,
            Command::Blocking(a) => a.threads,
        }
    }
}

struct Flag {
    short: Option<&'static str>,
    long: &'static str,
}

const fn flag(short: &'static str, long: &'static str) -> Flag {
    Flag { short: Some(short), long }
}
const fn long(long: &'static str) -> Flag {
    Flag { short: None, long }
}

const CHAIN_FLAGS: &[Flag] = &[
    flag("-w", "workers"),
    flag("-e", "events"),
    flag("-q", "queue"),
    flag("-t", "etype"),
    flag("-s", "esize"),
    long("threads"),
    long("warmup"),
    long("cpuprofile"),
];
const CHAIN_FLAGS_WITH_CHANNEL: &[Flag] = &[
    flag("-w", "workers"),
    flag("-e", "events"),
    flag("-q", "queue"),
    flag("-t", "etype"),
    flag("-s", "esize"),
    long("threads"),
    long("warmup"),
    long("cpuprofile"),
    long("channel"),
];
const TASKS_FLAGS: &[Flag] = &[flag("-n", "tasks"), flag("-d", "sleep-ms"), long("threads")];
const BLOCKING_FLAGS: &[Flag] = &[
    flag("-n", "tasks"),
    flag("-i", "iterations"),
    flag("-b", "bytes"),
    long("variant"),
    long("threads"),
];

/// Parsed flags, keyed by long name; values still text.
struct Flags(HashMap<&'static str, String>);

fn parse_flags(args: &[String], flags: &[Flag]) -> Result<Flags, String> {
    let mut out: HashMap<&'static str, String> = HashMap::new();
    let mut i = 0;
    while i < args.len() {
        let arg = &args[i];
        i += 1;
        let (found, inline) = if let Some(rest) = arg.strip_prefix("--") {
            let (name, inline) = match rest.split_once('=') {
                Some((n, v)) => (n, Some(v.to_string())),
                None => (rest, None),
            };
            (flags.iter().find(|f| f.long == name), inline)
        } else if arg.starts_with('-') && arg.len() > 1 {
            (flags.iter().find(|f| f.short == Some(arg.as_str())), None)
        } else {
            return Err(format!("unexpected argument '{arg}'"));
        };
        let Some(f) = found else {
            return Err(format!("unknown flag '{arg}'"));
        };
        if out.contains_key(f.long) {
            return Err(format!("flag --{} given more than once", f.long));
        }
        let value = match inline {
            Some(v) => v,
            None => {
                if i >= args.len() {
                    return Err(format!("flag {arg} needs a value"));
                }
                i += 1;
                args[i - 1].clone()
            }
        };
        if value.is_empty() {
            return Err(format!("flag --{} needs a value", f.long));
        }
        out.insert(f.long, value);
    }
    Ok(Flags(out))
}

impl Flags {
    /// A count: a decimal integer >= 1 (>= 0 when `zero_ok`).
    fn count(&self, name: &str, default: u64, zero_ok: bool) -> Result<u64, String> {
        let Some(text) = self.0.get(name) else { return Ok(default) };
        parse_count(name, text, zero_ok)
    }

    fn threads(&self, spec: &Spec) -> Result<Option<usize>, String> {
        match (self.0.get("threads"), spec.threads) {
            (None, ThreadsMode::Env(var)) => match std::env::var(var) {
                Ok(text) => Ok(Some(parse_count(var, &text, false)? as usize)),
                Err(std::env::VarError::NotPresent) => Ok(None),
                Err(_) => Err(format!("{var} is not a number")),
            },
            (None, _) => Ok(None),
            (Some(_), ThreadsMode::None) => Err(format!(
                "--threads is not supported by {} (it has no worker-thread setting)",
                spec.id
            )),
            (Some(text), _) => {
                let n = parse_count("threads", text, false)?;
                // No runtime can start more threads than the machine allows
                // (pid_max); refuse absurd values as bad input.
                if n > 1 << 20 {
                    return Err(format!("--threads {n} is too large"));
                }
                Ok(Some(n as usize))
            }
        }
    }
}

fn parse_count(name: &str, text: &str, zero_ok: bool) -> Result<u64, String> {
    let what = if name.chars().all(|c| c.is_ascii_uppercase() || c == '_') {
        name.to_string()
    } else {
        format!("--{name}")
    };
    if text.starts_with('-') {
        let must = if zero_ok { "must not be negative" } else { "must be positive" };
        return Err(format!("{what} {must}, got {text}"));
    }
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("{what} must be a number, got '{text}'"));
    }
    let n: u64 = text
        .parse()
        .map_err(|_| format!("{what} is too large: {text}"))?;
    if n > i64::MAX as u64 {
        return Err(format!("{what} is too large: {text}"));
    }
    if n == 0 && !zero_ok {
        return Err(format!("{what} must be positive, got 0"));
    }
    Ok(n)
}

/// Product of the factors if it fits in 0..=2^63-1.
fn checked_product(factors: &[u64]) -> Option<u64> {
    let mut p: u64 = 1;
    for &f in factors {
        p = p.checked_mul(f)?;
    }
    (p <= i64::MAX as u64).then_some(p)
}

/// Parses `<scenario> [flags]` (the arguments after the program name).
pub fn parse_from(spec: &Spec, args: &[String]) -> Result<Command, String> {
    let Some(scenario) = args.first() else {
        return Err(format!(
            "usage: {} <chain|tasks|blocking> [flags] (see docs/protocol.md)",
            spec.id
        ));
    };
    let rest = &args[1..];
    match scenario.as_str() {
        "chain" => {
            let flags = if spec.channels.is_empty() { CHAIN_FLAGS } else { CHAIN_FLAGS_WITH_CHANNEL };
            let f = parse_flags(rest, flags)?;
            let etype = match f.0.get("etype") {
                None => EType::Int,
                Some(t) => EType::parse(t).ok_or_else(|| {
                    format!("unknown --etype '{t}' (0/int, 1/str, 2/str_ptr, 3/str_clone)")
                })?,
            };
            let cpuprofile = f.0.get("cpuprofile").cloned();
            if cpuprofile.is_some() && !spec.cpuprofile {
                return Err(format!("--cpuprofile is not supported by {}", spec.id));
            }
            let channel = match f.0.get("channel") {
                None => None,
                Some(c) => Some(*spec.channels.iter().find(|n| **n == c.as_str()).ok_or_else(
                    || format!("unknown --channel '{c}' (one of {})", spec.channels.join(", ")),
                )?),
            };
            let a = ChainArgs {
                workers: f.count("workers", 1000, false)?,
                events: f.count("events", 10000, false)?,
                queue: f.count("queue", 256, false)?,
                etype,
                esize: f.count("esize", 10, false)?,
                threads: f.threads(spec)?,
                warmup: f.count("warmup", 0, true)?,
                cpuprofile,
                channel,
            };
            if checked_product(&[a.workers, a.events, a.esize]).is_none() {
                return Err(format!(
                    "expected checksum {}x{}x{} is beyond 2^63-1",
                    a.workers, a.events, a.esize
                ));
            }
            Ok(Command::Chain(a))
        }
        "tasks" => {
            let f = parse_flags(rest, TASKS_FLAGS)?;
            Ok(Command::Tasks(TasksArgs {
                tasks: f.count("tasks", 10000, false)?,
                sleep_ms: f.count("sleep-ms", 10000, true)?,
                threads: f.threads(spec)?,
            }))
        }
        "blocking" => {
            let f = parse_flags(rest, BLOCKING_FLAGS)?;
            let variant = match f.0.get("variant") {
                None => spec.variants[0],
                Some(v) => spec.variants.iter().find(|n| **n == v.as_str()).copied().ok_or_else(|| {
                    format!("unknown --variant '{v}' for {} (one of {})", spec.id, spec.variants.join(", "))
                })?,
            };
            let a = BlockingArgs {
                tasks: f.count("tasks", 1000, false)?,
                iterations: f.count("iterations", 1000, false)?,
                bytes: f.count("bytes", 10, false)?,
                variant,
                threads: f.threads(spec)?,
            };
            if checked_product(&[a.tasks, a.iterations, a.bytes]).is_none() {
                return Err(format!(
                    "expected checksum {}x{}x{} is beyond 2^63-1",
                    a.tasks, a.iterations, a.bytes
                ));
            }
            Ok(Command::Blocking(a))
        }
        other => Err(format!("unknown scenario '{other}' (chain, tasks, blocking)")),
    }
}

static THREADS_WANTED: AtomicU64 = AtomicU64::new(0);
static THREADS_STARTED: AtomicU64 = AtomicU64::new(0);

/// Records how far a program that starts one OS thread per task got, so a
/// thread that dies setting itself up (std panics when it cannot map its
/// signal stack) is reported as "started K of N threads: <reason>".
#[inline]
pub fn threads_progress(started: u64, wanted: u64) {
    THREADS_WANTED.store(wanted, Ordering::Relaxed);
    THREADS_STARTED.store(started, Ordering::Relaxed);
}

/// Makes every panic end the process with one line on stderr: exit 3 when
/// the panic reports a refused resource (a runtime that cannot start a thread
/// or map a stack panics rather than returning an error), else exit 1.
pub fn install_panic_hook() {
    std::panic::set_hook(Box::new(|info| {
        let payload = info.payload();
        let msg = payload
            .downcast_ref::<&str>()
            .copied()
            .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
            .unwrap_or("panic");
        let msg = msg.replace('\n', " ");
        let thread = std::thread::current();
        let thread = thread.name().unwrap_or("unnamed");
        const RESOURCE: &[&str] = &[
            "Resource temporarily unavailable",
            "Cannot allocate memory",
            "Too many open files",
            "os error 11)",
            "os error 12)",
            "os error 23)",
            "os error 24)",
        ];
        if RESOURCE.iter().any(|r| msg.contains(r)) {
            let total = THREADS_WANTED.load(Ordering::Relaxed);
            if total > 0 {
                // e.g. "failed to set up alternative stack guard page: Cannot
                // allocate memory (os error 12)" from a thread std just started.
                let reason = msg.rsplit(": ").next().unwrap_or(&msg);
                let reason = reason.find(" (os error ").map_or(reason, |i| &reason[..i]);
                refused(format_args!(
                    "started {} of {total} threads: {reason}",
                    THREADS_STARTED.load(Ordering::Relaxed)
                ));
            }
            refused(format_args!("resource refused in thread '{thread}': {msg}"));
        }
        let at = info.location().map(|l| format!(" at {}:{}", l.file(), l.line())).unwrap_or_default();
        failed(format_args!("panic in thread '{thread}': {msg}{at}"));
    }));
}

/// Parses the process's arguments (exits 2 on bad input) and installs the
/// panic hook. With `ThreadsMode::Env`, a `--threads N` flag is exported to
/// the variable.
pub fn parse_args(spec: &Spec) -> Command {
    install_panic_hook();
    let args: Vec<String> = match std::env::args_os()
        .skip(1)
        .map(|a| a.into_string())
        .collect::<Result<Vec<_>, _>>()
    {
        Ok(a) => a,
        Err(a) => bad_input(format_args!("argument is not UTF-8: {a:?}")),
    };
    let cmd = parse_from(spec, &args).unwrap_or_else(|msg| bad_input(msg));
    if let ThreadsMode::Env(var) = spec.threads {
        if let Some(n) = cmd.threads() {
            // Still single-threaded here: no runtime has started yet.
            std::env::set_var(var, n.to_string());
        }
    }
    cmd
}

/// Number of cores the process may use (the usual runtime default).
pub fn available_cores() -> usize {
    std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
}

// ---------------------------------------------------------------- checks

/// Exits 1 when a pass's totals differ from the prediction.
pub fn check_chain(a: &ChainArgs, received: u64, checksum: u64) {
    if received != a.expected_received() || checksum != a.expected_checksum() {
        failed(format_args!(
            "chain: received {received} events with checksum {checksum}, expected {} and {}",
            a.expected_received(),
            a.expected_checksum()
        ));
    }
}

// ---------------------------------------------------------------- output

/// The one JSON line on stdout, built field by field (keys and string
/// values are plain identifiers: no escaping needed).
pub struct Output {
    line: String,
}

impl Output {
    pub fn new(scenario: &str) -> Output {
        Output { line: format!("{{\"scenario\":\"{scenario}\"") }
    }
    pub fn num(mut self, key: &str, value: u64) -> Output {
        use std::fmt::Write as _;
        let _ = write!(self.line, ",\"{key}\":{value}");
        self
    }
    pub fn text(mut self, key: &str, value: &str) -> Output {
        use std::fmt::Write as _;
        let _ = write!(self.line, ",\"{key}\":\"{value}\"");
        self
    }
    pub fn print(mut self) {
        self.line.push_str("}\n");
        let mut out = io::stdout().lock();
        if out.write_all(self.line.as_bytes()).and_then(|_| out.flush()).is_err() {
            failed("cannot write the result to stdout");
        }
    }
}

/// Prints the chain result line.
pub fn print_chain(a: &ChainArgs, threads: usize, received: u64, checksum: u64, elapsed_ns: u64) {
    Output::new("chain")
        .num("workers", a.workers)
        .num("events", a.events)
        .num("queue", a.queue)
        .text("etype", a.etype.name())
        .num("esize", a.esize)
        .num("threads", threads as u64)
        .num("warmup", a.warmup)
        .num("received", received)
        .num("checksum", checksum)
        .num("elapsed_ns", elapsed_ns.max(1))
        .print();
}

/// Prints the tasks result line.
pub fn print_tasks(a: &TasksArgs, threads: usize, checksum: u64, spawn_ns: u64, elapsed_ns: u64) {
    Output::new("tasks")
        .num("tasks", a.tasks)
        .num("sleep_ms", a.sleep_ms)
        .num("threads", threads as u64)
        .num("checksum", checksum)
        .num("spawn_ns", spawn_ns)
        .num("elapsed_ns", elapsed_ns.max(1))
        .print();
}

/// Prints the blocking result line. `pool_threads`: the most threads the
/// runtime may use for the blocking calls of this variant (docs/protocol.md).
pub fn print_blocking(a: &BlockingArgs, threads: usize, pool_threads: u64, checksum: u64, elapsed_ns: u64) {
    Output::new("blocking")
        .num("tasks", a.tasks)
        .num("iterations", a.iterations)
        .num("bytes", a.bytes)
        .text("variant", a.variant)
        .num("threads", threads as u64)
        .num("pool_threads", pool_threads)
        .num("checksum", checksum)
        .num("elapsed_ns", elapsed_ns.max(1))
        .print();
}

/// Nanoseconds since `start`, saturating.
pub fn elapsed_ns(start: std::time::Instant) -> u64 {
    u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX)
}

// ---------------------------------------------------------------- blocking work

/// The blocking scenario's task body with std::fs: fill `buf` from
/// /dev/urandom (looping until all of it is read), write it all to
/// /dev/null, close both. Returns the bytes written.
pub fn copy_urandom_to_null(buf: &mut [u8]) -> u64 {
    use std::io::Read;
    let mut src = File::open("/dev/urandom")
        .unwrap_or_else(|e| io_failure("open /dev/urandom", &e));
    src.read_exact(buf)
        .unwrap_or_else(|e| io_failure("read /dev/urandom", &e));
    drop(src);
    let mut dst = File::options()
        .write(true)
        .open("/dev/null")
        .unwrap_or_else(|e| io_failure("open /dev/null", &e));
    dst.write_all(buf)
        .unwrap_or_else(|e| io_failure("write /dev/null", &e));
    drop(dst);
    buf.len() as u64
}

/// A blocking task's buffer: taken by value and handed back when the task
/// ends, having been written in full to /dev/null, so the bytes the task
/// wrote are its length ([`copy_urandom_to_null`] writes all of it or ends
/// the process). A boxed slice, and nothing else in the task's output: the
/// task's future and output then fit in 24 bytes, as the public program's
/// (a 10-byte array in the task), and tokio's task cell (aligned to 128
/// bytes) stays at 128 bytes; with a `(u64, Vec<u8>)` output it took 256
/// (../README.md, "blocking").
pub type TaskBuf = Box<[u8]>;

/// One B-byte buffer per task of an iteration, allocated before the timed
/// region and reused by every iteration (as Go's one slice per task slot), so
/// the timed tasks allocate nothing for their data.
pub fn task_buffers(a: &BlockingArgs) -> Vec<TaskBuf> {
    // A refused allocation exits 3 through `ReportingAlloc`.
    (0..a.tasks).map(|_| vec![0u8; a.bytes as usize].into_boxed_slice()).collect()
}

/// The thread limit of the `blocking` crate's pool (used by async-std's and
/// smol's blocking calls), as blocking 1.7 computes it: `BLOCKING_MAX_THREADS`
/// if it parses, clamped to 1 ..= 10000, else 500.
pub fn blocking_crate_max_threads() -> u64 {
    blocking_max_threads_from(std::env::var("BLOCKING_MAX_THREADS").ok().as_deref())
}

fn blocking_max_threads_from(var: Option<&str>) -> u64 {
    var.and_then(|v| v.parse::<usize>().ok()).map_or(500, |v| v.clamp(1, 10000) as u64)
}

// ---------------------------------------------------------------- profile

/// The flame graph of a measured pass too short for one sample (1 ms of CPU at 997 Hz).
const EMPTY_PROFILE: &str = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"600\" height=\"40\">\
<text x=\"10\" y=\"25\">no samples: the measured pass used under 1 ms of CPU</text></svg>\n";

/// A running `--cpuprofile` sampler (pprof, 997 Hz, all threads).
pub struct Profile {
    guard: pprof::ProfilerGuard<'static>,
    file: File,
    path: String,
}

/// Creates the output file (bad input when impossible) before any pass runs.
pub fn open_profile(path: Option<&str>) -> Option<(File, String)> {
    let path = path?;
    match File::create(path) {
        Ok(f) => Some((f, path.to_string())),
        Err(e) => bad_input(format_args!("cannot create --cpuprofile file {path}: {}", error_text(&e))),
    }
}

/// Starts sampling; call right before the measured pass.
pub fn start_profile(file: Option<(File, String)>) -> Option<Profile> {
    let (file, path) = file?;
    let guard = pprof::ProfilerGuardBuilder::default()
        .frequency(997)
        .blocklist(&["libc", "libgcc", "pthread", "vdso"])
        .build()
        .unwrap_or_else(|e| failed(format_args!("cannot start the CPU profiler: {e}")));
    Some(Profile { guard, file, path })
}

impl Profile {
    /// Stops sampling and writes the flame graph SVG.
    pub fn finish(self) {
        let report = self
            .guard
            .report()
            .build()
            .unwrap_or_else(|e| failed(format_args!("cannot build the CPU profile: {e}")));
        drop(self.guard);
        let mut w = io::BufWriter::new(self.file);
        if report.data.is_empty() {
            // pprof writes nothing at all for a profile without samples: a 0-byte .svg that no
            // viewer opens. Say what happened, in the file and here.
            eprintln!("--cpuprofile: no samples (the measured pass used under 1 ms of CPU); {} says so", self.path);
            let _ = w.write_all(EMPTY_PROFILE.as_bytes());
        } else if let Err(e) = report.flamegraph(&mut w) {
            failed(format_args!("cannot write flame graph {}: {e}", self.path));
        }
        if let Err(e) = w.flush() {
            failed(format_args!("cannot write flame graph {}: {}", self.path, error_text(&e)));
        }
    }
}

// ---------------------------------------------------------------- tests

#[cfg(test)]
mod tests {
    use super::*;

    const SPEC: Spec = Spec {
        id: "rust-test",
        threads: ThreadsMode::Flag,
        variants: &["fs", "sync"],
        cpuprofile: true,
        channels: &[],
    };
    const NONE: Spec = Spec { threads: ThreadsMode::None, cpuprofile: false, ..SPEC };

    fn p(spec: &Spec, s: &str) -> Result<Command, String> {
        let args: Vec<String> = s.split_whitespace().map(String::from).collect();
        parse_from(spec, &args)
    }

    #[test]
    fn chain_defaults_and_forms() {
        let Ok(Command::Chain(a)) = p(&SPEC, "chain") else { panic!() };
        assert_eq!((a.workers, a.events, a.queue, a.esize, a.warmup), (1000, 10000, 256, 10, 0));
        assert_eq!(a.etype, EType::Int);
        let Ok(Command::Chain(a)) =
            p(&SPEC, "chain -s 7 --queue=2 --etype str_clone -w 3 --events 5 --threads 4 --warmup 1")
        else {
            panic!()
        };
        assert_eq!((a.workers, a.events, a.queue, a.esize, a.warmup), (3, 5, 2, 7, 1));
        assert_eq!((a.etype, a.threads), (EType::StrClone, Some(4)));
        assert_eq!(a.expected_checksum(), 105);
        for (t, e) in [("0", EType::Int), ("1", EType::Str), ("2", EType::StrPtr), ("str_ptr", EType::StrPtr)] {
            let Ok(Command::Chain(a)) = p(&SPEC, &format!("chain -t {t}")) else { panic!() };
            assert_eq!(a.etype, e);
        }
    }

    #[test]
    fn bad_inputs() {
        for s in [
            "",
            "nope",
            "chain -x 1",
            "chain -w",
            "chain -w 1 -w 2",
            "chain -w 1 --workers 2",
            "chain -w 0",
            "chain -w -1",
            "chain -w abc",
            "chain -w 1.5",
            "chain --workers=",
            "chain -t 4",
            "chain -t bytes",
            "chain -s 0",
            "chain -w 99999999999999999999",
            "chain -w 1000000 -e 1000000 -s 10000000",
            "chain --channel x",
            "chain stray",
            "tasks -d -1",
            "tasks -n 0",
            "tasks --warmup 1",
            "tasks --cpuprofile x",
            "blocking --variant nope",
            "blocking -b 0",
            "blocking -i 0",
            "blocking --threads 0",
        ] {
            assert!(p(&SPEC, s).is_err(), "accepted: {s}");
        }
        assert!(p(&NONE, "tasks --threads 2").is_err());
        assert_eq!(
            p(&NONE, "chain --cpuprofile x").unwrap_err(),
            "--cpuprofile is not supported by rust-test"
        );
    }

    #[test]
    fn tasks_and_blocking() {
        assert_eq!(
            p(&SPEC, "tasks -d 0 --tasks=5").unwrap(),
            Command::Tasks(TasksArgs { tasks: 5, sleep_ms: 0, threads: None })
        );
        assert_eq!(
            p(&SPEC, "blocking --variant=sync -n 2 -i 3 -b 4").unwrap(),
            Command::Blocking(BlockingArgs { tasks: 2, iterations: 3, bytes: 4, variant: "sync", threads: None })
        );
        let Ok(Command::Blocking(b)) = p(&SPEC, "blocking") else { panic!() };
        assert_eq!((b.tasks, b.iterations, b.bytes, b.variant), (1000, 1000, 10, "fs"));
    }

    #[test]
    fn checksum_limit() {
        // 2^63-1 = 9223372036854775807 = 7^2 * 73 * 127 * 337 * 92737 * 649657
        assert!(p(&SPEC, "chain -w 49 -e 9271 -s 20303320287433").is_ok());
        assert!(p(&SPEC, "chain -w 49 -e 9271 -s 20303320287434").is_err());
    }

    #[test]
    fn events() {
        // Three words, as the compile-time assertion also says.
        assert_eq!(std::mem::size_of::<Event>(), 24);
        assert_eq!(std::mem::size_of::<Option<Event>>(), 24);
        for t in [EType::Int, EType::Str, EType::StrPtr, EType::StrClone] {
            let source = EventSource::new(t, 7);
            // The receivers' checksum: weight S per event.
            let sum: u64 = (0..1000).map(|_| source.make().weight()).sum();
            assert_eq!(sum, 7000, "{t:?}");
        }
        let text = |e: Event| match e {
            Event::Str(s) => (s.as_ptr(), s.len()),
            Event::StrPtr(s) => (s.as_ptr(), s.len()),
            Event::StrClone(s) => (s.as_ptr(), s.len()),
            Event::Int(_) => panic!("int"),
        };
        // str_ptr: every event points at the one template string.
        let source = EventSource::new(EType::StrPtr, 5);
        let (a, b) = (source.make(), source.make());
        assert_eq!(text(a).0, text(b).0);
        assert!(matches!(source.make(), Event::StrPtr("xxxxx")));
        // str and str_clone: a buffer of its own per event, not the template.
        for t in [EType::Str, EType::StrClone] {
            let source = EventSource::new(t, 5);
            let (a, b) = (source.make(), source.make());
            let (a, b) = (text(a), text(b));
            assert_ne!(a.0, b.0);
            assert_ne!(a.0, source.text.as_ptr());
            assert_eq!((a.1, b.1), (5, 5));
        }
        assert!(matches!(EventSource::new(EType::Int, 3).make(), Event::Int(3)));
    }

    #[test]
    fn blocking_buffers_and_copy() {
        let Ok(Command::Blocking(a)) = p(&SPEC, "blocking -n 3 -b 100") else { panic!() };
        let mut bufs = task_buffers(&a);
        assert_eq!(bufs.len(), 3);
        let before: Vec<*const u8> = bufs.iter().map(|b| b.as_ptr()).collect();
        let mut sum = 0;
        for buf in &mut bufs {
            assert_eq!(buf.len(), 100);
            sum += copy_urandom_to_null(buf);
        }
        // The T×B checksum; the buffers are filled in place, not replaced.
        assert_eq!(sum, 300);
        assert!(bufs.iter().any(|b| b.iter().any(|&x| x != 0)));
        assert_eq!(before, bufs.iter().map(|b| b.as_ptr()).collect::<Vec<_>>());
    }

    #[test]
    fn blocking_crate_limit() {
        assert_eq!(blocking_max_threads_from(None), 500);
        assert_eq!(blocking_max_threads_from(Some("64")), 64);
        assert_eq!(blocking_max_threads_from(Some("0")), 1);
        assert_eq!(blocking_max_threads_from(Some("99999")), 10000);
        assert_eq!(blocking_max_threads_from(Some("x")), 500);
    }

    #[test]
    fn error_text_strips_code() {
        let e = io::Error::from_raw_os_error(11);
        assert_eq!(error_text(&e), "Resource temporarily unavailable");
    }
}
