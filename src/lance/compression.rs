//! Lance's `CompressiveEncoding` tree (package `lance.encodings21`): parsed once per page
//! into a validated decoder, and built for what miniblock writes.
//!
//! A mini-block chunk holds one or more buffers; the value decoder turns them into the
//! chunk's values at a fixed width. Blocks (definition levels, a dictionary's items) are
//! one buffer for a whole run of values. Every count and size here comes from a file, so
//! each is checked before it sizes an allocation or an index.

use crate::encodings::general::{compress_append, decompress_exact_len, zstd_decompress_bounded};
use crate::encodings::CompressionScheme;
use crate::error::{Error, Result};
use crate::kernels;
use crate::proto::lance as pb;
use crate::proto::lance::compressive_encoding::Compression;

use super::fastlanes;

/// Nesting allowed in a description (Lance nests at most three deep for fixed width).
const MAX_DEPTH: usize = 8;

/// Zstd frame magic: a Lance Zstd buffer without its u64 size prefix starts with it.
const ZSTD_MAGIC: [u8; 4] = [0x28, 0xb5, 0x2f, 0xfd];

/// What a description names, for errors.
pub(crate) fn variant_name(encoding: &pb::CompressiveEncoding) -> &'static str {
    match &encoding.compression {
        None => "an encoding this reader does not know (variable, FSST, fixed-size list or packed struct)",
        Some(Compression::Flat(_)) => "flat",
        Some(Compression::Constant(_)) => "constant",
        Some(Compression::OutOfLineBitpacking(_)) => "out-of-line bit-packing",
        Some(Compression::InlineBitpacking(_)) => "inline bit-packing",
        Some(Compression::Dictionary(_)) => "dictionary",
        Some(Compression::Rle(_)) => "RLE",
        Some(Compression::ByteStreamSplit(_)) => "byte stream split",
        Some(Compression::General(_)) => "general compression",
    }
}

fn scheme_of(compression: Option<&pb::BufferCompression>) -> Result<CompressionScheme> {
    let raw = compression.map_or(0, |c| c.scheme);
    match pb::CompressionScheme::try_from(raw) {
        Ok(pb::CompressionScheme::CompressionAlgorithmLz4) => Ok(CompressionScheme::Lz4),
        Ok(pb::CompressionScheme::CompressionAlgorithmZstd) => Ok(CompressionScheme::Zstd),
        _ => Err(Error::unsupported(format!(
            "Lance buffer compression scheme {raw} (known: 1 = LZ4, 2 = Zstd)"
        ))),
    }
}

/// A description as text, outermost first: `general zstd over byte stream split over flat
/// 64-bit`.
pub(crate) fn describe(encoding: &pb::CompressiveEncoding) -> String {
    let inner =
        |e: Option<&pb::CompressiveEncoding>| e.map_or_else(|| "nothing".to_owned(), describe);
    match &encoding.compression {
        Some(Compression::Flat(f)) => format!("flat {}-bit", f.bits_per_value),
        Some(Compression::ByteStreamSplit(b)) => {
            format!("byte stream split over {}", inner(b.values.as_deref()))
        }
        Some(Compression::General(g)) => {
            let scheme = match scheme_of(g.compression.as_ref()) {
                Ok(CompressionScheme::Lz4) => "lz4",
                Ok(CompressionScheme::Zstd) => "zstd",
                Err(_) => "unknown",
            };
            format!("general {scheme} over {}", inner(g.values.as_deref()))
        }
        Some(Compression::InlineBitpacking(b)) => {
            format!(
                "inline bit-packing of {}-bit",
                b.uncompressed_bits_per_value
            )
        }
        Some(Compression::Rle(r)) => format!(
            "rle of {} with run lengths {}",
            inner(r.values.as_deref()),
            inner(r.run_lengths.as_deref())
        ),
        _ => variant_name(encoding).to_owned(),
    }
}

