//! [`EncodedPage`](super::EncodedPage) bytes -> Arrow arrays, whole or in part.

use std::ops::Range;
use std::sync::Arc;

use arrow_array::{ArrayRef, Float32Array, Float64Array};
use arrow_buffer::{BooleanBufferBuilder, MutableBuffer, NullBuffer, ScalarBuffer};
use arrow_schema::DataType;

use super::{value_width, ChunkMeta, CHUNK_ENTRY_BYTES};
use crate::encodings::{
    checked_len, decompressor_for, ChunkStorage, MiniBlockDecompressor, MAX_CHUNK_VALUES,
    MAX_LOG_NUM_VALUES,
};
use crate::error::{Error, Result};
use crate::proto::encodings::ArrayEncoding;

/// Where a chunk is and what it holds, validated against the page.
#[derive(Debug, Clone, Copy)]
struct ChunkLocation {
    offset: usize,
    num_bytes: usize,
    first_row: usize,
    num_values: usize,
    has_validity: bool,
    storage: ChunkStorage,
}

impl ChunkLocation {
    fn rows(&self) -> Range<usize> {
        self.first_row..self.first_row + self.num_values
    }
}

/// Decodes one page: whole, chunk by chunk, or a row range touching only the chunks it
/// overlaps.
///
/// Construction validates the whole chunk table against the page's value count and data
/// length (so no later step can index out of bounds or allocate more than the page's
/// declared count); every chunk is then checked again as it is decoded.
#[derive(Debug)]
pub struct PageDecoder<'a> {
    decompressor: Box<dyn MiniBlockDecompressor>,
    data_type: DataType,
    width: usize,
    num_values: usize,
    chunks: Vec<ChunkLocation>,
    data: &'a [u8],
}

impl<'a> PageDecoder<'a> {
    /// A decoder over a page serialized by [`EncodedPage::to_bytes`](super::EncodedPage::to_bytes)
    /// (`u32 chunk count | chunk table | data`).
    pub fn try_new(encoding: &ArrayEncoding, num_values: u64, page: &'a [u8]) -> Result<Self> {
        let count_bytes: [u8; 4] =
            page.get(..4)
                .and_then(|b| b.try_into().ok())
                .ok_or_else(|| {
                    Error::truncated(format!("page of {} bytes has no chunk count", page.len()))
                })?;
        let num_chunks = u32::from_le_bytes(count_bytes) as usize;
        let table_len = num_chunks
            .checked_mul(CHUNK_ENTRY_BYTES)
            .ok_or_else(|| Error::corrupt(format!("chunk count {num_chunks} overflows")))?;
        let table = page.get(4..4 + table_len).ok_or_else(|| {
            Error::truncated(format!(
                "page of {} bytes ends inside its table of {num_chunks} chunks ({table_len} bytes)",
                page.len()
            ))
        })?;
        Self::from_parts(encoding, num_values, table, &page[4 + table_len..])
    }

    /// A decoder over a page given as its chunk table and its data buffer.
    pub fn from_parts(
        encoding: &ArrayEncoding,
        num_values: u64,
        chunk_table: &[u8],
        data: &'a [u8],
    ) -> Result<Self> {
        Self::with_decompressor(decompressor_for(encoding)?, num_values, chunk_table, data)
    }

    /// Like [`from_parts`](Self::from_parts) with a decompressor of the caller's choice.
    pub fn with_decompressor(
        decompressor: Box<dyn MiniBlockDecompressor>,
        num_values: u64,
        chunk_table: &[u8],
        data: &'a [u8],
    ) -> Result<Self> {
        let width = decompressor.value_width();
        let data_type = match width {
            4 => DataType::Float32,
            8 => DataType::Float64,
            other => {
                return Err(Error::unsupported(format!("values of {other} bytes")));
            }
        };
        let num_values = usize::try_from(num_values)
            .map_err(|_| Error::corrupt(format!("page value count {num_values} overflows")))?;
        let chunks = locate_chunks(num_values, chunk_table, data.len(), width)?;
        Ok(Self {
            decompressor,
            data_type,
            width,
            num_values,
            chunks,
            data,
        })
    }

    /// Decode to arrays of `data_type` (whose width must match the encoding's).
    pub fn with_data_type(mut self, data_type: &DataType) -> Result<Self> {
        let width = value_width(data_type)?;
        if width != self.width {
            return Err(Error::invalid(format!(
                "page holds {}-byte values, {data_type} has {width}-byte values",
                self.width
            )));
        }
        self.data_type = data_type.clone();
        Ok(self)
    }

    /// Values (rows) in the page.
    pub fn num_values(&self) -> usize {
        self.num_values
    }

    /// Chunks in the page.
    pub fn num_chunks(&self) -> usize {
        self.chunks.len()
    }

