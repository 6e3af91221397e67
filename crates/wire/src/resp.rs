//! Redis's RESP as the switch needs it: requests (arrays of bulk strings, and inline commands)
//! and replies (RESP2 and RESP3 types) framed out of a pipelined byte stream, so a per-direction
//! reassembler can hand out complete messages with their exact bytes. Errors are values.

use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RespError {
    pub at: usize,
    pub msg: String,
}

impl fmt::Display for RespError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "resp at byte {}: {}", self.at, self.msg)
    }
}
impl std::error::Error for RespError {}

/// Longest bulk string accepted (Redis's proto-max-bulk-len default, 512 MiB).
pub const MAX_BULK_BYTES: i64 = 512 * 1024 * 1024;
/// Longest line (simple string, inline command) before we call the stream malformed.
pub const MAX_LINE_BYTES: usize = 64 * 1024;
const MAX_DEPTH: u32 = 32;
const MAX_ELEMENTS: i64 = 1 << 20;

/// A reply as far as the cache cares; `Other` covers every type it does not act on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    Simple(Vec<u8>),
    Error(Vec<u8>),
    Int(i64),
    /// `$-1` (RESP2 nil) and `_` (RESP3 null) are `Bulk(None)`.
    Bulk(Option<Vec<u8>>),
    Other,
}

/// One complete message: its exact bytes' length and what it says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message<T> {
    pub len: usize,
    pub value: T,
}

fn line(b: &[u8], at: usize) -> Result<Option<(&[u8], usize)>, RespError> {
    match b[at..].iter().position(|&c| c == b'\n') {
        None if b.len() - at > MAX_LINE_BYTES => Err(RespError {
            at,
            msg: format!("no line end within {MAX_LINE_BYTES} bytes"),
        }),
        None => Ok(None),
        Some(i) => {
            if i == 0 || b[at + i - 1] != b'\r' {
                return Err(RespError {
                    at,
                    msg: "line does not end in CRLF".into(),
                });
            }
            Ok(Some((&b[at..at + i - 1], at + i + 1)))
        }
    }
}

fn int(s: &[u8], at: usize) -> Result<i64, RespError> {
    // Fast path for the usual short unsigned decimal (lengths, counts): same value as `parse`.
    if !s.is_empty() && s.len() <= 18 && s.iter().all(u8::is_ascii_digit) {
        return Ok(s.iter().fold(0i64, |n, &d| n * 10 + (d - b'0') as i64));
    }
    std::str::from_utf8(s)
        .ok()
        .and_then(|s| s.parse::<i64>().ok())
        .ok_or_else(|| RespError {
            at,
            msg: format!("{:?} is not an integer", String::from_utf8_lossy(s)),
        })
}

/// The end of a bulk string's `n` bytes starting at `start` (announced by the header at `at`),
/// checked: the length within 0..=[`MAX_BULK_BYTES`] and the bytes followed by CRLF; `Ok(None)`
/// if `b` ends first.
#[inline(always)]
fn bulk_end(b: &[u8], at: usize, start: usize, n: i64) -> Result<Option<usize>, RespError> {
    if !(0..=MAX_BULK_BYTES).contains(&n) {
        return Err(RespError {
            at,
            msg: format!("bulk length {n} outside 0..={MAX_BULK_BYTES}"),
        });
    }
    let end = start + n as usize;
    if b.len() < end + 2 {
        return Ok(None);
    }
    if &b[end..end + 2] != b"\r\n" {
        return Err(RespError {
            at: end,
            msg: "bulk string not followed by CRLF".into(),
        });
    }
    Ok(Some(end))
}

