//! The switch's durable knowledge (issue 36): what it learned that must outlive the process.
//!
//! Keys and tables given an expiry time (*volatile*: the server drops them on its own, at a
//! time the switch does not see) are never cached. That knowledge used to live only in memory,
//! so a restarted switch learned such a row from the next read's answer and served it after the
//! server had expired it. With `--set state_file=PATH` each new volatile fact is appended to
//! PATH and flushed to the disk (`sync_data`) *before* the write that caused it is forwarded
//! (the program does it while classifying the request, and the runtime sends the frame only
//! after the program returns); a restarted switch reads the file back before it sees a packet.
//! A SIGKILL (or a crash) at any point leaves either the record on disk or the write
//! unforwarded: the record is written with one `write` call and the process that is killed
//! before its `write` returns never forwarded the write. A record cut short (a machine crash
//! during the `write`) is the file's last line without its newline: it is dropped on reading,
//! which is safe for the same reason.
//!
//! Also kept: the CQL prepared ids the switch saw prepared (id, keyspace, statement text), so a
//! restarted switch can tell whether an EXECUTE of an id prepared before the restart may set a
//! TTL; without them every such EXECUTE would make every table volatile for good. These are
//! written without `sync_data` (losing one only makes the next switch more careful).
//!
//! The file is line-oriented text (`innet-appswitch-state 1 PROTOCOL`, then `key HEX`,
//! `table HEX HEX`, `all`, `prepared HEX HEX|- HEX`), rewritten without duplicates at every
//! start, and locked (`flock`) while a switch uses it: two switches sharing one file would each
//! miss the other's records.

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

/// One durable fact.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Record {
    /// A cache item (a key of the protocol) given an expiry time.
    Key(Vec<u8>),
    /// A CQL table given cells with a TTL (keyspace, table).
    Table(String, String),
    /// Expiry times the switch cannot place were set: nothing of this protocol is cached.
    All,
    /// A CQL prepared id with the keyspace it was prepared in and the statement's text.
    Prepared {
        id: Vec<u8>,
        keyspace: Option<String>,
        text: String,
    },
}

const MAGIC: &str = "innet-appswitch-state";

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

fn unhex_str(s: &str) -> Option<String> {
    String::from_utf8(unhex(s)?).ok()
}

impl Record {
    fn line(&self) -> String {
        match self {
            Record::Key(k) => format!("key {}\n", hex(k)),
            Record::Table(ks, t) => format!("table {} {}\n", hex(ks.as_bytes()), hex(t.as_bytes())),
            Record::All => "all\n".to_string(),
            Record::Prepared { id, keyspace, text } => format!(
                "prepared {} {} {}\n",
                hex(id),
                keyspace
                    .as_deref()
                    .map_or("-".to_string(), |k| hex(k.as_bytes())),
                hex(text.as_bytes())
            ),
        }
    }

    fn parse(line: &str) -> Option<Record> {
        let f: Vec<&str> = line.split(' ').collect();
        Some(match f.as_slice() {
            ["key", k] => Record::Key(unhex(k)?),
            ["table", ks, t] => Record::Table(unhex_str(ks)?, unhex_str(t)?),
            ["all"] => Record::All,
            ["prepared", id, ks, text] => Record::Prepared {
                id: unhex(id)?,
                keyspace: match *ks {
                    "-" => None,
                    k => Some(unhex_str(k)?),
                },
                text: unhex_str(text)?,
            },
            _ => return None,
        })
    }

    /// Whether the record must be on the disk before the write that made it is forwarded.
    fn must_sync(&self) -> bool {
        !matches!(self, Record::Prepared { .. })
    }
}

/// The open state file of one switch.
pub struct StateFile {
    path: PathBuf,
    file: File,
}

