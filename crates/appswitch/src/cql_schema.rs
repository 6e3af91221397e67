//! What the switch knows of the Cassandra schema, learned from what passes it: each table's
//! partition key (column and type) from prepared statements' metadata and from the rows of
//! `system_schema.columns`, its options (`default_time_to_live`) from `system_schema.tables`,
//! views from `system_schema.views` (the drivers read all three at connect and after every
//! schema change), and schema changes from RESULT Schema_change and EVENT frames (which make
//! the switch forget the table until the driver's refresh teaches it again).
//!
//! A table's reads are cached only when everything that decides what a read returns is known:
//! a single-column partition key of a type `cql_key` can key, and the table's options seen
//! with no default TTL (so views, whose options are in `system_schema.views`, and tables whose
//! options were never seen are not cached). Tables that got cells with a TTL through the switch
//! are never cached again (`mark_volatile`).

use innet_wire::cql::key::KeyType;
use innet_wire::cql::{self, Rows};

type HashMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;

/// A table's partition key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PartitionKey {
    /// One column; its type when the switch can key it (`None`: a type it cannot).
    Single {
        column: String,
        typ: Option<KeyType>,
    },
    /// Several columns: never cached by key.
    Compound,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct TableInfo {
    key: Option<PartitionKey>,
    /// `default_time_to_live` from `system_schema.tables` (`None`: not seen, or a view).
    default_ttl: Option<i32>,
}

/// The schema knowledge (see the module doc).
#[derive(Default)]
pub struct Schema {
    tables: HashMap<String, HashMap<String, TableInfo>>,
    /// Tables given cells with a TTL (the key unknown) through the switch: never cached again.
    /// Kept across schema changes (the cells are still there).
    volatile: HashMap<String, HashMap<String, ()>>,
    /// A TTL write whose table is unknown was seen: nothing is cached again.
    volatile_all: bool,
    /// Bumped on every change (prepared statements remember checks made at a generation).
    pub generation: u64,
}

/// What a learning step did: `changed` = knowledge about a table already known was replaced
/// by something different (cached answers may be wrong under the new knowledge: flush).
#[must_use]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Learned {
    pub changed: bool,
}

impl Schema {
    fn info(&self, (ks, t): (&str, &str)) -> Option<&TableInfo> {
        self.tables.get(ks)?.get(t)
    }

    fn is_volatile(&self, (ks, t): (&str, &str)) -> bool {
        self.volatile_all || self.volatile.get(ks).is_some_and(|m| m.contains_key(t))
    }

    /// The partition-key column and type by which reads of `t` may be cached (see the module
    /// doc), or `None`.
    pub fn cacheable_key(&self, t: (&str, &str)) -> Option<(&str, KeyType)> {
        if t.0.starts_with("system") || self.is_volatile(t) {
            return None;
        }
        let info = self.info(t)?;
        if info.default_ttl != Some(0) {
            return None;
        }
        self.key_column(t)
    }

    /// The partition-key column and type of `t` (for writes: whatever its options).
    pub fn key_column(&self, t: (&str, &str)) -> Option<(&str, KeyType)> {
        match &self.info(t)?.key {
            Some(PartitionKey::Single {
                column,
                typ: Some(typ),
            }) => Some((column.as_str(), *typ)),
            _ => None,
        }
    }

    /// The partition-key column of `t`, whatever its type.
    pub fn key_column_name(&self, t: (&str, &str)) -> Option<&str> {
        match &self.info(t)?.key {
            Some(PartitionKey::Single { column, .. }) => Some(column.as_str()),
            _ => None,
        }
    }

    fn entry(&mut self, ks: &str, t: &str) -> &mut TableInfo {
        self.tables
            .entry(ks.to_string())
            .or_default()
            .entry(t.to_string())
            .or_default()
    }

    /// Set `t`'s partition key.
    pub fn set_partition_key(&mut self, (ks, t): (&str, &str), key: PartitionKey) -> Learned {
        let e = self.entry(ks, t);
        let changed = e.key.as_ref().is_some_and(|k| *k != key);
        if e.key.as_ref() != Some(&key) {
            e.key = Some(key);
            self.generation += 1;
        }
        Learned { changed }
    }

    fn set_default_ttl(&mut self, (ks, t): (&str, &str), ttl: Option<i32>) -> Learned {
        let e = self.entry(ks, t);
        let changed = e.default_ttl.is_some() && e.default_ttl != ttl;
        if e.default_ttl != ttl {
            e.default_ttl = ttl;
            self.generation += 1;
        }
        Learned { changed }
    }