/// A [`Reply`] borrowed from the bytes it was read from (no copies).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplyRef<'a> {
    Simple(&'a [u8]),
    Error(&'a [u8]),
    Int(i64),
    Bulk(Option<&'a [u8]>),
    Other,
}

impl ReplyRef<'_> {
    pub fn to_owned(self) -> Reply {
        match self {
            ReplyRef::Simple(s) => Reply::Simple(s.to_vec()),
            ReplyRef::Error(s) => Reply::Error(s.to_vec()),
            ReplyRef::Int(i) => Reply::Int(i),
            ReplyRef::Bulk(b) => Reply::Bulk(b.map(<[u8]>::to_vec)),
            ReplyRef::Other => Reply::Other,
        }
    }
}

/// Parse one reply from the front of `b`: `Ok(None)` if incomplete.
pub fn parse_reply(b: &[u8]) -> Result<Option<Message<Reply>>, RespError> {
    Ok(reply_at(b, 0, 0)?.map(|(value, end)| Message {
        len: end,
        value: value.to_owned(),
    }))
}

fn reply_at(b: &[u8], at: usize, depth: u32) -> Result<Option<(ReplyRef<'_>, usize)>, RespError> {
    if depth > MAX_DEPTH {
        return Err(RespError {
            at,
            msg: format!("nesting deeper than {MAX_DEPTH}"),
        });
    }
    let Some(&t) = b.get(at) else { return Ok(None) };
    let Some((l, next)) = line(b, at + 1)? else {
        return Ok(None);
    };
    match t {
        b'+' => Ok(Some((ReplyRef::Simple(l), next))),
        b'-' => Ok(Some((ReplyRef::Error(l), next))),
        b':' => Ok(Some((ReplyRef::Int(int(l, at)?), next))),
        b'_' | b',' | b'#' | b'(' => Ok(Some((
            if t == b'_' {
                ReplyRef::Bulk(None)
            } else {
                ReplyRef::Other
            },
            next,
        ))),
        b'$' | b'=' | b'!' => {
            let n = int(l, at)?;
            if n == -1 && t == b'$' {
                return Ok(Some((ReplyRef::Bulk(None), next)));
            }
            let Some(end) = bulk_end(b, at, next, n)? else {
                return Ok(None);
            };
            let v = &b[next..end];
            Ok(Some((
                if t == b'$' {
                    ReplyRef::Bulk(Some(v))
                } else {
                    ReplyRef::Other
                },
                end + 2,
            )))
        }
        b'*' | b'~' | b'>' | b'%' | b'|' => {
            let n = int(l, at)?;
            if n == -1 && t == b'*' {
                return Ok(Some((ReplyRef::Bulk(None), next)));
            }
            if !(0..=MAX_ELEMENTS).contains(&n) {
                return Err(RespError {
                    at,
                    msg: format!("aggregate length {n} outside 0..={MAX_ELEMENTS}"),
                });
            }
            let n = if matches!(t, b'%' | b'|') { 2 * n } else { n };
            let mut pos = next;
            for _ in 0..n {
                match reply_at(b, pos, depth + 1)? {
                    None => return Ok(None),
                    Some((_, e)) => pos = e,
                }
            }
            Ok(Some((ReplyRef::Other, pos)))
        }
        other => Err(RespError {
            at,
            msg: format!("unknown reply type byte 0x{other:02x}"),
        }),
    }
}

/// Parse one command (`*N` array of bulk strings, or an inline command) from the front of `b`.
pub fn parse_command(b: &[u8]) -> Result<Option<Message<Vec<Vec<u8>>>>, RespError> {
    let mut ranges = Vec::new();
    Ok(parse_command_ranges(b, &mut ranges)?.map(|len| Message {
        len,
        value: ranges.iter().map(|r| b[r.clone()].to_vec()).collect(),
    }))
}

/// [`parse_command`] in place: the arguments' byte ranges in `b` go into `args` (cleared
/// first); `Ok(Some(len))` when a whole command of `len` bytes is there.
pub fn parse_command_ranges(
    b: &[u8],
    args: &mut Vec<std::ops::Range<usize>>,
) -> Result<Option<usize>, RespError> {
    args.clear();
    let Some(&t) = b.first() else { return Ok(None) };
    if t != b'*' {
        // Inline command: words separated by spaces, up to CRLF (or a bare LF, as Redis allows).
        let Some(i) = b.iter().position(|&c| c == b'\n') else {
            if b.len() > MAX_LINE_BYTES {
                return Err(RespError {
                    at: 0,
                    msg: "inline command without line end".into(),
                });
            }
            return Ok(None);
        };
        let end = if i > 0 && b[i - 1] == b'\r' { i - 1 } else { i };
        let mut w = 0;
        while w < end {
            let e = b[w..end]
                .iter()
                .position(|&c| c == b' ')
                .map_or(end, |k| w + k);
            if e > w {
                args.push(w..e);
            }
            w = e + 1;
        }
        return Ok(Some(i + 1));
    }
    let Some((l, mut pos)) = line(b, 1)? else {
        return Ok(None);
    };
    let n = int(l, 0)?;
    if !(0..=MAX_ELEMENTS).contains(&n) {
        return Err(RespError {
            at: 0,
            msg: format!("command array length {n} outside 0..={MAX_ELEMENTS}"),
        });
    }
    for _ in 0..n {
        if pos >= b.len() {
            return Ok(None);
        }
        if b[pos] != b'$' {
            return Err(RespError {
                at: pos,
                msg: "command argument is not a bulk string".into(),
            });
        }
        // A bulk string, read as `reply_at` reads one.
        let Some((l, next)) = line(b, pos + 1)? else {
            return Ok(None);
        };
        let n = int(l, pos)?;
        if n == -1 {
            return Err(RespError {
                at: pos,
                msg: "null command argument".into(),
            });
        }
        let Some(end) = bulk_end(b, pos, next, n)? else {
            return Ok(None);
        };
        args.push(next..end);
        pos = end + 2;
    }
    Ok(Some(pos))
}

/// Encode a command as an array of bulk strings.
pub fn encode_command(args: &[&[u8]], out: &mut Vec<u8>) {
    out.extend_from_slice(format!("*{}\r\n", args.len()).as_bytes());
    for a in args {
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
}

/// Encode a bulk-string reply (`None` is the RESP2 nil).
pub fn encode_bulk(v: Option<&[u8]>, out: &mut Vec<u8>) {
    match v {
        None => out.extend_from_slice(b"$-1\r\n"),
        Some(v) => {
            out.extend_from_slice(format!("${}\r\n", v.len()).as_bytes());
            out.extend_from_slice(v);
            out.extend_from_slice(b"\r\n");
        }
    }
}

/// A per-direction reassembler: bytes in, complete messages out with their exact bytes.
#[derive(Debug, Default, Clone)]
pub struct RespReader {
    buf: Vec<u8>,
    /// Reused argument ranges of the command being handed out.
    ranges: Vec<std::ops::Range<usize>>,
}

impl RespReader {
    pub fn at_boundary(&self) -> bool {
        self.buf.is_empty()
    }
    pub fn pending_bytes(&self) -> usize {
        self.buf.len()
    }
    /// Append bytes and hand every complete command's arguments to `f`, in place (no copy, no
    /// allocation once warm). Same commands and errors as [`RespReader::push_commands`].
    pub fn for_each_command(
        &mut self,
        bytes: &[u8],
        mut f: impl FnMut(&[&[u8]]),
    ) -> Result<(), RespError> {
        self.buf.extend_from_slice(bytes);
        let mut used = 0;
        let r = loop {
            match parse_command_ranges(&self.buf[used..], &mut self.ranges) {
                Ok(Some(len)) => {
                    let b = &self.buf[used..used + len];
                    let mut few: [&[u8]; 8] = [&[]; 8];
                    if self.ranges.len() <= few.len() {
                        for (slot, r) in few.iter_mut().zip(&self.ranges) {
                            *slot = &b[r.clone()];
                        }
                        f(&few[..self.ranges.len()]);
                    } else {
                        let many: Vec<&[u8]> = self.ranges.iter().map(|r| &b[r.clone()]).collect();
                        f(&many);
                    }
                    used += len;
                }
                Ok(None) => break Ok(()),
                Err(e) => break Err(e),
            }
        };
        self.buf.drain(..used);
        r
    }
    /// Append bytes and take out every complete command.
    pub fn push_commands(
        &mut self,
        bytes: &[u8],
        out: &mut Vec<Vec<Vec<u8>>>,
    ) -> Result<(), RespError> {
        self.buf.extend_from_slice(bytes);
        let mut used = 0;
        let r = loop {
            match parse_command(&self.buf[used..]) {
                Ok(Some(m)) => {
                    used += m.len;
                    out.push(m.value);
                }
                Ok(None) => break Ok(()),
                Err(e) => break Err(e),
            }
        };
        self.buf.drain(..used);
        r
    }
    /// Append bytes and hand every complete reply, with its exact bytes, to `f`, in place (no
    /// copies): the same replies as [`RespReader::push_replies`] (checked by the `resp` fuzz
    /// target).
    pub fn for_each_reply(
        &mut self,
        bytes: &[u8],
        mut f: impl FnMut(ReplyRef<'_>, &[u8]),
    ) -> Result<(), RespError> {
        // Nothing buffered (the usual case): read the segment where it is.
        let from_buf = !self.buf.is_empty();
        if from_buf {
            self.buf.extend_from_slice(bytes);
        }
        let b: &[u8] = if from_buf { &self.buf } else { bytes };
        let mut used = 0;
        let r = loop {
            match reply_at(&b[used..], 0, 0) {
                Ok(Some((value, len))) => {
                    f(value, &b[used..used + len]);
                    used += len;
                }
                Ok(None) => break Ok(()),
                Err(e) => break Err(e),
            }
        };
        if from_buf {
            self.buf.drain(..used);
        } else {
            self.buf.extend_from_slice(&bytes[used..]);
        }
        r
    }
    /// Append bytes and take out every complete reply (with its bytes).
    pub fn push_replies(
        &mut self,
        bytes: &[u8],
        out: &mut Vec<(Reply, Vec<u8>)>,
    ) -> Result<(), RespError> {
        self.buf.extend_from_slice(bytes);
        let mut used = 0;
        let r = loop {
            match parse_reply(&self.buf[used..]) {
                Ok(Some(m)) => {
                    out.push((m.value, self.buf[used..used + m.len].to_vec()));
                    used += m.len;
                }
                Ok(None) => break Ok(()),
                Err(e) => break Err(e),
            }
        };
        self.buf.drain(..used);
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pipelined_commands_split_anywhere() {
        let mut all = Vec::new();
        encode_command(&[b"SET", b"k1", b"v\r\n1"], &mut all);
        encode_command(&[b"GET", b"k1"], &mut all);
        all.extend_from_slice(b"DEL k1 k2\r\n");
        for cut in 0..=all.len() {
            let mut r = RespReader::default();
            let mut out = Vec::new();
            r.push_commands(&all[..cut], &mut out).unwrap();
            r.push_commands(&all[cut..], &mut out).unwrap();
            assert_eq!(out.len(), 3, "cut {cut}");
            assert_eq!(out[0][2], b"v\r\n1");
            assert_eq!(
                out[2],
                vec![b"DEL".to_vec(), b"k1".to_vec(), b"k2".to_vec()]
            );
            assert!(r.at_boundary());
        }
    }

    /// The in-place reply reader against the owning one, split at every point, with garbage
    /// at the end (the same replies, bytes, error and leftover).
    #[test]
    fn in_place_replies_equal_owned_ones() {
        let all: &[u8] = b"+OK\r\n-ERR x\r\n:3\r\n$-1\r\n$3\r\nabc\r\n*2\r\n$1\r\na\r\n*-1\r\n_\r\n%1\r\n+a\r\n:1\r\n$2\r\nab";
        for tail in [&b""[..], b"\r\n", b"xx\r\n", b"\r\n?bad\r\n"] {
            let bytes = [all, tail].concat();
            for cut in 0..=bytes.len() {
                let (mut a, mut b) = (RespReader::default(), RespReader::default());
                let mut owned = Vec::new();
                let ok1 = a.push_replies(&bytes[..cut], &mut owned).is_ok()
                    && a.push_replies(&bytes[cut..], &mut owned).is_ok();
                let mut seen = Vec::new();
                let mut f = |v: ReplyRef<'_>, raw: &[u8]| seen.push((v.to_owned(), raw.to_vec()));
                let ok2 = b.for_each_reply(&bytes[..cut], &mut f).is_ok()
                    && b.for_each_reply(&bytes[cut..], &mut f).is_ok();
                assert_eq!((ok1, &owned), (ok2, &seen), "tail {tail:?} cut {cut}");
                assert_eq!(a.pending_bytes(), b.pending_bytes());
            }
        }
    }

    #[test]
    fn replies_of_every_type() {
        let all: &[u8] = b"+OK\r\n-ERR x\r\n:3\r\n$-1\r\n$3\r\nabc\r\n*2\r\n$1\r\na\r\n*-1\r\n_\r\n%1\r\n+a\r\n:1\r\n";
        for cut in 0..=all.len() {
            let mut r = RespReader::default();
            let mut out = Vec::new();
            r.push_replies(&all[..cut], &mut out).unwrap();
            r.push_replies(&all[cut..], &mut out).unwrap();
            let vals: Vec<Reply> = out.iter().map(|x| x.0.clone()).collect();
            assert_eq!(
                vals,
                vec![
                    Reply::Simple(b"OK".to_vec()),
                    Reply::Error(b"ERR x".to_vec()),
                    Reply::Int(3),
                    Reply::Bulk(None),
                    Reply::Bulk(Some(b"abc".to_vec())),
                    Reply::Other,
                    Reply::Bulk(None),
                    Reply::Other,
                ]
            );
            assert_eq!(out.iter().map(|x| x.1.len()).sum::<usize>(), all.len());
        }
    }

    #[test]
    fn malformed_is_error() {
        assert!(parse_reply(b"?x\r\n").is_err());
        assert!(parse_reply(b"$3\r\nabcd\r\n").is_err());
        assert!(parse_reply(b":x\r\n").is_err());
        assert!(parse_reply(b"+OK\n").is_err());
        assert!(parse_command(b"*1\r\n:1\r\n").is_err());
        assert!(parse_command(b"*-5\r\n").is_err());
        let deep = b"*1\r\n".repeat(100);
        assert!(parse_reply(&deep).is_err());
    }
}

#[cfg(test)]
mod in_place_tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn int_fast_path_equals_str_parse(s in "[+-]?[0-9]{0,21}|[0-9 a+-]{0,5}") {
            let want = std::str::from_utf8(s.as_bytes()).ok().and_then(|t| t.parse::<i64>().ok());
            prop_assert_eq!(int(s.as_bytes(), 0).ok(), want);
        }
    }

    /// The owning command parser as it was before the in-place one (the oracle): arguments
    /// read with `reply_at` as bulk replies.
    fn oracle(b: &[u8]) -> Result<Option<Message<Vec<Vec<u8>>>>, RespError> {
        let Some(&t) = b.first() else { return Ok(None) };
        if t != b'*' {
            let Some(i) = b.iter().position(|&c| c == b'\n') else {
                if b.len() > MAX_LINE_BYTES {
                    return Err(RespError {
                        at: 0,
                        msg: String::new(),
                    });
                }
                return Ok(None);
            };
            let l = if i > 0 && b[i - 1] == b'\r' {
                &b[..i - 1]
            } else {
                &b[..i]
            };
            let args = l
                .split(|&c| c == b' ')
                .filter(|w| !w.is_empty())
                .map(<[u8]>::to_vec)
                .collect();
            return Ok(Some(Message {
                len: i + 1,
                value: args,
            }));
        }
        let Some((l, mut pos)) = line(b, 1)? else {
            return Ok(None);
        };
        let n = int(l, 0)?;
        if !(0..=MAX_ELEMENTS).contains(&n) {
            return Err(RespError {
                at: 0,
                msg: String::new(),
            });
        }
        let mut args = Vec::new();
        for _ in 0..n {
            if pos >= b.len() {
                return Ok(None);
            }
            if b[pos] != b'$' {
                return Err(RespError {
                    at: pos,
                    msg: String::new(),
                });
            }
            match reply_at(b, pos, 1)? {
                None => return Ok(None),
                Some((ReplyRef::Bulk(Some(v)), e)) => {
                    args.push(v.to_vec());
                    pos = e;
                }
                Some(_) => {
                    return Err(RespError {
                        at: pos,
                        msg: String::new(),
                    })
                }
            }
        }
        Ok(Some(Message {
            len: pos,
            value: args,
        }))
    }

    fn same(b: &[u8]) -> Result<(), TestCaseError> {
        match (parse_command(b), oracle(b)) {
            (Ok(x), Ok(y)) => prop_assert_eq!(x, y),
            (Err(x), Err(y)) => prop_assert_eq!(x.at, y.at),
            (x, y) => prop_assert!(false, "in place {:?} vs oracle {:?}", x, y),
        }
        // The reader hands out the same commands as the owning reader.
        let (mut a, mut c) = (RespReader::default(), RespReader::default());
        let mut owned = Vec::new();
        let ra = a.push_commands(b, &mut owned);
        let mut seen = Vec::new();
        let rc = c.for_each_command(b, |args| {
            seen.push(args.iter().map(|x| x.to_vec()).collect::<Vec<_>>())
        });
        prop_assert_eq!(ra.is_ok(), rc.is_ok());
        prop_assert_eq!(owned, seen);
        Ok(())
    }

    proptest! {
        #[test]
        fn in_place_command_parser_matches_the_owning_one(
            args in prop::collection::vec(prop::collection::vec(prop_oneof![any::<u8>(), Just(b' '), Just(b'\r'), Just(b'\n')], 0..6), 0..11),
            junk in prop::collection::vec(prop_oneof![Just(b'*'), Just(b'$'), Just(b'\r'), Just(b'\n'), Just(b'-'), Just(b'1'), Just(b'3'), Just(b' '), Just(b'a')], 0..30),
            flip in any::<Option<(prop::sample::Index, u8)>>(),
            cut in any::<prop::sample::Index>(),
        ) {
            let refs: Vec<&[u8]> = args.iter().map(|a| a.as_slice()).collect();
            let mut b = Vec::new();
            encode_command(&refs, &mut b);
            b.extend_from_slice(b"GET k\r\n");
            same(&b)?;
            if let Some((i, x)) = flip {
                let i = i.index(b.len());
                b[i] ^= x;
            }
            same(&b)?;
            same(&b[..cut.index(b.len() + 1)])?;
            same(&junk)?;
        }
    }
}
