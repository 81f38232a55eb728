//! Rows and texts read from the node objects: the repository's [`RowSource`] (a range of
//! an object read from the store, a row or text that cannot be read that way taken from its
//! node object whole), and the rule deciding when a view's dense rows stay on disk.
//!
//! Index parts store neither vectors nor texts (storage-format §7.3.1, §7.3.4): each row
//! and text names its node object, where its bytes start there, and their crc32. A core
//! part reads a text when an item is rendered, and rescoring a row when it needs it; loading
//! a part reads neither. The exact `f32` rows read are kept in memory while a commit's
//! nodes times the model's dimension times 4 bytes fit in a quarter of the memory budget
//! ([`Repo::set_memory_budget`](crate::Repo::set_memory_budget), 1 GiB by default: 256
//! MiB, ~170,000 384-d vectors); beyond that, on a store that reads value ranges (the
//! segment store, or a memory store keeping derived data), each part keeps its int8 codes
//! alone and rescoring reads the rows it needs from their objects each time, so a view
//! never holds all the rows at once. Scores are the same bits either way. Node texts
//! follow the same kind of rule ([`DerivedData::texts_in_memory`]). The handle's
//! background thread reads the rows a view keeps ([`DerivedData::fill_rows`]).

use std::collections::BTreeMap;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Weak};

use cairn_core::Hash;
use cairn_graph::Objects;
use cairn_index::{DenseChunk, RowSource};
use cairn_store::Store;
use parking_lot::Mutex;

use crate::dense_dims::{dense_dim_model, DENSE_DIM_META};
use crate::derived::background::{Job, Urgency};
use crate::derived::DerivedData;

/// The text bytes per node the rule for holding texts in memory assumes
/// ([`DerivedData::texts_in_memory`]).
const TEXT_BYTES_GUESS: u64 = 512;

/// Stored parts whose rows could not be read, with why: shared by a repository handle
/// and every part of its views that reads rows from the store.
pub(crate) type DamagedRows = Arc<Mutex<Vec<(Vec<u8>, String)>>>;

/// Rows read from the repository's store.
pub(crate) struct StoreRows {
    store: Arc<dyn Store>,
    damaged: DamagedRows,
}

impl RowSource for StoreRows {
    fn read_at(&self, key: &[u8], offset: u64, out: &mut [u8]) -> Result<bool, String> {
        self.store.read_derived_at(key, offset, out).map_err(|e| e.to_string())
    }

    fn read_object_at(&self, node: &Hash, offset: u64, out: &mut [u8]) -> Result<bool, String> {
        self.store.read_object_at(node, offset, out).map_err(|e| e.to_string())
    }

    fn node_vector(&self, node: &Hash, model: &str) -> Result<Vec<f32>, String> {
        let n = Objects::new(Arc::clone(&self.store))
            .node(node)
            .map_err(|e| e.to_string())?;
        n.embeddings
            .get(model)
            .cloned()
            .ok_or_else(|| format!("node {} has no `{model}` vector", node.short()))
    }

    fn node_text(&self, node: &Hash) -> Result<String, String> {
        let n = Objects::new(Arc::clone(&self.store))
            .node(node)
            .map_err(|e| e.to_string())?;
        Ok(n.text)
    }

    fn damaged(&self, key: &[u8], detail: String) {
        let mut d = self.damaged.lock();
        if !d.iter().any(|(k, _)| k == key) {
            d.push((key.to_vec(), detail));
        }
    }
}

impl DerivedData {
    /// The dense models whose rows views of a commit of `node_count` nodes leave on disk
    /// (module docs), each with the one source their parts read rows through — none unless
    /// the store keeps derived data and reads value ranges: those whose `node_count · dim ·
    /// 4` bytes exceed a quarter of the memory budget. Decided before any part is built or
    /// loaded, so that no part ever holds its rows for long.
    pub(super) fn on_disk(&self, persistent: bool, node_count: u64) -> BTreeMap<String, Arc<dyn RowSource>> {
        let mut out = BTreeMap::new();
        if !persistent || !self.store.reads_derived_ranges() {
            return out;
        }
        let quarter = self.cache.capacity() as u64 / 4;
        let source = self.row_source();
        // A repository whose dimensions cannot be read keeps every row in memory.
        let dims = self.refs().meta_list(DENSE_DIM_META).unwrap_or_default();
        for (key, value) in dims {
            let Ok(dim) = <[u8; 4]>::try_from(value.as_slice()).map(u32::from_le_bytes) else {
                continue;
            };
            if node_count.saturating_mul(u64::from(dim)).saturating_mul(4) > quarter {
                out.insert(dense_dim_model(&key).to_string(), Arc::clone(&source));
            }
        }
        out
    }

