//! Pages: an Arrow array cut into miniblock chunks that share one buffer, plus the chunk
//! table that says where each chunk is.
//!
//! # Layout
//!
//! A page is encoded as its chunks back to back in one data buffer and one chunk table
//! entry per chunk. Entries are 4 bytes ([`ChunkTableFormat::Narrow`]) while every chunk
//! fits 65535 bytes, the case with the default 4 KiB chunks; a page with a larger chunk
//! uses 8-byte entries ([`ChunkTableFormat::Wide`]) throughout:
//!
//! ```text
//! narrow chunk table entry (4 bytes, little-endian)
//!   byte 0..2  num_bytes       u16: the chunk's size in the data buffer
//!   byte 2     log_num_values  u8:  log2 of the chunk's value count (1..=16);
//!                                   0 on the last chunk, whose count is the page total
//!                                   minus the others
//!   byte 3     flags           bit 0: the chunk starts with a validity bitmap
//!                              bit 1: the chunk's value bytes are compressed
//!                              bits 2..8: zero
//!
//! wide chunk table entry (8 bytes, little-endian)
//!   byte 0..4  num_bytes       u32
//!   byte 4     log_num_values  u8, as above
//!   byte 5     flags           u8, as above
//!   byte 6..8  zero
//!
//! chunk c in the data buffer, at the sum of the sizes of chunks 0..c
//!   [validity: ceil(n/8) bytes, bit i (LSB first) = row i is valid]   only if flag bit 0
//!   [value bytes: what the page's ArrayEncoding wrote for n values]
//! ```
//!
//! A chunk of a page without nulls carries no validity bytes; values under nulls are
//! written as zero. An empty page has no chunks. What a page's chunks share beyond its
//! message (a dictionary's items) is in page buffers, which the [`ArrayEncoding`] names
//! by index. Standalone, a page is serialized by [`EncodedPage::to_bytes`] as `u32 header
//! | chunk table | [u32 buffer count | u64 size per buffer | buffers] | data`, the header
//! holding the chunk count in its low 30 bits, in bit 31 whether the entries are wide and
//! in bit 30 whether the bracketed buffer part is present; the [`ArrayEncoding`] travels
//! beside it (in a column file, in the footer, where `Page.chunk_entry_bytes`, field 100,
//! records the entry size and `Page.buffer_sizes`, field 102, the buffers that follow the
//! page's data).
//!
//! Worked example: f32 `[1.0, 2.0, 3.0, 4.0]` with BSS is one chunk of 16 bytes,
//! table entry `10 00 00 00` (16 bytes, last chunk, no flags) and data
//! `00 00 00 00 | 00 00 00 00 | 80 00 40 80 | 3F 40 40 40` (streams 0 to 3).

mod decoder;
mod encoder;
mod layout;

pub use decoder::PageDecoder;
pub(crate) use decoder::{build_array, output_reserve};
pub(crate) use encoder::value_bytes;
pub use encoder::{encode_page, PageEncoder};
pub use layout::PageLayout;

use arrow_schema::DataType;

use crate::encodings::{ChunkStorage, Encoding, MAX_VALUE_WIDTH};
use crate::error::{Error, Result};
use crate::kernels::crc::crc32c;
use crate::proto::encodings::ArrayEncoding;

/// Size of one narrow chunk table entry.
pub const CHUNK_ENTRY_BYTES: usize = 4;

/// Size of one wide chunk table entry.
pub const WIDE_CHUNK_ENTRY_BYTES: usize = 8;

/// Bit 31 of a standalone page's header: the chunk table has wide entries.
pub(crate) const WIDE_HEADER_BIT: u32 = 1 << 31;

/// Bit 30 of a standalone page's header: page buffers follow the chunk table.
pub(crate) const BUFFERS_HEADER_BIT: u32 = 1 << 30;

/// Most page buffers a page may declare.
pub const MAX_PAGE_BUFFERS: usize = 16;

const FLAG_VALIDITY: u8 = 1;
const FLAG_COMPRESSED: u8 = 2;

/// The size of a page's chunk table entries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum ChunkTableFormat {
    /// 4-byte entries with a u16 chunk size: every chunk is under 64 KiB.
    #[default]
    Narrow,
    /// 8-byte entries with a u32 chunk size.
    Wide,
}

impl ChunkTableFormat {
    /// Bytes per entry.
    pub fn entry_bytes(self) -> usize {
        match self {
            ChunkTableFormat::Narrow => CHUNK_ENTRY_BYTES,
            ChunkTableFormat::Wide => WIDE_CHUNK_ENTRY_BYTES,
        }
    }

