//! Property predicates, for property gates (equals, in, numeric range) inside the indexes.

use cairn_core::Value;

/// A predicate on one property.
#[derive(Debug, Clone, PartialEq)]
pub enum PropertyPredicate {
    /// The property equals the value (numbers compare numerically: `1 == 1.0`).
    Equals(Value),
    /// The property equals one of the values.
    In(Vec<Value>),
    /// The property is a number within the bounds (each inclusive, `None` open).
    Range {
        /// Lower bound (inclusive).
        min: Option<f64>,
        /// Upper bound (inclusive).
        max: Option<f64>,
    },
    /// The property is present (any value).
    Exists,
}

impl PropertyPredicate {
    /// True if `value` satisfies the predicate.
    ///
    /// `Equals`: numbers compare by numeric value (`Int(1)` equals `Float(1.0)`; an integer
    /// and a float are equal only if the float is exactly that integer), strings, bools and
    /// null by equality, lists and maps structurally with these same rules element by
    /// element. `In`: any `Equals`. `Range`: the value is a number (an integer is widened
    /// to `f64`) within both inclusive bounds. `Exists`: always.
    pub fn matches(&self, value: &Value) -> bool {
        match self {
            PropertyPredicate::Equals(want) => values_equal(value, want),
            PropertyPredicate::In(wants) => wants.iter().any(|w| values_equal(value, w)),
            PropertyPredicate::Range { min, max } => value
                .as_f64()
                .is_some_and(|x| min.is_none_or(|m| m <= x) && max.is_none_or(|m| x <= m)),
            PropertyPredicate::Exists => true,
        }
    }
}

/// Equality of property values as the gates see it (see [`PropertyPredicate::matches`]).
pub fn values_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Null, Value::Null) => true,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::Int(x), Value::Int(y)) => x == y,
        (Value::Float(x), Value::Float(y)) => x == y,
        (Value::Int(i), Value::Float(f)) | (Value::Float(f), Value::Int(i)) => int_equals_float(*i, *f),
        (Value::String(x), Value::String(y)) => x == y,
        (Value::List(x), Value::List(y)) => x.len() == y.len() && x.iter().zip(y).all(|(a, b)| values_equal(a, b)),
        (Value::Map(x), Value::Map(y)) => {
            x.len() == y.len()
                && x.iter()
                    .zip(y)
                    .all(|((ka, va), (kb, vb))| ka == kb && values_equal(va, vb))
        }
        _ => false,
    }
}

/// Exact: `f` is integral, within `i64`'s range, and equal to `i` (no rounding of `i`).
fn int_equals_float(i: i64, f: f64) -> bool {
    // 2^63 is exactly representable; every integral f64 in [-2^63, 2^63) fits an i64.
    const TWO_63: f64 = 9_223_372_036_854_775_808.0;
    f.fract() == 0.0 && (-TWO_63..TWO_63).contains(&f) && f as i64 == i
}

#[cfg(test)]
mod tests {
    use super::*;
    use cairn_core::{Node, NodeId};
    use roaring::RoaringBitmap;

    fn idx() -> crate::chunk::NodeChunk {
        let mk = |id: &str| Node::new(NodeId::new(id).unwrap());
        let nodes = [
            mk("a").with_prop("n", 1i64).with_prop("s", "x"),
            mk("b").with_prop("n", 1.0).with_prop("s", "y"),
            mk("c").with_prop("n", 2.5).with_prop("b", true),
            mk("d")
                .with_prop("n", "1")
                .with_prop("l", Value::List(vec![Value::Int(1), Value::Null])),
            mk("e")
                .with_prop("n", Value::Null)
                .with_prop("l", Value::List(vec![Value::Float(1.0), Value::Null])),
            mk("f").with_prop("n", i64::MAX),
        ];
        let refs: Vec<(cairn_core::Hash, &Node)> = nodes.iter().map(|n| (cairn_core::Hash::ZERO, n)).collect();
        crate::chunk::NodeChunk::build(&refs)
    }

    fn ords(b: RoaringBitmap) -> Vec<u32> {
        b.iter().collect()
    }

    #[test]
    fn predicates() {
        let p = idx();
        use PropertyPredicate::*;
        assert_eq!(ords(p.filter_prop("n", &Equals(Value::Int(1)))), vec![0, 1]);
        assert_eq!(ords(p.filter_prop("n", &Equals(Value::Float(1.0)))), vec![0, 1]);
        assert_eq!(ords(p.filter_prop("n", &Equals(Value::String("1".into())))), vec![3]);
        assert_eq!(ords(p.filter_prop("n", &Equals(Value::Null))), vec![4]);
        // 2^63 as a float is not i64::MAX.
        assert!(p.filter_prop("n", &Equals(Value::Float(i64::MAX as f64))).is_empty());
        assert_eq!(ords(p.filter_prop("n", &Equals(Value::Int(i64::MAX)))), vec![5]);
        assert_eq!(
            ords(p.filter_prop("n", &In(vec![Value::Float(2.5), Value::Null]))),
            vec![2, 4]
        );
        assert_eq!(
            ords(p.filter_prop(
                "n",
                &Range {
                    min: Some(1.0),
                    max: Some(2.5)
                }
            )),
            vec![0, 1, 2]
        );
        assert_eq!(
            ords(p.filter_prop(
                "n",
                &Range {
                    min: Some(1.5),
                    max: None
                }
            )),
            vec![2, 5]
        );
        assert_eq!(
            ords(p.filter_prop("n", &Range { min: None, max: None })),
            vec![0, 1, 2, 5]
        );
        assert_eq!(
            ords(p.filter_prop("l", &Equals(Value::List(vec![Value::Int(1), Value::Null])))),
            vec![3, 4]
        );
        assert_eq!(ords(p.filter_prop("b", &Exists)), vec![2]);
        assert!(p.filter_prop("missing", &Exists).is_empty());
        assert_eq!(p.prop(1, "s"), Some(&Value::String("y".into())));
        assert_eq!(p.prop(2, "s"), None);
        assert_eq!(p.props_of(2).keys().collect::<Vec<_>>(), vec!["b", "n"]);
    }
}
