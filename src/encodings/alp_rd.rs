//! ALP-RD ("real doubles", Afroozeh et al., SIGMOD 2023) for 32- and 64-bit floats that
//! are not decimals: ephemerides, geoid heights, model output with every mantissa bit
//! in use. ALP finds no exponent for them, but their front bits (sign, exponent, the top
//! of the mantissa) take few distinct values in a chunk. Each value's bits are split at
//! `r`: the left part (the top `B - r` bits of a `B`-bit value, at most 16) is replaced
//! by its index in a dictionary of at most 8 left parts, bit-packed; the right part is
//! bit-packed as it is; left parts outside the dictionary are exceptions, stored with
//! their positions.
//!
//! Every chunk chooses its own split and dictionary (from a sample of its values: the
//! split with the smallest estimate, then the most frequent left parts of the whole chunk)
//! and carries them in its header, 4 to 20 bytes: a chunk decodes alone, and adapts to
//! the part of the page it holds.
//!
//! ```text
//! chunk of n values of B bits (B = 32 or 64)
//!   byte  r: right bits, B - 16 ..= B - 1
//!   byte  k: dictionary entries, 1..=8; 0 for a plain chunk (byte r is 0 and the n
//!         values follow as they are)
//!   k × u16 LE: the dictionary, left parts strictly increasing, each below 2^(B - r)
//!   u16 LE: E, the exceptions, at most n
//!   the n dictionary indices, bit-packed at ceil(log2 k) bits (none for k = 1)
//!   the n right parts, bit-packed at r bits
//!   E × (u16 LE position, u16 LE left part): positions strictly increasing, below n;
//!         the value at a position is its left part then its right part, and its index
//!         (0) is not used
//! ```
//!
//! Worked example: f32 values `1.5, 1.75, 1.5, -2.0` are `3FC00000 3FE00000 3FC00000
//! C0000000`. A split at r = 21 leaves left parts `1FE, 1FF, 1FE, 600`: a dictionary
//! `1FE 1FF` (k = 2, one index bit), indices `0 1 0 0`, right parts `0 0 0 0`, and one
//! exception, position 3 with left part `600`:
//!
//! ```text
//! 15 02          r = 21, k = 2
//! FE 01 FF 01    the dictionary
//! 01 00          one exception
//! 02             indices 0, 1, 0, 0 at 1 bit
//! 00 00 00 00 00 00 00 00 00 00 00   right parts: 4 × 21 bits
//! 03 00 00 06    position 3, left part 0x600
//! ```

use super::{
    check_output, checked_len, ChunkShape, ChunkStorage, MiniBlockCompressor, MiniBlockDecompressor,
};
use crate::error::{Error, Result};
use crate::kernels::bitpack;
use crate::proto::encodings::{array_encoding, AlpRd, ArrayEncoding};

/// At most this many left parts in a chunk's dictionary (3 index bits).
const MAX_DICTIONARY: usize = 8;

/// Left parts are at most this many bits (and exceptions store them in a u16).
const MAX_LEFT_BITS: u32 = 16;

/// Values sampled to choose a chunk's split.
const SAMPLE: usize = 128;

/// Most values in a chunk: exception positions are u16.
const MAX_VALUES: usize = 1 << 16;

/// Bits an exception costs beyond its value's right part: its position and left part.
const EXCEPTION_BITS: usize = 32;

/// Encodes chunks of 32- or 64-bit floats with ALP-RD.
#[derive(Debug, Clone)]
pub struct AlpRdEncoder {
    shape: ChunkShape,
}

impl AlpRdEncoder {
    /// An encoder for floats of `bits_per_value` bits (32 or 64).
    pub fn try_new(bits_per_value: u64) -> Result<Self> {
        check_bits(bits_per_value)?;
        Ok(Self {
            shape: ChunkShape::from_bits(bits_per_value)?,
        })
    }

    /// The same encoder with chunks of `chunk_values` values.
    pub fn with_chunk_values(self, chunk_values: usize) -> Result<Self> {
        if chunk_values > MAX_VALUES {
            return Err(Error::invalid(format!(
                "an alp-rd chunk holds at most {MAX_VALUES} values, got {chunk_values}"
            )));
        }
        Ok(Self {
            shape: self.shape.with_chunk_values(chunk_values)?,
        })
    }
}

