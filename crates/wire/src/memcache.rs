//! memcached's text protocol as the switch needs it: requests (retrieval, storage, delete,
//! arithmetic, touch, meta commands and the administrative ones) framed out of a pipelined byte
//! stream, and replies framed by what the request they answer expects (a `get` is answered by
//! `VALUE` blocks up to `END`, a `set` by one line, a `stats` by lines up to `END`, a meta
//! command by one line that may carry a data block). Parsing borrows from the input; nothing is
//! allocated per request. Errors name the byte offset and what was expected.
//!
//! Reference: memcached's doc/protocol.txt (text and meta protocols). The binary protocol
//! (first byte 0x80) is not this protocol: it is rejected, so the switch passes such a
//! connection through untouched.

use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McError {
    pub at: usize,
    pub msg: String,
}

impl fmt::Display for McError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "memcached at byte {}: {}", self.at, self.msg)
    }
}
impl std::error::Error for McError {}

fn err(at: usize, msg: impl Into<String>) -> McError {
    McError {
        at,
        msg: msg.into(),
    }
}

/// Longest command or reply line accepted (memcached allows long multi-key `get` lines).
pub const MAX_LINE_BYTES: usize = 64 * 1024;
/// Largest data block accepted (memcached's item size limit is 1 MiB by default, 1 GiB at most).
pub const MAX_DATA_BYTES: u64 = 1 << 30;
/// Longest key memcached accepts.
pub const MAX_KEY_BYTES: usize = 250;

/// The command of a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cmd {
    Get,
    Gets,
    Gat,
    Gats,
    Set,
    Add,
    Replace,
    Append,
    Prepend,
    Cas,
    Delete,
    Incr,
    Decr,
    Touch,
    FlushAll,
    Stats,
    Version,
    Verbosity,
    Quit,
    /// `mg` (meta get): a read the switch does not cache (its reply depends on the flags).
    MetaGet,
    /// `ms`, `md`, `ma`: meta writes to one key.
    MetaSet,
    MetaDelete,
    MetaArith,
    /// `mn` (answers `MN`), `me` (a debug line).
    MetaNoop,
    MetaDebug,
    /// A line-answered command the switch does not interpret (`lru`, `slabs`, `cache_memlimit`,
    /// `shutdown`, an unknown command answered by `ERROR`, ...): a write of unknown keys.
    Other,
}

/// How the reply to a request is framed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplyShape {
    /// No reply (`noreply`, `quit`).
    None,
    /// One line.
    Line,
    /// `VALUE` blocks then `END` (or one error line).
    Values,
    /// Lines up to `END` (`stats`, `lru_crawler metadump`) or one error line.
    UntilEnd,
    /// One meta status line; `VA <size> ...` is followed by a data block.
    Meta,
}

/// One request, borrowed from the stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Request<'a> {
    /// Bytes the request occupies in the stream (line, and data block for storage commands).
    pub len: usize,
    pub cmd: Cmd,
    /// The whole command line without CRLF.
    pub line: &'a [u8],
    /// The first key (retrieval, storage, delete, arithmetic, touch, meta commands).
    pub key: Option<&'a [u8]>,
    /// Number of keys (retrieval commands may name several).
    pub keys: usize,
    /// Storage commands: client flags, expiration time and the data block (without CRLF).
    pub flags: u32,
    pub exptime: i64,
    pub data: &'a [u8],
    /// `noreply` (classic commands) or the `q` flag (meta commands: replies are suppressed in
    /// some cases, so replies can no longer be matched to requests).
    pub noreply: bool,
    pub quiet: bool,
    pub reply: ReplyShape,
}

