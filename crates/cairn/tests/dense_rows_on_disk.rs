//! Dense rows left on disk: when a model's exact rows do not fit a quarter of the index
//! cache, each part keeps its int8 codes and reads the rows rescoring needs from their node
//! objects (a dense part stores no vectors: where each row is in its node object, and its
//! crc32). Results are the same bytes as with the rows in memory; a row that fails its
//! checksum is never scored (its node's vector, read whole, is) and its part is rebuilt,
//! with `derived_rebuilt`.

use std::sync::Arc;

use cairn::retrieve::{RetrievalResult, WarningCode};
use cairn::{Hash, Node, NodeId, Repo, StoreKind};
use cairn_index::persist::{decode_dense, TAG_DENSE};
use cairn_store::{MemoryStore, Store};

const N: usize = 3000;
const DIM: usize = 16;
/// Commit and query time, fixed so that two repositories hold the same commit.
const T: i64 = 1_700_000_000_000;

/// A deterministic vector (xorshift), not normalised.
fn vector(i: usize, salt: u64) -> Vec<f32> {
    let mut rng = cairn_testkit::Rng((i as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ salt);
    (0..DIM).map(|_| rng.below(2001) as f32 / 1000.0 - 1.0).collect()
}

/// Node `i` of the repository.
fn node(i: usize) -> Node {
    let words = ["wing", "stall", "lift", "drag", "flow", "shock"];
    Node::new(NodeId::new(format!("n{i:05}")).unwrap())
        .with_label(["Doc", "Note"][i % 2])
        .with_text(format!("{} {}", words[i % 6], words[(i / 6) % 6]))
        .with_embedding("m", vector(i, 7))
}

fn fill(repo: &Repo) {
    let mut tx = repo.transaction().unwrap();
    for i in 0..N {
        tx.put_node(node(i)).unwrap();
    }
    tx.commit_at("nodes", T).unwrap();
}

/// Every query shape that rescores rows: exact with and without a gate, ANN, hybrid.
fn queries(repo: &Repo) -> Vec<RetrievalResult> {
    let mut out = Vec::new();
    for q in 0..4 {
        let v = vector(10_000 + q, 3);
        out.push(repo.retrieve().vector("m", &v).limit(25).valid_at(T).execute().unwrap());
        out.push(
            repo.retrieve()
                .label("Doc")
                .vector("m", &v)
                .limit(25)
                .valid_at(T)
                .execute()
                .unwrap(),
        );
        out.push(
            repo.retrieve()
                .vector("m", &v)
                .limit(25)
                .approximate(50)
                .valid_at(T)
                .execute()
                .unwrap(),
        );
        out.push(
            repo.retrieve()
                .label("Note")
                .vector("m", &v)
                .text("wing stall")
                .limit(40)
                .valid_at(T)
                .execute()
                .unwrap(),
        );
    }
    out
}

fn json(results: &[RetrievalResult]) -> Vec<String> {
    results.iter().map(|r| serde_json::to_string(r).unwrap()).collect()
}

/// The first query of [`queries`] (`gated`: the second, with the `Doc` label gate).
fn first_query(repo: &Repo, gated: bool) -> RetrievalResult {
    let mut r = repo.retrieve();
    if gated {
        r = r.label("Doc");
    }
    r.vector("m", &vector(10_000, 3))
        .limit(25)
        .valid_at(T)
        .execute()
        .unwrap()
}

/// Asserts two runs of [`queries`] are the same bytes, naming the first that differs.
fn same(got: &[String], expected: &[String]) {
    assert_eq!(got.len(), expected.len());
    for (i, (g, e)) in got.iter().zip(expected).enumerate() {
        assert!(g == e, "query {i} differs:\n{g}\n{e}");
    }
}

fn rows_in_memory(repo: &Repo) -> Vec<bool> {
    let ix = repo.indexes("HEAD").unwrap();
    let dense = ix.dense("m").unwrap();
    (0..ix.chunks().len())
        .filter_map(|c| dense.part(c).map(|p| p.rows_in_memory()))
        .collect()
}

/// A result's `derived_rebuilt` messages.
fn rebuilt_notes(r: &RetrievalResult) -> Vec<&str> {
    r.warnings
        .iter()
        .filter(|w| w.code == WarningCode::DerivedRebuilt)
        .map(|w| w.message.as_str())
        .collect()
}

/// Asserts that one of `rebuilt` names `part` and says `why`.
fn assert_noted(rebuilt: &[&str], part: &str, why: &str) {
    assert!(
        rebuilt.iter().any(|m| m.contains(part) && m.contains(why)),
        "no note of a {part} that {why}: {rebuilt:?}"
    );
}

/// Every stored dense part, `(key, value)` in key order.
fn dense_parts(store: &MemoryStore) -> Vec<(Vec<u8>, Vec<u8>)> {
    store
        .scan_derived(b"ck/")
        .unwrap()
        .into_iter()
        .filter(|(_, v)| v.first() == Some(&TAG_DENSE))
        .collect()
}

/// A repository over a store that keeps derived data, with rows in memory (default cache)
/// or on disk (a cache too small for them).
fn repo(on_disk: bool) -> (Repo, Arc<MemoryStore>) {
    let store = Arc::new(MemoryStore::keeping_derived());
    let repo = handle(&store, on_disk);
    fill(&repo);
    (repo, store)
}

/// The answers of a repository holding its rows in memory, and a repository of the same
/// nodes with its rows on disk (and its store), checked to give them.
fn on_disk_as_in_memory() -> (Vec<String>, Repo, Arc<MemoryStore>) {
    let (memory, _) = repo(false);
    let expected = json(&queries(&memory));
    let (disk, store) = repo(true);
    same(&json(&queries(&disk)), &expected);
    (expected, disk, store)
}

/// A new handle over `store`, with rows in memory (default cache) or on disk (a cache too
/// small for them): it assembles its views from what the store holds.
fn handle(store: &Arc<MemoryStore>, on_disk: bool) -> Repo {
    let repo = Repo::with_store(Arc::clone(store) as Arc<dyn Store>).unwrap();
    if on_disk {
        repo.set_memory_budget(64 << 10);
    }
    repo
}

/// Asserts `got` has the items of `expected` (one result of [`json`]); its warnings may
/// differ (a repair's notes).
fn same_items(got: &RetrievalResult, expected: &str) {
    let expected: RetrievalResult = serde_json::from_str(expected).unwrap();
    assert_eq!(got.items, expected.items);
}

#[test]
fn rows_on_disk_give_the_same_bytes_as_rows_in_memory() {
    let (memory, _) = repo(false);
    let (disk, _) = repo(true);
    let expected = json(&queries(&memory));
    same(&json(&queries(&disk)), &expected);
    assert!(rows_in_memory(&memory).iter().all(|&m| m));
    let on_disk = rows_in_memory(&disk);
    assert!(on_disk.len() > 10 && on_disk.iter().all(|&m| !m), "{on_disk:?}");
    // Warm again, and in a second handle over the same store (parts loaded, not built).
    same(&json(&queries(&disk)), &expected);
}

#[test]
fn rows_on_disk_in_a_segment_store_survive_reopening() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("repo");
    let (memory, _) = repo(false);
    let expected = json(&queries(&memory));
    {
        let repo = Repo::init_with(&path, StoreKind::Segment).unwrap();
        repo.set_memory_budget(64 << 10);
        fill(&repo);
        same(&json(&queries(&repo)), &expected);
        assert!(rows_in_memory(&repo).iter().all(|&m| !m));
    }
    let repo = Repo::open(&path).unwrap();
    repo.set_memory_budget(64 << 10);
    same(&json(&queries(&repo)), &expected);
    assert!(rows_in_memory(&repo).iter().all(|&m| !m));
}

