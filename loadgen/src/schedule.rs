//! Open loop (`--rate X`): a fixed schedule, as wrk2 has. The run's exchanges are slots
//! j = 0, 1, 2, … at `start + j / X`; worker w of C owns the slots j ≡ w (mod C), so each
//! worker sends every C/X seconds and together they send X per second, evenly spaced. An
//! exchange's latency is measured from its slot's time, not from when it was really sent: a
//! worker held up by a slow reply sends late and that delay is counted (coordinated omission
//! corrected).

#[derive(Clone, Copy, Debug)]
pub struct Schedule {
    start_ns: u64,
    interval_ns: f64,
    worker: u64,
    workers: u64,
}

impl Schedule {
    pub fn new(start_ns: u64, rate: f64, worker: usize, workers: usize) -> Schedule {
        Schedule { start_ns, interval_ns: 1e9 / rate, worker: worker as u64, workers: workers as u64 }
    }

    /// The time of this worker's k-th exchange (k = 0, 1, …).
    #[inline]
    pub fn at(&self, k: u64) -> u64 {
        let slot = self.worker + k * self.workers;
        self.start_ns + (slot as f64 * self.interval_ns) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workers_interleave_into_an_even_schedule() {
        let (rate, workers) = (1000.0, 7);
        let schedules: Vec<Schedule> = (0..workers).map(|w| Schedule::new(5_000, rate, w, workers)).collect();
        let mut all: Vec<u64> = schedules.iter().flat_map(|s| (0..100).map(move |k| s.at(k))).collect();
        all.sort_unstable();
        for (j, t) in all.iter().enumerate() {
            assert_eq!(*t, 5_000 + j as u64 * 1_000_000, "slot {j}");
        }
    }

    #[test]
    fn each_worker_sends_every_c_over_x_seconds() {
        let s = Schedule::new(0, 250.0, 3, 10);
        assert_eq!(s.at(0), 12_000_000);
        for k in 0..1000 {
            assert_eq!(s.at(k + 1) - s.at(k), 40_000_000);
        }
    }

    #[test]
    fn fractional_intervals_do_not_drift() {
        // 3 per second: 333,333,333.3 ns apart; after a million slots the time is still exact
        // to within a nanosecond or so, not off by the accumulated rounding.
        let s = Schedule::new(0, 3.0, 0, 1);
        let t = s.at(3_000_000);
        assert!((t as i64 - 1_000_000_000_000_000i64).abs() <= 2, "{t}");
        assert_eq!(s.at(1), 333_333_333);
        assert_eq!(s.at(2), 666_666_666);
    }

    #[test]
    fn schedule_is_monotonic_at_high_rates() {
        let s = Schedule::new(1, 1e9, 0, 1);
        let mut prev = 0;
        for k in 0..10_000 {
            let t = s.at(k);
            assert!(t >= prev);
            prev = t;
        }
        assert_eq!(s.at(10_000), 10_001);
    }
}
