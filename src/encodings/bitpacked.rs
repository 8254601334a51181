//! Frame of reference and bit-packing for 8-, 16-, 32- and 64-bit integers: each chunk
//! stores its minimum and every value's offset from it in the fewest whole bits. Integer,
//! date, timestamp and decimal columns whose values span a narrow range in each chunk
//! shrink to that range's width, and a dictionary page's indices are stored this way.
//!
//! The minimum is taken over the values read as unsigned integers or, when that makes the
//! range narrower, as signed ones (read with the sign bit flipped, which orders signed
//! values as unsigned): a chunk holding -1 and 1 spans 2, not 2^64 - 1.
//!
//! ```text
//! chunk of n values of W bytes (W = 1, 2, 4 or 8)
//!   byte 0       bits 0..7: b, the bit width of the offsets, 0 ..= 8W
//!                bit 7: the values are read signed (sign bit flipped)
//!   W bytes LE   the reference: the smallest value, as read (sign bit flipped if signed)
//!   the n offsets (value as read minus the reference), bit-packed at b bits
//! ```
//!
//! A value is `reference + offset`, its sign bit flipped back if the chunk is signed; a
//! reader rejects a chunk whose offsets pass the largest W-byte integer.
//!
//! Worked example: i16 values `-3, 2, 0` read signed are `0x7FFD, 0x8002, 0x8000`; the
//! reference is `0x7FFD` and the offsets `0, 5, 3` take 3 bits:
//!
//! ```text
//! 83          b = 3, signed
//! FD 7F       reference 0x7FFD
//! E8 00       offsets 0, 5, 3 at 3 bits: 000 101 110 (LSB first) = 0b1110_1000 0b0000_0000
//! ```

use super::{
    check_output, ChunkShape, ChunkStorage, MiniBlockCompressor, MiniBlockDecompressor,
    MAX_CHUNK_VALUES,
};
use crate::error::{Error, Result};
use crate::kernels::{bitpack, unpack};
use crate::proto::encodings::{array_encoding, ArrayEncoding, Bitpack};

/// Bit 7 of the header byte: the chunk's values are read signed.
const SIGNED: u8 = 0x80;

/// Whether values of `width` bytes can be bit-packed.
pub(crate) fn supports_width(width: usize) -> bool {
    matches!(width, 1 | 2 | 4 | 8)
}

fn check_bits(bits_per_value: u64) -> Result<usize> {
    match bits_per_value {
        8 | 16 | 32 | 64 => Ok(bits_per_value as usize / 8),
        other => Err(Error::unsupported(format!(
            "bitpack takes 8-, 16-, 32- or 64-bit values, not {other}-bit values"
        ))),
    }
}

/// Reads a little-endian integer of `bytes.len()` (1 to 8) bytes: one load for the
/// widths of Arrow's types, where a copy of a length known only at run time is a call.
#[inline]
pub(crate) fn read(bytes: &[u8]) -> u64 {
    match bytes.len() {
        1 => u64::from(bytes[0]),
        2 => u64::from(u16::from_le_bytes(bytes.try_into().expect("2 bytes"))),
        4 => u64::from(u32::from_le_bytes(bytes.try_into().expect("4 bytes"))),
        8 => u64::from_le_bytes(bytes.try_into().expect("8 bytes")),
        _ => {
            let mut word = [0u8; 8];
            word[..bytes.len()].copy_from_slice(bytes);
            u64::from_le_bytes(word)
        }
    }
}

/// The sign bit of a `width`-byte integer.
fn sign_bit(width: usize) -> u64 {
    1u64 << (8 * width - 1)
}

/// The largest `width`-byte integer.
fn max_value(width: usize) -> u64 {
    u64::MAX >> (64 - 8 * width)
}

/// The header byte, reference and offsets of `ints` (values of `width` bytes): read
/// unsigned or, when the range is narrower, signed.
pub(crate) fn frame(ints: &[u64], width: usize) -> (u8, u64, Vec<u64>) {
    let flip = sign_bit(width);
    let (mut lo, mut hi) = (u64::MAX, 0u64);
    let (mut slo, mut shi) = (u64::MAX, 0u64);
    for &v in ints {
        lo = lo.min(v);
        hi = hi.max(v);
        slo = slo.min(v ^ flip);
        shi = shi.max(v ^ flip);
    }
    if ints.is_empty() {
        return (0, 0, Vec::new());
    }
    let (flip, reference, span, signed) = if shi - slo < hi - lo {
        (flip, slo, shi - slo, SIGNED)
    } else {
        (0, lo, hi - lo, 0)
    };
    let bits = bitpack::bit_width(span);
    let offsets = ints.iter().map(|&v| (v ^ flip) - reference).collect();
    (bits | signed, reference, offsets)
}

