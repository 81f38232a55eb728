//! Graph expansion: from the top fused candidates (the *seeds*), walk edges a few hops and
//! bring in neighbours, scored on the same scale as the candidates themselves.
//!
//! ## Scores
//!
//! With expansion on, every item's score lives in `[0, α + β]`:
//!
//! * a fused candidate `c` scores `α·n(c) + β`, where `n(c)` is its fused score min-max
//!   normalised over the window of candidates competing for the result — the top
//!   `limit + max_nodes` — so `n(top) = 1`, `n = 0` at the window's last candidate and
//!   below it (`n = 1` for all if the window's scores are equal). Dividing by the top
//!   score instead would keep every direct hit near 1 under RRF, whose scores are nearly
//!   flat at the top, and no expanded node could ever win a place;
//! * a node `v` reached from seed `s` over a path of `d ≥ 1` edges scores
//!   `α·n(s)·γ^d + β·exp(−d/τ)`.
//!
//! Defaults α = 0.7, β = 0.3, τ = 2, γ = 0.5. A node reached several ways — or reached and
//! also a fused candidate — keeps its best score; ties go to the shorter path, then to the
//! lexicographically smaller path of ordinals (seed first). Edge weights do not enter the
//! score (weights in real graphs are on arbitrary scales).
//!
//! So a neighbour of the top seed scores `0.35 + 0.3·e^{−1/2} ≈ 0.53` and outranks the
//! candidates whose normalised score is below ≈ 0.5: it wins a place over weak direct
//! hits, not over strong ones. Why γ = 0.5 and not 1 (no decay): measured on CISI, whose
//! `links.tsv` gives every document ~53 neighbours
//! (`crates/cairn-eval/tests/eval_hybrid.rs`, hybrid RRF, limit 100): without expansion
//! nDCG@10 0.4481 / R@100 0.4978; γ = 1: 0.3489 / 0.2774
//! (neighbours of the top seeds crowd out the direct hits); γ = 0.5: 0.4481 / 0.4212 (the
//! head is intact, neighbours take places in the tail). CISI's links do not raise
//! Recall@100 at any setting tried: expansion is for bringing in the connected context an
//! agent needs, and stays off by default.
//!
//! ## Walk
//!
//! Seeds are the top `seeds` candidates (default: the retrieval's `limit`), walked one at a
//! time in rank order, each breadth-first up to `hops` edges: a node's neighbours are
//! visited in ordinal (node-id) order, so the first path found to a node is its shortest
//! and, among those, its lexicographically smallest. Edges are followed in `direction`,
//! only of the `kinds` listed (all if empty), and only if they hold at the validity time.
//! The walk passes only through nodes that exist at the validity time; it may pass through
//! nodes that fail the label or property gates (so `Document → Entity → Document` links
//! work under a `Document` label gate), but only nodes passing every gate are added. At
//! most `max_nodes` new nodes are added — the best by `(score desc, distance asc, path)`
//! — and the whole walk examines at most [`MAX_EXPANSION_VISITS`] edges (beyond that it
//! stops and the result carries a warning).

use std::collections::BTreeMap;

use cairn_index::{AdjacentEdge, CommitIndexes, Ordinal};
use roaring::RoaringBitmap;
use serde::{Deserialize, Serialize};

use crate::error::RetrieveError;
use crate::gates::Gate;

/// Default weight of the (normalised) seed score.
pub const DEFAULT_ALPHA: f64 = 0.7;
/// Default weight of the distance term.
pub const DEFAULT_BETA: f64 = 0.3;
/// Default distance decay constant (in hops).
pub const DEFAULT_TAU: f64 = 2.0;
/// Default per-hop factor γ on the seed term (module docs).
pub const DEFAULT_HOP_DECAY: f64 = 0.5;
/// Default number of expanded nodes added.
pub const DEFAULT_MAX_NODES: usize = 50;
/// The most hops accepted.
pub const MAX_HOPS: u32 = 8;
/// The most edges one expansion examines before it stops (bounds the work of a query on
/// a dense graph).
pub const MAX_EXPANSION_VISITS: usize = 1_000_000;

