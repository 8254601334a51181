//! Block iteration shared by the SIMD kernels: overlapping first and last blocks, so the
//! blocks between them store to aligned addresses and no value is left to a scalar tail
//! once a slice holds one block.

// Only the SIMD kernels of the target use these.
#![allow(unused_macros, dead_code)]

/// Runs `$body` with `$i` at the first value of blocks of `$b` values so that together
/// they cover values `0..n`, and evaluates to how many leading values they covered (`n`,
/// or 0 when `n < $b`, leaving everything to the scalar tail). The first block starts at
/// 0, the next ones at `$skew` (the first value whose stores are aligned, below `$b`) and
/// every `$b` after it, and the last block ends exactly at `n`. Blocks may overlap: each
/// writes only the output bytes of its own values, computed from the input alone (input
/// and output never alias), so writing them twice writes the same bytes. Every block
/// satisfies `$i + $b <= n`, the bound each body's SAFETY comment relies on.
macro_rules! overlapping_blocks {
    ($n:expr, $b:expr, $skew:expr, |$i:ident| $body:block) => {{
        let n: usize = $n;
        if n < $b {
            0
        } else {
            {
                let $i: usize = 0;
                $body
            }
            let mut $i: usize = $skew;
            assert!($i < $b, "block skew out of range");
            if $i == 0 {
                $i = $b;
            }
            while $i + $b <= n {
                $body
                $i += $b;
            }
            if $i < n {
                let $i: usize = n - $b;
                $body
            }
            n
        }
    }};
}

/// The first value index whose stream bytes (one byte per value, from `dst`) start on an
/// `align`-byte boundary: where a split's stores stop crossing cache lines.
pub(super) fn split_skew(dst: *const u8, align: usize) -> usize {
    (align - dst as usize % align) % align
}

/// The first value index whose `width`-byte values in `dst` start on an `align`-byte
/// boundary, or 0 when none does (`dst` not a multiple of `width` from a boundary).
pub(super) fn unsplit_skew(dst: *const u8, width: usize, align: usize) -> usize {
    let bytes = (align - dst as usize % align) % align;
    if bytes.is_multiple_of(width) {
        bytes / width
    } else {
        0
    }
}
