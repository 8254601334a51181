//! x86_64 kernels: SSSE3 (split) / SSE2 (unsplit) on 16 values at a time, AVX2 on 32, and
//! an AVX-512 VBMI split of 4-byte values on 64; and [`with_bmi2`], which compiles the
//! closure it runs (the entropy decoder's bit readers) for BMI1/BMI2.
//!
//! Split (encode) loads whole values, gathers byte `j` of each value with one `pshufb`
//! per vector, then transposes the gathered words across vectors with 2 or 3 rounds of
//! unpack-lo/hi, and stores one vector per stream. Unsplit (decode) is the classic zip
//! network: log2(W) rounds of byte/word/dword unpack-lo/hi over one vector per stream.
//! AVX2 works on two independent 128-bit lanes, so its loads and stores place lane 0 at
//! values `i..i+16` and lane 1 at `i+16..i+32`.
//!
//! Every function handles the values that do not fill a vector block with the scalar
//! tail loop. Callers guarantee `src.len() == dst.len() == n * W`.

// Unaligned load/store intrinsics take vector pointers; short names keep the networks readable.
#![allow(clippy::cast_ptr_alignment, clippy::many_single_char_names)]

use core::arch::x86_64::{
    __m128i, __m256i, _mm256_loadu2_m128i, _mm256_loadu_si256, _mm256_setr_epi8,
    _mm256_shuffle_epi8, _mm256_storeu2_m128i, _mm256_storeu_si256, _mm256_unpackhi_epi16,
    _mm256_unpackhi_epi32, _mm256_unpackhi_epi64, _mm256_unpackhi_epi8, _mm256_unpacklo_epi16,
    _mm256_unpacklo_epi32, _mm256_unpacklo_epi64, _mm256_unpacklo_epi8, _mm_loadu_si128,
    _mm_setr_epi8, _mm_shuffle_epi8, _mm_storeu_si128, _mm_unpackhi_epi16, _mm_unpackhi_epi32,
    _mm_unpackhi_epi64, _mm_unpackhi_epi8, _mm_unpacklo_epi16, _mm_unpacklo_epi32,
    _mm_unpacklo_epi64, _mm_unpacklo_epi8,
};

use core::mem::MaybeUninit;

use super::blocks::{split_skew, unsplit_skew};
use super::scalar::{split_tail, unsplit_tail};

// ---------------------------------------------------------------------------------------
// SSSE3 split, 16 values per step

/// # Safety
/// The CPU must support SSSE3; `src.len() == dst.len()`, a multiple of 2.
#[target_feature(enable = "ssse3")]
pub(super) unsafe fn split2_ssse3(src: &[u8], dst: &mut [MaybeUninit<u8>]) {
    const W: usize = 2;
    let n = src.len() / W;
    let mask = _mm_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15);
    let (s, d) = (src.as_ptr(), dst.as_mut_ptr().cast::<u8>());
    let mut i = 0;
    while i + 16 <= n {
        // SAFETY: i + 16 <= n, so the loads read src[W*i .. W*(i+16)] and the stores write
        // dst[j*n + i .. j*n + i + 16] for j < W, all inside slices of n*W bytes.
        unsafe {
            let x0 = _mm_shuffle_epi8(_mm_loadu_si128(s.add(W * i).cast()), mask);
            let x1 = _mm_shuffle_epi8(_mm_loadu_si128(s.add(W * i + 16).cast()), mask);
            _mm_storeu_si128(d.add(i).cast(), _mm_unpacklo_epi64(x0, x1));
            _mm_storeu_si128(d.add(n + i).cast(), _mm_unpackhi_epi64(x0, x1));
        }
        i += 16;
    }
    split_tail::<W>(src, dst, i);
}

