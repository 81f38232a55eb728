//! [`Retrieval`]: the agent-facing builder. Methods record into a [`RetrieveSpec`];
//! [`Retrieval::execute`] validates, resolves the commit and runs the pipeline.

use std::sync::Arc;

use cairn_core::{CommitId, SparseVector, Value};

use crate::embed::Embedder;
use crate::error::RetrieveError;
use crate::execute::Plugins;
use crate::expand::GraphExpand;
use crate::fusion::Fusion;
use crate::plan::{resolve_for, Plan, QueryEmbedding};
use crate::planner::{PlannerMode, QueryPlanner};
use crate::rerank::Reranker;
use crate::result::RetrievalResult;
use crate::run::{empty_result, run_plan};
use crate::source::{RetrievalSource, SourceError};
use crate::spec::{RetrieveSpec, SparseQuery, ValidAt, VectorQuery, WhereClause};
use crate::tokens::TokenEstimator;

/// A retrieval being described. Every method consumes and returns the builder and only
/// records; [`Retrieval::execute`] checks everything and returns a typed error for bad
/// input.
///
/// ```
/// use cairn_retrieve::{GraphExpand, Retrieval, RetrievalSource, RetrieveError};
///
/// fn ask(source: &impl RetrievalSource, embedding: &[f32]) -> Result<(), RetrieveError> {
///     let result = Retrieval::new(source)
///         .label("Document")
///         .vector("minilm", embedding)
///         .text("how do wings stall")
///         .expand(GraphExpand::hops(2).max_nodes(50))
///         .token_budget(2000)
///         .execute()?;
///     for item in &result.items {
///         println!("{} {:.3} {}", item.rank, item.score, item.id);
///     }
///     Ok(())
/// }
/// ```
pub struct Retrieval<S> {
    source: S,
    spec: RetrieveSpec,
    plugins: Plugins,
}

impl<S: RetrievalSource> Retrieval<S> {
    /// An empty retrieval over `source` (add at least one lane).
    pub fn new(source: S) -> Retrieval<S> {
        Retrieval::from_spec(source, RetrieveSpec::default())
    }

    /// A retrieval over `source` described by `spec` (e.g. parsed from JSON).
    pub fn from_spec(source: S, spec: RetrieveSpec) -> Retrieval<S> {
        Retrieval {
            source,
            spec,
            plugins: Plugins::default(),
        }
    }

    /// The spec recorded so far.
    pub fn spec(&self) -> &RetrieveSpec {
        &self.spec
    }

    /// Adds the BM25 lane `text` with this query (also the reranker's and embedder's
    /// query). A second call replaces the first.
    pub fn text(mut self, query: impl Into<String>) -> Self {
        self.spec.text = Some(query.into());
        self
    }

    /// Adds the dense lane `dense:<model>` with this query vector (replaces an earlier one).
    pub fn vector(mut self, model: impl Into<String>, embedding: &[f32]) -> Self {
        self.spec.vector = Some(VectorQuery {
            model: model.into(),
            embedding: embedding.to_vec(),
        });
        self
    }

    /// Adds the sparse lane `sparse:<model>` with this query vector (replaces an earlier one).
    pub fn sparse(mut self, model: impl Into<String>, query: SparseVector) -> Self {
        self.spec.sparse = Some(SparseQuery {
            model: model.into(),
            indices: query.indices,
            values: query.values,
        });
        self
    }

    /// Keeps only nodes with this label (repeat for "all of").
    pub fn label(mut self, label: impl Into<String>) -> Self {
        self.spec.labels_all.push(label.into());
        self
    }

    /// Keeps only nodes with at least one of the labels given by the calls to this method.
    pub fn any_label(mut self, label: impl Into<String>) -> Self {
        self.spec.labels_any.push(label.into());
        self
    }

    /// Adds a property gate.
    pub fn filter(mut self, clause: WhereClause) -> Self {
        self.spec.where_clauses.push(clause);
        self
    }