/// Bytes per value of a `bits_per_value` field: whole bytes of 1, 2, 4, 8 or 16.
fn byte_width(bits: u64, what: &str) -> Result<usize> {
    match bits {
        8 | 16 | 32 | 64 | 128 => Ok((bits / 8) as usize),
        _ => Err(Error::unsupported(format!(
            "{what} of {bits}-bit values (this reader decodes 8, 16, 32, 64 and 128 bits)"
        ))),
    }
}

fn child<'a>(
    encoding: Option<&'a pb::CompressiveEncoding>,
    what: &str,
) -> Result<&'a pb::CompressiveEncoding> {
    encoding.ok_or_else(|| Error::corrupt(format!("Lance {what} has no inner encoding")))
}

/// Decodes the buffers of one mini-block chunk into values of a fixed width.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ChunkDecoder {
    /// Values stored as they are.
    Flat { width: usize },
    /// Chunk-local byte stream split.
    Bss { width: usize },
    /// The first buffer compressed (LZ4: u32 LE size + block; Zstd: u64 LE size + frame,
    /// or a bare frame), then decoded by `inner`.
    General {
        scheme: CompressionScheme,
        inner: Box<ChunkDecoder>,
    },
    /// One word of the bit width, then 1024 values FastLanes-packed (the last chunk padded).
    InlineBitpacking { width: usize },
    /// Two buffers: one value per run, and the runs' lengths.
    Rle { width: usize, length_width: usize },
}

impl ChunkDecoder {
    /// Validates a mini-block value description.
    pub(crate) fn parse(encoding: &pb::CompressiveEncoding) -> Result<Self> {
        Self::parse_at(encoding, 0)
    }

    fn parse_at(encoding: &pb::CompressiveEncoding, depth: usize) -> Result<Self> {
        if depth > MAX_DEPTH {
            return Err(Error::corrupt("Lance encoding nested too deep"));
        }
        Ok(match &encoding.compression {
            Some(Compression::Flat(flat)) => {
                if flat.data.is_some() {
                    return Err(Error::unsupported(
                        "Lance flat values with their own buffer compression in a mini-block",
                    ));
                }
                ChunkDecoder::Flat {
                    width: byte_width(flat.bits_per_value, "flat")?,
                }
            }
            Some(Compression::ByteStreamSplit(bss)) => {
                let inner = child(bss.values.as_deref(), "byte stream split")?;
                match &inner.compression {
                    Some(Compression::Flat(flat)) if flat.data.is_none() => ChunkDecoder::Bss {
                        width: byte_width(flat.bits_per_value, "byte stream split")?,
                    },
                    _ => {
                        return Err(Error::unsupported(format!(
                            "Lance byte stream split over {}",
                            variant_name(inner)
                        )))
                    }
                }
            }
            Some(Compression::General(general)) => {
                let scheme = scheme_of(general.compression.as_ref())?;
                let inner = Self::parse_at(
                    child(general.values.as_deref(), "general compression")?,
                    depth + 1,
                )?;
                ChunkDecoder::General {
                    scheme,
                    inner: Box::new(inner),
                }
            }
            Some(Compression::InlineBitpacking(bp)) => {
                if bp.values.is_some() {
                    return Err(Error::unsupported(
                        "Lance inline bit-packing with buffer compression",
                    ));
                }
                let width = byte_width(bp.uncompressed_bits_per_value, "inline bit-packing")?;
                if width > 8 {
                    return Err(Error::corrupt("Lance inline bit-packing of 128-bit values"));
                }
                ChunkDecoder::InlineBitpacking { width }
            }
            Some(Compression::Rle(rle)) => {
                let flat_width =
                    |e: Option<&pb::CompressiveEncoding>, what: &str| -> Result<usize> {
                        match e.and_then(|e| e.compression.as_ref()) {
                            Some(Compression::Flat(flat)) if flat.data.is_none() => {
                                byte_width(flat.bits_per_value, what)
                            }
                            _ => Err(Error::unsupported(format!(
                                "Lance RLE {what} not stored flat"
                            ))),
                        }
                    };
                let width = flat_width(rle.values.as_deref(), "values")?;
                let length_width = flat_width(rle.run_lengths.as_deref(), "run lengths")?;
                if length_width > 4 {
                    return Err(Error::corrupt(format!(
                        "Lance RLE run lengths of {length_width} bytes"
                    )));
                }
                ChunkDecoder::Rle {
                    width,
                    length_width,
                }
            }
            _ => {
                return Err(Error::unsupported(format!(
                    "Lance mini-block values encoded with {}",
                    variant_name(encoding)
                )))
            }
        })
    }