/// With rows on disk, a handle loading dense parts from sealed segments keeps their codes
/// in the segments' mappings (`Store::get_derived_shared`, storage-format §7.3.4): the same
/// bytes as rows in memory; and a code flipped in a sealed segment is found by its row's
/// checksum when the row is first read (the store checks the record's framing, not the
/// whole value: `Store::get_derived_shared_unchecked`), the part rebuilt and said so, the
/// code never scored. (Small segments, so that
/// the parts lie in sealed ones. Linux: the mappings are seen in `/proc/self/maps`.)
#[test]
fn codes_read_where_they_lie_give_the_same_bytes_and_damage_is_rebuilt() {
    use cairn_store::SegmentStore;
    let dir = tempfile::tempdir().unwrap();
    let (memory, _) = repo(false);
    let expected = json(&queries(&memory));
    let open = || {
        let store = Arc::new(SegmentStore::open_with_segment_bytes(dir.path(), 64 << 10).unwrap());
        let repo = Repo::with_store(store as Arc<dyn Store>).unwrap();
        repo.set_memory_budget(64 << 10);
        repo
    };
    {
        let repo = open();
        fill(&repo);
        same(&json(&queries(&repo)), &expected);
    }
    let sealed = cairn_testkit::segment_files(dir.path(), "derived");
    assert!(sealed.len() > 4, "the parts fill several segments");
    let repo = open();
    same(&json(&queries(&repo)), &expected);
    assert!(rows_in_memory(&repo).iter().all(|&m| !m));
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
    let mapped = sealed.iter().filter(|s| maps.contains(s.to_str().unwrap())).count();
    assert!(mapped > 0, "dense parts were read through their segments' mappings");
    drop(repo);
    // Flip a byte of a dense part's last row of codes where it lies, in a sealed segment:
    // find the part's record by its key.
    let key_of = |bytes: &[u8]| {
        (0..bytes.len().saturating_sub(40))
            .find(|&i| bytes[i..].starts_with(b"ck/") && bytes[i + 35] == TAG_DENSE && bytes[i + 36] == b'm')
    };
    let (file, key_at) = sealed[..sealed.len() - 1]
        .iter()
        .find_map(|f| Some((f.clone(), key_of(&std::fs::read(f).unwrap())?)))
        .expect("a dense part in a sealed segment");
    let mut bytes = std::fs::read(&file).unwrap();
    // The record: 15-byte header (value_len at bytes 7..11), the key, the value, its crc.
    let head = key_at - 15;
    let value_len = u32::from_le_bytes(bytes[head + 7..head + 11].try_into().unwrap()) as usize;
    let key_len = u16::from_le_bytes(bytes[head + 5..head + 7].try_into().unwrap()) as usize;
    let code = key_at + key_len + value_len - 5;
    bytes[code] ^= 0x01;
    std::fs::write(&file, &bytes).unwrap();
    let repo = open();
    let results = queries(&repo);
    for (got, want) in results.iter().zip(&expected) {
        same_items(got, want);
    }
    // The store does not check a mapped dense part's whole value: the part checks the
    // code's row when the first query's bound pass reads it (every row: no gate), reports
    // it, and the next query's view has it deleted and rebuilt.
    let notes: Vec<&str> = results.iter().flat_map(rebuilt_notes).collect();
    assert!(
        notes.iter().any(|n| n.contains("stored dense:m part of chunk")
            && n.contains("is damaged (the int8 codes of row")
            && n.contains("fail their checksum")),
        "{notes:?}"
    );
    assert!(
        results[0].warnings.is_empty(),
        "the first query's answer uses no damaged code"
    );
}

