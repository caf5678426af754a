//! echo: the request bytes of an exchange and the check of its reply, fed as it arrives.

use crate::proto::{Exchange, Feed};

/// The original benchmark sent these 17 bytes; requests are its repetition after a sequence
/// number, so that every request differs (a server cannot answer from a cache).
pub const PATTERN: &[u8] = b"abcdefg0123456789";
pub const UUID_LINE: usize = 37;

/// Request number `seq` of `size` bytes: `<seq in hex>:` then the pattern, cut to `size`
/// (as tests/serverprobe.py builds them). When `size` is too short for that, the low hex
/// digits of `seq`, so that neighbouring requests still differ. Writes into `buf`
/// (`buf.len() == size`); `prev_head` is the head length `buf` holds from the last call, so
/// only the head is rewritten while its length stays the same (a large request is not
/// rebuilt every time).
pub fn fill_request(buf: &mut [u8], seq: u64, prev_head: &mut usize) {
    let mut digits = [0u8; 16];
    let mut n = seq;
    let mut len = 0;
    loop {
        digits[15 - len] = b"0123456789abcdef"[(n & 15) as usize];
        len += 1;
        n >>= 4;
        if n == 0 {
            break;
        }
    }
    let hex = &digits[16 - len..];
    let size = buf.len();
    if len + 1 > size {
        buf.copy_from_slice(&hex[len - size..]);
        *prev_head = usize::MAX; // the pattern is not in place any more
        return;
    }
    let head = len + 1;
    if head != *prev_head {
        for (i, b) in buf[head..].iter_mut().enumerate() {
            *b = PATTERN[i % PATTERN.len()];
        }
        *prev_head = head;
    }
    buf[..len].copy_from_slice(hex);
    buf[len] = b':';
}

/// What was wrong with a reply (kept small and allocation-free; described only when it is the
/// first problem a thread saw).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Problem {
    /// Echoed byte at `offset` differs.
    EchoByte { offset: usize, got: u8, want: u8 },
    /// UUID line `index` is not `\n` + a lowercase UUID v4 (`offset` within the line).
    BadUuid { index: usize, offset: usize, got: u8 },
    /// UUID lines `first` and `second` are equal.
    DuplicateUuid { first: usize, second: usize },
    /// More bytes arrived than the reply has.
    Extra { expected: usize },
}

pub struct EchoExchange {
    request: Vec<u8>,
    head: usize,
    uuids: usize,
    /// Bytes of the reply received so far.
    pos: usize,
    /// The UUID part of the reply (U × 37 bytes).
    tail: Vec<u8>,
    /// Where reads land while the echoed part streams in.
    chunk: Vec<u8>,
    parsed: Vec<u128>,
    problem: Option<Problem>,
    seq: u64,
}

/// Reads of the echoed part go through a chunk of at most this size, so that a 1 MiB request
/// does not need a 1 MiB receive buffer per connection.
const CHUNK: usize = 64 * 1024;

impl EchoExchange {
    pub fn new(size: usize, uuids: usize) -> EchoExchange {
        let reply = size + UUID_LINE * uuids;
        EchoExchange {
            request: vec![0; size],
            head: 0,
            uuids,
            pos: 0,
            tail: vec![0; UUID_LINE * uuids],
            // +1: a read asks for one byte more than the reply's rest, to notice extra bytes
            chunk: vec![0; reply.min(CHUNK) + 1],
            parsed: Vec::with_capacity(uuids),
            problem: None,
            seq: 0,
        }
    }

    fn reply_len(&self) -> usize {
        self.request.len() + self.tail.len()
    }

    /// Check the UUID lines once all of them arrived.
    fn check_uuids(&mut self) -> Option<Problem> {
        self.parsed.clear();
        for index in 0..self.uuids {
            let line = &self.tail[index * UUID_LINE..(index + 1) * UUID_LINE];
            match parse_uuid_line(line) {
                Ok(v) => self.parsed.push(v),
                Err((offset, got)) => return Some(Problem::BadUuid { index, offset, got }),
            }
        }
        if self.uuids > 1 {
            // distinct: sort the values (the Vec is reused, no allocation) and compare neighbours
            self.parsed.sort_unstable();
            if let Some(w) = self.parsed.windows(2).find(|w| w[0] == w[1]) {
                let dup = w[0];
                // find the two lines again for the description (only on this rare path)
                let mut lines = (0..self.uuids).filter(|&index| {
                    parse_uuid_line(&self.tail[index * UUID_LINE..(index + 1) * UUID_LINE]).ok() == Some(dup)
                });
                let first = lines.next().unwrap_or(0);
                let second = lines.next().unwrap_or(0);
                return Some(Problem::DuplicateUuid { first, second });
            }
        }
        None
    }
}