/// A reply as far as the cache cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reply<'a> {
    /// `VALUE` blocks then `END`: how many items and the first item's key and data block.
    Values {
        items: usize,
        first_key: Option<&'a [u8]>,
        first_data: Option<&'a [u8]>,
    },
    Stored,
    NotStored,
    Exists,
    NotFound,
    Deleted,
    Touched,
    /// `ERROR`, `CLIENT_ERROR ...`, `SERVER_ERROR ...`.
    Error,
    /// Any other line (numbers of incr/decr, `OK`, `VERSION ...`, meta status lines, `END` of
    /// `stats`).
    Other,
}

/// A complete reply with the bytes it occupies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Message<T> {
    pub len: usize,
    pub value: T,
}

/// The line starting at `at` without its CRLF, and where the next line starts; `None` if the
/// line is incomplete. A bare LF also ends a line (memcached accepts it on requests).
fn line(b: &[u8], at: usize) -> Result<Option<(&[u8], usize)>, McError> {
    match b[at..].iter().position(|&c| c == b'\n') {
        None if b.len() - at > MAX_LINE_BYTES => Err(err(
            at,
            format!("no line end within {MAX_LINE_BYTES} bytes"),
        )),
        None => Ok(None),
        Some(i) => {
            let end = if i > 0 && b[at + i - 1] == b'\r' {
                at + i - 1
            } else {
                at + i
            };
            Ok(Some((&b[at..end], at + i + 1)))
        }
    }
}

fn words(l: &[u8]) -> impl Iterator<Item = &[u8]> {
    l.split(|&c| c == b' ').filter(|w| !w.is_empty())
}

fn num<T: std::str::FromStr>(w: Option<&[u8]>, at: usize, what: &str) -> Result<T, McError> {
    let w = w.ok_or_else(|| err(at, format!("missing {what}")))?;
    std::str::from_utf8(w)
        .ok()
        .and_then(|s| s.parse::<T>().ok())
        .ok_or_else(|| {
            err(
                at,
                format!("{what} {:?} is not a number", String::from_utf8_lossy(w)),
            )
        })
}

fn key_word(w: Option<&[u8]>, at: usize) -> Result<&[u8], McError> {
    let k = w.ok_or_else(|| err(at, "missing key"))?;
    if k.len() > MAX_KEY_BYTES || k.iter().any(|&c| c < 0x21 || c == 0x7f) {
        return Err(err(
            at,
            format!(
                "key {:?} is longer than {MAX_KEY_BYTES} bytes or has control characters",
                String::from_utf8_lossy(&k[..k.len().min(40)])
            ),
        ));
    }
    Ok(k)
}

/// The data block of `size` bytes at `at`, which must end in CRLF; `None` if incomplete.
fn data_block(b: &[u8], at: usize, size: u64) -> Result<Option<(&[u8], usize)>, McError> {
    if size > MAX_DATA_BYTES {
        return Err(err(
            at,
            format!("data block of {size} bytes exceeds {MAX_DATA_BYTES}"),
        ));
    }
    let end = at + size as usize;
    if b.len() < end + 2 {
        return Ok(None);
    }
    if &b[end..end + 2] != b"\r\n" {
        return Err(err(end, "data block does not end in CRLF"));
    }
    Ok(Some((&b[at..end], end + 2)))
}

/// The command a request line names (`Other` for those the switch does not interpret).
fn command(name: &[u8]) -> Cmd {
    match name {
        b"get" => Cmd::Get,
        b"gets" => Cmd::Gets,
        b"gat" => Cmd::Gat,
        b"gats" => Cmd::Gats,
        b"set" => Cmd::Set,
        b"add" => Cmd::Add,
        b"replace" => Cmd::Replace,
        b"append" => Cmd::Append,
        b"prepend" => Cmd::Prepend,
        b"cas" => Cmd::Cas,
        b"delete" => Cmd::Delete,
        b"incr" => Cmd::Incr,
        b"decr" => Cmd::Decr,
        b"touch" => Cmd::Touch,
        b"flush_all" => Cmd::FlushAll,
        b"stats" => Cmd::Stats,
        b"version" => Cmd::Version,
        b"verbosity" => Cmd::Verbosity,
        b"quit" => Cmd::Quit,
        b"mg" => Cmd::MetaGet,
        b"ms" => Cmd::MetaSet,
        b"md" => Cmd::MetaDelete,
        b"ma" => Cmd::MetaArith,
        b"mn" => Cmd::MetaNoop,
        b"me" => Cmd::MetaDebug,
        _ => Cmd::Other,
    }
}

