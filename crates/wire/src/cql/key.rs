//! Partition-key values in the form Cassandra stores them. Cassandra identifies a partition by
//! the *serialized bytes* of its key (the token is the hash of those bytes), so the switch keys
//! its cache by the same bytes: a bound value as the driver sent it, and a literal as the
//! column type's parser turns it into bytes (`'2020-01-01 00:00:00+0000'` and `1577836800000`
//! are the same timestamp, `'::1'` and `'0:0:0:0:0:0:0:1'` the same inet). Only types whose
//! literal forms are parsed here exactly as Cassandra parses them are keyed; a literal this
//! module is not sure of (a timestamp without a time zone, which the server reads in its own
//! zone; a decimal, whose scale is part of its bytes; a varint; collections) gives no key, and
//! the switch then does not cache the read and flushes for the write.

use crate::cql::{type_id, CqlType};
use crate::cql::statement::KeyValue;

/// The partition-key column types the switch can key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum KeyType {
    Ascii,
    Text,
    Int,
    BigInt,
    SmallInt,
    TinyInt,
    Blob,
    Uuid,
    TimeUuid,
    Boolean,
    Timestamp,
    Date,
    Time,
    Inet,
    Float,
    Double,
}

impl KeyType {
    /// Every keyed type.
    pub const ALL: [KeyType; 16] = [
        KeyType::Ascii,
        KeyType::Text,
        KeyType::Int,
        KeyType::BigInt,
        KeyType::SmallInt,
        KeyType::TinyInt,
        KeyType::Blob,
        KeyType::Uuid,
        KeyType::TimeUuid,
        KeyType::Boolean,
        KeyType::Timestamp,
        KeyType::Date,
        KeyType::Time,
        KeyType::Inet,
        KeyType::Float,
        KeyType::Double,
    ];

    /// From the `type` column of `system_schema.columns` (CQL type names).
    pub fn from_schema_name(name: &str) -> Option<KeyType> {
        Some(match name.trim().to_ascii_lowercase().as_str() {
            "ascii" => KeyType::Ascii,
            "text" | "varchar" => KeyType::Text,
            "int" => KeyType::Int,
            "bigint" => KeyType::BigInt,
            "smallint" => KeyType::SmallInt,
            "tinyint" => KeyType::TinyInt,
            "blob" => KeyType::Blob,
            "uuid" => KeyType::Uuid,
            "timeuuid" => KeyType::TimeUuid,
            "boolean" => KeyType::Boolean,
            "timestamp" => KeyType::Timestamp,
            "date" => KeyType::Date,
            "time" => KeyType::Time,
            "inet" => KeyType::Inet,
            "float" => KeyType::Float,
            "double" => KeyType::Double,
            _ => return None,
        })
    }

    /// From a column's type in RESULT metadata (a prepared statement's bind variables).
    pub fn from_cql_type(t: &CqlType) -> Option<KeyType> {
        let CqlType::Native(id) = t else {
            return None;
        };
        Some(match *id {
            type_id::ASCII => KeyType::Ascii,
            type_id::VARCHAR => KeyType::Text,
            type_id::INT => KeyType::Int,
            type_id::BIGINT => KeyType::BigInt,
            type_id::SMALLINT => KeyType::SmallInt,
            type_id::TINYINT => KeyType::TinyInt,
            type_id::BLOB => KeyType::Blob,
            type_id::UUID => KeyType::Uuid,
            type_id::TIMEUUID => KeyType::TimeUuid,
            type_id::BOOLEAN => KeyType::Boolean,
            type_id::TIMESTAMP => KeyType::Timestamp,
            type_id::DATE => KeyType::Date,
            type_id::TIME => KeyType::Time,
            type_id::INET => KeyType::Inet,
            type_id::FLOAT => KeyType::Float,
            type_id::DOUBLE => KeyType::Double,
            _ => return None,
        })
    }
}

