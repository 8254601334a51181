//! Miniblock encodings: compressor/decompressor pairs that turn one chunk of fixed-width
//! values into bytes and back.
//!
//! A [`MiniBlockCompressor`] encodes a page's values chunk by chunk and says, with a
//! protobuf [`ArrayEncoding`], how to decode them; a [`MiniBlockDecompressor`], built from
//! that message by [`decompressor_for`], decodes one chunk given its bytes and value count.
//! The chunking itself (how many values each chunk holds) is decided in one place,
//! [`ChunkPlan`], so layered encodings can never disagree on it.
//!
//! | module | encoding | `ArrayEncoding` |
//! |---|---|---|
//! | [`flat`] | values as they are | `flat { bits_per_value }` |
//! | [`byte_stream_split`] | chunk-local byte stream split | `byte_stream_split { bits_per_value }` |
//! | [`general`] | LZ4 over each chunk of an inner encoding | `general_mini_block { inner, compression }` |

pub mod byte_stream_split;
pub mod flat;
pub mod general;

use std::fmt;
use std::str::FromStr;

use crate::error::{Error, Result};
use crate::proto::encodings::{array_encoding, ArrayEncoding};

pub use byte_stream_split::{ByteStreamSplitDecompressor, ByteStreamSplitEncoder};
pub use flat::{FlatDecompressor, FlatEncoder};
pub use general::{CompressionScheme, GeneralMiniBlockCompressor, GeneralMiniBlockDecompressor};

/// Bytes in a full chunk of the base format: 1024 values of 32 bits, 512 of 64 bits.
pub const CHUNK_BYTES: usize = 4096;

/// Largest value count a single chunk may declare (`log_num_values` at most 16).
pub const MAX_CHUNK_VALUES: usize = 1 << MAX_LOG_NUM_VALUES;

/// Largest `log_num_values` a chunk may declare.
pub const MAX_LOG_NUM_VALUES: u8 = 16;

/// How a chunk's value bytes are stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ChunkStorage {
    /// As the (innermost) encoding wrote them.
    Raw,
    /// Compressed by the page's general compression scheme.
    Compressed,
}

/// One chunk of a [`MiniBlockCompressed`] page: where it is and what it holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MiniBlockChunk {
    /// Encoded size in bytes.
    pub num_bytes: u32,
    /// log2 of the chunk's value count; 0 for the last chunk, whose count is the page
    /// total minus the others.
    pub log_num_values: u8,
    /// Whether the bytes are compressed.
    pub storage: ChunkStorage,
}

/// A page of values encoded as chunks in one shared buffer.
#[derive(Debug, Clone, PartialEq)]
pub struct MiniBlockCompressed {
    /// The chunks' bytes, back to back.
    pub data: Vec<u8>,
    /// One entry per chunk, in order.
    pub chunks: Vec<MiniBlockChunk>,
    /// Values in the page.
    pub num_values: u64,
}

/// How a page of `num_values` values is cut into chunks: every chunk but the last holds
/// `chunk_values` (a power of two), the last holds the rest, and no chunk is empty.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkPlan {
    num_values: usize,
    chunk_values: usize,
}

impl ChunkPlan {
    /// A plan for `num_values` values in chunks of `chunk_values`.
    pub fn new(num_values: usize, chunk_values: usize) -> Result<Self> {
        if !chunk_values.is_power_of_two() || !(2..=MAX_CHUNK_VALUES).contains(&chunk_values) {
            return Err(Error::invalid(format!(
                "chunk size must be a power of two from 2 to {MAX_CHUNK_VALUES} values, got {chunk_values}"
            )));
        }
        Ok(Self {
            num_values,
            chunk_values,
        })
    }

    /// Number of chunks (zero for an empty page).
    pub fn num_chunks(&self) -> usize {
        self.num_values.div_ceil(self.chunk_values)
    }

    /// Rows of chunk `index`, and its `log_num_values` (0 for the last chunk).
    pub fn chunk(&self, index: usize) -> (std::ops::Range<usize>, u8) {
        let start = index * self.chunk_values;
        let end = (start + self.chunk_values).min(self.num_values);
        let log = if index + 1 == self.num_chunks() {
            0
        } else {
            self.chunk_values.trailing_zeros() as u8
        };
        (start..end, log)
    }
}

/// Encodes chunks of fixed-width values.
pub trait MiniBlockCompressor: Send + Sync + fmt::Debug {
    /// Bytes per value.
    fn value_width(&self) -> usize;

    /// Values in every chunk but the last.
    fn chunk_values(&self) -> usize;

    /// The message a reader needs to build the matching decompressor.
    fn array_encoding(&self) -> ArrayEncoding;

