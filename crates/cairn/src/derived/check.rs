//! Checking stored derived data (`fsck`): every entry of the chunk, unit-graph, unit-text
//! and manifest spaces is read and decoded by the bounded reader under the key it is stored
//! at. Damage here is reported apart from damage to the data: derived data is rebuilt from
//! the objects on use, and [`Repo::repair_derived`](crate::Repo::repair_derived) deletes what is damaged at once.

use cairn_index::persist;

use crate::derived::keys::{Space, SPACES};
use crate::derived::DerivedData;
use crate::error::Result;
use crate::progress::Step;

/// One damaged derived entry: its store key and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DerivedDamage {
    pub(crate) key: Vec<u8>,
    pub(crate) problem: String,
}

fn printable(key: &[u8]) -> String {
    let (prefix, rest) = key.split_at(key.len().min(3));
    let hex: String = rest.iter().take(32).map(|b| format!("{b:02x}")).collect();
    let tail = String::from_utf8_lossy(rest.get(33..).unwrap_or_default());
    format!(
        "{}{hex}{}{tail}",
        String::from_utf8_lossy(prefix),
        if rest.len() > 32 { "/" } else { "" }
    )
}

/// Decodes one entry of a hashed space; the error says what is wrong.
fn check_entry(space: Space, key: &[u8], value: &[u8]) -> std::result::Result<(), String> {
    let hash = space.hash_of(key).ok_or("malformed key")?;
    let suffix = &key[space.prefix().len() + 32..];
    let model_of = |rest: &[u8]| String::from_utf8(rest.to_vec()).map_err(|_| "model name is not UTF-8".to_string());
    match space {
        Space::Chunk => {
            let (&tag, model) = suffix.split_first().ok_or("no part tag")?;
            let e = |e: cairn_index::IndexError| e.to_string();
            match tag {
                persist::TAG_NODE_CORE => persist::check_node_core(value, &hash).map_err(e),
                persist::TAG_TEXT => persist::decode_text(value, &hash).map(drop).map_err(e),
                persist::TAG_SPLIT => persist::decode_split(value, &hash).map_err(e),
                persist::TAG_EDGES => persist::decode_edges(value, &hash).map(drop).map_err(e),
                persist::TAG_SPARSE => {
                    let (m, _) = persist::decode_sparse(value, &hash).map_err(e)?;
                    (m == model_of(model)?)
                        .then_some(())
                        .ok_or_else(|| format!("part of model `{m}` under another model's key"))
                }
                persist::TAG_DENSE => {
                    let m = persist::check_dense(value, &hash).map_err(e)?;
                    (m == model_of(model)?)
                        .then_some(())
                        .ok_or_else(|| format!("part of model `{m}` under another model's key"))
                }
                t => Err(format!("unknown part tag 0x{t:02x}")),
            }
        }
        Space::Graph => {
            let (m, _) = persist::decode_unit_graph(value, &hash).map_err(|e| e.to_string())?;
            (m == model_of(suffix)?)
                .then_some(())
                .ok_or_else(|| format!("graph of model `{m}` under another model's key"))
        }
        Space::UnitText => {
            if !suffix.is_empty() {
                return Err("malformed key".into());
            }
            cairn_index::UnitText::open(value.to_vec(), &hash)
                .map(drop)
                .map_err(|e| e.to_string())
        }
        Space::Manifest => persist::decode_manifest(value, &hash)
            .map(drop)
            .map_err(|e| e.to_string()),
        Space::TimeIndex | Space::Retired(_) => Ok(()),
    }
}

impl DerivedData {
    /// Reads and decodes every stored chunk part, unit graph and manifest; returns how
    /// many entries were checked and the damaged ones.
    pub(crate) fn check(&self) -> Result<(u64, Vec<DerivedDamage>)> {
        let store = &self.store;
        let mut checked = 0u64;
        let mut damage = Vec::new();
        let mut spaces = Vec::new();
        for space in SPACES {
            if !matches!(space, Space::TimeIndex | Space::Retired(_)) {
                spaces.push((space, store.derived_keys(space.prefix())?));
            }
        }
        let total = spaces.iter().map(|(_, keys)| keys.len() as u64).sum();
        let meter = self.meter(Step::FsckDerived, Some(total));
        for (space, keys) in spaces {
            for key in keys {
                checked += 1;
                let problem = match store.get_derived(&key) {
                    Ok(Some(value)) => check_entry(space, &key, &value).err(),
                    Ok(None) => None, // deleted meanwhile
                    Err(e) => Some(e.to_string()),
                };
                if let Some(problem) = problem {
                    damage.push(DerivedDamage { key, problem });
                }
                meter.add(1);
            }
        }
        Ok((checked, damage))
    }

    /// Deletes every damaged entry [`DerivedData::check`] finds and drops the in-memory
    /// cache ([`Repo::repair_derived`](crate::Repo::repair_derived)); returns the entries
    /// deleted, described as `fsck` describes them.
    pub(crate) fn repair(&self) -> Result<Vec<String>> {
        let (_, damage) = self.check()?;
        let keys: Vec<Vec<u8>> = damage.iter().map(|d| d.key.clone()).collect();
        self.store.delete_derived(&keys)?;
        self.store.flush()?;
        self.cache.clear();
        Ok(damage.iter().map(describe).collect())
    }
}

/// A damaged entry as `fsck` prints it.
pub(crate) fn describe(d: &DerivedDamage) -> String {
    format!("derived entry {}: {}", printable(&d.key), d.problem)
}
