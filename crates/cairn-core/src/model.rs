//! The graph's data model — [`Node`], [`Edge`], [`Validity`], [`SparseVector`] — and the
//! rules every stored value obeys. [`Node::validate`] and [`Edge::validate`] are the single
//! place those rules live; the decoder applies them too, so nothing invalid is ever
//! returned as data.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::ids::NodeId;
use crate::limits::*;
use crate::value::{Value, ValueProblem};

/// A validity interval `[valid_from_ms, valid_until_ms)` in milliseconds since the Unix
/// epoch; `None` leaves that end open (unbounded).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Validity {
    /// Inclusive start, or `None` for "since forever".
    pub valid_from_ms: Option<i64>,
    /// Exclusive end, or `None` for "until further notice".
    pub valid_until_ms: Option<i64>,
}

impl Validity {
    /// Always valid: both ends open.
    pub const ALWAYS: Validity = Validity {
        valid_from_ms: None,
        valid_until_ms: None,
    };

    /// An interval with the given ends (not checked; see [`Validity::check`]).
    pub const fn new(valid_from_ms: Option<i64>, valid_until_ms: Option<i64>) -> Validity {
        Validity {
            valid_from_ms,
            valid_until_ms,
        }
    }

    /// True iff `valid_from ≤ t < valid_until` (open ends unbounded).
    pub fn contains(&self, t_ms: i64) -> bool {
        self.valid_from_ms.is_none_or(|f| f <= t_ms) && self.valid_until_ms.is_none_or(|u| t_ms < u)
    }

    /// Refuses an empty interval (`valid_from >= valid_until`).
    pub fn check(&self) -> Result<(), (i64, i64)> {
        match (self.valid_from_ms, self.valid_until_ms) {
            (Some(f), Some(u)) if f >= u => Err((f, u)),
            _ => Ok(()),
        }
    }
}

/// A sparse vector: strictly increasing `u32` indices with finite `f32` weights.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct SparseVector {
    /// Strictly increasing dimension indices.
    pub indices: Vec<u32>,
    /// One finite weight per index.
    pub values: Vec<f32>,
}

impl SparseVector {
    /// Builds a sparse vector; call [`Node::validate`] (or [`SparseVector::check`]) to
    /// enforce the rules.
    pub fn new(indices: Vec<u32>, values: Vec<f32>) -> SparseVector {
        SparseVector { indices, values }
    }

    /// The first rule this vector breaks, if any.
    pub fn check(&self) -> Result<(), SparseProblem> {
        if self.indices.len() != self.values.len() {
            return Err(SparseProblem::LengthMismatch {
                indices: self.indices.len(),
                values: self.values.len(),
            });
        }
        if self.indices.len() > MAX_SPARSE_NNZ {
            return Err(SparseProblem::TooMany {
                len: self.indices.len(),
                max: MAX_SPARSE_NNZ,
            });
        }
        if let Some(pos) = self.indices.windows(2).position(|w| w[0] >= w[1]) {
            return Err(SparseProblem::NotIncreasing { position: pos + 1 });
        }
        if let Some(pos) = first_non_finite(&self.values) {
            return Err(SparseProblem::NonFinite { position: pos });
        }
        Ok(())
    }
}

/// What is wrong with a [`SparseVector`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SparseProblem {
    /// Different numbers of indices and values.
    LengthMismatch {
        /// Number of indices.
        indices: usize,
        /// Number of values.
        values: usize,
    },
    /// Indices not strictly increasing (unsorted or duplicate) at this position.
    NotIncreasing {
        /// Position of the first offending index.
        position: usize,
    },
    /// A NaN or infinite weight at this position.
    NonFinite {
        /// Position of the offending weight.
        position: usize,
    },
    /// More entries than the cap.
    TooMany {
        /// Entries given.
        len: usize,
        /// The cap.
        max: usize,
    },
}