/// `\n` + 36 characters of a lowercase hyphenated UUID of version 4 and variant 10xx
/// (8, 9, a, b). Ok(the 128-bit value); Err((offset in the line, byte found)).
pub fn parse_uuid_line(line: &[u8]) -> Result<u128, (usize, u8)> {
    debug_assert_eq!(line.len(), UUID_LINE);
    if line[0] != b'\n' {
        return Err((0, line[0]));
    }
    let mut value: u128 = 0;
    for (i, &c) in line[1..].iter().enumerate() {
        let offset = i + 1;
        match i {
            8 | 13 | 18 | 23 => {
                if c != b'-' {
                    return Err((offset, c));
                }
                continue;
            }
            _ => {}
        }
        let nibble = match c {
            b'0'..=b'9' => c - b'0',
            b'a'..=b'f' => c - b'a' + 10,
            _ => return Err((offset, c)),
        };
        if (i == 14 && nibble != 4) || (i == 19 && !(8..=11).contains(&nibble)) {
            return Err((offset, c));
        }
        value = value << 4 | nibble as u128;
    }
    Ok(value)
}

impl Exchange for EchoExchange {
    fn begin(&mut self, seq: u64) {
        fill_request(&mut self.request, seq, &mut self.head);
        self.pos = 0;
        self.problem = None;
        self.seq = seq;
    }

    fn request(&self) -> &[u8] {
        &self.request
    }

    fn recv_buf(&mut self) -> &mut [u8] {
        // one byte more than the reply's rest: a read that fills it proves extra bytes
        let n = (self.reply_len() - self.pos + 1).min(self.chunk.len());
        &mut self.chunk[..n]
    }

    fn received(&mut self, n: usize) -> Feed {
        let size = self.request.len();
        let total = self.reply_len();
        let mut data_off = 0;
        let mut left = n;
        if self.pos + n > total {
            self.problem.get_or_insert(Problem::Extra { expected: total });
            return Feed::Desync;
        }
        // echoed part
        if self.pos < size && left > 0 {
            let take = left.min(size - self.pos);
            if self.problem.is_none() {
                let got = &self.chunk[..take];
                let want = &self.request[self.pos..self.pos + take];
                if got != want {
                    let i = got.iter().zip(want).position(|(a, b)| a != b).unwrap_or(0);
                    self.problem = Some(Problem::EchoByte { offset: self.pos + i, got: got[i], want: want[i] });
                }
            }
            self.pos += take;
            data_off = take;
            left -= take;
        }
        // UUID part
        if left > 0 {
            let at = self.pos - size;
            self.tail[at..at + left].copy_from_slice(&self.chunk[data_off..data_off + left]);
            self.pos += left;
        }
        if self.pos < total {
            return Feed::More;
        }
        if self.problem.is_none() {
            self.problem = self.check_uuids();
        }
        if self.problem.is_some() {
            Feed::Mismatch
        } else {
            Feed::Ok
        }
    }

    fn received_bytes(&self) -> usize {
        self.pos
    }

