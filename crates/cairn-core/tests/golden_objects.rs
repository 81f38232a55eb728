//! Golden vectors for the object encoding described in `storage-format.md` (§3).
//!
//! Every byte string and hash below was computed once and pasted; the tests pin them. If
//! one of these tests fails, the bytes Cairn writes (and so every object hash and commit
//! id) have changed: that is a format change. Do not update the constants to make the test
//! pass; follow the versioning policy in `storage-format.md` §8 (new tag byte, decoder for
//! the old one, document, new vectors).

use std::collections::BTreeMap;

use cairn_core::codec::{
    decode_commit, decode_edge, decode_node, decode_object, decode_tree, edge_in_tree_key, edge_key_prefix,
    edge_tree_key, encode_commit, encode_edge, encode_node, encode_tree, hash_object, DecodeError, Object, TAG_COMMIT,
    TAG_EDGE, TAG_NODE, TAG_TREE,
};
use cairn_core::{Commit, CommitId, Edge, Hash, Node, NodeId, SparseVector, TreeEntry, TreeNode, Validity, Value};

// ---------------------------------------------------------------------------------------
// The pinned vectors.

/// `encode_node(&Node::new("a"))`: 52 bytes.
const MINIMAL_NODE_HEX: &str = concat!(
    "11",               // tag: node, version 1
    "0100000000000000", // id: u64 length 1
    "61",               // "a"
    "0000000000000000", // labels: 0
    "0000000000000000", // props: 0
    "0000000000000000", // text: length 0
    "0000000000000000", // embeddings: 0
    "0000000000000000", // sparse: 0
    "00",               // valid_from: None
    "00",               // valid_until: None
);
const MINIMAL_NODE_HASH: &str = "d5e432da3e50a2d2bb6bb9a1d513af9b7bb8e839e8d8b9b6e929cc308ee6d71a";

/// A node using every field and every property value kind ([`full_node`]): 293 bytes.
const FULL_NODE_HEX: &str = concat!(
    "11",
    "0500000000000000646f632d31", // id "doc-1"
    "0100000000000000",           // 1 label
    "0300000000000000446f63",     // "Doc"
    "0700000000000000",           // 7 props, in key order
    "010000000000000062",         // "b"
    "0101",                       //   Bool(true)
    "010000000000000066",         // "f"
    "03000000000000f83f",         //   Float(1.5)
    "010000000000000069",         // "i"
    "02feffffffffffffff",         //   Int(-2)
    "01000000000000006c",         // "l"
    "050200000000000000",         //   List of 2:
    "020100000000000000",         //     Int(1)
    "04010000000000000078",       //     String("x")
    "01000000000000006d",         // "m"
    "060100000000000000",         //   Map of 1:
    "01000000000000006b",         //     "k"
    "00",                         //     Null
    "01000000000000006e",         // "n"
    "00",                         //   Null
    "010000000000000073",         // "s"
    "04010000000000000078",       //   String("x")
    "02000000000000006869",       // text "hi"
    "0100000000000000",           // 1 embedding model
    "010000000000000065",         // "e"
    "0200000000000000",           //   2 floats
    "0000803f000020c0",           //   1.0, -2.5
    "0100000000000000",           // 1 sparse model
    "02000000000000007370",       // "sp"
    "0200000000000000",           //   2 indices
    "0300000070110100",           //   3, 70000
    "0200000000000000",           //   2 values
    "0000003f0000803e",           //   0.5, 0.25
    "010000000000000000",         // valid_from: Some(0)
    "010a00000000000000",         // valid_until: Some(10)
);
const FULL_NODE_HASH: &str = "38c2792b2d99b6bb24e7be1094ed097d5223e6d3796175aeaace7471a00db31b";

/// [`small_edge`]: 79 bytes.
const EDGE_HEX: &str = concat!(
    "21",                         // tag: edge, version 1
    "010000000000000061",         // source "a"
    "05000000000000006369746573", // kind "cites"
    "010000000000000062",         // target "b"
    "000000000000e03f",           // weight 0.5 (f64)
    "0100000000000000",           // 1 prop
    "040000000000000070616765",   // "page"
    "020300000000000000",         //   Int(3)
    "01e803000000000000",         // valid_from: Some(1000)
    "00",                         // valid_until: None
);
const EDGE_HASH: &str = "54941ce946184d83922ab6ec115f98d27727e354176566e2092be0b24bb19acd";

