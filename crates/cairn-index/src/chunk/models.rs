//! [`Models`]: the vector models a chunk's nodes have (model → what the core part records
//! of it), in model order. A chunk has one or two, and a cold view of a large commit holds
//! a core part for every chunk: a sorted vector costs one small allocation where a
//! `BTreeMap`'s node costs ~400 bytes (15,658 times over at 1M nodes, twice).

/// Model name → value, sorted by name, each name once.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Models<V>(Vec<(String, V)>);

impl<V> Models<V> {
    /// The value of `model`, if the chunk has it.
    ///
    /// ```
    /// use cairn_index::chunk::Models;
    /// let models: Models<u32> = Models::default();
    /// assert!(models.get("minilm").is_none());
    /// ```
    pub fn get(&self, model: &str) -> Option<&V> {
        let i = self.0.binary_search_by(|(m, _)| m.as_str().cmp(model)).ok()?;
        Some(&self.0[i].1)
    }

    /// True if the chunk has `model`.
    pub fn contains_key(&self, model: &str) -> bool {
        self.get(model).is_some()
    }

    /// The model names, in order.
    pub fn keys(&self) -> impl DoubleEndedIterator<Item = &String> {
        self.0.iter().map(|(m, _)| m)
    }

    /// Models with their values, in model order.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = (&String, &V)> {
        self.0.iter().map(|(m, v)| (m, v))
    }

    /// Number of models.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// True if the chunk has no vector model.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Sets `model`'s value (in order; the storage grows by exactly one entry).
    pub(crate) fn insert(&mut self, model: String, value: V) {
        match self.0.binary_search_by(|(m, _)| m.as_str().cmp(&model)) {
            Ok(i) => self.0[i].1 = value,
            Err(i) => {
                self.0.reserve_exact(1);
                self.0.insert(i, (model, value));
            }
        }
    }

    /// The last model name.
    pub(crate) fn last_key(&self) -> Option<&String> {
        self.0.last().map(|(m, _)| m)
    }
}

impl<'a, V> IntoIterator for &'a Models<V> {
    type Item = (&'a String, &'a V);
    type IntoIter = std::iter::Map<std::slice::Iter<'a, (String, V)>, fn(&'a (String, V)) -> (&'a String, &'a V)>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.iter().map(|(m, v)| (m, v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn insert_keeps_models_sorted_and_unique() {
        let mut m = Models::default();
        m.insert("b".to_string(), 2u32);
        m.insert("a".to_string(), 1);
        m.insert("c".to_string(), 3);
        m.insert("b".to_string(), 4);
        assert_eq!(
            m.iter().map(|(k, v)| (k.as_str(), *v)).collect::<Vec<_>>(),
            [("a", 1), ("b", 4), ("c", 3)]
        );
        assert_eq!(m.get("b"), Some(&4));
        assert!(!m.contains_key("d"));
        assert_eq!(m.last_key().map(String::as_str), Some("c"));
        assert_eq!(m.len(), 3);
    }
}