    /// The format whose entries are `entry_bytes` long (0 meaning the narrow default, as a
    /// footer written before wide entries existed records it).
    pub fn from_entry_bytes(entry_bytes: u32) -> Result<Self> {
        match entry_bytes {
            0 | 4 => Ok(ChunkTableFormat::Narrow),
            8 => Ok(ChunkTableFormat::Wide),
            other => Err(Error::corrupt(format!(
                "chunk table entries of {other} bytes (expected 4 or 8)"
            ))),
        }
    }

    /// The narrowest format that holds chunks of up to `max_chunk_bytes` bytes.
    pub fn for_max_chunk(max_chunk_bytes: u32) -> Self {
        if max_chunk_bytes > u32::from(u16::MAX) {
            ChunkTableFormat::Wide
        } else {
            ChunkTableFormat::Narrow
        }
    }
}

/// One chunk table entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkMeta {
    /// Bytes of the chunk in the page's data buffer (validity included).
    pub num_bytes: u32,
    /// log2 of the value count; 0 for the last chunk.
    pub log_num_values: u8,
    /// Whether the chunk starts with a validity bitmap.
    pub has_validity: bool,
    /// Whether the value bytes are compressed.
    pub storage: ChunkStorage,
}

impl ChunkMeta {
    fn flags(self) -> u8 {
        let mut flags = 0;
        if self.has_validity {
            flags |= FLAG_VALIDITY;
        }
        if self.storage == ChunkStorage::Compressed {
            flags |= FLAG_COMPRESSED;
        }
        flags
    }

    /// Appends the entry in `format` to `out`; a chunk too large for a narrow entry is an
    /// error.
    pub fn write(self, format: ChunkTableFormat, out: &mut Vec<u8>) -> Result<()> {
        match format {
            ChunkTableFormat::Narrow => {
                let size = u16::try_from(self.num_bytes).map_err(|_| {
                    Error::invalid(format!(
                        "a chunk of {} bytes needs a wide chunk table",
                        self.num_bytes
                    ))
                })?;
                out.extend_from_slice(&size.to_le_bytes());
                out.extend_from_slice(&[self.log_num_values, self.flags()]);
            }
            ChunkTableFormat::Wide => {
                out.extend_from_slice(&self.num_bytes.to_le_bytes());
                out.extend_from_slice(&[self.log_num_values, self.flags(), 0, 0]);
            }
        }
        Ok(())
    }

