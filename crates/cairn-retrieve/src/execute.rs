//! The pipeline on a resolved commit: validate → gates → plan → lanes → fusion (+ soft
//! boosts) → expansion → rerank → packing → result. [`execute_spec`] is the whole of it, with no repository in
//! sight, so every stage is testable over in-memory indexes; [`Plugins`] are the models a
//! retrieval may use. The stages live apart: `plan.rs` checks a spec into a plan (and
//! embeds its query text), `run.rs` runs a plan on a resolved commit.

use std::fmt;
use std::sync::Arc;

use crate::embed::Embedder;
use crate::error::RetrieveError;
use crate::plan::{Plan, QueryEmbedding};
use crate::planner::QueryPlanner;
use crate::rerank::Reranker;
use crate::result::RetrievalResult;
use crate::run::run_plan;
use crate::source::{ResolvedCommit, SourceCause, SourceError};
use crate::spec::RetrieveSpec;
use crate::tokens::TokenEstimator;

/// The optional models a retrieval can use: a reranker, a token estimator (default
/// [`CharRatioEstimator`](crate::CharRatioEstimator)), a query embedder for one dense model and a query planner
/// (default [`RulePlanner`](crate::RulePlanner)).
#[derive(Clone, Default)]
pub struct Plugins {
    /// Plans the query (rewrites, soft boosts); [`RulePlanner`](crate::RulePlanner) if `None`, none at all
    /// with the spec's `"planner": "none"`.
    pub planner: Option<Arc<dyn QueryPlanner>>,
    /// Reorders the top `rerank_top_n` items; none by default.
    pub reranker: Option<Arc<dyn Reranker>>,
    /// Estimates tokens for packing; [`CharRatioEstimator`](crate::CharRatioEstimator) if `None`.
    pub token_estimator: Option<Arc<dyn TokenEstimator>>,
    /// `(dense model, embedder)`: embeds the spec's `text` when it has no `vector`.
    pub embedder: Option<(String, Arc<dyn Embedder>)>,
}

impl fmt::Debug for Plugins {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Plugins")
            .field("reranker", &self.reranker.is_some())
            .field("token_estimator", &self.token_estimator.is_some())
            .field("embedder", &self.embedder.as_ref().map(|(m, _)| m))
            .field("planner", &self.planner.as_ref().map(|p| p.name().to_string()))
            .finish()
    }
}

/// Runs `spec` on an already-resolved commit (the spec's `at` is not consulted: the
/// caller resolved it). See the crate docs for every stage.
///
/// Errors: any invalid setting ([`RetrieveError::NoLane`],
/// [`RetrieveError::InvalidSetting`]), a lane the indexes refuse
/// ([`RetrieveError::Index`]), an embedder failure, or a node the source cannot load.
///
/// ```
/// use std::sync::Arc;
/// use cairn_core::{CommitId, Hash, Node, NodeId};
/// use cairn_index::{CommitIndexes, IndexParams};
/// use cairn_retrieve::{execute_spec, Plugins, ResolvedCommit, RetrieveSpec};
///
/// let node = Node::new(NodeId::new("doc-1").unwrap()).with_text("how wings stall");
/// let nodes = vec![(Hash::of(b"doc-1"), node)];
/// let commit = ResolvedCommit {
///     commit: CommitId(Hash::of(b"commit")),
///     timestamp_ms: 0,
///     indexes: Arc::new(CommitIndexes::build(Hash::of(b"key"), &IndexParams::default(), &nodes, &[])),
///     repairs: Vec::new(),
/// };
/// let spec = RetrieveSpec::from_json(r#"{"text": "stall"}"#)?;
/// let result = execute_spec(&commit, &spec, &Plugins::default())?;
/// assert_eq!(result.items[0].id.as_str(), "doc-1");
/// assert_eq!(result.items[0].text, "id: doc-1\ntext: how wings stall");
/// # Ok::<(), cairn_retrieve::RetrieveError>(())
/// ```
pub fn execute_spec(
    resolved: &ResolvedCommit,
    spec: &RetrieveSpec,
    plugins: &Plugins,
) -> Result<RetrievalResult, RetrieveError> {
    // The same embedder policy as a retrieval over a source, with no source embedder:
    // the builder's own (unless `"embed": false`), and a named one is an error.
    let plan = Plan::new(spec, QueryEmbedding::choose(&NoSource, spec, plugins)?)?;
    if !resolved.indexes.satisfies(&plan.needs()) {
        return Err(RetrieveError::Source(SourceError::Storage(SourceCause::message(
            "the resolved commit's index view lacks parts this spec reads",
        ))));
    }
    run_plan(resolved, &plan, plugins)
}

/// A source with nothing behind it, for [`execute_spec`]'s embedder policy (the commit is
/// already resolved, and there is no query embedder but the builder's).
struct NoSource;

impl crate::source::RetrievalSource for NoSource {
    fn resolve(&self, _at: Option<&str>, _needs: &cairn_index::IndexNeeds) -> Result<ResolvedCommit, SourceError> {
        Err(SourceError::Storage(SourceCause::message(
            "execute_spec resolves nothing",
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cairn_core::{CommitId, Hash, Node, NodeId};
    use cairn_index::{CommitIndexes, IndexParams};

    struct Fixed;

    impl Embedder for Fixed {
        fn embed(&self, _text: &str) -> Result<Vec<f32>, crate::embed::EmbedError> {
            Ok(vec![1.0, 0.0])
        }
    }

    fn lanes(spec: &str) -> Result<Vec<String>, RetrieveError> {
        let node = Node::new(NodeId::new("a").unwrap())
            .with_text("how wings stall")
            .with_embedding("m", vec![1.0, 0.0]);
        let commit = ResolvedCommit {
            commit: CommitId(Hash::of(b"c")),
            timestamp_ms: 0,
            indexes: Arc::new(CommitIndexes::build(
                Hash::of(b"k"),
                &IndexParams::default(),
                &[(Hash::of(b"a"), node)],
                &[],
            )),
            repairs: Vec::new(),
        };
        let plugins = Plugins {
            embedder: Some(("m".into(), Arc::new(Fixed))),
            ..Plugins::default()
        };
        let r = execute_spec(&commit, &RetrieveSpec::from_json(spec)?, &plugins)?;
        Ok(r.lanes.into_iter().map(|l| l.name).collect())
    }

    #[test]
    fn execute_spec_follows_the_embedder_policy() {
        assert_eq!(lanes(r#"{"text": "stall"}"#).unwrap(), ["dense:m", "text"]);
        assert_eq!(lanes(r#"{"text": "stall", "embed": false}"#).unwrap(), ["text"]);
        // No source: a named embedder cannot be had.
        assert!(matches!(
            lanes(r#"{"text": "stall", "embedder": "m"}"#),
            Err(RetrieveError::Embedder { .. })
        ));
    }
}