    fn describe(&self) -> String {
        let seq = self.seq;
        match self.problem {
            Some(Problem::EchoByte { offset, got, want }) => format!(
                "echo request {seq:#x}: reply byte {offset} is {:?}, the request has {:?}",
                got as char, want as char
            ),
            Some(Problem::BadUuid { index, offset, got }) => format!(
                "echo request {seq:#x}: UUID line {index} is not newline + lowercase UUID v4: {:?} at offset {offset} (line {:?})",
                got as char,
                String::from_utf8_lossy(&self.tail[index * UUID_LINE..(index + 1) * UUID_LINE])
            ),
            Some(Problem::DuplicateUuid { first, second }) => format!(
                "echo request {seq:#x}: UUID lines {first} and {second} are the same {:?}",
                String::from_utf8_lossy(&self.tail[first * UUID_LINE + 1..(first + 1) * UUID_LINE])
            ),
            Some(Problem::Extra { expected }) => {
                format!("echo request {seq:#x}: more bytes than the {expected} of the reply arrived")
            }
            None => format!("echo request {seq:#x}: no problem"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::feed;

    fn request(seq: u64, size: usize) -> Vec<u8> {
        let mut buf = vec![0; size];
        let mut head = 0;
        fill_request(&mut buf, seq, &mut head);
        buf
    }

    #[test]
    fn requests_follow_the_probe() {
        assert_eq!(request(0, 17), b"0:abcdefg01234567");
        assert_eq!(request(0x1a3, 17), b"1a3:abcdefg012345");
        assert_eq!(request(5, 40), b"5:abcdefg0123456789abcdefg0123456789abcd");
        assert_eq!(request(0xabc, 2), b"bc");
        assert_eq!(request(0xabc, 3), b"abc");
        assert_eq!(request(0xabc, 4), b"abc:");
        assert_eq!(request(7, 1), b"7");
    }

    #[test]
    fn reused_buffer_is_rebuilt_when_the_head_changes() {
        let mut buf = vec![0; 20];
        let mut head = 0;
        for seq in [0u64, 0xf, 0x10, 0xfff, 0x1000, 3, 0xffff_ffff_ffff] {
            fill_request(&mut buf, seq, &mut head);
            assert_eq!(buf, request(seq, 20), "seq {seq:#x}");
        }
        let mut small = vec![0; 3];
        let mut head = 0;
        for seq in [0x12345u64, 1, 0xab, 0xabcdef] {
            fill_request(&mut small, seq, &mut head);
            assert_eq!(small, request(seq, 3), "seq {seq:#x}");
        }
    }

    #[test]
    fn uuid_lines() {
        assert!(parse_uuid_line(b"\n0f8fad5b-d9cb-469f-a165-70867728950e").is_ok());
        assert!(parse_uuid_line(b"\n0f8fad5b-d9cb-469f-b165-70867728950e").is_ok());
        // version 1, variant c, uppercase, missing hyphen, no newline
        assert_eq!(parse_uuid_line(b"\n0f8fad5b-d9cb-169f-a165-70867728950e"), Err((15, b'1')));
        assert_eq!(parse_uuid_line(b"\n0f8fad5b-d9cb-469f-c165-70867728950e"), Err((20, b'c')));
        assert_eq!(parse_uuid_line(b"\n0F8fad5b-d9cb-469f-a165-70867728950e"), Err((2, b'F')));
        assert_eq!(parse_uuid_line(b"\n0f8fad5bad9cb-469f-a165-70867728950e"), Err((9, b'a')));
        assert_eq!(parse_uuid_line(b" 0f8fad5b-d9cb-469f-a165-70867728950e"), Err((0, b' ')));
    }

    fn reply(req: &[u8], uuids: &[&str]) -> Vec<u8> {
        let mut r = req.to_vec();
        for u in uuids {
            r.push(b'\n');
            r.extend_from_slice(u.as_bytes());
        }
        r
    }

    const A: &str = "0f8fad5b-d9cb-469f-a165-70867728950e";
    const B: &str = "7c9e6679-7425-40de-944b-e07fc1f90ae7";

    #[test]
    fn good_reply_in_any_pieces() {
        for piece in [1, 2, 5, 17, 1000] {
            let mut ex = EchoExchange::new(17, 2);
            ex.begin(42);
            let r = reply(ex.request(), &[A, B]);
            assert_eq!(feed(&mut ex, &r, piece), Feed::Ok, "piece {piece}");
        }
        let mut ex = EchoExchange::new(1, 0);
        ex.begin(3);
        assert_eq!(feed(&mut ex, b"3", 1), Feed::Ok);
    }

    #[test]
    fn large_request_streams_through_the_chunk() {
        let mut ex = EchoExchange::new(300_000, 3);
        ex.begin(0x1234);
        let mut r = reply(ex.request(), &[A, B, "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"]);
        assert_eq!(feed(&mut ex, &r, 70_001), Feed::Ok);
        ex.begin(0x1235);
        r = reply(ex.request(), &[A, B, "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"]);
        r[250_000] ^= 1;
        assert_eq!(feed(&mut ex, &r, 65_536), Feed::Mismatch);
        assert!(ex.describe().contains("reply byte 250000"), "{}", ex.describe());
    }

    #[test]
    fn problems() {
        let mut ex = EchoExchange::new(17, 2);
        ex.begin(1);
        let mut r = reply(ex.request(), &[A, B]);
        r[3] = b'X';
        assert_eq!(feed(&mut ex, &r, 4), Feed::Mismatch);
        assert!(ex.describe().contains("reply byte 3"), "{}", ex.describe());

        ex.begin(2);
        let r = reply(ex.request(), &[A, A]);
        assert_eq!(feed(&mut ex, &r, 100), Feed::Mismatch);
        assert!(ex.describe().contains("UUID lines 0 and 1"), "{}", ex.describe());

        ex.begin(3);
        let r = reply(ex.request(), &[A, "0f8fad5b-d9cb-169f-a165-70867728950e"]);
        assert_eq!(feed(&mut ex, &r, 100), Feed::Mismatch);
        assert!(ex.describe().contains("UUID line 1"), "{}", ex.describe());

        ex.begin(4);
        let mut r = reply(ex.request(), &[A, B]);
        r.push(b'!');
        assert_eq!(feed(&mut ex, &r, 1000), Feed::Desync);
        assert!(ex.describe().contains("more bytes"), "{}", ex.describe());
    }
}