/// Which edges a walk follows from a node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// Edges leaving the node.
    Out,
    /// Edges arriving at the node.
    In,
    /// Both.
    #[default]
    Both,
}

/// Graph expansion settings. In JSON: `{"hops", "max_nodes", "direction": "out"|"in"|"both",
/// "kinds", "alpha", "beta", "tau", "hop_decay", "seeds"}`, every field optional. See the
/// [module docs](self) for the walk and the score.
///
/// ```
/// use cairn_retrieve::{Direction, GraphExpand};
/// let e = GraphExpand::hops(2).max_nodes(20).direction(Direction::Out).kind("cites");
/// assert_eq!((e.hops, e.max_nodes, e.alpha, e.beta, e.tau), (2, 20, 0.7, 0.3, 2.0));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct GraphExpand {
    /// Most edges from a seed (1..=[`MAX_HOPS`]); default 1.
    pub hops: u32,
    /// Most nodes added (≥ 1); default [`DEFAULT_MAX_NODES`].
    pub max_nodes: usize,
    /// Edge direction; default both.
    pub direction: Direction,
    /// Edge kinds followed; empty means all.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub kinds: Vec<String>,
    /// Weight of the normalised seed score (finite, ≥ 0).
    pub alpha: f64,
    /// Weight of `exp(−distance/τ)` (finite, ≥ 0; `α + β > 0`).
    pub beta: f64,
    /// Distance decay in hops (finite, > 0).
    pub tau: f64,
    /// How many top candidates seed the walk; default the retrieval's `limit`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seeds: Option<usize>,
    /// γ, the factor applied to the seed term per hop (in `(0, 1]`).
    pub hop_decay: f64,
}

impl Default for GraphExpand {
    fn default() -> Self {
        GraphExpand {
            hops: 1,
            max_nodes: DEFAULT_MAX_NODES,
            direction: Direction::Both,
            kinds: Vec::new(),
            alpha: DEFAULT_ALPHA,
            beta: DEFAULT_BETA,
            tau: DEFAULT_TAU,
            seeds: None,
            hop_decay: DEFAULT_HOP_DECAY,
        }
    }
}

impl GraphExpand {
    /// Expansion up to `hops` edges from each seed, other settings default.
    pub fn hops(hops: u32) -> GraphExpand {
        GraphExpand {
            hops,
            ..GraphExpand::default()
        }
    }
    /// Sets the most nodes added.
    pub fn max_nodes(mut self, max_nodes: usize) -> GraphExpand {
        self.max_nodes = max_nodes;
        self
    }
    /// Sets the edge direction.
    pub fn direction(mut self, direction: Direction) -> GraphExpand {
        self.direction = direction;
        self
    }
    /// Adds an edge kind to follow (with none, all kinds are followed).
    pub fn kind(mut self, kind: impl Into<String>) -> GraphExpand {
        self.kinds.push(kind.into());
        self
    }
    /// Sets α, the weight of the normalised seed score.
    pub fn alpha(mut self, alpha: f64) -> GraphExpand {
        self.alpha = alpha;
        self
    }
    /// Sets β, the weight of the distance term.
    pub fn beta(mut self, beta: f64) -> GraphExpand {
        self.beta = beta;
        self
    }
    /// Sets τ, the distance decay in hops.
    pub fn tau(mut self, tau: f64) -> GraphExpand {
        self.tau = tau;
        self
    }
    /// Sets γ, the per-hop factor on the seed term.
    pub fn hop_decay(mut self, gamma: f64) -> GraphExpand {
        self.hop_decay = gamma;
        self
    }
    /// Sets how many top candidates seed the walk.
    pub fn seeds(mut self, seeds: usize) -> GraphExpand {
        self.seeds = Some(seeds);
        self
    }

