//! The lexical analysis of CQL statement text the switch does (the paper's §4.2): classify a
//! statement as a single-partition read or write by key, find its table, key column and key term
//! (a literal or a bind marker), and everything else as "not cacheable" (reads) or "may write
//! anything" (the cache is flushed). Never panics on any input.

/// A key literal as written in the statement text. What it means depends on the column's type
/// (`crate::cql::key` turns it into the bytes Cassandra stores, or refuses).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum KeyValue {
    /// An integer constant (`42`, `-7`).
    Int(i64),
    /// A decimal constant `-?DIGITS.DIGITS` (its text).
    Num(String),
    /// A string constant (`'a''b'` or `$$a'b$$`), unescaped.
    Text(String),
    /// A blob constant `0x...`.
    Bytes(Vec<u8>),
    /// A UUID constant.
    Uuid([u8; 16]),
    /// `true` / `false`.
    Bool(bool),
}

/// Where a statement's key comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Term {
    Literal(KeyValue),
    /// The n-th `?` of the statement (0-based).
    Marker(usize),
    /// A named marker `:name`.
    Named(String),
}

/// `[keyspace.]table`, lower-cased unless quoted.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TableRef {
    pub keyspace: Option<String>,
    pub table: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Statement {
    /// `SELECT ... FROM t WHERE col = term [LIMIT n] [;]` whose selectors are deterministic
    /// (no `now()`, `ttl(v)`, `writetime(v)`, user functions...). `shape` is the statement text
    /// with the key term replaced by `?` (what else the query asks is part of the cached
    /// answer's identity).
    Select {
        table: TableRef,
        column: String,
        key: Term,
        shape: String,
    },
    /// `INSERT INTO t (cols) VALUES (terms) [IF NOT EXISTS] [USING ...]`.
    Insert {
        table: TableRef,
        columns: Vec<String>,
        values: Vec<Option<Term>>,
        with_ttl: bool,
    },
    /// `UPDATE t [USING ...] SET ... WHERE col = term [IF ...]` and
    /// `DELETE ... FROM t [USING ...] WHERE col = term [IF ...]`.
    WriteByKey {
        table: TableRef,
        column: String,
        key: Term,
        with_ttl: bool,
    },
    /// A write whose keys we cannot tell (IN, ranges, several conditions, INSERT JSON): flush.
    /// `with_ttl`: it may give cells an expiry time (the whole table becomes volatile).
    WriteTable { table: TableRef, with_ttl: bool },
    /// `BEGIN [UNLOGGED | COUNTER] BATCH ... APPLY BATCH`: writes of unknown keys to `tables`
    /// (`complete`: every statement's table was found); `with_ttl`: some statement sets a TTL.
    Batch {
        tables: Vec<TableRef>,
        complete: bool,
        with_ttl: bool,
    },
    /// `USE ks`.
    Use(String),
    /// A read we do not cache (several conditions, ranges, time-dependent selectors...).
    OtherRead,
    /// Anything else (DDL, TRUNCATE, GRANT...): may change anything.
    Other,
}

