//! The dense-dimension records: repository metadata `meta/dense-dim/<model>` holding a
//! dense model's dimension (u32 little-endian, storage-format §5). The commit writer
//! registers them (`writer.rs`), `fsck` checks and repairs them (`fsck/dims.rs`), fetch
//! and push copy them (`remote/sync.rs`), [`Repo::dense_dim`](crate::Repo::dense_dim) and
//! the rule that leaves rows on disk (`derived/rows.rs`) read them. This is the one place
//! their key is spelled.

/// Meta key prefix of the dense-dimension records.
pub(crate) const DENSE_DIM_META: &str = "dense-dim/";

/// The meta key of `model`'s record: `dense-dim/<model>`.
pub(crate) fn dense_dim_key(model: &str) -> String {
    format!("{DENSE_DIM_META}{model}")
}

/// The model a record's meta key names (the key without the prefix).
pub(crate) fn dense_dim_model(key: &str) -> &str {
    key.trim_start_matches(DENSE_DIM_META)
}