    /// Cells of `t` (`None`: a table the switch could not name) were given a TTL. Returns
    /// whether this was not known yet (so the switch records it durably).
    pub fn mark_volatile(&mut self, t: Option<(&str, &str)>) -> bool {
        let new = match t {
            Some((ks, t)) => {
                !self.volatile_all
                    && self
                        .volatile
                        .entry(ks.to_string())
                        .or_default()
                        .insert(t.to_string(), ())
                        .is_none()
            }
            None => !std::mem::replace(&mut self.volatile_all, true),
        };
        if new {
            self.generation += 1;
        }
        new
    }

    /// A schema change: forget what is known of the table (or of the whole keyspace).
    pub fn forget(&mut self, change: &cql::SchemaChange) -> Learned {
        let removed = match (change.target.as_str(), &change.name) {
            ("KEYSPACE", _) => self.tables.remove(&change.keyspace).is_some(),
            ("TABLE", Some(name)) => self
                .tables
                .get_mut(&change.keyspace)
                .is_some_and(|m| m.remove(name).is_some()),
            // Types, functions, aggregates: a key of a user type is never cached.
            _ => false,
        };
        if removed {
            self.generation += 1;
        }
        Learned { changed: removed }
    }

    /// Learn partition keys and their types from rows of `system_schema.columns`
    /// (keyspace_name, table_name, column_name, kind, position, type). A table is learned only
    /// when all its rows are in this page: not the first table of a continued page, not the
    /// last of a page with more pages to come.
    pub fn learn_columns(&mut self, rows: &Rows, continued: bool) -> Learned {
        let mut learned = Learned::default();
        let col = |name: &str| column(rows, "columns", name);
        let (Some(ks_i), Some(tb_i), Some(col_i), Some(kind_i), Some(pos_i), Some(type_i)) = (
            col("keyspace_name"),
            col("table_name"),
            col("column_name"),
            col("kind"),
            col("position"),
            col("type"),
        ) else {
            return learned;
        };
        // (table, partition-key columns with their positions and types), in row order.
        type Pk = (i32, String, String);
        let mut tables: Vec<((String, String), Vec<Pk>)> = Vec::new();
        for row in &rows.rows {
            let (Some(ks), Some(tb), Some(name), Some(kind)) = (
                text(row, ks_i),
                text(row, tb_i),
                text(row, col_i),
                text(row, kind_i),
            ) else {
                return learned;
            };
            let t = (ks, tb);
            if tables.last().map(|(last, _)| last) != Some(&t) {
                tables.push((t, Vec::new()));
            }
            if kind == "partition_key" {
                let pos = row
                    .get(pos_i)
                    .and_then(|v| v.as_deref())
                    .and_then(|b| <[u8; 4]>::try_from(b).ok())
                    .map(i32::from_be_bytes)
                    .unwrap_or(-1);
                let typ = text(row, type_i).unwrap_or_default();
                if let Some((_, pks)) = tables.last_mut() {
                    pks.push((pos, name, typ));
                }
            }
        }
        let more = rows.metadata.flags & cql::rows_flags::HAS_MORE_PAGES != 0;
        let n = tables.len();
        for (i, (t, pks)) in tables.into_iter().enumerate() {
            if (continued && i == 0) || (more && i + 1 == n) {
                continue;
            }
            let key = match pks.as_slice() {
                [] => continue,
                [(_, only, typ)] => PartitionKey::Single {
                    column: only.clone(),
                    typ: KeyType::from_schema_name(typ),
                },
                _ => PartitionKey::Compound,
            };
            learned.changed |= self.set_partition_key((&t.0, &t.1), key).changed;
        }
        learned
    }

    /// Learn tables' options from rows of `system_schema.tables` (keyspace_name, table_name,
    /// default_time_to_live). One row per table, so pages do not matter.
    pub fn learn_tables(&mut self, rows: &Rows) -> Learned {
        let mut learned = Learned::default();
        let col = |name: &str| column(rows, "tables", name);
        let (Some(ks_i), Some(tb_i), Some(ttl_i)) = (
            col("keyspace_name"),
            col("table_name"),
            col("default_time_to_live"),
        ) else {
            return learned;
        };
        for row in &rows.rows {
            let (Some(ks), Some(tb)) = (text(row, ks_i), text(row, tb_i)) else {
                continue;
            };
            let ttl = row
                .get(ttl_i)
                .and_then(|v| v.as_deref())
                .and_then(|b| <[u8; 4]>::try_from(b).ok())
                .map(i32::from_be_bytes);
            learned.changed |= self.set_default_ttl((&ks, &tb), ttl).changed;
        }
        learned
    }