impl fmt::Display for SparseProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SparseProblem::LengthMismatch { indices, values } => {
                write!(f, "{indices} indices but {values} values")
            }
            SparseProblem::NotIncreasing { position } => {
                write!(f, "indices not strictly increasing at position {position}")
            }
            SparseProblem::NonFinite { position } => {
                write!(f, "non-finite weight at position {position}")
            }
            SparseProblem::TooMany { len, max } => write!(f, "{len} entries, the limit is {max}"),
        }
    }
}

/// A node of the graph.
///
/// All collections are ordered (`BTreeSet`, `BTreeMap`), so a node's encoding — and so its
/// hash — depends only on its content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Node {
    /// Stable, caller-chosen id.
    pub id: NodeId,
    /// Labels (1..=128 bytes each, at most 64).
    #[serde(default)]
    pub labels: BTreeSet<String>,
    /// Properties.
    #[serde(default)]
    pub props: BTreeMap<String, Value>,
    /// Text payload (at most 1 MiB), indexed by BM25.
    #[serde(default)]
    pub text: String,
    /// Dense embeddings by model name; one dimension per model across the repo.
    #[serde(default)]
    pub embeddings: BTreeMap<String, Vec<f32>>,
    /// Sparse vectors by model name.
    #[serde(default)]
    pub sparse: BTreeMap<String, SparseVector>,
    /// When the fact the node states holds.
    #[serde(default)]
    pub validity: Validity,
}

impl Node {
    /// An empty node with this id: no labels, properties, text or vectors, always valid.
    pub fn new(id: NodeId) -> Node {
        Node {
            id,
            labels: BTreeSet::new(),
            props: BTreeMap::new(),
            text: String::new(),
            embeddings: BTreeMap::new(),
            sparse: BTreeMap::new(),
            validity: Validity::ALWAYS,
        }
    }

    /// Adds a label (builder style).
    pub fn with_label(mut self, label: impl Into<String>) -> Node {
        self.labels.insert(label.into());
        self
    }

    /// Sets the text (builder style).
    pub fn with_text(mut self, text: impl Into<String>) -> Node {
        self.text = text.into();
        self
    }

    /// Sets a property (builder style).
    pub fn with_prop(mut self, key: impl Into<String>, value: impl Into<Value>) -> Node {
        self.props.insert(key.into(), value.into());
        self
    }

    /// Sets a dense embedding (builder style).
    pub fn with_embedding(mut self, model: impl Into<String>, vector: Vec<f32>) -> Node {
        self.embeddings.insert(model.into(), vector);
        self
    }

    /// Sets a sparse vector (builder style).
    pub fn with_sparse(mut self, model: impl Into<String>, v: SparseVector) -> Node {
        self.sparse.insert(model.into(), v);
        self
    }

    /// Sets the validity interval (builder style).
    pub fn with_validity(mut self, validity: Validity) -> Node {
        self.validity = validity;
        self
    }

    /// Rewrites every `-0.0` as `+0.0` (embeddings, sparse weights, properties), so equal
    /// nodes hash equally. Applied by the transaction before validation.
    pub fn canonicalize(&mut self) {
        for v in self.embeddings.values_mut() {
            canonical_zeros(v);
        }
        for s in self.sparse.values_mut() {
            canonical_zeros(&mut s.values);
        }
        for v in self.props.values_mut() {
            v.canonicalize();
        }
    }