/// Parse one request from the front of `b`: `Ok(None)` if incomplete.
pub fn parse_request(b: &[u8]) -> Result<Option<Request<'_>>, McError> {
    if b.first() == Some(&0x80) {
        return Err(err(
            0,
            "binary protocol request (magic 0x80), not the text protocol",
        ));
    }
    let Some((l, after)) = line(b, 0)? else {
        return Ok(None);
    };
    let mut w = words(l);
    let name = w.next().ok_or_else(|| err(0, "empty command line"))?;
    let mut r = Request {
        len: after,
        cmd: Cmd::Other,
        line: l,
        key: None,
        keys: 0,
        flags: 0,
        exptime: 0,
        data: &[],
        noreply: false,
        quiet: false,
        reply: ReplyShape::Line,
    };
    r.cmd = command(name);
    match r.cmd {
        Cmd::Get | Cmd::Gets | Cmd::Gat | Cmd::Gats => {
            if matches!(r.cmd, Cmd::Gat | Cmd::Gats) {
                r.exptime = num(w.next(), 0, "expiration time")?;
            }
            for k in w {
                let k = key_word(Some(k), 0)?;
                r.key.get_or_insert(k);
                r.keys += 1;
            }
            if r.keys == 0 {
                return Err(err(0, "retrieval command without a key"));
            }
            r.reply = ReplyShape::Values;
        }
        Cmd::Set | Cmd::Add | Cmd::Replace | Cmd::Append | Cmd::Prepend | Cmd::Cas => {
            r.key = Some(key_word(w.next(), 0)?);
            r.keys = 1;
            r.flags = num(w.next(), 0, "flags")?;
            r.exptime = num(w.next(), 0, "expiration time")?;
            let size: u64 = num(w.next(), 0, "data length")?;
            if r.cmd == Cmd::Cas {
                let _: u64 = num(w.next(), 0, "cas unique")?;
            }
            r.noreply = w.next() == Some(b"noreply");
            let Some((data, end)) = data_block(b, after, size)? else {
                return Ok(None);
            };
            r.data = data;
            r.len = end;
        }
        Cmd::Delete | Cmd::Incr | Cmd::Decr | Cmd::Touch => {
            r.key = Some(key_word(w.next(), 0)?);
            r.keys = 1;
            match r.cmd {
                Cmd::Incr | Cmd::Decr => {
                    let _: u64 = num(w.next(), 0, "delta")?;
                }
                Cmd::Touch => r.exptime = num(w.next(), 0, "expiration time")?,
                _ => {}
            }
            r.noreply = w.any(|x| x == b"noreply");
        }
        Cmd::FlushAll => {
            // `flush_all [delay] [noreply]`: the delay rides in `exptime`.
            for x in w {
                if x == b"noreply" {
                    r.noreply = true;
                } else {
                    r.exptime = num(Some(x), 0, "flush delay")?;
                }
            }
        }
        Cmd::Verbosity => r.noreply = w.any(|x| x == b"noreply"),
        Cmd::Stats => r.reply = ReplyShape::UntilEnd,
        Cmd::Version => {}
        Cmd::Quit => r.reply = ReplyShape::None,
        Cmd::MetaGet
        | Cmd::MetaSet
        | Cmd::MetaDelete
        | Cmd::MetaArith
        | Cmd::MetaNoop
        | Cmd::MetaDebug => {
            r.reply = ReplyShape::Meta;
            if r.cmd != Cmd::MetaNoop {
                let k = key_word(w.next(), 0)?;
                r.key = Some(k);
                r.keys = 1;
            }
            let mut size = None;
            let mut binary_key = false;
            for (i, f) in w.enumerate() {
                if r.cmd == Cmd::MetaSet && i == 0 && f.iter().all(u8::is_ascii_digit) {
                    size = Some(num::<u64>(Some(f), 0, "data length")?);
                    continue;
                }
                match f.first() {
                    Some(b'q') => r.quiet = true,
                    Some(b'b') => binary_key = true,
                    Some(b'T') if r.cmd == Cmd::MetaSet => {
                        r.exptime = num(Some(&f[1..]), 0, "TTL flag")?;
                    }
                    _ => {}
                }
            }
            if binary_key {
                // The key is base64: the switch's key space would be a different encoding of
                // the same item. Treated as a write of an unknown key.
                r.key = None;
            }
            if r.cmd == Cmd::MetaSet {
                let size = size.ok_or_else(|| err(0, "ms without a data length"))?;
                let Some((data, end)) = data_block(b, after, size)? else {
                    return Ok(None);
                };
                r.data = data;
                r.len = end;
            }
        }
        Cmd::Other => match name {
            b"lru_crawler" => {
                if matches!(w.next(), Some(b"metadump" | b"mgdump")) {
                    r.reply = ReplyShape::UntilEnd;
                }
            }
            b"watch" => return Err(err(0, "`watch` turns the connection into a log stream")),
            b"shutdown" => r.reply = ReplyShape::None,
            _ => {}
        },
    }
    if r.noreply {
        r.reply = ReplyShape::None;
    }
    Ok(Some(r))
}