impl Statement {
    /// Whether the statement may give cells an expiry time.
    pub fn with_ttl(&self) -> bool {
        match self {
            Statement::Insert { with_ttl, .. }
            | Statement::WriteByKey { with_ttl, .. }
            | Statement::WriteTable { with_ttl, .. }
            | Statement::Batch { with_ttl, .. } => *with_ttl,
            _ => false,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    /// Identifier or keyword, lower-cased unless it was quoted (`quoted`).
    Ident {
        s: String,
        quoted: bool,
    },
    Str(String),
    Int(i64),
    /// Hex blob `0x..`.
    Bytes(Vec<u8>),
    Uuid([u8; 16]),
    /// A decimal `-?DIGITS.DIGITS` (its text).
    Num(String),
    /// Any other number (exponents, out-of-range integers...): never a key we cache.
    OtherNum,
    Marker,
    Named(String),
    Sym(char),
}

struct Lexed {
    toks: Vec<(Tok, usize, usize)>,
}

/// The end of a `'...'` or `"..."` token starting at `i` (the quote), with its unescaped
/// content (a doubled quote stands for one).
fn quoted(b: &[u8], mut i: usize, q: u8) -> Option<(Vec<u8>, usize)> {
    let mut s = Vec::new();
    i += 1;
    loop {
        match b.get(i) {
            None => return None,
            Some(&x) if x == q && b.get(i + 1) == Some(&q) => {
                s.push(q);
                i += 2;
            }
            Some(&x) if x == q => return Some((s, i + 1)),
            Some(&x) => {
                s.push(x);
                i += 1;
            }
        }
    }
}

/// Cassandra's lexer, as far as the switch needs it: whitespace and comments (`-- ...`,
/// `// ...` to the end of the line, `/* ... */`, not nested) are skipped; string constants
/// (`'...'` with `''`, `$$...$$`), quoted identifiers, numbers, blobs, UUIDs, markers, symbols.
/// `None` if the text does not lex (then nothing about it is trusted).
fn lex(text: &str) -> Option<Lexed> {
    let b = text.as_bytes();
    let mut i = 0;
    let mut toks = Vec::new();
    while i < b.len() {
        let c = b[i];
        let start = i;
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        if c == b'-' && b.get(i + 1) == Some(&b'-') || c == b'/' && b.get(i + 1) == Some(&b'/') {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
            continue;
        }
        if c == b'/' && b.get(i + 1) == Some(&b'*') {
            let end = text.get(i + 2..)?.find("*/")?;
            i += 2 + end + 2;
            continue;
        }
        if c == b'$' && b.get(i + 1) == Some(&b'$') {
            let end = text.get(i + 2..)?.find("$$")?;
            let s = text[i + 2..i + 2 + end].to_string();
            i += 2 + end + 2;
            toks.push((Tok::Str(s), start, i));
            continue;
        }
        if c == b'\'' {
            let (s, e) = quoted(b, i, b'\'')?;
            i = e;
            toks.push((Tok::Str(String::from_utf8(s).ok()?), start, i));
            continue;
        }
        if c == b'"' {
            let (s, e) = quoted(b, i, b'"')?;
            i = e;
            let s = String::from_utf8(s).ok()?;
            toks.push((Tok::Ident { s, quoted: true }, start, i));
            continue;
        }
        let number_start =
            c.is_ascii_digit() || c == b'-' && b.get(i + 1).is_some_and(u8::is_ascii_digit);
        if c.is_ascii_alphanumeric() || c == b'_' || number_start {
            i += 1;
            while i < b.len()
                && (b[i].is_ascii_alphanumeric() || b[i] == b'_' || b[i] == b'.' && number_start)
            {
                i += 1;
            }
            // A UUID constant: 8-4-4-4-12 hex digits.
            if i - start == 8 && b.get(i) == Some(&b'-') {
                let cand = text.get(start..start + 36).unwrap_or("");
                if is_uuid(cand) {
                    let hex: String = cand.chars().filter(|c| *c != '-').collect();
                    let u: [u8; 16] = decode_hex(&hex)?.try_into().ok()?;
                    toks.push((Tok::Uuid(u), start, start + 36));
                    i = start + 36;
                    continue;
                }
            }
            let word = &text[start..i];
            let tok = if number_start {
                if let Some(h) = word.strip_prefix("0x").or_else(|| word.strip_prefix("0X")) {
                    Tok::Bytes(decode_hex(h)?)
                } else if let Ok(n) = word.parse::<i64>() {
                    Tok::Int(n)
                } else if is_decimal(word) {
                    Tok::Num(word.to_string())
                } else {
                    Tok::OtherNum
                }
            } else {
                Tok::Ident {
                    s: word.to_ascii_lowercase(),
                    quoted: false,
                }
            };
            toks.push((tok, start, i));
            continue;
        }
        if c == b'?' {
            toks.push((Tok::Marker, start, i + 1));
            i += 1;
            continue;
        }
        if c == b':' && b.get(i + 1).is_some_and(|x| x.is_ascii_alphabetic()) {
            i += 1;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            toks.push((
                Tok::Named(text[start + 1..i].to_ascii_lowercase()),
                start,
                i,
            ));
            continue;
        }
        if !c.is_ascii() {
            return None;
        }
        toks.push((Tok::Sym(c as char), start, i + 1));
        i += 1;
    }
    Some(Lexed { toks })
}

/// `-?DIGITS.DIGITS`
fn is_decimal(w: &str) -> bool {
    let w = w.strip_prefix('-').unwrap_or(w);
    matches!(w.split_once('.'), Some((a, b)) if !a.is_empty() && !b.is_empty()
        && a.bytes().all(|c| c.is_ascii_digit()) && b.bytes().all(|c| c.is_ascii_digit()))
}

fn is_uuid(s: &str) -> bool {
    s.len() == 36
        && s.char_indices().all(|(i, c)| {
            if [8, 13, 18, 23].contains(&i) {
                c == '-'
            } else {
                c.is_ascii_hexdigit()
            }
        })
}

fn decode_hex(h: &str) -> Option<Vec<u8>> {
    if h.len() % 2 != 0 {
        return None;
    }
    (0..h.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(h.get(i..i + 2)?, 16).ok())
        .collect()
}

/// Functions whose value depends only on their arguments (so a SELECT using them may be
/// cached). Everything else — `now()`, `uuid()`, `currentTimestamp()`, `ttl(v)`,
/// `writetime(v)`, user-defined functions (any keyspace-qualified name) — is not.
fn deterministic_function(name: &str) -> bool {
    const NAMES: &[&str] = &[
        "tojson",
        "token",
        "cast",
        "totimestamp",
        "tounixtimestamp",
        "todate",
        "dateof",
        "unixtimestampof",
        "mintimeuuid",
        "maxtimeuuid",
        "count",
        "min",
        "max",
        "sum",
        "avg",
        "abs",
    ];
    NAMES.contains(&name)
        || name.starts_with("blobas") && name.len() > 6
        || name.ends_with("asblob") && name.len() > 6
}

struct P<'a> {
    toks: &'a [(Tok, usize, usize)],
    i: usize,
    markers_before: usize,
}

impl<'a> P<'a> {
    fn peek(&self) -> Option<&'a Tok> {
        self.toks.get(self.i).map(|t| &t.0)
    }
    fn next(&mut self) -> Option<&'a Tok> {
        let t = self.toks.get(self.i).map(|t| &t.0);
        if matches!(t, Some(Tok::Marker)) {
            self.markers_before += 1;
        }
        self.i += 1;
        t
    }
    fn kw(&mut self, k: &str) -> bool {
        if matches!(self.peek(), Some(Tok::Ident { s, quoted: false }) if s == k) {
            self.i += 1;
            true
        } else {
            false
        }
    }
    fn sym(&mut self, c: char) -> bool {
        if self.peek() == Some(&Tok::Sym(c)) {
            self.i += 1;
            true
        } else {
            false
        }
    }
    fn ident(&mut self) -> Option<String> {
        match self.peek() {
            Some(Tok::Ident { s, .. }) => {
                let s = s.clone();
                self.i += 1;
                Some(s)
            }
            _ => None,
        }
    }
    fn table(&mut self) -> Option<TableRef> {
        let first = self.ident()?;
        if self.sym('.') {
            let t = self.ident()?;
            Some(TableRef {
                keyspace: Some(first),
                table: t,
            })
        } else {
            Some(TableRef {
                keyspace: None,
                table: first,
            })
        }
    }
    /// A key term; returns it and its token index.
    fn term(&mut self) -> Option<(Term, usize)> {
        let at = self.i;
        let m = self.markers_before;
        let t = match self.next()? {
            Tok::Marker => Term::Marker(m),
            Tok::Named(n) => Term::Named(n.clone()),
            Tok::Int(n) => Term::Literal(KeyValue::Int(*n)),
            Tok::Num(n) => Term::Literal(KeyValue::Num(n.clone())),
            Tok::Str(s) => Term::Literal(KeyValue::Text(s.clone())),
            Tok::Bytes(b) => Term::Literal(KeyValue::Bytes(b.clone())),
            Tok::Uuid(u) => Term::Literal(KeyValue::Uuid(*u)),
            Tok::Ident { s, quoted: false } if s == "true" || s == "false" => {
                Term::Literal(KeyValue::Bool(s == "true"))
            }
            _ => return None,
        };
        Some((t, at))
    }
    /// Skip to the end, counting markers, and tell whether a keyword appears.
    fn rest_has(&mut self, k: &str) -> bool {
        let mut found = false;
        while let Some(t) = self.next() {
            if matches!(t, Tok::Ident { s, quoted: false } if s == k) {
                found = true;
            }
        }
        found
    }
    fn at_end(&mut self) -> bool {
        self.sym(';');
        self.peek().is_none()
    }
}

