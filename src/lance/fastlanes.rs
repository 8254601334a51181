//! FastLanes bit-packing of 1024 integers, the layout Lance's `InlineBitpacking` and
//! `OutOfLineBitpacking` store (Lance's `lance-bitpacking` crate, after Afroozeh and
//! Boncz, "The FastLanes Compression Layout", VLDB 2023).
//!
//! A block of 1024 values of a `T`-bit type packed to `W` bits is `1024 * W / T` words of
//! `T` bits, little endian. The block is `T` rows by `1024 / T` lanes; value
//! `ORDER[row / 8] * 16 + (row % 8) * 128 + lane` is the one at (row, lane), and lane
//! `lane`'s bits run through words `lane`, `lane + 1024 / T`, `lane + 2 * 1024 / T`, ...
//! with row `r`'s W bits starting at bit `r * W` of that run. The order interleaves rows
//! so that SIMD lanes unpack neighbouring values at once; this scalar code follows it
//! value by value, which is all a reader of a few definition levels or dictionary indices
//! per chunk needs.

use crate::error::{Error, Result};

/// Values in one FastLanes block.
pub(crate) const BLOCK: usize = 1024;

const ORDER: [usize; 8] = [0, 4, 2, 6, 1, 5, 3, 7];

/// The value index at (row, lane).
fn index(row: usize, lane: usize) -> usize {
    ORDER[row / 8] * 16 + (row % 8) * 128 + lane
}

/// Bytes one block of `T`-bit values packed to `width` bits takes.
pub(crate) fn packed_bytes(t_bits: usize, width: usize) -> usize {
    BLOCK * width / t_bits * (t_bits / 8)
}

fn check(t_bits: usize, width: usize) -> Result<()> {
    if !matches!(t_bits, 8 | 16 | 32 | 64) || width > t_bits {
        return Err(Error::corrupt(format!(
            "bit-packing of {t_bits}-bit values to {width} bits"
        )));
    }
    Ok(())
}

/// Packs 1024 values (each below `2^t_bits`; higher bits are dropped) to `width` bits and
/// appends the block's bytes to `out`.
pub(crate) fn pack(
    t_bits: usize,
    width: usize,
    values: &[u64; BLOCK],
    out: &mut Vec<u8>,
) -> Result<()> {
    check(t_bits, width)?;
    let lanes = BLOCK / t_bits;
    let mut words = vec![0u64; BLOCK * width / t_bits];
    if width > 0 {
        let mask = if width == 64 {
            u64::MAX
        } else {
            (1u64 << width) - 1
        };
        for lane in 0..lanes {
            for row in 0..t_bits {
                let v = values[index(row, lane)] & mask;
                let bit = row * width;
                let (word, shift) = (bit / t_bits, bit % t_bits);
                words[lanes * word + lane] |= v << shift;
                if shift + width > t_bits {
                    words[lanes * (word + 1) + lane] |= v >> (t_bits - shift);
                }
            }
        }
    }
    let word_bytes = t_bits / 8;
    for w in words {
        out.extend_from_slice(&w.to_le_bytes()[..word_bytes]);
    }
    Ok(())
}

/// Unpacks one block: `packed` must be exactly [`packed_bytes`]`(t_bits, width)` long.
pub(crate) fn unpack(
    t_bits: usize,
    width: usize,
    packed: &[u8],
    values: &mut [u64; BLOCK],
) -> Result<()> {
    check(t_bits, width)?;
    if packed.len() != packed_bytes(t_bits, width) {
        return Err(Error::corrupt(format!(
            "a block of 1024 values packed to {width} of {t_bits} bits takes {} bytes, not {}",
            packed_bytes(t_bits, width),
            packed.len()
        )));
    }
    if width == 0 {
        values.fill(0);
        return Ok(());
    }
    let word_bytes = t_bits / 8;
    let word = |i: usize| {
        let mut b = [0u8; 8];
        b[..word_bytes].copy_from_slice(&packed[i * word_bytes..(i + 1) * word_bytes]);
        u64::from_le_bytes(b)
    };
    let lanes = BLOCK / t_bits;
    let mask = if width == 64 {
        u64::MAX
    } else {
        (1u64 << width) - 1
    };
    for lane in 0..lanes {
        for row in 0..t_bits {
            let bit = row * width;
            let (w, shift) = (bit / t_bits, bit % t_bits);
            let mut v = word(lanes * w + lane) >> shift;
            if shift + width > t_bits {
                v |= word(lanes * (w + 1) + lane) << (t_bits - shift);
            }
            values[index(row, lane)] = v & mask;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_position_is_one_value() {
        let mut seen = [false; BLOCK];
        for t in [8, 16, 32, 64] {
            seen.fill(false);
            for lane in 0..BLOCK / t {
                for row in 0..t {
                    assert!(!std::mem::replace(&mut seen[index(row, lane)], true));
                }
            }
            assert!(seen.iter().all(|&s| s));
        }
    }

    #[test]
    fn round_trips_every_width() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        for t in [8usize, 16, 32, 64] {
            for width in 0..=t {
                let mask = if width == 64 {
                    u64::MAX
                } else {
                    (1u64 << width) - 1
                };
                let mut values = [0u64; BLOCK];
                for v in &mut values {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    *v = state & mask;
                }
                let mut out = Vec::new();
                pack(t, width, &values, &mut out).unwrap();
                assert_eq!(out.len(), packed_bytes(t, width));
                let mut back = [0u64; BLOCK];
                unpack(t, width, &out, &mut back).unwrap();
                assert_eq!(back, values, "t={t} width={width}");
            }
        }
    }

    /// Value 0 is row 0 of lane 0 and value 1 is lane 1: with 16-bit words packed to one
    /// bit, bit 0 of word 1 is value 1 and bit 1 of word 0 is value 128 (row 1).
    #[test]
    fn follows_the_fastlanes_order() {
        let mut values = [0u64; BLOCK];
        values[1] = 1;
        values[128] = 1;
        let mut out = Vec::new();
        pack(16, 1, &values, &mut out).unwrap();
        assert_eq!(&out[..4], &[0b10, 0, 0b1, 0]);
        assert!(out[4..].iter().all(|&b| b == 0));
    }

    #[test]
    fn rejects_wrong_sizes_and_widths() {
        let mut values = [0u64; BLOCK];
        assert!(unpack(16, 1, &[0; 127], &mut values).is_err());
        assert!(unpack(16, 17, &[0; 2176], &mut values).is_err());
        assert!(unpack(12, 1, &[0; 128], &mut values).is_err());
    }
}