/// Encodes chunks of 1-, 2-, 4- or 8-byte integers with frame of reference and
/// bit-packing.
#[derive(Debug, Clone)]
pub struct BitpackEncoder {
    shape: ChunkShape,
}

impl BitpackEncoder {
    /// An encoder for integers of `bits_per_value` bits (8, 16, 32 or 64).
    pub fn try_new(bits_per_value: u64) -> Result<Self> {
        check_bits(bits_per_value)?;
        Ok(Self {
            shape: ChunkShape::from_bits(bits_per_value)?,
        })
    }

    /// The same encoder with chunks of `chunk_values` values.
    pub fn with_chunk_values(self, chunk_values: usize) -> Result<Self> {
        Ok(Self {
            shape: self.shape.with_chunk_values(chunk_values)?,
        })
    }
}

/// The message for bit-packed values of `width` bytes.
pub(crate) fn message(width: usize) -> ArrayEncoding {
    ArrayEncoding {
        array_encoding: Some(array_encoding::ArrayEncoding::Bitpack(Bitpack {
            bits_per_value: width as u64 * 8,
        })),
    }
}

/// Appends one chunk of `ints` (values of `width` bytes) to `out`.
pub(crate) fn write_chunk(ints: &[u64], width: usize, out: &mut Vec<u8>) {
    let (header, reference, offsets) = frame(ints, width);
    out.push(header);
    out.extend_from_slice(&reference.to_le_bytes()[..width]);
    bitpack::pack(&offsets, header & !SIGNED, out);
}

impl MiniBlockCompressor for BitpackEncoder {
    fn value_width(&self) -> usize {
        self.shape.width
    }

    fn chunk_values(&self) -> usize {
        self.shape.chunk_values
    }

    fn array_encoding(&self) -> ArrayEncoding {
        message(self.shape.width)
    }

    fn compress_chunk(
        &self,
        values: &[u8],
        out: &mut Vec<u8>,
        _: &mut Vec<u8>,
    ) -> Result<ChunkStorage> {
        self.shape.check_chunk(values)?;
        let width = self.shape.width;
        let ints: Vec<u64> = values.chunks_exact(width).map(read).collect();
        write_chunk(&ints, width, out);
        Ok(ChunkStorage::Raw)
    }
}

/// Decodes bit-packed chunks.
#[derive(Debug, Clone)]
pub struct BitpackDecompressor {
    width: usize,
}

impl BitpackDecompressor {
    /// The decoder a `Bitpack` message of `bits_per_value` describes.
    pub fn new(bits_per_value: u64) -> Result<Self> {
        Ok(Self {
            width: check_bits(bits_per_value)?,
        })
    }

