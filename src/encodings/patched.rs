//! Patched blocks: unsigned integers (a delta chunk's zigzag residuals) bit-packed in
//! blocks of one 512-bit vector each, every block at a width of its own, with the few
//! integers wider than their block's width patched.
//!
//! A chunk-wide bit width pays for the chunk's widest residual on every value, and a
//! smooth series' residuals are narrow almost everywhere but a few times a chunk, where it
//! crosses zero (a float's bits jump between the signs) or starts a new row. Blocks of
//! sixteen 4-byte residuals each take the width that most of their values need, and up to
//! a few of the rest a block are patched: their bits above the width are stored apart
//! with their lane. Each block's width is chosen for the fewest bits, `len * b` packed
//! plus `log2(V) + 8W - b` a patch. On noisy smooth series this comes close to
//! entropy-coding the same residuals (`delta+ans`), whose gain is in the leading bits a
//! block's width already pays little for, and it decodes with no table: one byte
//! permutation and one shift a block, whatever its width.
//!
//! ```text
//! body of n integers of W bytes (W = 1, 2, 4 or 8), in blocks of V = 64 / W
//!   nb = ceil(n / V) bytes   a header a block, h = c * (8W + 1) + b: its width b (0 to
//!                            8W) and its patch count c (at most its length; none when
//!                            b = 8W); block k holds integers kV .. min(kV + V, n)
//!   the blocks               each its integers' low b bits packed LSB first, value after
//!                            value: ceil(len * b / 8) bytes (a whole block V * b / 8)
//!   the patches              one bit stream, LSB first, block after block, each block's
//!                            c patches in increasing lane: the lane (log2 V bits, under
//!                            its length), then the integer's bits above b (8W - b bits);
//!                            ceil(P / 8) bytes for P bits in all
//! ```
//!
//! The body ends exactly there. Worked example, four 4-byte integers `[3, 1, 0x1_0000, 2]`
//! (one block): at 2 bits, `0x1_0000` patched (its low 2 bits are 0, its other 30 bits
//! `0x4000`), 4 * 2 + (4 + 30) = 42 bits, fewer than 17 bits packed (68); the header is
//! 1 * 33 + 2 = 0x23 and the body is
//!
//! ```text
//! 23 | 87               | 02 00 04 00 00
//! h    3,1,0,2 at 2 bits  lane 2 in 4 bits, then 0x4000 in 30 bits
//! ```
//!
//! (`tests::worked_example` checks these bytes).

use crate::error::{Error, Result};
use crate::kernels;
use crate::kernels::bitpack::packed_len;

/// Integers of `width` bytes a block holds: one 512-bit vector of them.
pub(crate) const fn block_values(width: usize) -> usize {
    64 / width
}

/// Bits of a patch's lane.
const fn lane_bits(width: usize) -> u32 {
    block_values(width).trailing_zeros()
}

/// Headers are `count * stride + width`.
const fn stride(width: usize) -> usize {
    8 * width + 1
}

/// Most patches the encoder gives a block: as many as keep every header a byte.
const fn max_patches(width: usize) -> u64 {
    (256 / stride(width) - 1) as u64
}

/// The low `bits` bits (0 to 64) set.
fn low_mask(bits: u32) -> u64 {
    if bits == 0 {
        0
    } else {
        u64::MAX >> (64 - bits)
    }
}

/// Significant bits of `x`.
fn bit_len(x: u64) -> u32 {
    64 - x.leading_zeros()
}

/// The blocks' headers chosen for `words` (integers of `width` bytes), and the bytes of
/// the body they make.
pub(crate) fn plan(words: &[u64], width: usize) -> (Vec<u8>, usize) {
    let bits = 8 * width as u32;
    let lane = u64::from(lane_bits(width));
    let mut headers = Vec::with_capacity(words.len().div_ceil(block_values(width)));
    let (mut packed, mut patch_bits) = (0usize, 0u64);
    for block in words.chunks(block_values(width)) {
        let mut counts = [0u32; 65];
        for &r in block {
            counts[bit_len(r) as usize] += 1;
        }
        let len = block.len() as u64;
        // From the widest down: `above` integers are wider than `b`. A tie keeps the
        // wider width, with fewer patches.
        let (mut best, mut above) = ((u64::MAX, 0u32, 0u64), 0u64);
        for b in (0..=bits).rev() {
            if above > max_patches(width) {
                break;
            }
            let cost = len * u64::from(b) + above * (lane + u64::from(bits - b));
            if cost < best.0 {
                best = (cost, b, above);
            }
            above += u64::from(counts[b as usize]);
        }
        let (_, b, count) = best;
        headers.push((count as usize * stride(width) + b as usize) as u8);
        packed += packed_len(block.len(), b as u8);
        patch_bits += count * (lane + u64::from(bits - b));
    }
    let bytes = headers.len() + packed + patch_bits.div_ceil(8) as usize;
    (headers, bytes)
}