    /// Encodes one chunk (`values.len()` a multiple of [`value_width`](Self::value_width),
    /// at most [`chunk_values`](Self::chunk_values) values), appending its bytes to `out`.
    /// `scratch` is working space the caller keeps between calls.
    fn compress_chunk(
        &self,
        values: &[u8],
        out: &mut Vec<u8>,
        scratch: &mut Vec<u8>,
    ) -> Result<ChunkStorage>;

    /// Encodes a whole page of values (little-endian, back to back): its chunks and the
    /// `ArrayEncoding` that decodes them.
    fn compress(&self, values: &[u8]) -> Result<(MiniBlockCompressed, ArrayEncoding)> {
        let width = self.value_width();
        if values.len() % width != 0 {
            return Err(Error::invalid(format!(
                "{} bytes is not a whole number of {width}-byte values",
                values.len()
            )));
        }
        let plan = ChunkPlan::new(values.len() / width, self.chunk_values())?;
        let mut data = Vec::with_capacity(values.len() + values.len() / 64);
        let mut chunks = Vec::with_capacity(plan.num_chunks());
        let mut scratch = Vec::new();
        for index in 0..plan.num_chunks() {
            let (rows, log_num_values) = plan.chunk(index);
            let start = data.len();
            let storage = self.compress_chunk(
                &values[rows.start * width..rows.end * width],
                &mut data,
                &mut scratch,
            )?;
            chunks.push(MiniBlockChunk {
                num_bytes: u32::try_from(data.len() - start)
                    .map_err(|_| Error::invalid("chunk larger than 4 GiB"))?,
                log_num_values,
                storage,
            });
        }
        let compressed = MiniBlockCompressed {
            data,
            chunks,
            num_values: (values.len() / width) as u64,
        };
        Ok((compressed, self.array_encoding()))
    }
}

/// Decodes chunks written by the matching [`MiniBlockCompressor`].
pub trait MiniBlockDecompressor: Send + Sync + fmt::Debug {
    /// Bytes per value.
    fn value_width(&self) -> usize;

    /// Decodes one chunk of `num_values` values from `chunk` into `out`, which must hold
    /// exactly `num_values * value_width()` bytes. `scratch` is working space the caller
    /// keeps between calls, so decoding many chunks allocates at most once.
    fn decompress_into(
        &self,
        chunk: &[u8],
        num_values: usize,
        storage: ChunkStorage,
        out: &mut [u8],
        scratch: &mut Vec<u8>,
    ) -> Result<()>;

    /// Decodes one chunk into a new buffer of `num_values * value_width()` bytes.
    fn decompress(
        &self,
        chunk: &[u8],
        num_values: usize,
        storage: ChunkStorage,
    ) -> Result<Vec<u8>> {
        let len = checked_len(num_values, self.value_width())?;
        if num_values > MAX_CHUNK_VALUES {
            return Err(Error::invalid(format!(
                "a chunk holds at most {MAX_CHUNK_VALUES} values, asked for {num_values}"
            )));
        }
        let mut out = vec![0; len];
        self.decompress_into(chunk, num_values, storage, &mut out, &mut Vec::new())?;
        Ok(out)
    }
}

/// `num_values * width`, or an error when it overflows.
pub(crate) fn checked_len(num_values: usize, width: usize) -> Result<usize> {
    num_values
        .checked_mul(width)
        .ok_or_else(|| Error::invalid(format!("{num_values} values of {width} bytes overflow")))
}

/// Checks that `out` is the right size for `num_values` values of `width` bytes.
pub(crate) fn check_output(out: &[u8], num_values: usize, width: usize) -> Result<usize> {
    let len = checked_len(num_values, width)?;
    if out.len() != len {
        return Err(Error::invalid(format!(
            "output buffer holds {} bytes, {num_values} values of {width} bytes need {len}",
            out.len()
        )));
    }
    Ok(len)
}

/// Bytes per value for a `bits_per_value` of 32 or 64.
pub(crate) fn width_from_bits(bits_per_value: u64) -> Result<usize> {
    match bits_per_value {
        32 => Ok(4),
        64 => Ok(8),
        other => Err(Error::invalid(format!(
            "bits_per_value must be 32 or 64, got {other}"
        ))),
    }
}

/// The encodings a page can be written with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Encoding {
    /// Values as they are.
    Plain,
    /// Values as they are, each chunk compressed with LZ4.
    Lz4,
    /// Chunk-local byte stream split.
    Bss,
    /// Byte stream split, each chunk compressed with LZ4.
    BssLz4,
}

impl Encoding {
    /// Every encoding, in the order reports list them.
    pub const ALL: [Encoding; 4] = [
        Encoding::Plain,
        Encoding::Lz4,
        Encoding::Bss,
        Encoding::BssLz4,
    ];