    /// Keeps nodes whose property `key` equals `value`.
    pub fn where_eq(self, key: impl Into<String>, value: impl Into<Value>) -> Self {
        self.filter(WhereClause::eq(key, value))
    }

    /// Keeps nodes whose property `key` equals one of `values`.
    pub fn where_in(self, key: impl Into<String>, values: Vec<Value>) -> Self {
        self.filter(WhereClause::is_in(key, values))
    }

    /// Keeps nodes whose numeric property `key` lies in `[min, max]` (`None`: open end).
    pub fn where_range(self, key: impl Into<String>, min: Option<f64>, max: Option<f64>) -> Self {
        self.filter(WhereClause::range(key, min, max))
    }

    /// Keeps nodes that have property `key`.
    pub fn where_exists(self, key: impl Into<String>) -> Self {
        self.filter(WhereClause::exists(key))
    }

    /// Keeps nodes (and walks edges) valid at `t_ms`: `valid_from ≤ t < valid_until`.
    /// Without this, the validity time is the resolved commit's timestamp.
    pub fn valid_at(mut self, t_ms: i64) -> Self {
        self.spec.valid_at = Some(ValidAt::At(t_ms));
        self
    }

    /// Switches the validity gate off.
    pub fn all_time(mut self) -> Self {
        self.spec.valid_at = Some(ValidAt::AllTime);
        self
    }

    /// List mode: no lane; the nodes that pass the gates, in id order, `limit` at a time
    /// (see [`Retrieval::after`] for the next page).
    ///
    /// ```
    /// # use cairn_retrieve::Retrieval;
    /// # fn page<S: cairn_retrieve::RetrievalSource>(src: &S) -> Result<(), cairn_retrieve::RetrieveError> {
    /// let first = Retrieval::new(src).list().label("Fact").limit(50).execute()?;
    /// if let Some(last) = first.items.last() {
    ///     let next = Retrieval::new(src).list().label("Fact").limit(50).after(last.id.as_str()).execute()?;
    /// }
    /// # Ok(()) }
    /// ```
    pub fn list(mut self) -> Self {
        self.spec.list = true;
        self
    }

    /// Explains every item ([`RetrievedItem::explain`](crate::RetrievedItem::explain)).
    pub fn explain(mut self) -> Self {
        self.spec.explain = true;
        self
    }

    /// List mode: start after node id `id`.
    pub fn after(mut self, id: impl Into<String>) -> Self {
        self.spec.after = Some(id.into());
        self
    }

    /// Reads commit `commit` (the typed form of [`Retrieval::at`]).
    pub fn at_commit(self, commit: &CommitId) -> Self {
        self.at(commit.to_hex())
    }

    /// The validity time as a [`SystemTime`](std::time::SystemTime) (the typed form of
    /// [`Retrieval::valid_at`]; saturating far outside `i64` ms).
    pub fn valid_at_time(self, t: std::time::SystemTime) -> Self {
        let ms = match t.duration_since(std::time::UNIX_EPOCH) {
            Ok(d) => i64::try_from(d.as_millis()).unwrap_or(i64::MAX),
            Err(e) => i64::try_from(e.duration().as_millis()).map_or(i64::MIN, |ms| -ms),
        };
        self.valid_at(ms)
    }

    /// Reads revision `rev` instead of the branch head (see [`RetrievalSource::resolve`]).
    pub fn at(mut self, rev: impl Into<String>) -> Self {
        self.spec.at = Some(rev.into());
        self
    }

    /// Turns on graph expansion: from the top candidates, along edges, to nodes the
    /// lanes did not find. The gates hold for what it adds: the walk passes through nodes
    /// the label or property gates exclude (so `Fact → Person → Fact` works under a `Fact`
    /// gate), but adds only nodes that pass every gate. When it reached nodes only on the
    /// excluded side and added none, the result warns
    /// ([`WarningCode::ExpansionGated`](crate::WarningCode::ExpansionGated)).
    pub fn expand(mut self, expand: GraphExpand) -> Self {
        self.spec.expand = Some(expand);
        self
    }