/// Appends the body of `words` (integers of `width` bytes) with the block headers
/// `headers` of [`plan`].
pub(crate) fn write(words: &[u64], width: usize, headers: &[u8], out: &mut Vec<u8>) {
    let bits = 8 * width as u32;
    out.extend_from_slice(headers);
    let mut low = [0u64; 64];
    let mut patches = BitWriter::default();
    for (block, &h) in words.chunks(block_values(width)).zip(headers) {
        let b = (usize::from(h) % stride(width)) as u32;
        let m = low_mask(b);
        for (slot, &r) in low.iter_mut().zip(block) {
            *slot = r & m;
        }
        kernels::bitpack::pack(&low[..block.len()], b as u8, out);
        for (i, &r) in block.iter().enumerate() {
            if bit_len(r) > b {
                patches.put(i as u64, lane_bits(width));
                patches.put(r >> b, bits - b);
            }
        }
    }
    patches.finish(out);
}

/// Bits appended LSB first.
#[derive(Default)]
struct BitWriter {
    bytes: Vec<u8>,
    acc: u128,
    fill: u32,
}

impl BitWriter {
    /// Appends the low `bits` (at most 64) bits of `value`.
    fn put(&mut self, value: u64, bits: u32) {
        self.acc |= u128::from(value & low_mask(bits)) << self.fill;
        self.fill += bits;
        while self.fill >= 8 {
            self.bytes.push(self.acc as u8);
            self.acc >>= 8;
            self.fill -= 8;
        }
    }

    fn finish(mut self, out: &mut Vec<u8>) {
        if self.fill > 0 {
            self.bytes.push(self.acc as u8);
        }
        out.extend_from_slice(&self.bytes);
    }
}

/// `bits` (at most 64) bits of `bytes` from bit `pos` on, LSB first; zeros past the end.
fn bits_at(bytes: &[u8], pos: usize, bits: u32) -> u64 {
    let at = pos / 8;
    if bits + (pos % 8) as u32 <= 64 {
        if let Some(word) = bytes.get(at..at + 8) {
            let word = u64::from_le_bytes(word.try_into().expect("8 bytes"));
            return (word >> (pos % 8)) & low_mask(bits);
        }
    }
    let mut word = [0u8; 16];
    if let Some(rest) = bytes.get(at..) {
        let take = rest.len().min(16);
        word[..take].copy_from_slice(&rest[..take]);
    }
    ((u128::from_le_bytes(word) >> (pos % 8)) as u64) & low_mask(bits)
}

/// The parts of a body, its layout checked whole (every header, every patch's lane, the
/// length of every part) before any integer is read.
struct Layout<'a> {
    headers: &'a [u8],
    blocks: &'a [u8],
    patches: &'a [u8],
}

impl<'a> Layout<'a> {
    fn parse(body: &'a [u8], n: usize, width: usize) -> Result<Self> {
        let corrupt =
            |what: String| Error::corrupt(format!("patched blocks of {n} integers: {what}"));
        let bits = 8 * width;
        let (v, stride) = (block_values(width), stride(width));
        let lane = lane_bits(width) as usize;
        let headers = body
            .get(..n.div_ceil(v))
            .ok_or_else(|| corrupt("cut inside its block headers".into()))?;
        let (mut packed, mut patch_bits) = (0usize, 0usize);
        for (k, &h) in headers.iter().enumerate() {
            let (b, c) = (usize::from(h) % stride, usize::from(h) / stride);
            if c > 0 {
                let len = v.min(n - k * v);
                if c > len || b == bits {
                    return Err(corrupt(format!("block {k} of {b} bits with {c} patches")));
                }
                patch_bits += c * (lane + bits - b);
            }
            packed += b;
        }
        // Whole blocks of `b` bits take `8b / W` bytes; the last may be short.
        if let Some(&h) = headers.last() {
            let b = usize::from(h) % stride;
            let last = n - (headers.len() - 1) * v;
            packed = (packed - b) * 8 / width + packed_len(last, b as u8);
        }
        let (blocks, patches) = body[headers.len()..]
            .split_at_checked(packed)
            .ok_or_else(|| corrupt("cut inside its blocks".into()))?;
        if patches.len() != patch_bits.div_ceil(8) {
            return Err(corrupt(format!(
                "{} bytes of patches where {} were expected",
                patches.len(),
                patch_bits.div_ceil(8)
            )));
        }
        Ok(Self {
            headers,
            blocks,
            patches,
        })
    }
}

