//! One client thread: an edge-triggered epoll loop (mio) over its share of the workers, each a
//! small state machine (connect → write request → read reply → next). Nothing on this path
//! allocates, locks or touches memory another thread writes: buffers belong to the worker and
//! are reused, counts and the histogram belong to the thread.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io::{self, Read, Write};
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use mio::net::TcpStream;
use mio::unix::SourceFd;
use mio::{Events, Interest, Poll, Token};

use crate::interval::{Grid, Recorder};
use crate::proto::{Exchange, Feed};
use crate::schedule::Schedule;
use crate::stats::{Cause, Stats};
use crate::sys::{self, Connect, TimerFd};

/// What one thread does, decided before it starts.
pub struct Plan {
    pub target: SocketAddr,
    pub thread: usize,
    /// Global index of this thread's first worker, and how many workers it runs.
    pub first_worker: usize,
    pub workers: usize,
    /// All workers of the run, over all agents (C): the open-loop schedule is theirs.
    pub total_workers: usize,
    /// echo: connections this thread opens in total (`None`: until the stop time).
    pub connections: Option<u64>,
    /// echo: exchanges per connection; http: `None` (a connection lasts).
    pub per_connection: Option<u64>,
    /// http: requests of each of this thread's workers (`None`: until the stop time).
    pub requests: Option<Vec<u64>>,
    /// Requests/s of all agents together (the schedule places this thread's workers in it).
    pub rate: Option<f64>,
    pub timeout_ns: u64,
    /// Source addresses to spread connections over (empty: let the kernel choose).
    pub sources: Vec<IpAddr>,
    /// Sequence numbers of this thread are `seq_first + n * seq_stride`: unique over the run
    /// and over all agents.
    pub seq_first: u64,
    pub seq_stride: u64,
}

/// The run's clock, shared by every thread (set once before they start).
#[derive(Clone, Copy)]
pub struct Times {
    pub t0: u64,
    pub window_start: u64,
    /// No exchange starts at or after this time (u64::MAX when the run is count-bounded).
    pub stop_at: u64,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum State {
    /// Not started yet, or between exchanges.
    Idle,
    /// Waiting for its scheduled time (open loop).
    Parked,
    Connecting,
    Writing,
    Reading,
    Done,
}

/// Is the worker still in an exchange after a step, or free for the next one?
#[derive(Clone, Copy, PartialEq, Eq)]
enum Step {
    Busy,
    Free,
}

struct Slot<E> {
    ex: E,
    stream: Option<TcpStream>,
    state: State,
    /// Bumped for every new socket: an event for an older socket of the slot is ignored.
    gen: u32,
    written: usize,
    /// Connect or reply deadline (ns), 0 when none.
    deadline: u64,
    /// Where this exchange's latency counts from.
    lat_start: u64,
    /// echo: exchanges left on the open connection.
    conn_left: u64,
    /// Exchanges this worker may still start (u64::MAX: unbounded).
    quota: u64,
    /// Exchanges started so far (the index into the schedule).
    started: u64,
    schedule: Option<Schedule>,
}

const TIMER: Token = Token(usize::MAX);
const SLOT_BITS: u32 = 32;

fn token(i: usize, gen: u32) -> Token {
    Token((gen as usize) << SLOT_BITS | i)
}

pub struct Engine<E: Exchange> {
    plan: Plan,
    times: Times,
    poll: Poll,
    slots: Vec<Slot<E>>,
    /// Parked workers by scheduled time.
    heap: BinaryHeap<Reverse<(u64, usize)>>,
    timer: Option<TimerFd>,
    /// echo: connections this thread may still open (u64::MAX: unbounded).
    pool: u64,
    seq: u64,
    active: usize,
    source_next: usize,
    /// Set while `preconnect` runs: a connection that is up waits for the load to start.
    preconnecting: bool,
    /// Per-interval records of the window (duration-bounded runs).
    recorder: Option<Recorder>,
    pub stats: Stats,
}

impl<E: Exchange> Engine<E> {
    /// Set up the thread's workers (all allocation happens here). `make` builds a worker's
    /// exchange state; `recorder` counts the window's intervals.
    pub fn new(plan: Plan, recorder: Option<Recorder>, mut make: impl FnMut() -> E) -> io::Result<Engine<E>> {
        let poll = Poll::new()?;
        let timer = if plan.rate.is_some() {
            let t = TimerFd::new()?;
            poll.registry().register(&mut SourceFd(&t.raw()), TIMER, Interest::READABLE)?;
            Some(t)
        } else {
            None
        };
        let mut slots = Vec::with_capacity(plan.workers);
        for w in 0..plan.workers {
            let quota = match &plan.requests {
                Some(q) => q[w],
                None => u64::MAX,
            };
            slots.push(Slot {
                ex: make(),
                stream: None,
                state: State::Idle,
                gen: 0,
                written: 0,
                deadline: 0,
                lat_start: 0,
                conn_left: 0,
                quota,
                started: 0,
                schedule: None,
            });
        }
        let source_next = if plan.sources.is_empty() { 0 } else { plan.thread % plan.sources.len() };
        Ok(Engine {
            pool: plan.connections.unwrap_or(u64::MAX),
            heap: BinaryHeap::with_capacity(plan.workers),
            active: plan.workers,
            poll,
            timer,
            slots,
            seq: 0,
            source_next,
            preconnecting: false,
            recorder,
            // until `run` sets the times (after a preconnect), nothing is in the window
            times: Times { t0: 0, window_start: u64::MAX, stop_at: u64::MAX },
            stats: Stats::new(),
            plan,
        })
    }

