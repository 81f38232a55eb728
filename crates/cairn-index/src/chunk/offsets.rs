//! [`Offsets`]: a list of `u32` offsets into a chunk's arrays, held in two bytes each while
//! every one fits (a typical chunk's term bytes and postings are a few thousand).

/// Offsets, narrow (`u16`) until one past `u16::MAX` is pushed, then wide. Which form a
/// list has is a function of its values, and equality compares the values.
#[derive(Debug, Clone)]
pub(crate) enum Offsets {
    Narrow(Vec<u16>),
    Wide(Vec<u32>),
}

impl Default for Offsets {
    fn default() -> Offsets {
        Offsets::Narrow(Vec::new())
    }
}

impl PartialEq for Offsets {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && (0..self.len()).all(|i| self.get(i) == other.get(i))
    }
}

impl Offsets {
    /// Reserves room for `n` more.
    pub(crate) fn reserve_exact(&mut self, n: usize) {
        match self {
            Offsets::Narrow(v) => v.reserve_exact(n),
            Offsets::Wide(v) => v.reserve_exact(n),
        }
    }

    /// Offset `i`.
    #[inline]
    pub(crate) fn get(&self, i: usize) -> u32 {
        match self {
            Offsets::Narrow(v) => u32::from(v[i]),
            Offsets::Wide(v) => v[i],
        }
    }

    /// Appends `x`, widening the list if `x` does not fit two bytes.
    pub(crate) fn push(&mut self, x: u32) {
        match self {
            Offsets::Narrow(v) => match u16::try_from(x) {
                Ok(x) => v.push(x),
                Err(_) => {
                    let mut w = Vec::with_capacity(v.capacity().max(v.len() + 1));
                    w.extend(v.iter().map(|&a| u32::from(a)));
                    w.push(x);
                    *self = Offsets::Wide(w);
                }
            },
            Offsets::Wide(v) => v.push(x),
        }
    }

    /// Number of offsets.
    pub(crate) fn len(&self) -> usize {
        match self {
            Offsets::Narrow(v) => v.len(),
            Offsets::Wide(v) => v.len(),
        }
    }

    /// Heap bytes.
    pub(crate) fn heap_bytes(&self) -> usize {
        match self {
            Offsets::Narrow(v) => v.len() * 2,
            Offsets::Wide(v) => v.len() * 4,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Offsets;

    #[test]
    fn a_list_widens_when_an_offset_passes_two_bytes_and_keeps_its_values() {
        let mut a = Offsets::default();
        let mut b = Offsets::default();
        for x in [0u32, 7, 65_535] {
            a.push(x);
            b.push(x);
        }
        assert!(matches!(a, Offsets::Narrow(_)));
        a.push(65_536);
        a.push(1 << 31);
        assert!(matches!(a, Offsets::Wide(_)));
        assert_eq!(
            (0..a.len()).map(|i| a.get(i)).collect::<Vec<_>>(),
            [0, 7, 65_535, 65_536, 1 << 31]
        );
        assert_ne!(a, b);
        b.push(65_536);
        b.push(1 << 31);
        assert_eq!(a, b);
        assert_eq!(a.heap_bytes(), 20);
    }
}
