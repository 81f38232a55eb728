//! `Repo::export_jsonl`: a commit written in the import format imports into an empty
//! repository as the same node and edge trees (same roots), floats bit for bit.

// The float literals below are chosen for their exact bits (values as printed by other
// tools, the largest subnormal), more digits than the type holds on purpose.
#![allow(clippy::excessive_precision)]

use std::collections::BTreeMap;
use std::io::{self, Write};

use cairn::{CommitId, Edge, Error, Node, NodeId, Repo, SparseVector, Validity, Value};
use proptest::prelude::*;

fn id(s: &str) -> NodeId {
    NodeId::new(s).unwrap()
}

/// Exports `rev` of `repo`, imports the lines into a fresh repository, checks that the two
/// commits have the same roots and the same nodes and edges, and returns the lines.
fn round_trip(repo: &Repo, rev: &str) -> String {
    let mut out = Vec::new();
    let summary = repo.export_jsonl(rev, &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    let at = repo.resolve(rev).unwrap();
    assert_eq!(summary.commit, at);

    let copy = Repo::in_memory().unwrap();
    let imported = copy.import_jsonl(text.as_bytes(), "copy", &mut |_| {}).unwrap();
    assert_eq!(imported.operations, summary.nodes + summary.edges);
    let imported = imported.commit.expect("an export with content imports as a commit");
    let (a, b) = (repo.stats(&at).unwrap(), copy.stats(&imported).unwrap());
    assert_eq!(a.node_root, b.node_root, "node roots differ; export:\n{text}");
    assert_eq!(a.edge_root, b.edge_root, "edge roots differ; export:\n{text}");
    assert_eq!((a.nodes, a.edges), (summary.nodes, summary.edges));
    assert_eq!((a.nodes, a.edges), (b.nodes, b.edges));
    // Same content read back, floats compared by their bits.
    assert_same_nodes(
        &repo.nodes_at(&at, None).unwrap(),
        &copy.nodes_at(&imported, None).unwrap(),
    );
    let (ea, eb) = (repo.edges_at(&at).unwrap(), copy.edges_at(&imported).unwrap());
    assert_eq!(ea, eb);
    for (x, y) in ea.iter().zip(&eb) {
        assert_eq!(x.weight.to_bits(), y.weight.to_bits());
        assert_same_props(&x.props, &y.props);
    }
    text
}

fn assert_same_nodes(a: &[Node], b: &[Node]) {
    assert_eq!(a, b);
    for (x, y) in a.iter().zip(b) {
        for (model, v) in &x.embeddings {
            let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(v), bits(&y.embeddings[model]), "node {} embedding {model}", x.id);
        }
        for (model, s) in &x.sparse {
            let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
            assert_eq!(
                bits(&s.values),
                bits(&y.sparse[model].values),
                "node {} sparse {model}",
                x.id
            );
        }
        assert_same_props(&x.props, &y.props);
    }
}

fn assert_same_props(a: &BTreeMap<String, Value>, b: &BTreeMap<String, Value>) {
    fn same(a: &Value, b: &Value) -> bool {
        match (a, b) {
            (Value::Float(x), Value::Float(y)) => x.to_bits() == y.to_bits(),
            (Value::List(x), Value::List(y)) => x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same(x, y)),
            (Value::Map(x), Value::Map(y)) => {
                x.len() == y.len() && x.iter().zip(y).all(|((kx, x), (ky, y))| kx == ky && same(x, y))
            }
            (x, y) => x == y,
        }
    }
    assert_eq!(a.len(), b.len());
    for ((ka, va), (kb, vb)) in a.iter().zip(b) {
        assert_eq!(ka, kb);
        assert!(same(va, vb), "property {ka}: {va:?} became {vb:?}");
    }
}

/// f32 values that stress the shortest-representation writer and the reader.
const TRICKY_F32: &[f32] = &[
    0.0,
    -0.0, // stored as +0.0
    1e-38,
    -1e-38,
    3.4e38,
    -3.4e38,
    f32::MAX,
    f32::MIN,
    f32::MIN_POSITIVE,
    f32::EPSILON,
    0.1,
    0.1961,
    1.0 / 3.0,
    16_777_216.0,
    16_777_215.0,
    123_456_790.0,
    1e10,
    7.038531e-26,
];

