//! Arbitrary bytes into every decoder of stored derived data (index chunk parts, unit
//! graphs, unit texts, manifests). The repository reads these from its derived space, where a
//! damaged or hostile value passes the store's crc whenever it was written as is: a
//! decoder may refuse any input, but it must not panic or abort (no allocation beyond
//! what the input describes), and what it accepts must encode back to the same bytes.

#![no_main]

use cairn_core::Hash;
use cairn_index::persist;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // The key a value carries is bytes 1..33; using it lets the fuzzer past the key check.
    let key = data
        .get(1..33)
        .and_then(|k| <[u8; 32]>::try_from(k).ok())
        .map_or(Hash::ZERO, Hash::from_bytes);
    let objects: std::sync::Arc<dyn cairn_index::RowSource> = std::sync::Arc::new(NoObjects);
    if let Ok(c) = persist::decode_node_core(data, &key, objects, b"ck") {
        assert_eq!(persist::encode_node_core(&key, &c), data, "node core");
    }
    assert_eq!(
        persist::check_node_core(data, &key).is_ok(),
        persist::decode_node_core(data, &key, std::sync::Arc::new(NoObjects), b"ck").is_ok()
    );
    if let Ok(t) = persist::decode_text(data, &key) {
        assert_eq!(persist::encode_text(&key, &t), data, "text part");
    }
    if let Ok((model, s)) = persist::decode_sparse(data, &key) {
        let n = persist::sparse_node_count(data).unwrap_or(0);
        assert_eq!(persist::encode_sparse(&key, &model, n, &s), data, "sparse part");
    }
    if let Ok((model, n, d)) = persist::decode_dense(data, &key) {
        assert_eq!(persist::encode_dense_head(&key, &model, n, &d), data, "dense part");
    }
    // Checking every row's codes only adds checks to the decode.
    if let Ok(model) = persist::check_dense(data, &key) {
        assert_eq!(persist::decode_dense(data, &key).map(|(m, _, _)| m).ok(), Some(model));
    }
    if let Ok((direction, e)) = persist::decode_edges(data, &key) {
        assert_eq!(persist::encode_edges(&key, direction, &e), data, "edge chunk");
    }
    if persist::decode_split(data, &key).is_ok() {
        assert_eq!(persist::encode_split(&key), data, "split marker");
    }
    if let Ok((model, g)) = persist::decode_unit_graph(data, &key) {
        assert_eq!(persist::encode_unit_graph(&key, &model, &g), data, "unit graph");
    }
    if let Ok(u) = cairn_index::UnitText::open(data.to_vec(), &key) {
        let parts = u.chunk_texts().expect("an opened unit text reads whole");
        let refs: Vec<&cairn_index::TextChunk> = parts.iter().collect();
        assert_eq!(cairn_index::unit_text::encode_unit_text(&key, &refs), data, "unit text");
    }
    if let Ok((n, h)) = persist::decode_manifest(data, &key) {
        assert_eq!(persist::encode_manifest(&key, n, &h), data, "manifest");
    }
});

/// A source with no objects: a core part's texts are read only when rendered.
struct NoObjects;

impl cairn_index::RowSource for NoObjects {
    fn read_at(&self, _: &[u8], _: u64, _: &mut [u8]) -> Result<bool, String> {
        Ok(false)
    }
    fn read_object_at(&self, _: &Hash, _: u64, _: &mut [u8]) -> Result<bool, String> {
        Ok(false)
    }
    fn node_vector(&self, _: &Hash, _: &str) -> Result<Vec<f32>, String> {
        Err("no objects".into())
    }
    fn node_text(&self, _: &Hash) -> Result<String, String> {
        Err("no objects".into())
    }
    fn damaged(&self, _: &[u8], _: String) {}
}
