//! Deserializers that stop at the documented caps, so an import line far over a cap is
//! refused without first being built in memory (a 200 MB `labels` array would otherwise
//! become millions of strings before validation saw it).
//!
//! Lists keep at most their cap of entries and count the rest without building them
//! ([`IgnoredAny`]), so the error can still say how many there were. Property maps are
//! bounded by a byte budget measured exactly as validation measures it.

use std::cell::Cell;
use std::collections::BTreeMap;
use std::fmt;
use std::marker::PhantomData;

use cairn_core::limits::{MAX_PROPS_BYTES, MAX_VALUE_DEPTH};
use cairn_core::Value;
use serde::de::{DeserializeSeed, Error as _, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};

/// A JSON list of which at most `MAX` entries are kept; `total` counts them all.
#[derive(Debug)]
pub(super) struct Capped<T, const MAX: usize> {
    /// The first `min(total, MAX)` entries.
    pub items: Vec<T>,
    /// How many entries the list had.
    pub total: usize,
}

impl<T, const MAX: usize> Default for Capped<T, MAX> {
    fn default() -> Self {
        Capped {
            items: Vec::new(),
            total: 0,
        }
    }
}

impl<T, const MAX: usize> Capped<T, MAX> {
    /// The entries if there were at most `MAX`, else the count.
    pub fn within(self) -> Result<Vec<T>, usize> {
        if self.total > MAX {
            Err(self.total)
        } else {
            Ok(self.items)
        }
    }
}

impl<'de, T: Deserialize<'de>, const MAX: usize> Deserialize<'de> for Capped<T, MAX> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T, const MAX: usize>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>, const MAX: usize> Visitor<'de> for V<T, MAX> {
            type Value = Capped<T, MAX>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a list")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<Self::Value, A::Error> {
                let mut items = Vec::new();
                let mut total = 0usize;
                while items.len() < MAX {
                    match a.next_element::<T>()? {
                        Some(item) => items.push(item),
                        None => return Ok(Capped { items, total }),
                    }
                    total += 1;
                }
                while a.next_element::<IgnoredAny>()?.is_some() {
                    total += 1;
                }
                Ok(Capped { items, total })
            }
        }
        d.deserialize_seq(V::<T, MAX>(PhantomData))
    }
}

/// A JSON object (string keys) of which at most `MAX` distinct entries are kept; `total`
/// counts its entries. A repeated key replaces the earlier value, as in any JSON map.
#[derive(Debug)]
pub(super) struct CappedMap<V, const MAX: usize> {
    /// The first entries, at most `MAX` distinct keys.
    pub entries: BTreeMap<String, V>,
    /// How many entries the object had.
    pub total: usize,
}

impl<V, const MAX: usize> Default for CappedMap<V, MAX> {
    fn default() -> Self {
        CappedMap {
            entries: BTreeMap::new(),
            total: 0,
        }
    }
}

impl<'de, T: Deserialize<'de>, const MAX: usize> Deserialize<'de> for CappedMap<T, MAX> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T, const MAX: usize>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>, const MAX: usize> Visitor<'de> for V<T, MAX> {
            type Value = CappedMap<T, MAX>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Self::Value, A::Error> {
                let mut entries = BTreeMap::new();
                let mut total = 0usize;
                while let Some(key) = a.next_key::<String>()? {
                    total += 1;
                    if entries.len() < MAX || entries.contains_key(&key) {
                        entries.insert(key, a.next_value::<T>()?);
                    } else {
                        a.next_value::<IgnoredAny>()?;
                    }
                }
                Ok(CappedMap { entries, total })
            }
        }
        d.deserialize_map(V::<T, MAX>(PhantomData))
    }
}

/// A property map read within [`MAX_PROPS_BYTES`], measured as validation measures it
/// (key bytes plus each value's payload bytes): reading stops with an error naming the
/// cap as soon as the budget is spent.
#[derive(Debug, Default)]
pub(super) struct Props(pub BTreeMap<String, Value>);

impl<'de> Deserialize<'de> for Props {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let used = Cell::new(0usize);
        Budget { used: &used, depth: 0 }.map(d).map(Props)
    }
}