    /// Checks every rule that can be checked on the node alone (the per-model dimension
    /// rule needs the repo and is checked by the transaction).
    pub fn validate(&self) -> Result<(), ValidationError> {
        let subject = || Subject::Node(self.id.clone());
        if self.labels.len() > MAX_LABELS {
            return Err(ValidationError::TooMany {
                subject: subject(),
                field: "labels".into(),
                len: self.labels.len(),
                max: MAX_LABELS,
            });
        }
        for l in &self.labels {
            check_name(subject, "label", l)?;
        }
        check_props(subject, &self.props)?;
        if self.text.len() > MAX_TEXT_BYTES {
            return Err(ValidationError::TooLarge {
                subject: subject(),
                field: "text".into(),
                len: self.text.len(),
                max: MAX_TEXT_BYTES,
            });
        }
        if self.embeddings.len() > MAX_MODELS_PER_NODE || self.sparse.len() > MAX_MODELS_PER_NODE {
            return Err(ValidationError::TooMany {
                subject: subject(),
                field: "models".into(),
                len: self.embeddings.len().max(self.sparse.len()),
                max: MAX_MODELS_PER_NODE,
            });
        }
        for (model, v) in &self.embeddings {
            check_name(subject, "embedding model", model)?;
            if v.is_empty() || v.len() > MAX_EMBEDDING_DIM {
                return Err(ValidationError::BadDimension {
                    subject: subject(),
                    model: model.clone(),
                    dim: v.len(),
                    max: MAX_EMBEDDING_DIM,
                });
            }
            if let Some(position) = first_non_finite(v) {
                return Err(ValidationError::NonFinite {
                    subject: subject(),
                    field: format!("embeddings.{model}[{position}]"),
                });
            }
        }
        for (model, s) in &self.sparse {
            check_name(subject, "sparse model", model)?;
            s.check().map_err(|problem| ValidationError::BadSparse {
                subject: subject(),
                model: model.clone(),
                problem,
            })?;
        }
        check_validity(subject, &self.validity)
    }
}

/// The position of the first NaN or infinity of `v`. Blocks are first tested whole by a
/// loop without an early exit (vectorised: a node's vector is checked each time its
/// object is decoded), the failing block then searched.
pub(crate) fn first_non_finite(v: &[f32]) -> Option<usize> {
    const BLOCK: usize = 64;
    // A number is not finite when all its exponent bits are set.
    let bad = |x: &f32| x.to_bits() & 0x7f80_0000 == 0x7f80_0000;
    v.chunks(BLOCK).enumerate().find_map(|(i, block)| {
        if block.iter().fold(false, |any, x| any | bad(x)) {
            block.iter().position(bad).map(|p| i * BLOCK + p)
        } else {
            None
        }
    })
}

fn canonical_zeros(v: &mut [f32]) {
    for x in v {
        if *x == 0.0 {
            *x = 0.0;
        }
    }
}

/// The identity of an edge: (source, kind, target).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct EdgeKey {
    /// Source node.
    pub source: NodeId,
    /// Edge kind (1..=128 bytes).
    pub kind: String,
    /// Target node.
    pub target: NodeId,
}

impl fmt::Display for EdgeKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "({})-[{}]->({})", self.source, self.kind, self.target)
    }
}

/// A typed, weighted, directed edge.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Edge {
    /// Source node.
    pub source: NodeId,
    /// Edge kind.
    pub kind: String,
    /// Target node.
    pub target: NodeId,
    /// A finite weight; 1.0 by default.
    pub weight: f64,
    /// Properties.
    #[serde(default)]
    pub props: BTreeMap<String, Value>,
    /// When the relation holds.
    #[serde(default)]
    pub validity: Validity,
}

impl Edge {
    /// An edge of weight 1.0 with no properties, always valid.
    pub fn new(source: NodeId, kind: impl Into<String>, target: NodeId) -> Edge {
        Edge {
            source,
            kind: kind.into(),
            target,
            weight: 1.0,
            props: BTreeMap::new(),
            validity: Validity::ALWAYS,
        }
    }

    /// Sets the weight (builder style).
    pub fn with_weight(mut self, weight: f64) -> Edge {
        self.weight = weight;
        self
    }

    /// Sets the validity (builder style).
    pub fn with_validity(mut self, validity: Validity) -> Edge {
        self.validity = validity;
        self
    }

    /// The edge's identity.
    pub fn key(&self) -> EdgeKey {
        EdgeKey {
            source: self.source.clone(),
            kind: self.kind.clone(),
            target: self.target.clone(),
        }
    }

    /// Rewrites `-0.0` as `+0.0` in the weight and properties.
    pub fn canonicalize(&mut self) {
        if self.weight == 0.0 {
            self.weight = 0.0;
        }
        for v in self.props.values_mut() {
            v.canonicalize();
        }
    }