/// [`tree_of_a`]: the node tree of a commit holding only `Node::new("a")`: 53 bytes.
const TREE_HEX: &str = concat!(
    "31",                                                               // tag: tree, version 1
    "01",                                                               // level 1 (key_level(b"a"))
    "00",                                                               // left: None
    "0100000000000000",                                                 // 1 entry
    "010000000000000061",                                               // key "a"
    "d5e432da3e50a2d2bb6bb9a1d513af9b7bb8e839e8d8b9b6e929cc308ee6d71a", // value: MINIMAL_NODE_HASH
    "00",                                                               // right: None
);
const TREE_HASH: &str = "730108d1338c8134e3b9a28e29a08b7d7d2651e96f1a716cfa6f5191a775ab30";

/// [`root_commit`]: what `Repo` writes when a first transaction puts `Node::new("a")` and
/// commits with `commit_at("first", 1_700_000_000_000)`: 111 bytes.
const COMMIT0_HEX: &str = concat!(
    "41",                                                                 // tag: commit, version 1
    "0000000000000000",                                                   // parents: 0
    "01730108d1338c8134e3b9a28e29a08b7d7d2651e96f1a716cfa6f5191a775ab30", // node_root: Some(TREE)
    "00",                                                                 // edge_root: None
    "00",                                                                 // edge_in_root: None
    "0100000000000000",                                                   // node_count 1
    "0000000000000000",                                                   // edge_count 0
    "0500000000000000636169726e",                                         // author "cairn"
    "05000000000000006669727374",                                         // message "first"
    "0068e5cf8b010000",                                                   // timestamp_ms (i64)
    "0000000000000000",                                                   // generation 0
    "00",                                                                 // index_base: None
    "0000000000000000",                                                   // changes_since_base 0
);
const COMMIT0_HASH: &str = "400d438522c199f994dd20a81dfdde94f297bc533ea8913b4ddd3ea98d53932b";

/// [`child_commit`]: one parent, every root present, `index_base = Some(Hash::ZERO)`
/// ("this commit is its own dense base"): 236 bytes.
const COMMIT1_HEX: &str = concat!(
    "41",
    "0100000000000000",                                                   // parents: 1
    "400d438522c199f994dd20a81dfdde94f297bc533ea8913b4ddd3ea98d53932b",   // COMMIT0_HASH
    "017a9b57fb8d652f7372257f8f45336ca5991a00048136f16ee2a48c1a23575534", // node_root
    "01b18648f77c8ac916233894cf0387f0d5fdbe7f15e93ef8fbaa587e2ba1b523e7", // edge_root
    "01610899e04aaa3b1f4baeea48f959f9cb9a62bd68a13193c062293f9024f51988", // edge_in_root
    "204e000000000000",                                                   // node_count 20000
    "0300000000000000",                                                   // edge_count 3
    "0300000000000000616e6e",                                             // author "ann"
    "040000000000000067726f77",                                           // message "grow"
    "0168e5cf8b010000",                                                   // timestamp_ms
    "0100000000000000",                                                   // generation 1
    "010000000000000000000000000000000000000000000000000000000000000000", // index_base: Some(ZERO)
    "0000000000000000",                                                   // changes_since_base 0
);
const COMMIT1_HASH: &str = "338f340d417cb8e5899d7aee6e00411a1ab750f30684041c4046b1d345fd6661";

/// `edge_tree_key("a", "cites", "b")` and `edge_in_tree_key("a", "cites", "b")`.
const EDGE_KEY_HEX: &str = "0001610005636974657362";
const EDGE_IN_KEY_HEX: &str = "0001620005636974657361";

// ---------------------------------------------------------------------------------------
// The values behind them.

fn id(s: &str) -> NodeId {
    NodeId::new(s).unwrap()
}

fn minimal_node() -> Node {
    Node::new(id("a"))
}