    /// Bytes per decoded value.
    pub(crate) fn width(&self) -> usize {
        match self {
            ChunkDecoder::Flat { width }
            | ChunkDecoder::Bss { width }
            | ChunkDecoder::InlineBitpacking { width }
            | ChunkDecoder::Rle { width, .. } => *width,
            ChunkDecoder::General { inner, .. } => inner.width(),
        }
    }

    /// Buffers per chunk.
    pub(crate) fn num_buffers(&self) -> usize {
        match self {
            ChunkDecoder::Rle { .. } => 2,
            ChunkDecoder::General { inner, .. } => inner.num_buffers(),
            _ => 1,
        }
    }

    /// The most bytes the first buffer of a chunk of `n` values can take decoded: what a
    /// compressed buffer may claim.
    fn max_first_buffer(&self, n: usize) -> usize {
        match self {
            ChunkDecoder::Flat { width }
            | ChunkDecoder::Bss { width }
            | ChunkDecoder::Rle { width, .. } => n * width,
            ChunkDecoder::InlineBitpacking { width } => (fastlanes::BLOCK + 1) * width,
            ChunkDecoder::General { inner, .. } => inner.max_first_buffer(n),
        }
    }

    /// Appends the `n` values of one chunk (`buffers` as the chunk holds them) to `out`.
    pub(crate) fn decode(
        &self,
        buffers: &[&[u8]],
        n: usize,
        out: &mut Vec<u8>,
        scratch: &mut Vec<u8>,
    ) -> Result<()> {
        if buffers.len() != self.num_buffers() {
            return Err(Error::corrupt(format!(
                "Lance chunk has {} buffers, its encoding {}",
                buffers.len(),
                self.num_buffers()
            )));
        }
        match self {
            ChunkDecoder::Flat { width } => {
                check_len(buffers[0], n * width, "flat chunk")?;
                out.extend_from_slice(buffers[0]);
            }
            ChunkDecoder::Bss { width } => {
                check_len(buffers[0], n * width, "byte stream split chunk")?;
                let start = out.len();
                out.resize(start + buffers[0].len(), 0);
                kernels::unsplit(buffers[0], &mut out[start..], *width);
            }
            ChunkDecoder::General { scheme, inner } => {
                let limit = inner.max_first_buffer(n);
                decompress_buffer(*scheme, buffers[0], limit, scratch)?;
                let mut rest: Vec<&[u8]> = Vec::with_capacity(buffers.len());
                rest.push(scratch.as_slice());
                rest.extend_from_slice(&buffers[1..]);
                let mut inner_scratch = Vec::new();
                inner.decode(&rest, n, out, &mut inner_scratch)?;
            }
            ChunkDecoder::InlineBitpacking { width } => {
                if n > fastlanes::BLOCK {
                    return Err(Error::corrupt(format!(
                        "Lance inline bit-packed chunk of {n} values (at most 1024)"
                    )));
                }
                let buf = buffers[0];
                let bits = buf
                    .get(..*width)
                    .map(|w| {
                        let mut b = [0u8; 8];
                        b[..*width].copy_from_slice(w);
                        u64::from_le_bytes(b)
                    })
                    .ok_or_else(|| {
                        Error::truncated("Lance inline bit-packed chunk without its width")
                    })?;
                let t_bits = width * 8;
                if bits > t_bits as u64 {
                    return Err(Error::corrupt(format!(
                        "Lance inline bit-packing to {bits} of {t_bits} bits"
                    )));
                }
                let mut values = [0u64; fastlanes::BLOCK];
                fastlanes::unpack(t_bits, bits as usize, &buf[*width..], &mut values)?;
                for v in &values[..n] {
                    out.extend_from_slice(&v.to_le_bytes()[..*width]);
                }
            }
            ChunkDecoder::Rle {
                width,
                length_width,
            } => {
                let (values, lengths) = (buffers[0], buffers[1]);
                if values.len() % width != 0
                    || lengths.len() % length_width != 0
                    || values.len() / width != lengths.len() / length_width
                {
                    return Err(Error::corrupt(format!(
                        "Lance RLE chunk with {} value bytes and {} length bytes",
                        values.len(),
                        lengths.len()
                    )));
                }
                let start = out.len();
                let end = start + n * width;
                for (value, length) in values
                    .chunks_exact(*width)
                    .zip(lengths.chunks_exact(*length_width))
                {
                    let mut b = [0u8; 8];
                    b[..*length_width].copy_from_slice(length);
                    let run = u64::from_le_bytes(b) as usize;
                    if run > (end - out.len()) / width {
                        return Err(Error::corrupt(format!(
                            "Lance RLE runs pass the chunk's {n} values"
                        )));
                    }
                    for _ in 0..run {
                        out.extend_from_slice(value);
                    }
                }
                if out.len() != end {
                    return Err(Error::corrupt(format!(
                        "Lance RLE runs cover {} of the chunk's {n} values",
                        (out.len() - start) / width
                    )));
                }
            }
        }
        Ok(())
    }
}

