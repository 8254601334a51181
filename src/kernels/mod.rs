//! Byte-stream-split kernels: the one transform behind both the BSS chunk encoding and
//! the whole-buffer [`shuffle`](crate::shuffle) filter.
//!
//! `split` turns `n` values of `width` bytes (value after value) into `width` streams of
//! `n` bytes (stream `j` holds byte `j` of every value, in order); `unsplit` is its
//! inverse. Widths 2, 4 and 8 are dispatched once into `const W` code; any other width
//! goes through a generic path.
//!
//! Both functions require `src.len() == dst.len()` and a length that is a whole number of
//! values; every public caller checks this first and reports a proper error, so a
//! violation here is a bug in this crate, not bad input.

mod scalar;

/// Splits `src` (values of `width` bytes, back to back) into `width` byte streams in `dst`.
#[inline]
pub(crate) fn split(src: &[u8], dst: &mut [u8], width: usize) {
    debug_assert!(width > 0 && src.len() == dst.len() && src.len() % width == 0);
    match width {
        1 => dst.copy_from_slice(src),
        2 => scalar::split_const::<2>(src, dst),
        4 => scalar::split_const::<4>(src, dst),
        8 => scalar::split_const::<8>(src, dst),
        _ => scalar::split_any(src, dst, width),
    }
}

/// Joins `width` byte streams in `src` back into values of `width` bytes in `dst`.
#[inline]
pub(crate) fn unsplit(src: &[u8], dst: &mut [u8], width: usize) {
    debug_assert!(width > 0 && src.len() == dst.len() && src.len() % width == 0);
    match width {
        1 => dst.copy_from_slice(src),
        2 => scalar::unsplit_const::<2>(src, dst),
        4 => scalar::unsplit_const::<4>(src, dst),
        8 => scalar::unsplit_const::<8>(src, dst),
        _ => scalar::unsplit_any(src, dst, width),
    }
}

/// The plain reference transform, value by value, used by the tests to check every kernel.
#[cfg(test)]
pub(crate) fn split_reference(src: &[u8], width: usize) -> Vec<u8> {
    let n = src.len() / width;
    let mut out = vec![0; src.len()];
    for i in 0..n {
        for j in 0..width {
            out[j * n + i] = src[i * width + j];
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pseudo_random(len: usize, seed: u64) -> Vec<u8> {
        let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x >> 24) as u8
            })
            .collect()
    }

    #[test]
    fn kernels_match_reference_for_every_width_and_length() {
        for width in [1usize, 2, 3, 4, 5, 8, 16] {
            for n in (0..=300).chain([1023, 1024, 1025, 4096]) {
                let src = pseudo_random(n * width, (n * 31 + width) as u64);
                let expected = split_reference(&src, width);
                let mut split_out = vec![0xAA; src.len()];
                split(&src, &mut split_out, width);
                assert_eq!(split_out, expected, "split width {width} n {n}");
                let mut back = vec![0x55; src.len()];
                unsplit(&split_out, &mut back, width);
                assert_eq!(back, src, "unsplit width {width} n {n}");
            }
        }
    }

    #[test]
    fn kernels_work_at_odd_offsets() {
        for width in [2usize, 4, 8] {
            let n = 777;
            let buf = pseudo_random(n * width + 7, 99);
            for offset in 0..7 {
                let src = &buf[offset..offset + n * width];
                let mut dst = vec![0; n * width + 7];
                split(src, &mut dst[offset..offset + n * width], width);
                assert_eq!(
                    &dst[offset..offset + n * width],
                    &split_reference(src, width)[..]
                );
            }
        }
    }
}
