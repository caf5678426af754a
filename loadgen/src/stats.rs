//! Counts and latency of one client thread (no sharing while the load runs), merged at the end.

use hdrhistogram::Histogram;

/// Why a connection or exchange failed (docs/loadgen.md `errors`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cause {
    Connect = 0,
    Reset = 1,
    Eof = 2,
    Timeout = 3,
    Other = 4,
}

pub const CAUSES: [(&str, Cause); 5] =
    [("connect", Cause::Connect), ("reset", Cause::Reset), ("eof", Cause::Eof), ("timeout", Cause::Timeout), ("other", Cause::Other)];

/// Highest latency the histogram holds: an hour, in ns (anything above is clamped to it).
const HIGHEST_NS: u64 = 3_600_000_000_000;

pub fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, HIGHEST_NS, 3).expect("valid histogram bounds")
}

pub struct Stats {
    pub connections: u64,
    pub requests: u64,
    pub ok: u64,
    pub mismatched: u64,
    pub errors: [u64; 5],
    pub win_connections: u64,
    pub win_requests: u64,
    pub win_ok: u64,
    pub win_mismatched: u64,
    pub win_errors: [u64; 5],
    /// Latency of the window's ok exchanges, ns.
    pub hist: Histogram<u64>,
    /// When and what went wrong first on this thread.
    pub first_error: Option<(u64, String)>,
    /// When the thread's last exchange ended.
    pub end_ns: u64,
}

impl Default for Stats {
    fn default() -> Stats {
        Stats::new()
    }
}

impl Stats {
    pub fn new() -> Stats {
        Stats {
            connections: 0,
            requests: 0,
            ok: 0,
            mismatched: 0,
            errors: [0; 5],
            win_connections: 0,
            win_requests: 0,
            win_ok: 0,
            win_mismatched: 0,
            win_errors: [0; 5],
            hist: new_histogram(),
            first_error: None,
            end_ns: 0,
        }
    }

    /// Remember the first problem (the description is built only for that one).
    #[inline]
    pub fn note_first(&mut self, at_ns: u64, describe: impl FnOnce() -> String) {
        if self.first_error.is_none() {
            self.first_error = Some((at_ns, describe()));
        }
    }

    pub fn merge(&mut self, other: Stats) {
        self.connections += other.connections;
        self.requests += other.requests;
        self.ok += other.ok;
        self.mismatched += other.mismatched;
        for (a, b) in self.errors.iter_mut().zip(other.errors) {
            *a += b;
        }
        self.win_connections += other.win_connections;
        self.win_requests += other.win_requests;
        self.win_ok += other.win_ok;
        self.win_mismatched += other.win_mismatched;
        for (a, b) in self.win_errors.iter_mut().zip(other.win_errors) {
            *a += b;
        }
        self.hist.add(&other.hist).expect("histograms of equal bounds");
        self.first_error = match (self.first_error.take(), other.first_error) {
            (Some(a), Some(b)) => Some(if b.0 < a.0 { b } else { a }),
            (a, b) => a.or(b),
        };
        self.end_ns = self.end_ns.max(other.end_ns);
    }
}

/// The histogram as a base64 HdrHistogram V2 compressed entry (values in ns), as HdrHistogram's
/// log format writes it: another tool can decode and merge it.
pub fn encode_histogram(h: &Histogram<u64>) -> String {
    use base64::Engine as _;
    use hdrhistogram::serialization::{Serializer as _, V2DeflateSerializer};
    let mut bytes = Vec::new();
    V2DeflateSerializer::new().serialize(h, &mut bytes).expect("serializing a histogram into memory");
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// `errors` of the output: the count of each cause by name.
pub fn errors_json(errors: &[u64; 5]) -> serde_json::Value {
    let mut m = serde_json::Map::new();
    for (name, cause) in CAUSES {
        m.insert(name.into(), errors[cause as usize].into());
    }
    serde_json::Value::Object(m)
}

/// `latency_us` of the output: null fields when nothing was recorded.
pub fn latency_json(h: &Histogram<u64>) -> serde_json::Value {
    let us = |ns: u64| (ns as f64 / 1000.0 * 1000.0).round() / 1000.0;
    if h.is_empty() {
        return serde_json::json!({"count": 0, "mean": null, "p50": null, "p90": null, "p99": null, "p999": null, "max": null});
    }
    serde_json::json!({
        "count": h.len(),
        "mean": (h.mean() / 1000.0 * 1000.0).round() / 1000.0,
        "p50": us(h.value_at_quantile(0.50)),
        "p90": us(h.value_at_quantile(0.90)),
        "p99": us(h.value_at_quantile(0.99)),
        "p999": us(h.value_at_quantile(0.999)),
        "max": us(h.max()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use hdrhistogram::serialization::Deserializer;

    #[test]
    fn histogram_round_trips_through_the_encoding() {
        let mut h = new_histogram();
        for v in [1_000u64, 2_000, 50_000, 1_000_000, 7_000_000_000] {
            h.record(v).unwrap();
        }
        let text = encode_histogram(&h);
        assert!(text.starts_with("HISTF"), "{text}");
        use base64::Engine as _;
        let bytes = base64::engine::general_purpose::STANDARD.decode(text).unwrap();
        let back: Histogram<u64> = Deserializer::new().deserialize(&mut &bytes[..]).unwrap();
        assert_eq!(back.len(), 5);
        assert_eq!(back.max(), h.max());
        assert_eq!(back.value_at_quantile(0.5), h.value_at_quantile(0.5));
    }

    #[test]
    fn merge_keeps_the_earliest_first_error() {
        let mut a = Stats::new();
        let mut b = Stats::new();
        a.ok = 2;
        b.ok = 3;
        a.errors[Cause::Reset as usize] = 1;
        b.errors[Cause::Reset as usize] = 2;
        a.note_first(20, || "late".into());
        b.note_first(10, || "early".into());
        b.note_first(5, || "not first on its thread".into());
        a.hist.record(1000).unwrap();
        b.hist.record(3000).unwrap();
        a.merge(b);
        assert_eq!(a.ok, 5);
        assert_eq!(a.errors[Cause::Reset as usize], 3);
        assert_eq!(a.first_error.unwrap().1, "early");
        assert_eq!(a.hist.len(), 2);
    }

    #[test]
    fn latency_in_microseconds() {
        let mut h = new_histogram();
        h.record(81_200).unwrap();
        let j = latency_json(&h);
        assert_eq!(j["count"], 1);
        let p50 = j["p50"].as_f64().unwrap();
        assert!((p50 - 81.2).abs() < 0.1, "{p50}");
        assert!(latency_json(&new_histogram())["p50"].is_null());
    }
}
