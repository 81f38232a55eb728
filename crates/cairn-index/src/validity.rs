//! Validity intervals as the indexes store them, for `valid_at(t)` gates.

use cairn_core::Validity;

/// The stored `(from, until)` of a validity: open ends become `i64::MIN` / `i64::MAX`.
pub fn validity_bounds(v: &Validity) -> (i64, i64) {
    (
        v.valid_from_ms.unwrap_or(i64::MIN),
        v.valid_until_ms.unwrap_or(i64::MAX),
    )
}

/// `from <= t < until`, where `until == i64::MAX` means open (so it also holds at
/// `t = i64::MAX`, as [`Validity::contains`] does for an open end).
pub fn bounds_contain(from_ms: i64, until_ms: i64, t_ms: i64) -> bool {
    from_ms <= t_ms && (t_ms < until_ms || until_ms == i64::MAX)
}
