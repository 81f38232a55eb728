//! Key-range arithmetic shared by the backends' ordered scans.

use std::ops::Bound;

/// The smallest key that is greater than every key starting with `prefix`, or `None`
/// if there is none (`prefix` is empty or all `0xff`): the exclusive end of a prefix scan.
pub(crate) fn prefix_end(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < u8::MAX {
            end.push(last + 1);
            return Some(end);
        }
    }
    None
}

/// The upper bound of the key range searched by `last_derived_at_or_before(prefix, upper)`:
/// keys that start with `prefix` and are `<= upper`. `None` if no key can qualify
/// (`upper < prefix`).
///
/// Searching `prefix..=upper` and discarding a last key that lacks the prefix would be
/// wrong when `upper` lies past the prefix's keys (prefix `a/`, upper `b/9`, keys `a/1`
/// and `b/0`: the answer is `a/1`), so the range is cut at the prefix's end instead, and
/// every key in it starts with `prefix`.
pub(crate) fn at_or_before_upper(prefix: &[u8], upper: &[u8]) -> Option<Bound<Vec<u8>>> {
    if upper < prefix {
        return None;
    }
    Some(match prefix_end(prefix) {
        Some(end) if upper >= end.as_slice() => Bound::Excluded(end),
        _ => Bound::Included(upper.to_vec()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_end_carries_past_ff() {
        assert_eq!(prefix_end(b""), None);
        assert_eq!(prefix_end(&[0xff, 0xff]), None);
        assert_eq!(prefix_end(b"ab"), Some(b"ac".to_vec()));
        assert_eq!(prefix_end(&[1, 0xff]), Some(vec![2]));
        assert_eq!(prefix_end(&[1, 0xfe, 0xff]), Some(vec![1, 0xff]));
    }

    #[test]
    fn at_or_before_upper_clamps_to_the_prefix() {
        assert_eq!(at_or_before_upper(b"b/", b"a/9"), None);
        assert_eq!(
            at_or_before_upper(b"a/", b"a/5"),
            Some(Bound::Included(b"a/5".to_vec()))
        );
        assert_eq!(at_or_before_upper(b"a/", b"a/"), Some(Bound::Included(b"a/".to_vec())));
        assert_eq!(at_or_before_upper(b"a/", b"b/9"), Some(Bound::Excluded(b"a0".to_vec())));
        assert_eq!(at_or_before_upper(b"", b"zz"), Some(Bound::Included(b"zz".to_vec())));
        assert_eq!(
            at_or_before_upper(&[0xff], &[0xff, 0xff, 3]),
            Some(Bound::Included(vec![0xff, 0xff, 3]))
        );
    }
}
