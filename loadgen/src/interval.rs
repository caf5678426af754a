//! Per-interval records of the measured window, streamed while the load runs (docs/loadgen.md,
//! "Interval lines"). Each client thread counts the current interval on its own and hands it
//! over when the interval has ended on its clock; the reporter merges the threads' records of an
//! interval (counts added, histograms merged, never percentiles averaged) and prints the line
//! as soon as the last thread's record is in.

use std::collections::VecDeque;
use std::io::Write;
use std::sync::mpsc::{Receiver, Sender};

use hdrhistogram::Histogram;

use crate::stats::{self, Cause};

/// The window cut into intervals: interval k is [start + k·len, start + (k+1)·len), the last
/// one cut at `end`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Grid {
    pub start: u64,
    pub end: u64,
    pub len: u64,
}

impl Grid {
    pub fn count(&self) -> u64 {
        (self.end - self.start).div_ceil(self.len)
    }

    pub fn bounds(&self, k: u64) -> (u64, u64) {
        let lo = self.start + k * self.len;
        (lo, (lo + self.len).min(self.end))
    }
}

/// What completed in one interval: one thread's, or all threads' once merged.
pub struct Tally {
    pub requests: u64,
    pub ok: u64,
    pub mismatched: u64,
    pub errors: [u64; 5],
    pub connections: u64,
    /// Latency of the interval's ok exchanges, ns.
    pub hist: Histogram<u64>,
}

impl Tally {
    pub fn new() -> Tally {
        Tally { requests: 0, ok: 0, mismatched: 0, errors: [0; 5], connections: 0, hist: stats::new_histogram() }
    }

    pub fn add(&mut self, other: &Tally) {
        self.requests += other.requests;
        self.ok += other.ok;
        self.mismatched += other.mismatched;
        for (a, b) in self.errors.iter_mut().zip(other.errors) {
            *a += b;
        }
        self.connections += other.connections;
        self.hist.add(&other.hist).expect("histograms of equal bounds");
    }

    #[inline]
    pub fn error(&mut self, cause: Cause) {
        self.errors[cause as usize] += 1;
    }
}

impl Default for Tally {
    fn default() -> Tally {
        Tally::new()
    }
}

/// One thread's side: the interval being counted; the ended ones go to the reporter.
pub struct Recorder {
    grid: Grid,
    k: u64,
    end: u64,
    cur: Tally,
    done: bool,
    tx: Sender<(u64, Tally)>,
}

impl Recorder {
    /// Allocated before the load starts; `start` gives it the window once that is known.
    pub fn new(tx: Sender<(u64, Tally)>) -> Recorder {
        Recorder { grid: Grid { start: 0, end: 0, len: 1 }, k: 0, end: 0, cur: Tally::new(), done: true, tx }
    }

    pub fn start(&mut self, grid: Grid) {
        self.grid = grid;
        self.k = 0;
        self.end = grid.bounds(0).1;
        self.done = grid.count() == 0;
    }

    /// Hand over every interval that ended by `now`, adding each one's latency to `window`
    /// (the thread's histogram of the whole window, which is so the sum of its intervals).
    #[inline]
    pub fn roll(&mut self, now: u64, window: &mut Histogram<u64>) {
        while !self.done && now >= self.end {
            window.add(&self.cur.hist).expect("histograms of equal bounds");
            // one allocation per interval, not per request
            let ended = std::mem::take(&mut self.cur);
            // a reporter that is gone (its output failed) must not stop the load
            let _ = self.tx.send((self.k, ended));
            self.k += 1;
            if self.k == self.grid.count() {
                self.done = true;
            } else {
                self.end = self.grid.bounds(self.k).1;
            }
        }
    }

    /// The tally to count an in-window event at `now` in. An event whose time was read a little
    /// before the current interval began (the loop reads the clock once for several workers)
    /// counts in the current one: every window event is in exactly one interval.
    #[inline]
    pub fn at(&mut self, now: u64, window: &mut Histogram<u64>) -> &mut Tally {
        self.roll(now, window);
        &mut self.cur
    }

    /// When the current interval ends (None: all handed over).
    pub fn next_end(&self) -> Option<u64> {
        (!self.done).then_some(self.end)
    }
}

/// An interval as the reporter printed it, without its histogram (a long run has many).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Summary {
    pub index: u64,
    pub start_ns: u64,
    pub end_ns: u64,
    pub requests: u64,
    pub ok: u64,
    pub mismatched: u64,
    pub errors: [u64; 5],
    pub connections: u64,
    pub latency_count: u64,
}