impl StateFile {
    /// Open (or create) `path` for a switch of `protocol` (`cql`, `redis`, `memcached`), lock
    /// it, and return it with the records it holds (duplicates removed; the file is rewritten
    /// that way). Errors name the file, the line and what was expected.
    pub fn open(path: &Path, protocol: &str) -> Result<(StateFile, Vec<Record>), String> {
        let err = |what: String| format!("state_file {}: {what}", path.display());
        let mut file = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(|e| err(format!("cannot open: {e}")))?;
        match file.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                return Err(err(
                    "in use by another switch (locked); one switch per state file".into(),
                ))
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(err(format!("cannot lock: {e}"))),
        }
        let mut text = Vec::new();
        file.read_to_end(&mut text)
            .map_err(|e| err(format!("cannot read: {e}")))?;
        let text = String::from_utf8(text).map_err(|_| err("not UTF-8 text".into()))?;
        // A last line without its newline is a record cut short by a crash: the write it
        // belonged to was never forwarded (see the module doc), so it is dropped.
        let complete = text.rfind('\n').map_or("", |i| &text[..i]);
        let mut records = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for (i, line) in complete.lines().enumerate() {
            if i == 0 {
                let want = format!("{MAGIC} 1 {protocol}");
                if line != want {
                    return Err(err(format!(
                        "line 1: expected `{want}`, found `{}` (a state file of another protocol or format)",
                        line.chars().take(80).collect::<String>()
                    )));
                }
                continue;
            }
            let r = Record::parse(line).ok_or_else(|| {
                err(format!(
                    "line {}: expected `key HEX`, `table HEX HEX`, `all` or `prepared HEX HEX|- HEX`, found `{}`",
                    i + 1,
                    line.chars().take(80).collect::<String>()
                ))
            })?;
            if seen.insert(r.clone()) {
                records.push(r);
            }
        }
        // Rewrite without duplicates (and without a cut record): write a new file, flush it,
        // rename it over the old one. The lock is taken on the new file before the rename, so
        // there is no moment without it.
        let tmp = path.with_extension("tmp");
        let mut body = format!("{MAGIC} 1 {protocol}\n");
        for r in &records {
            body.push_str(&r.line());
        }
        let mut new = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .truncate(false)
            .open(&tmp)
            .map_err(|e| err(format!("cannot create {}: {e}", tmp.display())))?;
        new.try_lock()
            .map_err(|e| err(format!("cannot lock {}: {e}", tmp.display())))?;
        new.set_len(0)
            .and_then(|_| new.write_all(body.as_bytes()))
            .and_then(|_| new.sync_all())
            .map_err(|e| err(format!("cannot write {}: {e}", tmp.display())))?;
        std::fs::rename(&tmp, path).map_err(|e| err(format!("cannot replace: {e}")))?;
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            if let Ok(d) = File::open(dir) {
                let _ = d.sync_all();
            }
        }
        Ok((
            StateFile {
                path: path.to_path_buf(),
                file: new,
            },
            records,
        ))
    }

    /// Append `r` (one `write` call); records about expiry are flushed to the disk before this
    /// returns.
    pub fn append(&mut self, r: &Record) -> Result<(), String> {
        self.file
            .write_all(r.line().as_bytes())
            .and_then(|_| {
                if r.must_sync() {
                    self.file.sync_data()
                } else {
                    Ok(())
                }
            })
            .map_err(|e| format!("state_file {}: cannot append: {e}", self.path.display()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("innet-state-{}-{name}", std::process::id()));
        let _ = std::fs::remove_file(&d);
        d
    }

    #[test]
    fn records_survive_reopening_and_duplicates_and_cut_records_are_dropped() {
        let p = tmp("roundtrip");
        let recs = [
            Record::Key(b"cql:ks\0t\0\x00\x00\x00\x02".to_vec()),
            Record::Table("ks".into(), "odd table \n name".into()),
            Record::All,
            Record::Prepared {
                id: vec![1, 2, 3],
                keyspace: None,
                text: "INSERT INTO t (k) VALUES (?) USING TTL ?".into(),
            },
        ];
        {
            let (mut f, old) = StateFile::open(&p, "cql").unwrap();
            assert!(old.is_empty());
            for r in recs.iter().chain(recs.iter()) {
                f.append(r).unwrap();
            }
        }
        // A crash in the middle of a record: the cut line is dropped.
        std::fs::OpenOptions::new()
            .append(true)
            .open(&p)
            .unwrap()
            .write_all(b"key 0a0")
            .unwrap();
        let (mut f, got) = StateFile::open(&p, "cql").unwrap();
        assert_eq!(got, recs.to_vec());
        f.append(&Record::Key(b"x".to_vec())).unwrap();
        drop(f);
        let (_f, got) = StateFile::open(&p, "cql").unwrap();
        assert_eq!(got.len(), 5);
        assert_eq!(got[4], Record::Key(b"x".to_vec()));
        let _ = std::fs::remove_file(&p);
    }

    #[test]
    fn a_second_switch_and_other_protocols_and_garbage_are_refused_with_the_line() {
        let p = tmp("refused");
        let (_f, _) = StateFile::open(&p, "redis").unwrap();
        let e = StateFile::open(&p, "redis").err().unwrap();
        assert!(e.contains("in use by another switch"), "{e}");
        drop(_f);
        let e = StateFile::open(&p, "cql").err().unwrap();
        assert!(
            e.contains("line 1") && e.contains("innet-appswitch-state 1 cql"),
            "{e}"
        );
        std::fs::write(&p, "innet-appswitch-state 1 redis\nkey 00\nkey zz\n").unwrap();
        let e = StateFile::open(&p, "redis").err().unwrap();
        assert!(e.contains("line 3") && e.contains("key zz"), "{e}");
        let _ = std::fs::remove_file(&p);
    }
}
