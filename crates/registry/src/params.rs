//! Parameter resolution: defaults, then the `--quick` values, then the user's `--set`, checked
//! against the declared [`ParamSpec`](crate::ParamSpec)s so a bad key or value names itself.

use std::collections::BTreeMap;

use serde::de::{self, DeserializeOwned};

use crate::{ExperimentError, ExperimentInfo};

/// Build a typed config from the experiment's defaults, the `--quick` overrides and the user's
/// `--set` overrides, in that order. Unknown keys and ill-typed values (also a bad item of a
/// [`List`](crate::List)) are errors that name the key.
pub fn resolve_params<T: DeserializeOwned>(
    info: &ExperimentInfo,
    quick_overrides: &[(&str, &str)],
    quick: bool,
    user: &BTreeMap<String, String>,
) -> Result<T, ExperimentError> {
    let table = resolve_table(info, quick_overrides, quick, user)?;
    T::deserialize(Keyed(table)).map_err(|e| ExperimentError::BadParam {
        field: e.key.unwrap_or_else(|| "parameters".into()),
        message: e.message,
    })
}

/// A resolved table as a deserializer whose errors carry the key being read.
struct Keyed(toml::Table);

#[derive(Debug)]
struct KeyedError {
    key: Option<String>,
    message: String,
}

impl std::fmt::Display for KeyedError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for KeyedError {}

impl de::Error for KeyedError {
    fn custom<M: std::fmt::Display>(msg: M) -> Self {
        KeyedError { key: None, message: msg.to_string() }
    }
}

impl<'de> de::Deserializer<'de> for Keyed {
    type Error = KeyedError;
    fn deserialize_any<V: de::Visitor<'de>>(self, visitor: V) -> Result<V::Value, KeyedError> {
        visitor.visit_map(Entries { entries: self.0.into_iter(), value: None })
    }
    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf option unit
        unit_struct newtype_struct seq tuple tuple_struct map struct enum identifier ignored_any
    }
}

struct Entries {
    entries: toml::map::IntoIter,
    value: Option<(String, toml::Value)>,
}

impl<'de> de::MapAccess<'de> for Entries {
    type Error = KeyedError;
    fn next_key_seed<K: de::DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, KeyedError> {
        let Some((k, v)) = self.entries.next() else { return Ok(None) };
        let key = seed.deserialize(de::IntoDeserializer::<KeyedError>::into_deserializer(k.clone()))?;
        self.value = Some((k, v));
        Ok(Some(key))
    }
    fn next_value_seed<V: de::DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, KeyedError> {
        let (k, v) = self.value.take().expect("serde reads a value after its key");
        seed.deserialize(v).map_err(|e: toml::de::Error| KeyedError { key: Some(k), message: e.message().to_string() })
    }
}

/// The resolved parameters as a TOML table, in the same order of precedence as
/// [`resolve_params`] (for runners that are not typed Rust, such as the Python ones).
pub fn resolve_table(
    info: &ExperimentInfo,
    quick_overrides: &[(&str, &str)],
    quick: bool,
    user: &BTreeMap<String, String>,
) -> Result<toml::Table, ExperimentError> {
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
    Ok(table)
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
    use crate::ParamSpec;

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
                ParamSpec::new("load", "0.3", ""),
                ParamSpec::new("flows", "100", ""),
                ParamSpec::new("trace", "\"hadoop\"", ""),
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

    #[test]
    fn a_value_serde_rejects_names_its_parameter() {
        #[derive(serde::Deserialize, Debug)]
        struct Small {
            #[allow(dead_code)]
            flows: u8,
        }
        let info = ExperimentInfo { name: "t.y", description: "", params: vec![ParamSpec::new("flows", "100", "")] };
        let user = BTreeMap::from([("flows".to_string(), "-1".to_string())]);
        let e = resolve_params::<Small>(&info, &[], false, &user).unwrap_err().to_string();
        assert!(e.starts_with("parameter 'flows': "), "{e}");
    }
}
