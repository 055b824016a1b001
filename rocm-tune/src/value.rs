//! Parameter values and their Python-compatible text forms.
//!
//! Kernel Tuner keys its cache entries with `",".join(str(v) for v in config)`, so every value
//! must print exactly as Python's `str()` would (`True`, `1e-05`, `2.0`), or a cache written by
//! Kernel Tuner could not be looked up again. That is why floats have a hand-made `repr` here.

use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};
use std::fmt;

/// One value of a tunable parameter.
///
/// Values are compared structurally: `Int(2)` and `Float(2.0)` are different values, as they
/// are different entries in a Kernel Tuner `tune_params` list (they print differently, `2`
/// versus `2.0`, and so produce different cache keys).
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// An integer, the usual case (block sizes, tile sizes, unroll factors).
    Int(i64),
    /// A floating-point value.
    Float(f64),
    /// A string, e.g. a layout or an algorithm name.
    Str(String),
    /// A boolean switch.
    Bool(bool),
}

impl Value {
    /// The value as a float, for numbers only (booleans and strings give `None`).
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Int(i) => Some(*i as f64),
            Value::Float(f) => Some(*f),
            _ => None,
        }
    }

    /// The value as an integer, for `Int` only.
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Value::Int(i) => Some(*i),
            _ => None,
        }
    }

    /// The value as a string slice, for `Str` only.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    /// The value as a boolean, for `Bool` only.
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Value::Bool(b) => Some(*b),
            _ => None,
        }
    }

    /// True for `Int` and `Float`.
    pub fn is_numeric(&self) -> bool {
        matches!(self, Value::Int(_) | Value::Float(_))
    }

    /// The text Python's `str()` gives for this value; used for Kernel Tuner cache keys.
    pub fn python_str(&self) -> String {
        match self {
            Value::Int(i) => i.to_string(),
            Value::Float(f) => python_float_repr(*f),
            Value::Str(s) => s.clone(),
            Value::Bool(true) => "True".to_string(),
            Value::Bool(false) => "False".to_string(),
        }
    }

    /// Converts a JSON value; `None` for null, arrays and objects, which cannot be parameter values.
    pub fn from_json(v: &serde_json::Value) -> Option<Value> {
        match v {
            serde_json::Value::Bool(b) => Some(Value::Bool(*b)),
            serde_json::Value::Number(n) => {
                if let Some(i) = n.as_i64() {
                    Some(Value::Int(i))
                } else {
                    n.as_f64().map(Value::Float)
                }
            }
            serde_json::Value::String(s) => Some(Value::Str(s.clone())),
            _ => None,
        }
    }

    /// Converts to a JSON value (a non-finite float becomes `null`, as JSON has no NaN).
    pub fn to_json(&self) -> serde_json::Value {
        match self {
            Value::Int(i) => serde_json::Value::from(*i),
            Value::Float(f) => serde_json::Number::from_f64(*f)
                .map(serde_json::Value::Number)
                .unwrap_or(serde_json::Value::Null),
            Value::Str(s) => serde_json::Value::String(s.clone()),
            Value::Bool(b) => serde_json::Value::Bool(*b),
        }
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.python_str())
    }
}

macro_rules! from_int {
    ($($t:ty),*) => {$(
        impl From<$t> for Value {
            fn from(v: $t) -> Self { Value::Int(i64::from(v)) }
        }
    )*};
}
from_int!(i8, i16, i32, i64, u8, u16, u32);

impl From<usize> for Value {
    fn from(v: usize) -> Self {
        // Parameter values beyond i64 do not occur; saturate rather than panic.
        Value::Int(i64::try_from(v).unwrap_or(i64::MAX))
    }
}
impl From<f64> for Value {
    fn from(v: f64) -> Self {
        Value::Float(v)
    }
}
impl From<f32> for Value {
    fn from(v: f32) -> Self {
        Value::Float(f64::from(v))
    }
}
impl From<bool> for Value {
    fn from(v: bool) -> Self {
        Value::Bool(v)
    }
}
impl From<&str> for Value {
    fn from(v: &str) -> Self {
        Value::Str(v.to_string())
    }
}
impl From<String> for Value {
    fn from(v: String) -> Self {
        Value::Str(v)
    }
}

impl Serialize for Value {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Value::Int(i) => s.serialize_i64(*i),
            Value::Float(f) => s.serialize_f64(*f),
            Value::Str(v) => s.serialize_str(v),
            Value::Bool(b) => s.serialize_bool(*b),
        }
    }
}

