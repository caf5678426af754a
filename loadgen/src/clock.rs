//! `corobench-load clock`: the far end of the harness's clock alignment over an ssh channel.
//! For every line that arrives it answers one line, this host's CLOCK_MONOTONIC in ns, written
//! and flushed at once; the harness times each round trip and takes the offset from the
//! fastest. Reading and answering use fixed buffers: nothing is allocated per probe.

use std::io::{self, Read, Write};

use crate::sys;

/// Answer every line of `input` (a last line without its newline too) until EOF.
pub fn serve(mut input: impl Read, mut output: impl Write) -> io::Result<()> {
    let mut buf = [0u8; 4096];
    let mut open_line = false;
    loop {
        let n = match input.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        for &b in &buf[..n] {
            if b == b'\n' {
                answer(&mut output)?;
                open_line = false;
            } else {
                open_line = true;
            }
        }
    }
    if open_line {
        answer(&mut output)?;
    }
    Ok(())
}

/// One answer: the clock read now, in decimal, and a newline.
fn answer(output: &mut impl Write) -> io::Result<()> {
    let mut text = [0u8; 21];
    let mut at = text.len() - 1;
    text[at] = b'\n';
    let mut n = sys::now_ns();
    loop {
        at -= 1;
        text[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    output.write_all(&text[at..])?;
    output.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answers(input: &[u8]) -> Vec<u64> {
        let mut out = Vec::new();
        serve(input, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.is_empty() || text.ends_with('\n'));
        text.lines().map(|l| l.parse().expect("an integer")).collect()
    }

    #[test]
    fn one_answer_per_line_from_this_clock() {
        let before = sys::now_ns();
        let got = answers(b"a\n\nprobe 3\n");
        let after = sys::now_ns();
        assert_eq!(got.len(), 3);
        assert!(got.windows(2).all(|w| w[0] <= w[1]), "{got:?}");
        assert!(got[0] >= before && got[2] <= after, "{before} {got:?} {after}");
        assert_eq!(answers(b"no newline at the end").len(), 1);
        assert_eq!(answers(b"x\ny").len(), 2);
        assert!(answers(b"").is_empty());
    }
}