fn check_bits(bits_per_value: u64) -> Result<()> {
    if bits_per_value == 32 || bits_per_value == 64 {
        Ok(())
    } else {
        Err(Error::unsupported(format!(
            "alp-rd takes 32- or 64-bit floats, not {bits_per_value}-bit values"
        )))
    }
}

/// A value of `width` (4 or 8) bytes as an integer.
fn read(bytes: &[u8]) -> u64 {
    match bytes.len() {
        4 => u64::from(u32::from_le_bytes(bytes.try_into().expect("4 bytes"))),
        _ => u64::from_le_bytes(bytes.try_into().expect("8 bytes")),
    }
}

/// A chunk's split: right bits and dictionary (sorted).
struct Split {
    right: u32,
    dictionary: Vec<u16>,
}

/// Index bits for a dictionary of `k` entries.
fn index_bits(k: usize) -> u8 {
    (k.max(1) - 1).checked_ilog2().map_or(0, |b| b as u8 + 1)
}

/// The (at most 8) most frequent of the sorted left parts `lefts` with their counts,
/// most frequent first (ties: the smaller part first).
fn top_lefts(lefts: &[u16], starts: &mut Vec<usize>) -> Vec<(u16, usize)> {
    let n = lefts.len();
    if n == 0 {
        return Vec::new();
    }
    // Where each run of equal parts starts (in `starts`, scratch space reused across
    // calls), found without a branch per part (the runs' lengths are unpredictable),
    // then one more start at the end.
    starts.clear();
    starts.resize(n + 1, 0);
    let mut runs = 1;
    for i in 1..n {
        starts[runs] = i;
        runs += usize::from(lefts[i] != lefts[i - 1]);
    }
    starts[runs] = n;
    let mut top = [(0u16, 0usize); MAX_DICTIONARY];
    let mut len = 0;
    for run in starts[..=runs].windows(2) {
        let count = run[1] - run[0];
        // Most parts are no more frequent than the last of a full list: skipped at once.
        if len == MAX_DICTIONARY && top[len - 1].1 >= count {
            continue;
        }
        // After every entry at least as frequent: those have smaller parts.
        let at = top[..len]
            .iter()
            .position(|&(_, c)| c < count)
            .unwrap_or(len);
        if len < MAX_DICTIONARY {
            len += 1;
        }
        top.copy_within(at..len - 1, at + 1);
        top[at] = (lefts[run[0]], count);
    }
    top[..len].to_vec()
}

/// The smallest estimate over dictionary sizes 1, 2, 4 and 8 for `n` values split at
/// `right` bits whose most frequent left parts are `runs`: (bits, entries).
fn best_dictionary(runs: &[(u16, usize)], n: usize, right: u32) -> (usize, usize) {
    let mut best = (usize::MAX, 1);
    for k in [1, 2, 4, 8] {
        let covered: usize = runs.iter().take(k).map(|r| r.1).sum();
        let bits = n * (right as usize + usize::from(index_bits(k)))
            + (n - covered) * EXCEPTION_BITS
            + 16 * k;
        if bits < best.0 {
            best = (bits, k);
        }
        if runs.len() <= k {
            break;
        }
    }
    best
}

/// Chooses the split of `values` (as integers of `bits` bits) on a sample, then its
/// dictionary from every value; `None` when storing them plain is no larger.
fn split(values: &[u64], bits: u32) -> Option<Split> {
    let n = values.len();
    let step = (n / SAMPLE).max(1);
    let mut sample: Vec<u64> = values.iter().step_by(step).take(SAMPLE).copied().collect();
    // Sorted once: the left parts of every split then come sorted too, and ranking them
    // is a pass, not a sort.
    sample.sort_unstable();
    let mut lefts = vec![0u16; sample.len()];
    let mut starts = Vec::with_capacity(n + 1);
    let mut best: Option<(usize, u32)> = None;
    for right in bits - MAX_LEFT_BITS..bits {
        for (l, &v) in lefts.iter_mut().zip(&sample) {
            *l = (v >> right) as u16;
        }
        let (estimate, _) = best_dictionary(&top_lefts(&lefts, &mut starts), sample.len(), right);
        if best.is_none_or(|(b, _)| estimate < b) {
            best = Some((estimate, right));
        }
    }
    let (_, right) = best?;
    let mut lefts: Vec<u16> = values.iter().map(|&v| (v >> right) as u16).collect();
    lefts.sort_unstable();
    let runs = top_lefts(&lefts, &mut starts);
    let (estimate, k) = best_dictionary(&runs, n, right);
    // Header, dictionary and exception count against the values as they are.
    if estimate.div_ceil(8) + 4 >= n * (bits as usize / 8) {
        return None;
    }
    let mut dictionary: Vec<u16> = runs.iter().take(k).map(|r| r.0).collect();
    dictionary.sort_unstable();
    Some(Split { right, dictionary })
}