fn is_error_line(l: &[u8]) -> bool {
    l == b"ERROR" || l.starts_with(b"CLIENT_ERROR") || l.starts_with(b"SERVER_ERROR")
}

/// Parse one reply of the given shape from the front of `b`: `Ok(None)` if incomplete.
pub fn parse_reply(b: &[u8], shape: ReplyShape) -> Result<Option<Message<Reply<'_>>>, McError> {
    let Some((l, mut pos)) = line(b, 0)? else {
        return Ok(None);
    };
    let one = |len, value| Ok(Some(Message { len, value }));
    if is_error_line(l) {
        return one(pos, Reply::Error);
    }
    match shape {
        ReplyShape::None => Err(err(0, "a reply where none was expected")),
        ReplyShape::Line | ReplyShape::Meta => {
            if shape == ReplyShape::Meta && l.starts_with(b"VA ") {
                let size: u64 = num(words(l).nth(1), 0, "VA data length")?;
                let Some((_, end)) = data_block(b, pos, size)? else {
                    return Ok(None);
                };
                return Ok(Some(Message {
                    len: end,
                    value: Reply::Other,
                }));
            }
            one(
                pos,
                match l {
                    b"STORED" => Reply::Stored,
                    b"NOT_STORED" => Reply::NotStored,
                    b"EXISTS" => Reply::Exists,
                    b"NOT_FOUND" => Reply::NotFound,
                    b"DELETED" => Reply::Deleted,
                    b"TOUCHED" => Reply::Touched,
                    _ => Reply::Other,
                },
            )
        }
        ReplyShape::UntilEnd => {
            let mut l = l;
            while l != b"END" {
                let Some((next, p)) = line(b, pos)? else {
                    return Ok(None);
                };
                l = next;
                pos = p;
            }
            one(pos, Reply::Other)
        }
        ReplyShape::Values => {
            let (mut items, mut first_key, mut first_data) = (0, None, None);
            let mut l = l;
            let mut at = 0;
            while l != b"END" {
                let mut w = words(l);
                if w.next() != Some(b"VALUE") {
                    return Err(err(at, "expected VALUE or END"));
                }
                let k = key_word(w.next(), at)?;
                let _: u32 = num(w.next(), at, "flags")?;
                let size: u64 = num(w.next(), at, "data length")?;
                let Some((data, end)) = data_block(b, pos, size)? else {
                    return Ok(None);
                };
                if items == 0 {
                    first_key = Some(k);
                    first_data = Some(data);
                }
                items += 1;
                at = end;
                let Some((next, p)) = line(b, end)? else {
                    return Ok(None);
                };
                l = next;
                pos = p;
            }
            Ok(Some(Message {
                len: pos,
                value: Reply::Values {
                    items,
                    first_key,
                    first_data,
                },
            }))
        }
    }
}