/// A bound value of type `t` as key bytes (appended to `out`), if it is a well-formed value of
/// the type (the server rejects the others, so they never need a key).
pub fn from_bound(t: KeyType, b: &[u8], out: &mut Vec<u8>) -> bool {
    let ok = match t {
        KeyType::Ascii => b.is_ascii(),
        KeyType::Text => std::str::from_utf8(b).is_ok(),
        KeyType::Int | KeyType::Date | KeyType::Float => b.len() == 4,
        KeyType::BigInt | KeyType::Timestamp | KeyType::Time | KeyType::Double => b.len() == 8,
        KeyType::SmallInt => b.len() == 2,
        KeyType::TinyInt | KeyType::Boolean => b.len() == 1,
        KeyType::Blob => true,
        KeyType::Uuid | KeyType::TimeUuid => b.len() == 16,
        KeyType::Inet => b.len() == 4 || b.len() == 16,
    };
    if ok {
        out.extend_from_slice(b);
    }
    ok
}

/// A literal for a column of type `t` as the bytes Cassandra would store (appended to `out`),
/// or `false` when the literal is not one this module reads exactly as Cassandra does.
pub fn from_literal(t: KeyType, lit: &KeyValue, out: &mut Vec<u8>) -> bool {
    match literal_bytes(t, lit) {
        Some(b) => {
            out.extend_from_slice(&b);
            true
        }
        None => false,
    }
}

fn literal_bytes(t: KeyType, lit: &KeyValue) -> Option<Vec<u8>> {
    use KeyValue as L;
    Some(match (t, lit) {
        (KeyType::Ascii, L::Text(s)) if s.is_ascii() => s.as_bytes().to_vec(),
        (KeyType::Text, L::Text(s)) => s.as_bytes().to_vec(),
        (KeyType::Int, L::Int(n)) => i32::try_from(*n).ok()?.to_be_bytes().to_vec(),
        (KeyType::BigInt, L::Int(n)) => n.to_be_bytes().to_vec(),
        (KeyType::SmallInt, L::Int(n)) => i16::try_from(*n).ok()?.to_be_bytes().to_vec(),
        (KeyType::TinyInt, L::Int(n)) => i8::try_from(*n).ok()?.to_be_bytes().to_vec(),
        (KeyType::Blob, L::Bytes(b)) => b.clone(),
        (KeyType::Uuid | KeyType::TimeUuid, L::Uuid(u)) => u.to_vec(),
        (KeyType::Boolean, L::Bool(b)) => vec![*b as u8],
        (KeyType::Timestamp, L::Int(ms)) => ms.to_be_bytes().to_vec(),
        (KeyType::Timestamp, L::Text(s)) => timestamp_ms(s)?.to_be_bytes().to_vec(),
        (KeyType::Date, L::Int(n)) => u32::try_from(*n).ok()?.to_be_bytes().to_vec(),
        (KeyType::Date, L::Text(s)) => date_days(s)?.to_be_bytes().to_vec(),
        (KeyType::Time, L::Int(ns)) => time_nanos_checked(*ns)?.to_be_bytes().to_vec(),
        (KeyType::Time, L::Text(s)) => time_nanos(s)?.to_be_bytes().to_vec(),
        (KeyType::Inet, L::Text(s)) => inet(s)?,
        (KeyType::Float, L::Int(n)) => n.to_string().parse::<f32>().ok()?.to_be_bytes().to_vec(),
        (KeyType::Float, L::Num(s)) => s.parse::<f32>().ok()?.to_be_bytes().to_vec(),
        (KeyType::Double, L::Int(n)) => n.to_string().parse::<f64>().ok()?.to_be_bytes().to_vec(),
        (KeyType::Double, L::Num(s)) => s.parse::<f64>().ok()?.to_be_bytes().to_vec(),
        _ => return None,
    })
}