    /// The header, reference and offsets of a chunk of `n` values, every field checked.
    fn parse<'a>(&self, chunk: &'a [u8], n: usize) -> Result<Frame<'a>> {
        let width = self.width;
        let corrupt = |what: String| {
            Error::corrupt(format!(
                "bitpack chunk of {n} values of {width} bytes: {what}"
            ))
        };
        let Some((&header, rest)) = chunk.split_first() else {
            return Err(corrupt("no header".to_owned()));
        };
        let bits = header & !SIGNED;
        if usize::from(bits) > 8 * width {
            return Err(corrupt(format!("offsets of {bits} bits")));
        }
        let reference = rest
            .get(..width)
            .map(read)
            .ok_or_else(|| corrupt("cut inside its reference".to_owned()))?;
        let packed = &rest[width..];
        let expected = bitpack::packed_len(n, bits);
        if packed.len() != expected {
            return Err(corrupt(format!(
                "{} packed bytes, {n} offsets of {bits} bits take {expected}",
                chunk.len() - 1 - width
            )));
        }
        let flip = if header & SIGNED != 0 {
            sign_bit(width)
        } else {
            0
        };
        Ok(Frame {
            bits,
            reference,
            flip,
            packed,
        })
    }

    /// Refuses a chunk whose widest offset passes the largest value from its reference.
    fn check_widest(&self, frame: &Frame, n: usize, widest: u64) -> Result<()> {
        if widest > max_value(self.width) - frame.reference {
            return Err(Error::corrupt(format!(
                "bitpack chunk of {n} values of {} bytes: offset {widest} from reference {} \
                 passes {} bits",
                self.width,
                frame.reference,
                8 * self.width
            )));
        }
        Ok(())
    }

    /// Unpacks a chunk of `n` values, handing `sink` their integers (each below
    /// `2^(8 * width)`) a block of up to 64 at a time; every field is checked first.
    pub(crate) fn unpack(
        &self,
        chunk: &[u8],
        n: usize,
        mut sink: impl FnMut(&[u64]),
    ) -> Result<()> {
        let frame = self.parse(chunk, n)?;
        let (reference, flip, mask) = (frame.reference, frame.flip, max_value(self.width));
        let mut widest = 0u64;
        let mut block = [0u64; bitpack::BLOCK];
        bitpack::unpack(frame.packed, n, frame.bits, |offsets| {
            let out = &mut block[..offsets.len()];
            for (o, &d) in out.iter_mut().zip(offsets) {
                widest = widest.max(d);
                // Wrapping: an offset past the limit is refused below, after the pass.
                *o = (reference.wrapping_add(d) ^ flip) & mask;
            }
            sink(out);
        });
        self.check_widest(&frame, n, widest)
    }

    /// Writes a chunk of `n` values into `out` (at least `n` values) with the vector
    /// kernel, summed per `then` (`delta`'s differences); every field is checked. Returns
    /// `false`, writing nothing, where the kernel does not run (a CPU without it): the
    /// caller then goes through [`Self::unpack`].
    pub(crate) fn unpack_into(
        &self,
        chunk: &[u8],
        n: usize,
        then: unpack::Then,
        out: &mut [u8],
    ) -> Result<bool> {
        if !unpack::has_kernel() {
            return Ok(false);
        }
        let frame = self.parse(chunk, n)?;
        let width = self.width;
        let Some(widest) = unpack::unpack(
            frame.packed,
            n,
            frame.bits,
            width,
            frame.reference,
            frame.flip,
            then,
            out,
        ) else {
            return Ok(false);
        };
        self.check_widest(&frame, n, widest)?;
        Ok(true)
    }
}

/// A bitpack chunk's fields, checked: the offsets' width, the reference, the sign flip and
/// the packed offsets (exactly as many bytes as they take).
struct Frame<'a> {
    bits: u8,
    reference: u64,
    flip: u64,
    packed: &'a [u8],
}

impl MiniBlockDecompressor for BitpackDecompressor {
    fn value_width(&self) -> usize {
        self.width
    }

    fn max_expansion(&self) -> usize {
        1
    }

    fn raw_len_range(&self, num_values: usize) -> Option<(usize, usize)> {
        let header = 1 + self.width;
        Some((header, header + num_values.saturating_mul(self.width)))
    }

