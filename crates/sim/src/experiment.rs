//! The experiment contract shared by every system crate and the front end.
//!
//! An experiment has a name, documented parameters with defaults, and a `run` that turns a
//! parameter set into a JSON summary plus columnar tables. The Python front (`innet run`) only
//! ever talks to experiments through this module.

use std::collections::BTreeMap;

use serde::de::DeserializeOwned;

/// One documented parameter of an experiment (`--set name=value`).
#[derive(Debug, Clone)]
pub struct ParamSpec {
    pub name: &'static str,
    /// The default, written as a TOML literal (`0.3`, `"hadoop"`, `true`).
    pub default: &'static str,
    pub doc: &'static str,
}

/// Static description of an experiment, shown by `innet list`.
#[derive(Debug, Clone)]
pub struct ExperimentInfo {
    pub name: &'static str,
    pub description: &'static str,
    pub params: Vec<ParamSpec>,
}

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

/// A user-facing error in an experiment's input: names the place and what was expected.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ExperimentError {
    #[error("unknown experiment '{0}' (see `innet list`)")]
    UnknownExperiment(String),
    #[error("parameter '{field}': {message}")]
    BadParam { field: String, message: String },
    #[error("{0}")]
    Input(String),
    /// The simulation itself broke an invariant (e.g. packet conservation). Not a user error.
    #[error("internal invariant violated: {0}")]
    Invariant(String),
}

/// Progress reporting: called with a fraction in [0, 1] from time to time.
pub type Progress<'a> = &'a mut dyn FnMut(f64);

/// An experiment that can be listed and run.
pub trait Experiment: Send + Sync {
    fn info(&self) -> ExperimentInfo;
    /// Run with `overrides` (from `--set k=v`, values as TOML literals or bare strings).
    fn run(
        &self,
        overrides: &BTreeMap<String, String>,
        quick: bool,
        progress: Progress<'_>,
    ) -> Result<RunOutput, ExperimentError>;
}

/// Build a typed config from the experiment's defaults, the `--quick` overrides and the user's
/// `--set` overrides, in that order. Unknown keys and ill-typed values are errors that name the key.
pub fn resolve_params<T: DeserializeOwned>(
    info: &ExperimentInfo,
    quick_overrides: &[(&str, &str)],
    quick: bool,
    user: &BTreeMap<String, String>,
) -> Result<T, ExperimentError> {
    let mut table = toml::Table::new();
    for p in &info.params {
        let v = parse_literal(p.default).map_err(|m| ExperimentError::BadParam {
            field: p.name.to_string(),
            message: format!("bad built-in default: {m}"),
        })?;
        table.insert(p.name.to_string(), v);
    }
    if quick {
        for (k, v) in quick_overrides {
            let v = parse_literal(v).map_err(|m| ExperimentError::BadParam {
                field: k.to_string(),
                message: format!("bad built-in quick value: {m}"),
            })?;
            table.insert(k.to_string(), v);
        }
    }
    for (k, raw) in user {
        let Some(spec) = info.params.iter().find(|p| p.name == k) else {
            let known: Vec<&str> = info.params.iter().map(|p| p.name).collect();
            return Err(ExperimentError::BadParam {
                field: k.clone(),
                message: format!(
                    "unknown parameter for {}; expected one of: {}",
                    info.name,
                    known.join(", ")
                ),
            });
        };
        let default = parse_literal(spec.default).unwrap_or(toml::Value::String(String::new()));
        let v = match parse_literal(raw) {
            // A bare word for a string parameter is taken as that string.
            Ok(v) if same_kind(&v, &default) => v,
            Ok(toml::Value::Integer(i)) if matches!(default, toml::Value::Float(_)) => {
                toml::Value::Float(i as f64)
            }
            _ if matches!(default, toml::Value::String(_)) => toml::Value::String(raw.clone()),
            Ok(v) => {
                return Err(ExperimentError::BadParam {
                    field: k.clone(),
                    message: format!(
                        "expected {} (like the default {}), got {} '{}'",
                        kind_name(&default),
                        spec.default,
                        kind_name(&v),
                        raw
                    ),
                })
            }
            Err(_) => {
                return Err(ExperimentError::BadParam {
                    field: k.clone(),
                    message: format!(
                        "expected {} (like the default {}), got '{}'",
                        kind_name(&default),
                        spec.default,
                        raw
                    ),
                })
            }
        };
        table.insert(k.clone(), v);
    }
    toml::Value::Table(table).try_into().map_err(|e: toml::de::Error| ExperimentError::BadParam {
        field: "parameters".into(),
        message: e.message().to_string(),
    })
}

fn parse_literal(s: &str) -> Result<toml::Value, String> {
    let doc = format!("v = {s}");
    let t: toml::Table = doc.parse().map_err(|e: toml::de::Error| e.message().to_string())?;
    Ok(t.get("v").cloned().expect("parsed key"))
}

fn same_kind(a: &toml::Value, b: &toml::Value) -> bool {
    std::mem::discriminant(a) == std::mem::discriminant(b)
}

fn kind_name(v: &toml::Value) -> &'static str {
    match v {
        toml::Value::String(_) => "a string",
        toml::Value::Integer(_) => "an integer",
        toml::Value::Float(_) => "a number",
        toml::Value::Boolean(_) => "true or false",
        toml::Value::Datetime(_) => "a datetime",
        toml::Value::Array(_) => "a list",
        toml::Value::Table(_) => "a table",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize, Debug)]
    #[serde(deny_unknown_fields)]
    struct Cfg {
        load: f64,
        flows: u64,
        trace: String,
    }

    fn info() -> ExperimentInfo {
        ExperimentInfo {
            name: "t.x",
            description: "test",
            params: vec![
                ParamSpec { name: "load", default: "0.3", doc: "" },
                ParamSpec { name: "flows", default: "100", doc: "" },
                ParamSpec { name: "trace", default: "\"hadoop\"", doc: "" },
            ],
        }
    }

    #[test]
    fn defaults_quick_and_user_overrides_apply_in_order() {
        let mut user = BTreeMap::new();
        user.insert("trace".to_string(), "websearch".to_string());
        user.insert("load".to_string(), "1".to_string());
        let c: Cfg = resolve_params(&info(), &[("flows", "10")], true, &user).unwrap();
        assert_eq!(c.flows, 10);
        assert_eq!(c.load, 1.0);
        assert_eq!(c.trace, "websearch");
    }

    #[test]
    fn unknown_and_mistyped_params_name_the_field() {
        let mut user = BTreeMap::new();
        user.insert("lod".to_string(), "1".to_string());
        let e = resolve_params::<Cfg>(&info(), &[], false, &user).unwrap_err();
        assert!(e.to_string().contains("'lod'") && e.to_string().contains("load"), "{e}");
        let mut user = BTreeMap::new();
        user.insert("flows".to_string(), "many".to_string());
        let e = resolve_params::<Cfg>(&info(), &[], false, &user).unwrap_err();
        assert!(e.to_string().contains("'flows'") && e.to_string().contains("integer"), "{e}");
    }
}