    /// Checks every rule that can be checked on the edge alone (endpoint existence is
    /// checked by the transaction against the commit).
    pub fn validate(&self) -> Result<(), ValidationError> {
        let subject = || Subject::Edge(Box::new(self.key()));
        check_name(subject, "kind", &self.kind)?;
        if !self.weight.is_finite() {
            return Err(ValidationError::NonFinite {
                subject: subject(),
                field: "weight".into(),
            });
        }
        check_props(subject, &self.props)?;
        check_validity(subject, &self.validity)
    }
}

/// What a validation error is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Subject {
    /// A node, by id.
    Node(NodeId),
    /// An edge, by identity (boxed: keeps errors small on the `Ok` path).
    Edge(Box<EdgeKey>),
}

impl fmt::Display for Subject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Subject::Node(id) => write!(f, "node \"{id}\""),
            Subject::Edge(k) => write!(f, "edge {k}"),
        }
    }
}

/// Input refused by validation. Every variant names the node or edge and the field.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ValidationError {
    /// A NaN or infinite number.
    #[error("{subject}: `{field}` is not a finite number")]
    NonFinite {
        /// Node or edge.
        subject: Subject,
        /// Path of the field.
        field: String,
    },
    /// An embedding whose length is 0 or above the cap.
    #[error("{subject}: embedding `{model}` has {dim} dimensions (allowed 1..={max})")]
    BadDimension {
        /// Node.
        subject: Subject,
        /// Model name.
        model: String,
        /// Dimension given.
        dim: usize,
        /// The cap.
        max: usize,
    },
    /// An embedding whose length differs from the one the repo has for that model.
    #[error("{subject}: embedding `{model}` has {got} dimensions, but the repo's `{model}` vectors have {expected}")]
    DimensionMismatch {
        /// Node.
        subject: Subject,
        /// Model name.
        model: String,
        /// The repo's dimension for the model.
        expected: usize,
        /// Dimension given.
        got: usize,
    },
    /// A sparse vector that breaks a rule.
    #[error("{subject}: sparse vector `{model}`: {problem}")]
    BadSparse {
        /// Node.
        subject: Subject,
        /// Model name.
        model: String,
        /// What is wrong.
        problem: SparseProblem,
    },
    /// `valid_from >= valid_until`.
    #[error("{subject}: validity is empty: valid_from {valid_from_ms} >= valid_until {valid_until_ms}")]
    EmptyValidity {
        /// Node or edge.
        subject: Subject,
        /// Start.
        valid_from_ms: i64,
        /// End.
        valid_until_ms: i64,
    },
    /// A name (label, kind, key, model) that is empty or too long.
    #[error("{subject}: {field} {name:?} must be 1..={max} bytes")]
    BadName {
        /// Node or edge.
        subject: Subject,
        /// Which kind of name.
        field: String,
        /// The name (cut to 64 chars).
        name: String,
        /// The cap.
        max: usize,
    },
    /// A value over its size cap.
    #[error("{subject}: `{field}` is {len} bytes, the limit is {max}")]
    TooLarge {
        /// Node or edge.
        subject: Subject,
        /// Field.
        field: String,
        /// Size given.
        len: usize,
        /// The cap.
        max: usize,
    },
    /// Too many items in a collection.
    #[error("{subject}: `{field}` has {len} entries, the limit is {max}")]
    TooMany {
        /// Node or edge.
        subject: Subject,
        /// Field.
        field: String,
        /// Count given.
        len: usize,
        /// The cap.
        max: usize,
    },
    /// Property values nested too deep.
    #[error("{subject}: property `{field}` nests deeper than {max}")]
    TooDeep {
        /// Node or edge.
        subject: Subject,
        /// Path of the property.
        field: String,
        /// The cap.
        max: usize,
    },
    /// An edge whose source or target does not exist in the commit.
    #[error("{subject}: endpoint `{missing}` does not exist")]
    MissingEndpoint {
        /// The edge.
        subject: Subject,
        /// The missing node.
        missing: NodeId,
    },
}

