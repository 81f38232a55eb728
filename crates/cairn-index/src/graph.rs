//! PLACEHOLDER until the in-crate HNSW lands: brute force with the same API.

/// Build and search parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GraphParams {
    /// Neighbours per node on upper layers (layer 0 keeps `2·m`).
    pub m: usize,
    /// Candidate list size while inserting.
    pub ef_construction: usize,
    /// Base seed (each unit's graph mixes in its unit key).
    pub seed: u64,
}

impl Default for GraphParams {
    fn default() -> Self {
        GraphParams {
            m: 16,
            ef_construction: 100,
            seed: 0x6361_6972_6e2d_6877,
        }
    }
}

/// A graph over rows `0..n`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnitGraph {
    n: u32,
}

impl UnitGraph {
    /// Builds.
    pub fn build(n: u32, _params: &GraphParams, _dist: impl Fn(u32, u32) -> f32) -> UnitGraph {
        UnitGraph { n }
    }
    /// Searches.
    pub fn search(&self, ef: usize, dist_q: impl Fn(u32) -> f32, accept: impl Fn(u32) -> bool) -> Vec<u32> {
        let mut all: Vec<(f32, u32)> = (0..self.n).filter(|&r| accept(r)).map(|r| (dist_q(r), r)).collect();
        all.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        all.truncate(ef);
        all.into_iter().map(|x| x.1).collect()
    }
    /// Rows.
    pub fn len(&self) -> u32 {
        self.n
    }
    /// Empty.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }
    /// Bytes.
    pub fn encode(&self) -> Vec<u8> {
        self.n.to_le_bytes().to_vec()
    }
    /// Decode.
    pub fn decode(bytes: &[u8]) -> Result<UnitGraph, String> {
        let a: [u8; 4] = bytes.try_into().map_err(|_| "bad".to_string())?;
        Ok(UnitGraph {
            n: u32::from_le_bytes(a),
        })
    }
    /// Heap.
    pub fn heap_bytes(&self) -> usize {
        16
    }
}