    /// The name used on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Encoding::Plain => "plain",
            Encoding::Lz4 => "lz4",
            Encoding::Bss => "bss",
            Encoding::BssLz4 => "bss+lz4",
        }
    }

    /// A compressor for values of `bits_per_value` bits (32 or 64).
    pub fn compressor(self, bits_per_value: u64) -> Result<Box<dyn MiniBlockCompressor>> {
        Ok(match self {
            Encoding::Plain => Box::new(FlatEncoder::try_new(bits_per_value)?),
            Encoding::Bss => Box::new(ByteStreamSplitEncoder::try_new(bits_per_value)?),
            Encoding::Lz4 => Box::new(GeneralMiniBlockCompressor::try_new(
                Box::new(FlatEncoder::try_new(bits_per_value)?),
                CompressionScheme::Lz4,
            )?),
            Encoding::BssLz4 => Box::new(GeneralMiniBlockCompressor::try_new(
                Box::new(ByteStreamSplitEncoder::try_new(bits_per_value)?),
                CompressionScheme::Lz4,
            )?),
        })
    }
}

impl fmt::Display for Encoding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Encoding {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        Encoding::ALL
            .into_iter()
            .find(|e| e.name().eq_ignore_ascii_case(s))
            .ok_or_else(|| {
                Error::invalid(format!(
                    "unknown encoding {s:?}; expected one of plain, lz4, bss, bss+lz4"
                ))
            })
    }
}

/// The encoding tree in words, e.g. `lz4 over byte_stream_split(32-bit)`.
pub fn describe(encoding: &ArrayEncoding) -> String {
    match &encoding.array_encoding {
        None => "(none)".to_owned(),
        Some(array_encoding::ArrayEncoding::Flat(flat)) => {
            format!("flat({}-bit)", flat.bits_per_value)
        }
        Some(array_encoding::ArrayEncoding::ByteStreamSplit(bss)) => {
            format!("byte_stream_split({}-bit)", bss.bits_per_value)
        }
        Some(array_encoding::ArrayEncoding::GeneralMiniBlock(general)) => {
            let scheme = general
                .compression
                .as_ref()
                .map_or("(no compression)", |c| c.scheme.as_str());
            let inner = general
                .inner
                .as_deref()
                .map_or_else(|| "(nothing)".to_owned(), describe);
            format!("{scheme} over {inner}")
        }
    }
}

/// Builds the decompressor an `ArrayEncoding` describes, treating every field as hostile:
/// a missing oneof or inner message is corrupt data, an unknown scheme, width or nesting is
/// unsupported.
pub fn decompressor_for(encoding: &ArrayEncoding) -> Result<Box<dyn MiniBlockDecompressor>> {
    decompressor_at_depth(encoding, 0)
}

fn decompressor_at_depth(
    encoding: &ArrayEncoding,
    depth: usize,
) -> Result<Box<dyn MiniBlockDecompressor>> {
    let bits = |bits_per_value: u64, what: &str| {
        width_from_bits(bits_per_value).map_err(|_| {
            Error::unsupported(format!(
                "{what} with bits_per_value {bits_per_value} (only 32 and 64 are supported)"
            ))
        })
    };
    match &encoding.array_encoding {
        None => Err(Error::corrupt("ArrayEncoding has no encoding set")),
        Some(array_encoding::ArrayEncoding::Flat(flat)) => {
            if flat.compression.is_some() {
                return Err(Error::unsupported(
                    "flat encoding with its own compression (use general_mini_block)",
                ));
            }
            let width = bits(flat.bits_per_value, "flat")?;
            Ok(Box::new(FlatDecompressor::with_width(width)))
        }
        Some(array_encoding::ArrayEncoding::ByteStreamSplit(bss)) => {
            let width = bits(bss.bits_per_value, "byte_stream_split")?;
            Ok(Box::new(ByteStreamSplitDecompressor::with_width(width)))
        }
        Some(array_encoding::ArrayEncoding::GeneralMiniBlock(general)) => {
            if depth > 0 {
                return Err(Error::unsupported(
                    "general_mini_block nested inside general_mini_block",
                ));
            }
            let inner = general
                .inner
                .as_ref()
                .ok_or_else(|| Error::corrupt("general_mini_block has no inner encoding"))?;
            let compression = general
                .compression
                .as_ref()
                .ok_or_else(|| Error::corrupt("general_mini_block has no compression"))?;
            let scheme = CompressionScheme::from_proto(compression)?;
            let inner = decompressor_at_depth(inner, depth + 1)?;
            Ok(Box::new(GeneralMiniBlockDecompressor::new(inner, scheme)))
        }
    }
}