impl<'de> Deserialize<'de> for Value {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Value;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a number, string or boolean")
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<Value, E> {
                Ok(Value::Bool(v))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Value, E> {
                Ok(Value::Int(v))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Value, E> {
                Ok(i64::try_from(v).map_or(Value::Float(v as f64), Value::Int))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
                Ok(Value::Float(v))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Value, E> {
                Ok(Value::Str(v.to_string()))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Value, E> {
                Ok(Value::Str(v))
            }
        }
        d.deserialize_any(V)
    }
}

/// Formats a float exactly as Python's `repr(float)` (and so `json.dumps`) does.
///
/// Python prints the shortest digits that round-trip (as Rust does), but switches to
/// exponent notation when the decimal point position is `<= -4` or `> 16`, always writes a
/// sign and at least two exponent digits (`1e-05`, `1e+16`) and appends `.0` to integral
/// values. Non-finite values print as Python's `str` does (`nan`, `inf`, `-inf`); note that
/// `json.dumps` writes them as `NaN`/`Infinity`, which the JSON writer handles itself.
pub fn python_float_repr(x: f64) -> String {
    if x.is_nan() {
        return "nan".to_string();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf" } else { "-inf" }.to_string();
    }
    if x == 0.0 {
        return if x.is_sign_negative() { "-0.0" } else { "0.0" }.to_string();
    }
    let e = format!("{x:e}");
    let (mantissa, exp) = match e.split_once('e') {
        Some((m, ex)) => (m, ex.parse::<i32>().unwrap_or(0)),
        None => (e.as_str(), 0),
    };
    let (neg, mantissa) = match mantissa.strip_prefix('-') {
        Some(m) => (true, m),
        None => (false, mantissa),
    };
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let decpt = exp + 1;
    let mut out = String::new();
    if neg {
        out.push('-');
    }
    if -4 < decpt && decpt <= 16 {
        let n = digits.len() as i32;
        if decpt <= 0 {
            out.push_str("0.");
            for _ in 0..(-decpt) {
                out.push('0');
            }
            out.push_str(&digits);
        } else if decpt >= n {
            out.push_str(&digits);
            for _ in 0..(decpt - n) {
                out.push('0');
            }
            out.push_str(".0");
        } else {
            let (a, b) = digits.split_at(decpt as usize);
            out.push_str(a);
            out.push('.');
            out.push_str(b);
        }
    } else {
        let (first, rest) = digits.split_at(1);
        out.push_str(first);
        if !rest.is_empty() {
            out.push('.');
            out.push_str(rest);
        }
        out.push('e');
        out.push(if exp < 0 { '-' } else { '+' });
        let a = exp.unsigned_abs();
        if a < 10 {
            out.push('0');
        }
        out.push_str(&a.to_string());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn float_repr_matches_python() {
        let cases = [
            (0.1, "0.1"),
            (1.0, "1.0"),
            (-2.5, "-2.5"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (1.5e-7, "1.5e-07"),
            (1e15, "1000000000000000.0"),
            (1e16, "1e+16"),
            (123456789012345680.0, "1.2345678901234568e+17"),
            (0.04073600071881499, "0.04073600071881499"),
            (440.9545585513115, "440.9545585513115"),
            (1e22, "1e+22"),
            (1e100, "1e+100"),
            (-0.0, "-0.0"),
        ];
        for (x, want) in cases {
            assert_eq!(python_float_repr(x), want, "{x}");
        }
    }

    #[test]
    fn python_str_of_values() {
        assert_eq!(Value::Bool(true).python_str(), "True");
        assert_eq!(Value::Int(-3).python_str(), "-3");
        assert_eq!(Value::Float(2.0).python_str(), "2.0");
        assert_eq!(Value::from("row").python_str(), "row");
    }

    #[test]
    fn json_round_trip_keeps_int_float_distinction() {
        let v: Vec<Value> = serde_json::from_str("[1, 1.0, \"a\", false]").unwrap();
        assert_eq!(
            v,
            vec![
                Value::Int(1),
                Value::Float(1.0),
                Value::from("a"),
                Value::Bool(false)
            ]
        );
        assert_eq!(serde_json::to_string(&v).unwrap(), "[1,1.0,\"a\",false]");
    }
}
