//! aarch64 NEON kernels, 16 values per step.
//!
//! NEON has the transform built in: the structure loads `vld2q_u8` / `vld4q_u8`
//! de-interleave 2 or 4 byte lanes into separate registers (a split), and the structure
//! stores `vst2q_u8` / `vst4q_u8` interleave them back (an unsplit). 8-byte values take one
//! more step: `vld4q_u8` over 16 values leaves bytes `j` and `j + 4` alternating in
//! register `j`, which `vuzp1q_u8` / `vuzp2q_u8` separate (and `vzip1q_u8` / `vzip2q_u8`
//! interleave again before `vst4q_u8` when unsplitting).
//!
//! Every function handles slices shorter than one block with the scalar tail loop; longer
//! ones are covered by overlapping first and last blocks (`overlapping_blocks!`), so the
//! blocks between store to aligned addresses. Callers guarantee
//! `src.len() == dst.len() == n * W`.

// Short names keep the load/permute/store steps readable, as in the x86 kernels.
#![allow(clippy::many_single_char_names)]

use core::arch::aarch64::{
    uint8x16x2_t, uint8x16x4_t, vld1q_u8, vld2q_u8, vld4q_u8, vst1q_u8, vst2q_u8, vst4q_u8,
    vuzp1q_u8, vuzp2q_u8, vzip1q_u8, vzip2q_u8,
};
use core::mem::MaybeUninit;

use super::blocks::{split_skew, unsplit_skew};
use super::scalar::{split_tail, unsplit_tail};

/// # Safety
/// The CPU must support NEON; `src.len() == dst.len()`, a multiple of 2.
#[target_feature(enable = "neon")]
pub(super) unsafe fn split2_neon(src: &[u8], dst: &mut [MaybeUninit<u8>]) {
    const W: usize = 2;
    let n = src.len() / W;
    let (s, d) = (src.as_ptr(), dst.as_mut_ptr().cast::<u8>());
    let done = overlapping_blocks!(n, 16, split_skew(d, 16), |i| {
        // SAFETY: i + 16 <= n: the load reads src[W*i .. W*(i+16)], the stores write 16
        // bytes at j*n + i for j < W, inside slices of n*W bytes.
        unsafe {
            let v = vld2q_u8(s.add(W * i));
            vst1q_u8(d.add(i), v.0);
            vst1q_u8(d.add(n + i), v.1);
        }
    });
    split_tail::<W>(src, dst, done);
}

/// # Safety
/// The CPU must support NEON; `src.len() == dst.len()`, a multiple of 4.
#[target_feature(enable = "neon")]
pub(super) unsafe fn split4_neon(src: &[u8], dst: &mut [MaybeUninit<u8>]) {
    const W: usize = 4;
    let n = src.len() / W;
    let (s, d) = (src.as_ptr(), dst.as_mut_ptr().cast::<u8>());
    let done = overlapping_blocks!(n, 16, split_skew(d, 16), |i| {
        // SAFETY: i + 16 <= n: the load reads src[W*i .. W*(i+16)], the stores write 16
        // bytes at j*n + i for j < W, inside slices of n*W bytes.
        unsafe {
            let v = vld4q_u8(s.add(W * i));
            vst1q_u8(d.add(i), v.0);
            vst1q_u8(d.add(n + i), v.1);
            vst1q_u8(d.add(2 * n + i), v.2);
            vst1q_u8(d.add(3 * n + i), v.3);
        }
    });
    split_tail::<W>(src, dst, done);
}

/// # Safety
/// The CPU must support NEON; `src.len() == dst.len()`, a multiple of 8.
#[target_feature(enable = "neon")]
pub(super) unsafe fn split8_neon(src: &[u8], dst: &mut [MaybeUninit<u8>]) {
    const W: usize = 8;
    let n = src.len() / W;
    let (s, d) = (src.as_ptr(), dst.as_mut_ptr().cast::<u8>());
    let done = overlapping_blocks!(n, 16, split_skew(d, 16), |i| {
        // SAFETY: i + 16 <= n: the loads read src[W*i .. W*(i+16)], the stores write 16
        // bytes at j*n + i for j < W, inside slices of n*W bytes.
        unsafe {
            // a.j / b.j: element k is byte j + 4*(k % 2) of value k / 2 (of values
            // i..i+8 / i+8..i+16)
            let a = vld4q_u8(s.add(W * i));
            let b = vld4q_u8(s.add(W * i + 64));
            let lo = [a.0, a.1, a.2, a.3];
            let hi = [b.0, b.1, b.2, b.3];
            for j in 0..4 {
                vst1q_u8(d.add(j * n + i), vuzp1q_u8(lo[j], hi[j]));
                vst1q_u8(d.add((j + 4) * n + i), vuzp2q_u8(lo[j], hi[j]));
            }
        }
    });
    split_tail::<W>(src, dst, done);
}