    /// Rows held by chunk `index`.
    pub fn chunk_rows(&self, index: usize) -> Result<Range<usize>> {
        self.chunks
            .get(index)
            .map(ChunkLocation::rows)
            .ok_or_else(|| {
                Error::invalid(format!(
                    "chunk {index} asked of a page of {} chunks",
                    self.chunks.len()
                ))
            })
    }

    /// The chunks that rows `rows` overlap.
    pub fn chunks_for_rows(&self, rows: Range<usize>) -> Range<usize> {
        if rows.start >= rows.end {
            return 0..0;
        }
        let first = self
            .chunks
            .partition_point(|c| c.first_row + c.num_values <= rows.start);
        let end = self.chunks.partition_point(|c| c.first_row < rows.end);
        first..end.max(first)
    }

    /// Decodes the whole page to an array of the page's type.
    pub fn decode(&self) -> Result<ArrayRef> {
        self.decode_range(0..self.num_values)
    }

    /// Decodes chunk `index` alone.
    pub fn decode_chunk(&self, index: usize) -> Result<ArrayRef> {
        self.decode_range(self.chunk_rows(index)?)
    }

    /// Decodes rows `rows`, reading only the chunks they overlap.
    pub fn decode_range(&self, rows: Range<usize>) -> Result<ArrayRef> {
        let len = self.check_rows(&rows)?;
        let mut values = MutableBuffer::from_len_zeroed(checked_len(len, self.width)?);
        let chunk_range = self.chunks_for_rows(rows.clone());
        let nullable = self.chunks[chunk_range].iter().any(|c| c.has_validity);
        let mut validity = nullable.then(|| BooleanBufferBuilder::new(len));
        self.decode_into(rows, values.as_slice_mut(), validity.as_mut())?;
        let nulls = validity
            .map(|mut v| NullBuffer::new(v.finish()))
            .filter(|n| n.null_count() > 0);
        let values = values.into();
        Ok(match self.data_type {
            DataType::Float32 => {
                Arc::new(Float32Array::new(ScalarBuffer::new(values, 0, len), nulls))
            }
            DataType::Float64 => {
                Arc::new(Float64Array::new(ScalarBuffer::new(values, 0, len), nulls))
            }
            ref other => return Err(Error::unsupported(format!("decoding to {other}"))),
        })
    }

    /// Decodes rows `rows` into `values` (exactly `rows.len() * width` bytes, values under
    /// nulls as stored, i.e. zero) and appends their validity to `validity` when given.
    /// Whole chunks are decoded straight into `values`; the allocations are one scratch
    /// buffer per call, none per chunk.
    pub fn decode_into(
        &self,
        rows: Range<usize>,
        values: &mut [u8],
        mut validity: Option<&mut BooleanBufferBuilder>,
    ) -> Result<()> {
        let len = self.check_rows(&rows)?;
        let expected = checked_len(len, self.width)?;
        if values.len() != expected {
            return Err(Error::invalid(format!(
                "output holds {} bytes, rows {rows:?} need {expected}",
                values.len()
            )));
        }
        let w = self.width;
        let mut scratch = Vec::new();
        let mut partial = Vec::new();
        for index in self.chunks_for_rows(rows.clone()) {
            let chunk = &self.chunks[index];
            let bytes = &self.data[chunk.offset..chunk.offset + chunk.num_bytes];
            let (bitmap, encoded) = split_validity(bytes, chunk, index)?;
            let lo = rows.start.max(chunk.first_row);
            let hi = rows.end.min(chunk.first_row + chunk.num_values);
            let out = &mut values[(lo - rows.start) * w..(hi - rows.start) * w];
            let n = chunk.num_values;
            if hi - lo == n {
                self.decompressor
                    .decompress_into(encoded, n, chunk.storage, out, &mut scratch)
                    .map_err(|e| in_chunk(e, index))?;
            } else {
                partial.resize(n * w, 0);
                self.decompressor
                    .decompress_into(encoded, n, chunk.storage, &mut partial, &mut scratch)
                    .map_err(|e| in_chunk(e, index))?;
                let from = lo - chunk.first_row;
                out.copy_from_slice(&partial[from * w..(from + hi - lo) * w]);
            }
            if let Some(validity) = validity.as_deref_mut() {
                let local = lo - chunk.first_row..hi - chunk.first_row;
                match bitmap {
                    Some(bits) => validity.append_packed_range(local, bits),
                    None => validity.append_n(local.len(), true),
                }
            }
        }
        Ok(())
    }

    fn check_rows(&self, rows: &Range<usize>) -> Result<usize> {
        if rows.start > rows.end || rows.end > self.num_values {
            return Err(Error::invalid(format!(
                "rows {rows:?} are outside the page's {} rows",
                self.num_values
            )));
        }
        Ok(rows.end - rows.start)
    }
}