fn check_len(buf: &[u8], want: usize, what: &str) -> Result<()> {
    if buf.len() != want {
        return Err(Error::corrupt(format!(
            "Lance {what} of {} bytes, expected {want}",
            buf.len()
        )));
    }
    Ok(())
}

/// Decompresses one Lance general-compression buffer (at most `limit` bytes decoded) into
/// `out`.
pub(crate) fn decompress_buffer(
    scheme: CompressionScheme,
    buf: &[u8],
    limit: usize,
    out: &mut Vec<u8>,
) -> Result<()> {
    match scheme {
        CompressionScheme::Lz4 => {
            let (prefix, block) = buf
                .split_at_checked(4)
                .ok_or_else(|| Error::truncated("Lance LZ4 buffer without its size prefix"))?;
            let len = u32::from_le_bytes(prefix.try_into().expect("4 bytes")) as usize;
            if len > limit {
                return Err(Error::corrupt(format!(
                    "Lance LZ4 buffer claims {len} bytes, more than the {limit} its place allows"
                )));
            }
            decompress_exact_len(scheme, block, len, out)
        }
        CompressionScheme::Zstd => {
            if buf.starts_with(&ZSTD_MAGIC) {
                return zstd_decompress_bounded(buf, limit, out);
            }
            let (prefix, frame) = buf
                .split_at_checked(8)
                .ok_or_else(|| Error::truncated("Lance Zstd buffer without its size prefix"))?;
            let len = u64::from_le_bytes(prefix.try_into().expect("8 bytes"));
            if len > limit as u64 {
                return Err(Error::corrupt(format!(
                    "Lance Zstd buffer claims {len} bytes, more than the {limit} its place allows"
                )));
            }
            decompress_exact_len(scheme, frame, len as usize, out)
        }
    }
}

/// Appends `src` compressed the Lance way (size prefix, then the block or frame) to `out`.
/// LZ4 blocks come from liblz4's default mode, Lance's own compressor, so a page is the
/// bytes Lance writes for it (lz4_flex, miniblock's own LZ4 writer, makes blocks a few
/// percent larger on some data).
pub(crate) fn compress_buffer(
    scheme: CompressionScheme,
    level: i32,
    src: &[u8],
    out: &mut Vec<u8>,
) -> Result<()> {
    match scheme {
        CompressionScheme::Lz4 => {
            let start = out.len();
            let bound = lz4::block::compress_bound(src.len())
                .map_err(|e| Error::invalid(format!("LZ4 buffer of {} bytes: {e}", src.len())))?;
            out.resize(start + 4 + bound, 0);
            let written = lz4::block::compress_to_buffer(src, None, true, &mut out[start..])
                .map_err(|e| Error::invalid(format!("LZ4 compression failed: {e}")))?;
            out.truncate(start + written);
            Ok(())
        }
        CompressionScheme::Zstd => {
            out.extend_from_slice(&(src.len() as u64).to_le_bytes());
            compress_append(scheme, level, src, out)
        }
    }
}