/// A handle whose views hold their rows reads none as its parts load: a thread fills them
/// after. Dropping the handle stops and joins that thread, so the store can be opened again
/// at once (a segment store is locked while open), however far the filling got; and the
/// answers are the same bytes whoever read a row first.
#[test]
fn rows_filled_after_loading_never_keep_a_closed_repository_open() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("repo");
    // Ten times the nodes of the other tests, so that filling outlasts a query.
    {
        let repo = Repo::init_with(&path, StoreKind::Segment).unwrap();
        let mut tx = repo.transaction().unwrap();
        for i in 0..10 * N {
            tx.put_node(node(i)).unwrap();
        }
        tx.commit_at("nodes", T).unwrap();
        first_query(&repo, false);
    }
    let expected = serde_json::to_string(&first_query(&Repo::open(&path).unwrap(), false)).unwrap();
    for _ in 0..20 {
        // Each open loads the parts cold (a new handle) and starts a filler; the query
        // runs beside it, and the handle is dropped with the filler mid-way.
        let repo = Repo::open(&path).unwrap();
        assert_eq!(serde_json::to_string(&first_query(&repo, false)).unwrap(), expected);
        assert!(rows_in_memory(&repo).iter().all(|&m| m));
    }
}

/// Byte offset, in a stored dense part of `rows` rows of model `m`, of row `r`'s offset
/// in its node object (storage-format §7.3.4): after the tag, key, model, three counts and
/// the rows' locals, scales, bound terms, two checksums and node hashes.
fn offset_at(rows: usize, r: usize) -> usize {
    1 + 32 + 8 + 1 + 12 + rows * (4 + 4 + 4 + 4 + 4 + 4 + 32) + 4 * r
}

/// Where the head checksum of a stored dense part of `rows` rows lies: just before the
/// codes, which end the part.
fn head_crc_at(value: &[u8], rows: usize) -> usize {
    value.len() - rows * DIM - 4
}