/// Classify one statement.
pub fn parse_statement(text: &str) -> Statement {
    let Some(lexed) = lex(text) else {
        return classify_unparsed(text);
    };
    let mut p = P {
        toks: &lexed.toks,
        i: 0,
        markers_before: 0,
    };
    if p.kw("select") {
        return parse_select(&mut p, text).unwrap_or(Statement::OtherRead);
    }
    if p.kw("insert") {
        return parse_insert(&mut p).unwrap_or_else(|| write_table_of(&lexed, "into"));
    }
    if p.kw("update") {
        return parse_update(&mut p).unwrap_or_else(|| write_table_of(&lexed, "update"));
    }
    if p.kw("delete") {
        return parse_delete(&mut p).unwrap_or_else(|| write_table_of(&lexed, "from"));
    }
    if p.kw("begin") {
        return parse_batch(&lexed);
    }
    if p.kw("use") {
        if let Some(ks) = p.ident() {
            if p.at_end() {
                return Statement::Use(ks);
            }
        }
        return Statement::Other;
    }
    Statement::Other
}

fn classify_unparsed(text: &str) -> Statement {
    let t = text.trim_start().to_ascii_lowercase();
    if t.starts_with("select") {
        Statement::OtherRead
    } else {
        Statement::Other
    }
}