    /// True if views of a commit of `node_count` nodes hold their node texts in memory
    /// (each read from its node object the first time it is rendered): while `node_count`
    /// times [`TEXT_BYTES_GUESS`] fits a quarter of the memory budget (524,288 nodes at the 1 GiB
    /// default). Beyond, a text is read from its node object when an item is rendered.
    pub(super) fn texts_in_memory(&self, node_count: u64) -> bool {
        node_count.saturating_mul(TEXT_BYTES_GUESS) <= self.cache.capacity() as u64 / 4
    }

    /// The source rows and texts are read through: the store's objects and derived values.
    pub(super) fn row_source(&self) -> Arc<dyn RowSource> {
        Arc::new(StoreRows {
            store: Arc::clone(&self.store),
            damaged: Arc::clone(&self.damaged_rows),
        })
    }

    /// The source a view reads stored values by range through (rows, unit texts), if the
    /// store keeps derived data (`persistent`) and reads value ranges.
    pub(super) fn range_source(&self, persistent: bool) -> Option<Arc<dyn RowSource>> {
        (persistent && self.store.reads_derived_ranges()).then(|| {
            Arc::new(StoreRows {
                store: Arc::clone(&self.store),
                damaged: Arc::clone(&self.damaged_rows),
            }) as Arc<dyn RowSource>
        })
    }

    /// Queues those of `parts` that keep their rows once read and have not read them all
    /// for the background thread (`background.rs`), one job a part: a view's first queries
    /// read the rows they rescore (one positional read each) while it reads the rest, so
    /// that loading parts reads no row and later queries find them in memory. Parts are
    /// held weakly: one let go before its turn is skipped. Scores are the same bits
    /// whoever reads a row first.
    pub(super) fn fill_rows<'a>(&self, parts: impl IntoIterator<Item = &'a Arc<DenseChunk>>) {
        self.background.run(
            Urgency::Soon,
            parts.into_iter().filter(|p| p.rows_unread()).map(|p| {
                let part: Weak<DenseChunk> = Arc::downgrade(p);
                Box::new(move |stop: &AtomicBool| {
                    if let Some(part) = part.upgrade() {
                        part.read_held_rows(stop);
                    }
                }) as Job
            }),
        );
    }

    /// Deletes the stored parts whose rows could not be read since the last assembly and
    /// empties the cache, so they are rebuilt from the data: one note each, and their keys
    /// (whose absence the assembly then expects).
    pub(super) fn drop_damaged_rows(&self) -> (Vec<String>, Vec<Vec<u8>>) {
        let damaged = std::mem::take(&mut *self.damaged_rows.lock());
        if damaged.is_empty() {
            return (Vec::new(), Vec::new());
        }
        let keys: Vec<Vec<u8>> = damaged.iter().map(|(k, _)| k.clone()).collect();
        // A part that cannot be deleted is read whole on its next load, where the
        // store's own checksum finds the damage and it is rebuilt all the same.
        let deleted = match self.store.delete_derived(&keys) {
            Ok(()) => String::new(),
            Err(e) => format!(" (deleting it failed: {e})"),
        };
        self.cache.clear();
        let notes = damaged
            .into_iter()
            .map(|(k, why)| format!("the stored {} is damaged ({why}); rebuilt{deleted}", part_name(&k)))
            .collect();
        (notes, keys)
    }
}

/// `dense:MODEL part of chunk SHORT`, `core part of chunk SHORT` or `unit text SHORT`,
/// read off a part's store key (`ck/ ‖ chunk ‖ tag [‖ model]` or `ut/ ‖ unit`,
/// storage-format §7.1).
fn part_name(key: &[u8]) -> String {
    let hex = |b: &[u8]| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
    if key.starts_with(crate::derived::keys::Space::UnitText.prefix()) {
        return format!("unit text {}", hex(key.get(3..9).unwrap_or_default()));
    }
    match (key.get(3..9), key.get(35), key.get(36..)) {
        (Some(chunk), Some(&crate::derived::keys::TAG_NODE_CORE), _) => format!("core part of chunk {}", hex(chunk)),
        (Some(chunk), _, Some(model)) if !model.is_empty() => {
            format!("dense:{} part of chunk {}", String::from_utf8_lossy(model), hex(chunk))
        }
        _ => format!("part {}", hex(key)),
    }
}
