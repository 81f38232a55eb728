//! Arbitrary bytes into every object decoder. A decoder may refuse any input, but it
//! must not panic, and whatever it accepts must be canonical: re-encoding the decoded
//! value gives back exactly the input bytes (so an object's hash is a function of its
//! value). `decode_object` must agree with the decoder its tag byte selects.

#![no_main]

use cairn_core::codec::{
    decode_commit, decode_edge, decode_node, decode_object, decode_tree, encode_commit, encode_edge, encode_node,
    encode_tree, Object,
};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let node = decode_node(data).ok().map(|n| encode_node(&n));
    let edge = decode_edge(data).ok().map(|e| encode_edge(&e));
    let tree = decode_tree(data).ok().map(|t| encode_tree(&t));
    let commit = decode_commit(data).ok().map(|c| encode_commit(&c));
    for (kind, reencoded) in [("node", &node), ("edge", &edge), ("tree", &tree), ("commit", &commit)] {
        if let Some(bytes) = reencoded {
            assert_eq!(bytes.as_slice(), data, "{kind} decoded from non-canonical bytes");
        }
    }
    // The tag byte picks one kind, so at most one decoder accepts any input.
    let accepted = [&node, &edge, &tree, &commit].iter().filter(|r| r.is_some()).count();
    assert!(accepted <= 1, "{accepted} decoders accepted one input");

    match decode_object(data) {
        Ok(object) => {
            let (bytes, specific) = match &object {
                Object::Node(n) => (encode_node(n), &node),
                Object::Edge(e) => (encode_edge(e), &edge),
                Object::Tree(t) => (encode_tree(t), &tree),
                Object::Commit(c) => (encode_commit(c), &commit),
            };
            assert_eq!(bytes.as_slice(), data, "decode_object accepted non-canonical bytes");
            assert!(
                specific.is_some(),
                "decode_object accepted what its kind's decoder refused"
            );
        }
        Err(_) => assert_eq!(accepted, 0, "decode_object refused what a kind's decoder accepted"),
    }
});