impl MiniBlockCompressor for AlpRdEncoder {
    fn value_width(&self) -> usize {
        self.shape.width
    }

    fn chunk_values(&self) -> usize {
        self.shape.chunk_values
    }

    fn array_encoding(&self) -> ArrayEncoding {
        ArrayEncoding {
            array_encoding: Some(array_encoding::ArrayEncoding::AlpRd(AlpRd {
                bits_per_value: self.shape.width as u64 * 8,
            })),
        }
    }

    fn compress_chunk(
        &self,
        values: &[u8],
        out: &mut Vec<u8>,
        _: &mut Vec<u8>,
    ) -> Result<ChunkStorage> {
        self.shape.check_chunk(values)?;
        let width = self.shape.width;
        let bits = 8 * width as u32;
        let ints: Vec<u64> = values.chunks_exact(width).map(read).collect();
        let Some(Split { right, dictionary }) = split(&ints, bits) else {
            out.extend_from_slice(&[0, 0]);
            out.extend_from_slice(values);
            return Ok(ChunkStorage::Raw);
        };
        out.extend_from_slice(&[right as u8, dictionary.len() as u8]);
        for left in &dictionary {
            out.extend_from_slice(&left.to_le_bytes());
        }
        let mut indices = Vec::with_capacity(ints.len());
        let mut exceptions: Vec<(u16, u16)> = Vec::new();
        for (i, &v) in ints.iter().enumerate() {
            let left = (v >> right) as u16;
            if let Ok(index) = dictionary.binary_search(&left) {
                indices.push(index as u64);
            } else {
                // At most MAX_VALUES values: every position fits a u16.
                exceptions.push((i as u16, left));
                indices.push(0);
            }
        }
        out.extend_from_slice(&(exceptions.len() as u16).to_le_bytes());
        bitpack::pack(&indices, index_bits(dictionary.len()), out);
        let mask = (1u64 << right) - 1;
        let rights: Vec<u64> = ints.iter().map(|&v| v & mask).collect();
        bitpack::pack(&rights, right as u8, out);
        for (position, left) in exceptions {
            out.extend_from_slice(&position.to_le_bytes());
            out.extend_from_slice(&left.to_le_bytes());
        }
        Ok(ChunkStorage::Raw)
    }
}

/// Decodes ALP-RD chunks.
#[derive(Debug, Clone)]
pub struct AlpRdDecompressor {
    width: usize,
}

impl AlpRdDecompressor {
    /// The decoder an `AlpRd` message of `bits_per_value` describes.
    pub fn new(bits_per_value: u64) -> Result<Self> {
        check_bits(bits_per_value)?;
        Ok(Self {
            width: bits_per_value as usize / 8,
        })
    }
}

/// A chunk's fields, every one checked against the chunk's length and the value width.
struct Layout<'a> {
    right: u32,
    dictionary: Vec<u64>,
    indices: &'a [u8],
    rights: &'a [u8],
    exceptions: &'a [u8],
}

