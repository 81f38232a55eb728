//! Documented caps on every user-supplied size. Inputs over a cap are refused with a
//! [`ValidationError`](crate::ValidationError); decoders refuse them too, so a corrupt or
//! hostile object cannot make Cairn allocate without bound.

/// A node id is 1..=256 bytes of UTF-8.
pub const MAX_NODE_ID_BYTES: usize = 256;
/// Labels, edge kinds, property keys and model names: 1..=128 bytes.
pub const MAX_NAME_BYTES: usize = 128;
/// A node carries at most 64 labels.
pub const MAX_LABELS: usize = 64;
/// A node's text payload: at most 1 MiB of UTF-8.
pub const MAX_TEXT_BYTES: usize = 1 << 20;
/// A dense embedding has 1..=4096 dimensions.
pub const MAX_EMBEDDING_DIM: usize = 4096;
/// A node carries at most 16 dense and 16 sparse models.
pub const MAX_MODELS_PER_NODE: usize = 16;
/// A sparse vector has at most 65,536 non-zero entries.
pub const MAX_SPARSE_NNZ: usize = 1 << 16;
/// Property values nest at most 32 deep (lists and maps).
pub const MAX_VALUE_DEPTH: usize = 32;
/// The encoded properties of one node or edge: at most 256 KiB.
pub const MAX_PROPS_BYTES: usize = 256 << 10;
/// The largest encoded object the decoder will accept: 16 MiB.
pub const MAX_OBJECT_BYTES: usize = 16 << 20;
/// Commit author: at most 1 KiB; commit message: at most 64 KiB.
pub const MAX_AUTHOR_BYTES: usize = 1 << 10;
/// Commit message cap.
pub const MAX_MESSAGE_BYTES: usize = 64 << 10;
/// One line of the JSON Lines import format: at most 64 MiB (the largest node the other
/// caps allow takes about half that as JSON).
pub const MAX_IMPORT_LINE_BYTES: usize = 64 << 20;
/// A commit has at most 16 parents.
pub const MAX_PARENTS: usize = 16;