    /// Sets the fusion method, `k` and weights.
    pub fn fusion(mut self, fusion: Fusion) -> Self {
        self.spec.fusion = Some(fusion);
        self
    }

    /// Sets the packing budget in estimated tokens (default unlimited).
    pub fn token_budget(mut self, tokens: usize) -> Self {
        self.spec.token_budget = Some(tokens);
        self
    }

    /// Sets the most items returned (default 10).
    pub fn limit(mut self, k: usize) -> Self {
        self.spec.limit = Some(k);
        self
    }

    /// Sets how many characters of node text each item renders (default 1000).
    pub fn text_cap(mut self, chars: usize) -> Self {
        self.spec.text_cap = Some(chars);
        self
    }

    /// Sets how many candidates each lane fetches (default `max(100, 4·limit)`).
    pub fn depth(mut self, depth: usize) -> Self {
        self.spec.depth = Some(depth);
        self
    }

    /// Searches the dense lane approximately, through the HNSW unit graphs, for `depth`
    /// candidates per lane (each rescored exactly). The graphs of a commit are built on
    /// the first such query (seconds per 32k-vector unit, in parallel), stored, and shared
    /// by every commit holding the same unit; never on a query that does not use them.
    ///
    /// **Exact or walk, per unit.** Each unit's graph carries its *reach*, measured when it
    /// is built: the smallest walk (`ef` of 16…512) that finds ≥ 98 % of the 10 nearest
    /// neighbours of 32 of its own rows. A query walks a unit's graph with
    /// `ef = max(floor, reach, min(depth, ⌈3·depth / units⌉))` (units split the nodes by
    /// id, so each holds about its share of the top `depth`; `floor` is 64 for one unit,
    /// `64 / ⌈√units⌉` for more, at least 16: [`ann_floor`](cairn_index::view::ann_floor))
    /// and rescores what it finds, unless the unit is
    /// scanned exactly — with the exact lane's int8-bounded scan — because
    ///
    /// * its graph reaches no `ef` (data with no structure to navigate by, e.g. uniform
    ///   vectors in hundreds of dimensions, where a walk would visit most of the unit), or
    /// * it holds fewer than [`ANN_MIN_ROWS`](cairn_index::ANN_MIN_ROWS) vectors, or
    /// * the gates keep at most `64·ef` of its rows (a filtered walk visits about
    ///   `ef / selectivity` rows, more than such a scan reads).
    ///
    /// **Which graphs.** A commit walks the units of a base commit, a nearby first-parent
    /// ancestor whose chunks differ little from its own, and scans its chunks newer than
    /// the base exactly; so a small commit builds no graph (storage-format §7.4.1).
    ///
    /// Every decision depends on the commit, its history, counts and stored measurements
    /// only, never on what is cached, so the same commit and query give the same bytes
    /// everywhere. Measured:
    /// recall@10 against exact ≥ 0.995 on Cranfield, CISI and Vaswani (MiniLM), ≥ 0.95 on
    /// seeded uniform and clustered sets (`cairn-index/tests/ann_recall.rs`).
    ///
    /// ```
    /// # use cairn_retrieve::Retrieval;
    /// # fn ask<S: cairn_retrieve::RetrievalSource>(src: &S, q: &[f32]) -> Result<(), cairn_retrieve::RetrieveError> {
    /// let deep = Retrieval::new(src).vector("minilm", q).approximate(500).execute()?;
    /// let usual = Retrieval::new(src).vector("minilm", q).approximate_default().execute()?;
    /// # Ok(()) }
    /// ```
    pub fn approximate(mut self, depth: usize) -> Self {
        self.spec.ann = Some(true);
        self.spec.depth = Some(depth);
        self
    }

    /// [`Retrieval::approximate`] at the default depth (`"ann": true` in a spec, without
    /// `depth`).
    pub fn approximate_default(mut self) -> Self {
        self.spec.ann = Some(true);
        self
    }