fn has_ttl(toks: &[(Tok, usize, usize)]) -> bool {
    toks.iter()
        .any(|t| matches!(&t.0, Tok::Ident { s, quoted: false } if s == "ttl"))
}

/// For a write we could not read key-wise: the table after `after` if we can find it.
fn write_table_of(lexed: &Lexed, after: &str) -> Statement {
    let mut p = P {
        toks: &lexed.toks,
        i: 0,
        markers_before: 0,
    };
    while p.peek().is_some() {
        if p.kw(after) {
            // UPDATE's table follows the keyword; INSERT INTO / DELETE ... FROM too.
            return match p.table() {
                Some(table) => Statement::WriteTable {
                    table,
                    with_ttl: has_ttl(&lexed.toks),
                },
                None => Statement::Other,
            };
        }
        p.next();
    }
    Statement::Other
}

/// A BATCH's statements' tables: the table after each `INSERT INTO`, `UPDATE`, `DELETE ...
/// FROM` (statements start after `BATCH` and after each `;`).
fn parse_batch(lexed: &Lexed) -> Statement {
    let toks = &lexed.toks;
    let mut tables = Vec::new();
    let mut complete = true;
    let mut p = P {
        toks,
        i: 0,
        markers_before: 0,
    };
    // Skip `BEGIN [UNLOGGED|COUNTER] BATCH [USING ...]` up to the first statement keyword.
    let is_start = |t: &Tok| matches!(t, Tok::Ident { s, quoted: false } if s == "insert" || s == "update" || s == "delete" || s == "apply");
    while p.peek().is_some_and(|t| !is_start(t)) {
        p.next();
    }
    while let Some(tok) = p.peek() {
        let after = match tok {
            Tok::Ident { s, quoted: false } if s == "insert" => "into",
            Tok::Ident { s, quoted: false } if s == "update" => "update",
            Tok::Ident { s, quoted: false } if s == "delete" => "from",
            Tok::Ident { s, quoted: false } if s == "apply" => break,
            _ => {
                complete = false;
                break;
            }
        };
        let stmt_start = p.i;
        let mut found = None;
        while let Some(t) = p.peek() {
            if *t == Tok::Sym(';') {
                break;
            }
            if found.is_none() && matches!(t, Tok::Ident { s, quoted: false } if s == after) {
                p.next();
                found = p.table();
                continue;
            }
            if p.i > stmt_start && matches!(t, Tok::Ident { s, quoted: false } if s == "apply") {
                break;
            }
            p.next();
        }
        match found {
            Some(t) => tables.push(t),
            None => complete = false,
        }
        p.sym(';');
    }
    Statement::Batch {
        tables,
        complete,
        with_ttl: has_ttl(toks),
    }
}