    /// Reads one entry of `format` (`bytes` holds exactly one entry); unknown flag bits
    /// and non-zero reserved bytes are corrupt data.
    pub fn read(bytes: &[u8], format: ChunkTableFormat, index: usize) -> Result<Self> {
        let (num_bytes, log_num_values, flags) = match (format, bytes) {
            (ChunkTableFormat::Narrow, &[a, b, log, flags]) => {
                (u32::from(u16::from_le_bytes([a, b])), log, flags)
            }
            (ChunkTableFormat::Wide, &[a, b, c, d, log, flags, r0, r1]) => {
                if r0 != 0 || r1 != 0 {
                    return Err(Error::corrupt(format!(
                        "chunk {index} has non-zero reserved bytes"
                    )));
                }
                (u32::from_le_bytes([a, b, c, d]), log, flags)
            }
            _ => {
                return Err(Error::invalid(format!(
                    "chunk {index}: {} bytes are not one {format:?} entry",
                    bytes.len()
                )))
            }
        };
        if flags & !(FLAG_VALIDITY | FLAG_COMPRESSED) != 0 {
            return Err(Error::corrupt(format!(
                "chunk {index} has unknown flag bits {flags:#04x}"
            )));
        }
        Ok(Self {
            num_bytes,
            log_num_values,
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
    /// What the chunks share beyond the message (a dictionary's items), in the order the
    /// encoding names them; empty for most encodings.
    pub buffers: Vec<Vec<u8>>,
}

impl EncodedPage {
    /// The narrowest chunk table format that holds every chunk of this page.
    pub fn table_format(&self) -> ChunkTableFormat {
        ChunkTableFormat::for_max_chunk(self.chunks.iter().map(|c| c.num_bytes).max().unwrap_or(0))
    }

    /// The CRC32C of each chunk's bytes and of the whole data buffer. The page's is
    /// computed over the data again rather than combined from the chunks' CRCs: the
    /// CRC kernel runs at memory speed, while `crc32c_combine` does matrix work per call,
    /// which costs more than hashing a small chunk.
    pub fn checksums(&self) -> (Vec<u32>, u32) {
        let mut chunk_crcs = Vec::with_capacity(self.chunks.len());
        let mut offset = 0usize;
        for chunk in &self.chunks {
            let end = offset + chunk.num_bytes as usize;
            chunk_crcs.push(crc32c(&self.data[offset..end]));
            offset = end;
        }
        (chunk_crcs, crc32c(&self.data))
    }

    /// The chunk table, in [`table_format`](Self::table_format).
    pub fn chunk_table(&self) -> Vec<u8> {
        let format = self.table_format();
        let mut out = Vec::with_capacity(self.chunks.len() * format.entry_bytes());
        for chunk in &self.chunks {
            chunk
                .write(format, &mut out)
                .expect("table_format fits every chunk");
        }
        out
    }

    /// The page as one buffer: `u32 LE header | chunk table | [u32 LE buffer count |
    /// u64 LE size per buffer | buffers] | data`, the header holding the chunk count, in
    /// bit 31 whether the table is wide and in bit 30 whether buffers follow it.
    pub fn to_bytes(&self) -> Vec<u8> {
        let table = self.chunk_table();
        let mut header = self.chunks.len() as u32;
        if self.table_format() == ChunkTableFormat::Wide {
            header |= WIDE_HEADER_BIT;
        }
        if !self.buffers.is_empty() {
            header |= BUFFERS_HEADER_BIT;
        }
        let buffer_bytes: usize = self.buffers.iter().map(|b| 8 + b.len()).sum();
        let mut out = Vec::with_capacity(8 + table.len() + buffer_bytes + self.data.len());
        out.extend_from_slice(&header.to_le_bytes());
        out.extend_from_slice(&table);
        if !self.buffers.is_empty() {
            out.extend_from_slice(&(self.buffers.len() as u32).to_le_bytes());
            for buffer in &self.buffers {
                out.extend_from_slice(&(buffer.len() as u64).to_le_bytes());
            }
            for buffer in &self.buffers {
                out.extend_from_slice(buffer);
            }
        }
        out.extend_from_slice(&self.data);
        out
    }

    /// The page buffers as slices, as [`decompressor_for`](crate::encodings::decompressor_for)
    /// takes them.
    pub fn buffer_slices(&self) -> Vec<&[u8]> {
        self.buffers.iter().map(Vec::as_slice).collect()
    }

    /// Bytes taken by the page: chunk table, data, page buffers, and its encoding message
    /// (which carries what the chunks share, such as entropy tables).
    pub fn encoded_len(&self) -> usize {
        self.chunks.len() * self.table_format().entry_bytes()
            + self.data.len()
            + self.buffers.iter().map(Vec::len).sum::<usize>()
            + prost::Message::encoded_len(&self.encoding)
    }

    /// The encoding this page was written with, when it is one of [`Encoding::ALL`].
    pub fn encoding_kind(&self) -> Option<Encoding> {
        Encoding::of(&self.encoding)
    }

    /// A decoder over this page, producing arrays of `data_type`.
    pub fn decoder(&self, data_type: &DataType) -> Result<PageDecoder<'_>> {
        PageDecoder::from_parts(
            &self.encoding,
            &self.buffer_slices(),
            self.num_values,
            &self.chunk_table(),
            self.table_format(),
            &self.data,
        )?
        .with_data_type(data_type)
    }
}

/// Bytes per value of the Arrow types pages hold: every fixed-width type (floats,
/// integers, dates, times, timestamps, durations, intervals, decimals) and
/// `FixedSizeBinary`.
pub fn value_width(data_type: &DataType) -> Result<usize> {
    let width = match data_type {
        DataType::FixedSizeBinary(w) => usize::try_from(*w).ok().filter(|&w| w > 0),
        // A byte per value in pages, 0 or 1 (bit-packed again by the encodings that pay:
        // bit-packing, runs, constant chunks).
        DataType::Boolean => Some(1),
        DataType::Null => None,
        other => other.primitive_width(),
    };
    match width {
        Some(w) if w <= MAX_VALUE_WIDTH => Ok(w),
        Some(w) => Err(Error::unsupported(format!(
            "{data_type} has {w}-byte values, more than the {MAX_VALUE_WIDTH} bytes supported"
        ))),
        None => Err(Error::invalid(format!(
            "data type {data_type} is not supported (miniblock encodes fixed-width types: floats, integers, temporal, decimals, FixedSizeBinary, booleans)"
        ))),
    }
}

/// Page round trips small enough for Miri (`cargo +nightly miri test --lib`): every
/// encoding Miri can run (Zstd is C, outside Miri), nulls, partial chunks, wide tables,
/// ranges, truncation.
#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{make_array, Array, ArrayRef};
    use arrow_buffer::{MutableBuffer, NullBuffer};
    use arrow_data::ArrayData;
    use arrow_schema::DataType;

    use super::{ChunkTableFormat, PageDecoder, PageEncoder};
    use crate::encodings::{EncoderOptions, Encoding};
    use crate::error::ErrorKind;

    const ENCODINGS: [Encoding; 4] = [
        Encoding::Plain,
        Encoding::Bss,
        Encoding::Lz4,
        Encoding::BssLz4,
    ];

    fn array(data_type: &DataType, len: usize, nulls: bool) -> ArrayRef {
        let width = super::value_width(data_type).unwrap();
        let mut values = MutableBuffer::new(len * width);
        for i in 0..len * width {
            values.push((i * 7 / width % 251) as u8 ^ (i % width) as u8);
        }
        let nulls = nulls.then(|| NullBuffer::from_iter((0..len).map(|i| i % 3 != 1)));
        make_array(
            ArrayData::builder(data_type.clone())
                .len(len)
                .add_buffer(values.into())
                .nulls(nulls)
                .build()
                .unwrap(),
        )
    }

    #[test]
    fn pages_round_trip_whole_and_in_part() {
        let lengths: &[usize] = if cfg!(miri) {
            &[0, 1, 7, 257, 520]
        } else {
            &[0, 1, 7, 257, 520, 1023, 1024, 1025, 3000]
        };
        let types = [
            DataType::Float16,
            DataType::Float32,
            DataType::Float64,
            DataType::FixedSizeBinary(5),
        ];
        for data_type in &types {
            let width = super::value_width(data_type).unwrap();
            for &len in lengths {
                for nulls in [false, true] {
                    let input = array(data_type, len, nulls);
                    for encoding in ENCODINGS {
                        for chunk in [None, Some(256)] {
                            let options =
                                EncoderOptions::default().with_chunk_values(chunk).unwrap();
                            let page = PageEncoder::for_strategy(encoding.into(), width, &options)
                                .unwrap()
                                .encode(input.as_ref())
                                .unwrap();
                            let bytes = page.to_bytes();
                            let decoder =
                                PageDecoder::try_new(&page.encoding, page.num_values, &bytes)
                                    .unwrap()
                                    .with_data_type(data_type)
                                    .unwrap();
                            let what = format!("{data_type} {encoding} {len} {chunk:?}");
                            assert_eq!(
                                decoder.decode().unwrap().to_data(),
                                input.to_data(),
                                "{what}"
                            );
                            if len > 3 {
                                let part = decoder.decode_range(1..len - 2).unwrap();
                                assert_eq!(
                                    part.to_data(),
                                    input.slice(1, len - 3).to_data(),
                                    "{what}"
                                );
                            }
                            // every proper prefix is refused, never read past
                            for cut in [0, 3, bytes.len() / 2, bytes.len().saturating_sub(1)] {
                                if cut < bytes.len() && len > 0 {
                                    let err = PageDecoder::try_new(
                                        &page.encoding,
                                        page.num_values,
                                        &bytes[..cut],
                                    )
                                    .and_then(|d| d.decode())
                                    .unwrap_err();
                                    assert_eq!(err.kind(), ErrorKind::Truncated, "{what} {cut}");
                                }
                            }
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn wide_tables_round_trip() {
        // One 65536-value chunk of 2-byte values with validity: past u16.
        let input: ArrayRef = Arc::new(array(&DataType::Float16, 65_536 + 3, true));
        let options = EncoderOptions::default()
            .with_chunk_values(Some(65_536))
            .unwrap();
        let page = PageEncoder::for_strategy(Encoding::Bss.into(), 2, &options)
            .unwrap()
            .encode(input.as_ref())
            .unwrap();
        assert_eq!(page.table_format(), ChunkTableFormat::Wide);
        let bytes = page.to_bytes();
        let decoder = PageDecoder::try_new(&page.encoding, page.num_values, &bytes).unwrap();
        assert_eq!(decoder.decode_chunk(1).unwrap().len(), 3);
        assert_eq!(
            decoder.decode_range(65_530..65_539).unwrap().to_data(),
            input.slice(65_530, 9).to_data()
        );
    }
}