/// Writes the `n` integers of the body `body` (integers of `width` bytes: 1, 2, 4 or 8)
/// into `out` (at least `n * width` bytes), little-endian; the body must be exactly
/// [`write`]'s. With `sums` (`Some(order2)`), the integers are a delta chunk's zigzag
/// residuals of order 1 or 2, and where a kernel takes their running sums as it reads
/// them, the values are written instead; returns whether they were.
pub(crate) fn read_into(
    body: &[u8],
    n: usize,
    width: usize,
    sums: Option<bool>,
    out: &mut [u8],
) -> Result<bool> {
    let layout = Layout::parse(body, n, width)?;
    let len = out.len();
    let out = out.get_mut(..n * width).ok_or_else(|| {
        Error::invalid(format!(
            "an output of {len} bytes for {n} integers of {width} bytes"
        ))
    })?;
    match kernels::unpack::unpack_blocks(
        layout.headers,
        layout.blocks,
        layout.patches,
        n,
        width,
        sums,
        out,
    ) {
        Some(true) => return Ok(sums.is_some()),
        Some(false) => return Err(misplaced(n)),
        None => {}
    }
    match width {
        1 => read_portable::<1>(&layout, n, out),
        2 => read_portable::<2>(&layout, n, out),
        4 => read_portable::<4>(&layout, n, out),
        8 => read_portable::<8>(&layout, n, out),
        _ => Err(Error::invalid(format!(
            "patched blocks of {width}-byte integers"
        ))),
    }?;
    Ok(false)
}

/// [`read_into`] without the AVX-512 kernel, at a width known when compiled: 4-byte
/// integers a vector at a time where the CPU has AVX2 (`kernels::unpack::blocks4_avx2`,
/// whole blocks of up to 25 bits), else each integer's bits one unaligned 8-byte load, a
/// shift and a mask (where the block has 8 bytes to spare past its last integer's first
/// byte and the width is at most 57 bits; else bit by bit), and a store of exactly `W`
/// bytes; a block's patches are read and OR-ed in right after it, each lane and its high
/// bits in one read where they fit.
fn read_portable<const W: usize>(layout: &Layout<'_>, n: usize, out: &mut [u8]) -> Result<()> {
    let v = block_values(W);
    let lane_bits = lane_bits(W);
    let blocks = layout.blocks;
    // 4-byte integers' low bits go in a vector at a time where the CPU has AVX2, in the
    // blocks the kernel takes; the loop below unpacks the others.
    let unpacked = W == 4 && kernels::unpack::blocks4_avx2(layout.headers, blocks, n, out);
    let (mut at, mut patch_pos) = (0, 0);
    for (k, &h) in layout.headers.iter().enumerate() {
        let (b, count) = (
            (usize::from(h) % stride(W)) as u32,
            usize::from(h) / stride(W),
        );
        let len = v.min(n - k * v);
        let bytes = packed_len(len, b as u8);
        let mask = low_mask(b);
        let out = &mut out[k * v * W..(k * v + len) * W];
        match blocks.get(at..at + bytes + 8) {
            _ if unpacked
                && kernels::unpack::avx2_takes_block(len, b as usize, at, blocks.len()) => {}
            Some(block) if b <= 57 => {
                for (i, value) in out.chunks_exact_mut(W).enumerate() {
                    let pos = i * b as usize;
                    let word = u64::from_le_bytes(
                        block[pos / 8..pos / 8 + 8].try_into().expect("8 bytes"),
                    );
                    value.copy_from_slice(&((word >> (pos % 8)) & mask).to_le_bytes()[..W]);
                }
            }
            _ => {
                let block = &blocks[at..at + bytes];
                for (i, value) in out.chunks_exact_mut(W).enumerate() {
                    let r = bits_at(block, i * b as usize, b);
                    value.copy_from_slice(&r.to_le_bytes()[..W]);
                }
            }
        }
        at += bytes;
        // Checked by `parse`: a block with patches has under `8W` bits.
        let high_bits = 8 * W as u32 - b;
        let mut next_lane = 0;
        for _ in 0..count {
            let (lane, high) = if lane_bits + high_bits <= 57 {
                let word = bits_at(layout.patches, patch_pos, lane_bits + high_bits);
                (word & low_mask(lane_bits), word >> lane_bits)
            } else {
                let lane = bits_at(layout.patches, patch_pos, lane_bits);
                let high = bits_at(layout.patches, patch_pos + lane_bits as usize, high_bits);
                (lane, high)
            };
            patch_pos += (lane_bits + high_bits) as usize;
            let lane = lane as usize;
            if lane < next_lane || lane >= len {
                return Err(misplaced(n));
            }
            next_lane = lane + 1;
            let value: &mut [u8; W] = (&mut out[lane * W..(lane + 1) * W])
                .try_into()
                .expect("W bytes");
            let mut word = [0u8; 8];
            word[..W].copy_from_slice(value);
            let r = u64::from_le_bytes(word) | high << b;
            value.copy_from_slice(&r.to_le_bytes()[..W]);
        }
    }
    Ok(())
}