fn check_name(subject: impl Fn() -> Subject, field: &str, name: &str) -> Result<(), ValidationError> {
    if name.is_empty() || name.len() > MAX_NAME_BYTES {
        return Err(ValidationError::BadName {
            subject: subject(),
            field: field.to_string(),
            name: name.chars().take(64).collect(),
            max: MAX_NAME_BYTES,
        });
    }
    Ok(())
}

fn check_props(subject: impl Fn() -> Subject, props: &BTreeMap<String, Value>) -> Result<(), ValidationError> {
    let mut approx_bytes = 0usize;
    for (k, v) in props {
        check_name(&subject, "property key", k)?;
        // Depth counts from the property itself: a top-level list is depth 1, so lists
        // and maps may sit at `check`'s depths 0..MAX_VALUE_DEPTH.
        v.check(MAX_VALUE_DEPTH).map_err(|(path, problem)| match problem {
            ValueProblem::NonFinite => ValidationError::NonFinite {
                subject: subject(),
                field: format!("props.{k}{path}"),
            },
            ValueProblem::TooDeep => ValidationError::TooDeep {
                subject: subject(),
                field: format!("props.{k}{path}"),
                max: MAX_VALUE_DEPTH,
            },
        })?;
        approx_bytes += k.len() + value_size(v);
    }
    if approx_bytes > MAX_PROPS_BYTES {
        return Err(ValidationError::TooLarge {
            subject: subject(),
            field: "props".into(),
            len: approx_bytes,
            max: MAX_PROPS_BYTES,
        });
    }
    Ok(())
}

/// Payload bytes of a value (strings and numbers), a close lower bound of its encoding.
fn value_size(v: &Value) -> usize {
    match v {
        Value::Null | Value::Bool(_) => 1,
        Value::Int(_) | Value::Float(_) => 8,
        Value::String(s) => s.len(),
        Value::List(items) => items.iter().map(value_size).sum::<usize>() + 8,
        Value::Map(m) => m.iter().map(|(k, v)| k.len() + value_size(v)).sum::<usize>() + 8,
    }
}

fn check_validity(subject: impl Fn() -> Subject, v: &Validity) -> Result<(), ValidationError> {
    v.check().map_err(|(f, u)| ValidationError::EmptyValidity {
        subject: subject(),
        valid_from_ms: f,
        valid_until_ms: u,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(s: &str) -> NodeId {
        NodeId::new(s).unwrap()
    }

    #[test]
    fn validity_contains_half_open() {
        let v = Validity::new(Some(10), Some(20));
        assert!(!v.contains(9));
        assert!(v.contains(10));
        assert!(v.contains(19));
        assert!(!v.contains(20));
        assert!(Validity::ALWAYS.contains(i64::MIN));
        assert!(Validity::new(Some(5), Some(5)).check().is_err());
    }

    #[test]
    fn node_validation_names_field() {
        let n = Node::new(id("a")).with_embedding("m", vec![1.0, f32::NAN]);
        let e = n.validate().unwrap_err();
        assert!(e.to_string().contains("embeddings.m[1]"), "{e}");
        let n = Node::new(id("a")).with_sparse("s", SparseVector::new(vec![3, 3], vec![1.0, 1.0]));
        assert!(matches!(n.validate(), Err(ValidationError::BadSparse { .. })));
        let n = Node::new(id("a")).with_validity(Validity::new(Some(2), Some(1)));
        assert!(matches!(n.validate(), Err(ValidationError::EmptyValidity { .. })));
        let n = Node::new(id("a")).with_text("x".repeat(MAX_TEXT_BYTES + 1));
        assert!(matches!(n.validate(), Err(ValidationError::TooLarge { .. })));
        let n = Node::new(id("a")).with_label("");
        assert!(matches!(n.validate(), Err(ValidationError::BadName { .. })));
    }

    #[test]
    fn edge_validation() {
        let e = Edge::new(id("a"), "cites", id("b")).with_weight(f64::INFINITY);
        assert!(matches!(e.validate(), Err(ValidationError::NonFinite { .. })));
        assert!(Edge::new(id("a"), "cites", id("b")).validate().is_ok());
    }
}