fn full_node() -> Node {
    let mut m = BTreeMap::new();
    m.insert("k".to_string(), Value::Null);
    Node::new(id("doc-1"))
        .with_label("Doc")
        .with_text("hi")
        .with_prop("b", true)
        .with_prop("f", 1.5)
        .with_prop("i", -2i64)
        .with_prop("l", Value::List(vec![Value::Int(1), Value::String("x".into())]))
        .with_prop("m", Value::Map(m))
        .with_prop("n", Value::Null)
        .with_prop("s", "x")
        .with_embedding("e", vec![1.0, -2.5])
        .with_sparse("sp", SparseVector::new(vec![3, 70_000], vec![0.5, 0.25]))
        .with_validity(Validity::new(Some(0), Some(10)))
}

fn small_edge() -> Edge {
    let mut e = Edge::new(id("a"), "cites", id("b"))
        .with_weight(0.5)
        .with_validity(Validity::new(Some(1000), None));
    e.props.insert("page".into(), Value::Int(3));
    e
}

fn tree_of_a() -> TreeNode {
    TreeNode {
        level: 1,
        left: None,
        entries: vec![TreeEntry {
            key: b"a".to_vec(),
            value: h(MINIMAL_NODE_HASH),
            right: None,
        }],
    }
}

fn root_commit() -> Commit {
    Commit {
        parents: vec![],
        node_root: Some(h(TREE_HASH)),
        edge_root: None,
        edge_in_root: None,
        node_count: 1,
        edge_count: 0,
        author: "cairn".into(),
        message: "first".into(),
        timestamp_ms: 1_700_000_000_000,
        generation: 0,
        index_base: None,
        changes_since_base: 0,
    }
}

fn child_commit() -> Commit {
    Commit {
        parents: vec![CommitId(h(COMMIT0_HASH))],
        node_root: Some(Hash::of(b"nodes")),
        edge_root: Some(Hash::of(b"edges")),
        edge_in_root: Some(Hash::of(b"edges-in")),
        node_count: 20_000,
        edge_count: 3,
        author: "ann".into(),
        message: "grow".into(),
        timestamp_ms: 1_700_000_000_001,
        generation: 1,
        index_base: Some(CommitId(Hash::ZERO)),
        changes_since_base: 0,
    }
}

// ---------------------------------------------------------------------------------------
// Helpers.

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(s: &str) -> Vec<u8> {
    assert!(s.len().is_multiple_of(2), "odd hex length");
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex digit"))
        .collect()
}

/// The position of the only occurrence of `needle` in `hay`.
fn find(hay: &[u8], needle: &[u8]) -> usize {
    let mut at = hay.windows(needle.len()).enumerate().filter(|(_, w)| *w == needle);
    let (i, _) = at.next().expect("present");
    assert!(at.next().is_none(), "present once");
    i
}

fn h(s: &str) -> Hash {
    Hash::from_hex(s).unwrap()
}

// ---------------------------------------------------------------------------------------
// Tests.

#[test]
fn encodings_are_pinned() {
    let cases: [(&str, Vec<u8>, &str, &str); 7] = [
        (
            "minimal node",
            encode_node(&minimal_node()),
            MINIMAL_NODE_HEX,
            MINIMAL_NODE_HASH,
        ),
        ("full node", encode_node(&full_node()), FULL_NODE_HEX, FULL_NODE_HASH),
        ("edge", encode_edge(&small_edge()), EDGE_HEX, EDGE_HASH),
        ("tree", encode_tree(&tree_of_a()), TREE_HEX, TREE_HASH),
        ("root commit", encode_commit(&root_commit()), COMMIT0_HEX, COMMIT0_HASH),
        (
            "child commit",
            encode_commit(&child_commit()),
            COMMIT1_HEX,
            COMMIT1_HASH,
        ),
        (
            "minimal node (hash of the pinned bytes)",
            unhex(MINIMAL_NODE_HEX),
            MINIMAL_NODE_HEX,
            MINIMAL_NODE_HASH,
        ),
    ];
    for (what, bytes, want_hex, want_hash) in cases {
        assert_eq!(hex(&bytes), want_hex, "{what}: bytes");
        // The object hash is blake3 over every byte, tag included.
        assert_eq!(hash_object(&bytes).to_hex(), want_hash, "{what}: hash");
        assert_eq!(hash_object(&bytes), Hash::of(&bytes), "{what}: hash_object is blake3");
    }
    assert_eq!(unhex(MINIMAL_NODE_HEX).len(), 52);
    assert_eq!(unhex(FULL_NODE_HEX).len(), 293);
    assert_eq!(unhex(EDGE_HEX).len(), 79);
    assert_eq!(unhex(TREE_HEX).len(), 53);
    assert_eq!(unhex(COMMIT0_HEX).len(), 111);
    assert_eq!(unhex(COMMIT1_HEX).len(), 236);
}