    /// Rows of `system_schema.views` (keyspace_name, view_name): those names are views (what
    /// they return changes with writes to their base table): never cached.
    pub fn learn_views(&mut self, rows: &Rows) -> Learned {
        let mut learned = Learned::default();
        let col = |name: &str| column(rows, "views", name);
        let (Some(ks_i), Some(v_i)) = (col("keyspace_name"), col("view_name")) else {
            return learned;
        };
        for row in &rows.rows {
            if let (Some(ks), Some(v)) = (text(row, ks_i), text(row, v_i)) {
                learned.changed |= self.set_default_ttl((&ks, &v), None).changed;
            }
        }
        learned
    }
}

/// The answer to `SELECT * FROM system_schema.tables`, as far as the switch reads it: one row
/// (keyspace, table, default_time_to_live) per table (for captures and tests).
pub fn tables_rows(tables: &[(&str, &str, i32)]) -> Rows {
    use cql::{type_id, ColumnSpec, RowsMetadata};
    let cols = [
        ("keyspace_name", type_id::VARCHAR),
        ("table_name", type_id::VARCHAR),
        ("default_time_to_live", type_id::INT),
    ];
    Rows {
        metadata: RowsMetadata {
            flags: cql::rows_flags::GLOBAL_TABLES_SPEC,
            columns_count: cols.len() as u32,
            global_table: Some(("system_schema".into(), "tables".into())),
            columns: ColumnSpec::natives(&cols),
            ..Default::default()
        },
        rows: tables
            .iter()
            .map(|(ks, t, ttl)| {
                vec![
                    Some(ks.as_bytes().to_vec()),
                    Some(t.as_bytes().to_vec()),
                    Some(ttl.to_be_bytes().to_vec()),
                ]
            })
            .collect(),
    }
}

/// The index of column `name` of `system_schema.<table>` in `rows` (by the rows' table spec:
/// a user table with the same column names teaches nothing).
fn column(rows: &Rows, table: &str, name: &str) -> Option<usize> {
    let ours = |t: &Option<(String, String)>| {
        t.as_ref()
            .is_some_and(|(k, t)| k == "system_schema" && t == table)
    };
    let global = &rows.metadata.global_table;
    let i = rows.metadata.columns.iter().position(|c| c.name == name)?;
    (ours(global) || global.is_none() && ours(&rows.metadata.columns[i].table)).then_some(i)
}

fn text(row: &[Option<Vec<u8>>], i: usize) -> Option<String> {
    row.get(i)
        .and_then(|v| v.as_deref())
        .and_then(|b| std::str::from_utf8(b).ok())
        .map(str::to_string)
}

/// Which `system_schema` table a QUERY reads, if it is a SELECT of one of those the switch
/// learns from (any case; with or without a WHERE clause). A write that merely mentions the
/// name (in a string) is not a schema read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SchemaRead {
    Columns,
    Tables,
    Views,
}