/// `value` (a dense part of `rows` rows) with its head checksum made to hold again.
fn reseal(mut value: Vec<u8>, rows: usize) -> Vec<u8> {
    let end = head_crc_at(&value, rows);
    let crc = crc32fast::hash(&value[..end]);
    value[end..end + 4].copy_from_slice(&crc.to_le_bytes());
    value
}

#[test]
fn a_row_that_fails_its_checksum_is_scored_from_its_node_and_its_part_rebuilt() {
    let (expected, _, store) = on_disk_as_in_memory();
    // A part that is whole but wrong (what a store's checksum cannot see): the row of
    // query 0's top hit (n02890) points 4 bytes into its vector, its head sealed again.
    // Its row's own checksum must catch it.
    let dense = dense_parts(&store);
    assert!(dense.len() > 10);
    let top = cairn_core::codec::hash_object(&cairn_core::codec::encode_node(&node(2890)));
    let mut damaged = None;
    for (k, v) in &dense {
        let chunk = Hash::from_bytes(k[3..35].try_into().unwrap());
        let (model, _, part) = decode_dense(v, &chunk).unwrap();
        assert_eq!(model, "m");
        if let Some(r) = (0..part.len()).find(|&r| part.row_place(r).unwrap().0 == top) {
            let mut v = v.clone();
            let at = offset_at(part.len(), r);
            let moved = u32::from_le_bytes(v[at..at + 4].try_into().unwrap()) + 4;
            v[at..at + 4].copy_from_slice(&moved.to_le_bytes());
            damaged = Some((k.clone(), reseal(v, part.len())));
        }
    }
    store.put_derived(&[damaged.expect("the top hit's part")]).unwrap();
    // A new handle loads the part (its head is sound). The same answer: the row is read
    // from its node object whole.
    let disk = handle(&store, true);
    let first = first_query(&disk, false);
    assert_eq!(serde_json::to_string(&first).unwrap(), expected[0]);
    // The next assembly deletes and rebuilds the damaged parts and says so.
    let next = first_query(&disk, true);
    let rebuilt = rebuilt_notes(&next);
    assert_noted(&rebuilt, "dense:m part of chunk", "fails its checksum");
    assert_eq!(rebuilt.len(), 1, "one note for the one damaged part: {rebuilt:?}");
    same_items(&next, &expected[1]);
    // Rebuilt from the data: the stored parts are the original bytes again, and every
    // answer is what it was, with no warning left.
    let rebuilt = dense_parts(&store);
    assert_eq!(rebuilt, dense);
    same(&json(&queries(&disk)), &expected);
}

#[test]
fn a_row_its_node_does_not_hold_is_never_kept_in_memory_and_its_part_is_rebuilt() {
    let (memory, store) = repo(false);
    let expected = json(&queries(&memory));
    let dense = dense_parts(&store);
    // The row of query 0's top hit (n02890) points past its node object's end, its part
    // sealed again.
    let top = cairn_core::codec::hash_object(&cairn_core::codec::encode_node(&node(2890)));
    let (k, v, at, rows) = dense
        .iter()
        .find_map(|(k, v)| {
            let chunk = Hash::from_bytes(k[3..35].try_into().unwrap());
            let part = decode_dense(v, &chunk).unwrap().2;
            let r = (0..part.len()).find(|&r| part.row_place(r).unwrap().0 == top)?;
            Some((k.clone(), v.clone(), offset_at(part.len(), r), part.len()))
        })
        .expect("the top hit's part");
    let mut bad = v.clone();
    bad[at..at + 4].copy_from_slice(&(1u32 << 20).to_le_bytes());
    store.put_derived(&[(k.clone(), reseal(bad, rows))]).unwrap();
    // A new handle keeping its rows in memory reads each row the first time it rescores
    // it: that one cannot be read, so it is scored from its node object whole, and the
    // answer stands.
    let cold = handle(&store, false);
    assert!(rows_in_memory(&cold).iter().all(|&m| m));
    let first = first_query(&cold, false);
    assert_eq!(serde_json::to_string(&first).unwrap(), expected[0]);
    // The next assembly names the part once and rebuilds it.
    let next = first_query(&cold, true);
    let rebuilt = rebuilt_notes(&next);
    assert_eq!(rebuilt.len(), 1, "{rebuilt:?}");
    assert_noted(&rebuilt, "dense:m part of chunk", "does not hold the row");
    same_items(&next, &expected[1]);
    assert_eq!(dense_parts(&store), dense, "rebuilt to the original bytes");
    same(&json(&queries(&cold)), &expected);
}