fn where_key(p: &mut P<'_>) -> Option<(String, Term, usize)> {
    if !p.kw("where") {
        return None;
    }
    let col = p.ident()?;
    if !p.sym('=') {
        return None;
    }
    let (t, at) = p.term()?;
    Some((col, t, at))
}

fn parse_select(p: &mut P<'_>, text: &str) -> Option<Statement> {
    // Selectors up to FROM; JSON/DISTINCT and deterministic functions are allowed (they are in
    // the shape); any other function call makes the read uncacheable.
    let mut depth = 0;
    loop {
        let tok = p.peek()?;
        match tok {
            Tok::Sym('(') => depth += 1,
            Tok::Sym(')') => depth -= 1,
            Tok::Ident { s, quoted: false } if s == "from" && depth == 0 => break,
            Tok::Ident { s, .. } if p.toks.get(p.i + 1).map(|t| &t.0) == Some(&Tok::Sym('(')) => {
                let qualified = p.i > 0 && p.toks[p.i - 1].0 == Tok::Sym('.');
                if qualified || !deterministic_function(s) {
                    return None;
                }
            }
            _ => {}
        }
        p.next();
    }
    p.kw("from");
    let table = p.table()?;
    let (column, key, at) = where_key(p)?;
    // Allowed tails: LIMIT n, then the end.
    if p.kw("limit") {
        match p.next()? {
            Tok::Int(n) if *n >= 1 => {}
            _ => return None,
        }
    }
    if !p.at_end() {
        return None;
    }
    let (_, s, e) = p.toks[at];
    let shape = format!("{}?{}", &text[..s], &text[e..]);
    Some(Statement::Select {
        table,
        column,
        key,
        shape,
    })
}

fn parse_insert(p: &mut P<'_>) -> Option<Statement> {
    if !p.kw("into") {
        return None;
    }
    let table = p.table()?;
    if !p.sym('(') {
        return None; // INSERT JSON
    }
    let mut columns = Vec::new();
    loop {
        columns.push(p.ident()?);
        if p.sym(')') {
            break;
        }
        if !p.sym(',') {
            return None;
        }
    }
    if !p.kw("values") || !p.sym('(') {
        return None;
    }
    let mut values = Vec::new();
    loop {
        // A value that is not a plain term (a collection, a function call) is skipped over.
        let mut depth = 0;
        let start = p.i;
        let term = p.term().map(|t| t.0);
        let simple = term.is_some() && matches!(p.peek(), Some(Tok::Sym(',' | ')')));
        if !simple {
            p.i = start;
            loop {
                match p.peek()? {
                    Tok::Sym('(' | '[' | '{') => depth += 1,
                    Tok::Sym(')' | ']' | '}') if depth > 0 => depth -= 1,
                    Tok::Sym(',' | ')') if depth == 0 => break,
                    _ => {}
                }
                p.next();
            }
        }
        values.push(if simple { term } else { None });
        if p.sym(')') {
            break;
        }
        if !p.sym(',') {
            return None;
        }
    }
    if values.len() != columns.len() {
        return None;
    }
    let with_ttl = p.rest_has("ttl");
    Some(Statement::Insert {
        table,
        columns,
        values,
        with_ttl,
    })
}

