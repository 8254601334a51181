//! Pages: an Arrow array cut into miniblock chunks that share one buffer, plus the chunk
//! table that says where each chunk is.
//!
//! # Layout
//!
//! A page is encoded as its chunks back to back in one data buffer and one 4-byte chunk
//! table entry per chunk:
//!
//! ```text
//! chunk table entry (4 bytes, little-endian)
//!   byte 0..2  num_bytes       u16: the chunk's size in the data buffer
//!   byte 2     log_num_values  u8:  log2 of the chunk's value count (1..=16);
//!                                   0 on the last chunk, whose count is the page total
//!                                   minus the others
//!   byte 3     flags           bit 0: the chunk starts with a validity bitmap
//!                              bit 1: the chunk's value bytes are compressed
//!                              bits 2..8: zero
//!
//! chunk c in the data buffer, at the sum of the sizes of chunks 0..c
//!   [validity: ceil(n/8) bytes, bit i (LSB first) = row i is valid]   only if flag bit 0
//!   [value bytes: what the page's ArrayEncoding wrote for n values]
//! ```
//!
//! A chunk of a page without nulls carries no validity bytes; values under nulls are
//! written as zero. An empty page has no chunks. Standalone, a page is serialized by
//! [`EncodedPage::to_bytes`] as `u32 chunk count | chunk table | data`; the
//! [`ArrayEncoding`] travels beside it (in a column file, in the footer).
//!
//! Worked example: f32 `[1.0, 2.0, 3.0, 4.0]` with BSS is one chunk of 16 bytes,
//! table entry `10 00 00 00` (16 bytes, last chunk, no flags) and data
//! `00 00 00 00 | 00 00 00 00 | 80 00 40 80 | 3F 40 40 40` (streams 0 to 3).

mod decoder;
mod encoder;
mod layout;

pub(crate) use decoder::build_array;
pub use decoder::PageDecoder;
pub use encoder::{encode_page, PageEncoder};
pub use layout::PageLayout;

use arrow_schema::DataType;

use crate::encodings::ChunkStorage;
use crate::error::{Error, Result};
use crate::proto::encodings::ArrayEncoding;

/// Size of one chunk table entry.
pub const CHUNK_ENTRY_BYTES: usize = 4;

const FLAG_VALIDITY: u8 = 1;
const FLAG_COMPRESSED: u8 = 2;

/// One chunk table entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkMeta {
    /// Bytes of the chunk in the page's data buffer (validity included).
    pub num_bytes: u16,
    /// log2 of the value count; 0 for the last chunk.
    pub log_num_values: u8,
    /// Whether the chunk starts with a validity bitmap.
    pub has_validity: bool,
    /// Whether the value bytes are compressed.
    pub storage: ChunkStorage,
}

impl ChunkMeta {
    /// The entry's 4 bytes.
    pub fn to_bytes(self) -> [u8; CHUNK_ENTRY_BYTES] {
        let [lo, hi] = self.num_bytes.to_le_bytes();
        let mut flags = 0;
        if self.has_validity {
            flags |= FLAG_VALIDITY;
        }
        if self.storage == ChunkStorage::Compressed {
            flags |= FLAG_COMPRESSED;
        }
        [lo, hi, self.log_num_values, flags]
    }

    /// Reads an entry; unknown flag bits are corrupt data.
    pub fn from_bytes(bytes: [u8; CHUNK_ENTRY_BYTES], index: usize) -> Result<Self> {
        let flags = bytes[3];
        if flags & !(FLAG_VALIDITY | FLAG_COMPRESSED) != 0 {
            return Err(Error::corrupt(format!(
                "chunk {index} has unknown flag bits {flags:#04x}"
            )));
        }
        Ok(Self {
            num_bytes: u16::from_le_bytes([bytes[0], bytes[1]]),
            log_num_values: bytes[2],
            has_validity: flags & FLAG_VALIDITY != 0,
            storage: if flags & FLAG_COMPRESSED != 0 {
                ChunkStorage::Compressed
            } else {
                ChunkStorage::Raw
            },
        })
    }
}

/// An encoded page: what a writer stores and a reader needs, besides the Arrow type.
#[derive(Debug, Clone, PartialEq)]
pub struct EncodedPage {
    /// How the chunks' values are encoded.
    pub encoding: ArrayEncoding,
    /// Values (rows, nulls included) in the page.
    pub num_values: u64,
    /// One entry per chunk.
    pub chunks: Vec<ChunkMeta>,
    /// The chunks, back to back.
    pub data: Vec<u8>,
}

impl EncodedPage {
    /// The chunk table: 4 bytes per chunk.
    pub fn chunk_table(&self) -> Vec<u8> {
        self.chunks.iter().flat_map(|c| c.to_bytes()).collect()
    }

    /// The page as one buffer: `u32 LE chunk count | chunk table | data`.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out =
            Vec::with_capacity(4 + self.chunks.len() * CHUNK_ENTRY_BYTES + self.data.len());
        out.extend_from_slice(&(self.chunks.len() as u32).to_le_bytes());
        out.extend(self.chunks.iter().flat_map(|c| c.to_bytes()));
        out.extend_from_slice(&self.data);
        out
    }

    /// Bytes taken by the page: chunk table plus data.
    pub fn encoded_len(&self) -> usize {
        self.chunks.len() * CHUNK_ENTRY_BYTES + self.data.len()
    }

    /// A decoder over this page, producing arrays of `data_type`.
    pub fn decoder(&self, data_type: &DataType) -> Result<PageDecoder<'_>> {
        PageDecoder::from_parts(
            &self.encoding,
            self.num_values,
            &self.chunk_table(),
            &self.data,
        )?
        .with_data_type(data_type)
    }
}

/// Bytes per value of the Arrow types pages hold.
pub fn value_width(data_type: &DataType) -> Result<usize> {
    match data_type {
        DataType::Float32 => Ok(4),
        DataType::Float64 => Ok(8),
        other => Err(Error::invalid(format!(
            "data type {other} is not supported (miniblock encodes Float32 and Float64)"
        ))),
    }
}