    /// Searches the dense lane exactly, whatever the repository's size (the default below
    /// [`ANN_DEFAULT_MIN_VECTORS`](crate::spec::ANN_DEFAULT_MIN_VECTORS) vectors).
    pub fn exact(mut self) -> Self {
        self.spec.ann = Some(false);
        self
    }

    /// Renders these properties into each item, in this order.
    pub fn render_props(mut self, keys: &[&str]) -> Self {
        self.spec.render_props = keys.iter().map(|k| k.to_string()).collect();
        self
    }

    /// Sets how many top items the reranker reorders (default 50).
    pub fn rerank_top_n(mut self, n: usize) -> Self {
        self.spec.rerank_top_n = Some(n);
        self
    }

    /// Reranks the top items with `reranker`.
    pub fn rerank_with(mut self, reranker: impl Reranker + 'static) -> Self {
        self.plugins.reranker = Some(Arc::new(reranker));
        self
    }

    /// Estimates tokens with `estimator` instead of the default `ceil(chars / 4)`.
    pub fn token_estimator(mut self, estimator: impl TokenEstimator + 'static) -> Self {
        self.plugins.token_estimator = Some(Arc::new(estimator));
        self
    }

    /// Embeds the query text with `embedder` for dense model `model` when no vector is
    /// given (see [`Embedder`]), instead of the source's query embedder
    /// ([`RetrievalSource::query_embedder`]); its failure fails the retrieval.
    pub fn embed_text_with(mut self, model: impl Into<String>, embedder: impl Embedder + 'static) -> Self {
        self.plugins.embedder = Some((model.into(), Arc::new(embedder)));
        self
    }

    /// Embeds the query text with the source's query embedder called `name` (for a
    /// repository, one set with `Repo::set_embedder`; spec field `embedder`) rather than
    /// its default one. Its failure, or a source without it, fails the retrieval.
    pub fn embedder(mut self, name: impl Into<String>) -> Self {
        self.spec.embedder = Some(name.into());
        self
    }

    /// Never embeds the query text (spec `"embed": false`, `cairn retrieve --no-embed`):
    /// `text` drives the BM25 lane only, and the dense lane runs only on a given
    /// [`vector`](Self::vector).
    pub fn no_embed(mut self) -> Self {
        self.spec.embed = Some(false);
        self
    }

    /// Plans the query with `planner` instead of the default [`RulePlanner`](crate::RulePlanner)
    /// (see [`crate::planner`]).
    pub fn planner(mut self, planner: impl QueryPlanner + 'static) -> Self {
        self.plugins.planner = Some(Arc::new(planner));
        self.spec.planner = None;
        self
    }

    /// Switches query planning off (`"planner": "none"`): no rewrite, no soft boost.
    pub fn no_planner(mut self) -> Self {
        self.spec.planner = Some(PlannerMode::None);
        self
    }

    /// Replaces all plugins at once (shared ones, e.g. for a batch).
    pub fn plugins(mut self, plugins: Plugins) -> Self {
        self.plugins = plugins;
        self
    }

    /// Validates the settings, resolves the commit (`at`, or the branch head) and runs the
    /// pipeline. Reads no clock: the default validity time is the commit's timestamp.
    ///
    /// On a branch with no commits yet (a new repository), a retrieval at the head — no
    /// `at`, or `at("HEAD")` — answers with no items and a
    /// [`WarningCode::EmptyRepository`](crate::WarningCode::EmptyRepository) warning
    /// (`commit` is `None`); the settings are still checked first.
    pub fn execute(self) -> Result<RetrievalResult, RetrieveError> {
        let embedding = QueryEmbedding::choose(&self.source, &self.spec, &self.plugins)?;
        let plan = Plan::new(&self.spec, embedding)?;
        let at = self.spec.at.as_deref();
        match resolve_for(&self.source, at, &plan) {
            Ok(resolved) => run_plan(&resolved, &plan, &self.plugins),
            Err(RetrieveError::Source(SourceError::NoCommits { branch })) if at.is_none_or(|a| a == "HEAD") => {
                Ok(empty_result(&plan, &branch))
            }
            Err(e) => Err(e),
        }
    }
}