fn parse_update(p: &mut P<'_>) -> Option<Statement> {
    let table = p.table()?;
    let mut with_ttl = false;
    // USING ... and SET ... up to WHERE (marker counting matters: SET values may be markers).
    loop {
        match p.peek()? {
            Tok::Ident { s, quoted: false } if s == "where" => break,
            Tok::Ident { s, quoted: false } if s == "ttl" => with_ttl = true,
            _ => {}
        }
        p.next();
    }
    let (column, key, _) = where_key(p)?;
    if !(p.at_end() || p.kw("if")) {
        return None;
    }
    p.rest_has("");
    Some(Statement::WriteByKey {
        table,
        column,
        key,
        with_ttl,
    })
}

fn parse_delete(p: &mut P<'_>) -> Option<Statement> {
    loop {
        match p.peek()? {
            Tok::Ident { s, quoted: false } if s == "from" => break,
            _ => {}
        }
        p.next();
    }
    p.kw("from");
    let table = p.table()?;
    if p.kw("using") {
        p.kw("timestamp");
        p.next()?;
    }
    let (column, key, _) = where_key(p)?;
    if !(p.at_end() || p.kw("if")) {
        return None;
    }
    Some(Statement::WriteByKey {
        table,
        column,
        key,
        with_ttl: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(ks: Option<&str>, t: &str) -> TableRef {
        TableRef {
            keyspace: ks.map(str::to_string),
            table: t.into(),
        }
    }

    #[test]
    fn selects_by_key() {
        assert_eq!(
            parse_statement("SELECT v FROM ks.kv WHERE k = 'a''b'"),
            Statement::Select {
                table: t(Some("ks"), "kv"),
                column: "k".into(),
                key: Term::Literal(KeyValue::Text("a'b".into())),
                shape: "SELECT v FROM ks.kv WHERE k = ?".into()
            }
        );
        assert_eq!(
            parse_statement("select * from KV where K=? limit 1;"),
            Statement::Select {
                table: t(None, "kv"),
                column: "k".into(),
                key: Term::Marker(0),
                shape: "select * from KV where K=? limit 1;".into()
            }
        );
        assert!(matches!(
            parse_statement("SELECT v FROM t WHERE k = -42"),
            Statement::Select {
                key: Term::Literal(KeyValue::Int(-42)),
                ..
            }
        ));
        assert!(matches!(
            parse_statement("SELECT v FROM t WHERE k = 0x0aFF"),
            Statement::Select { key: Term::Literal(KeyValue::Bytes(b)), .. } if b == vec![0x0a, 0xff]
        ));
        assert!(matches!(
            parse_statement("SELECT v FROM t WHERE k = 123e4567-e89b-12d3-a456-426614174000"),
            Statement::Select { key: Term::Literal(KeyValue::Uuid(b)), .. } if b[0] == 0x12 && b[15] == 0
        ));
        assert!(matches!(
            parse_statement("SELECT v FROM t WHERE k = -1.50"),
            Statement::Select { key: Term::Literal(KeyValue::Num(n)), .. } if n == "-1.50"
        ));
        assert!(matches!(
            parse_statement("SELECT v FROM t WHERE k = TRUE"),
            Statement::Select {
                key: Term::Literal(KeyValue::Bool(true)),
                ..
            }
        ));
        assert!(matches!(
            parse_statement("SELECT v FROM t WHERE k = $$it's$$"),
            Statement::Select { key: Term::Literal(KeyValue::Text(s)), .. } if s == "it's"
        ));
    }

    #[test]
    fn reads_not_cached() {
        for s in [
            "SELECT v FROM t WHERE k = 1 AND c = 2",
            "SELECT v FROM t WHERE k IN (1, 2)",
            "SELECT v FROM t",
            "SELECT v FROM t WHERE k = 1 ALLOW FILTERING",
            "SELECT v FROM t WHERE k > 1",
            "SELECT v FROM t WHERE k = 1e5",
            "SELECT 'unterminated FROM t",
            "SELECT v FROM t WHERE k = 1 /* unterminated",
        ] {
            assert_eq!(parse_statement(s), Statement::OtherRead, "{s}");
        }
    }

    #[test]
    fn writes() {
        assert_eq!(
            parse_statement("INSERT INTO ks.kv (k, v) VALUES (?, ?)"),
            Statement::Insert {
                table: t(Some("ks"), "kv"),
                columns: vec!["k".into(), "v".into()],
                values: vec![Some(Term::Marker(0)), Some(Term::Marker(1))],
                with_ttl: false
            }
        );
        assert!(matches!(
            parse_statement("INSERT INTO kv (k, v, l) VALUES (3, 'x', [1, 2]) USING TTL 10"),
            Statement::Insert { with_ttl: true, ref values, .. } if values[2].is_none() && values[0] == Some(Term::Literal(KeyValue::Int(3)))
        ));
        assert_eq!(
            parse_statement("UPDATE kv SET v = ? WHERE k = ?"),
            Statement::WriteByKey {
                table: t(None, "kv"),
                column: "k".into(),
                key: Term::Marker(1),
                with_ttl: false
            }
        );
        assert_eq!(
            parse_statement("DELETE FROM kv WHERE k = 'a' IF EXISTS"),
            Statement::WriteByKey {
                table: t(None, "kv"),
                column: "k".into(),
                key: Term::Literal(KeyValue::Text("a".into())),
                with_ttl: false
            }
        );
        assert_eq!(
            parse_statement("UPDATE kv SET v = 1 WHERE k IN (1,2)"),
            Statement::WriteTable {
                table: t(None, "kv"),
                with_ttl: false
            }
        );
        assert_eq!(
            parse_statement("DELETE FROM ks.kv WHERE k > 3"),
            Statement::WriteTable {
                table: t(Some("ks"), "kv"),
                with_ttl: false
            }
        );
        assert_eq!(parse_statement("TRUNCATE kv"), Statement::Other);
        assert_eq!(
            parse_statement("USE \"MyKs\""),
            Statement::Use("MyKs".into())
        );
        assert_eq!(
            parse_statement("BEGIN BATCH INSERT INTO kv (k,v) VALUES (1,'a'); APPLY BATCH"),
            Statement::Batch {
                tables: vec![t(None, "kv")],
                complete: true,
                with_ttl: false
            }
        );
    }

    /// Comments are whitespace; what is inside them (or inside strings) is never read as
    /// part of the statement.
    #[test]
    fn comments_and_strings_are_lexed() {
        let w = |s: &str| match parse_statement(s) {
            Statement::WriteByKey { key, with_ttl, .. } => (key, with_ttl),
            other => panic!("{s}: {other:?}"),
        };
        let b = Term::Literal(KeyValue::Text("b".into()));
        assert_eq!(
            w("UPDATE t SET v = 'x' /* WHERE k = 'zz' IF */ WHERE k = 'b'").0,
            b
        );
        assert_eq!(
            w("UPDATE t SET v = 'x' -- WHERE k = 'zz'\n WHERE k = 'b'").0,
            b
        );
        assert_eq!(
            w("UPDATE t SET v = 'x' // WHERE k = 'zz'\n WHERE k = 'b'").0,
            b
        );
        assert_eq!(w("UPDATE t SET v = 'where k = ''zz''' WHERE k = 'b'").0, b);
        assert_eq!(
            w("UPDATE t SET v = $$ WHERE k = 'zz' $$ WHERE k = 'b'").0,
            b
        );
        assert_eq!(
            w("UPDATE t /* USING TTL 5 */ SET v = 'ttl' WHERE k = 'b'"),
            (b.clone(), false)
        );
        assert_eq!(
            w("UPDATE t USING TTL 5 SET v = 'x' WHERE k = 'b'"),
            (b, true)
        );
        assert!(matches!(
            parse_statement("/* hi */ SELECT v FROM t -- the table\n WHERE k = 1 // key\n"),
            Statement::Select {
                key: Term::Literal(KeyValue::Int(1)),
                ..
            }
        ));
    }

    #[test]
    fn time_dependent_selectors_are_not_cached() {
        for s in [
            "SELECT now() FROM t WHERE k = 1",
            "SELECT uuid() FROM t WHERE k = 1",
            "SELECT currentTimestamp() FROM t WHERE k = 1",
            "SELECT toUnixTimestamp(now()) FROM t WHERE k = 1",
            "SELECT ttl(v) FROM t WHERE k = 1",
            "SELECT WRITETIME (v) FROM t WHERE k = 1",
            "SELECT k, maxwritetime(v) FROM t WHERE k = 1",
            "SELECT ks.myfn(v) FROM t WHERE k = 1",
            "SELECT blobAsText(v), now() FROM t WHERE k = 1",
        ] {
            assert_eq!(parse_statement(s), Statement::OtherRead, "{s}");
        }
        for s in [
            "SELECT blobAsText(v), toJson(v), count(*) FROM t WHERE k = 1",
            "SELECT CAST(v AS text) FROM t WHERE k = 1",
            "SELECT textAsBlob(v) AS x FROM t WHERE k = 1",
        ] {
            assert!(
                matches!(parse_statement(s), Statement::Select { .. }),
                "{s}"
            );
        }
    }

    #[test]
    fn writes_whose_keys_are_unknown_keep_their_ttl() {
        for s in [
            "INSERT INTO ks.t JSON '{\"k\": \"a\"}' USING TTL 5",
            "UPDATE ks.t USING TTL 5 SET v = 'x' WHERE k IN ('a', 'b')",
        ] {
            assert_eq!(
                parse_statement(s),
                Statement::WriteTable {
                    table: t(Some("ks"), "t"),
                    with_ttl: true
                },
                "{s}"
            );
        }
        assert_eq!(
            parse_statement(
                "BEGIN UNLOGGED BATCH INSERT INTO a (k, v) VALUES (1, 'x') USING TTL 5; \
                 UPDATE ks.b SET v = 'y' WHERE k = 2; DELETE v FROM c WHERE k = 3; APPLY BATCH"
            ),
            Statement::Batch {
                tables: vec![t(None, "a"), t(Some("ks"), "b"), t(None, "c")],
                complete: true,
                with_ttl: true
            }
        );
        assert!(matches!(
            parse_statement("BEGIN BATCH INSERT oops; APPLY BATCH"),
            Statement::Batch {
                complete: false,
                ..
            }
        ));
    }

    #[test]
    fn never_panics_on_junk() {
        for s in [
            "",
            "'",
            "\"",
            "select",
            "select from",
            "insert into t (",
            "update",
            "delete from",
            "0x1",
            "é",
            "SELECT v FROM t WHERE k = 12345678-",
            "01234567-45f6edz      1e7 Dk'p\u{4242}",
            "/*",
            "$$",
            "$$x",
            "begin batch",
            "begin batch insert into",
            "-",
            "-1.",
        ] {
            let _ = parse_statement(s);
        }
    }
}