#[test]
fn a_damaged_stored_head_is_never_served_and_its_part_is_rebuilt() {
    let (expected, _disk, store) = on_disk_as_in_memory();
    let dense = dense_parts(&store);
    // A flip in the head checksum itself of one part, and in a row's codes of another
    // (past the store's checksum: a memory store keeps none).
    let rows = |v: &[u8], k: &[u8]| {
        let chunk = Hash::from_bytes(k[3..35].try_into().unwrap());
        decode_dense(v, &chunk).unwrap().2.len()
    };
    let (k0, v0) = &dense[0];
    let (k1, v1) = &dense[1];
    let mut bad0 = v0.clone();
    bad0[head_crc_at(v0, rows(v0, k0))] ^= 0x80;
    let mut bad1 = v1.clone();
    bad1[v1.len() - 3] ^= 0x01;
    store.put_derived(&[(k0.clone(), bad0), (k1.clone(), bad1)]).unwrap();
    // A new handle loads every part cold: the damaged head is refused as it loads; the
    // damaged codes when the first query's bound pass reads their row (no gate: every
    // row) — the answer stands either way — and the next assembly deletes and rebuilds
    // that part. Each is named once.
    let cold = handle(&store, true);
    let first = first_query(&cold, false);
    let rebuilt = rebuilt_notes(&first);
    assert_eq!(rebuilt.len(), 1, "{rebuilt:?}");
    assert_noted(&rebuilt, "dense part of chunk", "head fails its checksum");
    same_items(&first, &expected[0]);
    let next = first_query(&cold, true);
    let rebuilt = rebuilt_notes(&next);
    assert_eq!(rebuilt.len(), 1, "{rebuilt:?}");
    assert_noted(&rebuilt, "dense:m part of chunk", "int8 codes of row");
    same_items(&next, &expected[1]);
    let after = dense_parts(&store);
    assert_eq!(after, dense, "rebuilt to the original bytes");
    same(&json(&queries(&cold)), &expected);
}

/// Every stored core part, `(key, value)` in key order.
fn core_parts(store: &MemoryStore) -> Vec<(Vec<u8>, Vec<u8>)> {
    store
        .scan_derived(b"ck/")
        .unwrap()
        .into_iter()
        .filter(|(_, v)| v.first() == Some(&cairn_index::persist::TAG_NODE_CORE))
        .collect()
}

/// The byte, in the stored core part `value` (storage-format §7.3.1) of one of this
/// repository's chunks, where node `id`'s text offset is: its text-table row's last field.
/// The head ends with the table, one dense model (`m`), no sparse model and no dates.
fn text_offset_at(value: &[u8], id: &str) -> Option<usize> {
    let n = u32::from_le_bytes(value[41..45].try_into().unwrap()) as usize;
    let mut at = 45;
    let mut local = None;
    for l in 0..n {
        let len = u64::from_le_bytes(value[at..at + 8].try_into().unwrap()) as usize;
        if &value[at + 8..at + 8 + len] == id.as_bytes() {
            local = Some(l);
        }
        at += 8 + len + 32;
    }
    let table_end = value.len() - n - 8 - (8 + 9 + 8);
    Some(table_end - 16 * n + 16 * local? + 12)
}