    /// Open every worker's connection before the load starts, so that the first requests at
    /// the start time find them up (http with `--start-at`). A connect that fails counts in
    /// `errors` as any connect does (`connect`, or `timeout`); that worker connects again at its
    /// first exchange.
    pub fn preconnect(&mut self) -> io::Result<()> {
        self.preconnecting = true;
        let now = sys::now_ns();
        for i in 0..self.slots.len() {
            self.connect(i, now);
        }
        let sweep_ns = self.sweep_ns();
        let mut next_sweep = now + sweep_ns;
        let mut events = Events::with_capacity(1024);
        while self.slots.iter().any(|s| s.state == State::Connecting) {
            let now = sys::now_ns();
            match self.poll.poll(&mut events, Some(Duration::from_nanos(next_sweep.saturating_sub(now)))) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
            for ev in events.iter() {
                let failed = ev.is_error() || ev.is_write_closed();
                self.on_event(ev.token(), false, ev.is_writable(), failed);
            }
            let now = sys::now_ns();
            if now >= next_sweep {
                self.sweep(now);
                next_sweep = now + sweep_ns;
            }
        }
        self.preconnecting = false;
        Ok(())
    }

    /// Deadlines are checked by a sweep this often: a timeout is late by at most this much.
    fn sweep_ns(&self) -> u64 {
        (self.plan.timeout_ns / 8).clamp(1_000_000, 100_000_000)
    }