/// Decodes a block of 16-bit repetition or definition levels (one buffer for a chunk).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum LevelDecoder {
    /// u16 levels as they are.
    Flat,
    /// FastLanes-packed to `bits` per level, 1024 at a time; a last partial block either
    /// padded and packed or stored as plain u16.
    OutOfLine { bits: usize },
    /// At most 1024 levels as one inline bit-packed chunk: a u16 bit width, then the
    /// packed block.
    Inline,
}

impl LevelDecoder {
    pub(crate) fn parse(encoding: &pb::CompressiveEncoding) -> Result<Self> {
        match &encoding.compression {
            Some(Compression::Flat(flat)) if flat.bits_per_value == 16 && flat.data.is_none() => {
                Ok(LevelDecoder::Flat)
            }
            Some(Compression::InlineBitpacking(bp))
                if bp.uncompressed_bits_per_value == 16 && bp.values.is_none() =>
            {
                Ok(LevelDecoder::Inline)
            }
            Some(Compression::OutOfLineBitpacking(bp)) if bp.uncompressed_bits_per_value == 16 => {
                match bp.values.as_ref().and_then(|v| v.compression.as_ref()) {
                    Some(Compression::Flat(flat))
                        if flat.bits_per_value <= 16 && flat.data.is_none() =>
                    {
                        Ok(LevelDecoder::OutOfLine {
                            bits: flat.bits_per_value as usize,
                        })
                    }
                    _ => Err(Error::unsupported(
                        "Lance bit-packed levels not stored flat",
                    )),
                }
            }
            _ => Err(Error::unsupported(format!(
                "Lance levels encoded with {}",
                variant_name(encoding)
            ))),
        }
    }

    /// Decodes `n` levels from `buf` into `out` (cleared first).
    pub(crate) fn decode(&self, buf: &[u8], n: usize, out: &mut Vec<u16>) -> Result<()> {
        out.clear();
        match self {
            LevelDecoder::Flat => {
                check_len(buf, n * 2, "level block")?;
                out.extend(
                    buf.chunks_exact(2)
                        .map(|b| u16::from_le_bytes([b[0], b[1]])),
                );
            }
            LevelDecoder::Inline => {
                let mut bytes = Vec::new();
                ChunkDecoder::InlineBitpacking { width: 2 }.decode(
                    &[buf],
                    n,
                    &mut bytes,
                    &mut Vec::new(),
                )?;
                out.extend(
                    bytes
                        .chunks_exact(2)
                        .map(|b| u16::from_le_bytes([b[0], b[1]])),
                );
            }
            LevelDecoder::OutOfLine { bits } => {
                let block = fastlanes::packed_bytes(16, *bits);
                let (whole, tail) = (n / fastlanes::BLOCK, n % fastlanes::BLOCK);
                let packed_len = whole * block;
                let raw_tail = packed_len + tail * 2;
                let padded_tail = packed_len + if tail > 0 { block } else { 0 };
                if buf.len() != raw_tail && buf.len() != padded_tail {
                    return Err(Error::corrupt(format!(
                        "Lance bit-packed levels: {} bytes for {n} levels at {bits} bits",
                        buf.len()
                    )));
                }
                let mut values = [0u64; fastlanes::BLOCK];
                for b in buf[..packed_len].chunks_exact(block.max(1)).take(whole) {
                    fastlanes::unpack(16, *bits, b, &mut values)?;
                    out.extend(values.iter().map(|&v| v as u16));
                }
                if whole > 0 && block == 0 {
                    out.resize(whole * fastlanes::BLOCK, 0);
                }
                if tail > 0 {
                    let rest = &buf[packed_len..];
                    // Lance's own rule: a buffer of the raw length has a raw tail (when
                    // both lengths are equal, too).
                    if buf.len() == raw_tail {
                        out.extend(
                            rest.chunks_exact(2)
                                .map(|b| u16::from_le_bytes([b[0], b[1]])),
                        );
                    } else {
                        fastlanes::unpack(16, *bits, rest, &mut values)?;
                        out.extend(values[..tail].iter().map(|&v| v as u16));
                    }
                }
            }
        }
        Ok(())
    }

