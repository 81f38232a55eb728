//! A stable counting scatter by one byte of each item: the step both radix sorts of a
//! chunk's build take (a sparse part's entries by dimension, `sparse.rs`; a text part's
//! terms by their first byte, `text.rs`).

/// Writes `items` into `out` (of the same length) grouped by `byte(item)` in increasing
/// order, each group in input order; returns where each byte's group starts in `out`
/// (entry 256: the length).
pub(crate) fn scatter_by_byte<T: Copy>(items: &[T], out: &mut [T], byte: impl Fn(&T) -> u8) -> [usize; 257] {
    debug_assert_eq!(items.len(), out.len());
    let mut starts = [0usize; 257];
    for e in items {
        starts[usize::from(byte(e)) + 1] += 1;
    }
    for i in 1..starts.len() {
        starts[i] += starts[i - 1];
    }
    let mut at = starts;
    for e in items {
        let b = usize::from(byte(e));
        out[at[b]] = *e;
        at[b] += 1;
    }
    starts
}