    /// Run the load until every worker is done (and, with intervals, until the window's last
    /// interval has been handed over). `times` is the same for every thread.
    pub fn run(&mut self, times: Times, grid: Option<Grid>) -> io::Result<()> {
        self.times = times;
        if let (Some(r), Some(g)) = (self.recorder.as_mut(), grid) {
            r.start(g);
        }
        if let Some(rate) = self.plan.rate {
            for (w, s) in self.slots.iter_mut().enumerate() {
                s.schedule = Some(Schedule::new(times.t0, rate, self.plan.first_worker + w, self.plan.total_workers));
            }
        }
        for i in 0..self.slots.len() {
            // each its own time: the first connects of a large C take a while one after another
            self.advance(i, sys::now_ns());
        }
        let now = sys::now_ns();
        let sweep_ns = self.sweep_ns();
        let mut next_sweep = now + sweep_ns;
        let mut events = Events::with_capacity(1024);
        // An interval ends when this thread's clock passes its end; a thread whose workers are
        // all done (an open loop's last slots came before the stop) still hands over the rest
        // at their time, not early.
        while self.active > 0 || self.recorder.as_ref().is_some_and(|r| r.next_end().is_some()) {
            let now = sys::now_ns();
            let mut wait = next_sweep.saturating_sub(now);
            if let Some(r) = self.recorder.as_mut() {
                r.roll(now, &mut self.stats.hist);
                if let Some(end) = r.next_end() {
                    wait = wait.min(end.saturating_sub(now));
                }
            }
            if let Some(&Reverse((due, _))) = self.heap.peek() {
                if due <= now {
                    wait = 0;
                } else if let Some(t) = self.timer.as_mut() {
                    // epoll's timeout has millisecond resolution; the timerfd wakes the loop
                    // at the scheduled nanosecond
                    if t.armed() == 0 || t.armed() > due {
                        t.arm(due);
                    }
                }
            }
            match self.poll.poll(&mut events, Some(Duration::from_nanos(wait))) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
            for ev in events.iter() {
                if ev.token() == TIMER {
                    if let Some(t) = self.timer.as_mut() {
                        t.clear();
                    }
                    continue;
                }
                let readable = ev.is_readable() || ev.is_read_closed();
                let failed = ev.is_error() || ev.is_write_closed();
                self.on_event(ev.token(), readable, ev.is_writable(), failed);
            }
            let now = sys::now_ns();
            while let Some(&Reverse((due, i))) = self.heap.peek() {
                if due > now {
                    break;
                }
                self.heap.pop();
                if self.slots[i].state == State::Parked {
                    // advance checks again whether there is work left (another worker of the
                    // thread may have taken the last connection meanwhile) and starts it
                    self.slots[i].state = State::Idle;
                    self.advance(i, now);
                }
            }
            if now >= next_sweep {
                self.sweep(now);
                next_sweep = now + sweep_ns;
            }
        }
        Ok(())
    }

    fn on_event(&mut self, tok: Token, readable: bool, writable: bool, failed: bool) {
        let i = tok.0 & ((1usize << SLOT_BITS) - 1);
        let gen = (tok.0 >> SLOT_BITS) as u32;
        if i >= self.slots.len() || self.slots[i].gen != gen {
            return;
        }
        let now = sys::now_ns();
        let step = match self.slots[i].state {
            State::Connecting => {
                if failed {
                    let err = self.slots[i]
                        .stream
                        .as_ref()
                        .and_then(|s| s.take_error().ok().flatten())
                        .unwrap_or_else(|| io::Error::other("the socket was closed before the connection was established"));
                    self.fail(i, Cause::Connect, Some(err), now)
                } else if writable {
                    self.connected(i, now)
                } else {
                    Step::Busy
                }
            }
            State::Writing => {
                // A large request takes several writes. Reply bytes that come meanwhile (a
                // server that echoes as it reads) are read too, so neither side blocks on a full
                // buffer, and the edge that announced them is not lost.
                let mut step = if writable || failed { self.write_some(i, now) } else { Step::Busy };
                if step == Step::Busy && readable && matches!(self.slots[i].state, State::Writing | State::Reading) {
                    step = self.read_some(i);
                }
                step
            }
            State::Reading if readable || failed => self.read_some(i),
            _ => Step::Busy,
        };
        if step == Step::Free && !self.preconnecting {
            // a fresh time: the next exchange's latency starts at its send, not at this event
            self.advance(i, sys::now_ns());
        }
    }

    /// Worker `i` is free: start its next exchange now, park it until its scheduled time, or
    /// end it.
    fn advance(&mut self, i: usize, mut now: u64) {
        loop {
            let s = &self.slots[i];
            let has_work = if s.stream.is_some() {
                s.quota > 0
            } else {
                s.quota > 0 && self.pool > 0
            };
            if now >= self.times.stop_at || !has_work {
                self.finish(i);
                return;
            }
            let mut start = now;
            if let Some(sched) = s.schedule {
                let due = sched.at(s.started);
                if due >= self.times.stop_at {
                    self.finish(i);
                    return;
                }
                if due > now {
                    self.slots[i].state = State::Parked;
                    self.heap.push(Reverse((due, i)));
                    return;
                }
                start = due;
            }
            if self.start(i, start, now) == Step::Busy {
                return;
            }
            now = sys::now_ns();
        }
    }