#[test]
fn pinned_bytes_decode_and_round_trip() {
    let b = unhex(MINIMAL_NODE_HEX);
    assert_eq!(decode_node(&b).unwrap(), minimal_node());
    assert_eq!(encode_node(&decode_node(&b).unwrap()), b);

    let b = unhex(FULL_NODE_HEX);
    assert_eq!(decode_node(&b).unwrap(), full_node());
    assert_eq!(encode_node(&decode_node(&b).unwrap()), b);

    let b = unhex(EDGE_HEX);
    assert_eq!(decode_edge(&b).unwrap(), small_edge());
    assert_eq!(encode_edge(&decode_edge(&b).unwrap()), b);

    let b = unhex(TREE_HEX);
    assert_eq!(decode_tree(&b).unwrap(), tree_of_a());
    assert_eq!(encode_tree(&decode_tree(&b).unwrap()), b);

    for (hexs, want) in [(COMMIT0_HEX, root_commit()), (COMMIT1_HEX, child_commit())] {
        let b = unhex(hexs);
        assert_eq!(decode_commit(&b).unwrap(), want);
        assert_eq!(encode_commit(&decode_commit(&b).unwrap()), b);
    }

    // decode_object dispatches on the tag byte.
    assert!(matches!(decode_object(&unhex(MINIMAL_NODE_HEX)), Ok(Object::Node(_))));
    assert!(matches!(decode_object(&unhex(EDGE_HEX)), Ok(Object::Edge(_))));
    assert!(matches!(decode_object(&unhex(TREE_HEX)), Ok(Object::Tree(_))));
    assert!(matches!(decode_object(&unhex(COMMIT0_HEX)), Ok(Object::Commit(_))));
    assert_eq!((TAG_NODE, TAG_EDGE, TAG_TREE, TAG_COMMIT), (0x11, 0x21, 0x31, 0x41));
}

/// The commit field offsets given in the table of `storage-format.md` §3.4, for a commit
/// with `p` parents and author/message of `a`/`m` bytes, checked on the two vectors.
#[test]
fn commit_field_offsets() {
    for (hexs, c) in [(COMMIT0_HEX, root_commit()), (COMMIT1_HEX, child_commit())] {
        let b = unhex(hexs);
        let p = c.parents.len();
        let le64 = |at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap());
        assert_eq!(b[0], 0x41);
        assert_eq!(le64(1), p as u64);
        let mut at = 9 + 32 * p;
        for root in [c.node_root, c.edge_root, c.edge_in_root] {
            match root {
                None => {
                    assert_eq!(b[at], 0);
                    at += 1;
                }
                Some(r) => {
                    assert_eq!(b[at], 1);
                    assert_eq!(&b[at + 1..at + 33], r.as_bytes());
                    at += 33;
                }
            }
        }
        assert_eq!(le64(at), c.node_count);
        assert_eq!(le64(at + 8), c.edge_count);
        at += 16;
        assert_eq!(le64(at), c.author.len() as u64);
        at += 8 + c.author.len();
        assert_eq!(le64(at), c.message.len() as u64);
        at += 8 + c.message.len();
        assert_eq!(i64::from_le_bytes(b[at..at + 8].try_into().unwrap()), c.timestamp_ms);
        assert_eq!(le64(at + 8), c.generation);
        at += 16;
        at += if c.index_base.is_some() { 33 } else { 1 };
        assert_eq!(le64(at), c.changes_since_base);
        assert_eq!(at + 8, b.len());
    }
}

