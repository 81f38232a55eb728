//! Property values: null, bool, i64, finite f64, string, list, and map with string keys.

use std::collections::BTreeMap;
use std::fmt;

use serde::de::{MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A property value.
///
/// Maps are [`BTreeMap`]s so their order, and so their encoding and hash, never depends
/// on insertion order. Floats must be finite; `-0.0` is stored as `+0.0` (see
/// [`Value::canonicalize`]). In JSON, a number that fits an `i64` is an [`Value::Int`];
/// any other number is a [`Value::Float`].
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// JSON `null`.
    Null,
    /// A boolean.
    Bool(bool),
    /// A signed 64-bit integer.
    Int(i64),
    /// A finite 64-bit float.
    Float(f64),
    /// A UTF-8 string.
    String(String),
    /// An ordered list.
    List(Vec<Value>),
    /// A map with string keys, in key order.
    Map(BTreeMap<String, Value>),
}

impl Value {
    /// Rewrites `-0.0` as `+0.0` everywhere inside the value, so that equal numbers
    /// hash equally.
    pub fn canonicalize(&mut self) {
        match self {
            Value::Float(f) if *f == 0.0 => *f = 0.0,
            Value::List(items) => items.iter_mut().for_each(Value::canonicalize),
            Value::Map(m) => m.values_mut().for_each(Value::canonicalize),
            _ => {}
        }
    }

    /// The first problem with this value, if any: a non-finite float, or nesting deeper
    /// than `max_depth`. Returns a dotted path to the offending place.
    pub fn check(&self, max_depth: usize) -> Result<(), (String, ValueProblem)> {
        fn walk(v: &Value, depth: usize, max: usize, path: &mut String) -> Result<(), ValueProblem> {
            match v {
                Value::Float(f) if !f.is_finite() => Err(ValueProblem::NonFinite),
                Value::List(_) | Value::Map(_) if depth >= max => Err(ValueProblem::TooDeep),
                Value::List(items) => {
                    for (i, item) in items.iter().enumerate() {
                        let len = path.len();
                        path.push_str(&format!("[{i}]"));
                        walk(item, depth + 1, max, path)?;
                        path.truncate(len);
                    }
                    Ok(())
                }
                Value::Map(m) => {
                    for (k, item) in m {
                        let len = path.len();
                        path.push('.');
                        path.push_str(k);
                        walk(item, depth + 1, max, path)?;
                        path.truncate(len);
                    }
                    Ok(())
                }
                _ => Ok(()),
            }
        }
        let mut path = String::new();
        walk(self, 0, max_depth, &mut path).map_err(|p| (path, p))
    }

    /// The value as an `f64` if it is a number (used by numeric range gates).
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Int(i) => Some(*i as f64),
            Value::Float(f) => Some(*f),
            _ => None,
        }
    }

    /// The value as a string slice if it is a string.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }
}

/// What is wrong with a [`Value`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ValueProblem {
    /// A float is NaN or infinite.
    NonFinite,
    /// Lists or maps nest deeper than the limit.
    TooDeep,
}

impl From<bool> for Value {
    fn from(v: bool) -> Self {
        Value::Bool(v)
    }
}
impl From<i64> for Value {
    fn from(v: i64) -> Self {
        Value::Int(v)
    }
}
impl From<f64> for Value {
    fn from(v: f64) -> Self {
        Value::Float(v)
    }
}
impl From<&str> for Value {
    fn from(v: &str) -> Self {
        Value::String(v.to_string())
    }
}
impl From<String> for Value {
    fn from(v: String) -> Self {
        Value::String(v)
    }
}

impl Serialize for Value {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Value::Null => s.serialize_unit(),
            Value::Bool(b) => s.serialize_bool(*b),
            Value::Int(i) => s.serialize_i64(*i),
            Value::Float(f) => s.serialize_f64(*f),
            Value::String(v) => s.serialize_str(v),
            Value::List(items) => items.serialize(s),
            Value::Map(m) => m.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for Value {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Value;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON value")
            }
            fn visit_unit<E>(self) -> Result<Value, E> {
                Ok(Value::Null)
            }
            fn visit_none<E>(self) -> Result<Value, E> {
                Ok(Value::Null)
            }
            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
                Value::deserialize(d)
            }
            fn visit_bool<E>(self, b: bool) -> Result<Value, E> {
                Ok(Value::Bool(b))
            }
            fn visit_i64<E>(self, i: i64) -> Result<Value, E> {
                Ok(Value::Int(i))
            }
            fn visit_u64<E: serde::de::Error>(self, u: u64) -> Result<Value, E> {
                Ok(match i64::try_from(u) {
                    Ok(i) => Value::Int(i),
                    Err(_) => Value::Float(u as f64),
                })
            }
            fn visit_f64<E>(self, f: f64) -> Result<Value, E> {
                Ok(Value::Float(f))
            }
            fn visit_str<E>(self, s: &str) -> Result<Value, E> {
                Ok(Value::String(s.to_string()))
            }
            fn visit_string<E>(self, s: String) -> Result<Value, E> {
                Ok(Value::String(s))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<Value, A::Error> {
                let mut items = Vec::new();
                while let Some(v) = a.next_element()? {
                    items.push(v);
                }
                Ok(Value::List(items))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Value, A::Error> {
                let mut m = BTreeMap::new();
                while let Some((k, v)) = a.next_entry::<String, Value>()? {
                    m.insert(k, v);
                }
                Ok(Value::Map(m))
            }
        }
        d.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_numbers_map_to_int_or_float() {
        let v: Value = serde_json::from_str(r#"{"a": 1, "b": 1.5, "c": [true, null, "x"]}"#).unwrap();
        let Value::Map(m) = &v else { panic!("not a map") };
        assert_eq!(m["a"], Value::Int(1));
        assert_eq!(m["b"], Value::Float(1.5));
        assert_eq!(
            serde_json::to_string(&v).unwrap(),
            r#"{"a":1,"b":1.5,"c":[true,null,"x"]}"#
        );
    }

    #[test]
    fn check_finds_non_finite_and_depth() {
        let v = Value::List(vec![Value::Float(f64::NAN)]);
        assert_eq!(v.check(8).unwrap_err(), ("[0]".to_string(), ValueProblem::NonFinite));
        let mut deep = Value::Null;
        for _ in 0..40 {
            deep = Value::List(vec![deep]);
        }
        assert_eq!(deep.check(32).unwrap_err().1, ValueProblem::TooDeep);
        let mut z = Value::Float(-0.0);
        z.canonicalize();
        assert!(matches!(z, Value::Float(f) if f.to_bits() == 0));
    }
}
