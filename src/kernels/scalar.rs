//! Portable kernels: no `unsafe`, blocked so each block of values stays in L1 while its
//! bytes are scattered to (or gathered from) the streams, with fixed-size array views so
//! the compiler drops the bounds checks of the inner loops. Every kernel writes into
//! possibly uninitialized output and writes every byte of it.

use core::mem::MaybeUninit;

/// Values per block of the blocked loops.
const BLOCK: usize = 128;

/// Split for a width known at compile time.
pub(super) fn split_const<const W: usize>(src: &[u8], dst: &mut [MaybeUninit<u8>]) {
    let n = src.len() / W;
    let mut i = 0;
    while i + BLOCK <= n {
        let block = &src[i * W..(i + BLOCK) * W];
        for j in 0..W {
            let out: &mut [MaybeUninit<u8>; BLOCK] = (&mut dst[j * n + i..j * n + i + BLOCK])
                .try_into()
                .expect("block");
            for (o, value) in out.iter_mut().zip(block.chunks_exact(W)) {
                *o = MaybeUninit::new(value[j]);
            }
        }
        i += BLOCK;
    }
    split_tail::<W>(src, dst, i);
}

/// Unsplit for a width known at compile time.
pub(super) fn unsplit_const<const W: usize>(src: &[u8], dst: &mut [MaybeUninit<u8>]) {
    let n = src.len() / W;
    let mut i = 0;
    while i + BLOCK <= n {
        let streams: [&[u8; BLOCK]; W] = core::array::from_fn(|j| {
            (&src[j * n + i..j * n + i + BLOCK])
                .try_into()
                .expect("block")
        });
        let out = &mut dst[i * W..(i + BLOCK) * W];
        for (k, value) in out.chunks_exact_mut(W).enumerate().take(BLOCK) {
            let bytes: [u8; W] = core::array::from_fn(|j| streams[j][k & (BLOCK - 1)]);
            for (o, b) in value.iter_mut().zip(bytes) {
                *o = MaybeUninit::new(b);
            }
        }
        i += BLOCK;
    }
    unsplit_tail::<W>(src, dst, i);
}

/// Split of values `start..n`, value by value (the end of every kernel).
pub(super) fn split_tail<const W: usize>(src: &[u8], dst: &mut [MaybeUninit<u8>], start: usize) {
    let n = src.len() / W;
    for i in start..n {
        for j in 0..W {
            dst[j * n + i] = MaybeUninit::new(src[i * W + j]);
        }
    }
}

/// Unsplit of values `start..n`, value by value (the end of every kernel).
pub(super) fn unsplit_tail<const W: usize>(src: &[u8], dst: &mut [MaybeUninit<u8>], start: usize) {
    let n = src.len() / W;
    for i in start..n {
        for j in 0..W {
            dst[i * W + j] = MaybeUninit::new(src[j * n + i]);
        }
    }
}

/// Split for any width, blocked: each block of values is read once per stream while it
/// is still in cache.
pub(super) fn split_any(src: &[u8], dst: &mut [MaybeUninit<u8>], width: usize) {
    let n = src.len() / width;
    let mut start = 0;
    while start < n {
        let end = (start + BLOCK).min(n);
        let block = &src[start * width..end * width];
        for j in 0..width {
            let out = &mut dst[j * n + start..j * n + end];
            for (o, value) in out.iter_mut().zip(block.chunks_exact(width)) {
                *o = MaybeUninit::new(value[j]);
            }
        }
        start = end;
    }
}

/// Unsplit for any width, blocked like [`split_any`].
pub(super) fn unsplit_any(src: &[u8], dst: &mut [MaybeUninit<u8>], width: usize) {
    let n = src.len() / width;
    let mut start = 0;
    while start < n {
        let end = (start + BLOCK).min(n);
        let block = &mut dst[start * width..end * width];
        for j in 0..width {
            let stream = &src[j * n + start..j * n + end];
            for (value, &byte) in block.chunks_exact_mut(width).zip(stream) {
                value[j] = MaybeUninit::new(byte);
            }
        }
        start = end;
    }
}
