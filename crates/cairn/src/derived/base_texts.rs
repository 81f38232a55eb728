//! Storing the unit texts of a text base in the background.
//!
//! A view whose donor is served by unit texts derives its own from them (`build.rs`'s
//! `derive_text`): a process that stays open never reads or stores the unit texts of the
//! commit its text lane is based on ([`graph_base`](super::graph_base)), which moves on
//! every 64 commits or so. A fresh process's first view of a later commit reads that base's
//! units, and built every one it did not find from all their chunks' text parts: at 1M
//! nodes, after ~450 one-node commits, 19 of 23 units and 3.1 s before its first answer
//! (0.33 s once they are stored).
//!
//! So when a derived view's base is a commit not seen before, the handle queues one
//! background job per unit of it (`background.rs`): a unit text not in the store is built
//! from its chunks' stored text parts and stored, with the key and bytes an assembly would
//! give it (`encode_unit_text` over the same parts, in the same order). A unit one of whose
//! text parts is not stored (or cannot be read) is left to the assembly that needs it,
//! which builds it as before. Nothing here changes a score: BM25 reads the same postings
//! through any unit cut.
//!
//! The work is owed to later processes, so closing the handle does not drop it: the idle
//! thread is stopped, and the units of the latest base still not stored are built and
//! stored on the closing thread ([`DerivedData::finish_base_texts`]; seconds at 1M nodes,
//! once a base move, in the process whose commits moved it, instead of in the next
//! process's first query).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use cairn_core::Hash;
use cairn_index::persist;
use cairn_index::unit_text::encode_unit_text;
use cairn_index::TextChunk;
use cairn_store::Store;
use rayon::prelude::*;

use crate::derived::background::{Job, Urgency};
use crate::derived::build::{put_values, units_of, Ctx};
use crate::derived::keys::{part_store_key, unit_key, unit_text_store_key, TAG_TEXT};
use crate::derived::spans::ChunkList;
use crate::derived::DerivedData;

/// How many bases a handle remembers having queued (a base is queued once).
const REMEMBERED: usize = 16;

impl DerivedData {
    /// Queues the storing of the unit texts of base `root` (node chunks `base`) that are not
    /// stored yet (module docs); once per base and handle.
    pub(super) fn store_base_texts(&self, ctx: &Ctx, root: Hash, base: &ChunkList) {
        if !ctx.persistent {
            return;
        }
        if self.text_bases.lock().iter().any(|(r, _)| *r == root) {
            return;
        }
        let (chunks, ranges, _) = units_of(&base[..], None);
        let units: Vec<Arc<[Hash]>> = ranges
            .into_iter()
            .map(|range| chunks[range].iter().map(|c| c.key).collect())
            .collect();
        {
            let mut seen = self.text_bases.lock();
            // Another view may have queued the base meanwhile.
            if seen.iter().any(|(r, _)| *r == root) {
                return;
            }
            if seen.len() == REMEMBERED {
                seen.pop_front();
            }
            seen.push_back((root, units.clone()));
        }
        let fp = ctx.fp;
        let jobs: Vec<Job> = units
            .into_iter()
            .map(|keys| {
                let store = Arc::clone(&self.store);
                let stored = Arc::clone(&self.stored);
                let writes = self.background.soon();
                Box::new(move |stop: &AtomicBool| {
                    let Some((k, v)) = unit_text_from_parts(store.as_ref(), &fp, &keys, stop) else {
                        return;
                    };
                    // Written at normal priority: this thread may wait long for a core.
                    writes.run_soon(Box::new(move |_: &AtomicBool| {
                        // A value that cannot be stored is built by the assembly that needs it.
                        let _ = put_values(store.as_ref(), &stored, &[(k, v)]);
                    }));
                }) as Job
            })
            .collect();
        self.background.run(Urgency::Idle, jobs);
    }

    /// Stores, on the calling thread (its units in parallel), the unit texts of the latest
    /// base queued that are still not stored (module docs). Called when the handle closes,
    /// after its background threads stopped; a value that cannot be stored is left to the
    /// assembly that needs it.
    pub(super) fn finish_base_texts(&self) {
        let Some((_, units)) = self.text_bases.lock().back().cloned() else {
            return;
        };
        let open = AtomicBool::new(false);
        let values: Vec<(Vec<u8>, Vec<u8>)> = units
            .par_iter()
            .filter_map(|keys| unit_text_from_parts(self.store.as_ref(), &self.fingerprint, keys, &open))
            .collect();
        if !values.is_empty() {
            let _ = put_values(self.store.as_ref(), &self.stored, &values);
        }
    }
}

/// The store key and bytes of the unit text of the unit of chunks `keys`, if it is not
/// stored and every chunk's text part is (`None` too if the handle is closing).
fn unit_text_from_parts(store: &dyn Store, fp: &Hash, keys: &[Hash], stop: &AtomicBool) -> Option<(Vec<u8>, Vec<u8>)> {
    let key = unit_key(fp, keys);
    let skey = unit_text_store_key(&key);
    if !matches!(store.read_derived_at(&skey, 0, &mut [0u8; 1]), Ok(false)) {
        return None;
    }
    let mut parts: Vec<TextChunk> = Vec::with_capacity(keys.len());
    for chunk in keys {
        if stop.load(Ordering::Relaxed) {
            return None;
        }
        let bytes = store.get_derived(&part_store_key(chunk, TAG_TEXT, None)).ok()??;
        parts.push(persist::decode_text(&bytes, chunk).ok()?);
    }
    let refs: Vec<&TextChunk> = parts.iter().collect();
    Some((skey, encode_unit_text(&key, &refs)))
}

/// The bases a handle has queued (most recent last), each with its units' chunk keys.
pub(super) type QueuedBases = parking_lot::Mutex<VecDeque<(Hash, Vec<Arc<[Hash]>>)>>;