/// The exact reply memcached gives to `get key` for an item with these flags and data.
pub fn encode_value(key: &[u8], flags: u32, data: &[u8], out: &mut Vec<u8>) {
    out.extend_from_slice(b"VALUE ");
    out.extend_from_slice(key);
    out.extend_from_slice(format!(" {flags} {}\r\n", data.len()).as_bytes());
    out.extend_from_slice(data);
    out.extend_from_slice(b"\r\nEND\r\n");
}

/// A per-direction reassembler. Complete messages are handed to a callback borrowed from the
/// input itself when nothing is buffered (the common case: one request per segment), else from
/// the reassembly buffer; only a trailing partial message is copied.
#[derive(Debug, Default, Clone)]
pub struct McReader {
    buf: Vec<u8>,
}

impl McReader {
    pub fn at_boundary(&self) -> bool {
        self.buf.is_empty()
    }
    pub fn pending_bytes(&self) -> usize {
        self.buf.len()
    }

    /// Run `step` over the complete messages of the buffered bytes plus `bytes`; `step` parses
    /// one message from the front of its slice and returns its length (`None`: incomplete).
    fn run(
        &mut self,
        bytes: &[u8],
        mut step: impl FnMut(&[u8]) -> Result<Option<usize>, McError>,
    ) -> Result<(), McError> {
        let mut owned = std::mem::take(&mut self.buf);
        let from_buf = !owned.is_empty();
        if from_buf {
            owned.extend_from_slice(bytes);
        }
        let input: &[u8] = if from_buf { &owned } else { bytes };
        let mut at = 0;
        let res = loop {
            if at == input.len() {
                break Ok(());
            }
            match step(&input[at..]) {
                Ok(Some(len)) => at += len,
                Ok(None) => break Ok(()),
                Err(e) => {
                    break Err(McError {
                        at: e.at + at,
                        msg: e.msg,
                    })
                }
            }
        };
        if from_buf {
            owned.drain(..at);
        } else {
            owned.clear();
            owned.extend_from_slice(&bytes[at..]);
        }
        self.buf = owned;
        if res.is_err() {
            self.buf.clear();
        }
        res
    }