/// All digits (with an optional leading minus).
fn is_integer(s: &str) -> bool {
    let d = s.strip_prefix('-').unwrap_or(s);
    !d.is_empty() && d.bytes().all(|c| c.is_ascii_digit())
}

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's `days_from_civil`),
/// checking the day exists.
fn days_from_civil(y: i64, m: i64, d: i64) -> Option<i64> {
    let leap = y % 4 == 0 && (y % 100 != 0 || y % 400 == 0);
    let month_days = [
        31,
        if leap { 29 } else { 28 },
        31,
        30,
        31,
        30,
        31,
        31,
        30,
        31,
        30,
        31,
    ];
    if !(1..=12).contains(&m) || d < 1 || d > month_days[(m - 1) as usize] {
        return None;
    }
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    Some(era * 146097 + doe - 719468)
}

/// Fixed-width decimal digits.
fn digits(s: &str, n: usize) -> Option<i64> {
    (s.len() == n && s.bytes().all(|c| c.is_ascii_digit()))
        .then(|| s.parse().ok())
        .flatten()
}

/// `YYYY-MM-DD` as days since the epoch.
fn ymd(s: &str) -> Option<i64> {
    let (y, rest) = s.split_at_checked(4)?;
    let rest = rest.strip_prefix('-')?;
    let (m, d) = rest.split_once('-')?;
    days_from_civil(digits(y, 4)?, digits(m, 2)?, digits(d, 2)?)
}

/// A `timestamp` string: milliseconds (all digits), or `YYYY-MM-DD[( |T)HH:MM[:SS[.fff]]]`
/// followed by an explicit zone (`Z`, `±HH`, `±HHMM`, `±HH:MM`). Without a zone Cassandra uses
/// the server's own time zone, which the switch does not know: no key.
fn timestamp_ms(s: &str) -> Option<i64> {
    if is_integer(s) {
        return s.parse().ok();
    }
    let (date, rest) = s.split_at_checked(10)?;
    let days = ymd(date)?;
    // The zone: the last `Z` or sign after the date.
    let zpos = rest.rfind(['Z', '+', '-'])?;
    let (time, zone) = rest.split_at(zpos);
    let offset_min = match zone {
        "Z" => 0,
        z if z.is_ascii() => {
            let sign = if z.starts_with('-') { -1 } else { 1 };
            let z = &z[1..];
            let (h, m) = match z.len() {
                2 => (digits(z, 2)?, 0),
                4 => (digits(&z[..2], 2)?, digits(&z[2..], 2)?),
                5 if &z[2..3] == ":" => (digits(&z[..2], 2)?, digits(&z[3..], 2)?),
                _ => return None,
            };
            if h > 23 || m > 59 {
                return None;
            }
            sign * (h * 60 + m)
        }
        _ => return None,
    };
    let mut ms_of_day = 0;
    if !time.is_empty() {
        let t = time.strip_prefix(' ').or_else(|| time.strip_prefix('T'))?;
        let (hms, frac) = match t.split_once('.') {
            Some((a, f)) => (a, Some(f)),
            None => (t, None),
        };
        let parts: Vec<&str> = hms.split(':').collect();
        let (h, m, sec) = match parts.as_slice() {
            [h, m] => (digits(h, 2)?, digits(m, 2)?, 0),
            [h, m, s] => (digits(h, 2)?, digits(m, 2)?, digits(s, 2)?),
            _ => return None,
        };
        if h > 23 || m > 59 || sec > 59 || (frac.is_some() && parts.len() != 3) {
            return None;
        }
        let ms = match frac {
            Some(f) => digits(f, 3)?,
            None => 0,
        };
        ms_of_day = ((h * 60 + m) * 60 + sec) * 1000 + ms;
    }
    days.checked_mul(86_400_000)?
        .checked_add(ms_of_day)?
        .checked_sub(offset_min * 60_000)
}

/// A `date` string: the raw unsigned day number (epoch at 2^31), or `YYYY-MM-DD`.
fn date_days(s: &str) -> Option<u32> {
    if is_integer(s) {
        return s.parse::<u32>().ok();
    }
    u32::try_from(ymd(s)? + (1i64 << 31)).ok()
}

fn time_nanos_checked(ns: i64) -> Option<i64> {
    (0..86_400_000_000_000).contains(&ns).then_some(ns)
}

