//! The validated chunk table of a page: where each chunk's rows and bytes are.

use std::ops::Range;

use super::{ChunkMeta, ChunkTableFormat};
use crate::encodings::{
    ChunkStorage, MiniBlockDecompressor, MAX_CHUNK_BYTES, MAX_CHUNK_VALUES, MAX_LOG_NUM_VALUES,
};
use crate::error::{Error, Result};

/// Where a chunk is and what it holds, validated against the page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ChunkLocation {
    pub(crate) offset: usize,
    pub(crate) num_bytes: usize,
    pub(crate) first_row: usize,
    pub(crate) num_values: usize,
    pub(crate) has_validity: bool,
    pub(crate) storage: ChunkStorage,
    pub(crate) meta: ChunkMeta,
}

impl ChunkLocation {
    pub(crate) fn rows(&self) -> Range<usize> {
        self.first_row..self.first_row + self.num_values
    }
}

/// A page's chunk table, checked against the page's value count and value width: every
/// count, size and log value is in range and consistent, so rows and byte ranges taken
/// from it can be used without further checks. The data bytes need not be at hand, which
/// lets a file reader fetch only the chunks a row range needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageLayout {
    chunks: Vec<ChunkLocation>,
    num_values: usize,
    data_len: usize,
    format: ChunkTableFormat,
}

impl From<PageLayout> for std::borrow::Cow<'_, PageLayout> {
    fn from(layout: PageLayout) -> Self {
        std::borrow::Cow::Owned(layout)
    }
}

impl<'a> From<&'a PageLayout> for std::borrow::Cow<'a, PageLayout> {
    fn from(layout: &'a PageLayout) -> Self {
        std::borrow::Cow::Borrowed(layout)
    }
}

impl PageLayout {
    /// Parses and validates a chunk table of `format` for a page of `num_values` values
    /// that `decompressor` decodes (its value width and its largest expansion bound what
    /// each chunk may claim).
    pub fn parse(
        num_values: u64,
        table: &[u8],
        format: ChunkTableFormat,
        decompressor: &dyn MiniBlockDecompressor,
    ) -> Result<Self> {
        let num_values = usize::try_from(num_values)
            .map_err(|_| Error::corrupt(format!("page value count {num_values} overflows")))?;
        let chunks = locate_chunks(num_values, table, format, decompressor)?;
        let data_len = chunks.last().map_or(0, |c| c.offset + c.num_bytes);
        Ok(Self {
            chunks,
            num_values,
            data_len,
            format,
        })
    }

    /// The chunk table's entry format.
    pub fn format(&self) -> ChunkTableFormat {
        self.format
    }

    /// Values (rows) in the page.
    pub fn num_values(&self) -> usize {
        self.num_values
    }

    /// Chunks in the page.
    pub fn num_chunks(&self) -> usize {
        self.chunks.len()
    }

    /// Bytes of data the table describes.
    pub fn data_len(&self) -> usize {
        self.data_len
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

    /// Byte range, within the page data, of chunks `chunks` (which must be in range).
    pub fn byte_range(&self, chunks: Range<usize>) -> Range<usize> {
        match (
            self.chunks.get(chunks.start),
            chunks.end.checked_sub(1).and_then(|i| self.chunks.get(i)),
        ) {
            (Some(first), Some(last)) if chunks.start < chunks.end => {
                first.offset..last.offset + last.num_bytes
            }
            _ => 0..0,
        }
    }

    /// Chunks `chunks` (which must be in range) as a page of their own: the first row
    /// they hold in this page, and their layout, rows and bytes counted from their start,
    /// to decode with the bytes of [`byte_range`](Self::byte_range). Taken from this
    /// validated layout, it needs no table written and parsed again.
    pub fn sub_layout(&self, chunks: Range<usize>) -> (usize, PageLayout) {
        let span = self.chunks.get(chunks).unwrap_or(&[]);
        let first_row = span.first().map_or(0, |c| c.first_row);
        let first_byte = span.first().map_or(0, |c| c.offset);
        let mut located: Vec<ChunkLocation> = span
            .iter()
            .map(|c| ChunkLocation {
                offset: c.offset - first_byte,
                first_row: c.first_row - first_row,
                ..*c
            })
            .collect();
        // As in a page's own table, the last entry records log 0: its count is the rest.
        if let Some(last) = located.last_mut() {
            last.meta.log_num_values = 0;
        }
        let num_values = span.iter().map(|c| c.num_values).sum();
        let data_len = located.last().map_or(0, |c| c.offset + c.num_bytes);
        (
            first_row,
            PageLayout {
                chunks: located,
                num_values,
                data_len,
                format: self.format,
            },
        )
    }

    /// The chunk table entries, in order.
    pub fn chunk_metas(&self) -> impl Iterator<Item = ChunkMeta> + '_ {
        self.chunks.iter().map(|c| c.meta)
    }

    pub(crate) fn chunks(&self) -> &[ChunkLocation] {
        &self.chunks
    }
}

/// Validates a chunk table against the page's value count and value width.
fn locate_chunks(
    num_values: usize,
    table: &[u8],
    format: ChunkTableFormat,
    decompressor: &dyn MiniBlockDecompressor,
) -> Result<Vec<ChunkLocation>> {
    let width = decompressor.value_width();
    let max_expansion = decompressor.max_expansion().max(1);
    let entry_bytes = format.entry_bytes();
    if !table.len().is_multiple_of(entry_bytes) {
        return Err(Error::corrupt(format!(
            "chunk table of {} bytes is not a whole number of {entry_bytes}-byte entries",
            table.len()
        )));
    }
    let num_chunks = table.len() / entry_bytes;
    if (num_values == 0) != (num_chunks == 0) {
        return Err(Error::corrupt(format!(
            "page of {num_values} values has {num_chunks} chunks"
        )));
    }
    let mut chunks = Vec::with_capacity(num_chunks);
    let mut row = 0usize;
    let mut offset = 0usize;
    for (index, entry) in table.chunks_exact(entry_bytes).enumerate() {
        let meta = ChunkMeta::read(entry, format, index)?;
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
        let num_bytes = meta.num_bytes as usize;
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
        if meta.storage == ChunkStorage::Compressed && max_expansion <= 1 {
            return Err(Error::corrupt(format!(
                "chunk {index} is marked compressed but the page's encoding has no compression"
            )));
        }
        let decoded = count.checked_mul(width).filter(|&d| d <= MAX_CHUNK_BYTES).ok_or_else(|| {
            Error::corrupt(format!(
                "chunk {index} claims {count} values of {width} bytes, more than the {MAX_CHUNK_BYTES} bytes an encoder writes"
            ))
        })?;
        let plausible = match meta.storage {
            ChunkStorage::Raw => match decompressor.raw_len_range(count) {
                None => value_bytes == decoded,
                Some((min, max)) => (min..=max).contains(&value_bytes),
            },
            // A scheme expands by at most its own bound (LZ4 ~255x); beyond is a lie.
            ChunkStorage::Compressed => {
                value_bytes > 0
                    && decoded <= value_bytes.saturating_mul(max_expansion).saturating_add(64)
            }
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
            meta,
        });
        row += count;
        offset += num_bytes;
    }
    Ok(chunks)
}