    /// Feed client bytes; `each` gets every complete request (borrowed; copy what you keep).
    pub fn push_requests(
        &mut self,
        bytes: &[u8],
        mut each: impl FnMut(&Request<'_>),
    ) -> Result<(), McError> {
        self.run(bytes, |b| {
            Ok(parse_request(b)?.map(|r| {
                each(&r);
                r.len
            }))
        })
    }

    /// Feed server bytes. `shape_of(state)` says what the oldest unanswered request expects
    /// (`None`: no request waits, so any bytes are an error); `each(state, reply, raw)` gets
    /// every complete reply with its raw bytes, in order.
    pub fn push_replies<S>(
        &mut self,
        bytes: &[u8],
        state: &mut S,
        shape_of: impl Fn(&S) -> Option<ReplyShape>,
        mut each: impl FnMut(&mut S, Reply<'_>, &[u8]),
    ) -> Result<(), McError> {
        self.run(bytes, |b| {
            let Some(shape) = shape_of(state) else {
                return Err(err(0, "a reply with no request waiting for it"));
            };
            Ok(parse_reply(b, shape)?.map(|m| {
                each(state, m.value, &b[..m.len]);
                m.len
            }))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_requests_of_every_kind() {
        let r = parse_request(b"get k1 k2\r\n").unwrap().unwrap();
        assert_eq!(
            (r.cmd, r.key, r.keys, r.len, r.reply),
            (Cmd::Get, Some(&b"k1"[..]), 2, 11, ReplyShape::Values)
        );
        let r = parse_request(b"set k 5 0 3\r\nabc\r\nget k\r\n")
            .unwrap()
            .unwrap();
        assert_eq!(
            (r.cmd, r.flags, r.exptime, r.data, r.len),
            (Cmd::Set, 5, 0, &b"abc"[..], 18)
        );
        let r = parse_request(b"set k 0 60 1 noreply\r\nx\r\n")
            .unwrap()
            .unwrap();
        assert_eq!(
            (r.noreply, r.reply, r.exptime),
            (true, ReplyShape::None, 60)
        );
        let r = parse_request(b"cas k 0 0 1 77\r\nx\r\n").unwrap().unwrap();
        assert_eq!(r.cmd, Cmd::Cas);
        let r = parse_request(b"delete k noreply\r\n").unwrap().unwrap();
        assert_eq!((r.cmd, r.noreply), (Cmd::Delete, true));
        let r = parse_request(b"incr n 5\r\n").unwrap().unwrap();
        assert_eq!((r.cmd, r.key), (Cmd::Incr, Some(&b"n"[..])));
        let r = parse_request(b"gat 100 a\r\n").unwrap().unwrap();
        assert_eq!((r.cmd, r.exptime, r.key), (Cmd::Gat, 100, Some(&b"a"[..])));
        let r = parse_request(b"ms k 2 T30\r\nhi\r\n").unwrap().unwrap();
        assert_eq!(
            (r.cmd, r.exptime, r.data, r.reply),
            (Cmd::MetaSet, 30, &b"hi"[..], ReplyShape::Meta)
        );
        let r = parse_request(b"mg k v q\r\n").unwrap().unwrap();
        assert!(r.quiet);
        let r = parse_request(b"stats items\r\n").unwrap().unwrap();
        assert_eq!(r.reply, ReplyShape::UntilEnd);
        let r = parse_request(b"quit\r\n").unwrap().unwrap();
        assert_eq!(r.reply, ReplyShape::None);
        // Bare LF ends a line as memcached accepts it.
        assert_eq!(parse_request(b"get k\n").unwrap().unwrap().len, 6);
    }

    #[test]
    fn incomplete_requests_wait_for_more() {
        for b in [
            &b"get k"[..],
            b"set k 0 0 3\r\nab",
            b"set k 0 0 3\r\nabc\r",
            b"ms k 2\r\nh",
        ] {
            assert_eq!(
                parse_request(b).unwrap(),
                None,
                "{:?}",
                String::from_utf8_lossy(b)
            );
        }
    }

    #[test]
    fn bad_requests_name_the_place() {
        let e = parse_request(b"set k x 0 3\r\nabc\r\n").unwrap_err();
        assert!(e.msg.contains("flags"), "{e}");
        let e = parse_request(b"set k 0 0 3\r\nabcd\r\n").unwrap_err();
        assert_eq!(e.at, 16);
        assert!(parse_request(b"get\r\n")
            .unwrap_err()
            .msg
            .contains("without a key"));
        assert!(parse_request(&[0x80, 0, 0, 0])
            .unwrap_err()
            .msg
            .contains("binary"));
        let long = [b"get ".to_vec(), vec![b'a'; 300], b"\r\n".to_vec()].concat();
        assert!(parse_request(&long).unwrap_err().msg.contains("250"));
    }

    #[test]
    fn parses_replies_by_shape() {
        let b = b"VALUE k 3 2\r\nhi\r\nEND\r\nSTORED\r\n";
        let m = parse_reply(b, ReplyShape::Values).unwrap().unwrap();
        assert_eq!(m.len, 22);
        assert_eq!(
            m.value,
            Reply::Values {
                items: 1,
                first_key: Some(&b"k"[..]),
                first_data: Some(&b"hi"[..])
            }
        );
        let m = parse_reply(&b[22..], ReplyShape::Line).unwrap().unwrap();
        assert_eq!(m.value, Reply::Stored);
        // The data block may contain "END\r\n" itself.
        let b = b"VALUE k 0 5\r\nEND\r\n\r\nEND\r\n";
        let m = parse_reply(b, ReplyShape::Values).unwrap().unwrap();
        assert_eq!(m.len, b.len());
        assert_eq!(
            parse_reply(b"END\r\n", ReplyShape::Values)
                .unwrap()
                .unwrap()
                .value,
            Reply::Values {
                items: 0,
                first_key: None,
                first_data: None
            }
        );
        assert_eq!(
            parse_reply(b"SERVER_ERROR out of memory\r\n", ReplyShape::Values)
                .unwrap()
                .unwrap()
                .value,
            Reply::Error
        );
        let s = b"STAT pid 1\r\nSTAT uptime 2\r\nEND\r\n";
        assert_eq!(
            parse_reply(s, ReplyShape::UntilEnd).unwrap().unwrap().len,
            s.len()
        );
        assert_eq!(parse_reply(&s[..20], ReplyShape::UntilEnd).unwrap(), None);
        let v = b"VA 2 f5\r\nhi\r\n";
        assert_eq!(
            parse_reply(v, ReplyShape::Meta).unwrap().unwrap().len,
            v.len()
        );
        assert!(parse_reply(b"NOPE\r\n", ReplyShape::Values).is_err());
    }

    #[test]
    fn encode_value_is_what_get_returns() {
        let mut out = Vec::new();
        encode_value(b"key", 7, b"v\r\nx", &mut out);
        assert_eq!(out, b"VALUE key 7 4\r\nv\r\nx\r\nEND\r\n");
        let m = parse_reply(&out, ReplyShape::Values).unwrap().unwrap();
        assert_eq!(m.len, out.len());
    }

    #[test]
    fn reader_frames_a_stream_split_anywhere() {
        let stream = b"set a 0 0 3\r\nxyz\r\nget a b\r\ndelete a\r\nms k 2 T0\r\nhi\r\nmn\r\n";
        let mut whole = Vec::new();
        McReader::default()
            .push_requests(stream, |r| whole.push((r.cmd, r.line.to_vec())))
            .unwrap();
        assert_eq!(whole.len(), 5);
        for cut in 0..stream.len() {
            let mut rd = McReader::default();
            let mut got = Vec::new();
            rd.push_requests(&stream[..cut], |r| got.push((r.cmd, r.line.to_vec())))
                .unwrap();
            rd.push_requests(&stream[cut..], |r| got.push((r.cmd, r.line.to_vec())))
                .unwrap();
            assert_eq!(got, whole, "cut at {cut}");
            assert!(rd.at_boundary());
        }
    }

    #[test]
    fn reader_matches_reply_shapes_in_order() {
        let shapes = [ReplyShape::Line, ReplyShape::Values, ReplyShape::UntilEnd];
        let stream = b"STORED\r\nVALUE a 0 3\r\nxyz\r\nEND\r\nSTAT x 1\r\nEND\r\n";
        for cut in 0..stream.len() {
            let mut rd = McReader::default();
            let mut st = (0usize, Vec::new());
            for part in [&stream[..cut], &stream[cut..]] {
                rd.push_replies(
                    part,
                    &mut st,
                    |st| shapes.get(st.0).copied(),
                    |st, r, raw| {
                        st.1.push((format!("{r:?}"), raw.len()));
                        st.0 += 1;
                    },
                )
                .unwrap();
            }
            let got = st.1;
            assert_eq!(got.len(), 3, "cut at {cut}");
            assert_eq!(got[0], (format!("{:?}", Reply::Stored), 8));
            assert_eq!(got[2].1, 15);
        }
    }
}