impl AlpRdDecompressor {
    /// Parses a chunk of `n` values; `None` for a plain chunk (its values after 2 bytes).
    fn parse<'a>(&self, chunk: &'a [u8], n: usize) -> Result<Option<Layout<'a>>> {
        let corrupt = |what: String| Error::corrupt(format!("alp-rd chunk of {n} values: {what}"));
        let bits = 8 * self.width as u32;
        let &[right, k, ..] = chunk else {
            return Err(corrupt(format!(
                "{} bytes, shorter than its header",
                chunk.len()
            )));
        };
        if n > MAX_VALUES {
            return Err(corrupt(format!("more than {MAX_VALUES} values")));
        }
        if k == 0 {
            let len = checked_len(n, self.width)?;
            if right != 0 || chunk.len() != 2 + len {
                return Err(corrupt(format!(
                    "a plain chunk of {} bytes with r = {right} (expected {} bytes, r = 0)",
                    chunk.len(),
                    2 + len
                )));
            }
            return Ok(None);
        }
        let (right, k) = (u32::from(right), usize::from(k));
        if !(bits - MAX_LEFT_BITS..bits).contains(&right) || k > MAX_DICTIONARY {
            return Err(corrupt(format!(
                "r = {right} and {k} dictionary entries (r from {} to {}, at most {MAX_DICTIONARY} entries)",
                bits - MAX_LEFT_BITS,
                bits - 1
            )));
        }
        let left_limit = 1u64 << (bits - right);
        let dictionary_bytes = chunk
            .get(2..2 + 2 * k + 2)
            .ok_or_else(|| corrupt("cut inside its dictionary".to_owned()))?;
        let dictionary: Vec<u64> = dictionary_bytes[..2 * k]
            .chunks_exact(2)
            .map(|b| u64::from(u16::from_le_bytes([b[0], b[1]])))
            .collect();
        if dictionary.windows(2).any(|w| w[0] >= w[1])
            || dictionary.iter().any(|&l| l >= left_limit)
        {
            return Err(corrupt(format!(
                "dictionary {dictionary:?}: not increasing, or a left part of over {} bits",
                bits - right
            )));
        }
        let exceptions = usize::from(u16::from_le_bytes([
            dictionary_bytes[2 * k],
            dictionary_bytes[2 * k + 1],
        ]));
        if exceptions > n {
            return Err(corrupt(format!("{exceptions} exceptions")));
        }
        let at = 4 + 2 * k;
        let index_len = bitpack::packed_len(n, index_bits(k));
        let right_len = bitpack::packed_len(n, right as u8);
        let expected = at + index_len + right_len + 4 * exceptions;
        if chunk.len() != expected {
            return Err(corrupt(format!(
                "{} bytes, its header says {expected}",
                chunk.len()
            )));
        }
        let exceptions = &chunk[at + index_len + right_len..];
        let mut next = 0usize;
        for e in exceptions.chunks_exact(4) {
            let position = usize::from(u16::from_le_bytes([e[0], e[1]]));
            let left = u64::from(u16::from_le_bytes([e[2], e[3]]));
            if position < next || position >= n || left >= left_limit {
                return Err(corrupt(format!(
                    "exception at {position} (left part {left:#x}): out of order, past the chunk or over {} bits",
                    bits - right
                )));
            }
            next = position + 1;
        }
        Ok(Some(Layout {
            right,
            dictionary,
            indices: &chunk[at..at + index_len],
            rights: &chunk[at + index_len..at + index_len + right_len],
            exceptions,
        }))
    }
}

impl MiniBlockDecompressor for AlpRdDecompressor {
    fn value_width(&self) -> usize {
        self.width
    }

    fn max_expansion(&self) -> usize {
        1
    }

    fn raw_len_range(&self, num_values: usize) -> Option<(usize, usize)> {
        // At least r = B - 16 bits a value; at most the plain chunk or the header, the
        // indices, full-width right parts and an exception per value.
        let bits = 8 * self.width;
        let min = 4 + 2 + bitpack::packed_len(num_values, (bits - 16) as u8);
        let max = (2 + 2 * MAX_DICTIONARY + 2) + num_values.saturating_mul(self.width + 1 + 4);
        Some((min.min(2 + num_values * self.width), max))
    }

    fn raw_expansion(&self) -> usize {
        // At least 16 bits of right part a value: a chunk decodes to at most 4 times its
        // size (8 bytes from 2 and a bit).
        4
    }