/// A `time` string: nanoseconds (all digits), or `HH:MM:SS` with no fraction or exactly nine
/// fraction digits.
fn time_nanos(s: &str) -> Option<i64> {
    if is_integer(s) {
        return time_nanos_checked(s.parse().ok()?);
    }
    let (hms, frac) = match s.split_once('.') {
        Some((a, f)) => (a, digits(f, 9)?),
        None => (s, 0),
    };
    let parts: Vec<&str> = hms.split(':').collect();
    let [h, m, sec] = parts.as_slice() else {
        return None;
    };
    let (h, m, sec) = (digits(h, 2)?, digits(m, 2)?, digits(sec, 2)?);
    if h > 23 || m > 59 || sec > 59 {
        return None;
    }
    Some(((h * 60 + m) * 60 + sec) * 1_000_000_000 + frac)
}

/// An `inet` string: an IPv4 dotted quad (4 bytes) or an IPv6 address (16 bytes). Forms with
/// an embedded IPv4 part (`::ffff:1.2.3.4`) are not keyed: Java turns mapped ones into 4 bytes.
fn inet(s: &str) -> Option<Vec<u8>> {
    match s.parse::<std::net::IpAddr>().ok()? {
        std::net::IpAddr::V4(a) => Some(a.octets().to_vec()),
        std::net::IpAddr::V6(a) if !s.contains('.') => Some(a.octets().to_vec()),
        std::net::IpAddr::V6(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lit(t: KeyType, l: KeyValue) -> Option<Vec<u8>> {
        let mut v = Vec::new();
        from_literal(t, &l, &mut v).then_some(v)
    }
    fn text(s: &str) -> KeyValue {
        KeyValue::Text(s.into())
    }

    /// The spellings, and the bytes the Python driver sends for the same values.
    #[test]
    fn spellings_of_one_value_give_one_key() {
        let ts = 1_577_836_800_000i64.to_be_bytes().to_vec();
        for s in [
            "2020-01-01 00:00:00+0000",
            "2020-01-01T00:00:00Z",
            "2020-01-01 00:00Z",
            "2020-01-01+00:00",
            "2020-01-01T01:00:00.000+01:00",
            "2019-12-31 19:00:00-05",
            "1577836800000",
        ] {
            assert_eq!(lit(KeyType::Timestamp, text(s)), Some(ts.clone()), "{s}");
        }
        assert_eq!(
            lit(KeyType::Timestamp, KeyValue::Int(1_577_836_800_000)),
            Some(ts)
        );
        for s in [
            "2020-01-01 00:00:00",
            "2020-01-01",
            "2020-01-01 00:00:00.5Z",
            "2020-02-30Z",
        ] {
            assert_eq!(
                lit(KeyType::Timestamp, text(s)),
                None,
                "no zone or not exact: {s}"
            );
        }
        let d = 2_147_501_910u32.to_be_bytes().to_vec();
        assert_eq!(lit(KeyType::Date, text("2020-01-01")), Some(d.clone()));
        assert_eq!(
            lit(KeyType::Date, KeyValue::Int(2_147_501_910)),
            Some(d.clone())
        );
        assert_eq!(lit(KeyType::Date, text("2147501910")), Some(d));
        assert_eq!(
            lit(KeyType::Date, text("1970-01-01")),
            Some((1u32 << 31).to_be_bytes().to_vec())
        );
        let one = {
            let mut v = [0u8; 16];
            v[15] = 1;
            v.to_vec()
        };
        assert_eq!(lit(KeyType::Inet, text("::1")), Some(one.clone()));
        assert_eq!(lit(KeyType::Inet, text("0:0:0:0:0:0:0:1")), Some(one));
        assert_eq!(
            lit(KeyType::Inet, text("10.0.0.1")),
            Some(vec![10, 0, 0, 1])
        );
        assert_eq!(lit(KeyType::Inet, text("::ffff:10.0.0.1")), None);
        assert_eq!(lit(KeyType::Inet, text("localhost")), None);
        assert_eq!(
            lit(KeyType::Float, KeyValue::Int(1)),
            lit(KeyType::Float, KeyValue::Num("1.0".into()))
        );
        assert_eq!(
            lit(KeyType::Double, KeyValue::Num("0.1".into())),
            Some(0.1f64.to_be_bytes().to_vec())
        );
        assert_eq!(
            lit(KeyType::Time, text("01:00:00")),
            Some(3_600_000_000_000i64.to_be_bytes().to_vec())
        );
        assert_eq!(
            lit(KeyType::Time, text("01:00:00.000000001")),
            Some(3_600_000_000_001i64.to_be_bytes().to_vec())
        );
        assert_eq!(lit(KeyType::Time, text("01:00:00.5")), None);
        assert_eq!(lit(KeyType::Int, KeyValue::Int(1 << 40)), None);
        assert_eq!(lit(KeyType::Int, text("1")), None);
        assert_eq!(lit(KeyType::Ascii, text("é")), None);
        assert_eq!(lit(KeyType::Boolean, KeyValue::Bool(true)), Some(vec![1]));
    }

    #[test]
    fn dates_match_a_day_count() {
        // Every day of 1900..2100 against a running count.
        let mut n = days_from_civil(1900, 1, 1).unwrap();
        assert_eq!(n, -25567);
        for y in 1900..2100 {
            for m in 1..=12 {
                for d in 1..=31 {
                    if let Some(x) = days_from_civil(y, m, d) {
                        assert_eq!(x, n, "{y}-{m}-{d}");
                        n += 1;
                    }
                }
            }
        }
        assert_eq!(n, days_from_civil(2100, 1, 1).unwrap());
    }

    proptest::proptest! {
        /// Any text, as a string literal or a number's text, for every type: an answer or a
        /// refusal, never a panic; and a timestamp written as `YYYY-MM-DD HH:MM:SS.fff±HH:MM`
        /// is the milliseconds it names.
        #[test]
        fn literals_never_panic(s in ".{0,40}", ms in -62_135_596_800_000i64..253_402_300_799_999, off in -1439i64..1440) {
            for t in KeyType::ALL {
                let mut v = Vec::new();
                from_literal(t, &KeyValue::Text(s.clone()), &mut v);
                from_literal(t, &KeyValue::Num(s.clone()), &mut v);
            }
            // Format ms at offset `off` minutes with the civil-from-days inverse.
            let local = ms + off * 60_000;
            let (days, rem) = (local.div_euclid(86_400_000), local.rem_euclid(86_400_000));
            let (y, m, d) = civil_from_days(days);
            let text = format!(
                "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}.{:03}{}{:02}:{:02}",
                rem / 3_600_000, rem / 60_000 % 60, rem / 1000 % 60, rem % 1000,
                if off < 0 { '-' } else { '+' }, off.abs() / 60, off.abs() % 60
            );
            proptest::prop_assume!((1..=9999).contains(&y));
            proptest::prop_assert_eq!(timestamp_ms(&text), Some(ms), "{}", text);
        }
    }

    /// H. Hinnant's `civil_from_days` (the inverse of `days_from_civil`).
    fn civil_from_days(z: i64) -> (i64, i64, i64) {
        let z = z + 719468;
        let era = z.div_euclid(146097);
        let doe = z - era * 146097;
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let d = doy - (153 * mp + 2) / 5 + 1;
        let m = if mp < 10 { mp + 3 } else { mp - 9 };
        (yoe + era * 400 + (m <= 2) as i64, m, d)
    }

    #[test]
    fn bound_values_are_checked_by_length() {
        let mut v = Vec::new();
        assert!(from_bound(KeyType::Int, &[0, 0, 0, 1], &mut v));
        assert!(!from_bound(KeyType::Int, &[0, 1], &mut v));
        assert!(!from_bound(KeyType::Text, &[0xff], &mut v));
        assert!(from_bound(KeyType::Inet, &[127, 0, 0, 1], &mut v));
        assert_eq!(v, [0, 0, 0, 1, 127, 0, 0, 1]);
    }
}