/// The bytes of each property value kind (tag 0..=6), as `storage-format.md` §3.5 lists
/// them: the value sits between a fixed 35-byte prefix (tag, id "v", no labels, one prop
/// "k") and a fixed 26-byte suffix (empty text, no vectors, open validity).
#[test]
fn value_encodings_are_pinned() {
    let mut one = BTreeMap::new();
    one.insert("a".to_string(), Value::Bool(false));
    let cases: Vec<(Value, &str)> = vec![
        (Value::Null, "00"),
        (Value::Bool(false), "0100"),
        (Value::Bool(true), "0101"),
        (Value::Int(1), "020100000000000000"),
        (Value::Int(-1), "02ffffffffffffffff"),
        (Value::Float(1.0), "03000000000000f03f"),
        (Value::Float(-0.0), "030000000000000000"), // written as +0.0
        (Value::String("hé".into()), "04030000000000000068c3a9"),
        (Value::List(vec![]), "050000000000000000"),
        (
            Value::List(vec![Value::Null, Value::Int(7)]),
            "05020000000000000000020700000000000000",
        ),
        (Value::Map(BTreeMap::new()), "060000000000000000"),
        (Value::Map(one), "0601000000000000000100000000000000610100"),
    ];
    for (v, want) in cases {
        let bytes = encode_node(&Node::new(id("v")).with_prop("k", v.clone()));
        let (prefix, rest) = bytes.split_at(35);
        assert_eq!(
            hex(prefix),
            concat!(
                "11",                 // tag
                "010000000000000076", // id "v"
                "0000000000000000",   // no labels
                "0100000000000000",   // 1 prop
                "01000000000000006b", // "k"
            )
        );
        let (value, suffix) = rest.split_at(rest.len() - 26);
        assert_eq!(hex(suffix), format!("{}0000", "0".repeat(48)));
        assert_eq!(hex(value), want, "{v:?}");
    }
}

/// Strict decoding of the pinned bytes: one changed or added byte is refused.
#[test]
fn pinned_bytes_are_decoded_strictly() {
    // A trailing byte.
    for hexs in [MINIMAL_NODE_HEX, EDGE_HEX, TREE_HEX, COMMIT0_HEX] {
        let mut b = unhex(hexs);
        b.push(0);
        assert!(decode_object(&b).is_err(), "trailing byte accepted");
        b.truncate(b.len() - 2);
        assert!(decode_object(&b).is_err(), "truncation accepted");
    }
    // Another object's tag.
    let mut b = unhex(MINIMAL_NODE_HEX);
    b[0] = TAG_EDGE;
    assert!(matches!(decode_node(&b), Err(DecodeError::BadTag { found: 0x21, .. })));
    b[0] = 0x12; // a node tag of a future version
    assert!(matches!(
        decode_object(&b),
        Err(DecodeError::BadTag { found: 0x12, .. })
    ));
    // An Option tag other than 0 or 1.
    let mut b = unhex(MINIMAL_NODE_HEX);
    *b.last_mut().unwrap() = 2;
    assert!(matches!(decode_node(&b), Err(DecodeError::Invalid { .. })));
    // A bool other than 0 or 1.
    let mut b = unhex(FULL_NODE_HEX);
    let at = find(&b, &unhex("0101010000000000000066")) + 1;
    b[at] = 2;
    assert!(decode_node(&b).is_err());
    // -0.0 written where +0.0 is canonical: the edge weight.
    let mut b = unhex(EDGE_HEX);
    let at = find(&b, &0.5f64.to_le_bytes());
    b[at..at + 8].copy_from_slice(&(-0.0f64).to_le_bytes());
    assert!(matches!(decode_edge(&b), Err(DecodeError::NonCanonical { .. })));
    // NaN is refused (validation), not re-encoded.
    b[at..at + 8].copy_from_slice(&f64::NAN.to_le_bytes());
    assert!(matches!(decode_edge(&b), Err(DecodeError::Invalid { .. })));
    // The same label twice (sets are written once per member, in order).
    let node = Node::new(id("a")).with_label("x");
    let good = encode_node(&node);
    let mut dup = good[..18].to_vec(); // tag, id, then the label count
    dup[10..18].copy_from_slice(&2u64.to_le_bytes());
    dup.extend_from_slice(&good[18..27]); // "x"
    dup.extend_from_slice(&good[18..]);
    assert!(matches!(decode_node(&dup), Err(DecodeError::NonCanonical { .. })));
}