/// Merge the `threads` records of each interval as they come and write its line to `out` (and
/// flush) as soon as the last one is in. Ends when every sender is gone.
pub fn report(rx: Receiver<(u64, Tally)>, threads: usize, grid: Grid, out: &mut dyn Write) -> Vec<Summary> {
    // pending[j] is interval first + j: the merged tally and how many threads sent theirs
    let mut pending: VecDeque<(Tally, usize)> = VecDeque::new();
    let mut first = 0u64;
    let mut printed = Vec::new();
    for (k, t) in rx {
        let j = (k - first) as usize;
        while pending.len() <= j {
            pending.push_back((Tally::new(), 0));
        }
        pending[j].0.add(&t);
        pending[j].1 += 1;
        while pending.front().is_some_and(|(_, n)| *n == threads) {
            let (merged, _) = pending.pop_front().expect("front exists");
            let mut text = line(first, grid, &merged);
            text.push('\n');
            // stdout gone: the summary's own write will fail and say so
            let _ = out.write_all(text.as_bytes()).and_then(|_| out.flush());
            let (start_ns, end_ns) = grid.bounds(first);
            printed.push(Summary {
                index: first,
                start_ns,
                end_ns,
                requests: merged.requests,
                ok: merged.ok,
                mismatched: merged.mismatched,
                errors: merged.errors,
                connections: merged.connections,
                latency_count: merged.hist.len(),
            });
            first += 1;
        }
    }
    printed
}

/// The interval's JSON line. Written by hand so that `"interval"` comes first: a reader can tell
/// interval lines from the summary by their first bytes.
pub fn line(k: u64, grid: Grid, t: &Tally) -> String {
    let (start_ns, end_ns) = grid.bounds(k);
    format!(
        "{{\"interval\":{k},\"start_ns\":{start_ns},\"end_ns\":{end_ns},\"requests\":{},\"ok\":{},\"mismatched\":{},\"errors\":{},\"connections\":{},\"latency_us\":{},\"histogram\":{}}}",
        t.requests,
        t.ok,
        t.mismatched,
        stats::errors_json(&t.errors),
        t.connections,
        stats::latency_json(&t.hist),
        serde_json::Value::String(stats::encode_histogram(&t.hist)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc::channel;

    #[test]
    fn grid_cuts_the_last_interval_short() {
        let g = Grid { start: 1000, end: 3500, len: 1000 };
        assert_eq!(g.count(), 3);
        assert_eq!(g.bounds(0), (1000, 2000));
        assert_eq!(g.bounds(2), (3000, 3500));
        assert_eq!(Grid { start: 0, end: 3000, len: 1000 }.count(), 3);
        assert_eq!(Grid { start: 0, end: 1, len: 1000 }.count(), 1);
    }

    #[test]
    fn threads_records_are_merged_and_printed_in_order_once_complete() {
        let grid = Grid { start: 0, end: 250, len: 100 };
        let (tx, rx) = channel();
        let mut a = Recorder::new(tx.clone());
        let mut b = Recorder::new(tx);
        a.start(grid);
        b.start(grid);
        let (mut wa, mut wb) = (stats::new_histogram(), stats::new_histogram());
        let t = a.at(10, &mut wa);
        t.requests += 1;
        t.ok += 1;
        t.hist.record(5_000).unwrap();
        // an event at 150 on thread a closes interval 0 there first
        let t = a.at(150, &mut wa);
        t.requests += 1;
        t.mismatched += 1;
        t.error(Cause::Reset);
        let t = b.at(99, &mut wb);
        t.connections += 1;
        t.requests += 1;
        t.ok += 1;
        t.hist.record(7_000).unwrap();
        a.roll(250, &mut wa);
        assert_eq!(a.next_end(), None);
        b.roll(260, &mut wb);
        drop((a, b));
        let mut out = Vec::new();
        let got = report(rx, 2, grid, &mut out);
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3);
        assert_eq!(got.iter().map(|s| (s.index, s.start_ns, s.end_ns)).collect::<Vec<_>>(), [(0, 0, 100), (1, 100, 200), (2, 200, 250)]);
        assert_eq!((got[0].requests, got[0].ok, got[0].connections, got[0].latency_count), (2, 2, 1, 2));
        assert_eq!((got[1].requests, got[1].mismatched, got[1].errors), (1, 1, [0, 1, 0, 0, 0]));
        assert_eq!(got[2].requests, 0);
        for (k, l) in lines.iter().enumerate() {
            assert!(l.starts_with(&format!("{{\"interval\":{k},")), "{l}");
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            assert!(v["histogram"].as_str().unwrap().starts_with("HISTF"));
        }
        let v: serde_json::Value = serde_json::from_str(lines[0]).unwrap();
        assert_eq!(v["latency_us"]["count"], 2);
        assert_eq!(v["errors"]["connect"], 0);
        // the window histograms hold what the intervals held
        assert_eq!(wa.len() + wb.len(), 2);
    }

    #[test]
    fn a_missing_thread_holds_the_line_back() {
        let grid = Grid { start: 0, end: 100, len: 100 };
        let (tx, rx) = channel();
        let mut a = Recorder::new(tx.clone());
        a.start(grid);
        a.roll(100, &mut stats::new_histogram());
        drop((a, tx));
        let mut out = Vec::new();
        // two threads, one never reported (it failed): nothing is printed as if complete
        assert!(report(rx, 2, grid, &mut out).is_empty());
        assert!(out.is_empty());
    }
}