/// # Safety
/// The CPU must support SSSE3; `src.len() == dst.len()`, a multiple of 4.
#[target_feature(enable = "ssse3")]
pub(super) unsafe fn split4_ssse3(src: &[u8], dst: &mut [MaybeUninit<u8>]) {
    const W: usize = 4;
    let n = src.len() / W;
    let mask = _mm_setr_epi8(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
    let (s, d) = (src.as_ptr(), dst.as_mut_ptr().cast::<u8>());
    let mut i = 0;
    while i + 16 <= n {
        // SAFETY: i + 16 <= n: loads read src[W*i .. W*(i+16)], stores write 16 bytes at
        // j*n + i for j < W, inside slices of n*W bytes.
        unsafe {
            let x: [__m128i; 4] = core::array::from_fn(|k| {
                _mm_shuffle_epi8(_mm_loadu_si128(s.add(W * i + 16 * k).cast()), mask)
            });
            let t0 = _mm_unpacklo_epi32(x[0], x[1]);
            let t1 = _mm_unpackhi_epi32(x[0], x[1]);
            let t2 = _mm_unpacklo_epi32(x[2], x[3]);
            let t3 = _mm_unpackhi_epi32(x[2], x[3]);
            _mm_storeu_si128(d.add(i).cast(), _mm_unpacklo_epi64(t0, t2));
            _mm_storeu_si128(d.add(n + i).cast(), _mm_unpackhi_epi64(t0, t2));
            _mm_storeu_si128(d.add(2 * n + i).cast(), _mm_unpacklo_epi64(t1, t3));
            _mm_storeu_si128(d.add(3 * n + i).cast(), _mm_unpackhi_epi64(t1, t3));
        }
        i += 16;
    }
    split_tail::<W>(src, dst, i);
}

/// # Safety
/// The CPU must support SSSE3; `src.len() == dst.len()`, a multiple of 8.
#[target_feature(enable = "ssse3")]
pub(super) unsafe fn split8_ssse3(src: &[u8], dst: &mut [MaybeUninit<u8>]) {
    const W: usize = 8;
    let n = src.len() / W;
    let mask = _mm_setr_epi8(0, 8, 1, 9, 2, 10, 3, 11, 4, 12, 5, 13, 6, 14, 7, 15);
    let (s, d) = (src.as_ptr(), dst.as_mut_ptr().cast::<u8>());
    let mut i = 0;
    while i + 16 <= n {
        // SAFETY: i + 16 <= n: loads read src[W*i .. W*(i+16)], stores write 16 bytes at
        // j*n + i for j < W, inside slices of n*W bytes.
        unsafe {
            let x: [__m128i; 8] = core::array::from_fn(|k| {
                _mm_shuffle_epi8(_mm_loadu_si128(s.add(W * i + 16 * k).cast()), mask)
            });
            let out = transpose_words_8x8_128(x);
            for (j, v) in out.iter().enumerate() {
                _mm_storeu_si128(d.add(j * n + i).cast(), *v);
            }
        }
        i += 16;
    }
    split_tail::<W>(src, dst, i);
}

/// 8x8 transpose of 16-bit words: word j of output k = word k of input j.
#[target_feature(enable = "sse2")]
fn transpose_words_8x8_128(x: [__m128i; 8]) -> [__m128i; 8] {
    let t0 = _mm_unpacklo_epi16(x[0], x[1]);
    let t1 = _mm_unpackhi_epi16(x[0], x[1]);
    let t2 = _mm_unpacklo_epi16(x[2], x[3]);
    let t3 = _mm_unpackhi_epi16(x[2], x[3]);
    let t4 = _mm_unpacklo_epi16(x[4], x[5]);
    let t5 = _mm_unpackhi_epi16(x[4], x[5]);
    let t6 = _mm_unpacklo_epi16(x[6], x[7]);
    let t7 = _mm_unpackhi_epi16(x[6], x[7]);
    let u0 = _mm_unpacklo_epi32(t0, t2);
    let u1 = _mm_unpackhi_epi32(t0, t2);
    let u2 = _mm_unpacklo_epi32(t1, t3);
    let u3 = _mm_unpackhi_epi32(t1, t3);
    let u4 = _mm_unpacklo_epi32(t4, t6);
    let u5 = _mm_unpackhi_epi32(t4, t6);
    let u6 = _mm_unpacklo_epi32(t5, t7);
    let u7 = _mm_unpackhi_epi32(t5, t7);
    [
        _mm_unpacklo_epi64(u0, u4),
        _mm_unpackhi_epi64(u0, u4),
        _mm_unpacklo_epi64(u1, u5),
        _mm_unpackhi_epi64(u1, u5),
        _mm_unpacklo_epi64(u2, u6),
        _mm_unpackhi_epi64(u2, u6),
        _mm_unpacklo_epi64(u3, u7),
        _mm_unpackhi_epi64(u3, u7),
    ]
}

// ---------------------------------------------------------------------------------------
// SSE2 unsplit, 16 values per step

/// # Safety
/// The CPU must support SSE2; `src.len() == dst.len()`, a multiple of 2.
#[target_feature(enable = "sse2")]
pub(super) unsafe fn unsplit2_sse2(src: &[u8], dst: &mut [MaybeUninit<u8>]) {
    const W: usize = 2;
    let n = src.len() / W;
    let (s, d) = (src.as_ptr(), dst.as_mut_ptr().cast::<u8>());
    let mut i = 0;
    while i + 16 <= n {
        // SAFETY: i + 16 <= n: loads read 16 bytes at j*n + i for j < W, stores write
        // dst[W*i .. W*(i+16)], inside slices of n*W bytes.
        unsafe {
            let s0 = _mm_loadu_si128(s.add(i).cast());
            let s1 = _mm_loadu_si128(s.add(n + i).cast());
            _mm_storeu_si128(d.add(W * i).cast(), _mm_unpacklo_epi8(s0, s1));
            _mm_storeu_si128(d.add(W * i + 16).cast(), _mm_unpackhi_epi8(s0, s1));
        }
        i += 16;
    }
    unsplit_tail::<W>(src, dst, i);
}

/// # Safety
/// The CPU must support SSE2; `src.len() == dst.len()`, a multiple of 4.
#[target_feature(enable = "sse2")]
pub(super) unsafe fn unsplit4_sse2(src: &[u8], dst: &mut [MaybeUninit<u8>]) {
    const W: usize = 4;
    let n = src.len() / W;
    let (s, d) = (src.as_ptr(), dst.as_mut_ptr().cast::<u8>());
    let mut i = 0;
    while i + 16 <= n {
        // SAFETY: i + 16 <= n: loads read 16 bytes at j*n + i for j < W, stores write
        // dst[W*i .. W*(i+16)], inside slices of n*W bytes.
        unsafe {
            let st: [__m128i; 4] =
                core::array::from_fn(|j| _mm_loadu_si128(s.add(j * n + i).cast()));
            let a_lo = _mm_unpacklo_epi8(st[0], st[1]);
            let a_hi = _mm_unpackhi_epi8(st[0], st[1]);
            let b_lo = _mm_unpacklo_epi8(st[2], st[3]);
            let b_hi = _mm_unpackhi_epi8(st[2], st[3]);
            _mm_storeu_si128(d.add(W * i).cast(), _mm_unpacklo_epi16(a_lo, b_lo));
            _mm_storeu_si128(d.add(W * i + 16).cast(), _mm_unpackhi_epi16(a_lo, b_lo));
            _mm_storeu_si128(d.add(W * i + 32).cast(), _mm_unpacklo_epi16(a_hi, b_hi));
            _mm_storeu_si128(d.add(W * i + 48).cast(), _mm_unpackhi_epi16(a_hi, b_hi));
        }
        i += 16;
    }
    unsplit_tail::<W>(src, dst, i);
}

/// # Safety
/// The CPU must support SSE2; `src.len() == dst.len()`, a multiple of 8.
#[target_feature(enable = "sse2")]
pub(super) unsafe fn unsplit8_sse2(src: &[u8], dst: &mut [MaybeUninit<u8>]) {
    const W: usize = 8;
    let n = src.len() / W;
    let (s, d) = (src.as_ptr(), dst.as_mut_ptr().cast::<u8>());
    let mut i = 0;
    while i + 16 <= n {
        // SAFETY: i + 16 <= n: loads read 16 bytes at j*n + i for j < W, stores write
        // dst[W*i .. W*(i+16)], inside slices of n*W bytes.
        unsafe {
            let st: [__m128i; 8] =
                core::array::from_fn(|j| _mm_loadu_si128(s.add(j * n + i).cast()));
            let a: [__m128i; 8] = [
                _mm_unpacklo_epi8(st[0], st[1]),
                _mm_unpackhi_epi8(st[0], st[1]),
                _mm_unpacklo_epi8(st[2], st[3]),
                _mm_unpackhi_epi8(st[2], st[3]),
                _mm_unpacklo_epi8(st[4], st[5]),
                _mm_unpackhi_epi8(st[4], st[5]),
                _mm_unpacklo_epi8(st[6], st[7]),
                _mm_unpackhi_epi8(st[6], st[7]),
            ];
            // b[q][h]: bytes 4q..4q+4 of values (8h .. 8h+8) split in two halves
            let b0123 = [
                _mm_unpacklo_epi16(a[0], a[2]),
                _mm_unpackhi_epi16(a[0], a[2]),
                _mm_unpacklo_epi16(a[1], a[3]),
                _mm_unpackhi_epi16(a[1], a[3]),
            ];
            let b4567 = [
                _mm_unpacklo_epi16(a[4], a[6]),
                _mm_unpackhi_epi16(a[4], a[6]),
                _mm_unpacklo_epi16(a[5], a[7]),
                _mm_unpackhi_epi16(a[5], a[7]),
            ];
            for q in 0..4 {
                _mm_storeu_si128(
                    d.add(W * i + 32 * q).cast(),
                    _mm_unpacklo_epi32(b0123[q], b4567[q]),
                );
                _mm_storeu_si128(
                    d.add(W * i + 32 * q + 16).cast(),
                    _mm_unpackhi_epi32(b0123[q], b4567[q]),
                );
            }
        }
        i += 16;
    }
    unsplit_tail::<W>(src, dst, i);
}

// ---------------------------------------------------------------------------------------
// AVX2, 32 values per step (lane 0: values i..i+16, lane 1: values i+16..i+32)

/// # Safety
/// The CPU must support AVX2; `src.len() == dst.len()`, a multiple of 2.
#[target_feature(enable = "avx2")]
pub(super) unsafe fn split2_avx2(src: &[u8], dst: &mut [MaybeUninit<u8>]) {
    const W: usize = 2;
    let n = src.len() / W;
    #[rustfmt::skip]
    let mask = _mm256_setr_epi8(
        0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15,
        0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15,
    );
    let (s, d) = (src.as_ptr(), dst.as_mut_ptr().cast::<u8>());
    let done = overlapping_blocks!(n, 32, split_skew(d, 32), |i| {
        // SAFETY: i + 32 <= n: loads read src[W*i .. W*(i+32)], stores write 32 bytes at
        // j*n + i for j < W, inside slices of n*W bytes.
        unsafe {
            let y0 = _mm256_shuffle_epi8(
                _mm256_loadu2_m128i(s.add(W * (i + 16)).cast(), s.add(W * i).cast()),
                mask,
            );
            let y1 = _mm256_shuffle_epi8(
                _mm256_loadu2_m128i(s.add(W * (i + 24)).cast(), s.add(W * (i + 8)).cast()),
                mask,
            );
            _mm256_storeu_si256(d.add(i).cast(), _mm256_unpacklo_epi64(y0, y1));
            _mm256_storeu_si256(d.add(n + i).cast(), _mm256_unpackhi_epi64(y0, y1));
        }
    });
    split_tail::<W>(src, dst, done);
}

/// # Safety
/// The CPU must support AVX2; `src.len() == dst.len()`, a multiple of 4.
#[target_feature(enable = "avx2")]
pub(super) unsafe fn split4_avx2(src: &[u8], dst: &mut [MaybeUninit<u8>]) {
    const W: usize = 4;
    let n = src.len() / W;
    #[rustfmt::skip]
    let mask = _mm256_setr_epi8(
        0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15,
        0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15,
    );
    let (s, d) = (src.as_ptr(), dst.as_mut_ptr().cast::<u8>());
    let done = overlapping_blocks!(n, 32, split_skew(d, 32), |i| {
        // SAFETY: i + 32 <= n: loads read src[W*i .. W*(i+32)], stores write 32 bytes at
        // j*n + i for j < W, inside slices of n*W bytes.
        unsafe {
            let y: [__m256i; 4] = core::array::from_fn(|k| {
                let lo = s.add(W * (i + 4 * k));
                let hi = s.add(W * (i + 16 + 4 * k));
                _mm256_shuffle_epi8(_mm256_loadu2_m128i(hi.cast(), lo.cast()), mask)
            });
            let t0 = _mm256_unpacklo_epi32(y[0], y[1]);
            let t1 = _mm256_unpackhi_epi32(y[0], y[1]);
            let t2 = _mm256_unpacklo_epi32(y[2], y[3]);
            let t3 = _mm256_unpackhi_epi32(y[2], y[3]);
            _mm256_storeu_si256(d.add(i).cast(), _mm256_unpacklo_epi64(t0, t2));
            _mm256_storeu_si256(d.add(n + i).cast(), _mm256_unpackhi_epi64(t0, t2));
            _mm256_storeu_si256(d.add(2 * n + i).cast(), _mm256_unpacklo_epi64(t1, t3));
            _mm256_storeu_si256(d.add(3 * n + i).cast(), _mm256_unpackhi_epi64(t1, t3));
        }
    });
    split_tail::<W>(src, dst, done);
}

/// # Safety
/// The CPU must support AVX2; `src.len() == dst.len()`, a multiple of 8.
#[target_feature(enable = "avx2")]
pub(super) unsafe fn split8_avx2(src: &[u8], dst: &mut [MaybeUninit<u8>]) {
    const W: usize = 8;
    let n = src.len() / W;
    #[rustfmt::skip]
    let mask = _mm256_setr_epi8(
        0, 8, 1, 9, 2, 10, 3, 11, 4, 12, 5, 13, 6, 14, 7, 15,
        0, 8, 1, 9, 2, 10, 3, 11, 4, 12, 5, 13, 6, 14, 7, 15,
    );
    let (s, d) = (src.as_ptr(), dst.as_mut_ptr().cast::<u8>());
    let done = overlapping_blocks!(n, 32, split_skew(d, 32), |i| {
        // SAFETY: i + 32 <= n: loads read src[W*i .. W*(i+32)], stores write 32 bytes at
        // j*n + i for j < W, inside slices of n*W bytes.
        unsafe {
            let x: [__m256i; 8] = core::array::from_fn(|k| {
                let lo = s.add(W * (i + 2 * k));
                let hi = s.add(W * (i + 16 + 2 * k));
                _mm256_shuffle_epi8(_mm256_loadu2_m128i(hi.cast(), lo.cast()), mask)
            });
            let t0 = _mm256_unpacklo_epi16(x[0], x[1]);
            let t1 = _mm256_unpackhi_epi16(x[0], x[1]);
            let t2 = _mm256_unpacklo_epi16(x[2], x[3]);
            let t3 = _mm256_unpackhi_epi16(x[2], x[3]);
            let t4 = _mm256_unpacklo_epi16(x[4], x[5]);
            let t5 = _mm256_unpackhi_epi16(x[4], x[5]);
            let t6 = _mm256_unpacklo_epi16(x[6], x[7]);
            let t7 = _mm256_unpackhi_epi16(x[6], x[7]);
            let u0 = _mm256_unpacklo_epi32(t0, t2);
            let u1 = _mm256_unpackhi_epi32(t0, t2);
            let u2 = _mm256_unpacklo_epi32(t1, t3);
            let u3 = _mm256_unpackhi_epi32(t1, t3);
            let u4 = _mm256_unpacklo_epi32(t4, t6);
            let u5 = _mm256_unpackhi_epi32(t4, t6);
            let u6 = _mm256_unpacklo_epi32(t5, t7);
            let u7 = _mm256_unpackhi_epi32(t5, t7);
            let out = [
                _mm256_unpacklo_epi64(u0, u4),
                _mm256_unpackhi_epi64(u0, u4),
                _mm256_unpacklo_epi64(u1, u5),
                _mm256_unpackhi_epi64(u1, u5),
                _mm256_unpacklo_epi64(u2, u6),
                _mm256_unpackhi_epi64(u2, u6),
                _mm256_unpacklo_epi64(u3, u7),
                _mm256_unpackhi_epi64(u3, u7),
            ];
            for (j, v) in out.iter().enumerate() {
                _mm256_storeu_si256(d.add(j * n + i).cast(), *v);
            }
        }
    });
    split_tail::<W>(src, dst, done);
}

/// # Safety
/// The CPU must support AVX2; `src.len() == dst.len()`, a multiple of 2.
#[target_feature(enable = "avx2")]
pub(super) unsafe fn unsplit2_avx2(src: &[u8], dst: &mut [MaybeUninit<u8>]) {
    const W: usize = 2;
    let n = src.len() / W;
    let (s, d) = (src.as_ptr(), dst.as_mut_ptr().cast::<u8>());
    let done = overlapping_blocks!(n, 32, unsplit_skew(d, W, 16), |i| {
        // SAFETY: i + 32 <= n: loads read 32 bytes at j*n + i for j < W, stores write
        // dst[W*i .. W*(i+32)], inside slices of n*W bytes.
        unsafe {
            let s0 = _mm256_loadu_si256(s.add(i).cast());
            let s1 = _mm256_loadu_si256(s.add(n + i).cast());
            let lo = _mm256_unpacklo_epi8(s0, s1);
            let hi = _mm256_unpackhi_epi8(s0, s1);
            _mm256_storeu2_m128i(d.add(W * (i + 16)).cast(), d.add(W * i).cast(), lo);
            _mm256_storeu2_m128i(d.add(W * (i + 24)).cast(), d.add(W * (i + 8)).cast(), hi);
        }
    });
    unsplit_tail::<W>(src, dst, done);
}

/// # Safety
/// The CPU must support AVX2; `src.len() == dst.len()`, a multiple of 4.
#[target_feature(enable = "avx2")]
pub(super) unsafe fn unsplit4_avx2(src: &[u8], dst: &mut [MaybeUninit<u8>]) {
    const W: usize = 4;
    let n = src.len() / W;
    let (s, d) = (src.as_ptr(), dst.as_mut_ptr().cast::<u8>());
    let done = overlapping_blocks!(n, 32, unsplit_skew(d, W, 16), |i| {
        // SAFETY: i + 32 <= n: loads read 32 bytes at j*n + i for j < W, stores write
        // dst[W*i .. W*(i+32)], inside slices of n*W bytes.
        unsafe {
            let st: [__m256i; 4] =
                core::array::from_fn(|j| _mm256_loadu_si256(s.add(j * n + i).cast()));
            let a_lo = _mm256_unpacklo_epi8(st[0], st[1]);
            let a_hi = _mm256_unpackhi_epi8(st[0], st[1]);
            let b_lo = _mm256_unpacklo_epi8(st[2], st[3]);
            let b_hi = _mm256_unpackhi_epi8(st[2], st[3]);
            let r = [
                _mm256_unpacklo_epi16(a_lo, b_lo),
                _mm256_unpackhi_epi16(a_lo, b_lo),
                _mm256_unpacklo_epi16(a_hi, b_hi),
                _mm256_unpackhi_epi16(a_hi, b_hi),
            ];
            for (k, v) in r.iter().enumerate() {
                _mm256_storeu2_m128i(
                    d.add(W * (i + 16 + 4 * k)).cast(),
                    d.add(W * (i + 4 * k)).cast(),
                    *v,
                );
            }
        }
    });
    unsplit_tail::<W>(src, dst, done);
}

/// # Safety
/// The CPU must support AVX2; `src.len() == dst.len()`, a multiple of 8.
#[target_feature(enable = "avx2")]
pub(super) unsafe fn unsplit8_avx2(src: &[u8], dst: &mut [MaybeUninit<u8>]) {
    const W: usize = 8;
    let n = src.len() / W;
    let (s, d) = (src.as_ptr(), dst.as_mut_ptr().cast::<u8>());
    let done = overlapping_blocks!(n, 32, unsplit_skew(d, W, 16), |i| {
        // SAFETY: i + 32 <= n: loads read 32 bytes at j*n + i for j < W, stores write
        // dst[W*i .. W*(i+32)], inside slices of n*W bytes.
        unsafe {
            let st: [__m256i; 8] =
                core::array::from_fn(|j| _mm256_loadu_si256(s.add(j * n + i).cast()));
            let a = [
                _mm256_unpacklo_epi8(st[0], st[1]),
                _mm256_unpackhi_epi8(st[0], st[1]),
                _mm256_unpacklo_epi8(st[2], st[3]),
                _mm256_unpackhi_epi8(st[2], st[3]),
                _mm256_unpacklo_epi8(st[4], st[5]),
                _mm256_unpackhi_epi8(st[4], st[5]),
                _mm256_unpacklo_epi8(st[6], st[7]),
                _mm256_unpackhi_epi8(st[6], st[7]),
            ];
            let b0123 = [
                _mm256_unpacklo_epi16(a[0], a[2]),
                _mm256_unpackhi_epi16(a[0], a[2]),
                _mm256_unpacklo_epi16(a[1], a[3]),
                _mm256_unpackhi_epi16(a[1], a[3]),
            ];
            let b4567 = [
                _mm256_unpacklo_epi16(a[4], a[6]),
                _mm256_unpackhi_epi16(a[4], a[6]),
                _mm256_unpacklo_epi16(a[5], a[7]),
                _mm256_unpackhi_epi16(a[5], a[7]),
            ];
            for q in 0..4 {
                let lo = _mm256_unpacklo_epi32(b0123[q], b4567[q]);
                let hi = _mm256_unpackhi_epi32(b0123[q], b4567[q]);
                _mm256_storeu2_m128i(
                    d.add(W * (i + 16 + 4 * q)).cast(),
                    d.add(W * (i + 4 * q)).cast(),
                    lo,
                );
                _mm256_storeu2_m128i(
                    d.add(W * (i + 18 + 4 * q)).cast(),
                    d.add(W * (i + 2 + 4 * q)).cast(),
                    hi,
                );
            }
        }
    });
    unsplit_tail::<W>(src, dst, done);
}

// ---------------------------------------------------------------------------------------
// AVX-512 VBMI split, W = 4, 64 values per step: two-source byte permutes (`vpermt2b`) do
// in one instruction what pshufb plus two unpack rounds do in AVX2, so a 256-byte block
// takes 4 permutes and 4 lane shuffles instead of 32 shuffles. (The mirror-image unsplit
// measured slower than AVX2's unpack network on Zen 4, so there is none.)

/// Index of byte `j` of value `v` (0..32) in the pair (`a` = values 0..16, `b` = 16..32)
/// as `vpermt2b` numbers them: 0..64 in `a`, 64..128 in `b`.
const fn pair_index(v: usize, j: usize) -> i8 {
    (if v < 16 {
        4 * v + j
    } else {
        64 + 4 * (v - 16) + j
    }) as i8
}

/// For split: output byte k of the first half-stream vector holds stream `j0` of values
/// 0..32 (k < 32) then stream `j0 + 1` (k >= 32).
const fn split4_indices(j0: usize) -> [i8; 64] {
    let mut idx = [0i8; 64];
    let mut k = 0;
    while k < 64 {
        idx[k] = if k < 32 {
            pair_index(k, j0)
        } else {
            pair_index(k - 32, j0 + 1)
        };
        k += 1;
    }
    idx
}

/// # Safety
/// The CPU must support AVX-512F and AVX-512 VBMI; `src.len() == dst.len()`, a multiple
/// of 4.
#[target_feature(enable = "avx512f,avx512vbmi")]
pub(super) unsafe fn split4_avx512vbmi(src: &[u8], dst: &mut [MaybeUninit<u8>]) {
    use core::arch::x86_64::{
        __m512i, _mm512_loadu_si512, _mm512_permutex2var_epi8, _mm512_shuffle_i64x2,
        _mm512_storeu_si512,
    };
    const W: usize = 4;
    let n = src.len() / W;
    let streams01 = split4_indices(0);
    let streams23 = split4_indices(2);
    let (s, d) = (src.as_ptr(), dst.as_mut_ptr().cast::<u8>());
    // SAFETY: the index arrays are 64 bytes, read unaligned.
    let (i01, i23) = unsafe {
        (
            _mm512_loadu_si512(streams01.as_ptr().cast::<__m512i>()),
            _mm512_loadu_si512(streams23.as_ptr().cast::<__m512i>()),
        )
    };
    let done = overlapping_blocks!(n, 64, split_skew(d, 64), |i| {
        // SAFETY: i + 64 <= n: loads read src[W*i .. W*(i+64)], stores write 64 bytes at
        // j*n + i for j < W, inside slices of n*W bytes.
        unsafe {
            let a = _mm512_loadu_si512(s.add(W * i).cast());
            let b = _mm512_loadu_si512(s.add(W * (i + 16)).cast());
            let c = _mm512_loadu_si512(s.add(W * (i + 32)).cast());
            let e = _mm512_loadu_si512(s.add(W * (i + 48)).cast());
            // [stream 0 | stream 1] and [stream 2 | stream 3] of values i..i+32, i+32..i+64
            let p01 = _mm512_permutex2var_epi8(a, i01, b);
            let p23 = _mm512_permutex2var_epi8(a, i23, b);
            let r01 = _mm512_permutex2var_epi8(c, i01, e);
            let r23 = _mm512_permutex2var_epi8(c, i23, e);
            // lanes 0-1 of each: the lower stream; lanes 2-3: the upper one
            _mm512_storeu_si512(d.add(i).cast(), _mm512_shuffle_i64x2::<0x44>(p01, r01));
            _mm512_storeu_si512(d.add(n + i).cast(), _mm512_shuffle_i64x2::<0xEE>(p01, r01));
            _mm512_storeu_si512(
                d.add(2 * n + i).cast(),
                _mm512_shuffle_i64x2::<0x44>(p23, r23),
            );
            _mm512_storeu_si512(
                d.add(3 * n + i).cast(),
                _mm512_shuffle_i64x2::<0xEE>(p23, r23),
            );
        }
    });
    split_tail::<W>(src, dst, done);
}

/// Runs `f` compiled with BMI1 and BMI2 (`shrx`, `shlx`, `bzhi`: variable shifts and masks
/// in one instruction, without the flags dependency of `shr cl`), for the bit readers of
/// the entropy decoder, which `f` inlines.
///
/// # Safety
/// The CPU must have BMI1 and BMI2.
#[target_feature(enable = "bmi1,bmi2")]
pub(super) unsafe fn with_bmi2<R>(f: impl FnOnce() -> R) -> R {
    f()
}

/// Runs `f` compiled for AVX-512 (F, DQ, BW, VL) with AVX2, BMI1 and BMI2: the loops `f`
/// inlines that the compiler vectorises take eight 64-bit lanes a step, and 64-bit
/// integers convert to floats in one instruction.
///
/// # Safety
/// The CPU must have every one of these features.
#[target_feature(enable = "avx512f,avx512dq,avx512bw,avx512vl,avx2,bmi1,bmi2")]
pub(super) unsafe fn with_avx512<R>(f: impl FnOnce() -> R) -> R {
    f()
}

/// Runs `f` compiled for AVX2, BMI1 and BMI2 (not FMA: no contraction), for
/// `with_wide_vectors` on CPUs without AVX-512: the loops the compiler vectorises take
/// four 64-bit lanes a step.
///
/// # Safety
/// The CPU must have every one of these features.
#[target_feature(enable = "avx2,bmi1,bmi2")]
pub(super) unsafe fn with_avx2<R>(f: impl FnOnce() -> R) -> R {
    f()
}
