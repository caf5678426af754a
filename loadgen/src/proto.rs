//! What the event loop needs from a scenario: build a request, take reply bytes as they
//! arrive, say when the reply is complete and whether it was right.

/// The state of a reply after some bytes arrived.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Feed {
    /// Not complete yet.
    More,
    /// Complete and verified.
    Ok,
    /// Complete but wrong; the connection can go on (the framing held).
    Mismatch,
    /// Wrong in a way that loses the framing (unparseable, extra bytes): the reply counts as
    /// mismatched and the connection is closed.
    Desync,
}

pub trait Exchange {
    /// Prepare request number `seq` (unique across the run) and reset the reply state.
    fn begin(&mut self, seq: u64);
    /// The request bytes of the current exchange.
    fn request(&self) -> &[u8];
    /// Where the next read should land (never empty).
    fn recv_buf(&mut self) -> &mut [u8];
    /// `n` bytes were read into the buffer `recv_buf` returned.
    fn received(&mut self, n: usize) -> Feed;
    /// Reply bytes received so far in this exchange.
    fn received_bytes(&self) -> usize;
    /// What was wrong with the last reply (called once per thread at most: may allocate).
    fn describe(&self) -> String;
}

/// Feed `data` in pieces of `piece` bytes through an exchange's buffers, as reads would; the state
/// after the last piece (or the first that completed the reply). For the scenarios' unit tests.
#[cfg(test)]
pub fn feed(ex: &mut impl Exchange, data: &[u8], piece: usize) -> Feed {
    let mut off = 0;
    loop {
        let buf = ex.recv_buf();
        let n = buf.len().min(piece).min(data.len() - off);
        buf[..n].copy_from_slice(&data[off..off + n]);
        off += n;
        match ex.received(n) {
            Feed::More if off < data.len() => continue,
            other => return other,
        }
    }
}
