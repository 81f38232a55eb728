//! Software prefetch for the dense scans: a filtered scan reads rows scattered through
//! many chunks (every tenth row of each chunk for a 10 % label), a pattern the hardware
//! prefetchers do not follow, so each row would otherwise start with a cache miss. The
//! scans ask for a row a few places ahead while they score the current one. A hint
//! only: it changes no result, and where the instruction set has none it does nothing.

/// How many rows ahead of the one being scored a scan prefetches.
pub(crate) const AHEAD: usize = 4;

/// Asks the processor to bring `data`'s cache lines towards the core.
#[inline(always)]
pub(crate) fn prefetch<T>(data: &[T]) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        let start = data.as_ptr().cast::<i8>();
        let bytes = std::mem::size_of_val(data);
        let mut offset = 0;
        while offset < bytes {
            // SAFETY: a prefetch is a hint that never faults and has no effect on memory;
            // `start + offset` stays inside `data` (offset < its byte length). SSE, which
            // provides the instruction, is part of every x86_64 processor.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(start.add(offset)) };
            offset += 64;
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = data;
}