/// Subnormal f32 bit patterns: the smallest, the largest, and some between.
const SUBNORMAL_F32_BITS: &[u32] = &[
    0x0000_0001,
    0x0000_0002,
    0x0000_0003,
    0x0012_3456,
    0x007f_ffff,
    0x8000_0001,
];

/// f64 values for property floats and edge weights, including ones that serde_json's
/// default (not `float_roundtrip`) number parser reads back one ulp off.
const TRICKY_F64: &[f64] = &[
    0.1,
    0.30000000000000004,
    1.0715660391465826e-75,
    -1.603964615428183e143,
    -1.81996730402717e-179,
    3.0261999441573203e-52,
    f64::MAX,
    f64::MIN,
    f64::MIN_POSITIVE,
    5e-324,
    2.2250738585072009e-308,
    9_007_199_254_740_991.0, // 2^53 - 1
    1e16,
    1e300,
    9.223_372_036_854_776e18, // 2^63: a float just past i64
    1.844_674_407_370_955_2e19,
    -0.0, // stored as +0.0
    3.0,
    -3.0,
    1.0,
];

fn tricky_f32() -> Vec<f32> {
    TRICKY_F32
        .iter()
        .copied()
        .chain(SUBNORMAL_F32_BITS.iter().map(|&b| f32::from_bits(b)))
        .collect()
}