/// # Safety
/// The CPU must support NEON; `src.len() == dst.len()`, a multiple of 2.
#[target_feature(enable = "neon")]
pub(super) unsafe fn unsplit2_neon(src: &[u8], dst: &mut [MaybeUninit<u8>]) {
    const W: usize = 2;
    let n = src.len() / W;
    let (s, d) = (src.as_ptr(), dst.as_mut_ptr().cast::<u8>());
    let done = overlapping_blocks!(n, 16, unsplit_skew(d, W, 16), |i| {
        // SAFETY: i + 16 <= n: the loads read 16 bytes at j*n + i for j < W, the store
        // writes dst[W*i .. W*(i+16)], inside slices of n*W bytes.
        unsafe {
            let v = uint8x16x2_t(vld1q_u8(s.add(i)), vld1q_u8(s.add(n + i)));
            vst2q_u8(d.add(W * i), v);
        }
    });
    unsplit_tail::<W>(src, dst, done);
}

/// # Safety
/// The CPU must support NEON; `src.len() == dst.len()`, a multiple of 4.
#[target_feature(enable = "neon")]
pub(super) unsafe fn unsplit4_neon(src: &[u8], dst: &mut [MaybeUninit<u8>]) {
    const W: usize = 4;
    let n = src.len() / W;
    let (s, d) = (src.as_ptr(), dst.as_mut_ptr().cast::<u8>());
    let done = overlapping_blocks!(n, 16, unsplit_skew(d, W, 16), |i| {
        // SAFETY: i + 16 <= n: the loads read 16 bytes at j*n + i for j < W, the store
        // writes dst[W*i .. W*(i+16)], inside slices of n*W bytes.
        unsafe {
            let v = uint8x16x4_t(
                vld1q_u8(s.add(i)),
                vld1q_u8(s.add(n + i)),
                vld1q_u8(s.add(2 * n + i)),
                vld1q_u8(s.add(3 * n + i)),
            );
            vst4q_u8(d.add(W * i), v);
        }
    });
    unsplit_tail::<W>(src, dst, done);
}

/// # Safety
/// The CPU must support NEON; `src.len() == dst.len()`, a multiple of 8.
#[target_feature(enable = "neon")]
pub(super) unsafe fn unsplit8_neon(src: &[u8], dst: &mut [MaybeUninit<u8>]) {
    const W: usize = 8;
    let n = src.len() / W;
    let (s, d) = (src.as_ptr(), dst.as_mut_ptr().cast::<u8>());
    let done = overlapping_blocks!(n, 16, unsplit_skew(d, W, 16), |i| {
        // SAFETY: i + 16 <= n: the loads read 16 bytes at j*n + i for j < W, the stores
        // write dst[W*i .. W*(i+16)], inside slices of n*W bytes.
        unsafe {
            let st: [_; 8] = core::array::from_fn(|j| vld1q_u8(s.add(j * n + i)));
            // element k of lo[j] / hi[j]: byte j + 4*(k % 2) of value k / 2 (of values
            // i..i+8 / i+8..i+16), the layout vst4q_u8 interleaves into whole values
            let lo = uint8x16x4_t(
                vzip1q_u8(st[0], st[4]),
                vzip1q_u8(st[1], st[5]),
                vzip1q_u8(st[2], st[6]),
                vzip1q_u8(st[3], st[7]),
            );
            let hi = uint8x16x4_t(
                vzip2q_u8(st[0], st[4]),
                vzip2q_u8(st[1], st[5]),
                vzip2q_u8(st[2], st[6]),
                vzip2q_u8(st[3], st[7]),
            );
            vst4q_u8(d.add(W * i), lo);
            vst4q_u8(d.add(W * i + 64), hi);
        }
    });
    unsplit_tail::<W>(src, dst, done);
}