/// The error of a patch whose lane is out of order or past its block's end.
fn misplaced(n: usize) -> Error {
    Error::corrupt(format!(
        "patched blocks of {n} integers: a patch's lane out of order or past its block"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encodings::xorshift;

    fn body(words: &[u64], width: usize) -> Vec<u8> {
        let (headers, bytes) = plan(words, width);
        let mut out = Vec::new();
        write(words, width, &headers, &mut out);
        assert_eq!(out.len(), bytes, "the plan's size is the body's");
        out
    }

    fn read(body: &[u8], n: usize, width: usize) -> Result<Vec<u64>> {
        let mut out = vec![0xAB; n * width + 3];
        assert!(!read_into(body, n, width, None, &mut out)?);
        assert!(out[n * width..].iter().all(|&b| b == 0xAB), "wrote past n");
        Ok(out[..n * width]
            .chunks_exact(width)
            .map(super::super::bitpacked::read)
            .collect())
    }

    #[test]
    fn worked_example() {
        let words = [3, 1, 0x1_0000, 2];
        let bytes = body(&words, 4);
        assert_eq!(bytes, [0x23, 0x87, 0x02, 0x00, 0x04, 0x00, 0x00]);
        assert_eq!(read(&bytes, 4, 4).unwrap(), words);
    }

    /// Every width, lengths around the blocks, narrow integers with wide ones among them
    /// (patched or widening their block), through the kernel where the CPU has it and the
    /// scalar reader either way.
    #[test]
    fn round_trips_every_width_and_length() {
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for width in [1usize, 2, 4, 8] {
            let bits = 8 * width as u32;
            let v = block_values(width);
            for n in (0..3 * v + 2).chain([1000, 1024]) {
                for narrow in [0u32, 1, 5, 13, bits / 2, bits - 1, bits] {
                    let words: Vec<u64> = (0..n)
                        .map(|i| {
                            let r = xorshift(&mut x);
                            let r = if i % 7 == 3 { r } else { r & low_mask(narrow) };
                            r & low_mask(bits)
                        })
                        .collect();
                    let bytes = body(&words, width);
                    assert_eq!(
                        read(&bytes, n, width).unwrap(),
                        words,
                        "{width} {n} {narrow}"
                    );
                }
            }
        }
    }

    /// Every prefix and every longer body is an error, never a panic; so is any byte
    /// changed where it makes the layout wrong.
    #[test]
    fn hostile_bodies_are_errors() {
        let mut x = 5u64;
        for width in [1usize, 2, 4, 8] {
            let n = 100;
            let words: Vec<u64> = (0..n)
                .map(|i| {
                    let r = xorshift(&mut x);
                    if i % 9 == 0 {
                        r
                    } else {
                        r & 0x3F
                    }
                })
                .map(|r| r & low_mask(8 * width as u32))
                .collect();
            let bytes = body(&words, width);
            for len in 0..bytes.len() {
                assert!(
                    read(&bytes[..len], n, width).is_err(),
                    "{width}: prefix {len}"
                );
            }
            let mut longer = bytes.clone();
            longer.push(0);
            assert!(read(&longer, n, width).is_err());
            // Any single byte changed decodes to something or fails, never panics.
            for at in 0..bytes.len() {
                for flip in [0x01u8, 0x80, 0xFF] {
                    let mut bad = bytes.clone();
                    bad[at] ^= flip;
                    let _ = read(&bad, n, width);
                }
            }
        }
        // A block of all 32 bits with a patch (header 33 + 32).
        let mut full = vec![65u8];
        full.extend_from_slice(&[0; 4]);
        full.extend_from_slice(&[0; 5]);
        assert!(read(&full, 1, 4).is_err());
        // More patches than the block has integers: two for one (header 2 * 33).
        assert!(read(&[66, 0, 0, 0, 0, 0, 0, 0, 0, 0], 1, 4).is_err());
        // Lanes out of order: 1 then 0, in a block of 0 bits (two patches of 36 bits).
        let mut lanes = vec![66u8];
        let mut w = BitWriter::default();
        for lane in [1u64, 0] {
            w.put(lane, 4);
            w.put(5, 32);
        }
        w.finish(&mut lanes);
        assert!(read(&lanes, 2, 4).is_err());
        // A lane past a short block's end.
        let mut past = vec![33u8];
        let mut w = BitWriter::default();
        w.put(3, 4);
        w.put(5, 32);
        w.finish(&mut past);
        assert!(read(&past, 2, 4).is_err());
    }
}