/// Vectors (read and written a block at a time) decode to the values written, `-0.0`
/// stored as `+0.0`; a stored `-0.0` is refused as non-canonical, and every truncation of a
/// vector's bytes is refused, never read past.
#[test]
fn vectors_are_decoded_strictly() {
    let values: Vec<f32> = (0..200).map(|i| (i as f32 - 100.0) / 7.0).collect();
    let mut with_zero = values.clone();
    with_zero[150] = -0.0;
    let node = Node::new(id("v"))
        .with_embedding("e", with_zero)
        .with_sparse("s", SparseVector::new(vec![1, 2], vec![-0.0, 2.0]));
    let bytes = encode_node(&node);
    let back = decode_node(&bytes).unwrap();
    assert_eq!(back.embeddings["e"][..150], values[..150]);
    assert_eq!(back.embeddings["e"][150].to_bits(), 0.0f32.to_bits());
    assert_eq!(back.embeddings["e"][151..], values[151..]);
    assert_eq!(back.sparse["s"].values[0].to_bits(), 0.0f32.to_bits());
    assert_eq!(encode_node(&back), bytes);
    // The dense vector's element 150 written as -0.0.
    let start = find(&bytes, &values[0].to_le_bytes());
    let mut b = bytes.clone();
    b[start + 150 * 4..start + 151 * 4].copy_from_slice(&(-0.0f32).to_le_bytes());
    assert!(matches!(decode_node(&b), Err(DecodeError::NonCanonical { .. })));
    // Cut anywhere inside the vectors: refused.
    for cut in start..bytes.len() {
        assert!(decode_node(&bytes[..cut]).is_err(), "a node cut at byte {cut} decoded");
    }
    // A NaN or an infinity anywhere (the check tests blocks of 64 whole, then searches the
    // failing one): refused as invalid, naming the first such element.
    for at in [0usize, 1, 63, 64, 65, 127, 128, 199] {
        for bad in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
            let mut b = bytes.clone();
            b[start + at * 4..start + at * 4 + 4].copy_from_slice(&bad.to_le_bytes());
            let later = (at + 3).min(199);
            b[start + later * 4..start + later * 4 + 4].copy_from_slice(&f32::NAN.to_le_bytes());
            match decode_node(&b) {
                Err(DecodeError::Invalid { detail, .. }) => {
                    assert!(detail.contains(&format!("embeddings.e[{at}]")), "{detail}")
                }
                other => panic!("{bad} at {at}: {other:?}"),
            }
        }
    }
    // The sparse vector's last weight (2.0: the last number before the validity's two
    // option tags).
    let mut s = bytes.clone();
    let sv = s.len() - 2 - 4;
    assert_eq!(s[sv..sv + 4], 2.0f32.to_le_bytes());
    s[sv..sv + 4].copy_from_slice(&f32::INFINITY.to_le_bytes());
    assert!(matches!(decode_node(&s), Err(DecodeError::Invalid { .. })));
}

#[test]
fn edge_tree_keys_are_pinned() {
    let (a, b) = (id("a"), id("b"));
    assert_eq!(hex(&edge_tree_key(&a, "cites", &b)), EDGE_KEY_HEX);
    assert_eq!(hex(&edge_in_tree_key(&a, "cites", &b)), EDGE_IN_KEY_HEX);
    assert_eq!(hex(&edge_key_prefix(&a)), "000161");
    assert!(edge_tree_key(&a, "cites", &b).starts_with(&edge_key_prefix(&a)));
    assert!(edge_in_tree_key(&a, "cites", &b).starts_with(&edge_key_prefix(&b)));
}