#[test]
fn texts_are_read_from_their_nodes_and_a_part_that_misplaces_one_is_rebuilt() {
    let (memory, _) = repo(false);
    let expected = json(&queries(&memory));
    let (disk, store) = repo(true);
    same(&json(&queries(&disk)), &expected);
    // Under the default budget a view holds its texts (read from their node objects as
    // its parts load); under the small one each is read from its node object when rendered.
    for (repo, held) in [(&memory, true), (&disk, false)] {
        let ix = repo.indexes("HEAD").unwrap();
        assert!(ix.chunks().len() > 10 && ix.chunks().iter().all(|c| c.texts_in_memory() == held));
    }
    // A core part that is whole but wrong: the text of query 0's top hit, n02890 ("flow
    // stall"), placed one byte further into its object, the head sealed again. The
    // text's own crc32 must catch it.
    let cores = core_parts(&store);
    let (key, mut value, at) = cores
        .iter()
        .find_map(|(k, v)| Some((k.clone(), v.clone(), text_offset_at(v, "n02890")?)))
        .expect("the top hit's core part");
    let offset = u32::from_le_bytes(value[at..at + 4].try_into().unwrap());
    value[at..at + 4].copy_from_slice(&(offset + 1).to_le_bytes());
    let crc = crc32fast::hash(&value[41..]);
    value[37..41].copy_from_slice(&crc.to_le_bytes());
    let damaged = value.clone();
    store.put_derived(&[(key.clone(), value)]).unwrap();
    // A new handle loads the part. The same answer: the text is read from its node
    // object whole.
    let disk = handle(&store, true);
    let first = first_query(&disk, false);
    assert_eq!(first.items[0].id.as_str(), "n02890");
    assert_eq!(serde_json::to_string(&first).unwrap(), expected[0]);
    // The next assembly deletes and rebuilds the damaged part and says so.
    let next = first_query(&disk, true);
    let rebuilt = rebuilt_notes(&next);
    assert_noted(&rebuilt, "core part of chunk", "fails its checksum");
    assert_eq!(core_parts(&store), cores, "rebuilt from the data");
    same(&json(&queries(&disk)), &expected);
    // The same damage, loaded by a handle that holds texts in memory (each read the first
    // time it is rendered): the answer stands, and the part is named and rebuilt by the
    // next assembly.
    store.put_derived(&[(key, damaged)]).unwrap();
    let held = handle(&store, false);
    let first = first_query(&held, false);
    assert_eq!(serde_json::to_string(&first).unwrap(), expected[0]);
    let next = first_query(&held, true);
    assert_noted(&rebuilt_notes(&next), "core part of chunk", "fails its checksum");
    same_items(&next, &expected[1]);
    assert_eq!(core_parts(&store), cores, "rebuilt from the data");
    same(&json(&queries(&held)), &expected);
}

/// A core part whose head length is damaged to one far past the value: the part is
/// refused, and rebuilt from its nodes to its original bytes, with the same answers and a
/// note.
#[test]
fn a_core_head_length_past_the_value_is_read_whole_refused_and_rebuilt() {
    let (expected, disk, store) = on_disk_as_in_memory();
    drop(disk);
    let cores = core_parts(&store);
    let (key, mut value) = cores[0].clone();
    value[33..37].copy_from_slice(&u32::MAX.to_le_bytes());
    store.put_derived(&[(key, value)]).unwrap();
    // A new handle assembles its view from the store.
    let cold = handle(&store, true);
    let first = first_query(&cold, false);
    let rebuilt = rebuilt_notes(&first);
    assert_noted(&rebuilt, "core part of chunk", "damaged");
    same_items(&first, &expected[0]);
    assert_eq!(core_parts(&store), cores, "rebuilt from the data");
    same(&json(&queries(&cold)), &expected);
}

/// A unit's graph is built only from codes checked whole: a stored part whose codes fail
/// their check is replaced, for the build, by the chunk's part built from its objects — so
/// the stored graphs are the bytes an undamaged repository stores — and the part is named
/// and rebuilt.
#[test]
fn a_unit_graph_is_never_built_from_damaged_codes() {
    let graphs = |store: &MemoryStore| store.scan_derived(b"ug/").unwrap();
    let ann = |repo: &Repo| {
        repo.retrieve()
            .vector("m", &vector(10_000, 3))
            .limit(25)
            .approximate(50)
            .valid_at(T)
            .execute()
            .unwrap()
    };
    // The graphs of an undamaged repository.
    let (whole, whole_store) = repo(true);
    ann(&whole);
    let expected = graphs(&whole_store);
    assert!(!expected.is_empty());
    // Another, whose parts are stored but whose graphs are not built yet: a row's codes
    // damaged in one part (a memory store keeps no checksum of its own).
    let (damaged, store) = repo(true);
    first_query(&damaged, false);
    assert!(graphs(&store).is_empty());
    // Every code of one part negated (never −128: no code is): a graph built from them
    // would differ.
    let (k, v) = dense_parts(&store).swap_remove(0);
    let chunk = Hash::from_bytes(k[3..35].try_into().unwrap());
    let codes_at = v.len() - decode_dense(&v, &chunk).unwrap().2.len() * DIM;
    let mut bad = v.clone();
    bad[codes_at..]
        .iter_mut()
        .for_each(|c| *c = (*c as i8).wrapping_neg() as u8);
    store.put_derived(&[(k, bad)]).unwrap();
    let cold = handle(&store, true);
    let first = ann(&cold);
    assert!(graphs(&store) == expected, "the graphs are those of the undamaged data");
    let next = first_query(&cold, true);
    let notes: Vec<&str> = [&first, &next].into_iter().flat_map(rebuilt_notes).collect();
    assert_noted(&notes, "dense:m part of chunk", "int8 codes of row");
    assert!(dense_parts(&store) == dense_parts(&whole_store), "the part rebuilt");
}
