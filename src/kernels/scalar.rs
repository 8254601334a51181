//! Portable kernels: no `unsafe`, bounds checks hoisted by iterating exact chunks.

/// Split for a width known at compile time: one pass per output stream, reading the values
/// with a stride of `W` and writing the stream sequentially.
pub(super) fn split_const<const W: usize>(src: &[u8], dst: &mut [u8]) {
    let n = src.len() / W;
    if n == 0 {
        return;
    }
    for (j, stream) in dst.chunks_exact_mut(n).enumerate().take(W) {
        for (out, value) in stream.iter_mut().zip(src.chunks_exact(W)) {
            *out = value[j];
        }
    }
}

/// Inverse of [`split_const`]: values are rebuilt `W` bytes at a time from the `W` streams.
pub(super) fn unsplit_const<const W: usize>(src: &[u8], dst: &mut [u8]) {
    let n = src.len() / W;
    if n == 0 {
        return;
    }
    let streams: [&[u8]; W] = core::array::from_fn(|j| &src[j * n..(j + 1) * n]);
    for (i, value) in dst.chunks_exact_mut(W).enumerate() {
        let bytes: [u8; W] = core::array::from_fn(|j| streams[j][i]);
        value.copy_from_slice(&bytes);
    }
}

/// Split for any width, blocked by stream.
pub(super) fn split_any(src: &[u8], dst: &mut [u8], width: usize) {
    let n = src.len() / width;
    if n == 0 {
        return;
    }
    for (j, stream) in dst.chunks_exact_mut(n).enumerate() {
        for (out, value) in stream.iter_mut().zip(src.chunks_exact(width)) {
            *out = value[j];
        }
    }
}

/// Unsplit for any width, blocked by stream.
pub(super) fn unsplit_any(src: &[u8], dst: &mut [u8], width: usize) {
    let n = src.len() / width;
    if n == 0 {
        return;
    }
    for (j, stream) in src.chunks_exact(n).enumerate() {
        for (value, &byte) in dst.chunks_exact_mut(width).zip(stream) {
            value[j] = byte;
        }
    }
}