    /// Packs `levels` (each below `2^bits`) the way Lance's writer does: whole blocks
    /// packed; a last partial block padded and packed when that is smaller, else plain.
    pub(crate) fn encode_out_of_line(bits: usize, levels: &[u16], out: &mut Vec<u8>) -> Result<()> {
        let mut values = [0u64; fastlanes::BLOCK];
        let mut blocks = levels.chunks_exact(fastlanes::BLOCK);
        for block in blocks.by_ref() {
            for (v, &l) in values.iter_mut().zip(block) {
                *v = u64::from(l);
            }
            fastlanes::pack(16, bits, &values, out)?;
        }
        let tail = blocks.remainder();
        if !tail.is_empty() {
            let padding_cost = bits * (fastlanes::BLOCK - tail.len());
            let savings = (16 - bits) * tail.len();
            if padding_cost < savings {
                values.fill(0);
                for (v, &l) in values.iter_mut().zip(tail) {
                    *v = u64::from(l);
                }
                fastlanes::pack(16, bits, &values, out)?;
            } else {
                for &l in tail {
                    out.extend_from_slice(&l.to_le_bytes());
                }
            }
        }
        Ok(())
    }
}

/// Decodes a whole-block buffer (a dictionary's items): flat, or general compression
/// around flat. Returns exactly `n * width` bytes.
pub(crate) fn decode_items(
    encoding: &pb::CompressiveEncoding,
    buf: &[u8],
    n: usize,
) -> Result<(usize, Vec<u8>)> {
    match &encoding.compression {
        Some(Compression::Flat(flat)) if flat.data.is_none() => {
            let width = byte_width(flat.bits_per_value, "dictionary items")?;
            check_len(
                buf,
                n.checked_mul(width)
                    .ok_or_else(|| Error::corrupt("dictionary size overflows"))?,
                "dictionary",
            )?;
            Ok((width, buf.to_vec()))
        }
        Some(Compression::General(general)) => {
            let scheme = scheme_of(general.compression.as_ref())?;
            let inner = child(general.values.as_deref(), "general compression")?;
            let width = match &inner.compression {
                Some(Compression::Flat(flat)) if flat.data.is_none() => {
                    byte_width(flat.bits_per_value, "dictionary items")?
                }
                _ => {
                    return Err(Error::unsupported(format!(
                        "Lance dictionary items compressed over {}",
                        variant_name(inner)
                    )))
                }
            };
            let len = n
                .checked_mul(width)
                .ok_or_else(|| Error::corrupt("dictionary size overflows"))?;
            let mut out = Vec::new();
            decompress_buffer(scheme, buf, len, &mut out)?;
            check_len(&out, len, "dictionary")?;
            Ok((width, out))
        }
        _ => Err(Error::unsupported(format!(
            "Lance dictionary items encoded with {}",
            variant_name(encoding)
        ))),
    }
}

/// `Flat { bits_per_value }`.
pub(crate) fn flat(bits: u64) -> pb::CompressiveEncoding {
    pb::CompressiveEncoding {
        compression: Some(Compression::Flat(pb::Flat {
            bits_per_value: bits,
            data: None,
        })),
    }
}

/// `ByteStreamSplit { values: Flat }`.
pub(crate) fn bss(bits: u64) -> pb::CompressiveEncoding {
    pb::CompressiveEncoding {
        compression: Some(Compression::ByteStreamSplit(Box::new(
            pb::ByteStreamSplit {
                values: Some(Box::new(flat(bits))),
            },
        ))),
    }
}