    fn decompress_into(
        &self,
        chunk: &[u8],
        num_values: usize,
        storage: ChunkStorage,
        out: &mut [u8],
        _: &mut Vec<u8>,
    ) -> Result<()> {
        check_output(out, num_values, self.width)?;
        if storage != ChunkStorage::Raw {
            return Err(Error::corrupt(
                "alp-rd chunk is marked compressed but the encoding has no compression",
            ));
        }
        let Some(layout) = self.parse(chunk, num_values)? else {
            out.copy_from_slice(&chunk[2..]);
            return Ok(());
        };
        let k = layout.dictionary.len();
        // Eight entries, the missing ones never indexed (checked below, after the pass):
        // the lookup needs no bounds check beyond the index's three bits.
        let mut lefts = [0u64; MAX_DICTIONARY];
        for (slot, &left) in lefts.iter_mut().zip(&layout.dictionary) {
            *slot = left << layout.right;
        }
        let right = layout.right;
        let width = self.width;
        let mut at = 0;
        let mut widest = 0u64;
        bitpack::unpack_pair(
            (layout.indices, index_bits(k)),
            (layout.rights, right as u8),
            num_values,
            |indices, rights| {
                let dst = &mut out[at * width..(at + rights.len()) * width];
                let values = dst.chunks_exact_mut(width).zip(rights).zip(indices);
                if width == 8 {
                    for ((slot, &r), &i) in values {
                        widest = widest.max(i);
                        let v = lefts[i as usize % MAX_DICTIONARY] | r;
                        slot.copy_from_slice(&v.to_le_bytes());
                    }
                } else {
                    for ((slot, &r), &i) in values {
                        widest = widest.max(i);
                        let v = lefts[i as usize % MAX_DICTIONARY] | r;
                        slot.copy_from_slice(&(v as u32).to_le_bytes());
                    }
                }
                at += rights.len();
            },
        );
        if widest as usize >= k {
            return Err(Error::corrupt(format!(
                "alp-rd chunk of {num_values} values: dictionary index {widest} of {k} entries"
            )));
        }
        let mask = (1u64 << right) - 1;
        for e in layout.exceptions.chunks_exact(4) {
            let position = usize::from(u16::from_le_bytes([e[0], e[1]]));
            let left = u64::from(u16::from_le_bytes([e[2], e[3]]));
            let slot = &mut out[position * width..(position + 1) * width];
            let v = (left << right) | (read(slot) & mask);
            slot.copy_from_slice(&v.to_le_bytes()[..width]);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The top list is the (at most 8) most frequent parts, ties to the smaller part, as
    /// counting every part and sorting gives it, for every length up to 300 and part
    /// ranges from one part to many.
    #[test]
    fn top_lefts_are_the_most_frequent_parts() {
        let mut seed = 3u64;
        for n in 0..300usize {
            for range in [1u64, 3, 12, 40, 1000] {
                let mut lefts: Vec<u16> = (0..n)
                    .map(|_| (crate::encodings::xorshift(&mut seed) % range) as u16)
                    .collect();
                lefts.sort_unstable();
                let mut counts = std::collections::BTreeMap::<u16, usize>::new();
                for &l in &lefts {
                    *counts.entry(l).or_default() += 1;
                }
                let mut expected: Vec<(u16, usize)> = counts.into_iter().collect();
                expected.sort_by_key(|&(l, c)| (std::cmp::Reverse(c), l));
                expected.truncate(MAX_DICTIONARY);
                assert_eq!(
                    top_lefts(&lefts, &mut Vec::new()),
                    expected,
                    "n {n} range {range}"
                );
            }
        }
    }

    fn encode(values: &[u8], bits: u64) -> Vec<u8> {
        let encoder = AlpRdEncoder::try_new(bits).unwrap();
        let mut chunk = Vec::new();
        encoder
            .compress_chunk(values, &mut chunk, &mut Vec::new())
            .unwrap();
        chunk
    }

    fn decode(chunk: &[u8], n: usize, bits: u64) -> Result<Vec<u8>> {
        let decoder = AlpRdDecompressor::new(bits).unwrap();
        let mut out = vec![0; n * bits as usize / 8];
        decoder.decompress_into(chunk, n, ChunkStorage::Raw, &mut out, &mut Vec::new())?;
        Ok(out)
    }

    #[test]
    fn worked_example() {
        let values: Vec<u8> = [1.5f32, 1.75, 1.5, -2.0]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let ints: Vec<u64> = values.chunks_exact(4).map(read).collect();
        // Four values are too few to beat their 16 bytes: the example's split, written
        // out by hand, is what the decoder reads.
        assert!(split(&ints, 32).is_none());
        let chunk = [
            0x15, 0x02, 0xFE, 0x01, 0xFF, 0x01, 0x01, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00,
            0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x06,
        ];
        assert_eq!(decode(&chunk, 4, 32).unwrap(), values);
    }

    #[test]
    fn real_doubles_shrink_and_round_trip() {
        // A smooth series with every mantissa bit in use, a few outliers, a NaN with a
        // payload, -0.0 and a subnormal.
        let values: Vec<f64> = (0..512)
            .map(|i| match i {
                100 => f64::from_bits(0x7FF8_0000_DEAD_BEEF),
                200 => -0.0,
                300 => f64::from_bits(1),
                400 => 1e300,
                _ => 1.0e5 + (f64::from(i) * 0.001).sin() * 3.7,
            })
            .collect();
        let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        let chunk = encode(&bytes, 64);
        assert_ne!(chunk[1], 0, "not plain");
        assert!(chunk.len() < bytes.len() * 7 / 8, "{} bytes", chunk.len());
        assert_eq!(decode(&chunk, 512, 64).unwrap(), bytes);
        // Every prefix and every byte flipped: an error or other values, never a panic.
        for len in 0..chunk.len() {
            assert!(decode(&chunk[..len], 512, 64).is_err(), "{len}");
        }
        for at in 0..chunk.len() {
            let mut bad = chunk.clone();
            bad[at] ^= 0x5A;
            let _ = decode(&bad, 512, 64);
        }
    }

    #[test]
    fn hostile_headers_are_corrupt() {
        let values: Vec<u8> = (0..1024)
            .flat_map(|i| (1000.0f32 + (i as f32 * 0.37).sin()).to_le_bytes())
            .collect();
        let chunk = encode(&values, 32);
        let k = usize::from(chunk[1]);
        assert!(k >= 1);
        assert_eq!(decode(&chunk, 1024, 32).unwrap(), values);
        let bad = |f: &dyn Fn(&mut Vec<u8>), what: &str| {
            let mut bad = chunk.clone();
            f(&mut bad);
            let err = decode(&bad, 1024, 32).expect_err(what);
            assert_eq!(err.kind(), crate::ErrorKind::Corrupt, "{what}");
        };
        bad(&|c| c[0] = 15, "r below B - 16");
        bad(&|c| c[0] = 32, "r of the whole value");
        bad(&|c| c[1] = 9, "nine dictionary entries");
        bad(&|c| c.push(0), "a byte past the chunk");
        bad(
            &|c| {
                let at = 2 + 2 * k;
                c[at..at + 2].copy_from_slice(&2000u16.to_le_bytes());
            },
            "more exceptions than values",
        );
        if k >= 2 {
            bad(&|c| c.swap(2, 4), "dictionary out of order");
        }
        // An index past the dictionary: set every index bit.
        if index_bits(k) > 0 && !k.is_power_of_two() {
            bad(
                &|c| {
                    let at = 4 + 2 * k;
                    c[at] = 0xFF;
                },
                "an index past the dictionary",
            );
        }
        // A plain chunk with a non-zero r.
        let mut plain = vec![1, 0];
        plain.extend_from_slice(&values);
        assert!(decode(&plain, 1024, 32).is_err());
        plain[0] = 0;
        assert_eq!(decode(&plain, 1024, 32).unwrap(), values);
    }

    #[test]
    fn index_past_the_dictionary_is_corrupt() {
        // k = 3 (two index bits): index 3 is past it.
        let mut chunk = vec![16, 3, 1, 0, 2, 0, 3, 0, 0, 0];
        chunk.push(0b11); // indices 3, 0, 0, 0
        chunk.extend_from_slice(&[0; 8]); // right parts: 4 × 16 bits
        let err = decode(&chunk, 4, 32).unwrap_err();
        assert_eq!(err.kind(), crate::ErrorKind::Corrupt);
        chunk[10] = 0b10; // indices 2, 0, 0, 0: fine
        assert!(decode(&chunk, 4, 32).is_ok());
    }
}