    fn finish(&mut self, i: usize) {
        let s = &mut self.slots[i];
        s.stream = None;
        s.state = State::Done;
        s.deadline = 0;
        self.active -= 1;
        self.stats.end_ns = self.stats.end_ns.max(sys::now_ns());
    }

    /// Start an exchange whose latency counts from `lat_start`: on the open connection, or on
    /// a new one.
    fn start(&mut self, i: usize, lat_start: u64, now: u64) -> Step {
        let s = &mut self.slots[i];
        s.started += 1;
        if s.quota != u64::MAX {
            s.quota -= 1;
        }
        s.lat_start = lat_start;
        if s.stream.is_some() {
            return self.send(i, now);
        }
        self.connect(i, now)
    }

    /// Open a new connection for worker `i` (its exchange is sent once it is up).
    fn connect(&mut self, i: usize, now: u64) -> Step {
        if self.pool != u64::MAX {
            self.pool -= 1;
        }
        let source = if self.plan.sources.is_empty() {
            None
        } else {
            let a = self.plan.sources[self.source_next];
            self.source_next = (self.source_next + 1) % self.plan.sources.len();
            Some(a)
        };
        let (mut stream, done) = match sys::connect(self.plan.target, source) {
            Ok(Connect::Done(st)) => (st, true),
            Ok(Connect::Pending(st)) => (st, false),
            Err(e) => return self.fail(i, Cause::Connect, Some(e), now),
        };
        let s = &mut self.slots[i];
        s.gen = s.gen.wrapping_add(1);
        if let Err(e) = self.poll.registry().register(&mut stream, token(i, s.gen), Interest::READABLE | Interest::WRITABLE) {
            return self.fail(i, Cause::Connect, Some(e), now);
        }
        s.stream = Some(stream);
        if done {
            self.connected(i, now)
        } else {
            s.state = State::Connecting;
            s.deadline = now + self.plan.timeout_ns;
            Step::Busy
        }
    }

    fn in_window(&self, now: u64) -> bool {
        now >= self.times.window_start && now < self.times.stop_at
    }

    fn connected(&mut self, i: usize, now: u64) -> Step {
        self.stats.connections += 1;
        if self.in_window(now) {
            self.stats.win_connections += 1;
            if let Some(r) = self.recorder.as_mut() {
                r.at(now, &mut self.stats.hist).connections += 1;
            }
        }
        self.slots[i].conn_left = self.plan.per_connection.unwrap_or(u64::MAX);
        if self.preconnecting {
            let s = &mut self.slots[i];
            s.state = State::Idle;
            s.deadline = 0;
            return Step::Busy;
        }
        self.send(i, now)
    }

    fn send(&mut self, i: usize, now: u64) -> Step {
        let seq = self.plan.seq_first.wrapping_add(self.seq.wrapping_mul(self.plan.seq_stride));
        self.seq += 1;
        let s = &mut self.slots[i];
        s.ex.begin(seq);
        s.written = 0;
        s.deadline = now + self.plan.timeout_ns;
        self.write_some(i, now)
    }

    fn write_some(&mut self, i: usize, now: u64) -> Step {
        let s = &mut self.slots[i];
        let Some(stream) = s.stream.as_mut() else { return Step::Free };
        loop {
            let req = s.ex.request();
            match stream.write(&req[s.written..]) {
                Ok(n) => {
                    s.written += n;
                    if s.written == req.len() {
                        // the reply is reported by the next readable event
                        s.state = State::Reading;
                        return Step::Busy;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    s.state = State::Writing;
                    return Step::Busy;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    let cause = io_cause(&e);
                    return self.fail(i, cause, Some(e), now);
                }
            }
        }
    }

    fn read_some(&mut self, i: usize) -> Step {
        loop {
            let s = &mut self.slots[i];
            let Some(stream) = s.stream.as_mut() else { return Step::Free };
            let buf = s.ex.recv_buf();
            match stream.read(buf) {
                Ok(0) => return self.fail(i, Cause::Eof, None, sys::now_ns()),
                Ok(n) => match s.ex.received(n) {
                    // Incomplete: read on until the socket says WouldBlock, as edge-triggered
                    // epoll needs (a FIN that came with the last bytes would not be reported
                    // again). A complete reply needs no such read: the server sends nothing
                    // more until the next request, whose arrival is a new edge.
                    Feed::More => {}
                    feed => return self.complete(i, feed, sys::now_ns()),
                },
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Step::Busy,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    let cause = io_cause(&e);
                    return self.fail(i, cause, Some(e), sys::now_ns());
                }
            }
        }
    }