fn in_chunk(e: Error, index: usize) -> Error {
    match e {
        Error::Corrupt { message } => Error::corrupt(format!("chunk {index}: {message}")),
        other => other,
    }
}

/// Splits a chunk into its validity bitmap (if any) and its encoded values, checking that
/// the bitmap's padding bits are zero.
fn split_validity<'b>(
    bytes: &'b [u8],
    chunk: &ChunkLocation,
    index: usize,
) -> Result<(Option<&'b [u8]>, &'b [u8])> {
    if !chunk.has_validity {
        return Ok((None, bytes));
    }
    let n = chunk.num_values;
    let (bitmap, rest) = bytes.split_at(n.div_ceil(8));
    if n % 8 != 0 && bitmap[bitmap.len() - 1] >> (n % 8) != 0 {
        return Err(Error::corrupt(format!(
            "chunk {index}: validity padding bits are set"
        )));
    }
    Ok((Some(bitmap), rest))
}

/// Validates a chunk table against the page's value count and data length.
fn locate_chunks(
    num_values: usize,
    table: &[u8],
    data_len: usize,
    width: usize,
) -> Result<Vec<ChunkLocation>> {
    if table.len() % CHUNK_ENTRY_BYTES != 0 {
        return Err(Error::corrupt(format!(
            "chunk table of {} bytes is not a whole number of {CHUNK_ENTRY_BYTES}-byte entries",
            table.len()
        )));
    }
    let num_chunks = table.len() / CHUNK_ENTRY_BYTES;
    if (num_values == 0) != (num_chunks == 0) {
        return Err(Error::corrupt(format!(
            "page of {num_values} values has {num_chunks} chunks"
        )));
    }
    let mut chunks = Vec::with_capacity(num_chunks);
    let mut row = 0usize;
    let mut offset = 0usize;
    for (index, entry) in table.chunks_exact(CHUNK_ENTRY_BYTES).enumerate() {
        let meta = ChunkMeta::from_bytes([entry[0], entry[1], entry[2], entry[3]], index)?;
        let last = index + 1 == num_chunks;
        let count = if last {
            if meta.log_num_values != 0 {
                return Err(Error::corrupt(format!(
                    "last chunk {index} records log_num_values {} instead of 0",
                    meta.log_num_values
                )));
            }
            let rest = num_values - row;
            if rest > MAX_CHUNK_VALUES {
                return Err(Error::corrupt(format!(
                    "last chunk {index} would hold {rest} values, more than {MAX_CHUNK_VALUES}"
                )));
            }
            rest
        } else {
            if meta.log_num_values == 0 || meta.log_num_values > MAX_LOG_NUM_VALUES {
                return Err(Error::corrupt(format!(
                    "chunk {index} records log_num_values {} (expected 1..={MAX_LOG_NUM_VALUES})",
                    meta.log_num_values
                )));
            }
            let count = 1usize << meta.log_num_values;
            if row + count >= num_values {
                return Err(Error::corrupt(format!(
                    "chunk {index} ends at row {} but the page has {num_values} rows and more chunks follow",
                    row + count
                )));
            }
            count
        };
        let num_bytes = usize::from(meta.num_bytes);
        let bitmap = if meta.has_validity {
            count.div_ceil(8)
        } else {
            0
        };
        let value_bytes = num_bytes.checked_sub(bitmap).ok_or_else(|| {
            Error::corrupt(format!(
                "chunk {index} of {num_bytes} bytes cannot hold its {bitmap}-byte validity"
            ))
        })?;
        let decoded = count * width;
        let plausible = match meta.storage {
            ChunkStorage::Raw => value_bytes == decoded,
            // LZ4 expands at most ~255x; anything beyond is a lie about the count.
            ChunkStorage::Compressed => value_bytes > 0 && decoded <= value_bytes * 256 + 64,
        };
        if !plausible {
            return Err(Error::corrupt(format!(
                "chunk {index} ({:?}) holds {value_bytes} value bytes for {count} values of {width} bytes",
                meta.storage
            )));
        }
        chunks.push(ChunkLocation {
            offset,
            num_bytes,
            first_row: row,
            num_values: count,
            has_validity: meta.has_validity,
            storage: meta.storage,
        });
        row += count;
        offset += num_bytes;
    }
    if offset > data_len {
        return Err(Error::truncated(format!(
            "chunk table describes {offset} data bytes, the page holds {data_len}"
        )));
    }
    if offset < data_len {
        return Err(Error::corrupt(format!(
            "page holds {} bytes after its last chunk",
            data_len - offset
        )));
    }
    Ok(chunks)
}
