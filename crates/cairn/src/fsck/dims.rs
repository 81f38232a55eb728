//! The dense-dimension records, `meta/dense-dim/<model>` (storage-format §6.4 step 3): one
//! `u32le` per model, the dimension every vector of that model must have. `fsck` checks
//! each against the stored node objects' vectors; `fsck --repair` writes a missing,
//! damaged or malformed record again from those vectors, and removes one that no stored
//! node needs (left by a refused or interrupted write).

use std::collections::{BTreeMap, BTreeSet};

use cairn_store::CasOutcome;

use crate::dense_dims::{dense_dim_key, dense_dim_model, DENSE_DIM_META};
use crate::error::Result;
use crate::repo::Repo;

/// Each dense model's vector lengths among some node objects.
pub(super) type NodeDims = BTreeMap<String, BTreeSet<usize>>;

/// What `fsck`'s walk saw of the vectors: among every stored node object, and among those
/// the branches and tags reach (and their history).
pub(super) struct Dims {
    pub(super) stored: NodeDims,
    pub(super) reached: NodeDims,
}

/// What a model's record holds.
enum Record {
    Absent,
    Damaged(String),
    Malformed(Vec<u8>),
    Dim(usize),
}

impl Repo {
    fn dim_record(&self, model: &str) -> Record {
        match self.refs().meta(&dense_dim_key(model)) {
            Ok(None) => Record::Absent,
            Ok(Some(v)) => match <[u8; 4]>::try_from(v.as_slice()) {
                Ok(b) if u32::from_le_bytes(b) > 0 => Record::Dim(u32::from_le_bytes(b) as usize),
                _ => Record::Malformed(v),
            },
            Err(e) => Record::Damaged(e.to_string()),
        }
    }

    /// The models with a record, read by listing (a listing that fails is a problem of its
    /// own; the models the nodes hold are still checked one by one).
    fn recorded_models(&self, problems: &mut Vec<String>) -> BTreeSet<String> {
        match self.refs().meta_list(DENSE_DIM_META) {
            Ok(list) => list.into_iter().map(|(k, _)| dense_dim_model(&k).to_string()).collect(),
            Err(e) => {
                problems.push(format!("the dense-dimension records cannot be listed: {e}"));
                BTreeSet::new()
            }
        }
    }

    /// Problems with the dimension records, one line each: against the vectors of the
    /// nodes the branches and tags reach (`reached`), and of every stored node (`stored`:
    /// a record no stored node needs is an orphan; unreachable nodes need no record).
    pub(super) fn check_dims(&self, stored: &NodeDims, reached: &NodeDims, problems: &mut Vec<String>) {
        let mut models = self.recorded_models(problems);
        models.extend(reached.keys().cloned());
        for model in models {
            let name = format!("meta/{}", dense_dim_key(&model));
            let held = reached.get(&model).or_else(|| stored.get(&model));
            let single = held.filter(|d| d.len() == 1).and_then(|d| d.first().copied());
            match (self.dim_record(&model), held) {
                (Record::Dim(d), Some(h)) if h.iter().all(|&x| x == d) => {}
                (Record::Dim(d), Some(h)) => problems.push(format!(
                    "{name} says {d} dimensions, but stored `{model}` vectors have {h:?}"
                )),
                (Record::Dim(d), None) => problems.push(format!(
                    "{name} registers {d} dimensions, but no stored node holds a `{model}` vector (left by a refused or interrupted write; `cairn fsck --repair` removes it)"
                )),
                (Record::Absent, _) => problems.push(match single {
                    Some(d) => format!(
                        "{name} is missing: the stored `{model}` vectors have {d} dimensions (`cairn fsck --repair` writes it)"
                    ),
                    None => format!("{name} is missing, and the stored `{model}` vectors disagree on their dimension"),
                }),
                (Record::Damaged(e), _) => problems.push(format!(
                    "{name} is damaged: {e} (`cairn fsck --repair` writes it from the stored vectors)"
                )),
                (Record::Malformed(v), _) => problems.push(format!(
                    "{name} holds {} bytes that are no dimension (`cairn fsck --repair` writes it from the stored vectors)",
                    v.len()
                )),
            }
        }
    }

    /// Writes missing, damaged or malformed dimension records from the vectors of the
    /// nodes the branches and tags reach (when they agree on one dimension), and removes
    /// records no stored node needs. Returns what it did; sound records are left alone.
    /// Reads every object (it runs [`Repo::fsck`]'s walk).
    pub fn repair_dims(&self) -> Result<Vec<String>> {
        let Dims { stored, reached: dims } = self.fsck_with_dims()?.1;
        let mut done = Vec::new();
        let mut ignored = Vec::new();
        let mut models = self.recorded_models(&mut ignored);
        models.extend(dims.keys().cloned());
        let store = self.store();
        for model in models {
            let key = dense_dim_key(&model);
            let name = format!("meta/{key}");
            let single = dims
                .get(&model)
                .filter(|d| d.len() == 1)
                .and_then(|d| d.first().copied());
            let value = single.map(|d| (d as u32).to_le_bytes().to_vec());
            let needed = stored.contains_key(&model);
            let written = || {
                format!(
                    "{name} written ({} dimensions, from the stored vectors)",
                    single.unwrap_or(0)
                )
            };
            let removed = || format!("{name} removed (no stored node holds a `{model}` vector)");
            let swapped = |old: &[u8], new: Option<&[u8]>| -> Result<bool> {
                Ok(store.cas_ref(&name, Some(old), new)? == CasOutcome::Swapped)
            };
            let outcome = match (self.dim_record(&model), &value) {
                (Record::Absent, Some(v)) => {
                    self.refs().register_meta(&key, v)?;
                    Some(written())
                }
                (Record::Damaged(_), Some(v)) => {
                    let gone = store.remove_damaged_ref(&name)?;
                    if gone {
                        self.refs().register_meta(&key, v)?;
                    }
                    gone.then(written)
                }
                (Record::Malformed(old), Some(v)) => swapped(&old, Some(v))?.then(written),
                (Record::Dim(d), None) if !needed => swapped(&(d as u32).to_le_bytes(), None)?.then(removed),
                (Record::Malformed(old), None) if !needed => swapped(&old, None)?.then(removed),
                _ => None,
            };
            done.extend(outcome);
        }
        store.flush()?;
        Ok(done)
    }
}

/// Adds `node`'s vector lengths to `dims`.
pub(super) fn add_node_dims(dims: &mut NodeDims, node: &cairn_core::Node) {
    for (model, v) in &node.embeddings {
        dims.entry(model.clone()).or_default().insert(v.len());
    }
}
