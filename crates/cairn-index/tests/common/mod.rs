//! Helpers shared by this crate's tests.

use std::sync::atomic::{AtomicUsize, Ordering};

use cairn_core::Hash;
use cairn_index::RowSource;
use parking_lot::Mutex;

/// One stored value read by range, and node objects (`objects`, by hash) read by range,
/// as a [`RowSource`]: reads counted, damage recorded, node texts read whole from `texts`
/// (by node hash).
#[derive(Default)]
pub struct OneValue {
    pub value: Mutex<Vec<u8>>,
    pub objects: Mutex<Vec<(Hash, Vec<u8>)>>,
    pub damaged: Mutex<Vec<String>>,
    pub reads: AtomicUsize,
    pub texts: Vec<(Hash, String)>,
}

impl RowSource for OneValue {
    fn read_at(&self, _: &[u8], offset: u64, out: &mut [u8]) -> Result<bool, String> {
        self.reads.fetch_add(1, Ordering::Relaxed);
        let v = self.value.lock();
        let Some(s) = v.get(offset as usize..offset as usize + out.len()) else {
            return Ok(false);
        };
        out.copy_from_slice(s);
        Ok(true)
    }
    fn read_object_at(&self, node: &Hash, offset: u64, out: &mut [u8]) -> Result<bool, String> {
        self.reads.fetch_add(1, Ordering::Relaxed);
        let objects = self.objects.lock();
        let Some((_, bytes)) = objects.iter().find(|(h, _)| h == node) else {
            return Ok(false);
        };
        let Some(s) = bytes.get(offset as usize..offset as usize + out.len()) else {
            return Ok(false);
        };
        out.copy_from_slice(s);
        Ok(true)
    }
    fn node_vector(&self, _: &Hash, _: &str) -> Result<Vec<f32>, String> {
        Err("no vectors".into())
    }
    fn node_text(&self, node: &Hash) -> Result<String, String> {
        self.texts
            .iter()
            .find(|(h, _)| h == node)
            .map(|(_, t)| t.clone())
            .ok_or_else(|| "no text for that node".into())
    }
    fn damaged(&self, _: &[u8], detail: String) {
        self.damaged.lock().push(detail);
    }
}