    /// The reply is complete (`feed` says how it checked).
    fn complete(&mut self, i: usize, feed: Feed, now: u64) -> Step {
        let in_window = self.in_window(now);
        let st = &mut self.stats;
        let s = &mut self.slots[i];
        s.deadline = 0;
        s.state = State::Idle;
        let ok = feed == Feed::Ok;
        st.requests += 1;
        if ok {
            st.ok += 1;
        } else {
            st.mismatched += 1;
            let ex = &s.ex;
            st.note_first(now, || format!("mismatch: {}", ex.describe()));
        }
        if in_window {
            st.win_requests += 1;
            let latency = now.saturating_sub(s.lat_start).max(1);
            if ok {
                st.win_ok += 1;
            } else {
                st.win_mismatched += 1;
            }
            match self.recorder.as_mut() {
                // the window's histogram is the sum of the intervals' (Recorder::roll)
                Some(r) => {
                    let t = r.at(now, &mut st.hist);
                    t.requests += 1;
                    if ok {
                        t.ok += 1;
                        t.hist.saturating_record(latency);
                    } else {
                        t.mismatched += 1;
                    }
                }
                None if ok => st.hist.saturating_record(latency),
                None => {}
            }
        }
        if s.conn_left != u64::MAX {
            s.conn_left -= 1;
        }
        if feed == Feed::Desync || s.conn_left == 0 {
            // the client closes first (the server reads EOF between requests)
            s.stream = None;
        }
        Step::Free
    }

    /// The exchange failed: count the cause, drop the connection; the worker is free.
    fn fail(&mut self, i: usize, cause: Cause, err: Option<io::Error>, now: u64) -> Step {
        self.stats.errors[cause as usize] += 1;
        if self.in_window(now) {
            self.stats.win_errors[cause as usize] += 1;
            if let Some(r) = self.recorder.as_mut() {
                r.at(now, &mut self.stats.hist).error(cause);
            }
        }
        let s = &mut self.slots[i];
        let state = s.state;
        let got = s.ex.received_bytes();
        let target = self.plan.target;
        let timeout_ms = self.plan.timeout_ns / 1_000_000;
        self.stats.note_first(now, || {
            let during = match state {
                State::Connecting | State::Idle | State::Parked => "connecting".to_string(),
                State::Writing => "sending a request".to_string(),
                _ => format!("reading a reply ({got} bytes of it received)"),
            };
            match (cause, err) {
                (Cause::Timeout, _) => format!("timeout: nothing for {timeout_ms} ms while {during} ({target})"),
                (Cause::Eof, _) => format!("eof: the server closed the connection while {during} ({target})"),
                (c, Some(e)) => format!("{}: {e} while {during} ({target})", cause_name(c)),
                (c, None) => format!("{} while {during} ({target})", cause_name(c)),
            }
        });
        s.stream = None;
        s.deadline = 0;
        s.state = State::Idle;
        Step::Free
    }

    fn sweep(&mut self, now: u64) {
        for i in 0..self.slots.len() {
            let s = &self.slots[i];
            if s.deadline != 0 && s.deadline <= now && matches!(s.state, State::Connecting | State::Writing | State::Reading) {
                self.fail(i, Cause::Timeout, None, now);
                if !self.preconnecting {
                    self.advance(i, now);
                }
            }
        }
    }
}

fn io_cause(e: &io::Error) -> Cause {
    match e.raw_os_error() {
        Some(libc::ECONNRESET) | Some(libc::EPIPE) | Some(libc::ECONNABORTED) => Cause::Reset,
        Some(libc::ETIMEDOUT) => Cause::Timeout,
        _ => Cause::Other,
    }
}

fn cause_name(c: Cause) -> &'static str {
    crate::stats::CAUSES.iter().find(|(_, k)| *k == c).map(|(n, _)| *n).unwrap_or("other")
}
