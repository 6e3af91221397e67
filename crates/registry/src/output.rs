//! What a run produces: an ordered JSON summary and named columnar tables.

/// A column of a result table. Columns of one table have equal lengths.
#[derive(Debug, Clone, PartialEq)]
pub enum ColumnData {
    U64(Vec<u64>),
    I64(Vec<i64>),
    F64(Vec<f64>),
    Str(Vec<String>),
    Bool(Vec<bool>),
}

impl ColumnData {
    pub fn len(&self) -> usize {
        match self {
            ColumnData::U64(v) => v.len(),
            ColumnData::I64(v) => v.len(),
            ColumnData::F64(v) => v.len(),
            ColumnData::Str(v) => v.len(),
            ColumnData::Bool(v) => v.len(),
        }
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A named columnar table (written by the front end as Parquet).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Table {
    pub name: String,
    pub columns: Vec<(String, ColumnData)>,
}

impl Table {
    pub fn new(name: impl Into<String>) -> Self {
        Table { name: name.into(), columns: Vec::new() }
    }
    pub fn with(mut self, column: impl Into<String>, data: ColumnData) -> Self {
        self.columns.push((column.into(), data));
        self
    }
    pub fn rows(&self) -> usize {
        self.columns.first().map(|(_, c)| c.len()).unwrap_or(0)
    }
}

/// What a run produces: an ordered JSON summary and tables.
#[derive(Debug, Clone, Default)]
pub struct RunOutput {
    /// Ordered summary object; serialised as-is into `summary.json`.
    pub summary: serde_json::Map<String, serde_json::Value>,
    pub tables: Vec<Table>,
}

impl RunOutput {
    /// The summary as pretty JSON, byte-identical for identical summaries.
    pub fn summary_json(&self) -> String {
        let mut s = serde_json::to_string_pretty(&self.summary).expect("summary is plain JSON");
        s.push('\n');
        s
    }
}