    /// Checks every setting.
    pub(crate) fn check(&self) -> Result<(), RetrieveError> {
        let bad = |field: &str, reason: String| Err(RetrieveError::invalid(format!("expand.{field}"), reason));
        if self.hops == 0 || self.hops > MAX_HOPS {
            return bad("hops", format!("must be in 1..={MAX_HOPS}, got {}", self.hops));
        }
        if self.max_nodes == 0 {
            return bad("max_nodes", "must be at least 1".into());
        }
        if self.seeds == Some(0) {
            return bad("seeds", "must be at least 1".into());
        }
        if let Some(i) = self.kinds.iter().position(String::is_empty) {
            return bad(&format!("kinds[{i}]"), "an edge kind is empty".into());
        }
        for (field, v) in [("alpha", self.alpha), ("beta", self.beta)] {
            if !(v.is_finite() && v >= 0.0) {
                return bad(field, format!("must be a finite number ≥ 0, got {v}"));
            }
        }
        if self.alpha + self.beta <= 0.0 {
            return bad("alpha", "alpha and beta cannot both be 0".into());
        }
        if !(self.hop_decay.is_finite() && self.hop_decay > 0.0 && self.hop_decay <= 1.0) {
            return bad("hop_decay", format!("must be in (0, 1], got {}", self.hop_decay));
        }
        if !(self.tau.is_finite() && self.tau > 0.0) {
            return bad("tau", format!("must be a finite number > 0, got {}", self.tau));
        }
        Ok(())
    }

    /// The score of a fused candidate whose normalised fused score is `norm`.
    pub(crate) fn candidate_score(&self, norm: f64) -> f64 {
        self.alpha * norm + self.beta
    }

    /// The score of a node `distance` edges from a seed whose normalised score is `norm`:
    /// `α·norm·γ^distance + β·exp(−distance/τ)`.
    pub(crate) fn reach_score(&self, norm: f64, distance: u32) -> f64 {
        let hops = i32::try_from(distance).unwrap_or(i32::MAX);
        self.alpha * norm * self.hop_decay.powi(hops) + self.beta * (-f64::from(distance) / self.tau).exp()
    }
}

/// Edge lists by ordinal (the commit's index view, or a test graph).
pub(crate) trait EdgeLists {
    /// Edge kinds, sorted; [`AdjacentEdge::kind`] indexes this.
    fn kinds(&self) -> &[String];
    /// Appends the edges leaving `ordinal` to `out`.
    fn outgoing(&self, ordinal: Ordinal, out: &mut Vec<AdjacentEdge>);
    /// Appends the edges arriving at `ordinal` to `out`.
    fn incoming(&self, ordinal: Ordinal, out: &mut Vec<AdjacentEdge>);
}

impl EdgeLists for CommitIndexes {
    fn kinds(&self) -> &[String] {
        self.edge_kinds()
    }
    fn outgoing(&self, ordinal: Ordinal, out: &mut Vec<AdjacentEdge>) {
        CommitIndexes::outgoing(self, ordinal, out);
    }
    fn incoming(&self, ordinal: Ordinal, out: &mut Vec<AdjacentEdge>) {
        CommitIndexes::incoming(self, ordinal, out);
    }
}

/// How a node was reached: its best score, the path's length and the path (seed first,
/// the node last).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Reach {
    /// Score on the expansion scale.
    pub score: f64,
    /// Edges from the seed (0 for a candidate's own score).
    pub distance: u32,
    /// Ordinals from the seed to the node.
    pub path: Vec<Ordinal>,
}

impl Reach {
    /// True if `self` beats `other`: higher score, then shorter, then smaller path.
    fn beats(&self, other: &Reach) -> bool {
        self.score
            .total_cmp(&other.score)
            .then(other.distance.cmp(&self.distance))
            .then(other.path.cmp(&self.path))
            .is_gt()
    }
}