pub fn schema_read(text: &str) -> Option<SchemaRead> {
    let t = text.trim_start().as_bytes();
    if t.len() < 6 || !t[..6].eq_ignore_ascii_case(b"select") {
        return None;
    }
    let has = |needle: &[u8]| {
        text.as_bytes()
            .windows(needle.len())
            .any(|w| w.eq_ignore_ascii_case(needle))
    };
    if has(b"system_schema.columns") {
        Some(SchemaRead::Columns)
    } else if has(b"system_schema.tables") {
        Some(SchemaRead::Tables)
    } else if has(b"system_schema.views") {
        Some(SchemaRead::Views)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use innet_wire::cql::{ColumnSpec, RowsMetadata};

    fn rows(table: &str, cols: &[(&str, u16)], data: Vec<Vec<Option<Vec<u8>>>>) -> Rows {
        Rows {
            metadata: RowsMetadata {
                flags: cql::rows_flags::GLOBAL_TABLES_SPEC,
                global_table: Some(("system_schema".into(), table.into())),
                columns_count: cols.len() as u32,
                columns: ColumnSpec::natives(cols),
                ..Default::default()
            },
            rows: data,
        }
    }
    fn s(x: &str) -> Option<Vec<u8>> {
        Some(x.as_bytes().to_vec())
    }
    fn i(x: i32) -> Option<Vec<u8>> {
        Some(x.to_be_bytes().to_vec())
    }
    const T: u16 = cql::type_id::VARCHAR;
    const I: u16 = cql::type_id::INT;

    fn columns(ks: &str, t: &str, typ: &str) -> Rows {
        rows(
            "columns",
            &[
                ("keyspace_name", T),
                ("table_name", T),
                ("column_name", T),
                ("kind", T),
                ("position", I),
                ("type", T),
            ],
            vec![vec![s(ks), s(t), s("k"), s("partition_key"), i(0), s(typ)]],
        )
    }
    fn tables(ks: &str, t: &str, ttl: i32) -> Rows {
        tables_rows(&[(ks, t, ttl)])
    }

    #[test]
    fn cached_only_when_key_type_and_options_are_known() {
        let mut sc = Schema::default();
        let t = ("ks", "kv");
        let _ = sc.learn_columns(&columns("ks", "kv", "timestamp"), false);
        assert_eq!(sc.key_column(t), Some(("k", KeyType::Timestamp)));
        assert_eq!(sc.cacheable_key(t), None, "options not seen");
        let _ = sc.learn_tables(&tables("ks", "kv", 0));
        assert_eq!(sc.cacheable_key(t), Some(("k", KeyType::Timestamp)));
        // ALTER TABLE ... WITH default_time_to_live = 5, as the driver's refresh shows it.
        assert!(sc.learn_tables(&tables("ks", "kv", 5)).changed);
        assert_eq!(sc.cacheable_key(t), None);
        let _ = sc.learn_tables(&tables("ks", "kv", 0));
        assert!(sc.mark_volatile(Some(t)));
        assert!(!sc.mark_volatile(Some(t)), "known already");
        assert_eq!(sc.cacheable_key(t), None, "TTL cells written");
        // A view: never cached, even with its key known.
        let _ = sc.learn_columns(&columns("ks", "mv", "text"), false);
        let views = rows(
            "views",
            &[("keyspace_name", T), ("view_name", T)],
            vec![vec![s("ks"), s("mv")]],
        );
        let _ = sc.learn_views(&views);
        assert_eq!(sc.cacheable_key(("ks", "mv")), None);
        // A key type that cannot be keyed.
        let _ = sc.learn_columns(&columns("ks", "d", "decimal"), false);
        let _ = sc.learn_tables(&tables("ks", "d", 0));
        assert_eq!(sc.cacheable_key(("ks", "d")), None);
        assert_eq!(sc.key_column_name(("ks", "d")), Some("k"));
        // Rows of a user table that look like the schema (a query that mentions
        // system_schema.tables in a comment) teach nothing.
        let mut fake = tables("ks", "ttl5", 0);
        fake.metadata.global_table = Some(("ks".into(), "fake".into()));
        let _ = sc.learn_columns(&columns("ks", "ttl5", "int"), false);
        let _ = sc.learn_tables(&fake);
        assert_eq!(sc.cacheable_key(("ks", "ttl5")), None);
    }

    #[test]
    fn a_schema_change_forgets_the_table() {
        let mut sc = Schema::default();
        let _ = sc.learn_columns(&columns("ks", "kv", "int"), false);
        let _ = sc.learn_tables(&tables("ks", "kv", 0));
        assert!(sc.cacheable_key(("ks", "kv")).is_some());
        let ch = cql::SchemaChange {
            target: "TABLE".into(),
            keyspace: "ks".into(),
            name: Some("kv".into()),
        };
        assert!(sc.forget(&ch).changed);
        assert_eq!(sc.cacheable_key(("ks", "kv")), None);
        assert!(sc.learn_columns(&columns("ks", "kv", "text"), false) == Learned::default());
    }

    #[test]
    fn schema_reads_are_recognised() {
        assert_eq!(
            schema_read("SELECT * FROM system_schema.tables"),
            Some(SchemaRead::Tables)
        );
        assert_eq!(
            schema_read("select * from SYSTEM_SCHEMA.columns where keyspace_name = 'a'"),
            Some(SchemaRead::Columns)
        );
        assert_eq!(
            schema_read("SELECT * FROM system_schema.views"),
            Some(SchemaRead::Views)
        );
        assert_eq!(
            schema_read("SELECT * FROM system_virtual_schema.tables"),
            None
        );
        assert_eq!(
            schema_read("INSERT INTO ks.kv (k, v) VALUES ('b', 'system_schema.columns')"),
            None
        );
    }
}