    fn raw_expansion(&self) -> usize {
        // A constant chunk is its header: W + 1 bytes for up to 65536 values of W bytes.
        MAX_CHUNK_VALUES
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
                "bitpack chunk is marked compressed but the encoding has no compression",
            ));
        }
        if self.unpack_into(chunk, num_values, unpack::Then::Store, out)? {
            return Ok(());
        }
        let width = self.width;
        let mut at = 0;
        self.unpack(chunk, num_values, |ints| {
            let dst = &mut out[at..at + ints.len() * width];
            match width {
                1 => dst.iter_mut().zip(ints).for_each(|(d, &v)| *d = v as u8),
                2 => dst
                    .chunks_exact_mut(2)
                    .zip(ints)
                    .for_each(|(d, &v)| d.copy_from_slice(&(v as u16).to_le_bytes())),
                4 => dst
                    .chunks_exact_mut(4)
                    .zip(ints)
                    .for_each(|(d, &v)| d.copy_from_slice(&(v as u32).to_le_bytes())),
                _ => dst
                    .chunks_exact_mut(8)
                    .zip(ints)
                    .for_each(|(d, &v)| d.copy_from_slice(&v.to_le_bytes())),
            }
            at += ints.len() * width;
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encode(values: &[u8], bits: u64) -> Vec<u8> {
        let mut out = Vec::new();
        let encoder = BitpackEncoder::try_new(bits).unwrap();
        encoder
            .compress_chunk(values, &mut out, &mut Vec::new())
            .unwrap();
        out
    }

    fn decode(chunk: &[u8], n: usize, bits: u64) -> Result<Vec<u8>> {
        BitpackDecompressor::new(bits)
            .unwrap()
            .decompress(chunk, n, ChunkStorage::Raw)
    }

    #[test]
    fn worked_example() {
        let values: Vec<u8> = [-3i16, 2, 0].iter().flat_map(|v| v.to_le_bytes()).collect();
        let chunk = encode(&values, 16);
        assert_eq!(chunk, [0x83, 0xFD, 0x7F, 0xE8, 0x00]);
        assert_eq!(decode(&chunk, 3, 16).unwrap(), values);
    }

    #[test]
    fn every_width_and_range_round_trips() {
        let mut x = 0x9E37_79B9_7F4A_7C15_u64;
        for width in [1usize, 2, 4, 8] {
            let bits = 8 * width as u64;
            for span_bits in 0..=8 * width as u32 {
                for n in [0usize, 1, 63, 64, 65, 500] {
                    let base = x;
                    let values: Vec<u8> = (0..n)
                        .flat_map(|_| {
                            x ^= x << 13;
                            x ^= x >> 7;
                            x ^= x << 17;
                            let span = if span_bits == 64 {
                                x
                            } else {
                                x & ((1u64 << span_bits) - 1)
                            };
                            base.wrapping_add(span).to_le_bytes()[..width].to_vec()
                        })
                        .collect();
                    let chunk = encode(&values, bits);
                    assert!(chunk.len() <= 1 + width + bitpack::packed_len(n, span_bits as u8));
                    assert_eq!(decode(&chunk, n, bits).unwrap(), values, "{width} {n}");
                }
            }
        }
    }

    /// The vector kernel (where the CPU has it) and the scalar unpacking give the same
    /// values for every width of offset, and the same verdict on damaged chunks.
    #[test]
    fn the_kernel_and_the_scalar_unpacking_agree() {
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for width in [1usize, 2, 4, 8] {
            let decoder = BitpackDecompressor::new(8 * width as u64).unwrap();
            for span_bits in 0..=8 * width as u32 {
                let n = [1usize, 17, 100, 512][span_bits as usize % 4];
                let base = next();
                let values: Vec<u8> = (0..n)
                    .flat_map(|_| {
                        let span = next().checked_shr(64 - span_bits).unwrap_or(0);
                        base.wrapping_add(span).to_le_bytes()[..width].to_vec()
                    })
                    .collect();
                let chunk = encode(&values, 8 * width as u64);
                let mut damaged = vec![chunk.clone()];
                for _ in 0..20 {
                    let mut bad = chunk.clone();
                    let at = next() as usize % bad.len();
                    bad[at] ^= 1 << (next() % 8);
                    damaged.push(bad);
                }
                for chunk in &damaged {
                    let mut scalar = Vec::new();
                    let by_scalar = decoder
                        .unpack(chunk, n, |ints| {
                            for &v in ints {
                                scalar.extend_from_slice(&v.to_le_bytes()[..width]);
                            }
                        })
                        .map(|()| scalar);
                    let mut out = vec![0u8; n * width];
                    let by_kernel = decoder
                        .unpack_into(chunk, n, unpack::Then::Store, &mut out)
                        .map(|ran| ran.then_some(out));
                    match (by_kernel, by_scalar) {
                        (Ok(Some(a)), Ok(b)) => assert_eq!(a, b, "{width} {span_bits}"),
                        (Ok(None), _) | (Err(_), Err(_)) => {}
                        (a, b) => panic!("{width} {span_bits}: kernel {a:?}, scalar {b:?}"),
                    }
                }
                if width == 8 && span_bits == 64 && !unpack::has_kernel() {
                    eprintln!("SKIPPED: no AVX-512 VBMI here; only the scalar unpacking ran");
                }
            }
        }
    }

    #[test]
    fn hostile_chunks_are_corrupt() {
        let values: Vec<u8> = (0..100u32).flat_map(|v| (v * 3).to_le_bytes()).collect();
        let chunk = encode(&values, 32);
        for cut in 0..chunk.len() {
            assert!(decode(&chunk[..cut], 100, 32).is_err(), "{cut}");
        }
        let mut long = chunk.clone();
        long.push(0);
        assert!(decode(&long, 100, 32).is_err());
        // A width past the value's.
        let mut wide = chunk.clone();
        wide[0] = 33;
        assert!(decode(&wide, 100, 32).is_err());
        // Offsets past the largest value: reference near the top.
        let mut high = chunk.clone();
        high[1..5].copy_from_slice(&u32::MAX.to_le_bytes());
        let err = decode(&high, 100, 32).unwrap_err();
        assert_eq!(err.kind(), crate::error::ErrorKind::Corrupt);
    }
}
