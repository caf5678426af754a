//! `--agent I/N`: one of N client processes (on this host or others) that share one load. The
//! totals on the command line are for all N; each agent takes its part of every total, the parts
//! adding up exactly to the totals (docs/loadgen.md, "Agents").

/// At most this many agents share a load.
pub const MAX_AGENTS: u32 = 1024;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Agent {
    pub index: u32,
    pub count: u32,
}

impl Agent {
    /// The only agent: the whole load (the default).
    pub const SOLE: Agent = Agent { index: 0, count: 1 };

    /// `I/N` with 0 ≤ I < N ≤ MAX_AGENTS. Err is the reason, without the flag's name.
    pub fn parse(v: &str) -> Result<Agent, String> {
        let (i, n) = v.split_once('/').ok_or_else(|| format!("{v:?} is not I/N (e.g. 0/2)"))?;
        let whole = |s: &str| s.parse::<u32>().ok().filter(|_| s.bytes().all(|c| c.is_ascii_digit()));
        let (Some(index), Some(count)) = (whole(i), whole(n)) else {
            return Err(format!("{v:?} is not I/N with whole numbers (e.g. 0/2)"));
        };
        if count == 0 || count > MAX_AGENTS {
            return Err(format!("{v}: N must be 1 … {MAX_AGENTS}"));
        }
        if index >= count {
            return Err(format!("{v}: I must be 0 … N−1"));
        }
        Ok(Agent { index, count })
    }

    /// This agent's part of `total`: total / N, and one more for the first total mod N agents.
    pub fn share(self, total: u64) -> u64 {
        let (i, n) = (self.index as u64, self.count as u64);
        total / n + u64::from(i < total % n)
    }

    /// The parts of the agents before this one: the global index of this agent's first item.
    pub fn offset(self, total: u64) -> u64 {
        let (i, n) = (self.index as u64, self.count as u64);
        i * (total / n) + i.min(total % n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_i_of_n() {
        assert_eq!(Agent::parse("0/1"), Ok(Agent::SOLE));
        assert_eq!(Agent::parse("3/4"), Ok(Agent { index: 3, count: 4 }));
        assert_eq!(Agent::parse("1023/1024"), Ok(Agent { index: 1023, count: 1024 }));
        for bad in ["", "1", "/", "1/", "/2", "2/2", "5/3", "0/0", "0/1025", "-1/2", "+0/2", "0/2/3", "a/b", " 0/2", "0.5/2"] {
            assert!(Agent::parse(bad).is_err(), "{bad:?} was accepted");
        }
    }

    #[test]
    fn shares_add_up_to_the_total_and_tile_it() {
        for n in [1u32, 2, 3, 7, 1024] {
            for total in [0u64, 1, 2, 5, 80, 1001, 50_000, u64::MAX >> 1] {
                let mut next = 0;
                let mut sum = 0u64;
                for i in 0..n {
                    let a = Agent { index: i, count: n };
                    assert_eq!(a.offset(total), next, "n {n} total {total} agent {i}");
                    let s = a.share(total);
                    // the remainder goes to the lowest indices, one each
                    assert!(s == total / n as u64 || s == total / n as u64 + 1);
                    next += s;
                    sum += s;
                }
                assert_eq!(sum, total, "n {n} total {total}");
            }
        }
        let a = |i| Agent { index: i, count: 3 };
        assert_eq!((a(0).share(80), a(1).share(80), a(2).share(80)), (27, 27, 26));
        assert_eq!((a(0).offset(80), a(1).offset(80), a(2).offset(80)), (0, 27, 54));
    }
}