#[test]
fn floats_round_trip_bit_for_bit() {
    let repo = Repo::in_memory().unwrap();
    let floats = tricky_f32();
    let mut tx = repo.transaction().unwrap();
    // One model, one dimension: every tricky value in one vector, and each one alone in
    // a sparse vector.
    let mut props = BTreeMap::new();
    for (i, f) in TRICKY_F64.iter().enumerate() {
        props.insert(format!("f{i:02}"), Value::Float(*f));
    }
    props.insert(
        "all".into(),
        Value::List(TRICKY_F64.iter().map(|&f| Value::Float(f)).collect()),
    );
    let mut node = Node::new(id("floats")).with_embedding("m", floats.clone()).with_sparse(
        "s",
        SparseVector::new((0..floats.len() as u32).map(|i| i * 7).collect(), floats.clone()),
    );
    node.props = props;
    tx.put_node(node).unwrap();
    for (i, w) in TRICKY_F64.iter().enumerate() {
        tx.put_node(Node::new(id(&format!("t{i:02}")))).unwrap();
        tx.put_edge(Edge::new(id("floats"), "w", id(&format!("t{i:02}"))).with_weight(*w))
            .unwrap();
    }
    tx.commit("floats").unwrap();

    let text = round_trip(&repo, "HEAD");
    // -0.0 is stored and so written as 0.0; integral floats keep a decimal point or an
    // exponent, so they are read back as floats; weight 1.0 is left out.
    assert!(!text.contains("-0.0"), "{text}");
    assert!(text.contains("[0.0,0.0,1e-38,-1e-38,3.4e+38,-3.4e+38,"), "{text}");
    assert!(text.contains("\"f17\":3.0"), "{text}");
    assert!(text.contains("\"f12\":1e+16"), "{text}");
    assert!(
        text.contains("1e-45"),
        "the smallest subnormal is written in full: {text}"
    );
    assert!(
        text.contains(r#"{"edge":{"source":"floats","target":"t19","kind":"w"}}"#),
        "{text}"
    );
    assert!(text.contains(r#""target":"t16","kind":"w","weight":0.0}"#), "{text}");

    let head = repo.head().unwrap().unwrap();
    let stored = repo.node_at(&head, &id("floats")).unwrap().unwrap();
    assert_eq!(stored.embeddings["m"][1].to_bits(), 0, "-0.0 is canonicalised to +0.0");
}

/// Every f32 the store can hold survives serde_json's writer and the importer's reader:
/// a sweep of bit patterns over the whole range (every exponent, both signs, normal and
/// subnormal), checked through one `parse_import_line` each.
#[test]
fn f32_bit_patterns_survive_the_import_reader() {
    let mut checked = 0usize;
    let mut bits = 0u32;
    loop {
        let x = f32::from_bits(bits);
        if x.is_finite() && x != 0.0 {
            let line = format!(
                r#"{{"node": {{"id": "a", "embeddings": {{"m": [{}]}}}}}}"#,
                serde_json::to_string(&x).unwrap()
            );
            let Ok(cairn::ImportOp::PutNode(n)) = cairn::parse_import_line(&line) else {
                panic!("{line} does not parse")
            };
            assert_eq!(n.embeddings["m"][0].to_bits(), bits, "{line}");
            checked += 1;
        }
        // A stride coprime with 2^32, so the low (mantissa) bits vary too.
        match bits.checked_add(40_503) {
            Some(b) => bits = b,
            None => break,
        }
    }
    assert!(checked > 100_000);
}

#[test]
fn ints_and_floats_keep_their_kind() {
    let repo = Repo::in_memory().unwrap();
    let mut tx = repo.transaction().unwrap();
    tx.put_node(
        Node::new(id("n"))
            .with_prop("int_min", i64::MIN)
            .with_prop("int_max", i64::MAX)
            .with_prop("int_zero", 0i64)
            .with_prop("float_zero", 0.0)
            .with_prop("float_int", 42.0)
            .with_prop("float_big", 1e20)
            .with_prop("int", 42i64),
    )
    .unwrap();
    tx.commit("kinds").unwrap();
    let text = round_trip(&repo, "HEAD");
    assert!(text.contains(
        r#""props":{"float_big":1e+20,"float_int":42.0,"float_zero":0.0,"int":42,"int_max":9223372036854775807,"int_min":-9223372036854775808,"int_zero":0}"#
    ), "{text}");
}

/// A node and edge with every awkward thing the format can hold.
fn awkward_repo() -> Repo {
    let repo = Repo::in_memory().unwrap();
    let mut tx = repo.transaction().unwrap();
    let mut deep = Value::Int(1);
    for i in 0..32 {
        deep = if i % 2 == 0 {
            Value::List(vec![deep, Value::Null])
        } else {
            Value::Map(BTreeMap::from([
                ("k".to_string(), deep),
                (String::new(), Value::Bool(false)),
            ]))
        };
    }
    let tricky = "quote \" backslash \\ slash / newline \n cr \r tab \t nul \0 bell \u{7} del \u{7f} \
                  é 日本 🦀 \u{2028} \u{2029} \u{feff} \u{10ffff}";
    let nested = Value::Map(BTreeMap::from([
        (
            "list".to_string(),
            Value::List(vec![Value::Int(-1), Value::Float(2.5), Value::Null]),
        ),
        ("empty_list".to_string(), Value::List(vec![])),
        ("empty_map".to_string(), Value::Map(BTreeMap::new())),
        (
            "bools".to_string(),
            Value::List(vec![Value::Bool(true), Value::Bool(false)]),
        ),
        ("s".to_string(), Value::String(tricky.into())),
        (
            tricky.to_string(),
            Value::Map(BTreeMap::from([("x".to_string(), Value::Float(-1e-300))])),
        ),
    ]));
    let long_id = "x".repeat(256);
    tx.put_node(
        Node::new(id("a \"quoted\" id\n"))
            .with_label("Doc")
            .with_label("Ünïcødé label")
            .with_label("with \"quotes\"")
            .with_text(tricky)
            .with_prop("nested", nested.clone())
            .with_prop("deep", deep)
            .with_prop("null", Value::Null)
            .with_prop("yes", true)
            .with_prop("no", false)
            .with_prop("empty", "")
            .with_prop("ключ \"key\"", tricky)
            .with_embedding("dense", vec![0.1, -0.0, 1e-38, 3.4e38])
            .with_embedding("other", tricky_f32())
            .with_sparse(
                "kw",
                SparseVector::new(vec![0, 3, 9, u32::MAX], vec![1.0, 0.5, -2.25, 1e-45]),
            )
            .with_sparse("empty", SparseVector::new(vec![], vec![]))
            .with_validity(Validity::new(Some(-62_135_596_800_000), Some(253_402_300_799_999))),
    )
    .unwrap();
    tx.put_node(Node::new(id(&long_id)).with_validity(Validity::new(Some(i64::MIN), Some(i64::MAX))))
        .unwrap();
    tx.put_node(Node::new(id("only-from")).with_validity(Validity::new(Some(0), None)))
        .unwrap();
    tx.put_node(Node::new(id("only-until")).with_validity(Validity::new(None, Some(-1))))
        .unwrap();
    tx.put_node(Node::new(id("🦀")).with_text(" ")).unwrap();
    let mut e = Edge::new(id("a \"quoted\" id\n"), "cites \"x\"\n", id(&long_id))
        .with_weight(-0.125)
        .with_validity(Validity::new(Some(1_700_000_000_000), Some(1_700_000_000_001)));
    e.props.insert("nested".into(), nested);
    e.props.insert("n".into(), Value::Int(-7));
    tx.put_edge(e).unwrap();
    tx.put_edge(Edge::new(id("🦀"), "self", id("🦀")).with_weight(0.0))
        .unwrap();
    tx.put_edge(Edge::new(id("🦀"), "one", id("only-from")).with_weight(1.0))
        .unwrap();
    tx.put_edge(
        Edge::new(id("🦀"), "tiny", id("only-until"))
            .with_weight(5e-324)
            .with_validity(Validity::new(None, Some(5))),
    )
    .unwrap();
    tx.commit("awkward").unwrap();
    repo
}

#[test]
fn awkward_content_round_trips() {
    let repo = awkward_repo();
    let text = round_trip(&repo, "HEAD");
    // One line per node and edge, nothing else.
    assert_eq!(text.lines().count(), 5 + 4);
    assert!(text.ends_with('\n'));
    assert!(text
        .lines()
        .all(|l| serde_json::from_str::<serde_json::Value>(l).is_ok()));
}

#[test]
fn output_is_in_order_and_leaves_defaults_out() {
    let repo = awkward_repo();
    let mut out = Vec::new();
    repo.export_jsonl("HEAD", &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    let lines: Vec<serde_json::Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let node_ids: Vec<&str> = lines.iter().filter_map(|l| l["node"]["id"].as_str()).collect();
    let mut sorted = node_ids.clone();
    sorted.sort_unstable();
    assert_eq!(node_ids, sorted, "nodes in id order");
    assert_eq!(node_ids.len(), 5);
    assert!(lines[..5].iter().all(|l| l.get("node").is_some()), "nodes first");
    let edges: Vec<(&str, &str, &str)> = lines[5..]
        .iter()
        .map(|l| {
            let e = &l["edge"];
            (
                e["source"].as_str().unwrap(),
                e["kind"].as_str().unwrap(),
                e["target"].as_str().unwrap(),
            )
        })
        .collect();
    // The edge tree's order: by source (length-prefixed, so shorter ids first), kind,
    // target, as `edges_at` reads them.
    let head = repo.head().unwrap().unwrap();
    let stored = repo.edges_at(&head).unwrap();
    let stored: Vec<(&str, &str, &str)> = stored
        .iter()
        .map(|e| (e.source.as_str(), e.kind.as_str(), e.target.as_str()))
        .collect();
    assert_eq!(edges, stored, "edges in the edge tree's key order");

    // Defaults are left out.
    assert!(text.contains(r#"{"node":{"id":"only-from","valid_from":0}}"#), "{text}");
    assert!(
        text.contains(r#"{"node":{"id":"only-until","valid_until":-1}}"#),
        "{text}"
    );
    assert!(
        text.contains(r#"{"edge":{"source":"🦀","target":"only-from","kind":"one"}}"#),
        "{text}"
    );
    assert!(
        text.contains(r#""sparse":{"empty":{"indices":[],"values":[]},"kw":"#),
        "{text}"
    );
    for absent in [
        r#""labels":[]"#,
        r#""text":"""#,
        r#""props":{}"#,
        r#""embeddings":{}"#,
        r#""sparse":{}"#,
        "null}",
    ] {
        assert!(!text.contains(absent), "{absent} in {text}");
    }
}

#[test]
fn earlier_revisions_export_their_own_state() {
    let repo = awkward_repo();
    let first = repo.head().unwrap().unwrap();
    let mut tx = repo.transaction().unwrap();
    tx.delete_node(&id("🦀")).unwrap();
    tx.put_node(Node::new(id("new")).with_prop("v", 2i64)).unwrap();
    tx.commit("second").unwrap();
    let second_text = round_trip(&repo, "HEAD");
    let first_text = round_trip(&repo, "HEAD~1");
    assert_ne!(first_text, second_text);
    assert_eq!(first_text, round_trip(&repo, &first.to_hex()));
    assert!(
        first_text.contains(r#"{"node":{"id":"🦀","text":" "}}"#),
        "{first_text}"
    );
    assert!(!second_text.contains(r#""id":"🦀""#), "{second_text}");
}

#[test]
fn an_empty_commit_exports_nothing() {
    let repo = Repo::in_memory().unwrap();
    let mut tx = repo.transaction().unwrap();
    tx.put_node(Node::new(id("a"))).unwrap();
    tx.commit("one").unwrap();
    let mut tx = repo.transaction().unwrap();
    tx.delete_node(&id("a")).unwrap();
    let empty = tx.commit("none").unwrap();
    let mut out = Vec::new();
    let summary = repo.export_jsonl("HEAD", &mut out).unwrap();
    assert_eq!((summary.commit, summary.nodes, summary.edges), (empty, 0, 0));
    assert!(out.is_empty());
}

#[test]
fn an_unknown_revision_writes_nothing() {
    let repo = awkward_repo();
    let mut out = Vec::new();
    let err = repo.export_jsonl("no-such-branch", &mut out).unwrap_err();
    assert!(matches!(err, Error::UnknownRevision { .. }), "{err}");
    assert!(out.is_empty());
    let err = Repo::in_memory().unwrap().export_jsonl("HEAD", &mut out).unwrap_err();
    assert!(matches!(err, Error::UnknownRevision { .. }), "{err}");
}

/// Accepts `budget` bytes, then fails; counts the lines of each write.
struct Limited {
    budget: usize,
    written: Vec<u8>,
    max_lines_per_write: usize,
}

impl Write for Limited {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.written.len() + buf.len() > self.budget {
            return Err(io::Error::new(io::ErrorKind::StorageFull, "disk full (test)"));
        }
        let lines = buf.iter().filter(|&&b| b == b'\n').count();
        self.max_lines_per_write = self.max_lines_per_write.max(lines);
        self.written.extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[test]
fn a_failed_write_stops_the_export_with_the_io_error() {
    let repo = awkward_repo();
    let mut w = Limited {
        budget: 100,
        written: Vec::new(),
        max_lines_per_write: 0,
    };
    let err = repo.export_jsonl("HEAD", &mut w).unwrap_err();
    assert!(matches!(err, Error::Write { .. }), "{err:?}");
    assert!(
        err.to_string().contains("cannot write the export: disk full (test)"),
        "{err}"
    );
}

#[test]
fn lines_are_written_one_at_a_time() {
    let repo = awkward_repo();
    let mut w = Limited {
        budget: usize::MAX,
        written: Vec::new(),
        max_lines_per_write: 0,
    };
    let summary = repo.export_jsonl("HEAD", &mut w).unwrap();
    assert_eq!(w.max_lines_per_write, 1, "no write carries more than one line");
    let lines = w.written.iter().filter(|&&b| b == b'\n').count() as u64;
    assert_eq!(lines, summary.nodes + summary.edges);
}

// ---------------------------------------------------------------------------------------
// Random graphs.

fn any_f32() -> impl Strategy<Value = f32> {
    prop_oneof![
        3 => any::<u32>().prop_map(|b| {
            let f = f32::from_bits(b);
            if f.is_finite() { f } else { 1.5 }
        }),
        1 => prop::sample::select(tricky_f32()),
        1 => (-1000i32..1000).prop_map(|i| i as f32 / 100.0),
    ]
}

fn any_f64() -> impl Strategy<Value = f64> {
    prop_oneof![
        3 => any::<u64>().prop_map(|b| {
            let f = f64::from_bits(b);
            if f.is_finite() { f } else { -2.5 }
        }),
        1 => prop::sample::select(TRICKY_F64.to_vec()),
        1 => (-1000i64..1000).prop_map(|i| i as f64 / 10.0),
    ]
}

fn any_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::Int),
        (-5i64..5).prop_map(Value::Int),
        any_f64().prop_map(Value::Float),
        "(?s).{0,10}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::List),
            prop::collection::btree_map("(?s).{0,4}", inner, 0..4).prop_map(Value::Map),
        ]
    })
}

fn any_props() -> impl Strategy<Value = BTreeMap<String, Value>> {
    prop::collection::btree_map("(?s).{1,6}", any_value(), 0..4)
}

fn any_validity() -> impl Strategy<Value = Validity> {
    let end = prop_oneof![
        2 => Just(None),
        1 => any::<i64>().prop_map(Some),
        1 => (1_600_000_000_000i64..1_800_000_000_000).prop_map(Some),
    ];
    (end.clone(), end).prop_map(|(from, until)| match (from, until) {
        (Some(f), Some(u)) if f == u => Validity::new(Some(f), None),
        (Some(f), Some(u)) if f > u => Validity::new(Some(u), Some(f)),
        (f, u) => Validity::new(f, u),
    })
}

fn any_node() -> impl Strategy<Value = Node> {
    (
        prop_oneof!["[a-e]{1,2}", "(?s).{1,8}"],
        prop::collection::btree_set(prop_oneof!["[A-C]", "\\PC{1,6}"], 0..3),
        prop_oneof!["", "(?s).{0,40}"],
        any_props(),
        prop::option::of(prop::collection::vec(any_f32(), 3)),
        prop::option::of(any_f32()),
        prop::collection::btree_map(
            prop_oneof!["s", "t"],
            prop::collection::btree_map(any::<u32>(), any_f32(), 0..6),
            0..3,
        ),
        any_validity(),
    )
        .prop_map(|(id, labels, text, props, m3, m1, sparse, validity)| {
            let mut n = Node::new(NodeId::new(id).unwrap())
                .with_text(text)
                .with_validity(validity);
            n.labels = labels;
            n.props = props;
            if let Some(v) = m3 {
                n.embeddings.insert("m3".into(), v);
            }
            if let Some(v) = m1 {
                n.embeddings.insert("m1".into(), vec![v]);
            }
            for (model, entries) in sparse {
                let (indices, values) = entries.into_iter().unzip();
                n.sparse.insert(model, SparseVector::new(indices, values));
            }
            n
        })
}

/// (source index, kind, target index, weight, props, validity); indices into the nodes.
type EdgeSpec = (
    prop::sample::Index,
    String,
    prop::sample::Index,
    f64,
    BTreeMap<String, Value>,
    Validity,
);

fn any_edge() -> impl Strategy<Value = EdgeSpec> {
    (
        any::<prop::sample::Index>(),
        prop_oneof!["[a-c]", "(?s).{1,6}"],
        any::<prop::sample::Index>(),
        prop_oneof![1 => Just(1.0), 2 => any_f64()],
        any_props(),
        any_validity(),
    )
}

fn build(nodes: &[Node], edges: &[EdgeSpec]) -> (Repo, CommitId) {
    let repo = Repo::in_memory().unwrap();
    let mut tx = repo.transaction().unwrap();
    for n in nodes {
        tx.put_node(n.clone()).unwrap();
    }
    for (s, kind, t, weight, props, validity) in edges {
        let mut e = Edge::new(s.get(nodes).id.clone(), kind.clone(), t.get(nodes).id.clone())
            .with_weight(*weight)
            .with_validity(*validity);
        e.props = props.clone();
        tx.put_edge(e).unwrap();
    }
    let c = tx.commit("random").unwrap();
    (repo, c)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn random_graphs_round_trip(
        nodes in prop::collection::vec(any_node(), 1..12),
        edges in prop::collection::vec(any_edge(), 0..16),
    ) {
        let (repo, commit) = build(&nodes, &edges);
        round_trip(&repo, &commit.to_hex());
    }
}