/// `General { compression, values: inner }`.
pub(crate) fn general(
    scheme: CompressionScheme,
    level: Option<i32>,
    inner: pb::CompressiveEncoding,
) -> pb::CompressiveEncoding {
    let scheme = match scheme {
        CompressionScheme::Lz4 => pb::CompressionScheme::CompressionAlgorithmLz4,
        CompressionScheme::Zstd => pb::CompressionScheme::CompressionAlgorithmZstd,
    };
    pb::CompressiveEncoding {
        compression: Some(Compression::General(Box::new(pb::General {
            compression: Some(pb::BufferCompression {
                scheme: scheme as i32,
                level,
            }),
            values: Some(Box::new(inner)),
        }))),
    }
}

/// `InlineBitpacking { bits }`: per chunk a bit width, then FastLanes-packed values.
pub(crate) fn inline_bitpacking(bits: u64) -> pb::CompressiveEncoding {
    pb::CompressiveEncoding {
        compression: Some(Compression::InlineBitpacking(pb::InlineBitpacking {
            uncompressed_bits_per_value: bits,
            values: None,
        })),
    }
}

/// `OutOfLineBitpacking { 16, values: Flat { bits } }`: definition levels.
pub(crate) fn levels_out_of_line(bits: u64) -> pb::CompressiveEncoding {
    pb::CompressiveEncoding {
        compression: Some(Compression::OutOfLineBitpacking(Box::new(
            pb::OutOfLineBitpacking {
                uncompressed_bits_per_value: 16,
                values: Some(Box::new(flat(bits))),
            },
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_round_trip_at_every_tail() {
        for n in [1usize, 5, 100, 1023, 1024, 1025, 2048, 3000] {
            let levels: Vec<u16> = (0..n).map(|i| u16::from(i % 3 == 0)).collect();
            let mut packed = Vec::new();
            LevelDecoder::encode_out_of_line(1, &levels, &mut packed).unwrap();
            let mut back = Vec::new();
            LevelDecoder::OutOfLine { bits: 1 }
                .decode(&packed, n, &mut back)
                .unwrap();
            assert_eq!(back, levels, "n={n}");
        }
    }

    #[test]
    fn general_buffers_round_trip_and_refuse_big_claims() {
        let src: Vec<u8> = (0..4096u32).flat_map(|i| (i / 7).to_le_bytes()).collect();
        for scheme in [CompressionScheme::Lz4, CompressionScheme::Zstd] {
            let mut buf = Vec::new();
            compress_buffer(scheme, 3, &src, &mut buf).unwrap();
            let mut out = Vec::new();
            decompress_buffer(scheme, &buf, src.len(), &mut out).unwrap();
            assert_eq!(out, src);
            assert!(decompress_buffer(scheme, &buf, src.len() - 1, &mut out).is_err());
            for cut in [0, 3, 7, buf.len() / 2] {
                assert!(decompress_buffer(scheme, &buf[..cut], src.len(), &mut out).is_err());
            }
        }
    }

    #[test]
    fn rle_checks_its_runs() {
        let d = ChunkDecoder::Rle {
            width: 4,
            length_width: 1,
        };
        let values = [1u8, 0, 0, 0, 2, 0, 0, 0];
        let mut out = Vec::new();
        d.decode(&[&values, &[2, 3]], 5, &mut out, &mut Vec::new())
            .unwrap();
        assert_eq!(out.len(), 20);
        assert!(d
            .decode(&[&values, &[2, 4]], 5, &mut Vec::new(), &mut Vec::new())
            .is_err());
        assert!(d
            .decode(&[&values, &[2, 2]], 5, &mut Vec::new(), &mut Vec::new())
            .is_err());
        assert!(d
            .decode(&[&values, &[2]], 5, &mut Vec::new(), &mut Vec::new())
            .is_err());
    }
}