/// Spends `n` bytes of the property budget.
fn spend<E: serde::de::Error>(used: &Cell<usize>, n: usize) -> Result<(), E> {
    let total = used.get().saturating_add(n);
    used.set(total);
    if total > MAX_PROPS_BYTES {
        return Err(E::custom(format!(
            "`props` is more than {MAX_PROPS_BYTES} bytes, the limit is {MAX_PROPS_BYTES}"
        )));
    }
    Ok(())
}

/// Reads one value (or map) against the shared budget. `depth` is the nesting of the
/// value being read (a property's own value is depth 0); lists and maps deeper than the
/// data model allows are refused here too, so recursion is bounded by the cap, not by
/// the parser's limit.
#[derive(Clone, Copy)]
struct Budget<'a> {
    used: &'a Cell<usize>,
    depth: usize,
}

impl<'a> Budget<'a> {
    fn map<'de, D: Deserializer<'de>>(self, d: D) -> Result<BTreeMap<String, Value>, D::Error> {
        struct M<'a>(Budget<'a>);
        impl<'de> Visitor<'de> for M<'_> {
            type Value = BTreeMap<String, Value>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object of properties")
            }
            fn visit_map<A: MapAccess<'de>>(self, a: A) -> Result<Self::Value, A::Error> {
                self.0.entries(a)
            }
        }
        d.deserialize_map(M(self))
    }

    fn entries<'de, A: MapAccess<'de>>(self, mut a: A) -> Result<BTreeMap<String, Value>, A::Error> {
        let mut m = BTreeMap::new();
        while let Some(key) = a.next_key::<String>()? {
            spend(self.used, key.len())?;
            let value = a.next_value_seed(self)?;
            m.insert(key, value);
        }
        Ok(m)
    }

    fn nested(self) -> Result<Budget<'a>, String> {
        // A list or map at `depth` is the (depth + 1)-th level of nesting.
        if self.depth + 1 > MAX_VALUE_DEPTH {
            return Err(format!("a property nests deeper than {MAX_VALUE_DEPTH}, the limit"));
        }
        Ok(Budget {
            used: self.used,
            depth: self.depth + 1,
        })
    }
}

impl<'de> DeserializeSeed<'de> for Budget<'_> {
    type Value = Value;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Budget<'_> {
    type Value = Value;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_unit<E: serde::de::Error>(self) -> Result<Value, E> {
        spend(self.used, 1)?;
        Ok(Value::Null)
    }
    fn visit_bool<E: serde::de::Error>(self, b: bool) -> Result<Value, E> {
        spend(self.used, 1)?;
        Ok(Value::Bool(b))
    }
    fn visit_i64<E: serde::de::Error>(self, i: i64) -> Result<Value, E> {
        spend(self.used, 8)?;
        Ok(Value::Int(i))
    }
    fn visit_u64<E: serde::de::Error>(self, u: u64) -> Result<Value, E> {
        spend(self.used, 8)?;
        Ok(match i64::try_from(u) {
            Ok(i) => Value::Int(i),
            Err(_) => Value::Float(u as f64),
        })
    }
    fn visit_f64<E: serde::de::Error>(self, f: f64) -> Result<Value, E> {
        spend(self.used, 8)?;
        Ok(Value::Float(f))
    }
    fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<Value, E> {
        spend(self.used, s.len())?;
        Ok(Value::String(s.to_owned()))
    }
    fn visit_string<E: serde::de::Error>(self, s: String) -> Result<Value, E> {
        spend(self.used, s.len())?;
        Ok(Value::String(s))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<Value, A::Error> {
        let inner = self.nested().map_err(A::Error::custom)?;
        spend(self.used, 8)?;
        let mut items = Vec::new();
        while let Some(v) = a.next_element_seed(inner)? {
            items.push(v);
        }
        Ok(Value::List(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, a: A) -> Result<Value, A::Error> {
        let inner = self.nested().map_err(A::Error::custom)?;
        spend(self.used, 8)?;
        inner.entries(a).map(Value::Map)
    }
}
