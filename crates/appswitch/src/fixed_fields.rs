//! The paper's §5.6 baseline *without lexical analysis* (Fig. 19): the switch assumes every
//! QUERY is a `SELECT` whose table name and key sit at fixed byte offsets of the statement text
//! and have fixed lengths, and reads them there without tokenizing the statement. The client
//! only sends statements that meet the assumption (the experiment `appswitch.lexical` builds the
//! offsets from its one query template). Enabled with `--set parser=fixed
//! fixed_table=OFF:LEN fixed_key=OFF:LEN` (byte offsets into the QUERY's statement string; the
//! table span may be `ks.table`, the key span is the text between the literal's quotes).
//!
//! Statements that do not start with `SELECT ` or are too short for the spans fall back to the
//! lexical analysis, so writes still invalidate the cache (consistency is never traded away).

use innet_wire::cql::statement::{KeyValue, TableRef};

/// A byte span `offset..offset + len` of the statement text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    pub offset: usize,
    pub len: usize,
}

impl Span {
    /// `OFF:LEN`, as given to `--set`; `what` names the knob in errors.
    pub fn parse(s: &str, what: &str) -> Result<Span, String> {
        let (o, l) = s.split_once(':').ok_or_else(|| {
            format!("--set {what}={s}: expected OFFSET:LENGTH (bytes), e.g. 40:8")
        })?;
        let offset = o
            .trim()
            .parse()
            .map_err(|_| format!("--set {what}={s}: offset '{o}' is not a non-negative integer"))?;
        let len: usize = l
            .trim()
            .parse()
            .map_err(|_| format!("--set {what}={s}: length '{l}' is not a non-negative integer"))?;
        if len == 0 {
            return Err(format!("--set {what}={s}: length must be at least 1"));
        }
        Ok(Span { offset, len })
    }

    fn get<'a>(&self, text: &'a str) -> Option<&'a str> {
        text.get(self.offset..self.offset.checked_add(self.len)?)
    }
}

/// The fixed layout of the only query shape the fixed-address parser understands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FixedLayout {
    pub table: Span,
    pub key: Span,
}

/// What the fixed-address read found: the table, the key, and the query's shape (the text
/// with the key span replaced by `?`), the cache's answer identity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FixedRead {
    pub table: TableRef,
    pub key: KeyValue,
    pub shape: String,
}

impl FixedLayout {
    /// Read a SELECT's table and key at the fixed offsets; `None` if the text is not a
    /// `SELECT ` or too short (then the caller lexes it).
    pub fn read(&self, text: &str) -> Option<FixedRead> {
        if !text.as_bytes().starts_with(b"SELECT ") {
            return None;
        }
        let table = self.table.get(text)?;
        let key = self.key.get(text)?;
        let table = match table.split_once('.') {
            Some((ks, t)) => TableRef {
                keyspace: Some(ks.to_ascii_lowercase()),
                table: t.to_ascii_lowercase(),
            },
            None => TableRef {
                keyspace: None,
                table: table.to_ascii_lowercase(),
            },
        };
        let mut shape = String::with_capacity(text.len());
        shape.push_str(&text[..self.key.offset]);
        shape.push('?');
        shape.push_str(&text[self.key.offset + self.key.len..]);
        Some(FixedRead {
            table,
            key: KeyValue::Text(key.to_string()),
            shape,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_fixed_spans() {
        let text = "SELECT v FROM fig12.tttttttt WHERE k = '0000002a'";
        let f = FixedLayout {
            table: Span::parse("14:14", "fixed_table").unwrap(),
            key: Span::parse("40:8", "fixed_key").unwrap(),
        };
        let r = f.read(text).unwrap();
        assert_eq!(r.table.keyspace.as_deref(), Some("fig12"));
        assert_eq!(r.table.table, "tttttttt");
        assert_eq!(r.key, KeyValue::Text("0000002a".into()));
        assert_eq!(r.shape, "SELECT v FROM fig12.tttttttt WHERE k = '?'");
        // What the lexer finds for the same text: the same table and key.
        match innet_wire::cql::statement::parse_statement(text) {
            innet_wire::cql::statement::Statement::Select { table, key, .. } => {
                assert_eq!(table, r.table);
                assert_eq!(key, innet_wire::cql::statement::Term::Literal(r.key.clone()));
            }
            other => panic!("lexer: {other:?}"),
        }
    }

    #[test]
    fn falls_back_and_never_panics() {
        let f = FixedLayout {
            table: Span {
                offset: 14,
                len: 14,
            },
            key: Span { offset: 40, len: 8 },
        };
        assert!(f.read("UPDATE fig12.t SET v = 'x' WHERE k = 'a'").is_none());
        assert!(f.read("SELECT v FROM t").is_none());
        // A span ending inside a multi-byte character is not a panic, just no fixed read.
        assert!(f
            .read("SELECT v FROM fig12.tttttttt WHERE k = '0000000é'")
            .is_none());
        for s in ["SELECT ", "SELECT ééééééééééééééééééééééééééééééééééé", ""]
        {
            let _ = f.read(s);
        }
        assert!(Span::parse("40", "fixed_key").is_err());
        assert!(Span::parse("a:8", "fixed_key").is_err());
        assert!(Span::parse("4:0", "fixed_key").is_err());
    }
}