/// What an expansion found.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct Expansion {
    /// Candidates that a path scores higher than their own score, with that path.
    pub improved: BTreeMap<Ordinal, Reach>,
    /// New nodes (not candidates), best first, at most `max_nodes`.
    pub added: Vec<(Ordinal, Reach)>,
    /// Distinct new nodes that passed the gates (before the `max_nodes` cut).
    pub considered: usize,
    /// Usable edges examined (kind, direction and validity matched).
    pub edges_followed: usize,
    /// Distinct nodes the walk reached that the label or property gates exclude (walked
    /// through, never added).
    pub gated_out: u64,
    /// Unknown edge kinds in the settings.
    pub unknown_kinds: Vec<String>,
    /// True if the walk stopped at [`MAX_EXPANSION_VISITS`].
    pub truncated: bool,
}

/// Expands from the top candidates. `candidates` are the fused candidates in rank order
/// with their normalised fused scores; `seeds` is how many of them start walks.
pub(crate) fn expand<G: EdgeLists>(
    graph: &G,
    settings: &GraphExpand,
    gate: &Gate,
    candidates: &[(Ordinal, f64)],
    seeds: usize,
) -> Expansion {
    let mut out = Expansion::default();
    let kind_filter: Option<Vec<u32>> = if settings.kinds.is_empty() {
        None
    } else {
        let mut ids = Vec::new();
        for k in &settings.kinds {
            match graph.kinds().binary_search(k) {
                Ok(i) => ids.push(u32::try_from(i).unwrap_or(u32::MAX)),
                Err(_) => out.unknown_kinds.push(k.clone()),
            }
        }
        ids.sort_unstable();
        ids.dedup();
        Some(ids)
    };
    let usable = |e: &AdjacentEdge| {
        kind_filter.as_ref().is_none_or(|ks| ks.binary_search(&e.kind).is_ok()) && gate.edge_holds(e)
    };

    let mut best: BTreeMap<Ordinal, Reach> = candidates
        .iter()
        .map(|&(o, norm)| {
            (
                o,
                Reach {
                    score: settings.candidate_score(norm),
                    distance: 0,
                    path: vec![o],
                },
            )
        })
        .collect();
    let is_candidate: RoaringBitmap = candidates.iter().map(|&(o, _)| o).collect();
    let mut gated_out = RoaringBitmap::new();
    let mut visits = 0usize;
    let mut neighbours = Vec::new();
    let mut edges = Vec::new();

    'seeds: for &(seed, norm) in candidates.iter().take(seeds) {
        let mut visited = RoaringBitmap::new();
        visited.insert(seed);
        let mut frontier: Vec<Vec<Ordinal>> = vec![vec![seed]];
        for distance in 1..=settings.hops {
            let score = settings.reach_score(norm, distance);
            let mut next = Vec::new();
            for path in &frontier {
                let Some(&u) = path.last() else { continue };
                neighbours.clear();
                edges.clear();
                match settings.direction {
                    Direction::Out => graph.outgoing(u, &mut edges),
                    Direction::In => graph.incoming(u, &mut edges),
                    Direction::Both => {
                        graph.outgoing(u, &mut edges);
                        graph.incoming(u, &mut edges);
                    }
                }
                neighbours.extend(edges.iter().filter(|e| usable(e)).map(|e| e.other));
                out.edges_followed += neighbours.len();
                visits += neighbours.len();
                neighbours.sort_unstable();
                neighbours.dedup();
                for &v in &neighbours {
                    if !visited.insert(v) || !gate.traversable(v) {
                        continue;
                    }
                    let mut vpath = Vec::with_capacity(path.len() + 1);
                    vpath.extend_from_slice(path);
                    vpath.push(v);
                    if !gate.admits(v) {
                        gated_out.insert(v);
                    } else {
                        let reach = Reach {
                            score,
                            distance,
                            path: vpath.clone(),
                        };
                        match best.get(&v) {
                            Some(old) if !reach.beats(old) => {}
                            _ => {
                                best.insert(v, reach);
                            }
                        }
                    }
                    next.push(vpath);
                }
                if visits > MAX_EXPANSION_VISITS {
                    out.truncated = true;
                    break 'seeds;
                }
            }
            frontier = next;
        }
    }

    let mut added = Vec::new();
    for (o, reach) in best {
        if is_candidate.contains(o) {
            if reach.distance > 0 {
                out.improved.insert(o, reach);
            }
        } else {
            added.push((o, reach));
        }
    }
    out.considered = added.len();
    out.gated_out = gated_out.len();
    added.sort_by(|(_, a), (_, b)| {
        b.score
            .total_cmp(&a.score)
            .then(a.distance.cmp(&b.distance))
            .then_with(|| a.path.cmp(&b.path))
    });
    added.truncate(settings.max_nodes);
    out.added = added;
    out
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A small graph for tests: `edges` are `(source, kind, target)` over `n` nodes.
    pub(crate) struct TestGraph {
        kinds: Vec<String>,
        out: Vec<Vec<AdjacentEdge>>,
        inc: Vec<Vec<AdjacentEdge>>,
    }

    impl TestGraph {
        pub(crate) fn new(n: u32, kinds: &[&str], edges: &[(Ordinal, u32, Ordinal)]) -> TestGraph {
            TestGraph::with_validity(
                n,
                kinds,
                &edges
                    .iter()
                    .map(|&(s, k, t)| (s, k, t, i64::MIN, i64::MAX))
                    .collect::<Vec<_>>(),
            )
        }

        pub(crate) fn with_validity(n: u32, kinds: &[&str], edges: &[(Ordinal, u32, Ordinal, i64, i64)]) -> TestGraph {
            let mut g = TestGraph {
                kinds: kinds.iter().map(|k| k.to_string()).collect(),
                out: vec![Vec::new(); n as usize],
                inc: vec![Vec::new(); n as usize],
            };
            for &(s, kind, t, from, until) in edges {
                let e = |other| AdjacentEdge {
                    other,
                    kind,
                    weight: 1.0,
                    valid_from_ms: from,
                    valid_until_ms: until,
                };
                g.out[s as usize].push(e(t));
                g.inc[t as usize].push(e(s));
            }
            for l in g.out.iter_mut().chain(g.inc.iter_mut()) {
                l.sort_by_key(|e| (e.other, e.kind));
            }
            g
        }
    }

    impl EdgeLists for TestGraph {
        fn kinds(&self) -> &[String] {
            &self.kinds
        }
        fn outgoing(&self, o: Ordinal, out: &mut Vec<AdjacentEdge>) {
            out.extend_from_slice(&self.out[o as usize]);
        }
        fn incoming(&self, o: Ordinal, out: &mut Vec<AdjacentEdge>) {
            out.extend_from_slice(&self.inc[o as usize]);
        }
    }

    fn open_gate() -> Gate {
        Gate {
            filter: None,
            valid: None,
            valid_at_ms: None,
        }
    }

    fn added(e: &Expansion) -> Vec<(Ordinal, u32, Vec<Ordinal>)> {
        e.added.iter().map(|(o, r)| (*o, r.distance, r.path.clone())).collect()
    }

    #[test]
    fn scores_follow_the_documented_formula() {
        let s = GraphExpand::default();
        assert_eq!(s.candidate_score(1.0), 0.7 * 1.0 + 0.3);
        assert_eq!(s.reach_score(0.5, 2), 0.7 * 0.5 * 0.25 + 0.3 * (-1.0f64).exp());
        assert_eq!(
            s.clone().hop_decay(1.0).reach_score(0.5, 2),
            0.7 * 0.5 + 0.3 * (-1.0f64).exp()
        );
        assert!(s.reach_score(1.0, 1) < s.candidate_score(1.0));
    }

    #[test]
    fn bfs_order_paths_and_scores() {
        // 0 → 1 → 3, 0 → 2 → 3, 3 → 4; seed 0.
        let g = TestGraph::new(5, &["cites"], &[(0, 0, 1), (0, 0, 2), (1, 0, 3), (2, 0, 3), (3, 0, 4)]);
        let settings = GraphExpand::hops(2);
        let e = expand(&g, &settings, &open_gate(), &[(0, 1.0)], 1);
        // 3 is reached at distance 2 by [0,1,3] and [0,2,3]; the smaller path wins. 4 is 3 hops.
        assert_eq!(
            added(&e),
            vec![(1, 1, vec![0, 1]), (2, 1, vec![0, 2]), (3, 2, vec![0, 1, 3])]
        );
        assert_eq!(e.added[0].1.score, settings.reach_score(1.0, 1));
        assert_eq!(e.added[2].1.score, settings.reach_score(1.0, 2));
        assert_eq!(e.considered, 3);
        assert!(!e.truncated);
    }

    #[test]
    fn best_seed_wins_and_candidates_improve() {
        // Seeds 0 (norm 1.0) and 5 (norm 0.5); 3 is a neighbour of both; 5 is a neighbour of 0.
        let g = TestGraph::new(6, &["x"], &[(5, 0, 3), (0, 0, 3), (0, 0, 5)]);
        let settings = GraphExpand::hops(1).hop_decay(1.0);
        let e = expand(&g, &settings, &open_gate(), &[(0, 1.0), (5, 0.5)], 2);
        assert_eq!(added(&e), vec![(3, 1, vec![0, 3])]);
        // 5's own score is 0.7·0.5 + 0.3 = 0.65; via 0 it is 0.7 + 0.3·e^(−1/2) ≈ 0.88.
        let improved = &e.improved[&5];
        assert_eq!(improved.path, vec![0, 5]);
        assert_eq!(improved.score, settings.reach_score(1.0, 1));
        assert!(!e.improved.contains_key(&0));
        // With the default γ = 0.5, the path scores 0.35 + 0.18 < 0.65: 5 keeps its own.
        let d = expand(&g, &GraphExpand::hops(1), &open_gate(), &[(0, 1.0), (5, 0.5)], 2);
        assert!(d.improved.is_empty());
    }

    #[test]
    fn direction_and_kinds() {
        // 0 -a-> 1, 2 -b-> 0.
        let g = TestGraph::new(3, &["a", "b"], &[(0, 0, 1), (2, 1, 0)]);
        let run = |s: GraphExpand| added(&expand(&g, &s, &open_gate(), &[(0, 1.0)], 1));
        assert_eq!(
            run(GraphExpand::hops(1).direction(Direction::Out)),
            vec![(1, 1, vec![0, 1])]
        );
        assert_eq!(
            run(GraphExpand::hops(1).direction(Direction::In)),
            vec![(2, 1, vec![0, 2])]
        );
        assert_eq!(run(GraphExpand::hops(1).kind("b")), vec![(2, 1, vec![0, 2])]);
        let e = expand(&g, &GraphExpand::hops(1).kind("zzz"), &open_gate(), &[(0, 1.0)], 1);
        assert_eq!(
            (e.added.len(), e.edges_followed, e.unknown_kinds.clone()),
            (0, 0, vec!["zzz".to_string()])
        );
    }

    #[test]
    fn gates_filter_added_nodes_but_the_walk_passes_through() {
        // 0 - 1 - 2 (both ways); node 1 fails the label gate, node 2 passes.
        let g = TestGraph::new(4, &["x"], &[(0, 0, 1), (1, 0, 2), (0, 0, 3)]);
        let nodes: Vec<(cairn_core::Hash, cairn_core::Node)> = (0..4)
            .map(|i| {
                let id = cairn_core::NodeId::new(format!("t{i}")).unwrap();
                (cairn_core::Hash::ZERO, cairn_core::Node::new(id))
            })
            .collect();
        let view = CommitIndexes::build(
            cairn_core::Hash::ZERO,
            &cairn_index::IndexParams::default(),
            &nodes,
            &[],
        );
        let gate = Gate {
            filter: Some(view.filter_of([0, 2])),
            valid: Some(view.filter_of([0, 1, 2])),
            valid_at_ms: Some(10),
        };
        let e = expand(&g, &GraphExpand::hops(2), &gate, &[(0, 1.0)], 1);
        // 3 does not exist at t (not traversable), 1 is walked through but not added.
        assert_eq!(added(&e), vec![(2, 2, vec![0, 1, 2])]);
        assert_eq!(e.gated_out, 1, "node 1, reached and gated out");
        // One hop reaches only node 1: nothing added, one gated out (the warning's case).
        let e = expand(&g, &GraphExpand::hops(1), &gate, &[(0, 1.0)], 1);
        assert!(e.added.is_empty());
        assert_eq!(e.gated_out, 1);
    }

    #[test]
    fn edges_must_hold_at_the_validity_time() {
        let g = TestGraph::with_validity(3, &["x"], &[(0, 0, 1, 0, 5), (0, 0, 2, 5, i64::MAX)]);
        let gate = |t| Gate {
            filter: None,
            valid: None,
            valid_at_ms: t,
        };
        let at = |t| added(&expand(&g, &GraphExpand::hops(1), &gate(t), &[(0, 1.0)], 1));
        assert_eq!(at(Some(4)), vec![(1, 1, vec![0, 1])]);
        assert_eq!(at(Some(5)), vec![(2, 1, vec![0, 2])]);
        assert_eq!(at(None).len(), 2);
    }

    #[test]
    fn max_nodes_keeps_the_best() {
        // Seed 0 (norm 1) reaches 4 at distance 1; seed 1 (norm 0.9) reaches 2, 3.
        let g = TestGraph::new(5, &["x"], &[(1, 0, 2), (1, 0, 3), (0, 0, 4)]);
        let e = expand(
            &g,
            &GraphExpand::hops(1).max_nodes(2),
            &open_gate(),
            &[(0, 1.0), (1, 0.9)],
            2,
        );
        assert_eq!(added(&e), vec![(4, 1, vec![0, 4]), (2, 1, vec![1, 2])]);
        assert_eq!(e.considered, 3);
        // Only the first seed walks when seeds = 1.
        let one = expand(&g, &GraphExpand::hops(1), &open_gate(), &[(0, 1.0), (1, 0.9)], 1);
        assert_eq!(added(&one), vec![(4, 1, vec![0, 4])]);
    }

    #[test]
    fn check_refuses_bad_settings() {
        let field = |s: GraphExpand| match s.check() {
            Err(RetrieveError::InvalidSetting { field, .. }) => field,
            other => panic!("{other:?}"),
        };
        assert!(GraphExpand::hops(2).check().is_ok());
        assert_eq!(field(GraphExpand::hops(0)), "expand.hops");
        assert_eq!(field(GraphExpand::hops(MAX_HOPS + 1)), "expand.hops");
        assert_eq!(field(GraphExpand::hops(1).max_nodes(0)), "expand.max_nodes");
        assert_eq!(field(GraphExpand::hops(1).alpha(f64::NAN)), "expand.alpha");
        assert_eq!(field(GraphExpand::hops(1).beta(-1.0)), "expand.beta");
        assert_eq!(field(GraphExpand::hops(1).alpha(0.0).beta(0.0)), "expand.alpha");
        assert_eq!(field(GraphExpand::hops(1).tau(0.0)), "expand.tau");
        assert_eq!(field(GraphExpand::hops(1).tau(f64::INFINITY)), "expand.tau");
        assert_eq!(field(GraphExpand::hops(1).seeds(0)), "expand.seeds");
        assert_eq!(field(GraphExpand::hops(1).hop_decay(0.0)), "expand.hop_decay");
        assert_eq!(field(GraphExpand::hops(1).hop_decay(1.5)), "expand.hop_decay");
        assert_eq!(field(GraphExpand::hops(1).kind("")), "expand.kinds[0]");
    }
}
